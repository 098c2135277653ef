// One outbound-URL policy (src/lib/outbound-url.ts) for webhook channels, MCP servers and pages
// an agent reads, with sign-in on (APP_PASSWORD set in this file): URLs with credentials are 400s,
// private addresses are refused unless ALLOW_PRIVATE_URLS, link-local and metadata addresses
// always; the address is checked when connecting (a lookup the test controls maps its names to
// 127.0.0.1 and 169.254.169.254), redirects hop by hop; no body of a private answer is quoted;
// spans carry no URL query or credentials. Real parts: an HTTP receiver, server-everything over
// streamable HTTP, the fake Tavily, the route handlers.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { trace } from "@opentelemetry/api";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { asSchema } from "ai";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ToolContext } from "@/lib/engine/tools";
import type { SearchConfig } from "@/lib/core/engine-config";
import { searchTools } from "@/lib/engine/tools/search-tools";
import { startSession } from "@/lib/auth/auth";
import { getMcpServer } from "@/lib/db/queries/mcp-servers";
import { notificationChannels, notifications, type Notification } from "@/lib/db/schema";
import { parseEnv } from "@/lib/env";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { closeMcpConnections } from "@/lib/mcp/connections";
import { addMcpServer, changeMcpServer, testMcpServer } from "@/lib/mcp/servers";
import {
  changeNotificationChannel,
  createNotificationChannel,
  sendTestNotification,
} from "@/lib/notifications/channels";
import { deliverNotification } from "@/lib/notifications/deliver";
import { privateAddressesAllowed, type HostLookup, type OutboundPolicy } from "@/lib/http/outbound-url";
import { inSpan, startTelemetry } from "@/lib/telemetry/tracing";
import { freePort } from "../../scripts/lib/embedded-postgres";
import type { TestDatabase } from "../support/database";
import { startFakeTavily } from "../support/fake-tavily";
import { createTeamFixture } from "../support/fixtures";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";
import { waitFor } from "../support/worker-process";

vi.hoisted(() => {
  // Before any module parses the environment (env() reads it once per process): sign-in on.
  process.env.APP_PASSWORD = "outbound-url-test-password";
  delete process.env.ALLOW_PRIVATE_URLS;
  for (const name of [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "LLM_MODEL",
    "TAVILY_API_KEY",
    "TAVILY_BASE_URL",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
  ])
    delete process.env[name];
  process.env.LEAD_SCHEDULE = "off";
});

const ORIGIN = "http://localhost:3000";
const EVERYTHING = path.resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");

/** The test's DNS: names it controls, switched by the tests ("DNS can change"). */
const dns = new Map<string, string[]>();
const lookup: HostLookup = async (hostname) => {
  const addresses = dns.get(hostname);
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
};
/** Local-only mode (or ALLOW_PRIVATE_URLS), and sign-in on without it. */
const LOCAL: OutboundPolicy = { allowPrivate: true, lookup };
const SIGNED_IN: OutboundPolicy = { allowPrivate: false, lookup };

// --- The receiver ----------------------------------------------------------------------------

type Seen = { method: string; host: string; path: string; body: string };
const seen: Seen[] = [];
let receiver: Server;
let port: number;

function answer(request: IncomingMessage, body: string) {
  seen.push({ method: request.method ?? "", host: request.headers.host ?? "", path: request.url ?? "", body });
}

let database: TestDatabase;
let jobs: JobQueue;
let cookie: string;
const children: ChildProcess[] = [];

async function loadRoutes() {
  return {
    channels: await import("@/app/api/teams/[teamId]/notification-channels/route"),
    channel: await import("@/app/api/notification-channels/[channelId]/route"),
    servers: await import("@/app/api/teams/[teamId]/mcp-servers/route"),
    server: await import("@/app/api/mcp-servers/[serverId]/route"),
  };
}
let api: Awaited<ReturnType<typeof loadRoutes>>;

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      answer(request, Buffer.concat(chunks).toString("utf8"));
      const url = new URL(request.url ?? "/", "http://x");
      if (url.pathname === "/redirect")
        return void response
          .writeHead(Number(url.searchParams.get("status")), { location: url.searchParams.get("to")! })
          .end();
      if (url.pathname === "/broken")
        return void response
          .writeHead(500, { "content-type": "text/plain" })
          .end("internal admin page: db password is hunter2");
      response.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  port = (receiver.address() as AddressInfo).port;
  database = await createWebTestDatabase();
  api = await loadRoutes();
  const { webEngine } = await import("@/lib/http/server");
  jobs = (await webEngine()).jobs;
  cookie = `cadre_session=${(await startSession(database.db)).token}`;
});

