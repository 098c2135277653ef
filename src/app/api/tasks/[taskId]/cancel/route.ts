import { cancelTask } from "@/lib/domain/tasks";
import { writeUnderTask } from "@/lib/db/queries/teams";
import { parseId, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ taskId: string }> };

export const POST = route(async (_request: Request, { params }: Params) => {
  const taskId = parseId((await params).taskId, "task");
  const { db, jobs } = await webEngine();
  const { task } = await writeUnderTask(db, taskId, (tx) => cancelTask(tx, jobs, taskId));
  return Response.json({ task });
});
