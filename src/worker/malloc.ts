/**
 * glibc malloc settings for a worker process, which `npm start`, `npm run dev`, the tests and
 * the bench give it unless the environment sets them (README, *Past one machine*, for
 * `npm run worker`). A worker frees native memory of many sizes all day (V8's compilers, its
 * own bookkeeping); with glibc's defaults (an arena per thread, and a threshold for mmap that
 * rises after each large free, so later large blocks go to the heap and fragment it) its
 * resident memory after a full GC crept up by 15 % over 10 000 sessions while its live heap
 * stayed flat. With these it stays within 2 % (BENCHMARKS.md, memory). They change nothing
 * under other C libraries (musl, macOS).
 */
const WORKER_MALLOC_DEFAULTS = { MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072" } as const;

/** `env` with the malloc defaults where it sets none of its own. */
export function withWorkerMallocDefaults(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...WORKER_MALLOC_DEFAULTS, ...env };
}
