// Acting where the person is (issue 37), through the route handlers with APP_PASSWORD set and no
// session anywhere: the email (a real SMTP server) and the webhook message carry signed Approve /
// Deny / Answer links; their one click decides once, through the same one-winner path as the app,
// and records where ("email", "slack", "app"). A second click, a tampered, made-up or expired
// link, and a link for an item decided in the app change nothing. Slack's buttons: signed,
// badly signed, stale and replayed payloads make exactly one decision, never a 5xx. Both doors
// share the sign-in throttle: 200 bad tries at once from one address, at most 5 are checked.
// No token reaches the log. The pages themselves are driven in Chromium: tests/e2e/action-links.test.ts.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { actionLinkKey, signActionLink } from "@/lib/auth/action-links";
import { CLIENT_ADDRESS_HEADER } from "@/lib/auth/auth-rules";
import { signInThrottle } from "@/lib/auth/sign-in-throttle";
import { getBackgroundConversation } from "@/lib/db/queries/conversations";
import { approvals, inboxItems, notifications, questions, type Agent } from "@/lib/db/schema";
import { askPerson } from "@/lib/domain/questions";
import { decideApproval, requestApprovals } from "@/lib/engine/approvals";
import { signedSlackHeaders } from "@/lib/http/slack-signature";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { createNotificationChannel } from "@/lib/notifications/channels";
import { deliverNotification } from "@/lib/notifications/deliver";
import type { TestDatabase } from "../support/database";
import { createTeamFixture } from "../support/fixtures";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

const SLACK_SECRET = vi.hoisted(() => {
  // Before any module parses the environment (env() reads it once per process).
  process.env.APP_PASSWORD = "links are credentials for one item";
  process.env.PUBLIC_URL = "https://cadre.example.test";
  process.env.ALLOW_PRIVATE_URLS = "1"; // the receivers below listen on 127.0.0.1
  process.env.LEAD_SCHEDULE = "off";
  for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_MODEL", "TAVILY_API_KEY", "TAVILY_BASE_URL"])
    delete process.env[name];
  const secret = "8f742231b10e8888abcd99yyyzzz85a5";
  process.env.SLACK_SIGNING_SECRET = secret;
  return secret;
});

const PUBLIC_URL = "https://cadre.example.test";
const SMTP_FROM = "Cadre <cadre@example.test>";

type Email = { to: string; raw: string };
const emails: Email[] = [];
const received: { path: string; body: string }[] = [];
let smtp: SMTPServer;
let smtpUrl: string;
let receiver: Server;
let receiverUrl: string;
let database: TestDatabase;
let jobs: JobQueue;
const logged: string[] = [];

async function loadRoutes() {
  return {
    act: await import("@/app/api/act/route"),
    teams: await import("@/app/api/teams/route"),
    decision: await import("@/app/api/approvals/[approvalId]/decision/route"),
    slack: await import("@/app/api/slack/actions/route"),
  };
}
let api: Awaited<ReturnType<typeof loadRoutes>>;

beforeAll(async () => {
  for (const level of ["log", "warn", "error", "info"] as const) {
    const original = console[level].bind(console);
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      logged.push(args.map(String).join(" "));
      original(...args);
    });
  }
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        emails.push({ to: session.envelope.rcptTo[0]?.address ?? "", raw: Buffer.concat(chunks).toString("utf8") });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", () => resolve()));
  smtpUrl = `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`;
  receiver = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ path: request.url ?? "/", body: Buffer.concat(chunks).toString("utf8") });
      response.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  database = await createWebTestDatabase();
  api = await loadRoutes();
  const { webEngine } = await import("@/lib/http/server");
  jobs = (await webEngine()).jobs;
});

afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
  await new Promise((resolve) => smtp?.close(() => resolve(undefined)));
  await closeWebTestDatabase(database);
  vi.restoreAllMocks();
});

// --- Helpers ---------------------------------------------------------------------------------

