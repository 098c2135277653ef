// The live-events stream's subscribers (issue 10, item 2), counted in the hub: each request's
// subscriber is gone when the request ends, whatever the method and however it ends (HEAD, a
// client that goes away, a reader that cancels), and a reader that stops reading is dropped
// once it is MAX_UNREAD_BYTES behind. tests/e2e/live-events-leak.test.ts measures the same on
// a real server's memory.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countLiveSubscribers, MAX_UNREAD_BYTES } from "@/lib/http/events";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

type Handler = (request: Request) => Promise<Response>;

let database: TestDatabase;
let events: Record<string, Handler | undefined>;

beforeAll(async () => {
  delete process.env.APP_PASSWORD;
  database = await createWebTestDatabase();
  events = (await import("@/app/api/events/route")) as unknown as Record<string, Handler | undefined>;
});

afterAll(async () => {
  await closeWebTestDatabase(database);
});

/** What Next runs for a method: HEAD falls back to GET when the route exports none (auto-implemented HEAD). */
function handlerFor(method: "GET" | "HEAD"): Handler {
  const handler = events[method] ?? (method === "HEAD" ? events.GET : undefined);
  if (!handler) throw new Error(`no ${method} handler`);
  return handler;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

/** `count` notifications on the channel, each about `padding` bytes (distinct payloads: Postgres folds identical ones). */
async function notify(count: number, padding = 2_000): Promise<void> {
  await database.sql`
    select pg_notify('cadre_events', json_build_object('table', 'teams', 'op', 'update', 'id', gen_random_uuid(), 'pad', repeat('x', ${padding}))::text)
      from generate_series(1, ${count})`;
}

async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, text: string): Promise<string> {
  const decoder = new TextDecoder();
  let received = "";
  while (!received.includes(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    received += decoder.decode(value, { stream: true });
  }
  return received;
}

describe("live-event subscribers", () => {
  it("a GET stream delivers events, and its subscriber is gone when the client goes away", async () => {
    const before = countLiveSubscribers();
    const controller = new AbortController();
    const response = await handlerFor("GET")(
      new Request("http://localhost:3000/api/events", { signal: controller.signal }),
    );
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = response.body!.getReader();
    expect(await readUntil(reader, "event: ready")).toContain("event: ready");
    expect(countLiveSubscribers()).toBe(before + 1);
    await notify(1, 10);
    expect(await readUntil(reader, '"table":"teams"')).toContain('"op":"update"');
    controller.abort();
    expect(countLiveSubscribers()).toBe(before);
  });

  it("a stream ends when its process lost the database and listens again, so the page reconnects and refetches what it missed", async () => {
    const response = await handlerFor("GET")(new Request("http://localhost:3000/api/events"));
    const reader = response.body!.getReader();
    await readUntil(reader, "event: ready");
    // The process's LISTEN connection is cut (a failover, a restart, a proxy's idle cut).
    const [{ count }] = (await database.sql`
      select count(pg_terminate_backend(pid))::int as count from pg_stat_activity
       where datname = current_database() and query ilike 'listen%cadre_events%'`) as unknown as [{ count: number }];
    expect(count).toBe(1);
    // Whatever was announced before it listened again reached nobody: the stream says so by ending.
    const ended = (async () => {
      for (;;) if ((await reader.read()).done) return true;
    })();
    await expect(
      Promise.race([ended, new Promise((resolve) => setTimeout(() => resolve(false), 10_000))]),
    ).resolves.toBe(true);

    // The next stream, the browser's reconnect, is live again.
    const again = await handlerFor("GET")(new Request("http://localhost:3000/api/events"));
    const next = again.body!.getReader();
    await readUntil(next, "event: ready");
    await notify(1, 10);
    expect(await readUntil(next, '"table":"teams"')).toContain('"op":"update"');
    await next.cancel();
  });

  it("HEAD answers the stream's headers and leaves no subscriber behind (200 requests, then events)", async () => {
    const before = countLiveSubscribers();
    for (let index = 0; index < 200; index++) {
      const response = await handlerFor("HEAD")(new Request("http://localhost:3000/api/events", { method: "HEAD" }));
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
      // Next sends a HEAD response's headers and drops its body: neither read nor cancelled, and no abort follows.
    }
    await settle();
    await notify(50, 10);
    await settle();
    expect(countLiveSubscribers()).toBe(before);
  });

  it("100 GETs aborted at once, before or after their stream started, leave no subscriber", async () => {
    const before = countLiveSubscribers();
    const controllers = Array.from({ length: 100 }, () => new AbortController());
    const responses = await Promise.all(
      controllers.map(async (controller, index) => {
        if (index % 2 === 0) controller.abort(); // gone before the handler ran
        return handlerFor("GET")(new Request("http://localhost:3000/api/events", { signal: controller.signal }));
      }),
    );
    for (const controller of controllers) controller.abort();
    await settle();
    expect(countLiveSubscribers()).toBe(before);
    for (const response of responses) await response.body?.cancel().catch(() => {});
  });

  it("a reader that stops reading is dropped once it is MAX_UNREAD_BYTES behind; one that reads keeps up", async () => {
    const before = countLiveSubscribers();
    const stuck = await handlerFor("GET")(new Request("http://localhost:3000/api/events"));
    const reading = await handlerFor("GET")(new Request("http://localhost:3000/api/events"));
    const reader = reading.body!.getReader();
    await readUntil(reader, "event: ready");
    const decoder = new TextDecoder();
    let read = 0;
    const readAll = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        read += (decoder.decode(value).match(/"table":"teams"/g) ?? []).length;
      }
    })();
    await settle();
    expect(countLiveSubscribers()).toBe(before + 2);

    // Twice the limit in events: the stuck reader falls behind by more than it may.
    const events = Math.ceil((2 * MAX_UNREAD_BYTES) / 2_000);
    await notify(events);
    await expect.poll(() => read, { timeout: 10_000 }).toBe(events);
    expect(countLiveSubscribers()).toBe(before + 1);

    // What it was sent before it was dropped is bounded by the limit; then its stream ends.
    const text = await stuck.text();
    expect(text.length).toBeLessThanOrEqual(MAX_UNREAD_BYTES + 4_000);
    await reader.cancel();
    await readAll;
    expect(countLiveSubscribers()).toBe(before);
  });
});
