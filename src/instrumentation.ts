// Runs once when a Next server starts (never during `next build`).
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  // Chat replies' spans (and Next's own request spans) go to OTEL_EXPORTER_OTLP_ENDPOINT when it is set.
  const { startTelemetry } = await import("@/lib/telemetry");
  const telemetry = startTelemetry({ serviceName: "cadre-web" });
  if (telemetry) {
    // Next ends the process on these signals once requests are done; the flush starts now, beside it.
    const flush = () => void telemetry.shutdown().catch((error: unknown) => console.error("[web] could not send the last spans", error));
    process.once("SIGTERM", flush);
    process.once("SIGINT", flush);
  }
  // Workers cannot report their own absence: the web process looks for work waiting with no worker.
  const { watchForStalledWork } = await import("@/lib/health");
  watchForStalledWork();
  // Notifications go out from the web process too: the "no worker is running" alert must
  // reach the person exactly when no worker runs. pg-boss gives each delivery to one process.
  const { deliverNotificationsFromWeb } = await import("@/lib/server");
  void deliverNotificationsFromWeb();
}
