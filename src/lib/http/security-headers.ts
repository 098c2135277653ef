import "server-only";
// The security headers on every answer Cadre gives (issue 25): src/proxy.ts sets them on pages
// and the API, next.config.ts on what the proxy never sees (Next's static files, the favicon).
// Plain data and pure functions: next.config.ts imports this file too.

/**
 * Why each one:
 * - X-Frame-Options and CSP `frame-ancestors 'none'`: no other site may frame Cadre. Without a
 *   password Cadre trusts whoever sits at this computer, so a framed Cadre under a lure could
 *   take a click on Approve, Delete team or Test connection (which runs a stdio MCP server).
 * - nosniff: an answer is only ever read as the type it says (an export is never a script).
 * - Referrer-Policy: not `no-referrer`, which would turn the Origin of a form POST (sign out)
 *   into `null` and fail Cadre's own Origin check; other sites learn the origin, never a path.
 * - Permissions-Policy: Cadre uses none of these; a page injected into it gets none either.
 */
export const FIXED_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "strict-origin-when-cross-origin",
  "Permissions-Policy": "camera=(), microphone=(), geolocation=(), usb=(), payment=()",
};

/** For what is not a page (API answers, files): nothing in it may load or run anything, nor be framed. */
export const NON_PAGE_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * The policy of a page. Scripts run only with this request's nonce (Next puts it on its own
 * scripts when it finds it in the request's CSP header) or when such a script loads them
 * ('strict-dynamic': Next's chunks). React's development build needs eval, so only `npm run
 * dev` gets 'unsafe-eval'. Styles allow inline: React renders `style` attributes (bars of the
 * waterfall, the usage chart), which no nonce can cover, and CSS cannot run script.
 */
export function pagePolicy(nonce: string, development: boolean): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${development ? " 'unsafe-eval'" : ""}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** A fresh nonce per page request: 128 random bits, base64. */
export function newNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes));
}

/** Sets the fixed headers and the given policy on an answer's headers. */
export function setSecurityHeaders(headers: Headers, policy: string): void {
  for (const [name, value] of Object.entries(FIXED_SECURITY_HEADERS)) headers.set(name, value);
  headers.set("Content-Security-Policy", policy);
}
