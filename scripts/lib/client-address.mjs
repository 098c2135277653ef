// Loaded into the web server before Next (`--import` in NODE_OPTIONS, scripts/lib/processes.ts
// webEnv), for two things Next leaves no hook for:
// - It stamps every request with the address of the connection it came on, in a header of
//   Cadre's own that replaces whatever a client sent under that name. Next gives route handlers
//   no connection address, and the X-Forwarded-For it passes on is the client's own say whenever
//   the client sent one; sign-in throttling (src/lib/auth-rules.ts clientAddress) needs the truth.
// - It refuses a request with a body whose path cannot be decoded (`/api/teams/%`). Only Next's
//   proxy could answer such a path, and it reads the whole body first: a half-sent body would be
//   held open, and big ones buffered. Here it is answered at once, its body unread.
// - It answers a method Cadre serves nowhere (TRACE, PROPFIND, …) with 405 and an Allow header:
//   Next answers those with a bare 500 and logs a stack each time, so a stranger could fill the log.
//   A page (any path outside /api and Next's own files) is answered for GET and HEAD only: Next
//   would render it for a PUT or a DELETE as if it were read.
import http from "node:http";
import https from "node:https";

/** Also in src/lib/auth-rules.ts (CLIENT_ADDRESS_HEADER). */
const HEADER = "x-cadre-client-address";
const stamped = Symbol.for("cadre.clientAddressStamped");

/** The headers src/lib/security-headers.ts gives an answer that is not a page. */
const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "strict-origin-when-cross-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), usb=(), payment=()",
};

/** Every method some route or page of Cadre answers (Next answers OPTIONS and HEAD itself); also in src/proxy.ts. */
const SERVED_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
/** What a page answers: it is read, never written to (every write goes to a route under /api). */
const PAGE_METHODS = ["GET", "HEAD"];

/** The methods a path is answered for: a page's, or every route's for the API and Next's own files. */
function methodsServedAt(url) {
  const path = String(url ?? "/").split("?")[0];
  const page =
    path !== "/api" && !path.startsWith("/api/") && !path.startsWith("/_next/") && !path.startsWith("/__nextjs");
  return page ? PAGE_METHODS : SERVED_METHODS;
}

function hasBody(request) {
  const length = Number(request.headers["content-length"] ?? 0);
  return length > 0 || request.headers["transfer-encoding"] !== undefined;
}

function decodablePath(url) {
  try {
    decodeURIComponent((url ?? "/").split("?")[0]);
    return true;
  } catch {
    return false;
  }
}

/** As src/proxy.ts answers such a path, without waiting for the body; the connection closes after. */
function refuseUndecodable(request, response) {
  const api = (request.url ?? "").startsWith("/api/");
  const body = api
    ? JSON.stringify({
        error: {
          code: "bad_request:path",
          message: "The path is not valid: a % in a URL must start an escape like %2F (write a literal % as %25).",
        },
      })
    : "Not found";
  response.writeHead(api ? 400 : 404, {
    ...SECURITY_HEADERS,
    "content-type": api ? "application/json" : "text/plain; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    connection: "close",
  });
  response.end(body);
}

/** 405 for a method the path is not served for, its body unread; the connection closes after. */
function refuseMethod(request, response, served) {
  const body = JSON.stringify({
    error: {
      code: "method_not_allowed:http",
      message: `Cadre does not answer ${String(request.method).slice(0, 20)} requests here; it answers ${served.join(", ")}.`,
    },
  });
  response.writeHead(405, {
    ...SECURITY_HEADERS,
    allow: served.join(", "),
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    connection: "close",
  });
  response.end(body);
}

for (const Server of [http.Server, https.Server]) {
  const prototype = Server.prototype;
  if (prototype[stamped]) continue;
  const emit = prototype.emit;
  prototype.emit = function emitWithClientAddress(event, request, response, ...rest) {
    if (event === "request" && request?.headers) {
      request.headers[HEADER] = request.socket?.remoteAddress ?? "";
      const served = methodsServedAt(request.url);
      if (response && !served.includes(request.method)) {
        refuseMethod(request, response, served);
        return true;
      }
      if (response && hasBody(request) && !decodablePath(request.url)) {
        refuseUndecodable(request, response);
        return true;
      }
    }
    return emit.call(this, event, request, response, ...rest);
  };
  prototype[stamped] = true;
}
