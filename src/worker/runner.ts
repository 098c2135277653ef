import { PgBoss } from "pg-boss";
import { databaseUrl } from "@/lib/env";

export type RunningWorker = { boss: PgBoss; stop: () => Promise<void> };

/** Connects to pg-boss (its own schema) and waits for work. */
export async function startWorker(): Promise<RunningWorker> {
  const boss = new PgBoss({ connectionString: databaseUrl(), schema: "pgboss" });
  let stopping = false;
  // While stopping, a closing database (Ctrl-C reaches Postgres too) is expected, not news.
  boss.on("error", (error) => {
    if (!stopping) console.error("[worker] pg-boss:", error.message);
  });
  await boss.start();
  console.log("[worker] connected; waiting for work.");
  return {
    boss,
    stop: async () => {
      stopping = true;
      await boss.stop({ graceful: true, timeout: 30_000 });
    },
  };
}