afterAll(async () => {
  await closeMcpConnections();
  for (const child of children) child.kill("SIGKILL");
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
  await closeWebTestDatabase(database);
});

const params = <T extends Record<string, string>>(values: T) => ({ params: Promise.resolve(values) });

function request(method: string, body?: unknown): Request {
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new Request(`${ORIGIN}/x`, {
    method,
    headers: { origin: ORIGIN, cookie, ...(text === undefined ? {} : { "content-type": "application/json" }) },
    body: text,
  });
}

async function json<T>(response: Response, status: number): Promise<T> {
  const text = await response.text();
  expect({ status: response.status, text }).toMatchObject({ status });
  return (text ? JSON.parse(text) : undefined) as T;
}

const errorOf = async (response: Response) =>
  (await json<{ error: { code: string; message: string } }>(response, 400)).error;

// --- Saving ----------------------------------------------------------------------------------

describe("saving a URL", () => {
  it("refuses a URL with a user name or password (400, a message that says why) on create and change, channels and MCP servers alike", async () => {
    const { team } = await createTeamFixture(database.db);
    const withCredentials = "https://user:hunter2@hooks.example.com/services/x";
    const created = await errorOf(
      await api.channels.POST(
        request("POST", { type: "webhook", name: "n", url: withCredentials, kinds: ["alert"] }),
        params({ teamId: team.id }),
      ),
    );
    expect(created).toMatchObject({ code: "bad_request:validation" });
    expect(created.message).toMatch(/^url must not contain a user name or password/);
    expect(created.message).not.toContain("hunter2");
    const server = await errorOf(
      await api.servers.POST(
        request("POST", { transport: "http", name: "web", url: "https://key:hunter2@mcp.example.com/mcp" }),
        params({ teamId: team.id }),
      ),
    );
    expect(server.message).toMatch(/^url must not contain a user name or password/);
    expect(
      await database.db.select().from(notificationChannels).where(eq(notificationChannels.teamId, team.id)),
    ).toEqual([]);

    const { channel } = await json<{ channel: { id: string } }>(
      await api.channels.POST(
        request("POST", { type: "webhook", name: "n", url: "https://hooks.example.com/services/x", kinds: ["alert"] }),
        params({ teamId: team.id }),
      ),
      201,
    );
    expect(
      (
        await errorOf(
          await api.channel.PATCH(request("PATCH", { url: withCredentials }), params({ channelId: channel.id })),
        )
      ).message,
    ).toMatch(/user name or password/);
    const { server: saved } = await json<{ server: { id: string } }>(
      await api.servers.POST(
        request("POST", { transport: "http", name: "web", url: "https://mcp.example.com/mcp" }),
        params({ teamId: team.id }),
      ),
      201,
    );
    expect(
      (
        await errorOf(
          await api.server.PATCH(
            request("PATCH", { url: "https://key:hunter2@mcp.example.com/mcp" }),
            params({ serverId: saved.id }),
          ),
        )
      ).message,
    ).toMatch(/user name or password/);
    expect((await getMcpServer(database.db, saved.id))!.url).toBe("https://mcp.example.com/mcp");
  });

  it("with sign-in on refuses loopback and private addresses, odd spellings too; metadata addresses always; ALLOW_PRIVATE_URLS lets private ones through", async () => {
    const { team } = await createTeamFixture(database.db);
    for (const url of [
      "http://127.0.0.1:5432/",
      "http://0x7f000001/",
      "http://2130706433/",
      "http://127.1/",
      "http://[::1]/",
      "http://10.0.0.8/hook",
      "http://localhost:8080/",
    ]) {
      const error = await errorOf(
        await api.channels.POST(
          request("POST", { type: "webhook", name: "n", url, kinds: ["alert"] }),
          params({ teamId: team.id }),
        ),
      );
      expect(error.message, url).toMatch(
        /on this machine or a private network; with sign-in on \(APP_PASSWORD\), Cadre reaches only public addresses unless ALLOW_PRIVATE_URLS=true/,
      );
      const mcp = await errorOf(
        await api.servers.POST(request("POST", { transport: "http", name: "m", url }), params({ teamId: team.id })),
      );
      expect(mcp.message, url).toMatch(/private network/);
    }
    for (const url of [
      "http://169.254.169.254/latest/meta-data/",
      "http://[fe80::1]/",
      "http://[fd00:ec2::254]/",
      "http://100.100.100.200/",
    ]) {
      const error = await errorOf(
        await api.channels.POST(
          request("POST", { type: "webhook", name: "n", url, kinds: ["alert"] }),
          params({ teamId: team.id }),
        ),
      );
      expect(error.message, url).toMatch(/link-local address, where cloud metadata services answer/);
    }

    // ALLOW_PRIVATE_URLS=true beside APP_PASSWORD: private addresses are saved, metadata still refused.
    const allowPrivate = privateAddressesAllowed(parseEnv({ APP_PASSWORD: "x", ALLOW_PRIVATE_URLS: "true" }));
    expect(allowPrivate).toBe(true);
    const { channel } = await createNotificationChannel(
      database.db,
      team.id,
      { type: "webhook", name: "lan", url: "http://192.168.1.20/hook", kinds: ["alert"] },
      { allowPrivate },
    );
    await expect(
      changeNotificationChannel(database.db, channel.id, { url: "http://169.254.169.254/" }, { allowPrivate }),
    ).rejects.toThrow(/link-local/);
    const server = await addMcpServer(
      database.db,
      team.id,
      { transport: "http", name: "lan", url: "http://10.0.0.8/mcp" },
      { allowPrivate },
    );
    await expect(
      changeMcpServer(database.db, server.id, { url: "http://[fe80::1]/mcp" }, { allowPrivate }),
    ).rejects.toThrow(/link-local/);
  });
});

