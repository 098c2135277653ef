// Notifications outside the browser (PRODUCT.md flow 9): inbox items go to the team's channels —
// signed webhooks (Slack-compatible) and email over SMTP — through a retried pg-boss queue with
// the notification id as idempotency key, written in the item's own transaction. Real parts: an
// SMTP server and an HTTP receiver started here, a worker in this process, and real worker
// processes for the kill -9. Prints what the receivers saw.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createInboxItem } from "@/lib/db/queries/inbox-items";
import { notifications, type InboxItem, type InboxItemType, type Notification } from "@/lib/db/schema";
import { CadreError } from "@/lib/errors";
import { NOTIFICATION_QUEUE } from "@/lib/jobs/queues";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { createNotificationChannel } from "@/lib/notifications/channels";
import { deliverNotification } from "@/lib/notifications/deliver";
import { EMAIL_NEEDS_SMTP } from "@/lib/notifications/email-channel";
import { enqueueNotifications } from "@/lib/notifications/enqueue";
import { webhookSignature } from "@/lib/http/webhook-signature";
import type { RunningWorker } from "@/worker/runner";
import type { TestDatabase } from "../support/database";
import { createTeamFixture } from "../support/fixtures";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../support/worker-process";

const PUBLIC_URL = "https://cadre.example.test";
const SMTP_FROM = "Cadre <cadre@example.test>";

vi.hoisted(() => {
  // Before any module parses the environment (env() reads it once per process).
  delete process.env.APP_PASSWORD;
  for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_MODEL", "TAVILY_API_KEY", "TAVILY_BASE_URL"])
    delete process.env[name];
  process.env.PUBLIC_URL = "https://cadre.example.test";
  process.env.LEAD_SCHEDULE = "off";
  // Retries 1-2 s, then 2-4 s apart instead of 2-4, 4-8: the same backoff, shorter.
  process.env.NOTIFICATION_RETRY_DELAY_SECONDS = "1";
});

const ORIGIN = "http://localhost:3000";

// --- The receivers ---------------------------------------------------------------------------

type Behaviour = "ok" | "fail-twice" | "always-500" | "hold-first";
type Received = {
  path: string;
  key: string;
  headers: IncomingMessage["headers"];
  body: string;
  status: number | "held";
};
type Email = { messageId: string; from: string; to: string[]; raw: string };

const received: Received[] = [];
const emails: Email[] = [];
const behaviours = new Map<string, Behaviour>();
const held: ServerResponse[] = [];
let receiver: Server;
let receiverUrl: string;
let smtp: SMTPServer;

function answer(request: IncomingMessage, response: ServerResponse, body: string) {
  const path = request.url ?? "/";
  const key = String(request.headers["idempotency-key"] ?? "");
  const behaviour = behaviours.get(path) ?? "ok";
  const seen = received.filter((entry) => entry.path === path && entry.key === key).length;
  const record = (status: Received["status"]) => received.push({ path, key, headers: request.headers, body, status });
  if (behaviour === "hold-first" && seen === 0) {
    // Held open: the worker delivering it is killed while it waits for the answer.
    record("held");
    held.push(response);
    return;
  }
  const status = behaviour === "always-500" || (behaviour === "fail-twice" && seen < 2) ? 500 : 200;
  record(status);
  response
    .writeHead(status, { "content-type": "text/plain" })
    .end(status === 200 ? "ok" : "boom: the receiver is having a bad day");
}

/** A webhook URL on the receiver that behaves as told. */
function endpoint(name: string, behaviour: Behaviour = "ok"): string {
  const path = `/hook/${name}-${randomUUID().slice(0, 8)}`;
  behaviours.set(path, behaviour);
  return `${receiverUrl}${path}`;
}

const requestsTo = (url: string) => received.filter((entry) => entry.path === new URL(url).pathname);

function messageIdOf(raw: string): string {
  return /^Message-ID:\s*(<[^>]+>)/im.exec(raw)?.[1] ?? "";
}

// --- The app ---------------------------------------------------------------------------------

let database: TestDatabase;
let jobs: JobQueue;
let worker: RunningWorker | undefined;
const spawned: WorkerProcess[] = [];
/** Every notification that must reach its receiver: what "lost" is counted against. */
const expected = new Set<string>();

