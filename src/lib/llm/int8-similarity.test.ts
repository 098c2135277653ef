import { describe, expect, it } from "vitest";
import { int8Codes, int8Query, int8Similarities, strideOf } from "./int8-similarity";

/** A seeded generator, so a failure reads the same twice. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return state / 2 ** 32;
  };
}

function normalized(values: number[]): Float32Array {
  const norm = Math.sqrt(values.reduce((sum, value) => sum + value * value, 0)) || 1;
  return Float32Array.from(values, (value) => value / norm);
}

function exactDot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

/** Every similarity the kernel reports for `vectors` against `query`, by index. */
function kernelSimilarities(query: Float32Array, vectors: Float32Array[], skip = (_i: number) => false) {
  const stride = strideOf(query.length);
  const codes = new Int8Array(vectors.length * stride);
  const scales = new Float32Array(vectors.length);
  vectors.forEach((vector, i) => {
    scales[i] = int8Codes(vector, codes, i * stride);
  });
  const found = new Map<number, number>();
  int8Similarities(int8Query(query), codes, scales, vectors.length, skip, (i, similarity) => found.set(i, similarity));
  return found;
}

describe("int8 similarities by WebAssembly SIMD", () => {
  it("match the exact float32 similarities within 0.01 at any length, across the chunks it copies", () => {
    const next = random(7);
    for (const dimensions of [1, 7, 16, 100, 256, 1536, 8192]) {
      const vector = () => normalized(Array.from({ length: dimensions }, () => next() - 0.5));
      const query = vector();
      // Enough vectors to span several 1 MiB chunks at the longest length; one with all its
      // weight in one component, one of zeros (a similarity of 0), and the query itself.
      const count = dimensions >= 1536 ? 300 : 40;
      const oneHot = new Float32Array(dimensions);
      oneHot[dimensions - 1] = 1;
      const vectors = [query, oneHot, new Float32Array(dimensions), ...Array.from({ length: count }, vector)];
      const found = kernelSimilarities(query, vectors);
      expect(found.size).toBe(vectors.length);
      let worst = 0;
      vectors.forEach((each, i) => {
        worst = Math.max(worst, Math.abs(found.get(i)! - exactDot(query, each)));
      });
      expect(worst, `${dimensions} dimensions`).toBeLessThan(0.01);
      expect(found.get(0)).toBeCloseTo(1, 2);
      expect(found.get(2)).toBe(0);
    }
  });

  it("does not overflow where every product is the largest (8 192 equal components)", () => {
    const same = normalized(Array.from({ length: 8192 }, () => 1));
    expect(kernelSimilarities(same, [same]).get(0)).toBeCloseTo(1, 3);
    const opposite = same.map((value) => -value);
    expect(kernelSimilarities(same, [opposite]).get(0)).toBeCloseTo(-1, 3);
  });

  it("skips what it is told to skip", () => {
    const next = random(11);
    const vectors = Array.from({ length: 10 }, () => normalized(Array.from({ length: 64 }, () => next() - 0.5)));
    const found = kernelSimilarities(vectors[0]!, vectors, (i) => i % 2 === 1);
    expect([...found.keys()]).toEqual([0, 2, 4, 6, 8]);
  });
});
