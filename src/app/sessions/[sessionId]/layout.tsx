import type { ReactNode } from "react";
import { findWorkSession, notFoundUnless } from "@/app/found";

/** An unknown work session is a 404 before its trace streams (see app/found.ts). */
export default async function SessionLayout({
  params,
  children,
}: {
  params: Promise<{ sessionId: string }>;
  children: ReactNode;
}) {
  await notFoundUnless(async () => findWorkSession((await params).sessionId));
  return children;
}