async function loadRoutes() {
  return {
    channels: await import("@/app/api/teams/[teamId]/notification-channels/route"),
    channel: await import("@/app/api/notification-channels/[channelId]/route"),
    test: await import("@/app/api/notification-channels/[channelId]/test/route"),
    team: await import("@/app/api/teams/[teamId]/route"),
  };
}
let api: Awaited<ReturnType<typeof loadRoutes>>;

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => answer(request, response, Buffer.concat(chunks).toString("utf8")));
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        const from = session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address;
        emails.push({
          messageId: messageIdOf(raw),
          from,
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          raw,
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", () => resolve()));
  process.env.SMTP_URL = `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`;
  process.env.SMTP_FROM = SMTP_FROM;

  database = await createWebTestDatabase();
  api = await loadRoutes();
  const { webEngine } = await import("@/lib/http/server");
  jobs = (await webEngine()).jobs;
  const { startWorker } = await import("@/worker/runner");
  worker = await startWorker({ databaseUrl: database.url, concurrency: 2, log: () => {} });
});

afterAll(async () => {
  await worker?.stop();
  await Promise.all(spawned.map((process) => process.stop("SIGKILL")));
  for (const response of held.splice(0)) response.destroy();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
  await new Promise((resolve) => smtp?.close(() => resolve(undefined)));
  await closeWebTestDatabase(database);
  if (figures) {
    console.log(
      `[notifications] sent: ${figures.sent}, retried: ${figures.retried}, duplicates beyond idempotency key: ${figures.duplicates}, lost: ${figures.lost}`,
    );
  }
});

const params = <T extends Record<string, string>>(values: T) => ({ params: Promise.resolve(values) });

function request(method: string, body?: unknown): Request {
  const text = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  return new Request(`${ORIGIN}/x`, {
    method,
    headers: { origin: ORIGIN, ...(text === undefined ? {} : { "content-type": "application/json" }) },
    body: text,
  });
}

async function json<T>(response: Response, status: number): Promise<T> {
  const text = await response.text();
  expect({ status: response.status, text }).toMatchObject({ status });
  return (text ? JSON.parse(text) : undefined) as T;
}

type ChannelJson = {
  id: string;
  name: string;
  type: string;
  url: string | null;
  recipient: string | null;
  kinds: string[];
  enabled: boolean;
};

async function addChannel(
  teamId: string,
  body: Record<string, unknown>,
): Promise<{ channel: ChannelJson; secret?: string }> {
  return json(await api.channels.POST(request("POST", body), params({ teamId })), 201);
}

/** An inbox item and its notifications, in one transaction, as the engine writes them. */
async function itemWithNotifications(
  teamId: string,
  agentId: string,
  type: InboxItemType,
  title: string,
): Promise<{ item: InboxItem; queued: number; rows: Notification[] }> {
  const { item, queued } = await database.db.transaction(async (tx) => {
    const item = await createInboxItem(tx, {
      teamId,
      agentId,
      type,
      title,
      summary: `Summary of ${title}.`,
      content: "Full text.",
    });
    return { item, queued: await enqueueNotifications(tx, jobs, item) };
  });
  const rows = await database.db.select().from(notifications).where(eq(notifications.inboxItemId, item.id));
  return { item, queued, rows };
}

async function notificationRow(id: string): Promise<Notification> {
  const [row] = await database.db.select().from(notifications).where(eq(notifications.id, id));
  return row!;
}

async function settled(id: string, timeoutMs = 30_000): Promise<Notification> {
  return waitFor(
    async () => {
      const row = await notificationRow(id);
      return row.status !== "pending" ? row : null;
    },
    { timeoutMs, what: `notification ${id} to be sent or given up` },
  );
}

async function errorCode(response: Response, status: number): Promise<{ code: string; message: string }> {
  return (await json<{ error: { code: string; message: string } }>(response, status)).error;
}

// --- Tests -----------------------------------------------------------------------------------

