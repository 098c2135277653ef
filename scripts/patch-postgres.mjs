// Two edits to the Postgres driver (postgres.js 3.4.9, the newest release), run as `postinstall`.
// Each is applied once (its mark says so), and a driver whose code has changed is left alone,
// with a warning.
//
// 1. A bug (porsager/postgres #1154, #1066, #1208): when a connection closes while a write is
//    scheduled, the driver clears the timer but not the variable holding it. Every later write
//    on that connection then waits for a timer that never fires, so its queries time out
//    (CONNECT_TIMEOUT) for good; and a write that fires after the socket is gone throws an
//    uncaught TypeError that ends the worker. A Postgres failover or a killed backend under
//    load was enough.
// 2. When a query goes out. The driver gathers the queries of one tick into one write, sent by
//    setImmediate: after every promise callback queued meanwhile has run. A work session sends a
//    tool's result and then goes on preparing the next model call, so the result waited for all
//    of that (0.25 ms of a 1.9 ms tool round on the benchmark machine) before it left. A
//    microtask sends the bytes as soon as the code that queued them yields: queries made
//    together still go out together, and the immediate stays as the fallback it was.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const patches = [
  {
    mark: "/* cadre: closed-connection write fix */",
    edits: (mark) => [
      // A write scheduled for a socket that has since closed: drop it instead of throwing.
      ["  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)", `  function nextWrite(fn) {\n    if (!socket) return (chunk = nextWriteTimer = null, false) ${mark}\n    const x = socket.write(chunk, fn)`],
      // Closing forgets the scheduled write and its bytes (they belonged to the closed socket), so the next connection writes again.
      ["    clearImmediate(nextWriteTimer)\n    socket.removeListener('data', data)", `    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null ${mark}\n    socket.removeListener('data', data)`],
      ["    clearImmediate(nextWriteTimer)\n    if (socket) {", `    clearImmediate(nextWriteTimer)\n    nextWriteTimer = null ${mark}\n    if (socket) {`],
    ],
  },
  {
    mark: "/* cadre: write when the caller yields */",
    edits: (mark) => [
      // nextWrite clears the immediate; a connection that closed meanwhile has no timer left, and nothing is sent.
      [
        "    nextWriteTimer === null && (nextWriteTimer = setImmediate(nextWrite))\n",
        `    nextWriteTimer === null && (nextWriteTimer = setImmediate(nextWrite), queueMicrotask(() => nextWriteTimer !== null && nextWrite())) ${mark}\n`,
      ],
    ],
  },
];

for (const file of ["node_modules/postgres/src/connection.js", "node_modules/postgres/cjs/src/connection.js"]) {
  const at = path.join(root, file);
  if (!existsSync(at)) continue;
  let source = readFileSync(at, "utf8");
  for (const { mark, edits } of patches) {
    if (source.includes(mark)) continue;
    const pairs = edits(mark);
    if (pairs.some(([before]) => !source.includes(before))) {
      console.warn(`[cadre] ${file} has changed; the edit marked ${mark} was not applied (see scripts/patch-postgres.mjs).`);
      continue;
    }
    for (const [before, after] of pairs) source = source.replace(before, after);
  }
  writeFileSync(at, source);
}
