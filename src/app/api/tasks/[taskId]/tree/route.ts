import { listTaskTree } from "@/lib/db/queries/tasks";
import { notFound } from "@/lib/errors";
import { parseId, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ taskId: string }> };

/** GET /api/tasks/:taskId/tree → { tasks }: the task and everything delegated from it, parents first, with who did each and its result. */
export const GET = route(async (_request: Request, { params }: Params) => {
  const taskId = parseId((await params).taskId, "task");
  const { db } = await webEngine();
  const tasks = await listTaskTree(db, taskId);
  if (tasks.length === 0) throw notFound("task", taskId);
  return Response.json({ tasks });
});
