import "server-only";
// The timeline as stories: what the team did per request. A story starts with a task nobody
// delegated (the person's, a scheduled check-in, a webhook); it gathers the tasks delegated
// under it, each agent's work in words with its duration and cost, what reached the person
// (questions, approvals, briefings, alerts) and the answer. Its steps are the timeline's own
// entries (lib/timeline.ts), opened on demand.
import type { Db } from "@/lib/db/client";
import { requireTeam } from "@/lib/db/queries/teams";
import {
  findStoryOfTask,
  listStoryInboxItems,
  listStoryRoots,
  listStoryStepRows,
  listStoryTasks,
  listTaskUsage,
  listToolUse,
  type StoryInboxRow,
  type StoryTaskRow,
} from "@/lib/db/queries/stories";
import { listTimelineAgents } from "@/lib/db/queries/timeline";
import type { AgentRole, InboxItemType, TaskSource, TaskStatus } from "@/lib/db/schema";
import { notFound } from "@/lib/errors";
import { isUuid } from "@/lib/util/ids";
import { inboxTitle, taskResultText, withoutIds } from "@/lib/views/plain-words";
import { viaWords } from "@/lib/views/decided-via";
import { describeToolUse } from "@/lib/views/tool-labels";
import { roundUsd } from "@/lib/usage/prices";
import { spendOf, loadPriceTable } from "@/lib/usage/spend";
import { decodeCursor, encodeCursor, linkEntries, type TimelineEntry, type TimelineKind } from "@/lib/views/timeline";

export const STORY_PAGE_SIZE = 10;

/** Where a story stands, in the person's words. */
export type StoryStatus = "queued" | "working" | "waiting-for-you" | "done" | "failed" | "cancelled";

type StoryAgent = { id: string; name: string; role: AgentRole };

/** One task's part of a story: who did it, what they did (in words), how long it took, what it cost, what came of it. */
export type StoryPart = {
  taskId: string;
  parentTaskId: string | null;
  /** 0 for the story's own task, 1 for what its agent delegated, and so on. */
  depth: number;
  title: string;
  status: TaskStatus;
  agent: StoryAgent;
  /** "searched the web 3 times, read 2 pages, saved 2 facts"; empty when it called no tool. */
  work: string;
  startedAt: string | null;
  completedAt: string | null;
  /** From its start to its end (or now, while it runs); null before it started. */
  durationMs: number | null;
  cost: StoryCost;
  /** Its report or answer (the task's result), or why it failed. */
  result: string | null;
};

type StoryCost = {
  tokens: number;
  cachedTokens: number;
  usd: number /** Some calls were made with a model that has no price. */;
  unpriced: boolean;
  /** Some calls' tokens are Cadre's estimate: cut off, or the model server sent no usage. */
  estimated: boolean;
};

export type StoryInboxItem = {
  id: string;
  type: InboxItemType;
  title: string;
  agentName: string;
  state: string | null;
  /** Where the person decided or answered it, in words ("from email", "in Slack", "in the app"); empty until then. */
  via: string;
  createdAt: string;
};

export type Story = {
  /** The story's own task. */
  id: string;
  /** Sorts like the stories (as text, descending). */
  position: string;
  title: string;
  request: string;
  source: TaskSource;
  /** Who or what started it: "You", "Scheduled check-in", "Webhook", or an agent's name. */
  startedBy: string;
  createdAt: string;
  endedAt: string | null;
  durationMs: number | null;
  status: StoryStatus;
  /** The story's own task first, then what was delegated under it, depth first in the order given. */
  parts: StoryPart[];
  /** What reached the person, oldest first. */
  inbox: StoryInboxItem[];
  cost: StoryCost;
  agents: StoryAgent[];
};

export type StoryPage = { stories: Story[]; nextCursor: string | null };

export type StoryFilter = { agentId?: string; kind?: TimelineKind; before?: string; limit?: number };

