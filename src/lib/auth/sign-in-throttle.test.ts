import { describe, expect, it } from "vitest";
import { refusalMessage, SignInThrottle } from "./sign-in-throttle";

const limits = { perDevice: 3, perClient: 2, strangers: 4, windowMs: 60_000 };

describe("SignInThrottle", () => {
  it("holds an address back after its failures, for what is left of the window, and lets it go after", () => {
    const throttle = new SignInThrottle(limits);
    const client = { client: "203.0.113.1" };
    throttle.recordFailure(client, 0);
    expect(throttle.refusal(client, 1_000)).toBeNull();
    throttle.recordFailure(client, 10_000);
    expect(throttle.refusal(client, 10_000)).toEqual({ retryAfterSeconds: 50, because: "client" });
    expect(throttle.refusal({ client: "203.0.113.2" }, 10_000)).toBeNull();
    // The oldest failure leaves the window at 60 s: one slot free again.
    expect(throttle.refusal(client, 60_001)).toBeNull();
  });

  it("holds all strangers back together, but never a known device", () => {
    const throttle = new SignInThrottle(limits);
    for (let index = 0; index < limits.strangers; index++)
      throttle.recordFailure({ client: `192.0.2.${index}` }, index * 1_000);
    expect(throttle.refusal({ client: "192.0.2.99" }, 5_000)).toEqual({ retryAfterSeconds: 55, because: "strangers" });
    expect(throttle.refusal({ device: "owner" }, 5_000)).toBeNull();
  });

  it("counts a known device's failures against that device only, and forgets them on success", () => {
    const throttle = new SignInThrottle(limits);
    const device = { device: "d1" };
    for (let index = 0; index < limits.perDevice; index++) throttle.recordFailure(device, 0);
    expect(throttle.refusal(device, 0)?.because).toBe("device");
    expect(throttle.refusal({ device: "d2" }, 0)).toBeNull();
    expect(throttle.refusal({ client: "203.0.113.1" }, 0)).toBeNull();
    throttle.recordSuccess(device);
    expect(throttle.refusal(device, 0)).toBeNull();
  });

  it("counts an attempt as it is let through, so attempts in flight together cannot pass the limit", () => {
    const throttle = new SignInThrottle(limits);
    const client = { client: "203.0.113.1" };
    // Many attempts reserved before any of them is settled (bodies held back, then sent together).
    const reserved = Array.from({ length: 50 }, () => throttle.reserve(client, 0));
    expect(reserved.filter((answer) => "attempt" in answer)).toHaveLength(limits.perClient);
    expect(reserved.filter((answer) => "refusal" in answer)).toHaveLength(50 - limits.perClient);
  });

  it("gives an attempt back when no credential was compared, and forgets it when it was right", () => {
    const throttle = new SignInThrottle(limits);
    const client = { client: "203.0.113.1" };
    const first = throttle.reserve(client, 0);
    const second = throttle.reserve(client, 0);
    expect(throttle.reserve(client, 0)).toHaveProperty("refusal");
    if (!("attempt" in first) || !("attempt" in second)) throw new Error("both should have been let through");
    first.attempt.unchecked();
    first.attempt.unchecked(); // settling twice gives back once
    const third = throttle.reserve(client, 0);
    expect(third).toHaveProperty("attempt");
    expect(throttle.reserve(client, 0)).toHaveProperty("refusal");
    second.attempt.right();
    if ("attempt" in third) third.attempt.right();
    expect(throttle.refusal(client, 0)).toBeNull();
    // A right credential is not a stranger's failure either.
    for (let index = 0; index < limits.strangers; index++) {
      const answer = throttle.reserve({ client: `192.0.2.${index}` }, 0);
      if ("attempt" in answer) answer.attempt.right();
    }
    expect(throttle.refusal({ client: "192.0.2.99" }, 0)).toBeNull();
  });

  it("says when to try again and what still works", () => {
    expect(refusalMessage({ retryAfterSeconds: 1, because: "device" })).toBe(
      "Too many wrong passwords from this browser. Try again in 1 second.",
    );
    expect(refusalMessage({ retryAfterSeconds: 42, because: "strangers" })).toContain(
      "Try again in 42 seconds. A browser that has signed in here before can still sign in.",
    );
  });
});
