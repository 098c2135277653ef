import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { hasPageSession, signInRequired } from "@/lib/auth/auth";
import { safeReturnPath } from "@/lib/auth/auth-rules";
import { SignInForm } from "./sign-in-form";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Sign in" };

type Props = { searchParams: Promise<{ next?: string | string[] }> };

export default async function SignInPage({ searchParams }: Props) {
  const { next } = await searchParams;
  const returnTo = safeReturnPath(Array.isArray(next) ? next[0] : next);
  // Nothing to do here when sign-in is off or already done.
  if (!signInRequired() || (await hasPageSession())) redirect(returnTo);
  return (
    <div className="page page-sign-in">
      <header className="page-header">
        <div>
          <h1>Sign in</h1>
          <p className="lede">This Cadre is protected by a password (APP_PASSWORD).</p>
        </div>
      </header>
      <SignInForm returnTo={returnTo} />
    </div>
  );
}
