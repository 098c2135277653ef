import type { ReactNode } from "react";
import { findTeam, notFoundUnless } from "@/app/found";

/** An unknown team is a 404 before the page streams (see app/found.ts); the team's pages sit under it. */
export default async function TeamLayout({
  params,
  children,
}: {
  params: Promise<{ teamId: string }>;
  children: ReactNode;
}) {
  await notFoundUnless(async () => findTeam((await params).teamId));
  return children;
}