// --- Delivering ------------------------------------------------------------------------------

describe("webhook deliveries, checked as they connect", () => {
  /** A webhook channel on a name only the test's DNS knows, and a queued test notification for it. */
  async function queued(url: string): Promise<Notification> {
    const { team } = await createTeamFixture(database.db);
    // Saved as a name: nothing to refuse yet, whatever it resolves to.
    const { channel } = await createNotificationChannel(database.db, team.id, {
      type: "webhook",
      name: "hook",
      url,
      kinds: ["alert"],
    });
    return sendTestNotification(database.db, jobs, channel.id);
  }
  const attempt = (notification: Notification) => ({
    notificationId: notification.id,
    attempt: 1,
    lastAttempt: false,
    signal: new AbortController().signal,
  });
  const row = async (id: string) =>
    (await database.db.select().from(notifications).where(eq(notifications.id, id)))[0]!;

  it("reaches a name that resolves to 127.0.0.1 in local-only mode, and refuses it with sign-in on; a name that moves to 169.254.169.254 is refused however it was saved", async () => {
    dns.set("hooks.cadre.test", ["127.0.0.1"]);
    const local = await queued(`http://hooks.cadre.test:${port}/hook/local`);
    expect(await deliverNotification(database.db, attempt(local), { smtp: null, outbound: LOCAL })).toBe("sent");
    expect(seen.filter((entry) => entry.path === "/hook/local")).toEqual([
      expect.objectContaining({ method: "POST", host: `hooks.cadre.test:${port}` }),
    ]);

    const signedIn = await queued(`http://hooks.cadre.test:${port}/hook/signed-in`);
    expect(await deliverNotification(database.db, attempt(signedIn), { smtp: null, outbound: SIGNED_IN })).toBe(
      "failed",
    );
    expect((await row(signedIn.id)).lastError).toBe(
      `http://hooks.cadre.test:${port}/hook/… was not contacted: hooks.cadre.test resolves to 127.0.0.1 is on this machine or a private network; with sign-in on (APP_PASSWORD), Cadre reaches only public addresses unless ALLOW_PRIVATE_URLS=true.`,
    );

    // DNS changes after the channel was saved: the address is checked again at every attempt.
    const moved = await queued(`http://moving.cadre.test:${port}/hook/moved`);
    dns.set("moving.cadre.test", ["169.254.169.254"]);
    expect(await deliverNotification(database.db, attempt(moved), { smtp: null, outbound: LOCAL })).toBe("failed");
    expect((await row(moved.id)).lastError).toMatch(
      /moving\.cadre\.test resolves to 169\.254\.169\.254 is a link-local address, where cloud metadata services answer/,
    );
    expect(
      seen.filter((entry) => entry.path.startsWith("/hook/signed-in") || entry.path.startsWith("/hook/moved")),
    ).toEqual([]);
  });

  it("follows a 307 to an allowed address, refuses one to a metadata address before sending there, and says where a 302 goes without its query", async () => {
    dns.set("hooks.cadre.test", ["127.0.0.1"]);
    dns.set("metadata.cadre.test", ["169.254.169.254"]);
    const redirect = (status: number, to: string) =>
      `http://hooks.cadre.test:${port}/redirect?status=${status}&to=${encodeURIComponent(to)}`;

    const followed = await queued(redirect(307, `http://hooks.cadre.test:${port}/hook/after-redirect`));
    expect(await deliverNotification(database.db, attempt(followed), { smtp: null, outbound: LOCAL })).toBe("sent");
    expect(seen.filter((entry) => entry.path === "/hook/after-redirect")).toEqual([
      expect.objectContaining({ method: "POST", body: expect.stringContaining(followed.id) }),
    ]);

    const before = seen.length;
    const refused = await queued(redirect(307, `http://metadata.cadre.test:${port}/latest/meta-data?token=s3cret`));
    expect(await deliverNotification(database.db, attempt(refused), { smtp: null, outbound: LOCAL })).toBe("failed");
    expect((await row(refused.id)).lastError).toMatch(
      /^http:\/\/metadata\.cadre\.test:\d+\/latest\/…\?… was not contacted: metadata\.cadre\.test resolves to 169\.254\.169\.254 is a link-local address/,
    );
    expect(seen.slice(before).map((entry) => entry.path)).toEqual([expect.stringMatching(/^\/redirect\?/)]);

    const moved = await queued(redirect(302, "https://other.example.com/private/path?token=s3cret"));
    await expect(deliverNotification(database.db, attempt(moved), { smtp: null, outbound: LOCAL })).rejects.toThrow();
    const error = (await row(moved.id)).lastError!;
    expect(error).toMatch(
      /^HTTP 302 from http:\/\/hooks\.cadre\.test:\d+\/redirect\?… \(a redirect to https:\/\/other\.example\.com\/private\/…\?…; use the final URL\)$/,
    );
  });

  it("does not quote what a private address answered", async () => {
    dns.set("hooks.cadre.test", ["127.0.0.1"]);
    const broken = await queued(`http://hooks.cadre.test:${port}/broken`);
    await expect(deliverNotification(database.db, attempt(broken), { smtp: null, outbound: LOCAL })).rejects.toThrow();
    expect((await row(broken.id)).lastError).toBe(`HTTP 500 from http://hooks.cadre.test:${port}/broken`);
  });
});

