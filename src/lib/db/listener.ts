import "server-only";
// A LISTEN that comes back. postgres.js re-listens once when its LISTEN connection closes, and
// gives up silently when that one attempt fails — as it does while the server is at its
// connection limit or restarting — so live updates (web) or instant Stops (worker) would stay
// deaf until the process restarts. Here a dedicated connection listens, and a heartbeat on that
// same connection asks Postgres whether it still listens (the way pg-boss keeps its own LISTEN),
// listening again when not.
import postgres from "postgres";
import { describeForLog } from "@/lib/telemetry/log";
import { postgresJsSettings } from "./connection-target";
import { databaseUnavailableReason } from "./errors";

export type Listener = {
  /** Ends the heartbeat and closes the connection. */
  stop: () => Promise<void>;
};

export type ListenOptions = {
  /** Called after the LISTEN was lost and is back: what was announced in between reached nobody. */
  onReconnect?: () => void;
  /** One line when the LISTEN is lost and when it is back; the cause with the first. */
  log: (line: string) => void;
  /** What this LISTEN is for, in the log lines ("live updates", "Stop requests"). */
  purpose: string;
  /** How often the heartbeat asks (ms); a lost LISTEN is back within about this long once the server has room. */
  heartbeatMs?: number;
};

const DEFAULT_HEARTBEAT_MS = 5_000;

/**
 * Listens on `channel` with a connection of its own and keeps listening: resolves once the
 * first LISTEN is in place (throws when it cannot be, as at start-up), then checks every few
 * seconds and after the connection closes, and listens again as soon as the server lets it.
 */
export async function listenWithRecovery(
  url: string,
  channel: string,
  onNotify: (payload: string) => void,
  options: ListenOptions,
): Promise<Listener> {
  let stopped = false;
  let lost = false;
  let checking: Promise<void> | undefined;
  let soon: NodeJS.Timeout | undefined;

  // `onnotify` is the connection option postgres.js's own listen() uses; its types leave it out.
  // tests/integration/connection-limit.test.ts fails if a release stops honouring it.
  const connectionOptions: postgres.Options<Record<string, never>> & {
    onnotify: (channel: string, payload: string) => void;
  } = {
    max: 1,
    idle_timeout: 0,
    max_lifetime: null,
    fetch_types: false,
    connect_timeout: 10,
    onnotice: () => {},
    onnotify: (name, payload) => {
      if (name === channel) onNotify(payload);
    },
    // The connection went (an administrator, a restart, a network cut): look again shortly
    // rather than at the next heartbeat.
    onclose: () => {
      if (stopped || soon) return;
      soon = setTimeout(() => {
        soon = undefined;
        void check();
      }, 1_000);
      soon.unref();
    },
  };
  const target = postgresJsSettings(url);
  const sql = postgres(target.url, { ...connectionOptions, ssl: target.ssl, prepare: target.prepare });
  const listen = () => sql.unsafe(`listen "${channel.replaceAll('"', '""')}"`);

  function check(): Promise<void> {
    checking ??= (async () => {
      try {
        // On a connection that closed, this query opens a new one, which listens to nothing.
        const [row] = await sql<
          { listening: boolean }[]
        >`select ${channel} = any(array(select pg_listening_channels())) as listening`;
        if (row?.listening) return;
        await listen();
        if (stopped) return;
        options.log(`listening for ${options.purpose} again${lost ? "" : " (the connection had closed)"}.`);
        lost = false;
        options.onReconnect?.();
      } catch (error) {
        if (stopped || lost) return;
        lost = true;
        const why = databaseUnavailableReason(error) ?? describeForLog(error);
        options.log(
          `lost the LISTEN for ${options.purpose} (${why}); trying again every ${Math.round(heartbeatMs / 1000)} s.`,
        );
      } finally {
        checking = undefined;
      }
    })();
    return checking;
  }

  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  try {
    await listen();
  } catch (error) {
    stopped = true;
    await sql.end({ timeout: 0 }).catch(() => {});
    throw error;
  }
  const heartbeat = setInterval(() => void check(), heartbeatMs);
  heartbeat.unref();

  return {
    stop: async () => {
      stopped = true;
      clearInterval(heartbeat);
      if (soon) clearTimeout(soon);
      await checking?.catch(() => {});
      await sql.end({ timeout: 1 }).catch(() => {});
    },
  };
}
