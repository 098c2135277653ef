"use client";

import { useCallback, useState, type FormEvent } from "react";
import { api, ApiError } from "@/lib/client/api-client";
import type { NotificationChannelType, NotificationKind, NotificationStatus } from "@/lib/db/schema";
import { useCoalesced, useLiveEvents } from "./live-events";
import { ErrorNote, LocalTime, StatusBadge } from "./ui";
import { useAction } from "./use-action";
import { SecretReveal } from "./webhook-secret";

/** A channel as GET /api/teams/:id/notification-channels returns it (never its secret). */
export type ChannelView = {
  id: string;
  type: NotificationChannelType;
  name: string;
  url: string | null;
  recipient: string | null;
  kinds: NotificationKind[];
  enabled: boolean;
};

export type DeliveryView = {
  id: string;
  channelName: string;
  kind: string;
  title: string;
  status: NotificationStatus;
  attempts: number;
  lastError: string | null;
  // Dates from the page, ISO strings from the API.
  createdAt: string | Date;
  sentAt: string | Date | null;
};

type Listing = { channels: ChannelView[]; deliveries: DeliveryView[] };

/** The kinds in the product's order, as the form offers them (kept here: the schema module is server-side). */
const KINDS: { kind: NotificationKind; label: string }[] = [
  { kind: "briefing", label: "Briefings" },
  { kind: "question", label: "Questions" },
  { kind: "approval", label: "Approvals" },
  { kind: "alert", label: "Alerts" },
];

/**
 * The team's notification channels (README "Notifications"): where briefings, questions,
 * approvals and alerts go outside the browser, a form to add one (a webhook's secret is shown
 * once, here), Send test, and the delivery log, which follows live events.
 */
