import "server-only";
import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { Readable } from "node:stream";
import { env, type Env } from "@/lib/env";
import { maskUrl } from "@/lib/util/redact";

/**
 * Where Cadre may send a request on someone's say-so: a notification channel's webhook, an
 * MCP server's URL, a page an agent reads. One rule for all three, so a link-local metadata
 * service, a database on this machine or a router on the office network is not reachable by
 * typing its address into a form or a prompt.
 *
 * - A user name or password in the URL is refused: it would be shown wherever the address is
 *   (delivery log, lastError, the server log, the export) and sent in clear on a redirect.
 * - Link-local and cloud metadata addresses are refused always.
 * - Loopback and private-network addresses are allowed while Cadre serves this computer only
 *   (no APP_PASSWORD: whoever types the address is the machine's own user), refused with
 *   sign-in on unless ALLOW_PRIVATE_URLS=true.
 *
 * The address is checked when connecting, not only when saved (DNS can change): the host is
 * resolved right before the connection and the socket goes to the addresses that were checked,
 * never to a second answer.
 */

export type HostLookup = (hostname: string) => Promise<LookupAddress[]>;

export type OutboundPolicy = {
  /** Loopback and private-network addresses may be reached (see privateAddressesAllowed). */
  allowPrivate: boolean;
  /** How a host name becomes addresses: dns.lookup (all of them) unless a test brings its own. */
  lookup: HostLookup;
};

const systemLookup: HostLookup = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * Local-only mode is what auth.ts's signInRequired() says: no APP_PASSWORD. Read from the
 * environment here rather than from auth.ts, which the worker does not load (it needs Next).
 */
export function privateAddressesAllowed(source: Env = env()): boolean {
  return source.APP_PASSWORD === undefined || source.ALLOW_PRIVATE_URLS;
}

export function outboundPolicy(source: Env = env(), lookup: HostLookup = systemLookup): OutboundPolicy {
  return { allowPrivate: privateAddressesAllowed(source), lookup };
}

/** A request the policy refused: its message says why, with the URL masked. Retrying cannot help. */
export class OutboundUrlRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OutboundUrlRefused";
  }
}

// --- Which addresses ---------------------------------------------------------------------------

type AddressKind = "public" | "private" | "link-local" | "unusable";

function blockList(ipv4: [string, number][], ipv6: [string, number][]): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of ipv4) list.addSubnet(network, prefix, "ipv4");
  for (const [network, prefix] of ipv6) list.addSubnet(network, prefix, "ipv6");
  return list;
}

/** Cloud metadata and the link-local range it lives in: credentials for the machine itself. */
const LINK_LOCAL = blockList(
  [
    ["169.254.0.0", 16],
    ["100.100.100.200", 32], // Alibaba Cloud metadata
    ["168.63.129.16", 32], // Azure's wire server
  ],
  [
    ["fe80::", 10],
    ["fd00:ec2::254", 128], // AWS metadata over IPv6
  ],
);

/** This machine and networks that are not the internet: reachable only in local-only mode or when allowed. */
const PRIVATE = blockList(
  [
    ["0.0.0.0", 8],
    ["10.0.0.0", 8],
    ["100.64.0.0", 10], // carrier-grade NAT, also Tailscale
    ["127.0.0.0", 8],
    ["172.16.0.0", 12],
    ["192.168.0.0", 16],
    ["198.18.0.0", 15],
  ],
  [
    ["::", 128],
    ["::1", 128],
    ["fc00::", 7],
    ["fec0::", 10],
  ],
);

/** Not a host anybody serves a webhook on: multicast, broadcast, reserved. */
const UNUSABLE = blockList(
  [
    ["224.0.0.0", 4],
    ["240.0.0.0", 4],
  ],
  [["ff00::", 8]],
);

/**
 * An IPv4 address inside an IPv6 one, which may reach the IPv4 host: NAT64 64:ff9b::/96, 6to4
 * 2002::/16, and the deprecated IPv4-compatible ::/96 (`::127.0.0.1`) and IPv4-translated
 * ::ffff:0:0:0/96 forms. (IPv4-mapped ::ffff:0:0/96 BlockList matches itself.)
 */
function embeddedIpv4(address: string): { ipv4: string; deprecated: boolean } | null {
  const groups = expandIpv6(address);
  if (!groups) return null;
  const v4 = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  const zero = (from: number, to: number) => groups.slice(from, to).every((group) => group === 0);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zero(2, 6))
    return { ipv4: v4(groups[6]!, groups[7]!), deprecated: false };
  if (groups[0] === 0x2002) return { ipv4: v4(groups[1]!, groups[2]!), deprecated: false };
  if (zero(0, 6) || (zero(0, 4) && groups[4] === 0xffff && groups[5] === 0))
    return { ipv4: v4(groups[6]!, groups[7]!), deprecated: true };
  return null;
}

