"use client";

import { PageError } from "@/components/page-error";
import "./globals.css";

/**
 * Even the root layout failed (with APP_PASSWORD set it asks the database for the session):
 * the same retrying page in a document of its own, without the navigation.
 */
export default function GlobalError({ error, retry }: { error: unknown; retry: () => void }) {
  return (
    <html lang="en">
      <body>
        <main id="main" className="content">
          <PageError error={error} retry={retry} />
        </main>
      </body>
    </html>
  );
}