describe("webhook channels", () => {
  it("POSTs a signed JSON body a receiver can verify with the secret, with Slack's text and the notification id as idempotency key", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const url = endpoint("signed");
    const { channel, secret } = await addChannel(team.id, {
      type: "webhook",
      name: "Ops hook",
      url,
      kinds: ["briefing", "alert"],
    });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    const { item, queued, rows } = await itemWithNotifications(
      team.id,
      lead.id,
      "briefing",
      "Panel prices fell 4% <this week> & more",
    );
    expect(queued).toBe(1);
    const [row] = rows;
    expected.add(row!.id);
    expect(row).toMatchObject({ channelId: channel.id, kind: "briefing", status: "pending", attempts: 0 });

    const sent = await settled(row!.id);
    expect(sent).toMatchObject({ status: "sent", attempts: 1, lastError: null });
    expect(sent.sentAt).toBeInstanceOf(Date);

    const [delivery] = requestsTo(url);
    expect(delivery).toBeDefined();
    const { headers, body } = delivery!;
    expect(headers["content-type"]).toBe("application/json");
    expect(headers["idempotency-key"]).toBe(row!.id);
    expect(headers["x-cadre-delivery"]).toBe(row!.id);
    const timestamp = String(headers["x-cadre-timestamp"]);
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(60);
    // What a receiver does: HMAC-SHA256 over "<timestamp>.<raw body>" with the secret.
    expect(headers["x-cadre-signature"]).toBe(`sha256=${webhookSignature(secret!, timestamp, body)}`);
    expect(headers["x-cadre-signature"]).not.toBe(`sha256=${webhookSignature("whsec_wrong", timestamp, body)}`);

    const link = `${PUBLIC_URL}/inbox/${item.id}`;
    expect(JSON.parse(body)).toEqual({
      id: row!.id,
      type: "briefing",
      title: "Panel prices fell 4% <this week> & more",
      summary: "Summary of Panel prices fell 4% <this week> & more.",
      link,
      text: `*Panel prices fell 4% &lt;this week&gt; &amp; more*\nSummary of Panel prices fell 4% &lt;this week&gt; &amp; more.\n<${link}|Open in Cadre>`,
    });
  });

  it("retries a receiver that fails twice (500, 500) and then accepts: sent after 3 attempts, the same idempotency key every time", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const url = endpoint("flaky", "fail-twice");
    await addChannel(team.id, { type: "webhook", name: "Flaky", url, kinds: ["question"] });
    const { rows } = await itemWithNotifications(team.id, lead.id, "question", "Which market first?");
    const id = rows[0]!.id;
    expected.add(id);

    // Between attempts the log says what went wrong.
    const failing = await waitFor(
      async () => {
        const row = await notificationRow(id);
        return row.lastError ? row : null;
      },
      { timeoutMs: 15_000, what: "the first failure to be recorded" },
    );
    expect(failing.status).toBe("pending");
    // The receiver is on this machine: what it answered is not quoted (outbound-url.ts), only its status.
    expect(failing.lastError).toMatch(/^HTTP 500 from http:\/\/127\.0\.0\.1:\d+\/hook\/…$/);

    const sent = await settled(id, 30_000);
    expect(sent).toMatchObject({ status: "sent", attempts: 3, lastError: null });
    const attempts = requestsTo(url);
    expect(attempts.map((entry) => entry.status)).toEqual([500, 500, 200]);
    expect(new Set(attempts.map((entry) => entry.key))).toEqual(new Set([id]));
    // The same body each time; only the timestamp and signature are new per attempt.
    expect(new Set(attempts.map((entry) => entry.body)).size).toBe(1);
  });

  it("says what a connection failure was, and gives up after the last attempt (status failed)", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    // A port nothing listens on: bind one, note it, close it.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await addChannel(team.id, {
      type: "webhook",
      name: "Nowhere",
      url: `http://127.0.0.1:${port}/in`,
      kinds: ["alert"],
    });
    const { rows } = await itemWithNotifications(team.id, lead.id, "alert", "Down");
    const id = rows[0]!.id;
    // The worker's attempt fails and is retried; the last attempt (here, called directly) gives up.
    await waitFor(async () => (await notificationRow(id)).lastError, { timeoutMs: 15_000, what: "a failed attempt" });
    const row = await notificationRow(id);
    expect(row.lastError).toBe(`could not connect to http://127.0.0.1:${port}/in: ECONNREFUSED`);
    await expect(
      deliverNotification(database.db, {
        notificationId: id,
        attempt: 9,
        lastAttempt: true,
        signal: new AbortController().signal,
      }),
    ).rejects.toThrow(/ECONNREFUSED/);
    expect(await notificationRow(id)).toMatchObject({
      status: "failed",
      lastError: `could not connect to http://127.0.0.1:${port}/in: ECONNREFUSED`,
    });
    // A job delivered again later finds it settled and does nothing.
    const attempts = (await notificationRow(id)).attempts;
    expect(
      await deliverNotification(database.db, {
        notificationId: id,
        attempt: 10,
        lastAttempt: true,
        signal: new AbortController().signal,
      }),
    ).toBe("skipped");
    expect((await notificationRow(id)).attempts).toBe(attempts);
  });
});

