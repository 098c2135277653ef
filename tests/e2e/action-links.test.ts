// Acting from the email itself (issue 37), in Chromium against `npm start` with APP_PASSWORD set
// and no session ever: an approval and a question are notified through a real SMTP server; the
// test reads the email and follows its links. A mail scanner's GET decides nothing; the page
// shows the item in plain words and one button that decides; a second click, a tampered link, an
// expired link and a link for an item decided in the app each get a page that says what
// happened and change nothing. Last, 200 connections holding back their bodies to the link's
// click, then sending them at once: at most the sign-in limit are checked, the rest get 429.
import net from "node:net";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { desc, eq } from "drizzle-orm";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { actionLinkKey, signActionLink } from "@/lib/auth/action-links";
import { getBackgroundConversation } from "@/lib/db/queries/conversations";
import { approvals, notifications, questions, type Agent } from "@/lib/db/schema";
import { askPerson } from "@/lib/domain/questions";
import { decideApproval, requestApprovals } from "@/lib/engine/approvals";
import { createNotificationChannel } from "@/lib/notifications/channels";
import { deliverNotification } from "@/lib/notifications/deliver";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTestEngine, type TestEngine } from "../support/engine";
import { createTeamFixture } from "../support/fixtures";
import { buildIfStale, launchChromium, settle, shoot, startApp, type AppServer } from "./app-server";

vi.hoisted(() => {
  // The links are made in this process (it delivers the notifications): they name this address,
  // which the test swaps for the app's own once it knows its port.
  process.env.PUBLIC_URL = "https://cadre.example.test";
});

const PASSWORD = "act where you are";
const SMTP_FROM = "Cadre <cadre@example.test>";
const RECIPIENT = "person@example.test";

let database: TestDatabase;
let engine: TestEngine;
let app: AppServer;
let smtp: SMTPServer;
let smtpUrl: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let lead: Agent;
const emails: string[] = [];

beforeAll(async () => {
  buildIfStale();
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        emails.push(Buffer.concat(chunks).toString("utf8"));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", () => resolve()));
  smtpUrl = `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`;
  database = await createTestDatabase();
  engine = await createTestEngine(database);
  // The web server works the notification queue too: it sends through the same SMTP server.
  app = await startApp(
    {
      DATABASE_URL: database.url,
      APP_PASSWORD: PASSWORD,
      SMTP_URL: smtpUrl,
      SMTP_FROM,
      PUBLIC_URL: "https://cadre.example.test",
    },
    ["--web-only"],
  );
  const fixture = await createTeamFixture(database.db, { name: "Tidal desk" });
  lead = fixture.lead;
  await createNotificationChannel(
    database.db,
    fixture.team.id,
    { type: "email", name: "Me", recipient: RECIPIENT, kinds: ["approval", "question"] },
    { smtp: { url: smtpUrl, from: SMTP_FROM } },
  );
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  context.setDefaultTimeout(15_000);
  page = await context.newPage();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await engine?.close();
  await new Promise((resolve) => smtp?.close(() => resolve(undefined)));
  await database?.drop();
}, 60_000);

async function waitingApproval(content: string) {
  const conversation = await getBackgroundConversation(database.db, lead.id);
  const [approval] = await requestApprovals(
    database.db,
    engine.jobs,
    { agent: lead, conversationId: conversation.id, taskId: null },
    [{ toolCallId: `call-${randomUUID()}`, toolName: "addKnowledgeItem", input: { type: "fact", content } }],
    "Worth keeping for the weekly brief.",
  );
  return approval!;
}

/**
 * The email of the newest notification, quoted-printable undone: sent by the app's queue, or by
 * this process when it comes first (the same message either way: one Message-ID, the same links).
 */
async function deliverAndRead(): Promise<string> {
  const [newest] = await database.db.select().from(notifications).orderBy(desc(notifications.createdAt)).limit(1);
  const messageId = `<${newest!.id}@cadre>`;
  await deliverNotification(
    database.db,
    { notificationId: newest!.id, attempt: 1, lastAttempt: false, signal: new AbortController().signal },
    { smtp: { url: smtpUrl, from: SMTP_FROM } },
  );
  await expect.poll(() => emails.some((email) => email.includes(messageId)), { timeout: 15_000 }).toBe(true);
  return emails
    .filter((email) => email.includes(messageId))
    .at(-1)!
    .replace(/=\r?\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

/** The email's link labelled `label`, pointed at the app this test started. */
function linkIn(text: string, label: string): string {
  const match = new RegExp(`^${label}: (\\S+)$`, "m").exec(text);
  expect(match, `a "${label}:" link in the email`).not.toBeNull();
  const url = new URL(match![1]!);
  return `${app.url}${url.pathname}${url.search}`;
}

const approvalRow = async (id: string) => (await database.db.select().from(approvals).where(eq(approvals.id, id)))[0]!;

async function open(url: string): Promise<string> {
  await page.goto(url);
  await settle(page);
  return page.evaluate(() => document.body.innerText);
}

/** Nothing internal on the page: no id, no raw tool name, no stack. */
function expectPlainWords(text: string): void {
  expect(text).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}/);
  expect(text).not.toContain("addKnowledgeItem");
  expect(text).not.toMatch(/^\s+at /m);
}

