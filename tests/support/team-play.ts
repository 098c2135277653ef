import { parseLogInput } from "@/lib/core/formats";
import { lastUserText, type FakeChatRequest, type FakeReply } from "./fake-openai";

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
export const toolNames = (request: FakeChatRequest) => (request.tools ?? []).map((tool) => tool.function.name);
export const systemText = (request: FakeChatRequest) =>
  String(request.messages.find((m) => m.role === "system")?.content ?? "");
export const lastToolCallName = (request: FakeChatRequest) =>
  request.messages.findLast((m) => m.role === "assistant" && m.tool_calls?.length)?.tool_calls?.at(-1)?.function.name;

/** A scripted "model" that plays each role of the flow, deciding from the request alone. */
export function teamPlay(request: FakeChatRequest): FakeReply {
  if (request.response_format) return { text: '{"items":[]}' };
  const tools = toolNames(request);
  if (tools.length === 0 || request.tool_choice === "none") return { text: "Summary of the work so far." };
  const last = request.messages.at(-1)!;
  const text = lastUserText(request);
  if (tools.includes("reportToLead")) {
    if (last.role === "tool") {
      const previous = lastToolCallName(request);
      if (previous === "tavilySearch") {
        return {
          toolCalls: [
            {
              name: "addKnowledgeItem",
              arguments: { type: "fact", content: "Solar prices fell 12% this year.", confidence: 0.8 },
            },
          ],
        };
      }
      if (previous === "addKnowledgeItem") {
        return {
          toolCalls: [{ name: "reportToLead", arguments: { result: "Findings: solar prices fell 12% this year." } }],
        };
      }
      return { text: "Reported." };
    }
    return { toolCalls: [{ name: "tavilySearch", arguments: { query: "solar panel prices 2026" } }] };
  }
  if (last.role === "tool") return { text: "Done for now." };
  if (parseLogInput(text)?.kind === "report") {
    return {
      toolCalls: [
        {
          name: "createInboxItem",
          arguments: {
            title: "Solar prices fell",
            summary: "Prices fell 12%.",
            content: "## Solar\nPrices fell 12% this year.",
          },
        },
      ],
    };
  }
  if (/Decide whether to brief/.test(text)) return { text: "No briefing needed." };
  const subordinate = systemText(request)
    .split("\n")
    .find((line) => line.startsWith("- ") && UUID.test(line));
  if (subordinate && /^Task/.test(text)) {
    return {
      toolCalls: [
        {
          name: "delegateToAgent",
          arguments: { agentId: UUID.exec(subordinate)![0], title: "Solar prices", description: text },
        },
      ],
    };
  }
  return { text: "Nothing to do." };
}
