import { type ModelMessage, Output, generateText, stepCountIs, streamText, tool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  OFFLINE_EMBEDDING_DIMENSIONS,
  OFFLINE_EXPLANATION,
  OfflineModel,
  isOfflineModel,
  offlineEmbedding,
} from "./offline-model";
import { EMPTY_ANSWER_NOTE, resumeTaskMessage } from "@/lib/core/prompts";

const SCOUT_ID = "3f2b8c1e-4a5d-4e6f-9a7b-1c2d3e4f5a6b";
const LEAD_ID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
const TASK_ID = "0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f";
const QUESTION_ID = "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b";
const ROWAN_ID = "7d8e9f0a-1b2c-4d3e-8f4a-5b6c7d8e9f0a";
const SUBTASK_IDS = ["1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"];

/** Tools shaped like the product's, whose execute only records the call. */
function recordingTools() {
  const calls: { name: string; input: Record<string, unknown> }[] = [];
  const recorded = <T extends z.ZodRawShape>(name: string, shape: T, output: unknown) =>
    tool({
      description: name,
      inputSchema: z.object(shape),
      execute: async (input: Record<string, unknown>) => {
        calls.push({ name, input });
        return output;
      },
    });
  const tools = {
    tavilySearch: recorded(
      "tavilySearch",
      { query: z.string() },
      {
        results: [{ title: "NVDA beats estimates", url: "https://example.com/nvda", content: "Revenue rose 94%." }],
      },
    ),
    readWebPage: recorded(
      "readWebPage",
      { url: z.string() },
      {
        url: "https://example.com/nvda",
        title: "NVDA beats estimates",
        content: "# NVDA beats estimates\n\nRevenue rose 94% on data-centre demand.\nGuidance was raised.",
      },
    ),
    addKnowledgeItem: recorded(
      "addKnowledgeItem",
      { type: z.enum(["fact", "technique", "pattern", "lesson"]), content: z.string(), confidence: z.number() },
      "Knowledge item saved.",
    ),
    searchKnowledge: recorded("searchKnowledge", { query: z.string() }, "No knowledge items match."),
    reportToLead: recorded("reportToLead", { result: z.string() }, "Report sent to the lead."),
    delegateToAgent: recorded(
      "delegateToAgent",
      { agentId: z.string(), title: z.string(), description: z.string() },
      "Task created.",
    ),
    createInboxItem: recorded(
      "createInboxItem",
      { title: z.string(), summary: z.string(), content: z.string() },
      "Briefing delivered.",
    ),
    getTeamStatus: recorded("getTeamStatus", {}, "Everyone is idle."),
    createTask: recorded("createTask", { title: z.string(), description: z.string() }, "Task created."),
    askPerson: recorded("askPerson", { question: z.string() }, { asked: true }),
  };
  return { tools, calls };
}

