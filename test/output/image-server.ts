// An MCP server over stdio (the SDK's low-level Server) whose tools answer images: `large` a 4000×3000 PNG (smooth,
// about 5 MB: core's client takes MCP messages up to 16 MiB, base64 included), `small`
// a 40×30 PNG, `corrupt` a cut-short PNG, `bomb` a PNG declaring 100000×100000 pixels, `mislabelled` a PNG
// declared image/jpeg. For tests of image normalization of MCP results.

import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { bomb, png } from "../support/image"

const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")
const images: Record<string, () => { data: string; mimeType: string }> = {
  large: () => ({ data: base64(png(4000, 3000, { noise: 0 })), mimeType: "image/png" }),
  small: () => ({ data: base64(png(40, 30)), mimeType: "image/png" }),
  corrupt: () => ({ data: base64(png(64, 64).subarray(0, 300)), mimeType: "image/png" }),
  bomb: () => ({ data: base64(bomb()), mimeType: "image/png" }),
  mislabelled: () => ({ data: base64(png(40, 30)), mimeType: "image/jpeg" }),
}

const server = new Server({ name: "images", version: "1.0.0" }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: Object.keys(images).map((name) => ({
    name,
    description: `Answers a ${name} image`,
    inputSchema: { type: "object" as const, properties: {} },
  })),
}))
server.setRequestHandler(CallToolRequestSchema, (request) => {
  const image = images[request.params.name]
  if (image === undefined) return { content: [{ type: "text" as const, text: "no such tool" }], isError: true }
  return { content: [{ type: "text" as const, text: `the ${request.params.name} image:` }, { type: "image" as const, ...image() }] }
})
await server.connect(new StdioServerTransport())
