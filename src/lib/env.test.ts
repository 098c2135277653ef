import { describe, expect, it } from "vitest";
import { parseEnv, publicUrl, smtpSettings } from "./env";
import { chooseEmbeddingModel } from "./llm/embeddings";

describe("TRUST_PROXY", () => {
  it("is off unless set to a yes, and names itself when it is neither yes nor no", () => {
    expect(parseEnv({}).TRUST_PROXY).toBe(false);
    expect(parseEnv({ TRUST_PROXY: "" }).TRUST_PROXY).toBe(false);
    for (const value of ["1", "true", "TRUE", "yes", " 1 "])
      expect(parseEnv({ TRUST_PROXY: value }).TRUST_PROXY, value).toBe(true);
    for (const value of ["0", "false", "no"]) expect(parseEnv({ TRUST_PROXY: value }).TRUST_PROXY, value).toBe(false);
    expect(() => parseEnv({ TRUST_PROXY: "nginx" })).toThrow(/TRUST_PROXY: must be 1 or 0/);
  });
});

describe("notification settings", () => {
  it("takes PUBLIC_URL as an http(s) URL without its trailing slash, else the web server's own address", () => {
    expect(publicUrl(parseEnv({ PUBLIC_URL: "https://cadre.example.com/" }))).toBe("https://cadre.example.com");
    expect(publicUrl(parseEnv({ PORT: "4000" }))).toBe("http://localhost:4000");
    expect(() => parseEnv({ PUBLIC_URL: "cadre.example.com" })).toThrow(/PUBLIC_URL must be an http\(s\) URL/);
    expect(() => parseEnv({ PUBLIC_URL: "ftp://cadre.example.com" })).toThrow(/PUBLIC_URL must be an http\(s\) URL/);
  });

  it("needs SMTP_URL (smtp:// or smtps://) and SMTP_FROM together", () => {
    expect(smtpSettings(parseEnv({}))).toBeNull();
    expect(
      smtpSettings(parseEnv({ SMTP_URL: "smtps://u:p@mail.example.com:465", SMTP_FROM: "Cadre <c@example.com>" })),
    ).toEqual({
      url: "smtps://u:p@mail.example.com:465",
      from: "Cadre <c@example.com>",
    });
    expect(() => parseEnv({ SMTP_URL: "smtp://mail.example.com" })).toThrow(
      /SMTP_FROM: must be set too when SMTP_URL is/,
    );
    expect(() => parseEnv({ SMTP_FROM: "c@example.com" })).toThrow(/SMTP_URL: must be set too when SMTP_FROM is/);
    expect(() => parseEnv({ SMTP_URL: "http://mail.example.com", SMTP_FROM: "c@example.com" })).toThrow(
      /SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL/,
    );
  });
});

describe("PAGE_READ_MAX_CHARS", () => {
  it("defaults to 12000 and takes only a positive whole number", () => {
    expect(parseEnv({}).PAGE_READ_MAX_CHARS).toBe(12_000);
    expect(parseEnv({ PAGE_READ_MAX_CHARS: " 4000 " }).PAGE_READ_MAX_CHARS).toBe(4000);
    expect(() => parseEnv({ PAGE_READ_MAX_CHARS: "lots" })).toThrow(
      /PAGE_READ_MAX_CHARS: must be a positive whole number/,
    );
    expect(() => parseEnv({ PAGE_READ_MAX_CHARS: "0" })).toThrow(/PAGE_READ_MAX_CHARS/);
  });
});

describe("KNOWLEDGE_VECTOR_CACHE_MB", () => {
  it("defaults to 256, takes 0 (keep none) or a whole number, and refuses the rest", () => {
    expect(parseEnv({}).KNOWLEDGE_VECTOR_CACHE_MB).toBe(256);
    expect(parseEnv({ KNOWLEDGE_VECTOR_CACHE_MB: "0" }).KNOWLEDGE_VECTOR_CACHE_MB).toBe(0);
    expect(parseEnv({ KNOWLEDGE_VECTOR_CACHE_MB: " 1024 " }).KNOWLEDGE_VECTOR_CACHE_MB).toBe(1024);
    expect(() => parseEnv({ KNOWLEDGE_VECTOR_CACHE_MB: "1.5" })).toThrow(
      /KNOWLEDGE_VECTOR_CACHE_MB must be a whole number/,
    );
    expect(() => parseEnv({ KNOWLEDGE_VECTOR_CACHE_MB: "-1" })).toThrow(/KNOWLEDGE_VECTOR_CACHE_MB/);
  });
});

describe("OpenTelemetry", () => {
  it("is off unless OTEL_EXPORTER_OTLP_ENDPOINT is an http(s) URL", () => {
    expect(parseEnv({}).OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    expect(parseEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: " " }).OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    expect(parseEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://localhost:4318" }).OTEL_EXPORTER_OTLP_ENDPOINT).toBe(
      "http://localhost:4318",
    );
    expect(() => parseEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:4318" })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/,
    );
    expect(() => parseEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "grpc://localhost:4317" })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/,
    );
  });
});

describe("embedding settings", () => {
  it("chooses the offline embedding without a provider, the provider's model with one, and names a bad length", () => {
    expect(chooseEmbeddingModel(parseEnv({}))).toMatchObject({ modelId: "offline", dimensions: 256, kind: "offline" });
    expect(chooseEmbeddingModel(parseEnv({ OPENAI_API_KEY: "sk-test" }))).toMatchObject({
      modelId: "text-embedding-3-small",
      dimensions: null,
      kind: "openai",
    });
    const local = parseEnv({
      OPENAI_BASE_URL: "http://localhost:1234/v1",
      EMBEDDING_MODEL: "nomic-embed-text",
      EMBEDDING_DIMENSIONS: "512",
    });
    expect(chooseEmbeddingModel(local)).toMatchObject({
      modelId: "nomic-embed-text",
      dimensions: 512,
      kind: "openai-compatible",
    });
    // `offline` keeps the local embedding beside a provider that has no embedding model.
    expect(chooseEmbeddingModel(parseEnv({ OPENAI_API_KEY: "sk-test", EMBEDDING_MODEL: "offline" })).kind).toBe(
      "offline",
    );
    expect(() => parseEnv({ EMBEDDING_DIMENSIONS: "wide" })).toThrow(
      /EMBEDDING_DIMENSIONS must be a positive whole number/,
    );
    expect(() => parseEnv({ EMBEDDING_DIMENSIONS: "0" })).toThrow(/EMBEDDING_DIMENSIONS/);
  });
});