describe("email channels", () => {
  it("sends an email with Message-ID <notification-id@cadre>, the title as subject, the summary and the link", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const { channel, secret } = await addChannel(team.id, {
      type: "email",
      name: "Me",
      recipient: "ops@example.test",
      kinds: ["approval"],
    });
    expect(secret).toBeUndefined();
    expect(channel).toMatchObject({ type: "email", recipient: "ops@example.test", url: null });

    const { item, rows } = await itemWithNotifications(team.id, lead.id, "approval", "Approve the purchase order");
    const id = rows[0]!.id;
    expected.add(id);
    expect(await settled(id)).toMatchObject({ status: "sent", attempts: 1 });

    const email = emails.find((entry) => entry.messageId === `<${id}@cadre>`);
    expect(email).toBeDefined();
    expect(email!.from).toBe("cadre@example.test");
    expect(email!.to).toEqual(["ops@example.test"]);
    expect(email!.raw).toMatch(/^Subject: Approve the purchase order$/m);
    expect(email!.raw).toMatch(/^From: Cadre <cadre@example\.test>$/m);
    expect(email!.raw).toContain("Summary of Approve the purchase order.");
    // Quoted-printable: long lines are folded with a soft break ("=" at the end of a line).
    expect(email!.raw.replace(/=\r?\n/g, "")).toContain(`Open in Cadre: ${PUBLIC_URL}/inbox/${item.id}`);
  });

  it("cannot be created or tested without SMTP settings, and a queued delivery fails at once with that message", async () => {
    const { team } = await createTeamFixture(database.db);
    const refused = await createNotificationChannel(
      database.db,
      team.id,
      { type: "email", name: "x", recipient: "a@example.test", kinds: ["alert"] },
      { smtp: null },
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CadreError);
    expect((refused as CadreError).status).toBe(409);
    expect((refused as CadreError).message).toBe("Email notifications need SMTP_URL and SMTP_FROM set on the server.");

    // One made while SMTP was configured, delivered by a worker that has none.
    const { channel } = await createNotificationChannel(database.db, team.id, {
      type: "email",
      name: "Inbox",
      recipient: "a@example.test",
      kinds: ["alert"],
    });
    const [row] = await database.db
      .insert(notifications)
      .values({
        channelId: channel.id,
        teamId: team.id,
        inboxItemId: null,
        kind: "alert",
        payload: { type: "alert", title: "t", summary: "s", link: PUBLIC_URL },
      })
      .returning();
    const attempt = { notificationId: row!.id, attempt: 1, lastAttempt: false, signal: new AbortController().signal };
    expect(await deliverNotification(database.db, attempt, { smtp: null })).toBe("failed");
    expect(await notificationRow(row!.id)).toMatchObject({
      status: "failed",
      attempts: 1,
      lastError: EMAIL_NEEDS_SMTP,
    });
  });
});

