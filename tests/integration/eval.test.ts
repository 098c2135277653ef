// `npm run eval` in CI: two missions through real teams and worker processes on the offline
// model, which must score at least what eval/offline-baseline.json recorded; and the same
// missions with a team broken on purpose, which must score lower (the eval can fail).
import { readFile } from "node:fs/promises";
import { MockLanguageModelV4 } from "ai/test";
import { describe, expect, inject, it } from "vitest";
import { judgeBriefings } from "../../eval/lib/judge";
import { runEval, type EvalReport } from "../../eval/lib/eval";
import { loadMissions } from "../../eval/lib/missions";
import { compareReports } from "../../eval/lib/report";
import { citedPages, mentions, normalize, scoreMission } from "../../eval/lib/score";
import { loadCorpus } from "../../eval/lib/corpus";
import { promptText, textReply } from "../support/mock-model";

const MISSIONS = ["castellane-port", "veyra-lithium"];

describe("npm run eval on the offline model", () => {
  it("scores at least the recorded offline scores, and a team that loses a researcher's reports scores lower", async () => {
    const baseline = JSON.parse(await readFile("eval/offline-baseline.json", "utf8")) as EvalReport;
    const common = {
      missions: MISSIONS,
      database: { adminUrl: inject("databaseAdminUrl"), template: inject("templateDatabase") },
      // The offline model whatever this machine's environment says: the scores are the offline model's.
      modelEnv: {},
      parallel: 2,
      log: () => {},
    };
    const sound = await runEval(common);
    const broken = await runEval({ ...common, break: "drop-reports" });

    expect(sound.model).toBe("offline");
    for (const run of [...sound.missions, ...broken.missions]) expect(run.status, run.error).toBe("briefed");
    const figures = (report: EvalReport) =>
      Object.fromEntries(
        report.missions.map((run) => [
          run.mission,
          { sourced: run.score.sourced, found: run.score.found, decoys: run.score.repeated, score: run.score.score },
        ]),
      );
    const now = figures(sound);
    const recorded = figures({
      ...baseline,
      missions: baseline.missions.filter((run) => MISSIONS.includes(run.mission)),
    });
    console.log(`[eval] offline ${JSON.stringify(now)}; broken ${JSON.stringify(figures(broken))}`);

    // Not below the recorded scores: a finding lost, a source dropped or a decoy taken up fails here.
    const worse = compareReports(sound, baseline).filter(
      (change) => change.verdict === "worse" && ["sourced", "found", "decoys", "score"].includes(change.metric),
    );
    expect(worse, `worse than eval/offline-baseline.json: ${JSON.stringify(worse)}`).toEqual([]);
    expect(Object.keys(recorded).sort()).toEqual([...MISSIONS].sort());
    // Every model call was counted: tokens in and out, nothing failed.
    for (const run of sound.missions) {
      expect(run.usage.calls).toBeGreaterThan(5);
      expect(run.usage.inputTokens).toBeGreaterThan(0);
      expect(run.usage.outputTokens).toBeGreaterThan(0);
      expect(run.toolErrors).toBe(0);
    }

    // The broken team's briefings miss what the lost reports held, mission by mission.
    for (const run of broken.missions) {
      const intact = sound.missions.find((each) => each.mission === run.mission)!;
      expect(run.score.score, run.mission).toBeLessThan(intact.score.score);
      expect(run.score.sourced, run.mission).toBeLessThan(intact.score.sourced);
    }
  }, 240_000);
});

