import { checkHealth } from "@/lib/domain/health";
import { errorResponse, route } from "@/lib/http/http";
import { logError } from "@/lib/telemetry/log";

export const dynamic = "force-dynamic";

/**
 * Open without a session (a probe for supervisors and load balancers). 200 while the
 * database answers: `{ status: "ok" | "degraded", database, workers, backlog }`, where
 * `degraded` means work waits and no worker is alive (src/lib/telemetry/health.ts); 503 when it does not.
 */
export const GET = route(
  async (): Promise<Response> => {
    const result = await checkHealth();
    if (result.ok) return Response.json(result.health, { headers: { "cache-control": "no-store" } });
    logError("Health check: the database does not answer:", result.reason);
    return errorResponse(
      503,
      "unavailable:database",
      `The database does not answer (${result.reason}). Check DATABASE_URL and that Postgres is running.`,
    );
  },
  { public: true },
);
