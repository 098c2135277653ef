import { describe, expect, it } from "vitest";
import { maskUrl } from "./redact";

describe("maskUrl", () => {
  it("keeps the service and hides what may be a credential", () => {
    expect(maskUrl("https://hooks.slack.com/services/T000/B000/SECRETXYZ")).toBe("https://hooks.slack.com/services/…");
    expect(maskUrl("https://user:pass@example.com/hook?token=abc")).toBe("https://example.com/hook?…");
    expect(maskUrl("https://example.com")).toBe("https://example.com");
    expect(maskUrl("not a url SECRET")).toBe("(not a URL)");
  });
});