// --- MCP -------------------------------------------------------------------------------------

describe("MCP servers, checked as they connect", () => {
  it("connects to server-everything through a name mapped to 127.0.0.1 in local-only mode; with sign-in on, or mapped to 169.254.169.254, it is refused, and the error shows no query", async () => {
    const mcpPort = await freePort();
    const child = spawn(process.execPath, [EVERYTHING, "streamableHttp"], {
      env: { ...process.env, PORT: String(mcpPort) },
      stdio: "ignore",
    });
    children.push(child);
    await waitFor(
      async () =>
        fetch(`http://127.0.0.1:${mcpPort}/mcp`, { method: "GET" }).then(
          () => true,
          () => false,
        ),
      { timeoutMs: 15_000, what: "server-everything over HTTP" },
    );
    const { team } = await createTeamFixture(database.db);
    dns.set("mcp.cadre.test", ["127.0.0.1"]);
    const server = await addMcpServer(database.db, team.id, {
      transport: "http",
      name: "everything",
      url: `http://mcp.cadre.test:${mcpPort}/mcp?apikey=s3cret`,
    });

    const reached = await testMcpServer(database.db, server.id, LOCAL);
    expect(reached).toMatchObject({ ok: true });
    expect(reached.ok && reached.tools.map((tool) => tool.name)).toContain("echo");

    const signedIn = await testMcpServer(database.db, server.id, SIGNED_IN);
    expect(signedIn).toMatchObject({
      ok: false,
      error: expect.stringMatching(
        /^http:\/\/mcp\.cadre\.test:\d+\/mcp\?… was not contacted: mcp\.cadre\.test resolves to 127\.0\.0\.1 is on this machine/,
      ),
    });

    dns.set("mcp.cadre.test", ["169.254.169.254"]);
    const metadata = await testMcpServer(database.db, server.id, LOCAL);
    expect(metadata).toMatchObject({
      ok: false,
      error: expect.stringMatching(/169\.254\.169\.254 is a link-local address/),
    });
    const stored = (await getMcpServer(database.db, server.id))!;
    expect(stored.lastError).toMatch(/link-local/);
    expect(stored.lastError).not.toContain("s3cret");
  });
});

// --- Reading pages ---------------------------------------------------------------------------

