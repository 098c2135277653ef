// `npm run check-model -- [--model NAME | --all] [--timeout SECONDS]`: asks a model on the
// configured server (OPENAI_BASE_URL, or OpenAI with OPENAI_API_KEY) a few small questions —
// does it call a tool when told to, keep to "no tools", make two calls at once, take two user
// messages in a row, send token counts, what context it states — stores the answers as its
// profile in DATABASE_URL's database (what the engine and the Settings page read), and prints
// its card. --all: every model in use (LLM_MODEL and each agent's own). Exit 1 when a check
// could not finish.
import { parseArgs } from "node:util";
import { createDatabase } from "../src/lib/db/client";
import { checkAndStoreModel, listModelsInUse } from "../src/lib/domain/model-profiles";
import { env } from "../src/lib/env";
import { MODEL_CHECK_TIMEOUT_MS } from "../src/lib/llm/model-check";
import { modelServerUrl } from "../src/lib/llm/provider";
import { modelCard } from "../src/lib/views/model-card";

const { values } = parseArgs({
  options: {
    model: { type: "string" },
    all: { type: "boolean", default: false },
    timeout: { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help) {
  console.log("npm run check-model -- [--model NAME | --all] [--timeout SECONDS]");
  process.exit(0);
}
const server = modelServerUrl();
if (server === null) {
  console.log("No model is configured: Cadre answers with its built-in demo model, which needs no check.");
  console.log("Set OPENAI_API_KEY, or OPENAI_BASE_URL and LLM_MODEL for a server of your own, then run this again.");
  process.exit(0);
}
const url = process.env.DATABASE_URL?.trim();
if (!url) {
  console.error(
    "DATABASE_URL is not set: the check stores the model's profile in Cadre's database. Set it to that database (npm run dev prints the embedded one's address as it starts).",
  );
  process.exit(1);
}
const timeoutMs = values.timeout ? Number(values.timeout) * 1000 : MODEL_CHECK_TIMEOUT_MS;
if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
  console.error(`--timeout must be a number of seconds, not ${values.timeout}.`);
  process.exit(1);
}

const database = createDatabase(url, { max: 2 });
let failed = false;
try {
  const models = values.all ? await listModelsInUse(database.db) : [values.model ?? null];
  for (const model of models) {
    console.log(`Checking ${model ?? env().LLM_MODEL ?? "the default model"} on ${server} …`);
    const profile = await checkAndStoreModel(database.db, model, { timeoutMs });
    if (!profile) continue;
    const card = modelCard(profile.model, profile, env().CONTEXT_TOKEN_BUDGET);
    failed ||= card.state === "failed";
    console.log(`\n${card.model}: ${card.summary}`);
    for (const line of card.lines)
      console.log(`  ${line.tone === "ok" ? "✓" : line.tone === "warn" ? "!" : "·"} ${line.text}`);
    console.log("");
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  failed = true;
} finally {
  await database.close();
}
process.exit(failed ? 1 : 0);
