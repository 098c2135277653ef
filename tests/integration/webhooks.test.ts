// Webhooks (issue 5, item 8): POST /api/hooks/:teamId signed with the team's secret lands as a
// `[webhook:NAME] …` user message in the lead's background conversation and wakes the lead.
// Bad signature 401, stale timestamp 401, replay 409, unknown team 404, oversize 413.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asc, eq } from "drizzle-orm";
import { getAgent, getBackgroundConversation, listMessages } from "@/lib/db/queries";
import { agentInputs } from "@/lib/db/schema";
import { AGENT_WAKE_QUEUE } from "@/lib/jobs/queues";
import { signedWebhookHeaders, WEBHOOK_BODY_LIMIT_BYTES, webhookSignature } from "@/lib/http/webhook-signature";
import { WEBHOOK_MESSAGE_MAX_CHARS } from "@/lib/domain/webhooks";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

async function loadRoutes() {
  return {
    hook: await import("@/app/api/hooks/[teamId]/route"),
    secret: await import("@/app/api/teams/[teamId]/webhook-secret/route"),
    team: await import("@/app/api/teams/[teamId]/route"),
    teams: await import("@/app/api/teams/route"),
  };
}

let database: TestDatabase;
let api: Awaited<ReturnType<typeof loadRoutes>>;

beforeAll(async () => {
  delete process.env.APP_PASSWORD;
  database = await createWebTestDatabase();
  api = await loadRoutes();
  const { webEngine } = await import("@/lib/http/server");
  await webEngine();
});

afterAll(async () => {
  await closeWebTestDatabase(database);
  console.log(
    `[webhooks] accepted 202: ${figures.accepted}, bad signature 401: ${figures.badSignature}, stale or future timestamp 401: ${figures.stale}, ` +
      `replay 409: ${figures.replay}, unknown team 404: ${figures.unknownTeam}, no secret 401: ${figures.noSecret}, oversize 413: ${figures.oversize}, ` +
      `lead woken on every accepted delivery: ${figures.wokenEvery ? "yes" : "NO"}`,
  );
});

const figures = {
  accepted: 0,
  badSignature: 0,
  stale: 0,
  replay: 0,
  unknownTeam: 0,
  noSecret: 0,
  oversize: 0,
  wokenEvery: true,
};
const ORIGIN = "http://localhost:3000";
const params = (teamId: string) => ({ params: Promise.resolve({ teamId }) });
const now = () => Math.floor(Date.now() / 1000);

