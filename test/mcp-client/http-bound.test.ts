// core as a client of a streamable-HTTP MCP server that answers without end: the answer is read in bounded
// messages (a JSON answer, or one server-sent event), so a server cannot grow core's memory without limit.

import { describe, expect, test } from "bun:test"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import * as Effect from "effect/Effect"
import { McpClientHttp } from "../../src/mcp-client/mcp-client-http"
import { settle, textOf, turn, withLocation } from "./support"

const encoder = new TextEncoder()

/** A fetch answering `chunks` as a body of `type`. */
const answering =
  (type: string, chunks: ReadonlyArray<string>) =>
  async (): Promise<Response> =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(encoder.encode(chunk))
          controller.close()
        },
      }),
      { headers: { "content-type": type } },
    )

const read = (response: Response) => response.text()

describe("a server's answers are read in bounded messages", () => {
  test("a JSON answer over the limit errors its body; one within it reads whole", async () => {
    const big = await McpClientHttp.bounded(answering("application/json", ["x".repeat(600), "y".repeat(600)]), 1_000)("http://server")
    await expect(read(big)).rejects.toThrow("ran past 1000 bytes in one message")
    const small = await McpClientHttp.bounded(answering("application/json", ["x".repeat(600), "y".repeat(300)]), 1_000)("http://server")
    expect(await read(small)).toHaveLength(900)
  })

  test("a stream of events may run long; one event may not", async () => {
    // 40 events of 300 bytes each: 12,000 bytes in all, each event within the limit, boundaries split across chunks.
    const events = Array.from({ length: 40 }, (_, index) => `data: ${String(index).padEnd(290, ".")}\n`)
    const chunks = events.flatMap((event) => [event, "\n"])
    const long = await McpClientHttp.bounded(answering("text/event-stream", chunks), 1_000)("http://server")
    expect(await read(long)).toHaveLength(chunks.join("").length)
    const crlf = await McpClientHttp.bounded(answering("text/event-stream", events.map((event) => `${event.trimEnd()}\r\n\r\n`)), 1_000)(
      "http://server",
    )
    expect((await read(crlf)).split("\r\n\r\n")).toHaveLength(41)
    const endless = await McpClientHttp.bounded(answering("text/event-stream", ["data: ", ...Array.from({ length: 10 }, () => "z".repeat(200))]), 1_000)(
      "http://server",
    )
    await expect(read(endless)).rejects.toThrow("ran past 1000 bytes in one message")
  })

  test("a tool whose answer runs past the limit fails naming the server; core goes on and the next call settles", async () => {
    // Stateless: every request gets a server of its own, so core may reconnect after the failed answer.
    const serve = async (request: Request) => {
      const server = new McpServer({ name: "flood", version: "1.0.0" })
      server.registerTool("huge", { description: "Answers 20 MiB", inputSchema: {} }, async () => ({
        content: [{ type: "text", text: "h".repeat(20 * 1024 * 1024) }],
      }))
      server.registerTool("small", { description: "Answers a word", inputSchema: {} }, async () => ({
        content: [{ type: "text", text: "fine" }],
      }))
      const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
      await server.connect(transport)
      return transport.handleRequest(request)
    }
    const http = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: serve })
    try {
      const result = await withLocation(
        { mcp: { flood: { url: `http://127.0.0.1:${http.port}/mcp`, timeoutMs: 20_000 } }, permission: { "flood_*": "allow" } },
        () =>
          Effect.gen(function* () {
            const current = yield* turn
            return { huge: yield* settle(current, "flood_huge", {}), small: yield* settle(current, "flood_small", {}) }
          }),
      )
      expect(result.huge.settlement.status).toBe("error")
      expect(result.huge.settlement.error?.message).toContain('MCP server "flood"')
      expect(result.huge.settlement.error?.message).toContain("bytes in one message")
      expect(textOf(result.small.settlement)).toBe("fine")
    } finally {
      await http.stop(true)
    }
  }, 60_000)
})
