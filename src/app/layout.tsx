import type { Metadata, Viewport } from "next";
import type { ReactNode } from "react";
import { LiveEventsProvider } from "@/components/live-events";
import { Nav } from "@/components/nav";
import { WorkerBanner } from "@/components/worker-banner";
import { hasPageSession, signInRequired } from "@/lib/auth/auth";
import { backgroundWorkStalled } from "@/lib/domain/health";
import { usingOfflineModel } from "@/lib/llm/provider";
import "./globals.css";

export const dynamic = "force-dynamic";

export const metadata: Metadata = {
  title: { default: "Cadre", template: "%s · Cadre" },
  description: "Teams of LLM agents that keep working while you are away.",
};

export const viewport: Viewport = { width: "device-width", initialScale: 1 };

export default async function RootLayout({ children }: { children: ReactNode }) {
  // Not requirePageSession: /sign-in shares this layout. Each page checks for itself; a
  // visitor who is not signed in gets neither the navigation nor the live event stream.
  const signedIn = await hasPageSession();
  // Work that waits with no worker to do it: a banner on every page says how to start one.
  const stalled = signedIn && (await backgroundWorkStalled());
  return (
    <html lang="en">
      <body>
        <a href="#main" className="skip-link">
          Skip to content
        </a>
        {signedIn ? (
          <LiveEventsProvider>
            <div className="shell">
              <Nav offline={usingOfflineModel()} canSignOut={signInRequired()} />
              <main id="main" className="content">
                <WorkerBanner stalled={stalled} />
                {children}
              </main>
            </div>
          </LiveEventsProvider>
        ) : (
          <div className="shell-bare">
            <header className="bare-header">
              <span className="brand">
                <span className="brand-mark" aria-hidden="true">
                  ◆
                </span>{" "}
                Cadre
              </span>
            </header>
            <main id="main" className="content">
              {children}
            </main>
          </div>
        )}
      </body>
    </html>
  );
}