describe("which channels get what", () => {
  it("sends an item only to enabled channels whose kinds include its type", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const briefingsOnly = endpoint("briefings-only");
    const everything = endpoint("everything-but-off");
    const alerts = endpoint("alerts");
    await addChannel(team.id, { type: "webhook", name: "Briefings", url: briefingsOnly, kinds: ["briefing"] });
    const off = await addChannel(team.id, {
      type: "webhook",
      name: "Off",
      url: everything,
      kinds: ["briefing", "question", "approval", "alert"],
    });
    await addChannel(team.id, { type: "webhook", name: "Alerts", url: alerts, kinds: ["alert", "alert"] });
    const patched = await json<{ channel: ChannelJson }>(
      await api.channel.PATCH(request("PATCH", { enabled: false }), params({ channelId: off.channel.id })),
      200,
    );
    expect(patched.channel.enabled).toBe(false);

    const alert = await itemWithNotifications(team.id, lead.id, "alert", "Task failed");
    const briefing = await itemWithNotifications(team.id, lead.id, "briefing", "Weekly briefing");
    const question = await itemWithNotifications(team.id, lead.id, "question", "A question nobody listens for");
    expect([alert.queued, briefing.queued, question.queued]).toEqual([1, 1, 0]);
    for (const row of [...alert.rows, ...briefing.rows]) expected.add(row.id);
    for (const row of [...alert.rows, ...briefing.rows]) expect((await settled(row.id)).status).toBe("sent");

    expect(requestsTo(alerts).map((entry) => JSON.parse(entry.body).title)).toEqual(["Task failed"]);
    expect(requestsTo(briefingsOnly).map((entry) => JSON.parse(entry.body).title)).toEqual(["Weekly briefing"]);
    expect(requestsTo(everything)).toEqual([]);
  });

  it("costs nothing for a team without channels, and enqueues nothing when the item's transaction rolls back", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const lonely = await itemWithNotifications(team.id, lead.id, "briefing", "Nobody is told");
    expect(lonely.queued).toBe(0);

    const url = endpoint("rolled-back");
    await addChannel(team.id, { type: "webhook", name: "Rollback", url, kinds: ["briefing"] });
    let queuedId: string | undefined;
    await expect(
      database.db.transaction(async (tx) => {
        const item = await createInboxItem(tx, {
          teamId: team.id,
          agentId: lead.id,
          type: "briefing",
          title: "Never was",
          summary: "s",
          content: "c",
        });
        expect(await enqueueNotifications(tx, jobs, item)).toBe(1);
        const [row] = await tx.select().from(notifications).where(eq(notifications.inboxItemId, item.id));
        queuedId = row!.id;
        const [job] = await tx.execute<{ n: string }>(sql`select count(*) as n from pgboss.job where id = ${queuedId}`);
        expect(Number(job!.n)).toBe(1); // the job is there, inside the transaction
        throw new Error("the agent's step failed");
      }),
    ).rejects.toThrow("the agent's step failed");
    expect(await database.db.select().from(notifications).where(eq(notifications.id, queuedId!))).toEqual([]);
    const [job] = await database.db.execute<{ n: string }>(
      sql`select count(*) as n from pgboss.job where id = ${queuedId!}`,
    );
    expect(Number(job!.n)).toBe(0);
    // And nothing arrives.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(requestsTo(url)).toEqual([]);
  });
});

