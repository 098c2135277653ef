import { readFileSync } from "node:fs";
import { waitFor } from "../../tests/support/worker-process";

/** What `process.memoryUsage()` reports, in MiB. */
export type MemoryUsage = { rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };

/**
 * A worker's V8 inspector, reached from outside: the worker is started with
 * `--inspect=127.0.0.1:0` and prints where it listens. Through it the memory figure asks for a
 * full garbage collection and then reads `process.memoryUsage()`, so it compares what the worker
 * keeps alive, not where V8's collector happened to be in its cycle, and the worker's own code
 * knows nothing of being measured.
 */
export class Inspector {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();

  private constructor(private readonly socket: WebSocket) {
    socket.addEventListener("message", (event) => {
      const reply = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
      const waiting = reply.id === undefined ? undefined : this.pending.get(reply.id);
      if (!waiting) return; // an event, not a reply
      this.pending.delete(reply.id!);
      if (reply.error) waiting.reject(new Error(`inspector: ${reply.error.message}`));
      else waiting.resolve(reply.result);
    });
    socket.addEventListener("close", () => {
      for (const waiting of this.pending.values())
        waiting.reject(new Error("inspector: the worker closed its inspector"));
      this.pending.clear();
    });
  }

  /** Connects to the inspector whose address the worker printed to `output`. */
  static async connect(output: readonly string[]): Promise<Inspector> {
    const url = await waitFor(async () => /Debugger listening on (ws:\/\/\S+)/.exec(output.join(""))?.[1], {
      timeoutMs: 30_000,
      what: "the worker to print its inspector's address (started with --inspect=127.0.0.1:0)",
    });
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener("open", () => resolve(), { once: true });
      socket.addEventListener("error", () => reject(new Error(`inspector: could not connect to ${url}`)), {
        once: true,
      });
    });
    return new Inspector(socket);
  }

  private call(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** The worker's memory right after full garbage collections (two: the first can leave what finalizers free). */
  async memoryAfterCollection(): Promise<MemoryUsage> {
    await this.call("HeapProfiler.collectGarbage");
    await this.call("HeapProfiler.collectGarbage");
    const reply = (await this.call("Runtime.evaluate", {
      expression: "JSON.stringify(process.memoryUsage())",
      returnByValue: true,
    })) as {
      result: { value: string };
    };
    const bytes = JSON.parse(reply.result.value) as Record<keyof MemoryUsage, number>;
    const mib = (value: number) => value / 1024 / 1024;
    return {
      rss: mib(bytes.rss),
      heapTotal: mib(bytes.heapTotal),
      heapUsed: mib(bytes.heapUsed),
      external: mib(bytes.external),
      arrayBuffers: mib(bytes.arrayBuffers),
    };
  }

  close(): void {
    this.socket.close();
  }
}

/**
 * Where a process's resident memory is, from /proc/<pid>/smaps, in MiB: the brk heap (malloc's
 * main arena), anonymous mappings (V8's heap pages, other malloc arenas, thread stacks) and
 * file-backed ones (the binary, shared libraries).
 */
export function residentBreakdown(pid: number): { brk: number; anonymous: number; files: number } {
  const totals = { brk: 0, anonymous: 0, files: 0 };
  let kind: keyof typeof totals = "anonymous";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (mapping) {
      const name = mapping[1]!;
      kind = name === "[heap]" ? "brk" : name === "" || name.startsWith("[") ? "anonymous" : "files";
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) totals[kind] += Number(rss[1]) / 1024;
  }
  return totals;
}
