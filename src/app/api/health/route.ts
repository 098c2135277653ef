import { db } from "@/lib/db/client";
import { databaseAnswers } from "@/lib/db/health";
import { errorResponse } from "@/lib/http";

export const dynamic = "force-dynamic";

export async function GET(): Promise<Response> {
  let result: Awaited<ReturnType<typeof databaseAnswers>>;
  try {
    result = await databaseAnswers(db());
  } catch (error) {
    result = { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
  if (result.ok) return Response.json({ status: "ok" });
  console.error("Health check: the database does not answer:", result.reason);
  return errorResponse(503, "unavailable:database", `The database does not answer (${result.reason}). Check DATABASE_URL and that Postgres is running.`);
}
