// Loaded into the web server before Next (`--import` in NODE_OPTIONS, scripts/lib/processes.ts
// webEnv): stamps every request with the address of the connection it came on, in a header of
// Cadre's own that replaces whatever a client sent under that name. Next gives route handlers
// no connection address, and the X-Forwarded-For it passes on is the client's own say whenever
// the client sent one; sign-in throttling (src/lib/auth-rules.ts clientAddress) needs the truth.
import http from "node:http";
import https from "node:https";

/** Also in src/lib/auth-rules.ts (CLIENT_ADDRESS_HEADER). */
const HEADER = "x-cadre-client-address";
const stamped = Symbol.for("cadre.clientAddressStamped");

for (const Server of [http.Server, https.Server]) {
  const prototype = Server.prototype;
  if (prototype[stamped]) continue;
  const emit = prototype.emit;
  prototype.emit = function emitWithClientAddress(event, request, ...rest) {
    if (event === "request" && request?.headers) request.headers[HEADER] = request.socket?.remoteAddress ?? "";
    return emit.call(this, event, request, ...rest);
  };
  prototype[stamped] = true;
}
