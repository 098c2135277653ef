// A tiny stdio MCP server for the edges real servers do not show (tests/integration/mcp.test.ts):
// two tools whose names differ only in "." vs "_", a tool that answers 3 MB, a tool whose every
// call fails, a tool that kills the server mid-call (exit code 7); run with "exit" it writes a line
// to stderr and exits at once with code 3.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

if (process.argv[2] === "exit") {
  process.stderr.write("starting edge server\nedge server: cannot read /nonexistent/config.json\n");
  process.exit(3);
}

const input = { type: "object", properties: {} };
const tools = [
  { name: "get.page", description: "Gets the page (dot).", inputSchema: input, annotations: { readOnlyHint: true } },
  {
    name: "get_page",
    description: "Gets the page (underscore).",
    inputSchema: input,
    annotations: { readOnlyHint: true },
  },
  { name: "huge", description: "Answers 3 MB of text.", inputSchema: input, annotations: { readOnlyHint: true } },
  { name: "broken", description: "Always fails.", inputSchema: input, annotations: { readOnlyHint: true } },
  { name: "crash", description: "Dies while answering.", inputSchema: input, annotations: { readOnlyHint: true } },
];

const server = new Server({ name: "edge", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  switch (request.params.name) {
    case "get.page":
      return { content: [{ type: "text", text: "page from the dotted tool" }] };
    case "get_page":
      return { content: [{ type: "text", text: "page from the underscored tool" }] };
    case "huge":
      return { content: [{ type: "text", text: "x".repeat(3_000_000) }] };
    case "crash":
      process.stderr.write("edge server: out of memory\n", () => process.exit(7));
      return new Promise(() => {});
    default:
      throw new Error("the edge server's backend is down");
  }
});
await server.connect(new StdioServerTransport());
