import type { EngineDeps } from "@/lib/core/engine-config";
import { stopLiveEvents } from "@/lib/http/events";
import { createTestDatabase, type TestDatabase } from "./database";

/**
 * A test database that route handlers of this process use: the web process's
 * cached engine (src/lib/server.ts) reads DATABASE_URL on first use.
 */
export async function createWebTestDatabase(): Promise<TestDatabase> {
  const database = await createTestDatabase();
  process.env.DATABASE_URL = database.url;
  return database;
}

/**
 * Stops what route handlers started in this process (job queue, live events, pool), so the
 * next test file's handlers start afresh; within a second, whether or not the database answers.
 */
export async function stopWebProcess(): Promise<void> {
  const holder = globalThis as { cadreEngine?: Promise<EngineDeps>; cadreDatabase?: { close: () => Promise<void> } };
  await (await holder.cadreEngine?.catch(() => undefined))?.jobs
    .stop({ graceful: false, timeoutMs: 1000 })
    .catch(() => {});
  delete holder.cadreEngine;
  await stopLiveEvents();
  await holder.cadreDatabase?.close();
  delete holder.cadreDatabase;
}

/** Stops what route handlers started in this process (stopWebProcess), then drops the database. */
export async function closeWebTestDatabase(database: TestDatabase | undefined): Promise<void> {
  await stopWebProcess();
  await database?.drop();
}

/** Settings that would reach a provider or a search service: unset, the offline model answers, deterministically and with no network. */
const NETWORK_SETTINGS = ["OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_MODEL", "TAVILY_API_KEY", "TAVILY_BASE_URL"];

/** A test file's web process on the offline model: a database its route handlers use, and the engine they run on. */
export async function openOfflineWeb(): Promise<{ database: TestDatabase; engine: EngineDeps }> {
  for (const name of NETWORK_SETTINGS) delete process.env[name];
  const database = await createWebTestDatabase();
  const { webEngine } = await import("@/lib/http/server");
  return { database, engine: await webEngine() };
}

/** Where route handlers called directly believe the request came from: the app's own origin. */
export const ORIGIN = "http://localhost:3000";

/** A route handler's context: its params, as Next 16 passes them (a promise). */
export function routeParams<T extends Record<string, string>>(values: T) {
  return { params: Promise.resolve(values) };
}

/** A request from the app's origin with a JSON body (none when `body` is undefined). */
export function jsonRequest(method: string, path: string, body?: unknown): Request {
  if (body === undefined) return new Request(ORIGIN + path, { method });
  return new Request(ORIGIN + path, {
    method,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}
