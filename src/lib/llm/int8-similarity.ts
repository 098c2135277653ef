import "server-only";
// Similarities of many vectors kept as a byte a dimension (int8 with a scale each) to one
// query, by WebAssembly SIMD: 16 dimensions an instruction, 16 times the speed of the best
// JavaScript loop measured (100 000 vectors of 256 dimensions: 1.8 ms against 29 ms; of 1 536:
// 11 ms against 190 ms). See docs/decisions/2026-11-27-knowledge-vectors-in-memory.md.

/**
 * The module, written by hand (its text below; every byte checked by the tests, which compare
 * what it ranks with the exact float32 similarities). One function: the dot product of the
 * query (int16, at address 0) and the codes (int8) at `at`, `groups` × 16 of them:
 *
 * (module
 *   (import "env" "memory" (memory 1))
 *   (func (export "dot") (param $at i32) (param $groups i32) (result i32)
 *     (local $end i32) (local $q i32) (local $sum v128) (local $codes v128)
 *     (local.set $end (i32.add (local.get $at) (i32.shl (local.get $groups) (i32.const 4))))
 *     (loop $next
 *       (local.set $codes (v128.load (local.get $at)))
 *       (local.set $sum
 *         (i32x4.add
 *           (i32x4.add (local.get $sum)
 *             (i32x4.dot_i16x8_s (v128.load (local.get $q)) (i16x8.extend_low_i8x16_s (local.get $codes))))
 *           (i32x4.dot_i16x8_s (v128.load offset=16 (local.get $q)) (i16x8.extend_high_i8x16_s (local.get $codes)))))
 *       (local.set $q (i32.add (local.get $q) (i32.const 32)))
 *       (br_if $next (i32.lt_u (local.tee $at (i32.add (local.get $at) (i32.const 16))) (local.get $end))))
 *     (i32.add (i32.add (i32.add (i32x4.extract_lane 0 (local.get $sum)) (i32x4.extract_lane 1 (local.get $sum)))
 *       (i32x4.extract_lane 2 (local.get $sum))) (i32x4.extract_lane 3 (local.get $sum)))))
 */
const DOT_BODY = [
  [0x02, 0x02, 0x7f, 0x02, 0x7b], // locals: 2 × i32 ($end, $q), 2 × v128 ($sum, $codes)
  [0x20, 0x00, 0x20, 0x01, 0x41, 0x04, 0x74, 0x6a, 0x21, 0x02], // $end = $at + ($groups << 4)
  [0x03, 0x40], // loop $next
  [0x20, 0x00, 0xfd, 0x00, 0x04, 0x00, 0x21, 0x05], // $codes = v128.load($at)
  [0x20, 0x04], // $sum
  [0x20, 0x03, 0xfd, 0x00, 0x04, 0x00], // v128.load($q): query dimensions 0–7
  [0x20, 0x05, 0xfd, 0x87, 0x01], // i16x8.extend_low_i8x16_s($codes)
  [0xfd, 0xba, 0x01, 0xfd, 0xae, 0x01], // i32x4.dot_i16x8_s, i32x4.add
  [0x20, 0x03, 0xfd, 0x00, 0x04, 0x10], // v128.load offset=16 ($q): query dimensions 8–15
  [0x20, 0x05, 0xfd, 0x88, 0x01], // i16x8.extend_high_i8x16_s($codes)
  [0xfd, 0xba, 0x01, 0xfd, 0xae, 0x01], // i32x4.dot_i16x8_s, i32x4.add
  [0x21, 0x04], // $sum = …
  [0x20, 0x03, 0x41, 0x20, 0x6a, 0x21, 0x03], // $q += 32
  [0x20, 0x00, 0x41, 0x10, 0x6a, 0x22, 0x00], // $at += 16 (tee)
  [0x20, 0x02, 0x49, 0x0d, 0x00], // br_if $next ($at < $end)
  [0x0b], // end loop
  [0x20, 0x04, 0xfd, 0x1b, 0x00], // lane 0
  [0x20, 0x04, 0xfd, 0x1b, 0x01, 0x6a], // + lane 1
  [0x20, 0x04, 0xfd, 0x1b, 0x02, 0x6a], // + lane 2
  [0x20, 0x04, 0xfd, 0x1b, 0x03, 0x6a], // + lane 3
  [0x0b], // end func
].flat();

/** A section: its id, its size (all under 128 bytes: one LEB128 byte) and its bytes. */
const section = (id: number, bytes: number[]) => [id, bytes.length, ...bytes];
const name = (text: string) => [text.length, ...Buffer.from(text, "ascii")];