export function NotificationChannels({
  teamId,
  initial,
  emailAvailable,
  signing,
}: {
  teamId: string;
  initial: Listing;
  /** SMTP_URL and SMTP_FROM are set on the server. */
  emailAvailable: boolean;
  signing: { timestampHeader: string; signatureHeader: string };
}) {
  const [listing, setListing] = useState<Listing>(initial);
  const [secret, setSecret] = useState<{ channel: string; value: string } | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const url = `/api/teams/${teamId}/notification-channels`;

  const reload = useCallback(async () => {
    try {
      setListing(await api<Listing>(url));
      setLoadError(null);
    } catch (error) {
      // The team was deleted meanwhile: the page's own refresh takes over.
      if (!(error instanceof ApiError && error.status === 404))
        setLoadError(error instanceof Error ? error.message : String(error));
    }
  }, [url]);
  const reloadSoon = useCoalesced(() => void reload(), 300);
  useLiveEvents((event) => {
    if (event === null || (event.table === "notifications" && event.teamId === teamId)) reloadSoon();
  });

  return (
    <div className="notifications">
      {listing.channels.length === 0 ? (
        <p className="hint">
          No channels yet: briefings, questions, approvals and alerts reach you only in the inbox. Add a webhook (Slack
          works as is) or an email address below.
        </p>
      ) : (
        <ul className="card-list">
          {listing.channels.map((channel) => (
            <li key={channel.id}>
              <ChannelCard channel={channel} onChanged={reload} />
            </li>
          ))}
        </ul>
      )}

      {secret && (
        <SecretReveal label={`Signing secret of ${secret.channel}`} value={secret.value} onDone={() => setSecret(null)}>
          Copy it now if the receiver checks signatures: <strong>you will not see it again.</strong> Slack does not need
          it.
        </SecretReveal>
      )}

      <AddChannelForm
        url={url}
        emailAvailable={emailAvailable}
        onAdded={async (name, newSecret) => {
          if (newSecret) setSecret({ channel: name, value: newSecret });
          await reload();
        }}
      />

      <details className="webhook-help">
        <summary>How to verify a webhook delivery</summary>
        <p>
          Each delivery is a POST of JSON <code>{"{ id, type, title, summary, link, text }"}</code> with{" "}
          <code>{signing.timestampHeader}</code> (unix seconds) and <code>{signing.signatureHeader}</code>:{" "}
          <code>sha256=</code> and the hex HMAC-SHA256 of <code>{"<timestamp>.<raw body>"}</code>, keyed with the
          channel&apos;s secret. <code>idempotency-key</code> holds the notification id, the same on every retry: a
          receiver that has seen it already can answer 200 and do nothing. <code>text</code> is what Slack shows.
        </p>
      </details>

      <section aria-labelledby="deliveries-heading">
        <h3 id="deliveries-heading">Delivery log</h3>
        {loadError && <ErrorNote message={loadError} onDismiss={() => setLoadError(null)} />}
        {listing.deliveries.length === 0 ? (
          <p className="hint">Nothing sent yet. Send a test to a channel to see it here.</p>
        ) : (
          <ul className="delivery-log" aria-label="Deliveries">
            {listing.deliveries.map((delivery) => (
              <li key={delivery.id} className="delivery">
                <div className="delivery-head">
                  <StatusBadge status={delivery.status} />
                  <span className="delivery-title">{delivery.title}</span>
                </div>
                <div className="hint">
                  {delivery.channelName} · {delivery.kind} · {delivery.attempts}{" "}
                  {delivery.attempts === 1 ? "attempt" : "attempts"} ·{" "}
                  <LocalTime value={delivery.sentAt ?? delivery.createdAt} relative />
                </div>
                {delivery.lastError && <p className="delivery-error">{delivery.lastError}</p>}
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  );
}

function ChannelCard({ channel, onChanged }: { channel: ChannelView; onChanged: () => Promise<void> }) {
  const { busy, error, clearError, run } = useAction();
  const [tested, setTested] = useState(false);
  const path = `/api/notification-channels/${channel.id}`;

  const toggle = () =>
    run(async () => {
      await api(path, { method: "PATCH", body: { enabled: !channel.enabled } });
      await onChanged();
    });
  const sendTest = async () => {
    setTested(false);
    if (
      await run(async () => {
        await api(`${path}/test`, { method: "POST" });
        await onChanged();
      })
    )
      setTested(true);
  };
  const remove = async () => {
    if (!window.confirm(`Delete the channel ${channel.name}? Its delivery log goes with it.`)) return;
    await run(
      async () => {
        await api(path, { method: "DELETE" });
        await onChanged();
      },
      { keepBusy: true },
    );
  };

  return (
    <article className="card channel-card" aria-label={channel.name}>
      <div className="card-head">
        <span className="card-title">{channel.name}</span>
        <span className="channel-pills">
          <span className="pill">{channel.type}</span>
          <span className={channel.enabled ? "pill pill-live" : "pill"}>{channel.enabled ? "on" : "off"}</span>
        </span>
      </div>
      <p className="channel-target mono">{channel.type === "webhook" ? channel.url : channel.recipient}</p>
      <p className="hint">Gets: {channel.kinds.join(", ")}</p>
      {tested && (
        <p className="hint" role="status">
          Test queued: see the delivery log below.
        </p>
      )}
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <div className="card-foot">
        <span />
        <span className="card-actions">
          <button
            type="button"
            className="button button-quiet"
            onClick={sendTest}
            disabled={busy}
            aria-label={`Send test to ${channel.name}`}
          >
            Send test
          </button>
          <button
            type="button"
            className="button button-quiet"
            onClick={toggle}
            disabled={busy}
            aria-label={`${channel.enabled ? "Turn off" : "Turn on"} ${channel.name}`}
          >
            {channel.enabled ? "Turn off" : "Turn on"}
          </button>
          <button
            type="button"
            className="button button-quiet button-danger-text"
            onClick={remove}
            disabled={busy}
            aria-label={`Delete channel ${channel.name}`}
          >
            Delete
          </button>
        </span>
      </div>
    </article>
  );
}

function AddChannelForm({
  url,
  emailAvailable,
  onAdded,
}: {
  url: string;
  emailAvailable: boolean;
  onAdded: (name: string, secret: string | undefined) => Promise<void>;
}) {
  const [type, setType] = useState<NotificationChannelType>("webhook");
  const [name, setName] = useState("");
  const [target, setTarget] = useState("");
  const [kinds, setKinds] = useState<NotificationKind[]>(["briefing", "question", "approval", "alert"]);
  const { busy, error, clearError, run } = useAction();

  const add = async (event: FormEvent) => {
    event.preventDefault();
    const body = type === "webhook" ? { type, name, url: target, kinds } : { type, name, recipient: target, kinds };
    let created: { secret?: string } = {};
    const ok = await run(async () => {
      created = await api<{ secret?: string }>(url, { method: "POST", body });
    });
    if (!ok) return;
    await onAdded(name.trim(), created.secret);
    setName("");
    setTarget("");
  };
  const toggleKind = (kind: NotificationKind, on: boolean) =>
    setKinds((current) =>
      KINDS.map((option) => option.kind).filter((option) => (option === kind ? on : current.includes(option))),
    );

  return (
    <form className="card form" onSubmit={add} aria-labelledby="add-channel-heading">
      <h3 id="add-channel-heading">Add a channel</h3>
      <fieldset className="choice-group">
        <legend>Channel type</legend>
        <label className="choice">
          <input
            type="radio"
            name="channel-type"
            value="webhook"
            checked={type === "webhook"}
            onChange={() => setType("webhook")}
          />
          Webhook (Slack or any URL)
        </label>
        <label className="choice">
          <input
            type="radio"
            name="channel-type"
            value="email"
            checked={type === "email"}
            onChange={() => setType("email")}
            disabled={!emailAvailable}
          />
          Email
        </label>
      </fieldset>
      {!emailAvailable && <p className="hint">Email notifications need SMTP_URL and SMTP_FROM set on the server.</p>}
      <label className="field">
        <span>Channel name</span>
        <input
          value={name}
          onChange={(event) => setName(event.target.value)}
          maxLength={120}
          required
          placeholder={type === "webhook" ? "Team Slack" : "My inbox"}
        />
      </label>
      <label className="field">
        <span>{type === "webhook" ? "Webhook URL" : "Email address"}</span>
        <input
          type={type === "webhook" ? "url" : "email"}
          value={target}
          onChange={(event) => setTarget(event.target.value)}
          required
          maxLength={type === "webhook" ? 2000 : 320}
          spellCheck={false}
          autoComplete="off"
          placeholder={type === "webhook" ? "https://hooks.slack.com/services/…" : "you@example.com"}
        />
      </label>
      <fieldset className="choice-group">
        <legend>Notify about</legend>
        {KINDS.map(({ kind, label }) => (
          <label key={kind} className="choice">
            <input
              type="checkbox"
              checked={kinds.includes(kind)}
              onChange={(event) => toggleKind(kind, event.target.checked)}
            />
            {label}
          </label>
        ))}
      </fieldset>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <div className="form-actions">
        <button
          type="submit"
          className="button button-primary"
          disabled={busy || !name.trim() || !target.trim() || kinds.length === 0}
        >
          {busy ? "Adding…" : "Add channel"}
        </button>
      </div>
    </form>
  );
}