function hookRequest(
  teamId: string,
  body: string | Uint8Array | ReadableStream<Uint8Array>,
  headers: Record<string, string> = {},
): Request {
  return new Request(`${ORIGIN}/api/hooks/${teamId}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
    ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
  } as RequestInit);
}

async function deliver(teamId: string, body: string, headers: Record<string, string>) {
  return api.hook.POST(hookRequest(teamId, body, headers), params(teamId));
}

async function errorOf(response: Response, status: number): Promise<string> {
  const text = await response.text();
  expect({ status: response.status, text }).toMatchObject({ status });
  const body = JSON.parse(text) as { error: { code: string; message: string } };
  expect(body.error.message.length).toBeGreaterThan(0);
  return body.error.code;
}

/** A team whose lead has a webhook secret (created through the API) and a cleared wake flag. */
async function teamWithSecret() {
  const fixture = await createTeamFixture(database.db);
  const response = await api.secret.POST(
    new Request(`${ORIGIN}/api/teams/${fixture.team.id}/webhook-secret`, { method: "POST" }),
    params(fixture.team.id),
  );
  expect(response.status).toBe(201);
  const { secret } = (await response.json()) as { secret: string };
  await database.sql`update agents set wake_requested_at = null where id = ${fixture.lead.id}`;
  return { ...fixture, secret };
}

/** What reached the lead: its work log, then the input queued for its next step. */
async function backgroundContents(agentId: string): Promise<string[]> {
  const conversation = await getBackgroundConversation(database.db, agentId);
  const logged = (await listMessages(database.db, conversation.id, { limit: 500 })).map(
    (message) => `${message.role}: ${message.content}`,
  );
  const queued = await database.db
    .select()
    .from(agentInputs)
    .where(eq(agentInputs.agentId, agentId))
    .orderBy(asc(agentInputs.createdAt));
  return [...logged, ...queued.map((input) => `user: ${input.content}`)];
}

async function expectAccepted(response: Response, leadId: string) {
  const text = await response.text();
  expect({ status: response.status, text }).toMatchObject({ status: 202 });
  expect(JSON.parse(text)).toEqual({ accepted: true });
  figures.accepted += 1;
  const woken = (await getAgent(database.db, leadId))?.wakeRequestedAt != null;
  figures.wokenEvery &&= woken;
  expect(woken).toBe(true);
}

describe("the webhook secret", () => {
  it("is created and shown once (201 {secret}), reported as configured, and never part of a team's JSON", async () => {
    const { team } = await createTeamFixture(database.db);
    const url = `${ORIGIN}/api/teams/${team.id}/webhook-secret`;
    expect(await (await api.secret.GET(new Request(url), params(team.id))).json()).toEqual({
      configured: false,
      createdAt: null,
    });

    const created = await api.secret.POST(new Request(url, { method: "POST" }), params(team.id));
    expect(created.status).toBe(201);
    expect(created.headers.get("cache-control")).toBe("no-store");
    const body = (await created.json()) as { secret: string; createdAt: string };
    expect(Object.keys(body).sort()).toEqual(["createdAt", "secret"]);
    expect(body.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    const status = (await (await api.secret.GET(new Request(url), params(team.id))).json()) as Record<string, unknown>;
    expect(status).toEqual({ configured: true, createdAt: body.createdAt });
    expect(JSON.stringify(status)).not.toContain(body.secret);
    for (const response of [
      await api.team.GET(new Request(`${ORIGIN}/api/teams/${team.id}`), params(team.id)),
      await api.teams.GET(),
    ]) {
      expect(await response.text()).not.toContain(body.secret);
    }
  });

  it("is rotated by another POST: the old secret stops working at once; DELETE stops webhooks altogether", async () => {
    const { team, lead, secret: first } = await teamWithSecret();
    const rotated = await api.secret.POST(
      new Request(`${ORIGIN}/api/teams/${team.id}/webhook-secret`, { method: "POST" }),
      params(team.id),
    );
    const { secret: second } = (await rotated.json()) as { secret: string };
    expect(second).not.toBe(first);

    const body = JSON.stringify({ event: "rotated" });
    expect(await errorOf(await deliver(team.id, body, signedWebhookHeaders(first, body)), 401)).toBe(
      "unauthorized:webhook_signature",
    );
    figures.badSignature += 1;
    await expectAccepted(await deliver(team.id, body, signedWebhookHeaders(second, body)), lead.id);

    const removed = await api.secret.DELETE(
      new Request(`${ORIGIN}/api/teams/${team.id}/webhook-secret`, { method: "DELETE" }),
      params(team.id),
    );
    expect(removed.status).toBe(204);
    const again = JSON.stringify({ event: "after delete" });
    expect(await errorOf(await deliver(team.id, again, signedWebhookHeaders(second, again)), 401)).toBe(
      "unauthorized:webhook_secret",
    );
    figures.noSecret += 1;
  });

  it("answers 404 for an unknown or malformed team id", async () => {
    for (const teamId of [randomUUID(), "not-a-team"]) {
      const response = await api.secret.POST(
        new Request(`${ORIGIN}/api/teams/${teamId}/webhook-secret`, { method: "POST" }),
        params(teamId),
      );
      expect(await errorOf(response, 404)).toBe("not_found:team");
    }
  });
});

describe("POST /api/hooks/:teamId", () => {
  it("accepts a signed JSON delivery: 202, `[webhook:NAME] <pretty JSON>` in the lead's background conversation, the lead woken", async () => {
    const { team, lead, secret } = await teamWithSecret();
    const payload = { name: "deploy", status: "failed", service: "api", details: { commit: "abc123" } };
    const body = JSON.stringify(payload);
    await expectAccepted(await deliver(team.id, body, signedWebhookHeaders(secret, body)), lead.id);

    expect(await backgroundContents(lead.id)).toEqual([`user: [webhook:deploy] ${JSON.stringify(payload, null, 2)}`]);
    const [job] =
      await database.sql`select data from pgboss.job where name = ${AGENT_WAKE_QUEUE} and data->>'agentId' = ${lead.id}`;
    expect(job).toBeDefined();
  });

  it("takes NAME from x-cadre-webhook-name before the body's name, keeps only [A-Za-z0-9_-], defaults to `hook`; text stays text", async () => {
    const { team, lead, secret } = await teamWithSecret();
    const cases: { body: string; headers?: Record<string, string>; expected: string }[] = [
      {
        body: JSON.stringify({ name: "from-body", n: 1 }),
        headers: { "x-cadre-webhook-name": "ci_build-7" },
        expected: "[webhook:ci_build-7] ",
      },
      { body: JSON.stringify({ name: "] [webhook:admin] <b>x</b>", n: 2 }), expected: "[webhook:webhookadminbxb] " },
      { body: "plain text alert: disk 91% full", expected: "[webhook:hook] plain text alert: disk 91% full" },
      { body: "", expected: "[webhook:hook] (empty body)" },
      { body: JSON.stringify([1, 2]), expected: "[webhook:hook] [\n  1,\n  2\n]" },
    ];
    for (const { body, headers, expected } of cases) {
      await expectAccepted(
        await deliver(team.id, body, { ...signedWebhookHeaders(secret, body), ...headers }),
        lead.id,
      );
      const last = (await backgroundContents(lead.id)).at(-1)!;
      expect(last.slice(0, `user: ${expected}`.length)).toBe(`user: ${expected}`);
    }
  });

  it("takes its raw body whatever its Content-Type (the signature covers the bytes; JSON routes alone insist on application/json)", async () => {
    const { team, lead, secret } = await teamWithSecret();
    const cases: { body: string; contentType?: string }[] = [
      { body: "build 7 failed", contentType: "text/plain" },
      { body: "status=failed&build=8", contentType: "application/x-www-form-urlencoded" },
      { body: JSON.stringify({ build: 9 }) },
    ];
    for (const { body, contentType } of cases) {
      const request = hookRequest(team.id, body, signedWebhookHeaders(secret, body));
      if (contentType) request.headers.set("content-type", contentType);
      else request.headers.delete("content-type");
      await expectAccepted(await api.hook.POST(request, params(team.id)), lead.id);
    }
    const contents = (await backgroundContents(lead.id)).slice(-3);
    expect(contents[0]).toBe("user: [webhook:hook] build 7 failed");
    expect(contents[1]).toBe("user: [webhook:hook] status=failed&build=8");
    expect(contents[2]).toContain('"build": 9');
  });

  it("truncates what it shows the lead to a readable size", async () => {
    const { team, lead, secret } = await teamWithSecret();
    const body = JSON.stringify({
      name: "bulk",
      rows: Array.from({ length: 1500 }, (_, i) => ({ i, v: "x".repeat(10) })),
    });
    expect(body.length).toBeLessThan(WEBHOOK_BODY_LIMIT_BYTES);
    await expectAccepted(await deliver(team.id, body, signedWebhookHeaders(secret, body)), lead.id);
    const last = (await backgroundContents(lead.id)).at(-1)!;
    expect(last).toMatch(/\n… \(truncated: \d+ more characters\)$/);
    expect(last.length).toBeLessThan(WEBHOOK_MESSAGE_MAX_CHARS + 200);
  });

  it("refuses a bad signature with 401 and records nothing", async () => {
    const { team, lead, secret } = await teamWithSecret();
    const body = JSON.stringify({ name: "deploy", status: "ok" });
    const good = signedWebhookHeaders(secret, body);
    const stamp = good["x-cadre-timestamp"]!;
    const attempts: { what: string; body: string; headers: Record<string, string> }[] = [
      { what: "signed with another secret", body, headers: signedWebhookHeaders("whsec_not-the-secret", body) },
      { what: "a tampered body", body: body.replace("ok", "failed"), headers: good },
      {
        what: "a different timestamp than signed",
        body,
        headers: { ...good, "x-cadre-timestamp": String(Number(stamp) - 1) },
      },
      { what: "no signature", body, headers: { "x-cadre-timestamp": stamp } },
      {
        what: "a signature without sha256=",
        body,
        headers: { ...good, "x-cadre-signature": webhookSignature(secret, stamp, body) },
      },
      { what: "a short signature", body, headers: { ...good, "x-cadre-signature": "sha256=abcd" } },
      { what: "a non-hex signature", body, headers: { ...good, "x-cadre-signature": `sha256=${"z".repeat(64)}` } },
      { what: "no timestamp", body, headers: { "x-cadre-signature": good["x-cadre-signature"]! } },
      { what: "a non-numeric timestamp", body, headers: { ...good, "x-cadre-timestamp": "yesterday" } },
      { what: "no headers at all", body, headers: {} },
    ];
    for (const attempt of attempts) {
      const code = await errorOf(await deliver(team.id, attempt.body, attempt.headers), 401);
      expect(code, attempt.what).toMatch(/^unauthorized:webhook_(signature|timestamp)$/);
      figures.badSignature += 1;
    }
    expect(await backgroundContents(lead.id)).toEqual([]);
    expect((await getAgent(database.db, lead.id))?.wakeRequestedAt).toBeNull();
  });

  it("refuses a timestamp more than 300 s old or ahead with 401, and accepts one within it", async () => {
    const { team, lead, secret } = await teamWithSecret();
    for (const offset of [-301, -3600, 301, 86_400]) {
      const body = JSON.stringify({ name: "clock", offset });
      const code = await errorOf(await deliver(team.id, body, signedWebhookHeaders(secret, body, now() + offset)), 401);
      expect(code).toBe("unauthorized:webhook_timestamp");
      figures.stale += 1;
    }
    expect(await backgroundContents(lead.id)).toEqual([]);
    for (const offset of [-290, 290]) {
      const body = JSON.stringify({ name: "clock", offset });
      await expectAccepted(await deliver(team.id, body, signedWebhookHeaders(secret, body, now() + offset)), lead.id);
    }
  });

  it("refuses the same delivery again with 409 (also when both arrive at once), without a second message", async () => {
    const { team, lead, secret } = await teamWithSecret();
    const body = JSON.stringify({ name: "once", id: 1 });
    const headers = signedWebhookHeaders(secret, body);
    await expectAccepted(await deliver(team.id, body, headers), lead.id);
    expect(await errorOf(await deliver(team.id, body, headers), 409)).toBe("conflict:webhook_replay");
    figures.replay += 1;
    expect(await backgroundContents(lead.id)).toHaveLength(1);

    const twin = JSON.stringify({ name: "twin", id: 2 });
    const twinHeaders = signedWebhookHeaders(secret, twin);
    const statuses = (
      await Promise.all([deliver(team.id, twin, twinHeaders), deliver(team.id, twin, twinHeaders)])
    ).map((response) => response.status);
    expect(statuses.sort()).toEqual([202, 409]);
    figures.accepted += 1;
    figures.replay += 1;
    expect(await backgroundContents(lead.id)).toHaveLength(2);
  });

  it("answers 404 for an unknown team and for a malformed team id", async () => {
    for (const teamId of [randomUUID(), "'; drop table teams; --"]) {
      const body = JSON.stringify({ name: "lost" });
      expect(await errorOf(await deliver(teamId, body, signedWebhookHeaders("whsec_x", body)), 404)).toBe(
        "not_found:team",
      );
      figures.unknownTeam += 1;
    }
  });

  it("answers 401 when the team has no secret", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const body = JSON.stringify({ name: "early" });
    expect(await errorOf(await deliver(team.id, body, signedWebhookHeaders("whsec_guess", body)), 401)).toBe(
      "unauthorized:webhook_secret",
    );
    figures.noSecret += 1;
    expect(await backgroundContents(lead.id)).toEqual([]);
  });

  it("refuses a body over 64 KiB with 413, whether Content-Length says so or not", async () => {
    const { team, lead, secret } = await teamWithSecret();
    const body = JSON.stringify({ name: "big", data: "x".repeat(WEBHOOK_BODY_LIMIT_BYTES) });
    const headers = signedWebhookHeaders(secret, body);
    const declared = await deliver(team.id, body, { ...headers, "content-length": String(Buffer.byteLength(body)) });
    expect(await errorOf(declared, 413)).toBe("too_large:body");
    const bytes = new TextEncoder().encode(body);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < bytes.length; offset += 8192)
          controller.enqueue(bytes.slice(offset, offset + 8192));
        controller.close();
      },
    });
    const chunked = await api.hook.POST(hookRequest(team.id, stream, headers), params(team.id));
    expect(await errorOf(chunked, 413)).toBe("too_large:body");
    figures.oversize += 2;
    expect(await backgroundContents(lead.id)).toEqual([]);
  });

  it("still delivers to a paused team: the message waits for the lead until the team resumes", async () => {
    const { team, lead, secret } = await teamWithSecret();
    await database.sql`update teams set status = 'paused' where id = ${team.id}`;
    const body = JSON.stringify({ name: "while-paused", n: 1 });
    await expectAccepted(await deliver(team.id, body, signedWebhookHeaders(secret, body)), lead.id);
    expect((await backgroundContents(lead.id))[0]).toMatch(/^user: \[webhook:while-paused\] /);
  });

  it("needs no Origin check (a webhook carries no cookie), and forgets deliveries only after the tolerance has passed twice", async () => {
    const { team, lead, secret } = await teamWithSecret();
    const body = JSON.stringify({ name: "from-a-browser-tool" });
    await expectAccepted(
      await deliver(team.id, body, { ...signedWebhookHeaders(secret, body), origin: "https://hooks.example" }),
      lead.id,
    );
    // An old delivery is pruned by the next one; a recent one stays (and keeps refusing its replay).
    await database.sql`insert into webhook_deliveries (team_id, signature, received_at) values (${team.id}, ${"a".repeat(64)}, now() - interval '1 hour')`;
    const next = JSON.stringify({ name: "next" });
    await expectAccepted(await deliver(team.id, next, signedWebhookHeaders(secret, next)), lead.id);
    const rows = await database.sql<
      { signature: string }[]
    >`select signature from webhook_deliveries where team_id = ${team.id}`;
    expect(rows.map((row) => row.signature)).not.toContain("a".repeat(64));
    expect(rows).toHaveLength(2);
  });
});
