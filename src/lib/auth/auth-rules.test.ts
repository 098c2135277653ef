import { describe, expect, it } from "vitest";
import {
  CLIENT_ADDRESS_HEADER,
  clientAddress,
  cookieValue,
  crossSiteReason,
  isLoopbackHost,
  cookieCandidates,
  isPublicPath,
  looksLikeSessionToken,
  safeReturnPath,
} from "./auth-rules";

const post = (url: string, headers: Record<string, string>) => new Request(url, { method: "POST", headers });

describe("crossSiteReason", () => {
  it("lets the app's own origin through, also behind a reverse proxy, and requests without Origin (curl)", () => {
    expect(crossSiteReason(post("http://localhost:3000/api/teams", { origin: "http://localhost:3000" }))).toBeNull();
    expect(crossSiteReason(post("http://localhost:3000/api/teams", { origin: "http://LOCALHOST:3000" }))).toBeNull();
    // A proxy that passes the Host through needs no trust; one that sets X-Forwarded-Host needs TRUST_PROXY.
    expect(
      crossSiteReason(
        post("http://127.0.0.1:3000/x", { origin: "https://cadre.example.org", host: "cadre.example.org" }),
      ),
    ).toBeNull();
    const proxied = {
      origin: "https://cadre.example.org",
      host: "127.0.0.1:3000",
      "x-forwarded-host": "cadre.example.org",
    };
    expect(crossSiteReason(post("http://127.0.0.1:3000/x", proxied), { trustProxy: true })).toBeNull();
    expect(crossSiteReason(post("http://cadre.example.org/x", { origin: "https://cadre.example.org:443" }))).toBeNull();
    expect(crossSiteReason(post("http://localhost:3000/x", {}))).toBeNull();
    expect(crossSiteReason(post("http://localhost:3000/x", { "sec-fetch-site": "same-origin" }))).toBeNull();
  });

  it("refuses foreign, null, look-alike and non-http origins, and cross-site fetch metadata", () => {
    for (const origin of [
      "https://evil.example",
      "null",
      "NULL",
      "http://localhost:3001",
      "http://localhost:3000.evil.example",
      "file://",
      "chrome-extension://abc",
      "not a url",
    ]) {
      expect(crossSiteReason(post("http://localhost:3000/x", { origin })), origin).not.toBeNull();
    }
    expect(crossSiteReason(post("http://localhost:3000/x", { "sec-fetch-site": "cross-site" }))).not.toBeNull();
    expect(crossSiteReason(post("http://localhost:3000/x", { "sec-fetch-site": "same-site" }))).not.toBeNull();
  });

  it("ignores X-Forwarded-Host unless the operator declared a proxy (TRUST_PROXY)", () => {
    // Any client can send the header: a foreign Origin that names it must not pass.
    const forged = { origin: "http://evil.example", host: "localhost:3000", "x-forwarded-host": "evil.example" };
    expect(crossSiteReason(post("http://localhost:3000/x", forged))).toMatch(/is not this server/);
    expect(crossSiteReason(post("http://localhost:3000/x", forged), { trustProxy: false })).toMatch(
      /is not this server/,
    );
    const proxied = {
      origin: "https://cadre.example.org",
      host: "127.0.0.1:3000",
      "x-forwarded-host": "cadre.example.org",
    };
    expect(crossSiteReason(post("http://127.0.0.1:3000/x", proxied))).toMatch(/is not this server/);
    expect(crossSiteReason(post("http://127.0.0.1:3000/x", proxied), { trustProxy: true })).toBeNull();
  });
});

describe("isLoopbackHost", () => {
  it("knows this computer's names, with or without a port", () => {
    for (const host of [
      "localhost",
      "localhost:3000",
      "LOCALHOST:3000",
      "app.localhost:3000",
      "127.0.0.1",
      "127.1.2.3:80",
      "[::1]:3000",
    ]) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
    for (const host of [
      "evil.example",
      "localhost.evil.example",
      "127.0.0.1.evil.example",
      "10.0.0.2:3000",
      "0.0.0.0",
      "",
      null,
      undefined,
    ]) {
      expect(isLoopbackHost(host), String(host)).toBe(false);
    }
  });
});

describe("safeReturnPath", () => {
  it("keeps local paths and drops everything that could leave the site or loop", () => {
    expect(safeReturnPath("/teams/abc?tab=log")).toBe("/teams/abc?tab=log");
    for (const value of [
      "//evil.example",
      "/\\evil.example",
      "https://evil.example",
      "javascript:alert(1)",
      "/sign-in",
      "/sign-in?next=/x",
      "/a\nb",
      undefined,
      42,
    ]) {
      expect(safeReturnPath(value), String(value)).toBe("/");
    }
  });
});