describe("an approval decided from its email", () => {
  let approve: string;
  let deny: string;
  let approvalId: string;

  it("a mail scanner that fetches both links decides nothing", async () => {
    approvalId = (await waitingApproval("Tidal output in Orkney rose 4% in November.")).id;
    const text = await deliverAndRead();
    approve = linkIn(text, "Approve");
    deny = linkIn(text, "Deny");
    for (const url of [approve, deny, approve]) {
      const response = await fetch(url, { headers: { "user-agent": "SafeLinks scanner" } });
      expect(response.status).toBe(200);
      expect(await response.text()).toContain("Nothing is decided until you press the button.");
    }
    expect((await approvalRow(approvalId)).status).toBe("pending");
  });

  it("shows who asks for what in plain words, and one button that approves, with no session", async () => {
    const text = await open(approve);
    expect(text).toContain(`${lead.name} wants to`);
    expect(text).toContain("Worth keeping for the weekly brief.");
    expect(text).toContain("Tidal output in Orkney rose 4% in November.");
    expect(text).toMatch(/Content/);
    expectPlainWords(text);
    await shoot(page, "act-approve");
    await page.getByRole("button", { name: "Approve" }).click();
    await page.getByText(/Approved by you from email at/).waitFor();
    expect(await approvalRow(approvalId)).toMatchObject({ status: "approved", decidedVia: "email" });
    await shoot(page, "act-approved");
    expect(await context.cookies()).toEqual([]);
  });

  it("a second click, and the Deny link after, say how it was decided and change nothing", async () => {
    const decided = await approvalRow(approvalId);
    for (const url of [approve, deny]) {
      const text = await open(url);
      expect(text).toMatch(/Approved by you from email at .+\. This link changes nothing now\./);
      expect(await page.getByRole("button", { name: /Approve|Deny/ }).count()).toBe(0);
    }
    expect(await approvalRow(approvalId)).toEqual(decided);
  });
});

describe("links that cannot decide", () => {
  it("a tampered link and an expired one say so, and decide nothing", async () => {
    const approval = await waitingApproval("Brittany's tidal array is delayed to 2028.");
    const approve = linkIn(await deliverAndRead(), "Approve");
    const tampered = approve.replace(/(.)$/, (last) => (last === "A" ? "B" : "A"));
    const text = await open(tampered);
    expect(text).toContain("This link does not work");
    expect(text).toContain("Nothing was decided.");
    await shoot(page, "act-invalid");
    const key = await actionLinkKey(database.db);
    const expired = signActionLink(key, {
      action: "approve",
      channel: "email",
      itemId: approval.id,
      expiresAt: new Date(Date.now() - 60_000),
    });
    expect(await open(`${app.url}/act?t=${expired}`)).toContain("This link has expired");
    await shoot(page, "act-expired");
    expect((await approvalRow(approval.id)).status).toBe("pending");
  });

  it("a link for an item decided in the app says so and changes nothing", async () => {
    const approval = await waitingApproval("The Pentland Firth cable is repaired.");
    const deny = linkIn(await deliverAndRead(), "Deny");
    await decideApproval(database.db, engine.jobs, approval.id, { decision: "approve" });
    const decided = await approvalRow(approval.id);
    const text = await open(deny);
    expect(text).toMatch(/Approved by you in the app at .+\. This link changes nothing now\./);
    await shoot(page, "act-decided-in-app");
    expect(await approvalRow(approval.id)).toEqual(decided);
  });
});

describe("a question answered from its email", () => {
  it("shows the question and takes the answer once", async () => {
    const question = await askPerson(database.db, engine.jobs, lead, {
      question: "Which region should we cover first: **Brittany** or Orkney?",
      taskId: null,
    });
    const answer = linkIn(await deliverAndRead(), "Answer");
    const text = await open(answer);
    expect(text).toContain(`${lead.name} asks you`);
    expect(text).toContain("Which region should we cover first");
    expectPlainWords(text);
    await shoot(page, "act-answer");
    await page.getByLabel(/Your answer/).fill("Orkney first, then Brittany.");
    await page.getByRole("button", { name: "Send answer" }).click();
    await page.getByText(/Answered by you from email at/).waitFor();
    const [row] = await database.db.select().from(questions).where(eq(questions.id, question!.id));
    expect(row).toMatchObject({ status: "answered", answer: "Orkney first, then Brittany.", answeredVia: "email" });
    await shoot(page, "act-answered");
    expect(await open(answer)).toContain("Orkney first, then Brittany.");
    expect(await context.cookies()).toEqual([]);
  });
});

/** Shaped like a token (a malformed one is not even counted), signed with no key. */
const forged = (index: number) =>
  `${Buffer.from(`1:approve:email:00000000-0000-4000-8000-${String(index).padStart(12, "0")}:2000000000`).toString("base64url")}.${"A".repeat(43)}`;

describe("a burst against the link's click", () => {
  it("checks at most 5 of 200 tampered clicks whose bodies arrive together; the rest answer 429", async () => {
    const { port } = new URL(app.url);
    const body = "{}";
    const sockets = await Promise.all(
      Array.from(
        { length: 200 },
        (_, index) =>
          new Promise<{ socket: net.Socket; status: Promise<number> }>((resolve, reject) => {
            const socket = net.connect(Number(port), "127.0.0.1", () => {
              // The headers now; the body only once every connection is in.
              socket.write(
                `POST /api/act?t=${forged(index)} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
                  `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
              );
              let answer = "";
              const status = new Promise<number>((settled) => {
                socket.on("data", (chunk) => (answer += chunk.toString()));
                socket.on("close", () => settled(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)));
                socket.on("error", () => settled(0));
              });
              resolve({ socket, status });
            });
            socket.on("error", reject);
          }),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const { socket } of sockets) socket.write(body);
    const statuses = await Promise.all(sockets.map(({ status }) => status));
    const checked = statuses.filter((status) => status !== 429);
    console.log(
      `[action-links] 200 held-back clicks from one address: ${checked.length} checked (${[...new Set(checked)].join(", ")}), ${statuses.length - checked.length} × 429`,
    );
    expect(checked.length).toBeLessThanOrEqual(5);
    expect(checked.every((status) => status === 404)).toBe(true);
  }, 60_000);
});
