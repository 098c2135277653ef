import { describe, expect, it } from "vitest";
import { retryDelaySeconds } from "./retry-backoff";

describe("retryDelaySeconds", () => {
  it("doubles from 2 s and stays at 30 s", () => {
    expect([0, 1, 2, 3, 4, 5, 50].map(retryDelaySeconds)).toEqual([2, 4, 8, 16, 30, 30, 30]);
  });
});
