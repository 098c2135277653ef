import net from "node:net";

/**
 * A TCP proxy in front of Postgres that counts what passes: connections (open now, most
 * at once, in all) and statements, read from the frontend protocol. A statement is a
 * simple Query ('Q') or an extended-protocol Bind ('B', one per execution of a prepared or
 * unnamed statement), named by the text its Parse ('P') gave. Point a process's
 * DATABASE_URL at `url(…)` and every statement it sends is counted, pg-boss's included,
 * with nothing in the process changed.
 */
export class PgProxy {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  open = 0;
  peakOpen = 0;
  connections = 0;
  /** "cadre|text" or "pg-boss|text" (whitespace folded, cut at 160 characters) → executions. */
  readonly statements = new Map<string, number>();

  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
    server: net.Server,
  ) {
    this.server = server;
  }

  static async start(targetUrl: string): Promise<PgProxy> {
    const target = new URL(targetUrl);
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const proxy = new PgProxy(
      { host: target.hostname, port: Number(target.port || 5432) },
      (server.address() as net.AddressInfo).port,
      server,
    );
    server.on("connection", (client) => proxy.accept(client));
    return proxy;
  }

  /** `url` with its host and port replaced by this proxy's. */
  url(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = "127.0.0.1";
    url.port = String(this.port);
    return url.toString();
  }

  get total(): number {
    let sum = 0;
    for (const count of this.statements.values()) sum += count;
    return sum;
  }

  /** Counts since the last reset (connections that stay open keep counting as open). */
  reset(): void {
    this.statements.clear();
    this.connections = 0;
    this.peakOpen = this.open;
  }

  /** The statements seen, most frequent first. */
  top(limit = 10): [string, number][] {
    return [...this.statements].sort((a, b) => b[1] - a[1]).slice(0, limit);
  }

  /** Sum of the counts whose text matches. */
  count(matches: (text: string) => boolean): number {
    let sum = 0;
    for (const [text, count] of this.statements) if (matches(text)) sum += count;
    return sum;
  }

  private accept(client: net.Socket): void {
    this.sockets.add(client);
    const upstream = net.connect(this.target.port, this.target.host);
    this.sockets.add(upstream);
    this.open += 1;
    this.connections += 1;
    this.peakOpen = Math.max(this.peakOpen, this.open);
    // postgres-js (Cadre's own queries) names itself in the startup message; node-postgres (pg-boss) does not.
    let source: Source = "pg-boss";
    const parser = new FrontendParser(
      (text) => {
        const key = `${source}|${text}`;
        this.statements.set(key, (this.statements.get(key) ?? 0) + 1);
      },
      (parameters) => {
        source = parameters.get("application_name") === "postgres.js" ? "cadre" : "pg-boss";
      },
    );
    client.on("data", (chunk: Buffer) => {
      parser.push(chunk);
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => client.write(chunk));
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      this.open -= 1;
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on("close", close);
    upstream.on("close", close);
    client.on("error", close);
    upstream.on("error", close);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/** Splits the client's byte stream into messages and reports each statement's text. */
class FrontendParser {
  private buffer: Buffer = Buffer.alloc(0);
  private started = false;
  private readonly prepared = new Map<string, string>();

  constructor(
    private readonly onStatement: (text: string) => void,
    private readonly onStartup: (parameters: Map<string, string>) => void,
  ) {}

  push(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      if (!this.started) {
        // Untyped: SSL/GSS requests, then the startup message.
        if (this.buffer.length < 8) return;
        const length = this.buffer.readInt32BE(0);
        if (this.buffer.length < length) return;
        const code = this.buffer.readInt32BE(4);
        if (code !== SSL_REQUEST && code !== GSSENC_REQUEST)
          this.onStartup(startupParameters(this.buffer.subarray(8, length)));
        this.buffer = this.buffer.subarray(length);
        // After an SSL request the server may switch to TLS; then nothing more can be read (not used here).
        if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) this.started = true;
        continue;
      }
      if (this.buffer.length < 5) return;
      const length = this.buffer.readInt32BE(1);
      if (this.buffer.length < 1 + length) return;
      const type = String.fromCharCode(this.buffer[0]!);
      const body = this.buffer.subarray(5, 1 + length);
      this.buffer = this.buffer.subarray(1 + length);
      this.message(type, body);
    }
  }

  private message(type: string, body: Buffer): void {
    if (type === "Q") this.onStatement(fold(cString(body, 0)[0]));
    else if (type === "P") {
      const [name, next] = cString(body, 0);
      this.prepared.set(name, fold(cString(body, next)[0]));
    } else if (type === "B") {
      const [, next] = cString(body, 0); // portal
      const [statement] = cString(body, next);
      this.onStatement(this.prepared.get(statement) ?? "(unknown prepared statement)");
    }
  }
}

function startupParameters(body: Buffer): Map<string, string> {
  const parameters = new Map<string, string>();
  let at = 0;
  while (at < body.length && body[at] !== 0) {
    const [key, next] = cString(body, at);
    const [value, after] = cString(body, next);
    parameters.set(key, value);
    at = after;
  }
  return parameters;
}

function cString(buffer: Buffer, start: number): [string, number] {
  const end = buffer.indexOf(0, start);
  return [buffer.toString("utf8", start, end), end + 1];
}

function fold(text: string): string {
  return text.replace(/\s+/g, " ").trim().slice(0, 160);
}

type Source = "cadre" | "pg-boss";
/** What kind of statement a key of `statements` is, for the idle and scale figures: Cadre's own, pg-boss fetching jobs (its polling), or the rest of pg-boss (supervision, cron, stats, the LISTEN heartbeat). */
export function statementKind(key: string): "cadre" | "pg-boss fetch" | "pg-boss maintenance" {
  if (key.startsWith("cadre|")) return "cadre";
  return /^pg-boss\|WITH next AS \(/i.test(key) ? "pg-boss fetch" : "pg-boss maintenance";
}
