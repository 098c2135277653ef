// Runs once when a Next server starts (never during `next build`).
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  // Workers cannot report their own absence: the web process looks for work waiting with no worker.
  const { watchForStalledWork } = await import("@/lib/health");
  watchForStalledWork();
}
