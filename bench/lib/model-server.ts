import { lastUserText, startFakeOpenAI, type FakeChatRequest, type FakeOpenAI, type FakeReply } from "../../tests/support/fake-openai";
import { now } from "./stats";

/** A work-session call as the fake server sees it, with the moment it arrived. */
export type ModelCall = { agent: string; request: FakeChatRequest; arrivedAt: number };
export type AgentScript = (call: ModelCall) => FakeReply | Promise<FakeReply>;

const systemText = (request: FakeChatRequest) => String(request.messages.find((message) => message.role === "system")?.content ?? "");
const toolNames = (request: FakeChatRequest) => (request.tools ?? []).map((tool) => tool.function.name);

/** Tool results since the latest task entered the log: how far the current task has got. */
export function roundsSinceTask(request: FakeChatRequest): number {
  const start = request.messages.findLastIndex((message) => message.role === "user" && typeof message.content === "string" && message.content.startsWith("Task from"));
  return request.messages.slice(start + 1).filter((message) => message.role === "tool").length;
}

export function promptIncludes(request: FakeChatRequest, text: string): boolean {
  return request.messages.some((message) =>
    typeof message.content === "string" ? message.content.includes(text) : (message.content ?? []).some((part) => part.text?.includes(text)),
  );
}

/**
 * The zero-latency model of the worker benchmarks: one local OpenAI-compatible server
 * (the real provider path through @ai-sdk/openai) that answers each agent from the
 * script registered under its name. Knowledge extraction gets no items, compaction a
 * short summary, the briefing decision "No briefing needed.", and an agent without a
 * script a plain answer.
 */
export class ModelServer {
  private readonly scripts = new Map<string, AgentScript>();

  private constructor(readonly fake: FakeOpenAI) {}

  static async start(): Promise<ModelServer> {
    let server: ModelServer | undefined;
    const fake = await startFakeOpenAI((request) => server!.answer(request));
    server = new ModelServer(fake);
    return server;
  }

  get url(): string {
    return this.fake.url;
  }

  script(agentName: string, script: AgentScript): void {
    this.scripts.set(agentName, script);
  }

  private answer(request: FakeChatRequest): FakeReply | Promise<FakeReply> {
    const arrivedAt = now();
    if (request.response_format) return { text: '{"items":[]}' };
    const tools = toolNames(request);
    if (tools.length === 0) return { text: "Summary: the work so far." };
    if (tools.length === 1 && tools[0] === "createInboxItem") return { text: "No briefing needed." };
    const agent = /^You are (.+?), (the lead|a member)/.exec(systemText(request))?.[1] ?? "";
    const script = this.scripts.get(agent);
    if (!script) return { text: lastUserText(request) ? "Nothing to do." : "Done." };
    return script({ agent, request, arrivedAt });
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