const MODULE = Uint8Array.from(
  [
    [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // \0asm, version 1
    section(1, [0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f]), // types: (i32, i32) → i32
    section(2, [0x01, ...name("env"), ...name("memory"), 0x02, 0x00, 0x01]), // import env.memory, at least 1 page
    section(3, [0x01, 0x00]), // one function, of type 0
    section(7, [0x01, ...name("dot"), 0x00, 0x00]), // export it as "dot"
    section(10, [0x01, DOT_BODY.length, ...DOT_BODY]), // its code
  ].flat(),
);

/** Vectors are kept in groups of 16 dimensions (the last padded with zeros): what the kernel reads at once. */
export function strideOf(dimensions: number): number {
  return Math.ceil(dimensions / 16) * 16;
}

/**
 * Writes `vector` as int8 codes into `codes` from `at` (its largest component ±127) and returns
 * its scale: a component is its code times the scale, to within half a step.
 */
export function int8Codes(vector: Float32Array, codes: Int8Array, at: number): number {
  // Indexed loops, not for…of: this runs for every vector read (100 000 × 256 components).
  const d = vector.length;
  let largest = 0;
  for (let j = 0; j < d; j++) {
    const value = vector[j]!;
    if (value > largest) largest = value;
    else if (-value > largest) largest = -value;
  }
  const scale = largest / 127;
  if (scale > 0) {
    const inverse = 1 / scale;
    for (let j = 0; j < d; j++) codes[at + j] = Math.round(vector[j]! * inverse);
  }
  return scale;
}

/** How many bytes of codes are compared at once (copied into the kernel's memory first). */
const CHUNK_BYTES = 1 << 20;
const PAGE = 65_536;

/**
 * The kernel with its memory: the query at address 0, a chunk of codes after it. One per
 * process and query length, reused (a search fills it and ranks in one synchronous run).
 */
class Int8Kernel {
  readonly dot: (at: number, groups: number) => number;
  readonly query: Int16Array;
  readonly codes: Int8Array;
  readonly codesAt: number;

  constructor(readonly stride: number) {
    this.codesAt = Math.ceil((stride * 2) / 64) * 64;
    const memory = new WebAssembly.Memory({ initial: Math.ceil((this.codesAt + CHUNK_BYTES) / PAGE) });
    const instance = new WebAssembly.Instance(new WebAssembly.Module(MODULE), { env: { memory } });
    this.dot = instance.exports.dot as (at: number, groups: number) => number;
    this.query = new Int16Array(memory.buffer, 0, stride);
    this.codes = new Int8Array(memory.buffer, this.codesAt, CHUNK_BYTES);
  }
}

const kernels = new Map<number, Int8Kernel>();

/** The query as the kernel reads it: int16, scaled so no sum of `stride` products can overflow an int32. */
export type Int8Query = { kernel: Int8Kernel; scale: number };

/** Writes the (normalized) query `vector` into its kernel's memory as int16, for int8Similarities. */
export function int8Query(vector: Float32Array): Int8Query {
  const stride = strideOf(vector.length);
  let kernel = kernels.get(stride);
  if (!kernel) {
    kernel = new Int8Kernel(stride);
    kernels.set(stride, kernel);
  }
  // |q| ≤ limit and |code| ≤ 127 over `stride` dimensions: the sum stays within an int32.
  const limit = Math.min(32_767, Math.floor(0x7fff_ffff / (127 * stride)));
  let largest = 0;
  for (let j = 0; j < vector.length; j++) largest = Math.max(largest, Math.abs(vector[j]!));
  const scale = largest / limit;
  kernel.query.fill(0);
  if (scale > 0) for (let j = 0; j < vector.length; j++) kernel.query[j] = Math.round(vector[j]! / scale);
  return { kernel, scale };
}

/**
 * Calls `each(i, similarity)` for the vectors `from`–`to` (exclusive) of `codes` (int8, `stride`
 * a vector) whose `skip(i)` is false: the similarity to the query is the kernel's sum times
 * the query's scale and the vector's (`scales[i]`). Synchronous: nothing else uses the kernel meanwhile.
 */
export function int8Similarities(
  query: Int8Query,
  codes: Int8Array,
  scales: Float32Array,
  count: number,
  skip: (i: number) => boolean,
  each: (i: number, similarity: number) => void,
): void {
  const { kernel } = query;
  const { stride, dot, codesAt } = kernel;
  const groups = stride / 16;
  const perChunk = Math.floor(CHUNK_BYTES / stride);
  for (let start = 0; start < count; start += perChunk) {
    const end = Math.min(count, start + perChunk);
    kernel.codes.set(codes.subarray(start * stride, end * stride));
    for (let i = start; i < end; i++) {
      if (skip(i)) continue;
      each(i, dot(codesAt + (i - start) * stride, groups) * query.scale * scales[i]!);
    }
  }
}

/** Fails at start when WebAssembly SIMD is missing (Node 16.4 and later have it): recall by meaning needs it. */
if (!WebAssembly.validate(MODULE))
  throw new Error("This Node.js has no WebAssembly SIMD, which recall by meaning needs");
