import "server-only";
// Waiting for the database at start: a Postgres that is still starting, that has no
// connections to spare, or that nothing answers for yet (a container or unit started beside
// it) is worth waiting for; a wrong password or a missing database is not.
import postgres from "postgres";
import { postgresJsSettings } from "./connection-target";
import { databaseNotReadyYet } from "./errors";
import { redactUrl } from "./migrate";

/** The first wait between attempts (seconds); doubled after each, up to WAIT_CAP_SECONDS. */
const FIRST_WAIT_SECONDS = 1;
const WAIT_CAP_SECONDS = 10;

/**
 * Resolves once the database at `url` answers `select 1`. While it is starting, full or not
 * there yet, says so in one line per attempt (`log`) and tries again after 1, 2, 4… s (at most
 * 10). Any other error is thrown as it is; still no database after `giveUpAfterSeconds` throws
 * an Error whose message is one line (the caller prints it; no stack is worth showing).
 */
export async function waitForDatabase(
  url: string,
  options: { log: (line: string) => void; giveUpAfterSeconds: number; connectTimeoutSeconds?: number },
): Promise<void> {
  const deadline = Date.now() + options.giveUpAfterSeconds * 1000;
  let waitSeconds = FIRST_WAIT_SECONDS;
  for (let attempt = 1; ; attempt++) {
    const target = postgresJsSettings(url);
    const sql = postgres(target.url, {
      ssl: target.ssl,
      prepare: target.prepare,
      max: 1,
      connect_timeout: options.connectTimeoutSeconds ?? 5,
      onnotice: () => {},
    });
    let failure: unknown;
    try {
      await sql`select 1`;
      return;
    } catch (error) {
      failure = error;
    } finally {
      await sql.end({ timeout: 1 }).catch(() => {});
    }
    const why = databaseNotReadyYet(failure);
    const where = redactUrl(url);
    if (!why) throw failure; // a wrong password, a missing database: the caller says what to check
    if (Date.now() + waitSeconds * 1000 > deadline) {
      throw new Error(`The database at ${where} is still not there after ${options.giveUpAfterSeconds} s: ${why}`, {
        cause: failure,
      });
    }
    options.log(`Waiting for the database at ${where}: ${why}; trying again in ${waitSeconds} s (attempt ${attempt}).`);
    await new Promise((resolve) => setTimeout(resolve, waitSeconds * 1000));
    waitSeconds = Math.min(waitSeconds * 2, WAIT_CAP_SECONDS);
  }
}