describe("cookies, tokens and public paths", () => {
  it("reads one cookie and recognises a token's shape", () => {
    expect(cookieValue("a=1; cadre_session=abc; b=2", "cadre_session")).toBe("abc");
    expect(cookieValue("xcadre_session=abc", "cadre_session")).toBeUndefined();
    expect(cookieValue(null, "cadre_session")).toBeUndefined();
    expect(looksLikeSessionToken("A".repeat(43))).toBe(true);
    expect(looksLikeSessionToken("A".repeat(42))).toBe(false);
    expect(looksLikeSessionToken(`' or 1=1 --${"A".repeat(32)}`)).toBe(false);
  });

  it("opens only health, sign-in/out and webhooks", () => {
    for (const path of [
      "/sign-in",
      "/api/health",
      "/api/auth/sign-in",
      "/api/auth/sign-out",
      "/api/hooks/abc",
      "/act",
      "/api/act",
      "/api/slack/actions",
      "/favicon.ico",
      "/icon.svg",
      "/apple-icon.png",
      "/manifest.webmanifest",
    ])
      expect(isPublicPath(path), path).toBe(true);
    for (const path of [
      "/",
      "/teams",
      "/api/teams",
      "/api/hooks/abc/x",
      "/api/healthz",
      "/sign-in/../teams",
      "/api/auth/session",
      "/favicon.ico/x",
      "/teams/icon.svg",
      "/act/x",
      "/acts",
      "/api/act/x",
      "/api/slack/actions/x",
      "/api/slack",
    ])
      expect(isPublicPath(path), path).toBe(false);
  });
});

describe("cookieCandidates", () => {
  it("tries the __Host- name first, then the plain one, each value once, only those that look right, at most 16", () => {
    const header = "cadre_session=bad; __Host-cadre_session=good1; other=x; cadre_session=good2; cadre_session=good1";
    expect(cookieCandidates(header, "cadre_session", (value) => value.startsWith("good"))).toEqual(["good1", "good2"]);
    const many = Array.from({ length: 20 }, (_, index) => `cadre_device=v${index}`).join("; ");
    expect(cookieCandidates(many, "cadre_device", () => true)).toEqual(Array.from({ length: 16 }, (_, i) => `v${i}`));
    // Values that do not look right take no place: the real one after many planted bad ones is still tried.
    const planted = `${"cadre_device=junk; ".repeat(30)}cadre_device=good`;
    expect(cookieCandidates(planted, "cadre_device", (value) => value === "good")).toEqual(["good"]);
    expect(cookieCandidates(null, "cadre_device", () => true)).toEqual([]);
  });
});

describe("clientAddress", () => {
  const request = (headers: Record<string, string>) =>
    new Request("http://localhost:3000/api/auth/sign-in", { method: "POST", headers });

  it("is the connection's address, whatever X-Forwarded-For a client sends, unless TRUST_PROXY", () => {
    expect(clientAddress(request({ [CLIENT_ADDRESS_HEADER]: "203.0.113.5", "x-forwarded-for": "10.0.0.1" }))).toBe(
      "203.0.113.5",
    );
    expect(clientAddress(request({ "x-forwarded-for": "10.0.0.1" }))).toBe("unknown");
  });

  it("with TRUST_PROXY is the address the proxy added last to X-Forwarded-For (what came before it is the client's say)", () => {
    const trustProxy = { trustProxy: true };
    expect(
      clientAddress(
        request({ [CLIENT_ADDRESS_HEADER]: "127.0.0.1", "x-forwarded-for": "10.0.0.1, 198.51.100.7" }),
        trustProxy,
      ),
    ).toBe("198.51.100.7");
    expect(
      clientAddress(request({ [CLIENT_ADDRESS_HEADER]: "127.0.0.1", "x-forwarded-for": "198.51.100.7" }), trustProxy),
    ).toBe("198.51.100.7");
    expect(clientAddress(request({ [CLIENT_ADDRESS_HEADER]: "127.0.0.1", "x-forwarded-for": " , " }), trustProxy)).toBe(
      "127.0.0.1",
    );
    expect(clientAddress(request({ [CLIENT_ADDRESS_HEADER]: "127.0.0.1" }), trustProxy)).toBe("127.0.0.1");
  });
});