describe("OfflineModel", () => {
  const model = new OfflineModel();

  it("works a subordinate's task: search, record, report, then says so", async () => {
    const { tools, calls } = recordingTools();
    const { tavilySearch, addKnowledgeItem, searchKnowledge, reportToLead } = tools;
    const result = await generateText({
      model,
      instructions: `You are Scout, a subordinate.\nYour lead: Lead (id: ${LEAD_ID})`,
      messages: [{ role: "user", content: "Task: Research NVDA earnings" }],
      tools: { tavilySearch, addKnowledgeItem, searchKnowledge, reportToLead },
      stopWhen: stepCountIs(6),
    });

    expect(calls.map((call) => call.name)).toEqual(["tavilySearch", "addKnowledgeItem", "reportToLead"]);
    expect(calls[0]?.input).toEqual({ query: "Research NVDA earnings" });
    expect(calls[1]?.input).toEqual({
      type: "fact",
      content: "NVDA beats estimates: Revenue rose 94%.",
      confidence: 0.6,
    });
    expect(calls[2]?.input).toEqual({ result: "Findings: NVDA beats estimates: Revenue rose 94%." });
    expect(result.text).toBe("Reported to the lead.");
    expect(new Set(result.steps.flatMap((step) => step.toolCalls.map((call) => call.toolCallId))).size).toBe(3);
  });

  it("reads the first result's page when it can, records it with its source, then reports", async () => {
    const { tools, calls } = recordingTools();
    const { tavilySearch, readWebPage, addKnowledgeItem, reportToLead } = tools;
    const result = await generateText({
      model,
      instructions: `You are Scout, a subordinate.\nYour lead: Lead (id: ${LEAD_ID})`,
      messages: [{ role: "user", content: "Task: Research NVDA earnings" }],
      tools: { tavilySearch, readWebPage, addKnowledgeItem, reportToLead },
      stopWhen: stepCountIs(6),
    });

    const finding =
      "NVDA beats estimates: Revenue rose 94% on data-centre demand. Guidance was raised. (source: https://example.com/nvda)";
    expect(calls).toEqual([
      { name: "tavilySearch", input: { query: "Research NVDA earnings" } },
      { name: "readWebPage", input: { url: "https://example.com/nvda" } },
      { name: "addKnowledgeItem", input: { type: "fact", content: finding, confidence: 0.7 } },
      { name: "reportToLead", input: { result: `Findings: ${finding}` } },
    ]);
    expect(result.text).toBe("Reported to the lead.");
  });

  it("records the search result with its source when the page cannot be read", async () => {
    const { tools, calls } = recordingTools();
    const readWebPage = tool({
      inputSchema: z.object({ url: z.string() }),
      execute: async (input) => {
        calls.push({ name: "readWebPage", input });
        return "Reading https://example.com/nvda failed: 403 Forbidden. Try another source, or work from what you have.";
      },
    });
    await generateText({
      model,
      instructions: "You are Scout, a subordinate.",
      messages: [{ role: "user", content: "Task: Research NVDA earnings" }],
      tools: {
        tavilySearch: tools.tavilySearch,
        readWebPage,
        addKnowledgeItem: tools.addKnowledgeItem,
        reportToLead: tools.reportToLead,
      },
      stopWhen: stepCountIs(6),
    });
    expect(calls.map((call) => call.name)).toEqual(["tavilySearch", "readWebPage", "addKnowledgeItem", "reportToLead"]);
    expect(calls[2]?.input).toEqual({
      type: "fact",
      content: "NVDA beats estimates: Revenue rose 94%. (source: https://example.com/nvda)",
      confidence: 0.6,
    });
  });

  it("reads no page when the search found none or is not configured", async () => {
    const noPage = recordingTools();
    const tavilySearch = tool({
      inputSchema: z.object({ query: z.string() }),
      execute: async () => ({
        results: [{ title: "A script", url: "javascript:alert(1)", content: "Nothing to read." }],
      }),
    });
    await generateText({
      model,
      instructions: "You are Scout, a subordinate.",
      messages: [{ role: "user", content: "Task: Research NVDA earnings" }],
      tools: {
        tavilySearch,
        readWebPage: noPage.tools.readWebPage,
        addKnowledgeItem: noPage.tools.addKnowledgeItem,
        reportToLead: noPage.tools.reportToLead,
      },
      stopWhen: stepCountIs(6),
    });
    expect(noPage.calls.map((call) => call.name)).toEqual(["addKnowledgeItem", "reportToLead"]);

    const offline = recordingTools();
    const searchOff = tool({
      inputSchema: z.object({ query: z.string() }),
      execute: async () => "Web search is not configured (TAVILY_API_KEY is not set).",
    });
    await generateText({
      model,
      instructions: "You are Scout, a subordinate.",
      messages: [{ role: "user", content: "Task: Research NVDA earnings" }],
      tools: {
        tavilySearch: searchOff,
        readWebPage: offline.tools.readWebPage,
        addKnowledgeItem: offline.tools.addKnowledgeItem,
        reportToLead: offline.tools.reportToLead,
      },
      stopWhen: stepCountIs(6),
    });
    expect(offline.calls.map((call) => call.name)).toEqual(["addKnowledgeItem", "reportToLead"]);
    expect(offline.calls[0]?.input).toMatchObject({ type: "lesson" });
  });

  it("has a lead delegate to its subordinate, then brief the person when the report arrives", async () => {
    const { tools, calls } = recordingTools();
    const { delegateToAgent, createInboxItem, getTeamStatus, tavilySearch } = tools;
    const instructions = `You are the lead of team Markets (your id: ${LEAD_ID}).\nSubordinates:\n- Scout (id: ${SCOUT_ID})`;
    const leadTools = { delegateToAgent, createInboxItem, getTeamStatus, tavilySearch };

    const delegated = await generateText({
      model,
      instructions,
      messages: [{ role: "user", content: "Task: Research NVDA" }],
      tools: leadTools,
      stopWhen: stepCountIs(6),
    });
    expect(calls).toEqual([
      { name: "delegateToAgent", input: { agentId: SCOUT_ID, title: "Research NVDA", description: "Research NVDA" } },
    ]);
    expect(delegated.text).toBe("Delegated the task to Scout; I will brief you when the report arrives.");

    const briefed = await generateText({
      model,
      instructions,
      messages: [
        { role: "user", content: "Task: Research NVDA" },
        ...delegated.responseMessages,
        { role: "user", content: "Subordinate Scout reports: NVDA beat estimates. Guidance was raised." },
      ],
      tools: leadTools,
      stopWhen: stepCountIs(6),
    });
    expect(calls[1]).toEqual({
      name: "createInboxItem",
      input: {
        // Named for the task, and honest about being a demo.
        title: "Demo briefing: Research NVDA",
        summary: "NVDA beat estimates.",
        content: expect.stringMatching(
          /^> A demo briefing by Cadre's built-in offline model: .+\n\n## What the team found\n\nNVDA beat estimates\. Guidance was raised\.$/,
        ),
      },
    });
    expect(briefed.text).toBe("Briefing sent.");
  });

  it("without web search, reports and briefs as an honest demo, named for the task", async () => {
    const scout = recordingTools();
    const searchOff = tool({
      inputSchema: z.object({ query: z.string() }),
      execute: async () => "Web search is not configured (TAVILY_API_KEY is not set), so no search was made.",
    });
    await generateText({
      model,
      instructions: "You are Scout, a subordinate.",
      messages: [
        { role: "user", content: `Task from your lead (task id: ${TASK_ID}): Research solid-state batteries` },
      ],
      tools: {
        tavilySearch: searchOff,
        addKnowledgeItem: scout.tools.addKnowledgeItem,
        reportToLead: scout.tools.reportToLead,
      },
      stopWhen: stepCountIs(6),
    });
    const report = String(scout.calls.find((call) => call.name === "reportToLead")?.input.result);
    expect(report).toBe(
      'No findings: web search is not configured, so nothing was looked up for "Research solid-state batteries": set TAVILY_API_KEY for sourced findings.',
    );

    const lead = recordingTools();
    await generateText({
      model,
      instructions: `You are the lead of team Cells (your id: ${LEAD_ID}).\nSubordinates:\n- Scout (id: ${SCOUT_ID})`,
      messages: [
        { role: "user", content: `Task from the person (task id: ${TASK_ID}): Research solid-state batteries` },
        { role: "assistant", content: "Delegated the task to Scout; I will brief you when the report arrives." },
        { role: "user", content: `Subordinate Scout reports (task id: ${TASK_ID}): ${report}` },
      ],
      tools: { createInboxItem: lead.tools.createInboxItem, delegateToAgent: lead.tools.delegateToAgent },
      stopWhen: stepCountIs(3),
    });
    const briefing = lead.calls.find((call) => call.name === "createInboxItem")?.input;
    expect(briefing).toEqual({
      title: "Demo briefing: Research solid-state batteries",
      summary: "A demo by the built-in offline model: web search is not configured, so nothing was looked up.",
      content: [
        "> A demo briefing by Cadre's built-in offline model: it repeats what the team recorded and does not think about it. Connect a model (OPENAI_API_KEY, or OPENAI_BASE_URL and LLM_MODEL) for real briefings.",
        "## What the team found",
        'Nothing: web search is not configured (TAVILY_API_KEY), so no sources were searched for "Research solid-state batteries".',
      ].join("\n\n"),
    });
  });

  it("has a lead with no subordinates do the work itself and brief the person", async () => {
    const { tools, calls } = recordingTools();
    const { delegateToAgent, createInboxItem, tavilySearch, addKnowledgeItem } = tools;
    const result = await generateText({
      model,
      instructions: [
        'You are Lead, the lead of the team "Markets".',
        "## Your subordinates",
        "(none yet: do the work yourself with your tools)",
        "## Your open tasks",
        `- [in_progress] Research NVDA (task id: ${TASK_ID})`,
      ].join("\n"),
      messages: [
        {
          role: "user",
          content: `Task from the person (task id: ${TASK_ID}): Research NVDA\n\nEarnings and guidance.`,
        },
      ],
      tools: { delegateToAgent, createInboxItem, tavilySearch, addKnowledgeItem },
      stopWhen: stepCountIs(6),
    });
    expect(calls.map((call) => call.name)).toEqual(["tavilySearch", "addKnowledgeItem", "createInboxItem"]);
    expect(calls[2]?.input).toMatchObject({
      title: "Demo briefing: Research NVDA",
      summary: "NVDA beats estimates: Revenue rose 94%.",
    });
    expect(result.text).toBe("Briefing sent.");
  });

  it("goes on from where it was when asked again for an empty answer, or to send refused arguments again", async () => {
    const searched = [
      { role: "user" as const, content: "Task: Research NVDA earnings" },
      {
        role: "assistant" as const,
        content: [{ type: "tool-call" as const, toolCallId: "c1", toolName: "tavilySearch", input: { query: "NVDA" } }],
      },
    ];
    const result = (value: string) => ({
      role: "tool" as const,
      content: [
        {
          type: "tool-result" as const,
          toolCallId: "c1",
          toolName: "tavilySearch",
          output: {
            type: "json" as const,
            value: { results: [{ title: "NVDA", url: "https://example.com/nvda", content: "Revenue rose 94%." }] },
          },
        },
      ].map((part) => (value ? { ...part, output: { type: "text" as const, value } } : part)),
    });
    const refused =
      'Error: the arguments for tavilySearch are not a valid JSON object ({"query": "NV). Send a JSON object.';
    const next = async (messages: ModelMessage[]) => {
      const { tools, calls } = recordingTools();
      const { tavilySearch, addKnowledgeItem, reportToLead } = tools;
      await generateText({
        model,
        instructions: `You are Scout, a subordinate.\nYour lead: Lead (id: ${LEAD_ID})`,
        messages,
        tools: { tavilySearch, addKnowledgeItem, reportToLead },
        stopWhen: stepCountIs(1),
      });
      return calls[0];
    };
    // Asked again after an empty answer: the note is not a question to search for.
    expect(
      await next([
        ...searched,
        result(""),
        { role: "assistant", content: "" },
        { role: "user", content: EMPTY_ANSWER_NOTE },
      ]),
    ).toMatchObject({ name: "addKnowledgeItem", input: { content: "NVDA: Revenue rose 94%." } });
    // Arguments refused: the same call again, up to three times in a row.
    const refusedTimes = (times: number) =>
      Array.from({ length: times }, () => [...searched.slice(1), result(refused)]).flat();
    expect(await next([searched[0]!, ...refusedTimes(1)])).toMatchObject({
      name: "tavilySearch",
      input: { query: "Research NVDA earnings" },
    });
    expect(await next([searched[0]!, ...refusedTimes(3)])).toMatchObject({ name: "tavilySearch" });
    expect(await next([searched[0]!, ...refusedTimes(4)])).not.toMatchObject({ name: "tavilySearch" });
  });

  it("searches for a resumed task's title, not for the engine's resume note", async () => {
    const { tools, calls } = recordingTools();
    const { createInboxItem, tavilySearch, addKnowledgeItem } = tools;
    await generateText({
      model,
      instructions:
        'You are Lead, the lead of the team "Markets".\n## Your subordinates\n(none yet: do the work yourself with your tools)',
      messages: [
        {
          role: "user",
          content: resumeTaskMessage({ id: TASK_ID, title: "Research NVDA" } as Parameters<
            typeof resumeTaskMessage
          >[0]),
        },
      ],
      tools: { createInboxItem, tavilySearch, addKnowledgeItem },
      stopWhen: stepCountIs(1),
    });
    expect(calls[0]).toMatchObject({ name: "tavilySearch", input: { query: "Research NVDA" } });
  });

  it("delegates a resumed task by its title, with no id in what the subordinate is given", async () => {
    const { tools, calls } = recordingTools();
    const { delegateToAgent, createInboxItem } = tools;
    await generateText({
      model,
      instructions: `You are the lead of team Markets (your id: ${LEAD_ID}).\nSubordinates:\n- Scout (id: ${SCOUT_ID})`,
      messages: [
        {
          role: "user",
          content: resumeTaskMessage({ id: TASK_ID, title: "Research NVDA" } as Parameters<
            typeof resumeTaskMessage
          >[0]),
        },
      ],
      tools: { delegateToAgent, createInboxItem },
      stopWhen: stepCountIs(1),
    });
    expect(calls[0]).toMatchObject({
      name: "delegateToAgent",
      input: { agentId: SCOUT_ID, title: "Research NVDA", description: "Research NVDA" },
    });
  });

  it("has a lead with no subordinates read the page it found before briefing", async () => {
    const { tools, calls } = recordingTools();
    const { delegateToAgent, createInboxItem, tavilySearch, readWebPage, addKnowledgeItem } = tools;
    const result = await generateText({
      model,
      instructions:
        'You are Lead, the lead of the team "Markets".\n## Your subordinates\n(none yet: do the work yourself with your tools)',
      messages: [{ role: "user", content: `Task from the person (task id: ${TASK_ID}): Research NVDA` }],
      tools: { delegateToAgent, createInboxItem, tavilySearch, readWebPage, addKnowledgeItem },
      stopWhen: stepCountIs(6),
    });
    expect(calls.map((call) => call.name)).toEqual([
      "tavilySearch",
      "readWebPage",
      "addKnowledgeItem",
      "createInboxItem",
    ]);
    expect(calls[3]?.input).toMatchObject({
      title: "Demo briefing: Research NVDA",
      summary: "NVDA beats estimates: Revenue rose 94% on data-centre demand.",
    });
    expect(String(calls[3]?.input.content)).toContain("(source: https://example.com/nvda)");
    expect(result.text).toBe("Briefing sent.");
  });

  it("delegates to the subordinate listed in work instructions, not to a task id", async () => {
    const { tools, calls } = recordingTools();
    const { delegateToAgent, createInboxItem, tavilySearch } = tools;
    await generateText({
      model,
      instructions: [
        'You are Lead, the lead of the team "Markets".',
        "## Your subordinates",
        `- Scout (id: ${SCOUT_ID}): You are Scout, the team's researcher.`,
        "## Your open tasks",
        `- [pending] Research NVDA (task id: ${TASK_ID})`,
      ].join("\n"),
      messages: [{ role: "user", content: `Task from the person (task id: ${TASK_ID}): Research NVDA` }],
      tools: { delegateToAgent, createInboxItem, tavilySearch },
      stopWhen: stepCountIs(3),
    });
    expect(calls[0]).toMatchObject({ name: "delegateToAgent", input: { agentId: SCOUT_ID, title: "Research NVDA" } });
  });

  it("answers a subordinate's question so it can carry on", async () => {
    const calls: unknown[] = [];
    const answerSubordinate = tool({
      inputSchema: z.object({ questionId: z.string(), answer: z.string() }),
      execute: async (input) => {
        calls.push(input);
        return "Answer delivered.";
      },
    });
    const result = await generateText({
      model,
      instructions: `You are the lead (your id: ${LEAD_ID}).`,
      messages: [
        {
          role: "user",
          content: `Subordinate Scout asks (question id: ${QUESTION_ID}, agent id: ${SCOUT_ID}): which quarter?`,
        },
      ],
      tools: { answerSubordinate },
      stopWhen: stepCountIs(3),
    });
    expect(calls).toEqual([
      { questionId: QUESTION_ID, answer: "Offline model: use your best judgement and report what you find." },
    ]);
    expect(result.text).toBe("Answered the subordinate.");
  });

  it("explains itself in chat when asked nothing it can act on, streaming in several deltas", async () => {
    const { tools } = recordingTools();
    const { createTask, getTeamStatus, searchKnowledge } = tools;
    const result = streamText({
      model,
      instructions: "You are the lead of team Markets.",
      messages: [{ role: "user", content: "hello" }],
      tools: { createTask, getTeamStatus, searchKnowledge },
    });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);

    expect(deltas.join("")).toBe(OFFLINE_EXPLANATION);
    expect(deltas.length).toBeGreaterThan(3);
  });

  it("turns a request for work in chat into a task", async () => {
    const { tools, calls } = recordingTools();
    const { createTask, getTeamStatus, searchKnowledge } = tools;
    const result = streamText({
      model,
      instructions: "You are the lead of team Energy.",
      messages: [{ role: "user", content: "Please research solar panel prices" }],
      tools: { createTask, getTeamStatus, searchKnowledge },
      stopWhen: stepCountIs(3),
    });

    expect(await result.text).toBe("I've created a task for the team: Please research solar panel prices.");
    expect(calls).toEqual([
      {
        name: "createTask",
        input: { title: "Please research solar panel prices", description: "Please research solar panel prices" },
      },
    ]);
  });

  describe("a task that lists its questions", () => {
    const task = [
      `Task from the person (task id: ${TASK_ID}): Research the port`,
      "",
      "Research the port for me.",
      "",
      "- How many containers did the port handle in 2025?",
      "- Who will operate the new north terminal?",
    ].join("\n");
    const leadInstructions = `You are Lead, the lead of the team "Port".\n## Your subordinates\n- Scout (id: ${SCOUT_ID}): researcher\n- Rowan (id: ${ROWAN_ID}): researcher`;

    it("has a lead deal the questions out, one delegation per subordinate", async () => {
      const { tools, calls } = recordingTools();
      const result = await generateText({
        model,
        instructions: leadInstructions,
        messages: [{ role: "user", content: task }],
        tools: { delegateToAgent: tools.delegateToAgent, createInboxItem: tools.createInboxItem },
        stopWhen: stepCountIs(5),
      });
      expect(calls.map((call) => [call.name, call.input.agentId])).toEqual([
        ["delegateToAgent", SCOUT_ID],
        ["delegateToAgent", ROWAN_ID],
      ]);
      expect(calls[0]?.input.description).toContain("- How many containers did the port handle in 2025?");
      expect(calls[0]?.input.description).not.toContain("north terminal");
      expect(calls[1]?.input.description).toContain("- Who will operate the new north terminal?");
      expect(result.text).toBe("Handed the questions to Scout and Rowan; I will brief you when their reports are in.");
    });

    it("has a subordinate search each question, read the first results, record what answers it with its source, and report it all", async () => {
      const calls: { name: string; input: Record<string, unknown> }[] = [];
      const pages: Record<string, string> = {
        "https://a.example/stats":
          "# Port statistics\n\nThe port handled 4.37 million containers in 2025. The weather was fine.",
        "https://b.example/forum": "# Forum\n\nSomeone says the port handled 5.1 million containers in 2025!",
        "https://c.example/other": "# Other\n\nThe port handled containers in 2025 too.",
      };
      const tools = {
        tavilySearch: tool({
          inputSchema: z.object({ query: z.string() }),
          execute: async (input) => {
            calls.push({ name: "tavilySearch", input });
            return { results: Object.keys(pages).map((url) => ({ title: url, url, content: "…" })) };
          },
        }),
        readWebPage: tool({
          inputSchema: z.object({ url: z.string() }),
          execute: async (input) => {
            calls.push({ name: "readWebPage", input });
            return { url: input.url, title: input.url, content: pages[input.url] ?? "" };
          },
        }),
        addKnowledgeItem: tool({
          inputSchema: z.object({
            type: z.string(),
            content: z.string(),
            confidence: z.number(),
            sourceUrl: z.string(),
          }),
          execute: async (input) => {
            calls.push({ name: "addKnowledgeItem", input });
            return { saved: true };
          },
        }),
        reportToLead: tool({
          inputSchema: z.object({ result: z.string() }),
          execute: async (input) => {
            calls.push({ name: "reportToLead", input });
            return "Report sent to your lead.";
          },
        }),
      };
      const result = await generateText({
        model,
        instructions: "You are Scout, a member of the team.",
        messages: [
          {
            role: "user",
            content: `Task from your lead (task id: ${SUBTASK_IDS[0]}): How many containers?\n\nQuestions:\n- How many containers did the port handle in 2025?`,
          },
        ],
        tools,
        stopWhen: stepCountIs(10),
      });
      expect(calls.map((call) => call.name)).toEqual([
        "tavilySearch",
        "readWebPage",
        "addKnowledgeItem",
        "readWebPage",
        "addKnowledgeItem",
        "reportToLead",
      ]);
      expect(calls[0]?.input).toEqual({ query: "How many containers did the port handle in 2025?" });
      // The first two results, each page's answering sentence kept with its address; the third is not read.
      expect(calls[2]?.input).toMatchObject({
        content: "The port handled 4.37 million containers in 2025. (source: https://a.example/stats)",
        sourceUrl: "https://a.example/stats",
      });
      expect(calls[4]?.input).toMatchObject({ sourceUrl: "https://b.example/forum" });
      expect(calls[5]?.input.result).toBe(
        [
          "Findings:",
          "- The port handled 4.37 million containers in 2025. (source: https://a.example/stats)",
          "- Someone says the port handled 5.1 million containers in 2025! (source: https://b.example/forum)",
        ].join("\n"),
      );
      expect(result.text).toBe("Reported to the lead.");
    });

    it("has the lead brief once, when the last of the reports is in", async () => {
      const { tools, calls } = recordingTools();
      const delegations = SUBTASK_IDS.map((taskId, i) => ({
        call: { type: "tool-call" as const, toolCallId: `d${i}`, toolName: "delegateToAgent", input: {} },
        result: {
          type: "tool-result" as const,
          toolCallId: `d${i}`,
          toolName: "delegateToAgent",
          output: { type: "json" as const, value: { delegated: true, taskId } },
        },
      }));
      const report = (name: string, taskId: string, finding: string) => ({
        role: "user" as const,
        content: `Subordinate ${name} reports (task id: ${taskId}): Findings:\n- ${finding}`,
      });
      const log = [
        { role: "user" as const, content: task },
        { role: "assistant" as const, content: [delegations[0]!.call] },
        { role: "tool" as const, content: [delegations[0]!.result] },
        { role: "assistant" as const, content: [delegations[1]!.call] },
        { role: "tool" as const, content: [delegations[1]!.result] },
        { role: "assistant" as const, content: "Handed the questions out." },
        report("Rowan", SUBTASK_IDS[1]!, "Meridia will operate it. (source: https://a.example/quay)"),
      ];
      const { createInboxItem } = tools;
      const first = await generateText({
        model,
        instructions: leadInstructions,
        messages: log,
        tools: { createInboxItem },
      });
      expect(calls).toEqual([]);
      expect(first.text).toBe("Noted Rowan's report; waiting for one more before I brief.");

      await generateText({
        model,
        instructions: leadInstructions,
        messages: [
          ...log,
          { role: "assistant", content: first.text },
          report("Scout", SUBTASK_IDS[0]!, "4.37 million containers. (source: https://a.example/stats)"),
        ],
        tools: { createInboxItem },
        stopWhen: stepCountIs(2),
      });
      expect(calls.map((call) => call.name)).toEqual(["createInboxItem"]);
      const content = String(calls[0]?.input.content);
      // In the order the questions were handed out, whoever reported first.
      expect(content.indexOf("### From Scout")).toBeLessThan(content.indexOf("### From Rowan"));
      expect(content).toContain("- 4.37 million containers. (source: https://a.example/stats)");
      expect(content).toContain("- Meridia will operate it. (source: https://a.example/quay)");

      // When the last of them failed instead, the report that came is briefed all the same.
      calls.length = 0;
      await generateText({
        model,
        instructions: leadInstructions,
        messages: [
          ...log,
          { role: "assistant", content: first.text },
          {
            role: "user",
            content: `Subordinate Scout failed (task id: ${SUBTASK_IDS[0]}): The model answered with nothing.`,
          },
        ],
        tools: { createInboxItem },
        stopWhen: stepCountIs(2),
      });
      expect(calls.map((call) => call.name)).toEqual(["createInboxItem"]);
      expect(String(calls[0]?.input.content)).toContain("- Meridia will operate it. (source: https://a.example/quay)");
    });
  });

  it("answers structured output with the emptiest valid object", async () => {
    const { output } = await generateText({
      model,
      prompt: "Extract knowledge items from this session.",
      output: Output.object({
        schema: z.object({ items: z.array(z.object({ type: z.string(), content: z.string() })) }),
      }),
    });
    expect(output).toEqual({ items: [] });
  });

  it("writes lead instructions from the mission", async () => {
    const { output } = await generateText({
      model,
      prompt: "Write the lead's instructions.\nMission: Track the solar industry",
      output: Output.object({ schema: z.object({ instructions: z.string() }) }),
    });
    expect(output.instructions).toContain("Track the solar industry");
    expect(output.instructions.split("\n").length).toBeGreaterThan(2);
  });

  it("summarizes a conversation when asked to compact it", async () => {
    const { text } = await generateText({
      model,
      instructions: "Summarize the conversation below.",
      messages: [
        { role: "user", content: "What is NVDA price?" },
        { role: "assistant", content: "About $142." },
      ],
    });
    expect(text).toBe("Summary (offline model): What is NVDA price?\n- About $142.");
  });

  it("reports usage estimated from the characters in and out", async () => {
    const { usage } = await generateText({ model, prompt: "hello there, offline model" });
    expect(usage.inputTokens).toBe(Math.ceil("hello there, offline model".length / 4));
    expect(usage.outputTokens).toBe(Math.ceil(OFFLINE_EXPLANATION.length / 4));
    expect(usage.inputTokenDetails.cacheReadTokens).toBe(0);
  });

  it("stops when aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      generateText({ model, prompt: "hello", abortSignal: controller.signal, maxRetries: 0 }),
    ).rejects.toThrow();
    await expect(
      model.doGenerate({
        prompt: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
        abortSignal: controller.signal,
      }),
    ).rejects.toMatchObject({ name: "AbortError" });
  });

  it("is recognised by isOfflineModel", () => {
    expect(isOfflineModel(model)).toBe(true);
    expect(isOfflineModel({ provider: "openai.chat", modelId: "gpt" })).toBe(false);
    expect(isOfflineModel(undefined)).toBe(false);
  });

  it("asks the person when a task says 'ask me', and goes on from the answer", async () => {
    const { tools, calls } = recordingTools();
    const { askPerson, tavilySearch, createInboxItem } = tools;
    const asked = await generateText({
      model,
      instructions: "You are Lead, the lead of the team.",
      messages: [
        { role: "user", content: `Task from the person (task id: ${TASK_ID}): Compare the offers\n\nask me first` },
      ],
      tools: { askPerson, tavilySearch, createInboxItem },
      stopWhen: stepCountIs(3),
    });
    expect(calls.map((call) => call.name)).toEqual(["askPerson"]);
    expect(asked.text).toBe("Asked the person; waiting for their answer.");
    await generateText({
      model,
      instructions: "You are Lead, the lead of the team.",
      messages: [{ role: "user", content: `The person answers (question id: ${QUESTION_ID}): the cheaper one` }],
      tools: { askPerson, tavilySearch, createInboxItem },
      stopWhen: stepCountIs(1),
    });
    expect(calls.at(-1)).toEqual({ name: "tavilySearch", input: { query: "the cheaper one" } });
  });

  it("does not try a call again that the person denied", async () => {
    const { tools, calls } = recordingTools();
    const result = await generateText({
      model,
      instructions: "You are Scout, a subordinate.",
      messages: [
        { role: "user", content: "Task: Research NVDA earnings" },
        {
          role: "assistant",
          content: [{ type: "tool-call", toolCallId: "c1", toolName: "tavilySearch", input: { query: "NVDA" } }],
        },
        {
          role: "tool",
          content: [
            {
              type: "tool-result",
              toolCallId: "c1",
              toolName: "tavilySearch",
              output: { type: "text", value: "Denied by the person: not now" },
            },
          ],
        },
      ],
      tools: { tavilySearch: tools.tavilySearch, reportToLead: tools.reportToLead },
      stopWhen: stepCountIs(3),
    });
    expect(calls).toEqual([]);
    expect(result.text).toContain("Denied by the person: not now");
  });
});