describe("npm run eval -- --server-misbehaves", () => {
  it("scores the offline model's answers through a server with strict roles as the baseline does", async () => {
    const missions = ["castellane-port", "saltmarsh-water"];
    const baseline = JSON.parse(await readFile("eval/offline-baseline.json", "utf8")) as EvalReport;
    // Over HTTP through @ai-sdk/openai to a server whose chat template refuses roles that do not alternate.
    const report = await runEval({
      missions,
      database: { adminUrl: inject("databaseAdminUrl"), template: inject("templateDatabase") },
      serverMisbehaves: "strictRoles",
      parallel: 2,
      log: () => {},
    });
    expect(report).toMatchObject({ model: "offline", modelKind: "openai-compatible", serverMisbehaves: "strictRoles" });
    expect(report.missions.map((run) => run.mission)).toEqual(missions);
    for (const run of report.missions) {
      expect(run.status, run.error).toBe("briefed");
      expect(run.toolErrors).toBe(0);
    }
    const worse = compareReports(report, baseline).filter(
      (change) => change.verdict === "worse" && ["sourced", "found", "decoys", "score"].includes(change.metric),
    );
    expect(worse, `worse than eval/offline-baseline.json: ${JSON.stringify(worse)}`).toEqual([]);
  }, 120_000);
});

describe("scoring a briefing", () => {
  it("finds a figure however it is written, but not inside another figure", () => {
    expect(mentions(normalize("Throughput: **4.37 million** TEU."), "4.37 million")).toBe(true);
    expect(mentions(normalize("It recalled 38,400 packs"), "38400")).toBe(true);
    expect(mentions(normalize("a €120 voucher"), "eur 120")).toBe(true);
    expect(mentions(normalize("up 6.8 per cent"), "6.8%")).toBe(true);
    expect(mentions(normalize("from July 1, 2027"), "july 1 2027")).toBe(true);
    expect(mentions(normalize("14.37 million TEU"), "4.37 million")).toBe(false);
    expect(mentions(normalize("a 15.2% rise"), "15%")).toBe(false);
    expect(mentions(normalize("EUR 1200"), "eur 120")).toBe(false);
  });

  it("counts a finding as sourced only when its briefing links a page that says it", async () => {
    const pages = await loadCorpus();
    const [castellane] = await loadMissions(new Set(pages.map((page) => page.path)));
    const origin = "http://127.0.0.1:4000";
    expect(citedPages(`see ${origin}/harbour-ledger/castellane-record-year).`)).toEqual(
      new Set(["/harbour-ledger/castellane-record-year"]),
    );
    const sourced = scoreMission(castellane!, [
      {
        title: "Castellane",
        summary: "A record year.",
        content: `4.37 million TEU in 2025, up 6.8% (${origin}/castellane-port-authority/statistics-2025). Harlow Stevedoring may run North Quay.`,
      },
    ]);
    expect(sourced).toMatchObject({ found: 2, sourced: 2, repeated: 1 });
    // Two sourced findings, a decoy taken up: (2 - 1) of 4.
    expect(sourced.score).toBe(25);
    const unsourced = scoreMission(castellane!, [
      {
        title: "Castellane",
        summary: "",
        content: `4.37 million TEU (${origin}/boxship-chatter/castellane-5-million)`,
      },
    ]);
    expect(unsourced).toMatchObject({ found: 1, sourced: 0, repeated: 0, score: 13 });
  });

  it("has the configured model grade the briefings against the mission's findings and decoys", async () => {
    const pages = await loadCorpus();
    const [castellane] = await loadMissions(new Set(pages.map((page) => page.path)));
    let seen = "";
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        seen = promptText(options.prompt);
        return textReply(JSON.stringify({ quality: 4, reasons: "Answers both questions with sources." }));
      },
    });
    const graded = await judgeBriefings(model, castellane!, [
      { title: "Castellane", summary: "A record year.", content: "4.37 million TEU in 2025." },
    ]);
    expect(graded).toEqual({ quality: 4, reasons: "Answers both questions with sources." });
    expect(seen).toContain("4.37 million TEU handled in 2025");
    expect(seen).toContain("Harlow Stevedoring as the operator");
    expect(seen).toContain("4.37 million TEU in 2025.");
    // No briefing is the lowest grade, without asking.
    expect(await judgeBriefings(model, castellane!, [])).toMatchObject({ quality: 1 });
  });
});
