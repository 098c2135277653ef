// Starts Cadre the way a person does (`npm start`: production build, web + worker) against a
// test database, for the browser tests. Builds first when the build is missing or stale.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { freePort } from "../../scripts/lib/embedded-postgres";

const root = path.resolve(import.meta.dirname, "../..");

function newestSourceMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSourceMtime(full));
    else if (!entry.name.endsWith(".test.ts")) newest = Math.max(newest, statSync(full).mtimeMs);
  }
  return newest;
}

/** Runs `next build` unless .next/BUILD_ID is newer than every source file. */
export function buildIfStale(): void {
  const buildId = path.join(root, ".next/BUILD_ID");
  const sources = Math.max(
    newestSourceMtime(path.join(root, "src")),
    ...["next.config.ts", "package.json", "tsconfig.json"].map((file) => statSync(path.join(root, file)).mtimeMs),
  );
  if (existsSync(buildId) && statSync(buildId).mtimeMs > sources) return;
  const result = spawnSync(path.join(root, "node_modules/.bin/next"), ["build"], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1", CADRE_BUILD_SKIP_TYPECHECK: "1" },
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(`next build failed:\n${result.stdout}\n${result.stderr}`);
}

export type AppServer = { url: string; output: () => string; stop: () => Promise<void> };

/** `npm start` (scripts/start.ts) on a free port with the given environment; resolves when /api/health answers. */
export async function startApp(env: Record<string, string | undefined>, args: string[] = []): Promise<AppServer> {
  const port = await freePort();
  const childEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries({ ...process.env, ...env, PORT: String(port), NEXT_TELEMETRY_DISABLED: "1" })) {
    if (value !== undefined && !/^OPENAI_/.test(key)) childEnv[key] = value;
  }
  for (const [key, value] of Object.entries(env)) if (/^OPENAI_/.test(key) && value) childEnv[key] = value;
  delete childEnv.APP_PASSWORD;
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts", ...args], {
    cwd: root,
    env: childEnv as NodeJS.ProcessEnv,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`The app exited (${child.exitCode}) before it answered:\n${output}`);
    try {
      const response = await fetch(`${url}/api/health`);
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`The app did not answer /api/health within 60 s:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }

  return {
    url,
    output: () => output,
    stop: async () => {
      if (child.exitCode !== null || !child.pid) return;
      // The supervisor stops web and worker on SIGTERM; the group kill is the fallback.
      process.kill(child.pid, "SIGTERM");
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // gone
        }
      }, 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
