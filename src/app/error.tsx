"use client";

import { PageError } from "@/components/page-error";

/** A page below the root layout failed to render: it says so and retries by itself (components/page-error.tsx). */
export default function SegmentError({ error, retry }: { error: unknown; retry: () => void }) {
  return <PageError error={error} retry={retry} />;
}