/** A page of the team's stories, newest first. Unknown team → 404. */
export async function getTeamStories(
  db: Db,
  teamId: string,
  filter: StoryFilter = {},
  now = new Date(),
): Promise<StoryPage> {
  await requireTeam(db, teamId);
  const limit = filter.limit ?? STORY_PAGE_SIZE;
  const roots = await listStoryRoots(db, {
    teamId,
    agentId: filter.agentId,
    kind: filter.kind,
    before: filter.before ? decodeCursor(filter.before, "these stories") : undefined,
    limit: limit + 1,
  });
  const page = roots.slice(0, limit);
  const last = page.at(-1);
  const nextCursor =
    roots.length > limit && last ? encodeCursor({ atMicros: BigInt(last.atMicros), id: last.id }) : null;
  return { stories: await buildStories(db, teamId, page, now), nextCursor };
}

/** One story by its task (any task of it: a story is found from any of its entries); null when the team has no such task. */
export async function getStory(db: Db, teamId: string, taskId: string, now = new Date()): Promise<Story | null> {
  await requireTeam(db, teamId);
  if (!isUuid(taskId)) return null;
  const rootId = await findStoryOfTask(db, teamId, taskId);
  if (!rootId) return null;
  const tasks = await listStoryTasks(db, teamId, [rootId]);
  const root = tasks.find((task) => task.id === rootId);
  return root ? ((await buildStories(db, teamId, [root], now, tasks))[0] ?? null) : null;
}

/** A story's steps, oldest first: the timeline's entries of its tasks. Unknown story → 404. */
export async function getStorySteps(db: Db, teamId: string, storyId: string): Promise<TimelineEntry[]> {
  await requireTeam(db, teamId);
  const rootId = isUuid(storyId) ? await findStoryOfTask(db, teamId, storyId) : null;
  if (!rootId) throw notFound("story", storyId);
  const [rows, agents] = await Promise.all([listStoryStepRows(db, teamId, rootId), listTimelineAgents(db, teamId)]);
  return linkEntries(db, teamId, rows, agents);
}

