"use client";

import { useState, type FormEvent } from "react";
import { errorMessageFrom } from "@/lib/client/api-client";

export function SignInForm({ returnTo }: { returnTo: string }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const signIn = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const password = String(new FormData(event.currentTarget).get("password") ?? "");
    if (!password) return setError("Enter the password.");
    setBusy(true);
    setError(null);
    try {
      const response = await fetch("/api/auth/sign-in", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ password }),
        cache: "no-store",
      });
      if (response.ok) {
        // A full load, so the layout and every server component render signed in.
        window.location.assign(returnTo);
        return;
      }
      setError(errorMessageFrom(await response.text(), `The server answered ${response.status}.`));
    } catch (cause) {
      setError(`Could not reach the Cadre server (${cause instanceof Error ? cause.message : cause}). Is it running?`);
    }
    setBusy(false);
  };

  return (
    <form className="card form" onSubmit={signIn} noValidate>
      <label className="field">
        <span>Password</span>
        <input
          name="password"
          type="password"
          autoComplete="current-password"
          required
          // biome-ignore lint/a11y/noAutofocus: the page's one field, and signing in is all it is for
          autoFocus
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? "sign-in-error" : undefined}
        />
      </label>
      {error && (
        <div id="sign-in-error" className="error-note" role="alert">
          {error}
        </div>
      )}
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={busy} aria-busy={busy}>
          Sign in
        </button>
      </div>
    </form>
  );
}
