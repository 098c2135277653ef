import { describe, expect, it } from "vitest";
import { parseEnv } from "./env";

describe("TRUST_PROXY", () => {
  it("is off unless set to a yes, and names itself when it is neither yes nor no", () => {
    expect(parseEnv({}).TRUST_PROXY).toBe(false);
    expect(parseEnv({ TRUST_PROXY: "" }).TRUST_PROXY).toBe(false);
    for (const value of ["1", "true", "TRUE", "yes", " 1 "]) expect(parseEnv({ TRUST_PROXY: value }).TRUST_PROXY, value).toBe(true);
    for (const value of ["0", "false", "no"]) expect(parseEnv({ TRUST_PROXY: value }).TRUST_PROXY, value).toBe(false);
    expect(() => parseEnv({ TRUST_PROXY: "nginx" })).toThrow(/TRUST_PROXY: must be 1 or 0/);
  });
});