function expandIpv6(address: string): number[] | null {
  let text = address;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const parts = dotted[1]!.split(".").map(Number);
    text = `${text.slice(0, -dotted[1]!.length)}${((parts[0]! << 8) | parts[1]!).toString(16)}:${((parts[2]! << 8) | parts[3]!).toString(16)}`;
  }
  const [head, tail] = text.split("::");
  const headGroups = head ? head.split(":") : [];
  const tailGroups = tail ? tail.split(":") : [];
  const missing = 8 - headGroups.length - tailGroups.length;
  if (tail === undefined ? headGroups.length !== 8 : missing < 0) return null;
  return [...headGroups, ...Array<string>(tail === undefined ? 0 : missing).fill("0"), ...tailGroups].map((group) =>
    parseInt(group, 16),
  );
}

function kindOf(address: string): AddressKind {
  const family = isIP(address);
  if (family === 0) return "unusable";
  const type = family === 4 ? "ipv4" : "ipv6";
  // BlockList matches IPv4-mapped IPv6 (::ffff:127.0.0.1) against the IPv4 ranges itself.
  if (LINK_LOCAL.check(address, type)) return "link-local";
  if (UNUSABLE.check(address, type)) return "unusable";
  if (PRIVATE.check(address, type)) return "private";
  const inner = family === 6 ? embeddedIpv4(address) : null;
  if (!inner) return "public";
  const kind = kindOf(inner.ipv4);
  // Nobody serves a webhook at a deprecated form; whatever it might reach is refused.
  return kind === "public" && inner.deprecated ? "unusable" : kind;
}

/** True for an address anyone on the internet could serve: what may be quoted back from a failed answer. */
export function isPublicAddress(address: string): boolean {
  return kindOf(address) === "public";
}

function refusal(kind: Exclude<AddressKind, "public">, address: string, allowPrivate: boolean): string | null {
  switch (kind) {
    case "link-local":
      return `${address} is a link-local address, where cloud metadata services answer; Cadre never sends requests there`;
    case "unusable":
      return `${address} is not an address a server can be reached at (multicast or reserved)`;
    case "private":
      return allowPrivate
        ? null
        : `${address} is on this machine or a private network; with sign-in on (APP_PASSWORD), Cadre reaches only public addresses unless ALLOW_PRIVATE_URLS=true`;
  }
}

/** Why this address is refused, naming it as `shown` (a host name that stands for it), or null. */
function addressProblem(address: string, allowPrivate: boolean, shown = address): string | null {
  const kind = kindOf(address);
  return kind === "public" ? null : refusal(kind, shown, allowPrivate);
}

/** The URL's host as an address when it is one (WHATWG parsing has already turned 0x7f000001, 2130706433 and 127.1 into 127.0.0.1). */
function literalAddress(url: URL): string | null {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  return isIP(host) ? host : null;
}

function isLocalhostName(url: URL): boolean {
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  return host === "localhost" || host.endsWith(".localhost");
}

// --- The checks ----------------------------------------------------------------------------------

/**
 * What is wrong with a URL as a place Cadre sends to, in words for a 400 — checked when it is
 * saved: not http(s), a user name or password in it, or a host that is an address (or
 * localhost) the policy refuses. A host name is resolved only when connecting.
 */
export function outboundUrlProblem(raw: string, options: { allowPrivate: boolean }): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "is not a URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http:// or https:// URL";
  if (url.username || url.password) {
    return "must not contain a user name or password (user:pass@…): it would be shown wherever the address is; use a token the service gives you instead";
  }
  if (isLocalhostName(url)) return addressProblem("127.0.0.1", options.allowPrivate, url.hostname);
  const literal = literalAddress(url);
  return literal ? addressProblem(literal, options.allowPrivate) : null;
}

/**
 * The addresses to connect to for this URL, every one of them allowed, or an OutboundUrlRefused.
 * `unresolvable: "pass"` returns [] when the name does not resolve here (for a page another
 * service fetches); otherwise the lookup's error is thrown as it is (ENOTFOUND …).
 */
export async function checkedAddresses(
  url: URL,
  policy: OutboundPolicy,
  options: { unresolvable?: "throw" | "pass" } = {},
): Promise<LookupAddress[]> {
  const refuse = (why: string) => new OutboundUrlRefused(`${maskUrl(url.href)} was not contacted: ${why}.`);
  const saved = outboundUrlProblem(url.href, policy);
  if (saved) throw refuse(`the address ${saved}`);
  const literal = literalAddress(url);
  if (literal) return [{ address: literal, family: isIP(literal) }];
  const hostname = isLocalhostName(url) ? "localhost" : url.hostname;
  let addresses: LookupAddress[];
  try {
    addresses = await policy.lookup(hostname);
  } catch (error) {
    if (options.unresolvable === "pass") return [];
    throw error;
  }
  // Any refused address refuses the name: a connection may go to any of them.
  for (const { address } of addresses) {
    const problem = addressProblem(address, policy.allowPrivate);
    if (problem) throw refuse(`${url.hostname} resolves to ${problem}`);
  }
  return addresses;
}

// --- Requests ------------------------------------------------------------------------------------

