// Mends a bug in the Postgres driver (postgres.js 3.4.9, the newest release; porsager/postgres
// #1154, #1066, #1208): when a connection closes while a write is scheduled, the driver clears
// the timer but not the variable holding it. Every later write on that connection then waits
// for a timer that never fires, so its queries time out (CONNECT_TIMEOUT) for good; and a write
// that fires after the socket is gone throws an uncaught TypeError that ends the worker.
// A Postgres failover or a killed backend under load was enough. Run as `postinstall`; each
// edit is applied once, and a driver whose code has changed is left alone (with a warning).
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const MARK = "/* cadre: closed-connection write fix */";
const edits = [
  // A write scheduled for a socket that has since closed: drop it instead of throwing.
  ["  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)", `  function nextWrite(fn) {\n    if (!socket) return (chunk = nextWriteTimer = null, false) ${MARK}\n    const x = socket.write(chunk, fn)`],
  // Closing forgets the scheduled write and its bytes (they belonged to the closed socket), so the next connection writes again.
  ["    clearImmediate(nextWriteTimer)\n    socket.removeListener('data', data)", `    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null ${MARK}\n    socket.removeListener('data', data)`],
  ["    clearImmediate(nextWriteTimer)\n    if (socket) {", `    clearImmediate(nextWriteTimer)\n    nextWriteTimer = null ${MARK}\n    if (socket) {`],
];

for (const file of ["node_modules/postgres/src/connection.js", "node_modules/postgres/cjs/src/connection.js"]) {
  const at = path.join(root, file);
  if (!existsSync(at)) continue;
  let source = readFileSync(at, "utf8");
  if (source.includes(MARK)) continue;
  const missing = edits.filter(([before]) => !source.includes(before));
  if (missing.length > 0) {
    console.warn(`[cadre] ${file} has changed; its closed-connection write fix was not applied (see scripts/patch-postgres.mjs).`);
    continue;
  }
  for (const [before, after] of edits) source = source.replace(before, after);
  writeFileSync(at, source);
}
