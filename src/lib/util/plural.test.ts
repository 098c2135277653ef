import { describe, expect, it } from "vitest";
import { plural } from "./plural";

describe("plural", () => {
  it("agrees with the count", () => {
    expect(plural(1, "model")).toBe("1 model");
    expect(plural(0, "model")).toBe("0 models");
    expect(plural(2, "model")).toBe("2 models");
    expect(plural(1, "entry", "entries")).toBe("1 entry");
    expect(plural(3, "entry", "entries")).toBe("3 entries");
  });

  it("groups thousands the same way on server and client", () => {
    expect(plural(1200, "message")).toBe("1,200 messages");
  });
});