export type OutboundInit = {
  method?: string;
  headers?: HeadersInit;
  body?: BodyInit | null;
  signal?: AbortSignal | null;
  /** manual: a redirect is the answer; error: a redirect throws; follow: up to MAX_REDIRECTS hops, each checked. */
  redirect?: RequestRedirect;
};

export type OutboundResponse = {
  response: Response;
  /** The URL that answered (after redirects). */
  url: string;
  /** The address the answer came from; its body may be quoted back only when it is public. */
  address: string;
};

const MAX_REDIRECTS = 3;

/**
 * One HTTP request under the policy: the host is resolved and checked, then the connection
 * goes to the checked addresses only (the lookup is pinned, so a second DNS answer cannot
 * move it). A redirect is followed with `redirect: "follow"` (any 3xx, as fetch does: 301/302
 * turn a POST into a GET without its body, 303 always) or, with "manual", only for the statuses
 * in `options.follow`; each hop is checked again, at most MAX_REDIRECTS of them.
 */
export async function outboundRequest(
  raw: string | URL,
  init: OutboundInit,
  policy: OutboundPolicy,
  options: { follow?: number[] } = {},
): Promise<OutboundResponse> {
  let url = new URL(raw);
  let method = (init.method ?? "GET").toUpperCase();
  let body = await bodyBytes(init.body);
  const mode = init.redirect ?? "follow";
  for (let hop = 0; ; hop++) {
    const answer = await requestOnce(url, method, init.headers, body, init.signal ?? undefined, policy);
    const { status } = answer.response;
    const location = answer.response.headers.get("location");
    const isRedirect = status >= 300 && status < 400 && location !== null;
    if (!isRedirect || (mode === "manual" && !options.follow?.includes(status))) return answer;
    await answer.response.body?.cancel().catch(() => {});
    if (mode === "error")
      throw new TypeError(`${maskUrl(url.href)} answered with a redirect (HTTP ${status}), which is not followed`);
    if (hop >= MAX_REDIRECTS)
      throw new OutboundUrlRefused(`${maskUrl(url.href)} redirected more than ${MAX_REDIRECTS} times`);
    const next = URL.parse(location, url);
    if (!next) throw new OutboundUrlRefused(`${maskUrl(url.href)} redirected to something that is not a URL`);
    url = next;
    if (status === 303 || ((status === 301 || status === 302) && method === "POST")) {
      method = method === "HEAD" ? "HEAD" : "GET";
      body = undefined;
    }
  }
}

/** A fetch for code that takes one (the MCP client): the same requests, under the policy. */
export function policyFetch(policy: OutboundPolicy): typeof fetch {
  return async (input, init) => {
    const request = input instanceof Request ? input : undefined;
    const url = request ? request.url : input instanceof URL ? input.href : String(input);
    const answer = await outboundRequest(
      url,
      {
        method: init?.method ?? request?.method,
        headers: init?.headers ?? request?.headers,
        body: init?.body ?? (request?.body ? await request.arrayBuffer() : undefined),
        signal: init?.signal ?? request?.signal,
        redirect: init?.redirect ?? request?.redirect ?? "follow",
      },
      policy,
    );
    return answer.response;
  };
}

async function bodyBytes(body: BodyInit | null | undefined): Promise<Buffer | undefined> {
  if (body === null || body === undefined) return undefined;
  if (typeof body === "string") return Buffer.from(body);
  return Buffer.from(await new Response(body).arrayBuffer());
}

/** Statuses whose Response may not have a body. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

async function requestOnce(
  url: URL,
  method: string,
  headers: HeadersInit | undefined,
  body: Buffer | undefined,
  signal: AbortSignal | undefined,
  policy: OutboundPolicy,
): Promise<OutboundResponse> {
  signal?.throwIfAborted();
  const addresses = await checkedAddresses(url, policy);
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if (options.all) return (callback as (error: null, addresses: LookupAddress[]) => void)(null, addresses);
    const wanted = addresses.find((entry) => !options.family || entry.family === options.family) ?? addresses[0]!;
    callback(null, wanted.address, wanted.family);
  };
  const outgoing: Record<string, string> = {};
  for (const [name, value] of new Headers(headers)) outgoing[name] = value;
  if (body) outgoing["content-length"] = String(body.length);
  const client = url.protocol === "https:" ? https : http;
  return new Promise<OutboundResponse>((resolve, reject) => {
    // No agent: a pooled socket would be reused without this lookup, and each request is checked.
    const request = client.request(
      url,
      { method, headers: outgoing, lookup: pinned, agent: false, signal },
      (incoming) => {
        const status = incoming.statusCode ?? 502;
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(incoming.headers)) {
          if (value === undefined) continue;
          for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, one);
        }
        const hasBody = !NULL_BODY.has(status) && method !== "HEAD";
        if (!hasBody) incoming.resume();
        const response = new Response(hasBody ? (Readable.toWeb(incoming) as ReadableStream<Uint8Array>) : null, {
          status,
          statusText: incoming.statusMessage ?? "",
          headers: responseHeaders,
        });
        resolve({ response, url: url.href, address: incoming.socket?.remoteAddress ?? addresses[0]?.address ?? "" });
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}
