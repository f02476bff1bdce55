// The MCP peer of bench/serve.ts, in a process of its own as a sidecar would be: the MCP TypeScript SDK serving one
// `echo` tool (zod input) over its web-standard streamable HTTP transport inside Bun.serve, in its strongest
// configuration: one stateful session reused by the client, JSON responses (no SSE stream per call). Prints one JSON
// line `{ "url" }` on stdout once listening.

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { z } from "zod"

const server = new McpServer({ name: "bench", version: "1.0.0" })
server.registerTool("echo", { description: "Echo text back", inputSchema: { text: z.string() } }, async ({ text }) => ({
  content: [{ type: "text", text }],
}))
const transport = new WebStandardStreamableHTTPServerTransport({
  sessionIdGenerator: () => crypto.randomUUID(),
  enableJsonResponse: true,
})
await server.connect(transport)

const http = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  fetch: (request) => transport.handleRequest(request),
})
process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${http.port}/mcp` })}\n`)
