"use client";

import Link from "next/link";
import { useEffect, useState } from "react";
import { activityState, formatElapsed, type AgentActivity } from "@/lib/views/activity";
import { plural } from "@/lib/util/plural";

/** One clock for every elapsed time on the page, so they tick together. */
const listeners = new Set<(now: number) => void>();
let clock: ReturnType<typeof setInterval> | null = null;
function subscribe(listener: (now: number) => void): () => void {
  listeners.add(listener);
  clock ??= setInterval(() => {
    const now = Date.now();
    for (const each of listeners) each(now);
  }, 1000);
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && clock) {
      clearInterval(clock);
      clock = null;
    }
  };
}

/**
 * The time since `since`, ticking every second. Not a live region: a screen reader reads it
 * when it reaches it, and is not interrupted every second.
 */
function Elapsed({ since }: { since: string }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => subscribe(setNow), []);
  return (
    <time dateTime={since} className="elapsed" suppressHydrationWarning>
      {formatElapsed(now - new Date(since).getTime())}
    </time>
  );
}

/**
 * What an agent is doing now: its state, the step under way (the tool it runs or the model
 * call) with how long, the session's steps and time, and the task it is on; a lead whose
 * subordinates work says so. Pages re-render on live events; only the clocks tick here.
 */
export function AgentActivityLine({ activity, showName = false }: { activity: AgentActivity; showName?: boolean }) {
  const state = activityState(activity);
  const { session, step, task } = activity;
  return (
    <div className={`activity activity-${state}`} data-testid={`activity-${activity.agentId}`}>
      <span className="activity-head">
        {showName && (
          <Link href={`/agents/${activity.agentId}`} className="activity-name">
            {activity.name}
          </Link>
        )}
        <span className={state === "working" ? "pill pill-live" : state === "idle" ? "pill" : "pill pill-waiting"}>
          {state}
        </span>
        {session?.stopping && <span className="meta">stopping…</span>}
      </span>
      {session && step && (
        <span className="activity-step">
          <span className="activity-label">{step.label}</span>{" "}
          <span className="meta">
            for <Elapsed since={step.since} /> · step {session.steps} · session <Elapsed since={session.since} />
          </span>
        </span>
      )}
      {activity.subordinatesWorking > 0 && (
        <span className="activity-team meta">{plural(activity.subordinatesWorking, "subordinate")} working</span>
      )}
      {!session && task?.status === "waiting_input" && (
        <span className="activity-team meta">waiting for an answer</span>
      )}
      {state === "queued" && <span className="activity-team meta">starts when a worker is free</span>}
      {state === "retrying" && (
        <span className="activity-team meta">its last session was interrupted — it will be retried automatically</span>
      )}
      {task && (
        <span className="activity-task meta">
          {task.status === "pending" ? "next task" : "on task"}{" "}
          <Link href={`/agents/${activity.agentId}#task-${task.id}`} className="meta-link">
            {task.title}
          </Link>
        </span>
      )}
    </div>
  );
}

/** A team's agents that are doing something, for the teams list; "All idle" otherwise. */
export function TeamActivitySummary({ agents }: { agents: AgentActivity[] }) {
  const busy = agents.filter((agent) => activityState(agent) !== "idle");
  if (busy.length === 0) return <p className="meta activity-idle-team">All idle</p>;
  return (
    <ul className="activity-list" aria-label="What the team is doing">
      {busy.map((agent) => (
        <li key={agent.agentId}>
          <AgentActivityLine activity={agent} showName />
        </li>
      ))}
    </ul>
  );
}
