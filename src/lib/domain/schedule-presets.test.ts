import { describe, expect, it } from "vitest";
import { choiceOf, cronOf } from "./schedule-presets";

describe("schedule presets", () => {
  it("opens a cron a preset writes as that preset", () => {
    expect(choiceOf("0 * * * *")).toMatchObject({ kind: "hourly", minute: 0 });
    expect(choiceOf("15 * * * *")).toMatchObject({ kind: "hourly", minute: 15 });
    expect(choiceOf("30 7 * * *")).toMatchObject({ kind: "daily", time: "07:30" });
    expect(choiceOf("0 18 * * 1-5")).toMatchObject({ kind: "weekdays", time: "18:00" });
    expect(choiceOf("5 9 * * 3")).toMatchObject({ kind: "weekly", time: "09:05", day: 3 });
    expect(choiceOf("0 9 * * 7")).toMatchObject({ kind: "weekly", day: 0 });
    expect(choiceOf(null)).toMatchObject({ kind: "default" });
    expect(choiceOf("")).toMatchObject({ kind: "default" });
  });

  it("opens anything else as advanced, keeping its cron", () => {
    for (const cron of [
      "*/15 * * * *",
      "0 */2 * * *",
      "0 8 1 * *",
      "0 8 * * 1,3",
      "0 8 * 6 *",
      "0 24 * * *",
      "61 * * * *",
      "0 8 * * MON-FRI",
      "0 0 8 * * *",
    ]) {
      expect(choiceOf(cron)).toMatchObject({ kind: "advanced", cron });
    }
  });

  it("writes the cron of each preset, and reads it back as the same preset", () => {
    const base = { minute: 0, time: "08:00", day: 1, cron: "" };
    const cases = [
      [{ ...base, kind: "hourly", minute: 20 }, "20 * * * *"],
      [{ ...base, kind: "daily", time: "06:45" }, "45 6 * * *"],
      [{ ...base, kind: "weekdays", time: "17:00" }, "0 17 * * 1-5"],
      [{ ...base, kind: "weekly", time: "09:30", day: 0 }, "30 9 * * 0"],
      [{ ...base, kind: "advanced", cron: " */10 * * * * " }, "*/10 * * * *"],
      [{ ...base, kind: "default" }, null],
    ] as const;
    for (const [choice, cron] of cases) {
      expect(cronOf(choice)).toBe(cron);
      if (cron !== null && choice.kind !== "advanced") expect(choiceOf(cron)).toMatchObject({ ...choice, cron });
    }
  });
});
