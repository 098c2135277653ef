import "server-only";
// Sign-in throttling with known devices (OWASP's "device cookies"): failed passwords are counted,
// in memory per web process, by who made them. A browser that signed in here before carries a
// signed known-device cookie (auth.ts) and is held back only by its own failures; everyone else
// is a stranger, counted by address and all together. So an attacker who rotates addresses
// slows and then stops strangers, never the person's own browser.
//
// An attempt is counted *before* its password is compared, and atomically with the check
// (`reserve`): otherwise attempts whose bodies arrive together all pass the check while none is
// counted yet (200 held-back bodies once got 199 × 401 and one 200). A reservation counts as a
// failure until it is settled: a right password forgets it, an attempt that never compared a
// password (its body was bad) gives it back.

import { plural } from "@/lib/util/plural";

/** Who a sign-in attempt comes from: a browser that signed in before (its device id), or a stranger at an address. */
export type Attempter = { device: string } | { client: string };

export type SignInRefusal = {
  retryAfterSeconds: number;
  /** Which count is full: this browser's, this address's, or all strangers' together. */
  because: "device" | "client" | "strangers";
};

/** A counted attempt, to be settled once its credential was compared (or could not be). */
export type SignInAttempt = {
  /** The credential was wrong: the attempt stays counted as a failure. */
  wrong(): void;
  /** The credential was right: this browser's or address's failures are forgotten, this one too. */
  right(): void;
  /** No credential was compared (a bad body): the attempt is given back. */
  unchecked(): void;
};

export type SignInLimits = {
  /** Failures a known browser may make within the window. */
  perDevice: number;
  /** Failures one address may make within the window, without a known-device cookie. */
  perClient: number;
  /** Failures all strangers together may make within the window: what really bounds guessing from rotating addresses. */
  strangers: number;
  windowMs: number;
};

export class SignInThrottle {
  /** Failure times per `device:<id>` and per `client:<address>`, oldest first. */
  private readonly failures = new Map<string, number[]>();
  /** Failure times of all strangers together. */
  private strangers: number[] = [];

  constructor(readonly limits: SignInLimits) {}

  /** Why this attempt must wait and for how long, or null when it may be made now. Refused attempts are not counted. */
  refusal(who: Attempter, now = Date.now()): SignInRefusal | null {
    this.forgetOld(now);
    const candidates: SignInRefusal[] = [];
    const wait = (times: number[] | undefined, limit: number, because: SignInRefusal["because"]) => {
      if (!times || times.length < limit) return;
      const ms = times[times.length - limit]! + this.limits.windowMs - now;
      candidates.push({ retryAfterSeconds: Math.max(1, Math.ceil(ms / 1000)), because });
    };
    if ("device" in who) {
      wait(this.failures.get(keyOf(who)), this.limits.perDevice, "device");
    } else {
      wait(this.failures.get(keyOf(who)), this.limits.perClient, "client");
      wait(this.strangers, this.limits.strangers, "strangers");
    }
    return candidates.sort((a, b) => b.retryAfterSeconds - a.retryAfterSeconds)[0] ?? null;
  }

  /**
   * Checks and counts one attempt in one step (no await between them, so no other request can
   * slip in): a refusal, or the attempt, counted as a failure until it is settled.
   */
  reserve(who: Attempter, now = Date.now()): { refusal: SignInRefusal } | { attempt: SignInAttempt } {
    const refusal = this.refusal(who, now);
    if (refusal) return { refusal };
    this.recordFailure(who, now);
    let settled = false;
    const settle = (outcome: "right" | "unchecked") => {
      if (settled) return;
      settled = true;
      if (outcome === "right") this.recordSuccess(who);
      else this.forgetOne(this.failures.get(keyOf(who)), now);
      if ("client" in who) this.forgetOne(this.strangers, now);
    };
    return {
      attempt: {
        wrong: () => {
          settled = true;
        },
        right: () => settle("right"),
        unchecked: () => settle("unchecked"),
      },
    };
  }

  recordFailure(who: Attempter, now = Date.now()): void {
    const key = keyOf(who);
    const times = this.failures.get(key) ?? [];
    times.push(now);
    this.failures.set(key, times);
    if ("client" in who) this.strangers.push(now);
  }

  /** A right password: this browser's or address's own failures are forgotten (the strangers' count stays). */
  recordSuccess(who: Attempter): void {
    this.failures.delete(keyOf(who));
  }

  /** Takes back one counted time (a reservation given back); the list may have been trimmed meanwhile. */
  private forgetOne(times: number[] | undefined, time: number): void {
    const index = times?.lastIndexOf(time) ?? -1;
    if (index >= 0) times!.splice(index, 1);
  }

  clear(): void {
    this.failures.clear();
    this.strangers = [];
  }

  private forgetOld(now: number): void {
    const cutoff = now - this.limits.windowMs;
    this.strangers = this.strangers.filter((time) => time > cutoff);
    for (const [key, times] of this.failures) {
      const recent = times.filter((time) => time > cutoff);
      if (recent.length) this.failures.set(key, recent);
      else this.failures.delete(key);
    }
  }
}

function keyOf(who: Attempter): string {
  return "device" in who ? `device:${who.device}` : `client:${who.client}`;
}

/** What the person reads on a 429: why, when to try again, and what still works. */
export function refusalMessage(refusal: SignInRefusal): string {
  const wait = plural(refusal.retryAfterSeconds, "second");
  switch (refusal.because) {
    case "device":
      return `Too many wrong passwords from this browser. Try again in ${wait}.`;
    case "client":
      return `Too many wrong passwords from this address. Try again in ${wait}; until then no password from it is checked.`;
    case "strangers":
      return (
        `Too many wrong passwords from browsers that have not signed in here before, so they are held back for now. ` +
        `Try again in ${wait}. A browser that has signed in here before can still sign in.`
      );
  }
}

const holder = globalThis as typeof globalThis & { cadreSignInThrottle?: SignInThrottle };
holder.cadreSignInThrottle ??= new SignInThrottle({ perDevice: 5, perClient: 5, strangers: 20, windowMs: 60_000 });
/** One per process (dev hot reloads keep it). */
export const signInThrottle = holder.cadreSignInThrottle;
