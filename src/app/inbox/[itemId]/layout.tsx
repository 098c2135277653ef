import type { ReactNode } from "react";
import { findInboxItem, notFoundUnless } from "@/app/found";

/** An unknown inbox item is a 404 before the page streams (see app/found.ts). */
export default async function InboxItemLayout({
  params,
  children,
}: {
  params: Promise<{ itemId: string }>;
  children: ReactNode;
}) {
  await notFoundUnless(async () => findInboxItem((await params).itemId));
  return children;
}
