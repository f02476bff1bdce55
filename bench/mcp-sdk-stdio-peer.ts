// The stdio peer of bench/mcp.ts: the MCP TypeScript SDK's McpServer serving one `echo` tool (zod input) over its
// stdio transport, as an MCP client would start a server. bench/serve-mcp-peer.ts is the same server over HTTP.

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { z } from "zod"

const server = new McpServer({ name: "bench", version: "1.0.0" })
server.registerTool("echo", { description: "Echo text back", inputSchema: { text: z.string() } }, async ({ text }) => ({
  content: [{ type: "text", text }],
}))
const transport = new StdioServerTransport()
process.stdin.once("end", () => void transport.close())
await server.connect(transport)
