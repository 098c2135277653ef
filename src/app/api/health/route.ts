import { db } from "@/lib/db/client";
import { databaseAnswers } from "@/lib/db/health";
import { errorResponse, route } from "@/lib/http";

export const dynamic = "force-dynamic";

/** Open without a session (a probe for supervisors and load balancers); it says nothing but whether the database answers. */
export const GET = route(async (): Promise<Response> => {
  let result: Awaited<ReturnType<typeof databaseAnswers>>;
  try {
    result = await databaseAnswers(db());
  } catch (error) {
    result = { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
  if (result.ok) return Response.json({ status: "ok" });
  console.error("Health check: the database does not answer:", result.reason);
  return errorResponse(503, "unavailable:database", `The database does not answer (${result.reason}). Check DATABASE_URL and that Postgres is running.`);
}, { public: true });
