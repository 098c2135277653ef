import { describe, expect, it } from "vitest";
import { oneAtATime } from "./one-at-a-time";

/** An action whose runs the test ends by hand, in any order, recording what each saw. */
function manualAction() {
  const ends: Array<() => void> = [];
  let started = 0;
  let active = 0;
  let maxActive = 0;
  const action = () =>
    new Promise<void>((resolve) => {
      started++;
      maxActive = Math.max(maxActive, ++active);
      ends.push(() => {
        active--;
        resolve();
      });
    });
  return { action, ends, started: () => started, maxActive: () => maxActive };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("oneAtATime", () => {
  it("never runs the action twice at once, and runs once more for calls made meanwhile", async () => {
    const manual = manualAction();
    const run = oneAtATime(manual.action);
    void run();
    void run();
    void run();
    await settle();
    expect(manual.started()).toBe(1);
    manual.ends[0]!();
    await settle();
    // The two calls made during the first run are one more run, started after it ended.
    expect(manual.started()).toBe(2);
    manual.ends[1]!();
    await settle();
    expect(manual.started()).toBe(2);
    expect(manual.maxActive()).toBe(1);
  });

  it("runs again after a run that failed, and a later call starts fresh", async () => {
    let calls = 0;
    const run = oneAtATime(async () => {
      calls++;
      if (calls === 1) throw new Error("network down");
    });
    await expect(run()).rejects.toThrow("network down");
    await run();
    expect(calls).toBe(2);
  });

  it("shows the newest state last, whichever read answers first (the chat's resync)", async () => {
    // Two reads of a list that grows: without one-at-a-time, the first read (the older state)
    // answering after the second would be shown last and hide the newest message.
    let stored = ["a"];
    let shown: string[] = [];
    const pending: Array<() => void> = [];
    const run = oneAtATime(async () => {
      const seen = [...stored];
      await new Promise<void>((resolve) => pending.push(resolve));
      shown = seen;
    });
    void run();
    stored = ["a", "question"];
    void run();
    // Answer the newest waiting read first, then the older ones: the worst order for the
    // screen. Whatever is waiting when the last answer is in has been answered too.
    for (let rounds = 0; rounds < 5; rounds++) {
      await settle();
      const waiting = pending.splice(0).reverse();
      for (const answer of waiting) {
        answer();
        await settle();
      }
    }
    expect(shown).toEqual(["a", "question"]);
  });
});
