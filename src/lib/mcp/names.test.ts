import { describe, expect, it } from "vitest";
import { mcpToolNames, renamedMcpTools } from "./names";

describe("mcpToolNames", () => {
  it("keeps names apart that sanitizing makes one, by the order the server lists them", () => {
    const tools = [{ name: "get.page" }, { name: "get_page" }, { name: "get page" }, { name: "get_page_2" }];
    const names = mcpToolNames("web", tools);
    expect([...names.values()]).toEqual(["web__get_page", "web__get_page_3", "web__get_page_4", "web__get_page_2"]);
    expect(new Set(names.values()).size).toBe(tools.length);
    expect(renamedMcpTools("web", tools)).toEqual([
      { tool: "get_page", as: "web__get_page_3" },
      { tool: "get page", as: "web__get_page_4" },
    ]);
  });

  it("stays within 64 characters when two long names are cut to the same one", () => {
    const long = "a".repeat(70);
    const names = [...mcpToolNames("srv", [{ name: `${long}x` }, { name: `${long}y` }]).values()];
    expect(names[0]).toHaveLength(64);
    expect(names[1]).toHaveLength(64);
    expect(names[1]).toMatch(/_2$/);
  });
});
