// The web server's start-up in the Node.js runtime, imported by instrumentation.ts only there:
// Next compiles instrumentation.ts for the Edge runtime too, and warns at every dev compile
// about the Node.js APIs used here (process.exit) if they sit in that file.

/** Starts the web process's telemetry, its watch for stalled work and its notification deliveries. */
export async function registerNode(): Promise<void> {
  const { isClientAbort } = await import("@/lib/http/http");
  oneLineForClientAborts(isClientAbort);
  // Chat replies' spans (and Next's own request spans) go to OTEL_EXPORTER_OTLP_ENDPOINT when it is set.
  const { startTelemetry } = await import("@/lib/telemetry/tracing");
  const telemetry = startTelemetry({ serviceName: "cadre-web" });
  if (telemetry) flushBeforeExit(telemetry);
  // How many connections this server may open, and a warning when the database is short of them.
  const [{ database }, { reportConnectionRoom }] = await Promise.all([
    import("@/lib/db/client"),
    import("@/lib/db/connection-budget"),
  ]);
  void Promise.resolve()
    .then(() => reportConnectionRoom(database().sql, "web", (line) => console.log(line)))
    .catch((error: unknown) =>
      console.log(`[web] database: ${error instanceof Error ? error.message : String(error)}`),
    );
  // Workers cannot report their own absence: the web process looks for work waiting with no worker.
  const { watchForStalledWork } = await import("@/lib/domain/health");
  watchForStalledWork();
  // Notifications go out from the web process too: the "no worker is running" alert must
  // reach the person exactly when no worker runs. pg-boss gives each delivery to one process.
  const { deliverNotificationsFromWeb } = await import("@/lib/http/server");
  void deliverNotificationsFromWeb();
}

/**
 * Next ends the process with process.exit once its shutdown (SIGTERM, SIGINT) is done, which
 * would drop the spans still in the batch. Its own signal handlers leave no hook, so the exit
 * waits for the flush here, at most a few seconds.
 */
function flushBeforeExit(telemetry: { shutdown: () => Promise<void> }): void {
  const exit = process.exit.bind(process);
  let exiting = false;
  process.exit = ((code?: number | string | null) => {
    if (exiting) return exit(code);
    exiting = true;
    const flushed = telemetry
      .shutdown()
      .catch((error: unknown) => console.error("[web] could not send the last spans", error));
    void Promise.race([flushed, new Promise((resolve) => setTimeout(resolve, 3_000))]).finally(() => exit(code));
  }) as typeof process.exit;
}

/**
 * Next logs a client that closed its connection before its request body had all arrived as a bare
 * `console.error(error)`: an "Error: aborted … code: 'ECONNRESET'" stack, from the body it buffers for
 * src/proxy.ts (only requests with a "%" in the path still bring it one; see the proxy's matcher).
 * Nothing failed on the server, and it leaves no hook: that one call becomes one line here.
 */
function oneLineForClientAborts(isClientAbort: (error: unknown) => boolean): void {
  const error = console.error.bind(console);
  console.error = (...args: unknown[]) => {
    if (args.length === 1 && isClientAbort(args[0]))
      return error(
        "[web] A client closed its connection before its request body had all arrived; the request was dropped.",
      );
    error(...args);
  };
}
