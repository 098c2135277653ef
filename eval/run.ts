// `npm run eval`: runs the research missions through real teams and scores their briefings.
// `npm run eval -- --help` for the options; docs/decisions/2026-11-27-evals.md for why.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { runEval, type EvalReport } from "./lib/eval";
import { SERVER_MODES, type ServerMode } from "./lib/misbehaving-relay";
import { renderModesTable, renderTable, summaryLine } from "./lib/report";
import { BREAKS, type Break } from "./lib/run-mission";

const HELP = `npm run eval [-- options]

Runs each research mission (eval/missions.json) through a team of a lead and two researchers,
on the model the app is configured with (OPENAI_BASE_URL / OPENAI_API_KEY / LLM_MODEL; the
offline model when none), against a local web (eval/corpus), and scores the briefings.

  --mission ID            run only this mission (repeatable)
  --baseline FILE         compare with an earlier report: changes are marked better / worse
  --out FILE              where the JSON report goes (default eval/reports/<time>.json)
  --break drop-reports    break the team on purpose (the second researcher's reports are lost)
  --server-misbehaves MODE
                          the offline model's answers through a local OpenAI-compatible server
                          (over HTTP, as a configured model is asked) that misbehaves: ignoreToolChoice,
                          strictRoles, noUsage, emptyAnswers (one answer in four), lengthCut (one in
                          four), noTools, none (behaves well), or all of them in turn
  --timeout SECONDS       per mission (default 90 offline, 1200 with a model)
  --parallel N            missions run at once (default 1)
  --lead-instructions FILE, --researcher-instructions FILE
                          the agents' standing instructions (default: the app's and the eval's)
  --no-judge              with a model: skip its 1-5 grade of each mission's briefings
  --keep                  keep each mission's database, to open the team in the app
`;

const { values } = parseArgs({
  options: {
    mission: { type: "string", multiple: true },
    baseline: { type: "string" },
    out: { type: "string" },
    break: { type: "string" },
    "server-misbehaves": { type: "string" },
    timeout: { type: "string" },
    parallel: { type: "string" },
    "lead-instructions": { type: "string" },
    "researcher-instructions": { type: "string" },
    keep: { type: "boolean" },
    "no-judge": { type: "boolean" },
    help: { type: "boolean", short: "h" },
  },
});

if (values.help) {
  console.log(HELP);
  process.exit(0);
}
if (values.break !== undefined && !BREAKS.includes(values.break as Break)) {
  console.error(`--break must be one of: ${BREAKS.join(", ")}`);
  process.exit(2);
}

const misbehaves = values["server-misbehaves"];
if (misbehaves !== undefined && misbehaves !== "all" && !SERVER_MODES.includes(misbehaves as ServerMode)) {
  console.error(`--server-misbehaves must be one of: ${SERVER_MODES.join(", ")}, all`);
  process.exit(2);
}
const modes: (ServerMode | undefined)[] =
  misbehaves === "all" ? [...SERVER_MODES] : [misbehaves as ServerMode | undefined];

const readText = (file: string | undefined) => (file ? readFile(file, "utf8") : Promise.resolve(undefined));
const baseline = values.baseline ? (JSON.parse(await readFile(values.baseline, "utf8")) as EvalReport) : undefined;
if (baseline && baseline.version !== 1) {
  console.error(`${values.baseline} is not an eval report this version reads (version ${String(baseline.version)}).`);
  process.exit(2);
}

const reports: EvalReport[] = [];
for (const mode of modes) {
  const report = await runEval({
    missions: values.mission,
    break: values.break as Break | undefined,
    serverMisbehaves: mode,
    timeoutMs: values.timeout ? Number(values.timeout) * 1000 : undefined,
    parallel: values.parallel ? Number(values.parallel) : undefined,
    leadInstructions: await readText(values["lead-instructions"]),
    researcherInstructions: await readText(values["researcher-instructions"]),
    keepDatabases: values.keep,
    judge: !values["no-judge"],
  }).catch((error: unknown) => {
    // What stopped the eval before any mission ran (no database, a bad missions file): one line, and what to do.
    console.error(`The eval could not run: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
  reports.push(report);

  const stamp = report.startedAt.replace(/[:.]/g, "-").replace(/Z$/, "");
  const suffix = mode ? `-${mode}` : "";
  const out =
    modes.length > 1 && values.out
      ? values.out.replace(/(\.json)?$/, `${suffix}.json`)
      : (values.out ?? path.join(import.meta.dirname, "reports", `${stamp}${suffix}.json`));
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);

  console.log(renderTable(report, baseline));
  console.log("");
  console.log(summaryLine(report, baseline));
  console.log(`Report: ${path.relative(process.cwd(), out)}`);
  for (const run of report.missions.filter((each) => each.status !== "briefed"))
    console.log(`${run.mission}: ${run.status}${run.error ? `: ${run.error}` : ""}`);
  console.log("");
}
if (reports.length > 1) console.log(renderModesTable(reports, baseline));
// A mission whose run broke (not one that scored low) is a failure of the eval itself.
process.exit(reports.some((report) => report.missions.some((run) => run.status === "failed")) ? 1 : 0);
