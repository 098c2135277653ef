// `npm start`: the production web server and a worker (`--web-only`: the web server alone).
// A worker that exits is started again; the web server's exit stops everything.
import { existsSync } from "node:fs";
import { withWorkerMallocDefaults } from "../src/worker/malloc";
import { log, prepareDatabase, supervise, webEnv, webHost } from "./lib/processes";

if (!existsSync(".next/BUILD_ID")) {
  log("No production build found. Run `npm run build` first.");
  process.exit(1);
}
const webOnly = process.argv.includes("--web-only");
const { url, local } = await prepareDatabase();
const port = process.env.PORT?.trim() || "3000";
const env = { ...process.env, DATABASE_URL: url, PORT: port, NODE_ENV: "production" as const };
const host = webHost();
log(`Web on http://${host}:${port}${webOnly ? " (no worker)" : ""}`);
await supervise(
  [
    { name: "web", command: "next", args: ["start", "--hostname", host, "--port", port], env: webEnv(env) },
    ...(webOnly
      ? []
      : [
          {
            name: "worker",
            command: process.execPath,
            args: ["--import", "tsx", "src/worker/index.ts"],
            env: withWorkerMallocDefaults(env),
            restart: true,
          },
        ]),
  ],
  env,
  local,
);
