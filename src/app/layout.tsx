import type { Metadata, Viewport } from "next";
import type { ReactNode } from "react";
import { LiveEventsProvider } from "@/components/live-events";
import { Nav } from "@/components/nav";
import { usingOfflineModel } from "@/lib/llm/provider";
import "./globals.css";

export const dynamic = "force-dynamic";

export const metadata: Metadata = {
  title: { default: "Cadre", template: "%s · Cadre" },
  description: "Teams of LLM agents that keep working while you are away.",
};

export const viewport: Viewport = { width: "device-width", initialScale: 1 };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <a href="#main" className="skip-link">
          Skip to content
        </a>
        <LiveEventsProvider>
          <div className="shell">
            <Nav offline={usingOfflineModel()} />
            <main id="main" className="content">
              {children}
            </main>
          </div>
        </LiveEventsProvider>
      </body>
    </html>
  );
}