describe("the HTTP API", () => {
  it("answers 400 for bad channels, with a message that says what to fix, and changes nothing", async () => {
    const { team } = await createTeamFixture(database.db);
    const bad: [string, unknown, RegExp][] = [
      ["ftp url", { type: "webhook", name: "n", url: "ftp://example.test/x", kinds: ["alert"] }, /url must be an http/],
      ["not a url", { type: "webhook", name: "n", url: "hooks.slack.com", kinds: ["alert"] }, /url must be an http/],
      [
        "javascript url",
        { type: "webhook", name: "n", url: "javascript:alert(1)", kinds: ["alert"] },
        /url must be an http/,
      ],
      [
        "no kinds",
        { type: "webhook", name: "n", url: "https://example.test", kinds: [] },
        /kinds: choose at least one/,
      ],
      [
        "unknown kind",
        { type: "webhook", name: "n", url: "https://example.test", kinds: ["spam"] },
        /kinds may hold only briefing, question, approval, alert/,
      ],
      ["kinds not a list", { type: "webhook", name: "n", url: "https://example.test", kinds: "alert" }, /kinds/],
      [
        "bad email",
        { type: "email", name: "n", recipient: "not-an-address", kinds: ["alert"] },
        /recipient must be an email address/,
      ],
      [
        "url on email",
        { type: "email", name: "n", recipient: "a@example.test", url: "https://example.test", kinds: ["alert"] },
        /url/,
      ],
      [
        "recipient on webhook",
        { type: "webhook", name: "n", url: "https://example.test", recipient: "a@example.test", kinds: ["alert"] },
        /recipient/,
      ],
      ["no type", { name: "n", url: "https://example.test", kinds: ["alert"] }, /type must be "webhook"/],
      ["wrong type", { type: "sms", name: "n", kinds: ["alert"] }, /type must be "webhook"/],
      [
        "empty name",
        { type: "webhook", name: "  ", url: "https://example.test", kinds: ["alert"] },
        /name is required/,
      ],
      [
        "a secret of one's own",
        { type: "webhook", name: "n", url: "https://example.test", kinds: ["alert"], secret: "whsec_mine" },
        /secret/,
      ],
      ["not an object", [], /.+/],
    ];
    for (const [what, body, message] of bad) {
      const error = await errorCode(await api.channels.POST(request("POST", body), params({ teamId: team.id })), 400);
      expect(error.code, what).toMatch(/^bad_request:/);
      expect(error.message, what).toMatch(message);
    }
    expect((await api.channels.POST(request("POST", "{not json"), params({ teamId: team.id }))).status).toBe(400);
    const listed = await json<{ channels: unknown[] }>(
      await api.channels.GET(request("GET"), params({ teamId: team.id })),
      200,
    );
    expect(listed.channels).toEqual([]);

    const { channel } = await addChannel(team.id, {
      type: "email",
      name: "Mail",
      recipient: "a@example.test",
      kinds: ["alert"],
    });
    for (const [what, body, message] of [
      ["nothing", {}, /Nothing to change/],
      ["url of an email channel", { url: "https://example.test" }, /this is an email channel/],
      ["bad kinds", { kinds: [] }, /choose at least one/],
      ["enabled as text", { enabled: "yes" }, /enabled/],
      ["unknown field", { type: "webhook" }, /type/],
    ] as const) {
      const error = await errorCode(
        await api.channel.PATCH(request("PATCH", body), params({ channelId: channel.id })),
        400,
      );
      expect(error.message, what).toMatch(message);
    }
  });

  it("answers 404 for unknown teams and channels, garbage ids included", async () => {
    for (const teamId of [randomUUID(), "not-a-uuid"]) {
      expect((await errorCode(await api.channels.GET(request("GET"), params({ teamId })), 404)).code).toBe(
        "not_found:team",
      );
      const body = { type: "webhook", name: "n", url: "https://example.test", kinds: ["alert"] };
      expect((await errorCode(await api.channels.POST(request("POST", body), params({ teamId })), 404)).code).toBe(
        "not_found:team",
      );
    }
    for (const channelId of [randomUUID(), "%20", "1"]) {
      expect(
        (await errorCode(await api.channel.PATCH(request("PATCH", { name: "x" }), params({ channelId })), 404)).code,
      ).toBe("not_found:notification_channel");
      expect((await errorCode(await api.channel.DELETE(request("DELETE"), params({ channelId })), 404)).code).toBe(
        "not_found:notification_channel",
      );
      expect((await errorCode(await api.test.POST(request("POST"), params({ channelId })), 404)).code).toBe(
        "not_found:notification_channel",
      );
    }
  });

  it("shows a webhook channel's secret once: never in listings, changes or the delivery log", async () => {
    const { team } = await createTeamFixture(database.db);
    const created = await api.channels.POST(
      request("POST", { type: "webhook", name: "Once", url: endpoint("once"), kinds: ["briefing"] }),
      params({ teamId: team.id }),
    );
    expect(created.headers.get("cache-control")).toBe("no-store");
    const { channel, secret } = await json<{ channel: ChannelJson; secret: string }>(created, 201);
    expect(secret).toMatch(/^whsec_/);
    expect(Object.keys(channel)).not.toContain("secret");

    const listing = await (await api.channels.GET(request("GET"), params({ teamId: team.id }))).text();
    const changed = await (
      await api.channel.PATCH(
        request("PATCH", { name: "Renamed", kinds: ["alert", "briefing"] }),
        params({ channelId: channel.id }),
      )
    ).text();
    expect(JSON.parse(changed).channel).toMatchObject({ name: "Renamed", kinds: ["briefing", "alert"] });
    const tested = await (await api.test.POST(request("POST"), params({ channelId: channel.id }))).text();
    for (const text of [listing, changed, tested]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain('"secret"');
    }
    expected.add(JSON.parse(tested).notification.id);
  });

  it("Send test queues a test notification to that channel only; it shows in the delivery log; DELETE removes the channel and its log", async () => {
    const { team } = await createTeamFixture(database.db);
    const target = endpoint("send-test");
    const other = endpoint("not-tested");
    const { channel } = await addChannel(team.id, {
      type: "webhook",
      name: "Team Slack",
      url: target,
      kinds: ["alert"],
    });
    await addChannel(team.id, {
      type: "webhook",
      name: "Other",
      url: other,
      kinds: ["briefing", "question", "approval", "alert"],
    });

    const { notification } = await json<{ notification: Notification }>(
      await api.test.POST(request("POST"), params({ channelId: channel.id })),
      202,
    );
    expect(notification).toMatchObject({ channelId: channel.id, kind: "test", status: "pending", inboxItemId: null });
    expected.add(notification.id);
    expect(await settled(notification.id)).toMatchObject({ status: "sent", attempts: 1 });
    const [delivery] = requestsTo(target);
    expect(JSON.parse(delivery!.body)).toMatchObject({
      id: notification.id,
      type: "test",
      link: `${PUBLIC_URL}/teams/${team.id}`,
    });
    expect(JSON.parse(delivery!.body).text).toContain("Team Slack");
    expect(requestsTo(other)).toEqual([]);

    type Listing = { channels: ChannelJson[]; deliveries: Record<string, unknown>[] };
    const listing = await json<Listing>(await api.channels.GET(request("GET"), params({ teamId: team.id })), 200);
    expect(listing.channels.map((entry) => entry.name)).toEqual(["Team Slack", "Other"]);
    expect(listing.deliveries).toEqual([
      expect.objectContaining({
        id: notification.id,
        channelName: "Team Slack",
        kind: "test",
        status: "sent",
        attempts: 1,
        lastError: null,
        title: expect.stringContaining("Test notification"),
      }),
    ]);
    expect(listing.deliveries[0]).toHaveProperty("createdAt");
    expect(listing.deliveries[0]).toHaveProperty("sentAt");

    expect((await api.channel.DELETE(request("DELETE"), params({ channelId: channel.id }))).status).toBe(204);
    const after = await json<Listing>(await api.channels.GET(request("GET"), params({ teamId: team.id })), 200);
    expect(after.channels.map((entry) => entry.name)).toEqual(["Other"]);
    expect(after.deliveries).toEqual([]);
    expect((await api.channel.DELETE(request("DELETE"), params({ channelId: channel.id }))).status).toBe(404);
  });

  it("answers every channel write racing its team's deletion with a 2xx or 404, never a 5xx", async () => {
    const statuses: number[] = [];
    for (let round = 0; round < 5; round++) {
      const { team } = await createTeamFixture(database.db);
      const { channel } = await addChannel(team.id, {
        type: "webhook",
        name: "Race",
        url: endpoint("race"),
        kinds: ["alert"],
      });
      const responses = await Promise.all([
        api.channels.POST(
          request("POST", { type: "webhook", name: "New", url: "https://example.test", kinds: ["alert"] }),
          params({ teamId: team.id }),
        ),
        api.channel.PATCH(request("PATCH", { enabled: false }), params({ channelId: channel.id })),
        api.test.POST(request("POST"), params({ channelId: channel.id })),
        api.channel.DELETE(request("DELETE"), params({ channelId: channel.id })),
        api.team.DELETE(request("DELETE"), params({ teamId: team.id })),
      ]);
      for (const response of responses) {
        statuses.push(response.status);
        await response.text();
      }
    }
    expect(statuses.filter((status) => status >= 500)).toEqual([]);
    expect(statuses.every((status) => [200, 201, 202, 204, 404].includes(status))).toBe(true);
  });
});

