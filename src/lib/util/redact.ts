import "server-only";
/**
 * A URL as logs and exports show it. Many services put the credential in the URL itself — a
 * Slack incoming webhook's path, a token in the query — so only the origin and the first path
 * segment are kept: enough to tell which service it is, never enough to call it.
 */
export function maskUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const [first, ...rest] = parsed.pathname.split("/").filter(Boolean);
    const path = first ? `/${first}${rest.length > 0 ? "/…" : ""}` : "";
    return `${parsed.origin}${path}${parsed.search ? "?…" : ""}`;
  } catch {
    return "(not a URL)";
  }
}
