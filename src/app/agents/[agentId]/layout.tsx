import type { ReactNode } from "react";
import { findAgent, notFoundUnless } from "@/app/found";

/** An unknown agent is a 404 before the page streams (see app/found.ts): its work log and its chat. */
export default async function AgentLayout({
  params,
  children,
}: {
  params: Promise<{ agentId: string }>;
  children: ReactNode;
}) {
  await notFoundUnless(async () => findAgent((await params).agentId));
  return children;
}
