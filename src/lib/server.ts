import { database } from "@/lib/db/client";
import { databaseUrl } from "@/lib/env";
import { JobQueue } from "@/lib/jobs/job-queue";
import { engineDeps, type EngineDeps } from "@/lib/agents/engine-config";

// One engine per web process, kept on globalThis so dev hot reloads reuse it.
const holder = globalThis as typeof globalThis & { cadreEngine?: Promise<EngineDeps> };

/** The web process's database, job queue and engine settings, started on first use. */
export function webEngine(): Promise<EngineDeps> {
  holder.cadreEngine ??= JobQueue.start(databaseUrl(), "web")
    .then((jobs) => engineDeps(database().db, jobs))
    .catch((error) => {
      holder.cadreEngine = undefined;
      throw new Error(`Could not start the job queue: ${error instanceof Error ? error.message : error}`, { cause: error });
    });
  return holder.cadreEngine;
}
