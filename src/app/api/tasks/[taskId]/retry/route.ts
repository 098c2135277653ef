import { retryTask } from "@/lib/domain/tasks";
import { writeUnderTask } from "@/lib/db/queries/teams";
import { parseId, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ taskId: string }> };

/** POST /api/tasks/:taskId/retry → 201 { task }: a new pending task like the failed or cancelled one (409 otherwise). */
export const POST = route(async (_request: Request, { params }: Params) => {
  const taskId = parseId((await params).taskId, "task");
  const { db, jobs } = await webEngine();
  const task = await writeUnderTask(db, taskId, (tx, held) => retryTask(tx, jobs, held));
  return Response.json({ task }, { status: 201 });
});
