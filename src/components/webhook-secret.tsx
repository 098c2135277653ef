"use client";

import { useEffect, useId, useRef, useState, useSyncExternalStore, type ReactNode } from "react";
import { api, ApiError, messageOf } from "@/lib/client/api-client";
import { ErrorNote, LocalTime } from "./ui";

type Status = { configured: boolean; createdAt: string | null };

/** How senders sign a delivery; passed from the server (src/lib/http/webhooks.ts) so it is said in one place. */
export type WebhookSigning = {
  timestampHeader: string;
  signatureHeader: string;
  nameHeader: string;
  toleranceSeconds: number;
};

const noSubscription = () => () => {};

/** window.location.origin once hydrated ("" on the server, which cannot know how the browser reached it). */
function useOrigin(): string {
  return useSyncExternalStore(
    noSubscription,
    () => window.location.origin,
    () => "",
  );
}

/** The clipboard API needs a secure context (https or localhost); a LAN install on plain http falls back to execCommand. */
async function copyText(text: string, field: HTMLInputElement | null): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    if (!field) return false;
    field.focus();
    field.select();
    try {
      return document.execCommand("copy");
    } catch {
      return false;
    }
  }
}

/** A read-only field with a copy button: secrets shown once, URLs to paste elsewhere. */
export function CopyField({
  label,
  value,
  buttonLabel,
  autoFocus = false,
}: {
  label: string;
  value: string;
  buttonLabel: string;
  autoFocus?: boolean;
}) {
  const id = useId();
  const field = useRef<HTMLInputElement>(null);
  // What the last copy gave, for the value it copied: a new value (a rotated secret) says nothing yet.
  const [copy, setCopy] = useState<{ of: string; copied: "yes" | "no" } | null>(null);
  const copied = copy?.of === value ? copy.copied : null;
  useEffect(() => {
    if (autoFocus) field.current?.select();
  }, [autoFocus]);
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <div className="copy-row">
        <input
          id={id}
          ref={field}
          className="mono"
          readOnly
          value={value}
          spellCheck={false}
          autoComplete="off"
          onFocus={(event) => event.currentTarget.select()}
        />
        <button
          type="button"
          className="button"
          onClick={async () => setCopy({ of: value, copied: (await copyText(value, field.current)) ? "yes" : "no" })}
        >
          {buttonLabel}
        </button>
      </div>
      <span className="hint" aria-live="polite">
        {copied === "yes"
          ? "Copied to the clipboard."
          : copied === "no"
            ? "Could not copy: select the text and copy it yourself."
            : ""}
      </span>
    </div>
  );
}

/**
 * The team's webhook secret (README "Sign-in and webhooks"): whether one is configured,
 * create / rotate (the new secret is shown once, here, and never again), remove, and how a
 * sender signs a delivery to this team's endpoint.
 */
/** A secret shown once: copy it, read why it matters, say it is saved. */
export function SecretReveal({
  label,
  value,
  onDone,
  children,
}: {
  label: string;
  value: string;
  onDone: () => void;
  children: ReactNode;
}) {
  return (
    <div className="secret-reveal">
      <CopyField label={label} value={value} buttonLabel="Copy secret" autoFocus />
      <p className="notice" role="status">
        {children}
      </p>
      <div className="form-actions">
        <button type="button" className="button" onClick={onDone}>
          I have saved it
        </button>
      </div>
    </div>
  );
}

