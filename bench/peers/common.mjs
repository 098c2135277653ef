// Shared by the peers' harnesses: arguments, the side-effect table and the report to the parent.
import pg from "pg";

export const args = Object.fromEntries(process.argv.slice(2).map((arg) => arg.replace(/^--/, "").split("=")));
export const steps = Number(args.steps ?? 50);
export const sessions = Number(args.sessions ?? 3);
export const now = () => performance.now();
export const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

/**
 * The tool's side effect in crash runs: one row per execution, in a table of its own, so
 * the parent can count effects that ran twice. Outside the framework's transaction: it is
 * the "outside world" the tool acts on.
 */
export async function effects(url) {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  await pool.query("create table if not exists peer_effects (peer text not null, thread text not null, step int not null, at timestamptz not null default clock_timestamp())");
  return { record: (peer, thread, step) => pool.query("insert into peer_effects (peer, thread, step) values ($1, $2, $3)", [peer, thread, step]), close: () => pool.end() };
}

/** Gaps between a model call's answer and the next call: the framework's own per-step work. */
export function gapsOf(calledAt, answeredAt) {
  const gaps = [];
  for (let i = 1; i < calledAt.length; i++) gaps.push(calledAt[i] - answeredAt[i - 1]);
  return gaps;
}

/** Never resolves: the "model" keeps thinking while the parent kills the process. */
export const forever = () => new Promise(() => {});