describe("the offline embedding", () => {
  const similarity = (a: string, b: string) =>
    offlineEmbedding(a).reduce((sum, value, i) => sum + value * offlineEmbedding(b)[i]!, 0);

  it("is deterministic, of a fixed length and normalized", () => {
    const vector = offlineEmbedding("Pilot battery cells reached 500 Wh/kg.");
    expect(vector).toHaveLength(OFFLINE_EMBEDDING_DIMENSIONS);
    expect(offlineEmbedding("Pilot battery cells reached 500 Wh/kg.")).toEqual(vector);
    expect(Math.hypot(...vector)).toBeCloseTo(1, 6);
    // Nothing to go by (no letters or digits, or only stop words): no direction at all.
    expect(offlineEmbedding("the of and").every((value) => value === 0)).toBe(true);
  });

  it("puts texts that share stems and word pieces close, and unrelated ones apart", () => {
    const fact = "Pilot battery cells reached 500 Wh/kg, a record density.";
    const related = similarity("energy density of prototype batteries", fact);
    const unrelated = similarity("energy density of prototype batteries", "Solar module prices fell 12% in 2025.");
    expect(related).toBeGreaterThan(0.35);
    expect(unrelated).toBeLessThan(0.15);
    expect(similarity("battery", "batteries")).toBeGreaterThan(0.9);
    expect(similarity("analysis of contracts", "analyzing the contract")).toBeGreaterThan(0.5);
  });
});
