// `npm run dev`: Postgres (embedded when DATABASE_URL is unset), migrations, Next dev and the worker.
import { withWorkerMallocDefaults } from "../src/worker/malloc";
import { log, prepareDatabase, supervise, webEnv, webHost } from "./lib/processes";

const { url, local } = await prepareDatabase();
const port = process.env.PORT?.trim() || "3000";
const env = { ...process.env, DATABASE_URL: url, PORT: port };
const host = webHost();
log(`Web on http://${host === "0.0.0.0" ? "localhost" : host}:${port}`);
await supervise(
  [
    { name: "web", command: "next", args: ["dev", "--hostname", host, "--port", port], env: webEnv(env) },
    // Not `node --watch`: it waits for a file change after a crash. The supervisor restarts the
    // worker on a change and after any exit, as `npm start` does.
    {
      name: "worker",
      command: process.execPath,
      args: ["--import", "tsx", "src/worker/index.ts"],
      env: withWorkerMallocDefaults(env),
      restart: true,
      watch: ["src/lib", "src/worker"],
    },
  ],
  env,
  local,
);