describe("readWebPage", () => {
  async function readWebPage(search: SearchConfig, input: unknown): Promise<unknown> {
    const definition = searchTools({ search } as ToolContext).readWebPage;
    const checked = await asSchema(definition.inputSchema).validate!(input);
    if (!checked.success) throw checked.error;
    return definition.execute!(checked.value, { toolCallId: "call_read", messages: [] } as unknown as Parameters<
      NonNullable<typeof definition.execute>
    >[1]);
  }

  it("refuses metadata addresses and names that resolve to them with a result that says why, without asking Tavily; a redirect Tavily followed there is refused too", async () => {
    const tavily = await startFakeTavily();
    try {
      tavily.extract = ({ urls }) => ({
        pages: [{ url: urls[0]!, title: "A page", content: "instance credentials: AKIA…" }],
      });
      const search = { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url, outbound: LOCAL };
      dns.set("metadata.cadre.test", ["169.254.169.254"]);
      dns.set("news.cadre.test", ["93.184.216.34"]);
      expect(await readWebPage(search, { url: "http://169.254.169.254/latest/meta-data/iam" })).toBe(
        "http://169.254.169.254/latest/… was not contacted: the address 169.254.169.254 is a link-local address, where cloud metadata services answer; Cadre never sends requests there. Try another source, or work from what you have.",
      );
      expect(await readWebPage(search, { url: "http://metadata.cadre.test/latest/meta-data" })).toMatch(
        /metadata\.cadre\.test resolves to 169\.254\.169\.254 is a link-local address/,
      );
      expect(await readWebPage(search, { url: "https://user:pw@news.cadre.test/a" })).toMatch(
        /must not contain a user name or password/,
      );
      expect(await readWebPage({ ...search, outbound: SIGNED_IN }, { url: "http://192.168.1.1/admin" })).toMatch(
        /private network/,
      );
      expect(tavily.extracts).toEqual([]);

      // The control: a public page is read.
      expect(await readWebPage(search, { url: "https://news.cadre.test/a" })).toMatchObject({
        url: "https://news.cadre.test/a",
        content: expect.stringContaining("instance credentials"),
      });
      // Tavily followed a redirect to the metadata service: its text does not come back.
      tavily.extract = () => ({
        pages: [
          { url: "http://169.254.169.254/latest/meta-data/iam", title: "iam", content: "instance credentials: AKIA…" },
        ],
      });
      const redirected = await readWebPage(search, { url: "https://news.cadre.test/b" });
      expect(redirected).toMatch(
        /^Reading https:\/\/news\.cadre\.test\/b was refused: it redirected elsewhere, and http:\/\/169\.254\.169\.254\/latest\/… was not contacted: .*link-local/,
      );
      expect(redirected).not.toContain("AKIA");
    } finally {
      await tavily.close();
    }
  });
});

// --- Telemetry -------------------------------------------------------------------------------

describe("spans", () => {
  it("carry no URL query or credentials: Next's fetch spans (name, http.url, url.full, http.target) and Cadre's own", async () => {
    const exporter = new InMemorySpanExporter();
    const telemetry = startTelemetry({ serviceName: "cadre-test", exporter, source: parseEnv({}) });
    try {
      const url = "http://key:hunter2@mcp.example.com:8080/mcp?apikey=s3cret#frag";
      // As Next's patch-fetch names and describes a fetch span.
      const span = trace.getTracer("next.js", "0.0.1").startSpan(`fetch POST ${url}`, {
        attributes: {
          "http.url": url,
          "http.method": "POST",
          "next.span_name": `fetch POST ${url}`,
          "url.full": url,
          "url.query": "apikey=s3cret",
          "http.target": "/mcp?apikey=s3cret",
        },
      });
      span.setAttribute("http.status_code", 200);
      span.end();
      await inSpan("work_turn", { "cadre.source.url": url }, async () => {});
      const spans = exporter.getFinishedSpans();
      const fetchSpan = spans.find((one) => one.name.startsWith("fetch"))!;
      expect(fetchSpan.name).toBe("fetch POST http://mcp.example.com:8080/mcp");
      expect(fetchSpan.attributes).toEqual({
        "http.url": "http://mcp.example.com:8080/mcp",
        "http.method": "POST",
        "next.span_name": "fetch POST http://mcp.example.com:8080/mcp",
        "url.full": "http://mcp.example.com:8080/mcp",
        "http.target": "/mcp",
        "http.status_code": 200,
      });
      expect(spans.find((one) => one.name === "work_turn")!.attributes).toEqual({
        "cadre.source.url": "http://mcp.example.com:8080/mcp",
      });
      expect(JSON.stringify(spans.map((one) => [one.name, one.attributes]))).not.toMatch(/s3cret|hunter2/);
    } finally {
      await telemetry?.shutdown();
    }
  });
});
