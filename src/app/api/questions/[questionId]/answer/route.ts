import { answerQuestionFromPerson } from "@/lib/domain/questions";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { answerBody } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ questionId: string }> };

export const POST = route(async (request: Request, { params }: Params) => {
  const questionId = parseId((await params).questionId, "question");
  const body = await parseJsonBody(request, answerBody);
  const { db, jobs } = await webEngine();
  return Response.json({ question: await answerQuestionFromPerson(db, jobs, questionId, body.answer) });
});