/** A team with an email channel and a webhook channel for approvals and questions. */
async function teamWithChannels() {
  const fixture = await createTeamFixture(database.db);
  const smtpSettings = { url: smtpUrl, from: SMTP_FROM };
  const recipient = `person-${randomUUID().slice(0, 8)}@example.test`;
  await createNotificationChannel(
    database.db,
    fixture.team.id,
    { type: "email", name: "Me", recipient, kinds: ["approval", "question"] },
    { smtp: smtpSettings },
  );
  const hookPath = `/slack/${randomUUID().slice(0, 8)}`;
  await createNotificationChannel(
    database.db,
    fixture.team.id,
    { type: "webhook", name: "Slack", url: `${receiverUrl}${hookPath}`, kinds: ["approval", "question"] },
    { allowPrivate: true },
  );
  return { ...fixture, recipient, hookPath };
}

async function waitingApproval(lead: Agent, content = `Tidal output rose 4% (${randomUUID().slice(0, 6)})`) {
  const conversation = await getBackgroundConversation(database.db, lead.id);
  const [approval] = await requestApprovals(
    database.db,
    jobs,
    { agent: lead, conversationId: conversation.id, taskId: null },
    [{ toolCallId: `call-${randomUUID()}`, toolName: "addKnowledgeItem", input: { type: "fact", content } }],
    "Worth keeping for the weekly brief.",
  );
  return approval!;
}

/** Delivers every queued notification now, as the worker would. */
async function deliverAll(): Promise<void> {
  const pending = await database.db.select().from(notifications).where(eq(notifications.status, "pending"));
  for (const row of pending) {
    await deliverNotification(
      database.db,
      { notificationId: row.id, attempt: 1, lastAttempt: false, signal: new AbortController().signal },
      { smtp: { url: smtpUrl, from: SMTP_FROM } },
    );
  }
}

