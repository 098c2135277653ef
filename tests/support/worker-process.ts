import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { withWorkerMallocDefaults } from "@/worker/malloc";

export type WorkerProcess = {
  child: ChildProcess;
  output: string[];
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
};

/**
 * A real worker process (`npm run worker`'s entry point) on the given database and model server.
 * `nodeArgs` go to Node before the entry point (the memory figure's `--inspect=127.0.0.1:0`).
 */
export function startWorkerProcess(env: Record<string, string>, nodeArgs: readonly string[] = []): WorkerProcess {
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", path.join("src", "worker", "index.ts")], {
    cwd: process.cwd(),
    // The malloc settings `npm start` gives its worker, so tests and the bench run it as users do.
    env: withWorkerMallocDefaults({
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      NODE_ENV: "test",
      // No proactive runs unless a test asks: a check-in firing mid-test adds work it did not plan.
      LEAD_SCHEDULE: "off",
      ...env,
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  child.stdout?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  return {
    child,
    output,
    stop: (signal = "SIGTERM") =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        const killer = setTimeout(() => child.kill("SIGKILL"), 20_000);
        child.once("exit", (code) => {
          clearTimeout(killer);
          resolve(code);
        });
        child.kill(signal);
      }),
  };
}

export async function waitFor<T>(
  probe: () => Promise<T | undefined | null | false>,
  options: { timeoutMs: number; what: string },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${options.timeoutMs} ms waiting for ${options.what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