async function buildStories(
  db: Db,
  teamId: string,
  roots: readonly StoryTaskRow[],
  now: Date,
  known?: readonly StoryTaskRow[],
): Promise<Story[]> {
  if (roots.length === 0) return [];
  const tasks =
    known ??
    (await listStoryTasks(
      db,
      teamId,
      roots.map((root) => root.id),
    ));
  const taskIds = tasks.map((task) => task.id);
  const [toolUse, usage, inbox, prices] = await Promise.all([
    listToolUse(db, taskIds),
    listTaskUsage(db, taskIds),
    listStoryInboxItems(db, taskIds),
    loadPriceTable(db),
  ]);

  const callsOf = groupBy(toolUse, (row) => row.taskId);
  const usageOf = groupBy(usage, (row) => row.taskId);
  const inboxOf = groupBy(inbox, (row) => row.taskId);
  const tasksOf = groupBy(tasks, (task) => task.rootTaskId);
  const names = new Map(tasks.map((task) => [task.agentId, task.agentName]));

  return roots.map((root) => {
    const own = tasksOf.get(root.id) ?? [root];
    const parts = inTreeOrder(root, own).map(({ task, depth }): StoryPart => {
      const spend = spendOf(usageOf.get(task.id) ?? [], prices);
      const cached = (usageOf.get(task.id) ?? []).reduce((sum, row) => sum + row.cachedTokens, 0);
      return {
        taskId: task.id,
        parentTaskId: task.parentTaskId,
        depth,
        title: withoutIds(task.title),
        status: task.status,
        agent: { id: task.agentId, name: task.agentName, role: task.agentRole },
        work: describeToolUse(Object.fromEntries((callsOf.get(task.id) ?? []).map((row) => [row.toolName, row.calls]))),
        startedAt: task.startedAt,
        completedAt: task.completedAt,
        durationMs: task.startedAt
          ? Date.parse(task.completedAt ?? now.toISOString()) - Date.parse(task.startedAt)
          : null,
        cost: {
          tokens: spend.tokens,
          cachedTokens: cached,
          usd: spend.costUsd,
          unpriced: spend.unpricedModels.length > 0,
          estimated: spend.estimatedCalls > 0,
        },
        // In the person's words: a failure as what happened, never the engine's text.
        result: task.result ? taskResultText(task.status, task.result) : null,
      };
    });
    const items = own
      .flatMap((task) => inboxOf.get(task.id) ?? [])
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const endedAt = parts.every((part) => part.completedAt)
      ? (parts
          .map((part) => part.completedAt!)
          .sort()
          .at(-1) ?? null)
      : null;
    const agents = new Map<string, StoryAgent>();
    for (const part of parts) agents.set(part.agent.id, part.agent);
    return {
      id: root.id,
      position: `${root.atMicros.padStart(20, "0")}.${root.id}`,
      title: withoutIds(root.title),
      request: withoutIds(root.description),
      source: root.source,
      startedBy: startedBy(root),
      createdAt: root.createdAt,
      endedAt,
      durationMs: Date.parse(endedAt ?? now.toISOString()) - Date.parse(root.createdAt),
      status: storyStatus(root.status, items),
      parts,
      inbox: items.map((item) => ({
        id: item.id,
        type: item.type,
        title: inboxTitle(item.title),
        agentName: names.get(item.agentId) ?? "an agent",
        state: item.state,
        via: viaWords(item.via),
        createdAt: item.createdAt,
      })),
      cost: parts.reduce<StoryCost>(
        (sum, part) => ({
          tokens: sum.tokens + part.cost.tokens,
          cachedTokens: sum.cachedTokens + part.cost.cachedTokens,
          usd: roundUsd(sum.usd + part.cost.usd),
          unpriced: sum.unpriced || part.cost.unpriced,
          estimated: sum.estimated || part.cost.estimated,
        }),
        { tokens: 0, cachedTokens: 0, usd: 0, unpriced: false, estimated: false },
      ),
      agents: [...agents.values()],
    };
  });
}

function startedBy(root: StoryTaskRow): string {
  switch (root.source) {
    case "user":
      return "You";
    case "schedule":
      return "Scheduled check-in";
    case "webhook":
      return "Webhook";
    case "system":
      return "Cadre";
    case "lead":
      return root.agentName;
  }
}

function storyStatus(status: TaskStatus, inbox: readonly StoryInboxRow[]): StoryStatus {
  switch (status) {
    case "pending":
      return "queued";
    case "in_progress":
    case "waiting_input":
      return inbox.some(
        (item) =>
          (item.type === "question" || item.type === "approval") && (item.state === "open" || item.state === "pending"),
      )
        ? "waiting-for-you"
        : "working";
    case "completed":
      return "done";
    case "failed":
      return "failed";
    case "cancelled":
      return "cancelled";
  }
}

/** The story's tasks under its root, depth first, each level in the order they were given. */
function inTreeOrder(root: StoryTaskRow, tasks: readonly StoryTaskRow[]): { task: StoryTaskRow; depth: number }[] {
  const children = groupBy(tasks, (task) => task.parentTaskId ?? "");
  const ordered: { task: StoryTaskRow; depth: number }[] = [];
  const visit = (task: StoryTaskRow, depth: number) => {
    ordered.push({ task, depth });
    for (const child of children.get(task.id) ?? []) if (child.id !== task.id) visit(child, depth + 1);
  };
  visit(root, 0);
  // A task whose parent went (its agent was removed) still belongs to the story.
  const seen = new Set(ordered.map((entry) => entry.task.id));
  for (const task of tasks) if (!seen.has(task.id)) ordered.push({ task, depth: 1 });
  return ordered;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}