/** The text of the latest email to `to`, quoted-printable undone. */
function emailTo(to: string): string {
  const email = emails.filter((each) => each.to === to).at(-1);
  expect(email, `an email to ${to}`).toBeDefined();
  return email!.raw
    .replace(/=\r?\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

function linkIn(text: string, label: string): string {
  const match = new RegExp(`^${label}: (\\S+)$`, "m").exec(text);
  expect(match, `a "${label}:" link`).not.toBeNull();
  return match![1]!;
}

const tokenOf = (url: string) => new URL(url).searchParams.get("t")!;

function act(token: string, body: unknown = {}, address = "198.51.100.7") {
  return api.act.POST(
    new Request(`${PUBLIC_URL}/api/act?t=${encodeURIComponent(token)}`, {
      method: "POST",
      headers: { "content-type": "application/json", [CLIENT_ADDRESS_HEADER]: address },
      body: JSON.stringify(body),
    }),
  );
}

async function answerOf(response: Response): Promise<{ status: number; body: Record<string, unknown> }> {
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const approvalRow = async (id: string) => (await database.db.select().from(approvals).where(eq(approvals.id, id)))[0]!;
const questionRow = async (id: string) => (await database.db.select().from(questions).where(eq(questions.id, id)))[0]!;

// --- Links -----------------------------------------------------------------------------------

describe("action links in an email", () => {
  it("an approval's email carries Approve and Deny links; Approve decides it once, from email, with no session", async () => {
    const { lead, recipient } = await teamWithChannels();
    const approval = await waitingApproval(lead);
    await deliverAll();
    const text = emailTo(recipient);
    const approve = linkIn(text, "Approve");
    const deny = linkIn(text, "Deny");
    expect(approve.startsWith(`${PUBLIC_URL}/act?t=`)).toBe(true);
    // The token opens its one item's page and click, nothing else: the app's own routes still want a session.
    const withToken = (path: string, method = "GET") =>
      new Request(`${PUBLIC_URL}${path}?t=${tokenOf(approve)}`, {
        method,
        headers: { cookie: `cadre_session=${tokenOf(approve)}` },
      });
    const listTeams = api.teams.GET as unknown as (request: Request) => Promise<Response>; // Next passes the request to every handler
    expect((await listTeams(withToken("/api/teams"))).status).toBe(401);
    expect(
      (
        await api.decision.POST(withToken(`/api/approvals/${approval.id}/decision`, "POST"), {
          params: Promise.resolve({ approvalId: approval.id }),
        })
      ).status,
    ).toBe(401);
    expect(text).toMatch(/no sign-in needed\. It works once, until .+ UTC\./);

    expect(await answerOf(await act(tokenOf(approve)))).toEqual({ status: 200, body: { state: "settled" } });
    const decided = await approvalRow(approval.id);
    expect(decided).toMatchObject({ status: "approved", decidedVia: "email", decidedBy: null });
    const [item] = await database.db.select().from(inboxItems).where(eq(inboxItems.approvalId, approval.id));
    expect(item!.readAt).not.toBeNull();

    // A second click, then the Deny link: the page's state says it is settled; nothing changes.
    for (const token of [tokenOf(approve), tokenOf(deny)]) {
      expect(await answerOf(await act(token, { reason: "changed my mind" }))).toEqual({
        status: 200,
        body: { state: "settled" },
      });
    }
    expect(await approvalRow(approval.id)).toEqual(decided);
  });

  it("a tampered, a made-up and an expired link decide nothing", async () => {
    signInThrottle.clear();
    const { lead, recipient } = await teamWithChannels();
    const approval = await waitingApproval(lead);
    await deliverAll();
    const token = tokenOf(linkIn(emailTo(recipient), "Approve"));
    const [payload, signature] = token.split(".") as [string, string];
    // The same token naming another item (the signature no longer holds), and a changed signature.
    const other = Buffer.from(Buffer.from(payload, "base64url").toString().replace(approval.id, randomUUID())).toString(
      "base64url",
    );
    const flipped = `${signature.slice(0, 10)}${signature[10] === "A" ? "B" : "A"}${signature.slice(11)}`;
    // The last character carries 2 unused bits: its other spellings decode to the same bytes.
    const last = signature.at(-1)!;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const base = alphabet.indexOf(last) & ~3;
    const respelled = [1, 2, 3].map(
      (bits) => `${payload}.${signature.slice(0, -1)}${alphabet[(base | bits) ^ (alphabet.indexOf(last) & 3)]}`,
    );
    for (const bad of [`${other}.${signature}`, `${payload}.${flipped}`, ...respelled, "not-a-token", ""]) {
      const answer = await answerOf(await act(bad));
      expect({ bad, ...answer }).toMatchObject({
        bad,
        status: 404,
        body: { error: { code: "not_found:action_link" } },
      });
    }
    const key = await actionLinkKey(database.db);
    const expired = signActionLink(key, {
      action: "approve",
      channel: "email",
      itemId: approval.id,
      expiresAt: new Date(Date.now() - 1000),
    });
    expect(await answerOf(await act(expired))).toMatchObject({
      status: 404,
      body: { error: { code: "not_found:action_link_expired" } },
    });
    expect((await approvalRow(approval.id)).status).toBe("pending");
    signInThrottle.clear();
  });

  it("a link for an item decided in the app says so and changes nothing", async () => {
    const { lead, recipient } = await teamWithChannels();
    const approval = await waitingApproval(lead);
    await deliverAll();
    const deny = tokenOf(linkIn(emailTo(recipient), "Deny"));
    await decideApproval(database.db, jobs, approval.id, { decision: "approve" });
    const before = await approvalRow(approval.id);
    expect(before).toMatchObject({ status: "approved", decidedVia: "app" });
    expect(await answerOf(await act(deny, { reason: "no" }))).toEqual({ status: 200, body: { state: "settled" } });
    expect(await approvalRow(approval.id)).toEqual(before);
  });

  it("a question's email carries an Answer link that answers it once, from email", async () => {
    const { lead, recipient } = await teamWithChannels();
    const question = await askPerson(database.db, jobs, lead, {
      question: "Which region first: Brittany or Orkney?",
      taskId: null,
    });
    await deliverAll();
    const answer = tokenOf(linkIn(emailTo(recipient), "Answer"));
    // No words, no answer: a 400 that changes nothing.
    expect((await act(answer, {})).status).toBe(400);
    // Only spaces: the field is named once, not twice ("answer: answer: …").
    expect(await answerOf(await act(answer, { answer: "   " }))).toMatchObject({
      status: 400,
      body: { error: { message: "answer: write your answer first" } },
    });
    expect((await questionRow(question!.id)).status).toBe("open");
    expect(await answerOf(await act(answer, { answer: "Orkney, then Brittany." }))).toEqual({
      status: 200,
      body: { state: "settled" },
    });
    const answered = await questionRow(question!.id);
    expect(answered).toMatchObject({ status: "answered", answer: "Orkney, then Brittany.", answeredVia: "email" });
    expect(await answerOf(await act(answer, { answer: "Brittany after all." }))).toEqual({
      status: 200,
      body: { state: "settled" },
    });
    expect(await questionRow(question!.id)).toEqual(answered);
  });
});

// --- Slack -----------------------------------------------------------------------------------

/** The webhook body the channel at `hookPath` received last. */
function lastHookBody(hookPath: string) {
  const body = received.filter((each) => each.path === hookPath).at(-1)?.body;
  expect(body, `a delivery to ${hookPath}`).toBeDefined();
  return JSON.parse(body!) as {
    text: string;
    actions: { action: string; url: string }[];
    blocks: { type: string; elements?: { action_id: string; value?: string; url?: string }[] }[];
  };
}

function slackRequest(
  payload: unknown,
  options: { secret?: string; timestamp?: number; address?: string; raw?: string } = {},
): Request {
  const body = options.raw ?? `payload=${encodeURIComponent(JSON.stringify(payload))}`;
  return new Request(`${PUBLIC_URL}/api/slack/actions`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      [CLIENT_ADDRESS_HEADER]: options.address ?? "34.226.1.1",
      ...signedSlackHeaders(options.secret ?? SLACK_SECRET, body, options.timestamp),
    },
    body,
  });
}

function press(actionId: string, value: string | undefined, responsePath = "/response") {
  return {
    type: "block_actions",
    user: { id: "U123", username: "ana", name: "ana" },
    actions: [{ action_id: actionId, value, block_id: "cadre_actions", type: "button" }],
    response_url: `${receiverUrl}${responsePath}`,
    message: { text: "Lead wants to use addKnowledgeItem" },
    team: { id: "T1" },
    trigger_id: "1.2.3",
  };
}

describe("Slack buttons", () => {
  it("the webhook message carries Slack buttons and links for the same actions", async () => {
    const { lead, hookPath } = await teamWithChannels();
    await waitingApproval(lead);
    await deliverAll();
    const body = lastHookBody(hookPath);
    expect(body.actions.map((each) => each.action)).toEqual(["approve", "deny"]);
    expect(body.text).toContain("|Approve>");
    const buttons = body.blocks.find((block) => block.type === "actions")!.elements!;
    expect(buttons.map((each) => each.action_id)).toEqual(["cadre_approve", "cadre_deny"]);
    // Each button's token is Slack's own, not the link's: a token is bound to its channel.
    expect(buttons[0]!.value).not.toBe(tokenOf(body.actions[0]!.url));
  });

  it("signed presses decide exactly once; badly signed, stale and replayed ones are refused without a 5xx", async () => {
    signInThrottle.clear();
    const { lead, hookPath } = await teamWithChannels();
    const approval = await waitingApproval(lead);
    await deliverAll();
    const [approveButton, denyButton] = lastHookBody(hookPath).blocks.find((block) => block.type === "actions")!
      .elements!;
    const statuses: number[] = [];
    const send = async (request: Request) => {
      const response = await api.slack.POST(request);
      statuses.push(response.status);
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const now = Math.floor(Date.now() / 1000);
    // Refused before anything is decided: a wrong secret, a stale timestamp, no signature at all.
    expect((await send(slackRequest(press("cadre_approve", approveButton!.value), { secret: "wrong" }))).status).toBe(
      401,
    );
    expect(
      (await send(slackRequest(press("cadre_approve", approveButton!.value), { timestamp: now - 600 }))).status,
    ).toBe(401);
    const unsigned = new Request(`${PUBLIC_URL}/api/slack/actions`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "payload=%7B%7D",
    });
    expect((await send(unsigned)).status).toBe(401);
    expect((await approvalRow(approval.id)).status).toBe("pending");

    // The press itself, and the very same request again (a replay within the five minutes).
    const signed = slackRequest(press("cadre_approve", approveButton!.value, "/response-1"), { timestamp: now });
    const replay = signed.clone();
    expect(await send(signed)).toEqual({
      status: 200,
      body: { replace_original: true, text: "Lead wants to use addKnowledgeItem\nApproved by ana in Slack." },
    });
    const decided = await approvalRow(approval.id);
    expect(decided).toMatchObject({ status: "approved", decidedVia: "slack", decidedBy: "ana" });
    expect((await send(replay)).status).toBe(200);
    // Deny pressed after, and Approve's token on the Deny button: nothing changes.
    const late = await send(slackRequest(press("cadre_deny", denyButton!.value)));
    expect(late.body.text).toContain("Approved by ana in Slack");
    const swapped = await send(slackRequest(press("cadre_deny", approveButton!.value)));
    expect(swapped.body.text).toMatch(/not one Cadre made/);
    expect(await approvalRow(approval.id)).toEqual(decided);
    // The message itself was replaced through its response_url.
    expect(received.find((each) => each.path === "/response-1")?.body).toBe(
      JSON.stringify({
        replace_original: true,
        text: "Lead wants to use addKnowledgeItem\nApproved by ana in Slack.",
      }),
    );
    // Not JSON, and a body that is not Slack's shape: 400.
    expect((await send(slackRequest(null, { raw: "payload=not-json" }))).status).toBe(400);
    expect((await send(slackRequest({ type: "block_actions" }))).status).toBe(400);

    expect(statuses.filter((status) => status >= 500)).toEqual([]);
    signInThrottle.clear();
  });
});

describe("Slack payloads", () => {
  it("a NUL in a name (Postgres text cannot hold one) is a 400 that decides nothing, not a 500", async () => {
    const { lead, hookPath } = await teamWithChannels();
    const approval = await waitingApproval(lead);
    await deliverAll();
    const button = lastHookBody(hookPath).blocks.find((block) => block.type === "actions")!.elements![0]!;
    const pressed = press("cadre_approve", button.value);
    const response = await api.slack.POST(
      slackRequest({ ...pressed, user: { ...pressed.user, username: "a\u0000b" } }),
    );
    expect(response.status).toBe(400);
    expect((await approvalRow(approval.id)).status).toBe("pending");
    expect(logged.filter((line) => line.includes("0x00"))).toEqual([]);
  });
});

// --- The throttle ----------------------------------------------------------------------------

describe("the sign-in throttle on links and Slack", () => {
  it("checks at most 5 of 200 bad links or Slack presses sent at once from one address; the rest answer 429", async () => {
    const figures: string[] = [];
    for (const [door, send] of [
      ["links", (index: number) => act(forgedToken(index), {}, "203.0.113.60")],
      [
        "Slack",
        () => api.slack.POST(slackRequest(press("cadre_approve", "x"), { secret: "guess", address: "203.0.113.61" })),
      ],
    ] as const) {
      signInThrottle.clear();
      const statuses = (await Promise.all(Array.from({ length: 200 }, (_, index) => send(index)))).map(
        (response) => response.status,
      );
      const checked = statuses.filter((status) => status !== 429);
      figures.push(`${door}: ${checked.length} checked, ${statuses.length - checked.length} × 429`);
      expect(checked.length).toBeLessThanOrEqual(signInThrottle.limits.perClient);
      expect(checked.every((status) => status === 404 || status === 401)).toBe(true);
    }
    signInThrottle.clear();
    console.log(`[action-links] 200 bad tries at once from one address: ${figures.join("; ")}`);
  });
});

/** A token of the right shape, for an item that does not exist, signed with no key at all. */
function forgedToken(index: number): string {
  const payload = Buffer.from(`1:approve:email:${randomUUID()}:${2_000_000_000 + index}`).toString("base64url");
  return `${payload}.${"A".repeat(43)}`;
}

describe("what the throttle does not count", () => {
  it("a missing or malformed token is never counted, and the page a link opens counts nothing", async () => {
    signInThrottle.clear();
    const { lead, recipient } = await teamWithChannels();
    const approval = await waitingApproval(lead);
    await deliverAll();
    const token = tokenOf(linkIn(emailTo(recipient), "Approve"));
    const page = (await import("@/app/act/page")).default;
    const address = "203.0.113.70";
    for (let index = 0; index < 25; index++) {
      // What `<img src="/act">` on a foreign page sends: no token, or a broken one, or a forged one.
      await page({ searchParams: Promise.resolve({ t: index % 2 ? forgedToken(index) : undefined }) });
      expect((await act(["", "x", `${"A".repeat(10)}.short`][index % 3]!, {}, address)).status).toBe(404);
    }
    expect(signInThrottle.refusal({ client: address })).toBeNull();
    expect(signInThrottle.refusal({ client: "203.0.113.71" })).toBeNull();
    expect((await act(token, {}, address)).status).toBe(200);
    expect((await approvalRow(approval.id)).status).toBe("approved");
    signInThrottle.clear();
  });

  it("strangers' forged links and Slack presses never hold back a genuine link or a signed press", async () => {
    signInThrottle.clear();
    const { lead, recipient, hookPath } = await teamWithChannels();
    const approval = await waitingApproval(lead);
    await deliverAll();
    // Strangers from many addresses fill every count: their own, and all strangers' together.
    for (let index = 0; index < 30; index++) {
      await act(forgedToken(index), {}, `198.18.0.${index}`);
      await api.slack.POST(
        slackRequest(press("cadre_approve", "x"), { secret: "guess", address: `198.18.1.${index}` }),
      );
    }
    expect(signInThrottle.refusal({ client: "198.51.100.7" })?.because).toBe("strangers");
    expect((await act(forgedToken(99), {}, "198.18.0.1")).status).toBe(429);
    const refused = await answerOf(await act(forgedToken(99), {}, "198.18.0.1"));
    expect(String((refused.body.error as { message: string }).message)).not.toMatch(/password/i);
    // The person's link, from yet another address, and Slack's signed press still decide.
    expect((await act(tokenOf(linkIn(emailTo(recipient), "Deny")), {}, "192.0.2.200")).status).toBe(200);
    expect((await approvalRow(approval.id)).status).toBe("denied");
    const button = lastHookBody(hookPath).blocks.find((block) => block.type === "actions")!.elements![0]!;
    const pressed = await api.slack.POST(slackRequest(press("cadre_approve", button.value), { address: "198.18.1.3" }));
    expect(pressed.status).toBe(200);
    signInThrottle.clear();
  });

  it("a genuine link or Slack press does not forgive its address's wrong passwords", async () => {
    signInThrottle.clear();
    const { lead, recipient, hookPath } = await teamWithChannels();
    await waitingApproval(lead);
    await deliverAll();
    const address = "203.0.113.80";
    for (let index = 0; index < signInThrottle.limits.perClient - 1; index++)
      signInThrottle.recordFailure({ client: address });
    expect((await act(tokenOf(linkIn(emailTo(recipient), "Deny")), {}, address)).status).toBe(200);
    const button = lastHookBody(hookPath).blocks.find((block) => block.type === "actions")!.elements![0]!;
    expect((await api.slack.POST(slackRequest(press("cadre_approve", button.value), { address }))).status).toBe(200);
    signInThrottle.recordFailure({ client: address });
    expect(signInThrottle.refusal({ client: address })?.because).toBe("client");
    signInThrottle.clear();
  });
});

describe("logs", () => {
  it("never carry a token", async () => {
    const tokens = emails.flatMap((email) =>
      [...email.raw.replace(/=\r?\n/g, "").matchAll(/t=3D([A-Za-z0-9_.-]+)/g)].map((match) => match[1]!),
    );
    expect(tokens.length).toBeGreaterThan(0);
    for (const token of tokens) expect(logged.filter((line) => line.includes(token))).toEqual([]);
  });
});
