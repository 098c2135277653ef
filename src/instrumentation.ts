// Runs once when a Next server starts (never during `next build`).
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  // Workers cannot report their own absence: the web process looks for work waiting with no worker.
  const { watchForStalledWork } = await import("@/lib/health");
  watchForStalledWork();
  // Notifications go out from the web process too: the "no worker is running" alert must
  // reach the person exactly when no worker runs. pg-boss gives each delivery to one process.
  const { deliverNotificationsFromWeb } = await import("@/lib/server");
  void deliverNotificationsFromWeb();
}