export function WebhookSecretPanel({
  teamId,
  initial,
  signing,
}: {
  teamId: string;
  initial: Status;
  signing: WebhookSigning;
}) {
  const origin = useOrigin();
  const [status, setStatus] = useState<Status>(initial);
  const [secret, setSecret] = useState<string | null>(null);
  const [busy, setBusy] = useState<"create" | "remove" | null>(null);
  const [error, setError] = useState<string | null>(null);
  // A re-render of the page (live events) brings the database's word: take it.
  useEffect(
    () => setStatus({ configured: initial.configured, createdAt: initial.createdAt }),
    [initial.configured, initial.createdAt],
  );

  const endpoint = `${origin}/api/hooks/${teamId}`;
  const url = `/api/teams/${teamId}/webhook-secret`;

  const create = async () => {
    if (
      status.configured &&
      !window.confirm("Rotate the webhook secret? The current secret stops working at once: senders need the new one.")
    )
      return;
    setBusy("create");
    setError(null);
    try {
      const body = await api<{ secret: string; createdAt: string }>(url, { method: "POST" });
      setSecret(body.secret);
      setStatus({ configured: true, createdAt: body.createdAt });
    } catch (cause) {
      setError(messageOf(cause));
    } finally {
      setBusy(null);
    }
  };

  const remove = async () => {
    if (!window.confirm("Remove the webhook secret? Webhooks to this team are refused until you create a new one."))
      return;
    setBusy("remove");
    setError(null);
    try {
      await api(url, { method: "DELETE" });
    } catch (cause) {
      // Already gone (another tab) is what was asked for.
      if (!(cause instanceof ApiError && cause.status === 404)) {
        setError(messageOf(cause));
        setBusy(null);
        return;
      }
    }
    setSecret(null);
    setStatus({ configured: false, createdAt: null });
    setBusy(null);
  };

  const minutes = Math.round(signing.toleranceSeconds / 60);
  const example = [
    `SECRET='whsec_…'  # the secret shown once above`,
    `BODY='{"name":"deploy","status":"failed"}'`,
    `TS=$(date +%s)`,
    `SIG=$(printf '%s.%s' "$TS" "$BODY" | openssl dgst -sha256 -hmac "$SECRET" -hex | sed 's/^.* //')`,
    `curl -X POST '${endpoint}' \\`,
    `  -H 'content-type: application/json' \\`,
    `  -H "${signing.timestampHeader}: $TS" \\`,
    `  -H "${signing.signatureHeader}: sha256=$SIG" \\`,
    `  -d "$BODY"`,
  ].join("\n");

  return (
    <div className="card webhooks">
      <p className="webhook-status" data-testid="webhook-status">
        {status.configured ? (
          <>
            <span className="pill pill-live">on</span> A secret is configured
            {status.createdAt && (
              <>
                {" "}
                (created <LocalTime value={status.createdAt} />)
              </>
            )}
            : signed deliveries reach the lead.
          </>
        ) : (
          <>
            <span className="pill">off</span> No secret yet: webhooks to this team are refused. Create one to let other
            systems (CI, monitoring, a script) tell the lead about events.
          </>
        )}
      </p>

      {secret && (
        <SecretReveal label="New webhook secret" value={secret} onDone={() => setSecret(null)}>
          Copy it now and keep it with the sender: <strong>you will not see it again.</strong> If it is lost, rotate it.
        </SecretReveal>
      )}

      <CopyField label="Endpoint URL" value={endpoint} buttonLabel="Copy URL" />

      {/* Open by itself right after a secret is made: signing is the next thing to do. */}
      <details className="webhook-help" key={secret ? "open" : "closed"} open={secret ? true : undefined}>
        <summary>How to sign a delivery</summary>
        <p>
          POST the body to the endpoint with <code>{signing.timestampHeader}</code> (unix seconds) and{" "}
          <code>{signing.signatureHeader}</code>: <code>sha256=</code> and the hex HMAC-SHA256 of{" "}
          <code>{"<timestamp>.<raw body>"}</code>, keyed with the whole secret (<code>whsec_</code> included). A
          timestamp more than {minutes} minutes off is refused, and each delivery is accepted once. The body&apos;s{" "}
          <code>name</code> (or a <code>{signing.nameHeader}</code> header) labels it in the lead&apos;s work log as{" "}
          <code>[webhook:NAME]</code>.
        </p>
        <figure className="code-figure" aria-label="Signing example (shell)">
          <pre className="code-block">
            <code>{example}</code>
          </pre>
        </figure>
      </details>

      {error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
      <div className="form-actions">
        {status.configured && (
          <button
            type="button"
            className="button button-quiet button-danger-text"
            onClick={remove}
            disabled={busy !== null}
          >
            {busy === "remove" ? "Removing…" : "Remove secret"}
          </button>
        )}
        <button
          type="button"
          className={status.configured ? "button" : "button button-primary"}
          onClick={create}
          disabled={busy !== null}
        >
          {busy === "create" ? "Creating…" : status.configured ? "Rotate secret" : "Create webhook secret"}
        </button>
      </div>
    </div>
  );
}