describe("a worker killed mid-delivery", () => {
  it("leads to a retry by another worker: delivered under one idempotency key; with no retries left, given up (failed), never left pending", {
    timeout: 90_000,
  }, async () => {
    // Only real worker processes from here on: this process's worker would take the jobs otherwise.
    await worker?.stop();
    worker = undefined;
    const { team, lead } = await createTeamFixture(database.db);
    const url = endpoint("killed", "hold-first");
    const { channel } = await addChannel(team.id, { type: "webhook", name: "Patient", url, kinds: ["alert"] });
    const env = {
      DATABASE_URL: database.url,
      PUBLIC_URL,
      SMTP_URL: process.env.SMTP_URL!,
      SMTP_FROM,
      NOTIFICATION_RETRY_DELAY_SECONDS: "1",
    };
    const first = startWorkerProcess(env);
    spawned.push(first);
    await waitFor(async () => first.output.join("").includes("[worker] ready"), {
      timeoutMs: 30_000,
      what: "the first worker to start",
    });

    const { rows } = await itemWithNotifications(team.id, lead.id, "alert", "Disk almost full");
    const retried = rows[0]!.id;
    expected.add(retried);
    // And one on its last attempt already (queued by hand with no retries): the dead worker's
    // attempt was its last, so pg-boss's dead letter must end it as failed.
    const [last] = await database.db
      .insert(notifications)
      .values({
        channelId: channel.id,
        teamId: team.id,
        inboxItemId: null,
        kind: "test",
        payload: { type: "test", title: "Last try", summary: "s", link: PUBLIC_URL },
      })
      .returning();
    await jobs.boss.send(NOTIFICATION_QUEUE, { notificationId: last!.id }, { id: last!.id, retryLimit: 0 });

    const heldKeys = () =>
      new Set(
        requestsTo(url)
          .filter((entry) => entry.status === "held")
          .map((entry) => entry.key),
      );
    await waitFor(async () => heldKeys().size === 2, {
      timeoutMs: 20_000,
      what: "both deliveries to reach the receiver",
    });
    expect(await notificationRow(retried)).toMatchObject({ status: "pending", attempts: 1 });

    first.child.kill("SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));
    const second = startWorkerProcess(env);
    spawned.push(second);

    const sent = await settled(retried, 60_000);
    expect(sent).toMatchObject({ status: "sent", attempts: 2 });
    const seen = requestsTo(url).filter((entry) => entry.key === retried);
    expect(seen.map((entry) => entry.status)).toEqual(["held", 200]);

    const givenUp = await settled(last!.id, 60_000);
    expect(givenUp).toMatchObject({
      status: "failed",
      attempts: 1,
      lastError: "The last attempt did not finish (its worker stopped), and no more attempts were left.",
    });
    expect(requestsTo(url).filter((entry) => entry.key === last!.id)).toHaveLength(1);
    await second.stop("SIGTERM");
  });
});

// --- The account -----------------------------------------------------------------------------

let figures: { sent: number; retried: number; duplicates: number; lost: number } | undefined;

describe("what the receivers saw", () => {
  it("every expected notification arrived, and no inbox item reached a channel under two keys", async () => {
    const webhookKeys = received.map((entry) => entry.key);
    const accepted = new Set(received.filter((entry) => entry.status === 200).map((entry) => entry.key));
    const emailKeys = emails.map((email) => /^<(.+)@cadre>$/.exec(email.messageId)?.[1] ?? email.messageId);
    const delivered = new Set([...accepted, ...emailKeys]);
    const allKeys = [...webhookKeys, ...emailKeys];

    // A key belongs to one (channel, inbox item): more than one key for the same pair is a duplicate
    // the idempotency key cannot catch.
    const rows = await database.db
      .select({ id: notifications.id, channelId: notifications.channelId, inboxItemId: notifications.inboxItemId })
      .from(notifications);
    const byId = new Map(rows.map((row) => [row.id, row]));
    const keysPerItem = new Map<string, Set<string>>();
    for (const key of new Set(allKeys)) {
      const row = byId.get(key);
      if (!row?.inboxItemId) continue;
      const pair = `${row.channelId}/${row.inboxItemId}`;
      keysPerItem.set(pair, (keysPerItem.get(pair) ?? new Set()).add(key));
    }
    const duplicates = [...keysPerItem.values()].reduce((sum, keys) => sum + keys.size - 1, 0);
    figures = {
      sent: delivered.size,
      retried: allKeys.length - new Set(allKeys).size,
      duplicates,
      lost: [...expected].filter((id) => !delivered.has(id)).length,
    };
    expect(figures.duplicates).toBe(0);
    expect(figures.lost).toBe(0);
    expect(figures.sent).toBeGreaterThanOrEqual(expected.size);
  });
});
