import { randomBytes, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { readActionToken, signActionLink } from "./action-links";

const key = randomBytes(32);
const claim = {
  action: "approve" as const,
  channel: "email" as const,
  itemId: randomUUID(),
  expiresAt: new Date("2026-12-04T12:00:00Z"),
};

describe("action link tokens", () => {
  it("read back what they were signed for, and say when they have expired", () => {
    const token = signActionLink(key, claim);
    expect(readActionToken(key, token, new Date("2026-12-01T12:00:00Z"))).toEqual({
      valid: true,
      claim,
      expired: false,
    });
    expect(readActionToken(key, token, new Date("2026-12-04T12:00:01Z"))).toMatchObject({ valid: true, expired: true });
    // The same inputs sign the same token: every delivery attempt sends the same links.
    expect(signActionLink(key, claim)).toBe(token);
  });

  it("refuse any change: another item, another action, another key, a cut token", () => {
    const token = signActionLink(key, claim);
    const [payload, signature] = token.split(".") as [string, string];
    const reSigned = (text: string) => `${Buffer.from(text).toString("base64url")}.${signature}`;
    const text = Buffer.from(payload, "base64url").toString();
    for (const bad of [
      reSigned(text.replace(claim.itemId, randomUUID())),
      reSigned(text.replace(":approve:", ":deny:")),
      reSigned(text.replace(/:\d+$/, ":99999999999")),
      signActionLink(randomBytes(32), claim),
      token.slice(0, -1),
      `${payload}.`,
      "",
      "x".repeat(500),
      undefined,
    ])
      expect(readActionToken(key, bad)).toEqual({ valid: false });
  });
});
