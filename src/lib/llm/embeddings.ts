import "server-only";
import { endianness } from "node:os";
import { createOpenAI } from "@ai-sdk/openai";
import type { EmbeddingModelV4 } from "@ai-sdk/provider";
import { env, type Env } from "@/lib/env";
import { OFFLINE_EMBEDDING_DIMENSIONS, OfflineEmbeddingModel } from "./offline-model";
import { usingOfflineModel } from "./provider";

/**
 * The model knowledge is embedded with. Vectors are compared only within one space: the same
 * model id and the same length (a stored vector records both, see knowledge_items.embedding_model).
 */
export type EmbeddingChoice = {
  model: EmbeddingModelV4;
  /** The model id as usage rows and stored vectors name it. */
  modelId: string;
  /** The length asked for (EMBEDDING_DIMENSIONS); null: the model's own. */
  dimensions: number | null;
  /** "offline": the built-in hashed embedding, whose similarities run on a scale of their own (see knowledge-recall.ts). */
  kind: "openai" | "openai-compatible" | "offline";
};

const DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small";

/** The built-in local embedding: no network, no cost, a fixed length. */
export function offlineEmbeddingChoice(): EmbeddingChoice {
  return {
    model: new OfflineEmbeddingModel(),
    modelId: "offline",
    dimensions: OFFLINE_EMBEDDING_DIMENSIONS,
    kind: "offline",
  };
}

/**
 * The embedding model on the provider chooseModel talks to: OPENAI_BASE_URL's server, or
 * OpenAI itself with only OPENAI_API_KEY; the offline embedding with neither, or when
 * EMBEDDING_MODEL is `offline`.
 */
export function chooseEmbeddingModel(
  config: Pick<Env, "OPENAI_API_KEY" | "OPENAI_BASE_URL" | "EMBEDDING_MODEL" | "EMBEDDING_DIMENSIONS"> = env(),
): EmbeddingChoice {
  const modelId = config.EMBEDDING_MODEL ?? DEFAULT_EMBEDDING_MODEL;
  if (modelId.toLowerCase() === "offline" || usingOfflineModel(config)) return offlineEmbeddingChoice();
  const provider = createOpenAI({
    baseURL: config.OPENAI_BASE_URL,
    // Local servers ignore the key, but the client insists on sending one.
    apiKey: config.OPENAI_API_KEY ?? "not-needed",
  });
  return {
    model: provider.embedding(modelId),
    modelId,
    dimensions: config.EMBEDDING_DIMENSIONS ?? null,
    kind: config.OPENAI_BASE_URL ? "openai-compatible" : "openai",
  };
}

// One choice per process (kept on globalThis across dev reloads): recall remembers query vectors per choice.
const holder = globalThis as typeof globalThis & { cadreEmbedding?: EmbeddingChoice };

/** The environment's embedding model (chooseEmbeddingModel), made once per process. */
export function configuredEmbedding(): EmbeddingChoice {
  holder.cadreEmbedding ??= chooseEmbeddingModel();
  return holder.cadreEmbedding;
}

/** A text's vector and the space it lives in. */
export type Embedding = { vector: Float32Array; model: string; dimensions: number };

/** The vector scaled to length 1, so a dot product is the cosine similarity whatever the provider returned. */
function normalized(values: readonly number[]): Float32Array {
  const vector = Float32Array.from(values);
  let sum = 0;
  for (const value of vector) sum += value * value;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
  return vector;
}

export function embeddingOf(choice: EmbeddingChoice, values: readonly number[]): Embedding {
  return { vector: normalized(values), model: choice.modelId, dimensions: values.length };
}

export function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

const LITTLE_ENDIAN = endianness() === "LE";

/** How a vector is stored (knowledge_items.embedding): float32, little-endian, 4 bytes a dimension. */
export function vectorBytes(vector: Float32Array): Buffer {
  if (LITTLE_ENDIAN) return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
  const bytes = Buffer.alloc(vector.length * 4);
  for (const [i, value] of vector.entries()) bytes.writeFloatLE(value, i * 4);
  return bytes;
}

/**
 * A stored vector read into `into` (its length): a copy, since a buffer read off the wire
 * need not be aligned for a Float32Array over it.
 */
export function readVector(bytes: Uint8Array, offset: number, into: Float32Array): Float32Array {
  if (LITTLE_ENDIAN) {
    new Uint8Array(into.buffer, into.byteOffset, into.byteLength).set(bytes.subarray(offset, offset + into.byteLength));
  } else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let i = 0; i < into.length; i++) into[i] = view.getFloat32(offset + i * 4, true);
  }
  return into;
}

/**
 * Reads stored vectors into `into`, again and again, allocating nothing a vector (a stream of
 * 100 000 of them is read this way, knowledge-embeddings.ts).
 */
export function vectorReader(into: Float32Array): (bytes: Buffer, offset: number) => Float32Array {
  if (!LITTLE_ENDIAN) return (bytes, offset) => readVector(bytes, offset, into);
  const view = new Uint8Array(into.buffer, into.byteOffset, into.byteLength);
  return (bytes, offset) => {
    bytes.copy(view, 0, offset, offset + view.length);
    return into;
  };
}
