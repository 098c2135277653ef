import "server-only";
import { database } from "@/lib/db/client";
import { connectionBudget } from "@/lib/db/connection-budget";
import { databaseUrl, env, sessionDatabaseUrl } from "@/lib/env";
import { JobQueue } from "@/lib/jobs/job-queue";
import { engineDeps, type EngineDeps } from "@/lib/core/engine-config";
import { logError } from "@/lib/telemetry/log";

// One engine per web process, kept on globalThis so dev hot reloads reuse it.
const holder = globalThis as typeof globalThis & { cadreEngine?: Promise<EngineDeps> };

/** The web process's database, job queue and engine settings, started on first use. */
export function webEngine(): Promise<EngineDeps> {
  holder.cadreEngine ??= JobQueue.start(databaseUrl(), "web", {
    notificationRetryDelaySeconds: env().NOTIFICATION_RETRY_DELAY_SECONDS,
    poolSize: connectionBudget("web").jobs,
    listenUrl: sessionDatabaseUrl(),
  })
    .then((jobs) => engineDeps(database().db, jobs))
    .catch((error) => {
      holder.cadreEngine = undefined;
      throw new Error(`Could not start the job queue: ${error instanceof Error ? error.message : error}`, {
        cause: error,
      });
    });
  return holder.cadreEngine;
}

/** The web process delivers notifications beside the workers (see instrumentation.ts); a failure to start is logged, the server goes on. */
export async function deliverNotificationsFromWeb(): Promise<void> {
  try {
    const engine = await webEngine();
    const { workNotifications } = await import("@/lib/notifications/deliver");
    await workNotifications(engine.db, engine.jobs, engine.log);
  } catch (error) {
    logError("[notifications] the web process could not start delivering notifications; workers still do:", error);
  }
}
