import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEnv } from "@/lib/env";
import {
  checkedAddresses,
  isPublicAddress,
  outboundPolicy,
  outboundRequest,
  outboundUrlProblem,
  OutboundUrlRefused,
  policyFetch,
  type HostLookup,
} from "./outbound-url";

/** A DNS the test controls: each name answers what the map says, anything else does not exist. */
function lookupFrom(names: Record<string, string[]>): HostLookup & { asked: string[] } {
  const asked: string[] = [];
  const lookup = async (hostname: string) => {
    asked.push(hostname);
    const addresses = names[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return Object.assign(lookup, { asked });
}

const LOCAL = { allowPrivate: true };
const SIGNED_IN = { allowPrivate: false };

describe("outboundUrlProblem (when a URL is saved)", () => {
  it("refuses a user name or password in the URL, whatever the mode", () => {
    for (const url of [
      "https://user:pass@hooks.example.com/x",
      "https://token@hooks.example.com/x",
      "http://:secret@example.com/",
    ]) {
      expect(outboundUrlProblem(url, LOCAL), url).toMatch(/must not contain a user name or password/);
    }
  });

  it("refuses link-local and cloud metadata addresses always, however they are spelled", () => {
    for (const url of [
      "http://169.254.169.254/latest/meta-data/",
      "http://0xa9fea9fe/",
      "http://2852039166/",
      "http://169.254.1/",
      "http://[fe80::1]/",
      "http://[fd00:ec2::254]/",
      "http://100.100.100.200/",
      "http://[::ffff:169.254.169.254]/",
      "http://[64:ff9b::a9fe:a9fe]/",
      "http://[::169.254.169.254]/",
      "http://[::ffff:0:169.254.169.254]/",
    ]) {
      expect(outboundUrlProblem(url, LOCAL), url).toMatch(/link-local/);
    }
  });

  it("allows loopback and private addresses in local-only mode and refuses them with sign-in on, odd spellings included", () => {
    for (const url of [
      "http://127.0.0.1:5432/",
      "http://0x7f000001/",
      "http://2130706433/",
      "http://127.1/",
      "http://0177.0.0.1/",
      "http://[::1]:3000/",
      "http://[::ffff:127.0.0.1]/",
      "http://[::ffff:7f00:1]/",
      "http://[::127.0.0.1]:4739/p",
      "http://[::7f00:1]/",
      "http://[::ffff:0:127.0.0.1]/",
      "http://[::10.1.2.3]/",
      "http://0.0.0.0/",
      "http://10.1.2.3/",
      "http://172.20.0.1/",
      "http://192.168.1.1/",
      "http://[fd12:3456::1]/",
      "http://localhost:3000/",
      "http://api.localhost/",
    ]) {
      expect(outboundUrlProblem(url, LOCAL), url).toBeNull();
      expect(outboundUrlProblem(url, SIGNED_IN), url).toMatch(
        /private network; with sign-in on .*ALLOW_PRIVATE_URLS=true/,
      );
    }
  });

  it("leaves public addresses and host names alone (a name is checked when connecting)", () => {
    for (const url of [
      "https://hooks.slack.com/services/T/B/x",
      "http://93.184.216.34/",
      "http://[2606:4700::1111]/",
      "http://172.32.0.1/",
      "https://internal.example.com/",
    ]) {
      expect(outboundUrlProblem(url, SIGNED_IN), url).toBeNull();
    }
    expect(outboundUrlProblem("ftp://example.com/", LOCAL)).toMatch(/http:\/\/ or https:\/\//);
  });

  it("refuses the deprecated IPv4-compatible form (::/96) even around a public IPv4 address", () => {
    for (const url of ["http://[::93.184.216.34]/", "http://[::5db8:d822]/"])
      expect(outboundUrlProblem(url, LOCAL), url).toMatch(/not an address a server can be reached at/);
  });

  it("decides local-only mode the way sign-in does: no APP_PASSWORD, or ALLOW_PRIVATE_URLS with it", () => {
    expect(outboundPolicy(parseEnv({})).allowPrivate).toBe(true);
    expect(outboundPolicy(parseEnv({ APP_PASSWORD: "pw" })).allowPrivate).toBe(false);
    expect(outboundPolicy(parseEnv({ APP_PASSWORD: "pw", ALLOW_PRIVATE_URLS: "true" })).allowPrivate).toBe(true);
    expect(() => parseEnv({ ALLOW_PRIVATE_URLS: "maybe" })).toThrow(/ALLOW_PRIVATE_URLS/);
    expect(isPublicAddress("8.8.8.8")).toBe(true);
    expect(isPublicAddress("127.0.0.1")).toBe(false);
  });
});

describe("checkedAddresses (when connecting)", () => {
  it("resolves the name and refuses it if any address is refused", async () => {
    const lookup = lookupFrom({
      "hooks.cadre.test": ["127.0.0.1"],
      "metadata.cadre.test": ["169.254.169.254"],
      "mixed.cadre.test": ["93.184.216.34", "10.0.0.7"],
      "public.cadre.test": ["93.184.216.34", "2606:2800:220:1::1"],
    });
    expect(await checkedAddresses(new URL("http://hooks.cadre.test/x"), { allowPrivate: true, lookup })).toEqual([
      { address: "127.0.0.1", family: 4 },
    ]);
    await expect(
      checkedAddresses(new URL("http://hooks.cadre.test/x"), { allowPrivate: false, lookup }),
    ).rejects.toThrow(
      /^http:\/\/hooks\.cadre\.test\/x was not contacted: hooks\.cadre\.test resolves to 127\.0\.0\.1 is on this machine or a private network/,
    );
    await expect(
      checkedAddresses(new URL("http://metadata.cadre.test/latest/meta-data?token=s3cret"), {
        allowPrivate: true,
        lookup,
      }),
    ).rejects.toThrow(
      /^http:\/\/metadata\.cadre\.test\/latest\/…\?… was not contacted: metadata\.cadre\.test resolves to 169\.254\.169\.254 is a link-local address/,
    );
    await expect(
      checkedAddresses(new URL("http://mixed.cadre.test/"), { allowPrivate: false, lookup }),
    ).rejects.toBeInstanceOf(OutboundUrlRefused);
    expect(await checkedAddresses(new URL("http://public.cadre.test/"), { allowPrivate: false, lookup })).toHaveLength(
      2,
    );
    // A name that does not resolve fails as the lookup did, unless the caller lets it pass.
    await expect(
      checkedAddresses(new URL("http://nowhere.cadre.test/"), { allowPrivate: false, lookup }),
    ).rejects.toMatchObject({ code: "ENOTFOUND" });
    expect(
      await checkedAddresses(
        new URL("http://nowhere.cadre.test/"),
        { allowPrivate: false, lookup },
        { unresolvable: "pass" },
      ),
    ).toEqual([]);
  });
});

describe("outboundRequest", () => {
  let server: Server;
  let port: number;
  const seen: string[] = [];
  beforeAll(async () => {
    server = createServer((request, response) => {
      seen.push(`${request.method} ${request.headers.host} ${request.url}`);
      const redirect = /^\/redirect\/(\d+)\?to=(.*)$/.exec(request.url ?? "");
      if (redirect)
        return void response.writeHead(Number(redirect[1]), { location: decodeURIComponent(redirect[2]!) }).end();
      request.resume();
      request.on("end", () =>
        response
          .writeHead(200, { "content-type": "text/plain", "set-cookie": ["a=1", "b=2"] })
          .end(`hello from ${request.url}`),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const lookup = lookupFrom({ "hooks.cadre.test": ["127.0.0.1"], "metadata.cadre.test": ["169.254.169.254"] });

  it("connects to the address it checked: a name only the test's lookup knows reaches the local receiver", async () => {
    const answer = await outboundRequest(
      `http://hooks.cadre.test:${port}/hello`,
      { method: "POST", body: "{}" },
      { allowPrivate: true, lookup },
    );
    expect(answer.response.status).toBe(200);
    expect(await answer.response.text()).toBe("hello from /hello");
    expect(answer.address).toMatch(/127\.0\.0\.1$/);
    expect(answer.response.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(seen.at(-1)).toBe(`POST hooks.cadre.test:${port} /hello`);
  });

  it("checks every redirect hop: a redirect to a metadata address is refused before anything is sent there", async () => {
    const before = seen.length;
    const to = encodeURIComponent(`http://metadata.cadre.test:${port}/latest/meta-data`);
    await expect(
      outboundRequest(`http://hooks.cadre.test:${port}/redirect/302?to=${to}`, {}, { allowPrivate: true, lookup }),
    ).rejects.toThrow(/metadata\.cadre\.test resolves to 169\.254\.169\.254 is a link-local address/);
    expect(seen.slice(before)).toEqual([`GET hooks.cadre.test:${port} /redirect/302?to=${to}`]);
    // The control: a redirect to an allowed address is followed.
    const allowed = await outboundRequest(
      `http://hooks.cadre.test:${port}/redirect/307?to=${encodeURIComponent("/final")}`,
      {},
      { allowPrivate: true, lookup },
    );
    expect(await allowed.response.text()).toBe("hello from /final");
    expect(allowed.url).toBe(`http://hooks.cadre.test:${port}/final`);
    // manual: the redirect is the answer; error: it throws.
    const manual = await outboundRequest(
      `http://hooks.cadre.test:${port}/redirect/307?to=%2Ffinal`,
      { redirect: "manual" },
      { allowPrivate: true, lookup },
    );
    expect(manual.response.status).toBe(307);
    await expect(
      outboundRequest(
        `http://hooks.cadre.test:${port}/redirect/307?to=%2Ffinal`,
        { redirect: "error" },
        { allowPrivate: true, lookup },
      ),
    ).rejects.toThrow(/redirect/);
  });

  it("as a fetch (for the MCP client): the same rule, and its answers stream", async () => {
    const fetchUnder = policyFetch({ allowPrivate: false, lookup });
    await expect(fetchUnder(`http://hooks.cadre.test:${port}/x`)).rejects.toBeInstanceOf(OutboundUrlRefused);
    await expect(fetchUnder(`http://127.0.0.1:${port}/x`)).rejects.toThrow(
      /127\.0\.0\.1 is on this machine or a private network/,
    );
    const allowed = await policyFetch({ allowPrivate: true, lookup })(
      new URL(`http://hooks.cadre.test:${port}/stream`),
      { method: "POST", body: JSON.stringify({ a: 1 }) },
    );
    expect(await allowed.text()).toBe("hello from /stream");
  });
});
