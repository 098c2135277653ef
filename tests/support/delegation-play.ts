// The scripted model of the tests where a lead delegates to two subordinates while workers die
// (takeover.test.ts, chaos.test.ts), over tests/support/fake-openai.ts.
import { parseLogInput } from "@/lib/core/formats";
import { INTERRUPTED_RESULT } from "@/lib/engine/model-messages";
import {
  type FakeChatMessage,
  type FakeChatRequest,
  type FakeReply,
  lastUserText,
  separatedMessages,
} from "./fake-openai";

/** Which team's agent a request is from: "Lead" for its lead, else the subordinate's name. */
export function speakerOf(request: FakeChatRequest): { team: string; agent: string } | null {
  const system = text(request.messages.find((m) => m.role === "system"));
  const match = /You are (.+?), (the lead|a member) of the team "(.+?)"/.exec(system);
  if (!match) return null;
  return { team: match[3]!, agent: match[2] === "the lead" ? "Lead" : match[1]! };
}

const text = (message: FakeChatMessage | undefined): string =>
  !message?.content
    ? ""
    : typeof message.content === "string"
      ? message.content
      : message.content.map((part) => part.text ?? "").join("");

/**
 * Calls of `name` in the context that did their part, or were refused for good (`done`): a call
 * the dead worker cut short ("interrupted") or that failed (the database away) is made again, as
 * a model that reads its results would.
 */
function doneCalls(
  request: FakeChatRequest,
  name: string,
  done: (result: string) => boolean = () => true,
): { args: Record<string, string>; result: string }[] {
  const results = new Map(request.messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, text(m)]));
  return request.messages.flatMap((message) =>
    (message.tool_calls ?? [])
      .filter((call) => call.function.name === name)
      .map((call) => ({
        args: JSON.parse(call.function.arguments) as Record<string, string>,
        result: results.get(call.id),
      }))
      .filter(
        (call): call is { args: Record<string, string>; result: string } =>
          call.result !== undefined && call.result !== INTERRUPTED_RESULT && done(call.result),
      ),
  );
}

/**
 * A lead that delegates to Scout, then to Analyst, waits for both reports (saying so: "Waiting
 * for reports from …"), briefs and ends; a subordinate that searches its knowledge and reports.
 * Progress is read from the context, so a call a dead worker cut short ("interrupted") is made
 * again. `agent`: "Lead" or the subordinate's name; `subIds`: the team's subordinates by name.
 */
export function delegationPlay(subIds: Record<string, string>, agent: string, request: FakeChatRequest): FakeReply {
  if (request.response_format) return { text: '{"items":[]}' };
  const tools = (request.tools ?? []).map((tool) => tool.function.name);
  if (tools.length === 0 || request.tool_choice === "none") return { text: "Summary of the work so far." };
  const last = request.messages.at(-1);
  // Inputs one by one: a request joins messages of one role in a row (alternatingPrompt).
  const lastUser = lastUserText(request);
  if (agent !== "Lead") {
    if (doneCalls(request, "reportToLead", (result) => /^Report (not )?sent/.test(result)).length > 0)
      return { text: "Reported." };
    if (doneCalls(request, "searchKnowledge").length === 0)
      return { toolCalls: [{ name: "searchKnowledge", arguments: { query: `${agent} background` } }] };
    return { toolCalls: [{ name: "reportToLead", arguments: { result: `${agent}'s findings: prices fell.` } }] };
  }
  if (/Decide whether to brief/.test(lastUser))
    return { text: last?.role === "tool" ? "Briefed." : "No briefing needed." };
  const delegated = new Set(
    doneCalls(request, "delegateToAgent", (result) => /"delegated":true|^Not delegated/.test(result)).map(
      (call) => call.args.agentId,
    ),
  );
  for (const name of ["Scout", "Analyst"]) {
    const id = subIds[name]!;
    if (!delegated.has(id))
      return {
        toolCalls: [
          {
            name: "delegateToAgent",
            arguments: { agentId: id, title: `${name}'s part`, description: "Look into it." },
          },
        ],
      };
  }
  const reported = new Set(
    separatedMessages(request.messages)
      .filter((m) => m.role === "user")
      .map((m) => parseLogInput(text(m)))
      .flatMap((input) => (input?.kind === "report" ? [input.agentName] : [])),
  );
  const missing = ["Scout", "Analyst"].filter((name) => !reported.has(name));
  if (missing.length > 0) return { text: `Waiting for reports from ${missing.join(" and ")}.` };
  if (doneCalls(request, "createInboxItem", (result) => result.includes('"sent":true')).length === 0)
    return {
      toolCalls: [
        {
          name: "createInboxItem",
          arguments: { title: "Prices fell", summary: "Both reported.", content: "## Findings\nPrices fell." },
        },
      ],
    };
  return { text: "Both reports are in: prices fell." };
}
