// Runs in the browser before the app hydrates (Next's client instrumentation).
import { config } from "zod/v4/core";

// Zod compiles object parsers with `new Function` when it finds eval allowed, and finding out
// means trying it: under the pages' Content-Security-Policy (no eval; src/lib/http/security-headers.ts)
// the probe is refused and reported as a violation. The browser parses little (chat streams), so
// it parses without compiling.
config({ jitless: true });
