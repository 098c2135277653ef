// Starts Cadre the way a person does (`npm start`: production build, web + worker) against a
// test database, for the browser tests. Builds first when the build is missing or stale.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { expect } from "vitest";
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

function buildIsFresh(): boolean {
  const buildId = path.join(root, ".next/BUILD_ID");
  const sources = Math.max(
    newestSourceMtime(path.join(root, "src")),
    ...["next.config.ts", "package.json", "tsconfig.json"].map((file) => statSync(path.join(root, file)).mtimeMs),
  );
  return existsSync(buildId) && statSync(buildId).mtimeMs > sources;
}

/**
 * One build at a time across processes: vitest may run the browser test files in parallel,
 * and two `next build`s in one .next would break each other. A lock left by a killed run
 * is taken over after 15 minutes.
 */
function withBuildLock(action: () => void): void {
  const lock = path.join(
    tmpdir(),
    `cadre-next-build-${createHash("sha256").update(root).digest("hex").slice(0, 12)}.lock`,
  );
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      try {
        if (Date.now() - statSync(lock).mtimeMs > 15 * 60_000) rmSync(lock, { recursive: true, force: true });
      } catch {
        // released meanwhile
      }
      if (Date.now() > deadline) throw new Error(`Waited 15 minutes for another test run's next build (lock ${lock}).`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    }
  }
  try {
    action();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Runs `next build` unless .next/BUILD_ID is newer than every source file. */
export function buildIfStale(): void {
  if (buildIsFresh()) return;
  withBuildLock(() => {
    if (!buildIsFresh()) build(); // another file's run may have built while this one waited
  });
}

function build(): void {
  const result = spawnSync(path.join(root, "node_modules/.bin/next"), ["build"], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1", CADRE_BUILD_SKIP_TYPECHECK: "1" },
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(`next build failed:\n${result.stdout}\n${result.stderr}`);
}

export type ApiRequest = { method?: string; body?: unknown };

/** A JSON request to the app's API (JSON body when given): its status and parsed answer. */
export async function callApi<T>(
  baseUrl: string,
  pathname: string,
  init: ApiRequest = {},
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${baseUrl}${pathname}`, {
    method: init.method ?? "GET",
    headers: init.body === undefined ? undefined : { "content-type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: response.status, body: (await response.json()) as T };
}

/** `pid`: the supervisor's (scripts/start.ts); the web server and the worker are its children. */
export type AppServer = { url: string; pid: number; output: () => string; stop: () => Promise<void> };

/**
 * `npm start` (scripts/start.ts) on a free port with the given environment; resolves when /api/health answers.
 * `onOutput` hears the output as it comes, before the app answers (a test that steers its start-up).
 */
export async function startApp(
  env: Record<string, string | undefined>,
  args: string[] = [],
  options: { onOutput?: (output: string) => void } = {},
): Promise<AppServer> {
  const port = await freePort();
  const childEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries({
    ...process.env,
    ...env,
    PORT: String(port),
    NEXT_TELEMETRY_DISABLED: "1",
  })) {
    if (value !== undefined && !/^OPENAI_/.test(key)) childEnv[key] = value;
  }
  for (const [key, value] of Object.entries(env)) if (/^OPENAI_/.test(key) && value) childEnv[key] = value;
  // Sign-in is off unless the test asks for it (a developer's own APP_PASSWORD must not leak in).
  if (env.APP_PASSWORD === undefined) delete childEnv.APP_PASSWORD;
  // No proactive runs: a daily check-in firing mid-test would brief a second time.
  childEnv.LEAD_SCHEDULE = env.LEAD_SCHEDULE ?? "off";
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts", ...args], {
    cwd: root,
    env: childEnv as NodeJS.ProcessEnv,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  const hear = (chunk: Buffer) => {
    output += chunk.toString();
    options.onOutput?.(output);
  };
  child.stdout?.on("data", hear);
  child.stderr?.on("data", hear);
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
    pid: child.pid!,
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

/** The resident memory of the web server (`next-server`, a child of the supervisor), in MB. */
export function webServerRssMb(app: AppServer): number {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone
    }
  }
  const isDescendant = (pid: number): boolean => {
    for (let current = parents.get(pid); current !== undefined && current > 1; current = parents.get(current))
      if (current === app.pid) return true;
    return false;
  };
  for (const pid of parents.keys()) {
    if (!isDescendant(pid)) continue;
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    if (!/^Name:\s*next-server/m.test(status)) continue;
    return Math.round(Number(/^VmRSS:\s*(\d+) kB/m.exec(status)![1]) / 1024);
  }
  throw new Error("no next-server process under the supervisor");
}

/** Where the browser tests leave their screenshots (`<name>-1440.png`, `<name>-375.png`). */
export const screenshotDir = path.join(root, "test-results");

/** Debian's Chromium, headless. */
export function launchChromium(): Promise<Browser> {
  mkdirSync(screenshotDir, { recursive: true });
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
}

/**
 * Waits until React has revealed the streamed page (its hidden copy is gone). A not-found page
 * keeps its unused copy, so it counts as revealed once it shows itself. Up to 15 s: a loaded CI
 * machine took longer than the 3 s this once allowed, and a test then read a half-shown page.
 */
export async function settle(target: Page): Promise<void> {
  await target
    .waitForFunction(
      () =>
        !document.querySelector('div[hidden][id^="S:"]') ||
        [...document.querySelectorAll("h1.empty-title")].some(
          (heading) => heading.textContent === "Not found" && !heading.closest("[hidden]"),
        ),
      undefined,
      { timeout: 15_000 },
    )
    .catch(() => {});
}

/** Full-page screenshots at 1440 and 375 px; nothing may stick out sideways on the phone. */
export async function shoot(target: Page, name: string): Promise<void> {
  await target.evaluate(() => window.scrollTo(0, 0)); // sticky bars would land mid-page in a full-page shot taken scrolled
  await target.setViewportSize({ width: 1440, height: 900 });
  await target.screenshot({ path: path.join(screenshotDir, `${name}-1440.png`), fullPage: true });
  await target.setViewportSize({ width: 375, height: 812 });
  await target.waitForTimeout(100);
  await target.screenshot({ path: path.join(screenshotDir, `${name}-375.png`), fullPage: true });
  const { overflow, culprits } = await target.evaluate(() => {
    const width = document.documentElement.clientWidth;
    // The innermost elements that reach past the right edge: what to fix when the page scrolls sideways.
    const wide = [...document.body.querySelectorAll("*")].filter(
      (element) => element.getBoundingClientRect().right > width + 0.5,
    );
    const culprits = wide
      .filter((element) => !wide.some((other) => other !== element && element.contains(other)))
      .slice(0, 5)
      .map(
        (element) =>
          `<${element.tagName.toLowerCase()} class="${element.getAttribute("class") ?? ""}"> ${(element.textContent ?? "").slice(0, 60)}`,
      );
    return { overflow: document.documentElement.scrollWidth - width, culprits };
  });
  expect(overflow, `${name} scrolls sideways at 375 px: ${culprits.join(" | ")}`).toBeLessThanOrEqual(0);
  await target.setViewportSize({ width: 1440, height: 900 });
}
