// core as an MCP client, against real servers: the reference "everything" and "filesystem" servers from npm, and
// a fixture server for the fault paths (hang, crash, garbage, silence, bad names). Servers' tools are Location
// tools named <server>_<tool> that settle through the normal pipeline: asked by default, bounded, recorded.

import { describe, expect, test } from "bun:test"
import { chmodSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Deferred from "effect/Deferred"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { Registry } from "../../src/registry/registry"
import * as Fiber from "effect/Fiber"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { ProcessGroup } from "../../src/shell/process-group"
import { Connection } from "../../src/mcp-client/connection"
import { McpClient } from "../../src/mcp-client/mcp-client"
import { McpClientHttp } from "../../src/mcp-client/mcp-client-http"
import { McpClientStdio } from "../../src/mcp-client/mcp-client-stdio"
import { BUN, EVERYTHING, FILESYSTEM, FIXTURE, settle, textOf, turn, withLocation } from "./support"
import { tempDir } from "../support/temp"

const fixture = (mode = "serve", extra: Record<string, unknown> = {}) => ({
  mcp: { fix: { command: [BUN, FIXTURE, mode], ...extra } },
  permission: { "fix_*": "allow" },
})

/** The hand-written server of raw-server.ts (answers the SDK's server will not send), its tools allowed. */
const rawServer = (timeoutMs?: number) => ({
  mcp: { fix: { command: [BUN, join(import.meta.dir, "raw-server.ts")], ...(timeoutMs === undefined ? {} : { timeoutMs }) } },
  permission: { "fix_*": "allow" },
})

const alive = (pid: number) => {
  const state = ProcessGroup.stat(pid)?.state
  return state !== undefined && state !== "Z"
}

const stateOf = Effect.map(McpClient.Service, (remote) => remote.states()[0]!)

/**
 * Calls `name` of the Location's one server, kills the server with SIGKILL once the call's first progress says it is
 * under way there, then calls `next`: answers the server's pid before, both settlements and its state after.
 */
const killedMidCall = (name: string, input: unknown, next: string, nextInput: unknown) =>
  Effect.gen(function* () {
    const current = yield* turn
    const pid = (yield* stateOf).pid!
    const started = yield* Deferred.make<void>()
    const fiber = yield* Effect.forkChild(
      current.settle(
        { sessionID: "ses_kill", agent: "build", assistantMessageID: "m", toolCallID: "c1", name, input },
        { onProgress: () => Deferred.succeed(started, undefined).pipe(Effect.asVoid) },
      ),
    )
    yield* Deferred.await(started)
    process.kill(pid, "SIGKILL")
    const killed = (yield* Fiber.join(fiber)).settlement
    const after = yield* settle(yield* turn, next, nextInput)
    return { pid, killed, next: after, state: yield* stateOf }
  })

describe("core as an MCP client of the reference servers", () => {
  test("the everything server's tools appear as every_<tool>, a call is asked first and then settles", async () => {
    const result = await withLocation({ mcp: { every: { command: [EVERYTHING, "stdio"] } } }, () =>
      Effect.gen(function* () {
        const current = yield* turn
        const names = current.definitions.map((definition) => definition.name)
        const echo = current.definitions.find((definition) => definition.name === "every_echo")!
        const approved = yield* settle(current, "every_echo", { message: "hello" })
        const refused = yield* settle(current, "every_echo", { message: "again" }, { reply: "reject" })
        const image = yield* settle(current, "every_get-tiny-image", {})
        return { names, echo, approved, refused, image }
      }),
    )
    expect(result.names).toContain("every_echo")
    expect(result.names).toContain("read")
    expect(result.echo.inputSchema).toMatchObject({ type: "object", properties: { message: { type: "string" } } })
    expect(result.approved.asked.map((request) => request.action)).toEqual(["every_echo"])
    expect(result.approved.settlement).toMatchObject({ status: "success", content: [{ type: "text", text: "Echo: hello" }] })
    expect(result.refused.settlement.status).toBe("declined")
    expect(result.image.settlement.content.some((part) => part.type === "file" && part.mime === "image/png")).toBe(true)
  }, 30_000)

  // timeoutMs bounds connecting too: long enough for the server to start on a loaded machine.
  test("a call of the everything server that outlasts timeoutMs fails naming the server; the connection stays for the next", async () => {
    const result = await withLocation(
      { mcp: { every: { command: [EVERYTHING, "stdio"], timeoutMs: 5000 } }, permission: { "every_*": "allow" } },
      () =>
        Effect.gen(function* () {
          const current = yield* turn
          const pid = (yield* stateOf).pid!
          const long = yield* settle(current, "every_trigger-long-running-operation", { duration: 600, steps: 1 })
          const echo = yield* settle(current, "every_echo", { message: "after" })
          return { pid, long, echo, state: yield* stateOf }
        }),
    )
    expect(result.long.settlement.status).toBe("error")
    expect(result.long.settlement.error?.kind).toBe("failure")
    expect(result.long.settlement.error?.message).toStartWith(
      'MCP server "every" did not answer within 5000 ms while calling trigger-long-running-operation; the request was cancelled.',
    )
    expect(result.echo.settlement).toMatchObject({ status: "success", content: [{ type: "text", text: "Echo: after" }] })
    expect(result.state).toMatchObject({ status: "connected", pid: result.pid })
  }, 30_000)

  test("the everything server killed during a call is a failure naming the server; the next call runs on a new process", async () => {
    const result = await withLocation(
      { mcp: { every: { command: [EVERYTHING, "stdio"] } }, permission: { "every_*": "allow" } },
      () =>
        killedMidCall("every_trigger-long-running-operation", { duration: 600, steps: 6000 }, "every_echo", { message: "back" }),
    )
    expect(result.killed.status).toBe("error")
    expect(result.killed.error?.kind).toBe("failure")
    expect(result.killed.error?.message).toStartWith(
      'MCP server "every" closed the connection while calling trigger-long-running-operation: the server process was killed by SIGKILL',
    )
    expect(result.killed.error?.message).toContain("It is started again on the next call")
    expect(result.next.settlement).toMatchObject({ status: "success", content: [{ type: "text", text: "Echo: back" }] })
    expect(result.state.status).toBe("connected")
    expect(result.state.pid).not.toBe(result.pid)
    expect(alive(result.pid)).toBe(false)
  }, 30_000)

  test("the filesystem server reads a file of the Location through core, allowed by a rule", async () => {
    const result = await withLocation(
      // The server starts outside the Location: it is named by its absolute path.
      (directory) => ({ mcp: { fs: { command: [FILESYSTEM, directory] } }, permission: { "fs_*": "allow" } }),
      (directory) =>
        Effect.gen(function* () {
          writeFileSync(join(directory, "notes.txt"), "remote notes\n")
          const current = yield* turn
          return {
            names: current.definitions.map((definition) => definition.name),
            read: yield* settle(current, "fs_read_text_file", { path: join(directory, "notes.txt") }),
          }
        }),
    )
    expect(result.names).toContain("fs_list_directory")
    expect(result.read.asked).toEqual([])
    expect(result.read.settlement.status).toBe("success")
    expect(textOf(result.read.settlement)).toContain("remote notes")
  }, 30_000)

  test("the everything server over streamable HTTP: listed and called through its URL", async () => {
    const port = await freePort()
    const server = Bun.spawn([EVERYTHING, "streamableHttp"], {
      env: { ...process.env, PORT: String(port) },
      stdout: "ignore",
      stderr: "pipe",
    })
    try {
      await listening(server.stderr)
      const result = await withLocation(
        { mcp: { web: { url: `http://127.0.0.1:${port}/mcp` } }, permission: { "web_*": "allow" } },
        () =>
          Effect.gen(function* () {
            const current = yield* turn
            return {
              state: yield* stateOf,
              echo: yield* settle(current, "web_echo", { message: "over http" }),
            }
          }),
      )
      expect(result.state).toMatchObject({ kind: "http", status: "connected" })
      expect(result.state.tools).toContain("web_echo")
      expect(result.echo.settlement).toMatchObject({ status: "success", content: [{ type: "text", text: "Echo: over http" }] })
    } finally {
      server.kill()
      await server.exited
    }
  }, 30_000)
})

describe("core as an MCP client over streamable HTTP", () => {
  test("headers go with every request; a server that refuses without them is a diagnostic", async () => {
    const server = new McpServer({ name: "guarded", version: "1.0.0" })
    server.registerTool("whoami", { description: "Says hello", inputSchema: {} }, async () => ({
      content: [{ type: "text", text: "hello, token holder" }],
    }))
    // A server quoting the credentials it was sent, in an error result and in a refusal: the model read them.
    server.registerTool("quote", { description: "Quotes the request's credentials", inputSchema: {} }, async (_input, extra) => ({
      content: [{ type: "text", text: `upstream refused ${String(extra.requestInfo?.headers.authorization)}` }],
      isError: true,
    }))
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID() })
    await server.connect(transport)
    const http = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (request) =>
        request.headers.get("authorization") === "Bearer secret-token-42"
          ? transport.handleRequest(request)
          : new Response(`unauthorized: ${request.headers.get("authorization")}`, { status: 401 }),
    })
    const url = `http://127.0.0.1:${http.port}/mcp`
    try {
      const allowed = { "web_*": "allow" }
      const granted = await withLocation(
        { mcp: { web: { url, headers: { Authorization: "Bearer secret-token-42" } } }, permission: allowed },
        () =>
          Effect.gen(function* () {
            const current = yield* turn
            return { whoami: yield* settle(current, "web_whoami", {}), quote: yield* settle(current, "web_quote", {}) }
          }),
      )
      expect(textOf(granted.whoami.settlement)).toBe("hello, token holder")
      expect(granted.quote.settlement.error?.message).toBe("upstream refused [redacted]")
      const wrong = await withLocation({ mcp: { web: { url, headers: { Authorization: "Bearer wrong-token-7" } } }, permission: allowed }, () =>
        Effect.gen(function* () {
          yield* turn
          return yield* stateOf
        }),
      )
      expect(wrong.status).toBe("failed")
      expect(wrong.error).toContain("unauthorized: [redacted]")
      expect(wrong.error).not.toContain("wrong-token-7")
      const refused = await withLocation({ mcp: { web: { url } }, permission: allowed }, () =>
        Effect.gen(function* () {
          const current = yield* turn
          return { names: current.definitions.map((definition) => definition.name), state: yield* stateOf }
        }),
      )
      expect(refused.names).not.toContain("web_whoami")
      expect(refused.state.status).toBe("failed")
      expect(refused.state.error).toStartWith("the server answered HTTP 401 while connecting")
    } finally {
      await http.stop(true)
      await server.close()
    }
  }, 30_000)
})

// A server answering a call as an event stream (the transport's other form): a malformed answer there was dropped by
// the client, and its call waited out the timeout blaming the server's silence. Hand-written, since the SDK's
// server sends nothing malformed; each event is sent in pieces, some split mid-line, to show they are joined first.
describe("core as an MCP client over streamable HTTP, against a server answering as an event stream", () => {
  test("a malformed answer in the stream fails its call at once, saying what is wrong; good answers pass as sent", async () => {
    const TOOLS = ["scalar", "sloppy", "good", "crlf", "json"].map((name) => ({ name, description: `Answers ${name}`, inputSchema: { type: "object" } }))
    const answers: Record<string, (id: unknown) => string> = {
      scalar: (id) => `id: e1\nevent: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id, result: 5 })}\n\n`,
      sloppy: (id) => `data: {"jsonrpc":"2.0","id":${JSON.stringify(id)},\ndata: "result":{"content":[]},"error":null}\n\n`,
      good: (id) =>
        `: a comment first\n\nevent: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "fine" }] } })}\n\n`,
      crlf: (id) => `data: ${JSON.stringify({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "crlf fine" }] } })}\r\n\r\n`,
    }
    const pieces = (text: string) => {
      const bytes = new TextEncoder().encode(text)
      return new ReadableStream<Uint8Array>({
        async start(controller) {
          for (let at = 0; at < bytes.length; at += 7) {
            controller.enqueue(bytes.subarray(at, at + 7))
            await Bun.sleep(1)
          }
          controller.close()
        },
      })
    }
    const http = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(request) {
        if (request.method !== "POST") return new Response(null, { status: 405 })
        const message = (await request.json()) as { id?: unknown; method: string; params?: { name?: string } }
        if (message.id === undefined) return new Response(null, { status: 202 })
        const json = (result: unknown) => Response.json({ jsonrpc: "2.0", id: message.id, result })
        if (message.method === "initialize") {
          return json({ protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "raw-http", version: "1.0.0" } })
        }
        if (message.method === "tools/list") return json({ tools: TOOLS })
        // The same malformed answer as JSON: the client reads it whole and fails the call at once itself.
        if (message.params?.name === "json") return json(5)
        const answer = answers[message.params?.name ?? ""]!
        return new Response(pieces(answer(message.id)), { headers: { "content-type": "text/event-stream" } })
      },
    })
    try {
      const result = await withLocation(
        { mcp: { web: { url: `http://127.0.0.1:${http.port}/mcp`, timeoutMs: 30_000 } }, permission: { "web_*": "allow" } },
        () =>
          Effect.gen(function* () {
            const current = yield* turn
            const started = performance.now()
            const scalar = yield* settle(current, "web_scalar", {})
            const sloppy = yield* settle(current, "web_sloppy", {})
            const waited = performance.now() - started
            const good = yield* settle(current, "web_good", {})
            return { scalar, sloppy, waited, good, crlf: yield* settle(current, "web_crlf", {}), json: yield* settle(current, "web_json", {}) }
          }),
      )
      expect(result.scalar.settlement.error?.message).toBe(
        'MCP server "web" answered in a form core cannot read while calling scalar (not valid JSON-RPC: its result is a ' +
          "number, not an object); the tool may have run there.",
      )
      expect(result.sloppy.settlement.error?.message).toContain('(not valid JSON-RPC: it holds both a "result" and an "error")')
      expect(result.waited).toBeLessThan(20_000)
      expect(textOf(result.good.settlement)).toBe("fine")
      expect(textOf(result.crlf.settlement)).toBe("crlf fine")
      expect(result.json.settlement.error?.message).toStartWith('MCP server "web" answered with a result core cannot read while calling json (')
    } finally {
      await http.stop(true)
    }
  }, 60_000)
})

describe("core as an MCP client over streamable HTTP, against a server that ends its event stream at once", () => {
  // The client opens the stream again as soon as it ends, after the `retry` the server sets: 0 drew 750 GETs a second.
  test("the stream is opened again four times a second at most, and calls go on", async () => {
    const server = new McpServer({ name: "restless", version: "1.0.0" })
    server.registerTool("sleep", { description: "Sleeps 3 s", inputSchema: {} }, async () => {
      await Bun.sleep(3_000)
      return { content: [{ type: "text", text: "slept" }] }
    })
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID() })
    await server.connect(transport)
    let gets = 0
    const http = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (request) => {
        if (request.method !== "GET") return transport.handleRequest(request)
        gets++
        return new Response("retry: 0\n\n", { headers: { "content-type": "text/event-stream" } })
      },
    })
    try {
      const result = await withLocation(
        { mcp: { web: { url: `http://127.0.0.1:${http.port}/mcp` } }, permission: { "web_*": "allow" } },
        () =>
          Effect.gen(function* () {
            const current = yield* turn
            const before = gets
            const slept = yield* settle(current, "web_sleep", {})
            return { slept, during: gets - before }
          }),
      )
      expect(textOf(result.slept.settlement)).toBe("slept")
      expect(result.during).toBeGreaterThan(0)
      expect(result.during).toBeLessThanOrEqual(3_000 / McpClientHttp.MIN_STREAM_INTERVAL_MS + 2)
    } finally {
      await http.stop(true)
      await server.close()
    }
  }, 30_000)
})

describe("core as an MCP client over streamable HTTP, when the server restarts", () => {
  test("a call whose session the server no longer knows is a clear failure; the next call connects afresh", async () => {
    const serve = async (port: number) => {
      const server = new McpServer({ name: "restartable", version: "1.0.0" })
      server.registerTool("ping", { description: "Pong", inputSchema: {} }, async () => ({ content: [{ type: "text", text: "pong" }] }))
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID() })
      await server.connect(transport)
      const http = Bun.serve({ hostname: "127.0.0.1", port, fetch: (request) => transport.handleRequest(request) })
      return { port: http.port!, stop: async () => (await http.stop(true), await server.close()) }
    }
    let current = await serve(0)
    const port = current.port
    try {
      const result = await withLocation(
        { mcp: { web: { url: `http://127.0.0.1:${port}/mcp` } }, permission: { "web_*": "allow" } },
        () =>
          Effect.gen(function* () {
            const turn_ = yield* turn
            const before = yield* settle(turn_, "web_ping", {})
            yield* Effect.promise(async () => {
              await current.stop()
              current = await serve(port)
            })
            const lost = yield* settle(turn_, "web_ping", {})
            const again = yield* settle(turn_, "web_ping", {})
            return { before, lost, again, state: yield* stateOf }
          }),
      )
      expect(textOf(result.before.settlement)).toBe("pong")
      expect(result.lost.settlement.error?.kind).toBe("failure")
      expect(result.lost.settlement.error?.message).toMatch(/^MCP server "web" answered HTTP 4\d\d while calling ping/)
      expect(textOf(result.again.settlement)).toBe("pong")
      expect(result.state.status).toBe("connected")
    } finally {
      await current.stop()
    }
  }, 30_000)
})

describe("core as an MCP client: results and failures", () => {
  test("input is checked against the server's JSON Schema before anything is sent", async () => {
    const result = await withLocation(fixture(), () =>
      Effect.gen(function* () {
        const current = yield* turn
        return {
          empty: yield* settle(current, "fix_echo", { text: "" }),
          missing: yield* settle(current, "fix_echo", {}),
          fine: yield* settle(current, "fix_echo", { text: "ok" }),
          definition: current.definitions.find((definition) => definition.name === "fix_echo")!,
        }
      }),
    )
    expect(result.empty.settlement.error?.kind).toBe("invalid_input")
    expect(result.empty.settlement.error?.message).toContain("fix_echo")
    expect(result.missing.settlement.error?.kind).toBe("invalid_input")
    expect(result.missing.settlement.error?.message).toContain("text")
    expect(textOf(result.fine.settlement)).toBe("echo: ok")
    // The server's hints about the tool's effects travel with it.
    expect(result.definition.annotations).toEqual({ readOnly: true, openWorld: false })
  }, 30_000)

  test("isError is a failure; images and blobs become file parts, resource text becomes text; structured content is kept", async () => {
    const result = await withLocation(fixture(), () =>
      Effect.gen(function* () {
        const current = yield* turn
        return {
          fail: yield* settle(current, "fix_fail", {}),
          media: yield* settle(current, "fix_media", {}),
          structured: yield* settle(current, "fix_structured", {}),
          definition: current.definitions.find((definition) => definition.name === "fix_structured")!,
        }
      }),
    )
    expect(result.fail.settlement.error).toEqual({ kind: "failure", message: "the fixture refuses" })
    expect(result.media.settlement.content).toEqual([
      { type: "file", mime: "image/png", uri: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==" },
      { type: "text", text: "note text" },
      { type: "file", mime: "application/octet-stream", uri: "data:application/octet-stream;base64,AAEC", name: "data.bin" },
    ])
    expect(result.structured.settlement.structured).toEqual({ total: 3 })
    expect(result.definition.outputSchema).toMatchObject({ type: "object", required: ["total"] })
  }, 30_000)

  test("a large result is bounded with a managed output; a call settled before replays without reaching the server", async () => {
    const result = await withLocation(fixture(), () =>
      Effect.gen(function* () {
        const current = yield* turn
        const big = yield* settle(current, "fix_big", {})
        const call = { sessionID: "ses_replay", agent: "build", assistantMessageID: "m", toolCallID: "c_once", name: "fix_count", input: {} }
        const first = yield* current.settle(call)
        const again = yield* current.settle(call)
        const other = yield* settle(current, "fix_count", {})
        return { big, first, again, other }
      }),
    )
    expect(result.big.settlement.outputs).toHaveLength(1)
    expect(textOf(result.big.settlement)).toContain("line 1\n")
    expect(textOf(result.big.settlement).length).toBeLessThan(60_000)
    expect(textOf(result.first.settlement)).toBe("1")
    expect(result.again.replayed).toBe(true)
    expect(textOf(result.again.settlement)).toBe("1")
    // The replay never reached the server: its next call is its second.
    expect(textOf(result.other.settlement)).toBe("2")
  }, 30_000)

  // timeoutMs bounds connecting too: long enough for the fixture server to start on a loaded machine.
  test("a JSON-RPC error the server answers is a failure naming the server and its message; the connection stays up", async () => {
    const result = await withLocation(fixture(), () =>
      Effect.gen(function* () {
        const current = yield* turn
        const pid = (yield* stateOf).pid!
        const thrown = yield* settle(current, "fix_throws", {})
        // Through the same turn: a reconnect would have registered the tools again, and this call would be stale.
        const after = yield* settle(current, "fix_pid", {})
        return { pid, thrown, after, state: yield* stateOf }
      }),
    )
    expect(result.thrown.settlement.status).toBe("error")
    expect(result.thrown.settlement.error?.kind).toBe("failure")
    expect(result.thrown.settlement.error?.message).toStartWith('MCP server "fix" answered with an error while calling throws: ')
    expect(result.thrown.settlement.error?.message).toContain("boom")
    expect(textOf(result.after.settlement)).toBe(String(result.pid))
    expect(result.state).toMatchObject({ status: "connected", pid: result.pid })
  }, 30_000)

  // The SDK reads each result with its schemas: one it refuses (an unknown content type) or that breaks the output
  // schema the server declared was answered all the same. It fails that call, saying so in a line, and the connection
  // stays: a call running on it meanwhile goes on (it was failed as "closed the connection", core's own SIGTERM).
  test("a result MCP's schemas refuse fails that call alone, in a short line; the connection and a call running on it stay", async () => {
    const raw = rawServer()
    const result = await withLocation(raw, () =>
      Effect.gen(function* () {
        const current = yield* turn
        const pid = (yield* stateOf).pid!
        const started = yield* Deferred.make<void>()
        const running = yield* Effect.forkChild(
          current.settle(
            { sessionID: "ses_odd", agent: "build", assistantMessageID: "m", toolCallID: "c_wait", name: "fix_wait", input: {} },
            { onProgress: () => Deferred.succeed(started, undefined).pipe(Effect.asVoid) },
          ),
        )
        yield* Deferred.await(started)
        const odd = yield* settle(current, "fix_odd", {})
        const mistyped = yield* settle(current, "fix_mistyped", {})
        yield* Fiber.interrupt(running)
        const cancelled = yield* settle(current, "fix_cancelled", {})
        return { pid, odd, mistyped, cancelled, state: yield* stateOf }
      }),
    )
    const odd = result.odd.settlement.error!
    expect(odd.kind).toBe("failure")
    expect(odd.message).toStartWith('MCP server "fix" answered with a result core cannot read while calling odd (content.0')
    expect(odd.message).toEndWith("the tool may have run there.")
    expect(odd.message.length).toBeLessThan(1_000)
    const mistyped = result.mistyped.settlement.error!
    expect(mistyped.kind).toBe("failure")
    expect(mistyped.message).toStartWith('MCP server "fix" answered with a result that breaks the output schema it declared while calling mistyped (')
    expect(mistyped.message).not.toContain("answered with an error")
    // The waiting call was cancelled by core, on the same connection: the server counted it.
    expect(textOf(result.cancelled.settlement)).toBe("1")
    expect(result.state).toMatchObject({ status: "connected", pid: result.pid })
  }, 30_000)

  // JSON.parse reads 1e400 as Infinity: a server's structured result holding it passed its output schema and was
  // recorded as null; a model's input holding it passed the server's input schema and was sent as null.
  test("a number JSON cannot carry fails the call: in a server's structured result, and in an input sent to a server", async () => {
    const result = await withLocation(rawServer(), () =>
      Effect.gen(function* () {
        const current = yield* turn
        return {
          infinite: yield* settle(current, "fix_infinite", {}),
          input: yield* settle(current, "fix_checked", { x: Infinity }),
          nested: yield* settle(current, "fix_checked", { x: 1, more: [-Infinity] }),
          plain: yield* settle(current, "fix_checked", { x: 1e308 }),
        }
      }),
    )
    expect(result.infinite.settlement).toMatchObject({ status: "error", structured: null, error: { kind: "failure" } })
    expect(result.infinite.settlement.error?.message).toBe(
      'MCP server "fix" answered fix_infinite with a structured result holding a number JSON cannot carry (structuredContent.x read as Infinity); the tool ran there, and its result is not used.',
    )
    expect(result.input.settlement.error).toEqual({
      kind: "invalid_input",
      message: expect.stringContaining("x is a number beyond what JSON's numbers hold (read as Infinity)"),
    })
    expect(result.nested.settlement.error?.message).toContain("more[0] is a number beyond what JSON's numbers hold (read as -Infinity)")
    expect(textOf(result.plain.settlement)).toBe('{"x":1e+308}')
  }, 30_000)

  // A server that stopped reading while it pinged core (each answered, a megabyte each) held gigabytes of answers
  // in core for as long as it lived.
  test("a server that asks faster than it reads core's answers is ended past 16 Mi characters of them; a large input is not", async () => {
    const result = await withLocation(rawServer(30_000), () =>
      Effect.gen(function* () {
        const current = yield* turn
        // Core's own request, larger than the bound, waits for a server that reads it, as long as it takes.
        const large = yield* settle(current, "fix_size", { text: "l".repeat(20 * 1024 * 1024) })
        const deaf = yield* settle(current, "fix_deaf", {})
        return { large, deaf, state: yield* stateOf, after: yield* settle(current, "fix_cancelled", {}) }
      }),
    )
    expect(textOf(result.large.settlement)).toBe(String(20 * 1024 * 1024 + 11))
    expect(result.deaf.settlement.error?.message).toContain(
      `the server process was ended by core: it asked faster than it read, more than ${McpClientStdio.MAX_WAITING_CHARS} characters of core's answers waiting`,
    )
    expect(result.state.status).toBe("failed")
    // The next call starts it again.
    expect(textOf(result.after.settlement)).toBe("0")
  }, 60_000)

  // 250,000 empty file parts, each within the media limit, made a settlement of 37 MB; kept aside, each would be a file.
  test("a result of more than 1,000 content parts fails its call; up to it, files past 32 are kept aside", async () => {
    const result = await withLocation(rawServer(), () =>
      Effect.gen(function* () {
        const current = yield* turn
        return { many: yield* settle(current, "fix_parts", { count: 250_000 }), some: yield* settle(current, "fix_parts", { count: 1_000 }) }
      }),
    )
    expect(result.many.settlement.error).toEqual({
      kind: "failure",
      message: 'MCP server "fix" answered fix_parts with 250000 content parts, more than the 1000 core reads of one result; the tool ran there, and its result is not used.',
    })
    const some = result.some.settlement
    expect(some.status).toBe("success")
    expect(some.content.filter((part) => part.type === "file")).toHaveLength(32)
    expect(some.outputs).toHaveLength(1)
    expect(JSON.stringify(some).length).toBeLessThan(60_000)
  }, 30_000)

  // An answer on a line over 16 MiB is not read: the call waited for its timeout, which used to say to raise it. Its id
  // written first (as this server and Python's SDK write it) names the call, which fails at once.
  test("an answer over 16 MiB on one line whose id comes first fails its call at once, saying so, not to raise the timeout", async () => {
    const raw = rawServer(120_000)
    const result = await withLocation(raw, () => Effect.flatMap(turn, (current) => settle(current, "fix_giant", {})))
    const message = result.settlement.error?.message ?? ""
    expect(message).toStartWith('MCP server "fix" answered with a message of 17.0 MiB while calling giant, over the 16.0 MiB core reads from a server')
    expect(message).not.toContain('raise "timeoutMs"')
  }, 30_000)

  // A malformed answer was dropped like garbage: its call waited out the timeout and then blamed the server's silence.
  test("a malformed answer to a call fails it at once, saying what is wrong with it; the connection stays", async () => {
    const raw = rawServer(30_000)
    const result = await withLocation(raw, () =>
      Effect.gen(function* () {
        const current = yield* turn
        const started = performance.now()
        const scalar = yield* settle(current, "fix_scalar", {})
        const sloppy = yield* settle(current, "fix_sloppy", {})
        const waited = performance.now() - started
        return { scalar, sloppy, waited, cancelled: yield* settle(current, "fix_cancelled", {}) }
      }),
    )
    expect(result.scalar.settlement.error?.message).toBe(
      'MCP server "fix" answered in a form core cannot read while calling scalar (not valid JSON-RPC: its result is a ' +
        "number, not an object); the tool may have run there.",
    )
    expect(result.sloppy.settlement.error?.message).toContain('(not valid JSON-RPC: it holds both a "result" and an "error")')
    for (const call of [result.scalar, result.sloppy]) expect(call.settlement.error?.message).not.toContain("did not answer within")
    expect(result.waited).toBeLessThan(20_000)
    expect(textOf(result.cancelled.settlement)).toBe("0")
  }, 60_000)

  // Describing one threw (a "jsonrpc" nested past the stack), which ended all reading from the server: every later
  // call waited out its timeout. 200,000 members made a 2 MB message; a server's own error worded as core's passed
  // for core's.
  test("a hostile malformed answer is described in a few words, and reading goes on; a server cannot pass for core", async () => {
    const raw = rawServer(30_000)
    const result = await withLocation(raw, () =>
      Effect.gen(function* () {
        const current = yield* turn
        return {
          deep: yield* settle(current, "fix_deep", {}),
          keys: yield* settle(current, "fix_keys", {}),
          mimic: yield* settle(current, "fix_mimic", {}),
          after: yield* settle(current, "fix_cancelled", {}),
        }
      }),
    )
    expect(result.deep.settlement.error?.message).toContain('(not valid JSON-RPC: its "jsonrpc" is an array, not "2.0")')
    const keys = result.keys.settlement.error?.message ?? ""
    expect(keys).toContain('(not valid JSON-RPC: it holds members JSON-RPC does not have: "k0')
    expect(keys).toContain("and 199997 more)")
    expect(keys.length).toBeLessThan(600)
    expect(result.mimic.settlement.error?.message).toStartWith('MCP server "fix" answered with an error while calling mimic: ')
    expect(textOf(result.after.settlement)).toBe("0")
  }, 60_000)

  test("a server that does not answer a call fails it after timeoutMs, naming the server", async () => {
    const result = await withLocation(fixture("serve", { timeoutMs: 4000 }), () =>
      Effect.gen(function* () {
        const current = yield* turn
        return { hang: yield* settle(current, "fix_hang", {}), after: yield* settle(current, "fix_echo", { text: "still" }) }
      }),
    )
    expect(result.hang.settlement.status).toBe("error")
    expect(result.hang.settlement.error?.message).toContain('MCP server "fix" did not answer within 4000 ms')
    expect(textOf(result.after.settlement)).toBe("echo: still")
  }, 30_000)

  // A line over MAX_LINE_BYTES is dropped unread. The call it answers, told by the answer's id at its end (where the
  // SDKs write it), fails at once saying why, long before its timeout.
  test("an answer too large to read fails its call at once saying so; the connection serves on", async () => {
    const result = await withLocation(fixture("serve", { timeoutMs: 120_000 }), () =>
      Effect.gen(function* () {
        const current = yield* turn
        const huge = yield* settle(current, "fix_huge", {})
        const after = yield* settle(current, "fix_echo", { text: "still" })
        return { huge: huge.settlement, after: after.settlement }
      }),
    )
    expect(result.huge.status).toBe("error")
    expect(result.huge.error?.message).toBe(
      'MCP server "fix" answered with a message of 17.0 MiB while calling huge, over the 16.0 MiB core reads from a server; ' +
        "the tool ran there, and its result is not used. Ask for less at once; a longer timeout will not help.",
    )
    expect(textOf(result.after)).toBe("echo: still")
  }, 60_000)

  // Where neither end of the dropped line shows its id, the call it answered times out: that timeout says why. The next
  // call that is merely slow says what a slow call says (a longer timeout would help it). A request of the server's own
  // too large to read, sharing a call's id, fails no call of core's.
  test("an answer too large whose id cannot be seen: its call's timeout says why; a server's own large request fails nothing", async () => {
    const result = await withLocation(fixture("oversized", { timeoutMs: 3_000 }), () =>
      Effect.gen(function* () {
        const current = yield* turn
        const hidden = yield* settle(current, "fix_hidden", {})
        const slow = yield* settle(current, "fix_slow", { ms: 4_000 })
        const asks = yield* settle(current, "fix_asks-big", {})
        const after = yield* settle(current, "fix_echo", { text: "still" })
        return { hidden: hidden.settlement, slow: slow.settlement, asks: asks.settlement, after: after.settlement }
      }),
    )
    expect(result.hidden.error?.message).toContain(`bytes, over the ${McpClientStdio.MAX_LINE_BYTES} bytes core reads from a server`)
    expect(result.hidden.error?.message).toContain("a longer timeout will not help")
    expect(result.slow.error?.message).toContain('MCP server "fix" did not answer within 3000 ms')
    expect(result.slow.error?.message).not.toContain("will not help")
    expect(textOf(result.asks)).toBe("answered after asking")
    expect(textOf(result.after)).toBe("echo: still")
  }, 60_000)

  // What it wrote last says why it ended, but a token core.json gave it, which it quoted as it died, reached the model.
  test("a server that crashes or errs quoting a value core.json's env gave it: the failure says [redacted] for it", async () => {
    const token = 'tok_"q/+=&_secret_4242'
    const half = token.slice(8)
    const spellings = [token, encodeURIComponent(token), JSON.stringify(token).slice(1, -1), Buffer.from(token).toString("base64"), half]
    const run = (extra: Record<string, string>, tool: string) =>
      withLocation(fixture("serve", { env: { FIXTURE_TOKEN: token, FIXTURE_MODE: "on", ...extra } }), () =>
        Effect.gen(function* () {
          return yield* settle(yield* turn, tool, {})
        }),
      )
    const crashed = (await run({}, "fix_crash")).settlement.error?.message ?? ""
    expect(crashed).toContain('exited with code 7: fixture: auth failed with token=[redacted]\nfixture: as sent [redacted] "[redacted]" [redacted]')
    expect(crashed).toContain("fixture: crashing on purpose")
    const split = (await run({ FIXTURE_SPLIT: "1" }, "fix_crash")).settlement.error?.message ?? ""
    expect(split).toContain("exited with code 7: …")
    expect(split).not.toContain("rejected")
    const erred = (await run({}, "fix_throws")).settlement.error?.message ?? ""
    expect(erred).toContain("boom: upstream refused [redacted]")
    // An error result (isError, MCP's error channel for a tool) and a progress message quoted it as well.
    const failed = await run({}, "fix_fail")
    const refused = failed.settlement.error?.message ?? ""
    expect(refused).toBe("the fixture refuses: 401 for token [redacted]")
    expect(failed.progress).toEqual(["sending [redacted]"])
    for (const message of [crashed, split, erred, refused, ...failed.progress]) for (const spelling of spellings) expect(message).not.toContain(spelling)
  }, 60_000)

  test("a server that crashes mid-call is a failure saying how it ended; the next call starts it again", async () => {
    const result = await withLocation(fixture(), () =>
      Effect.gen(function* () {
        const current = yield* turn
        const first = (yield* stateOf).pid!
        const crash = yield* settle(current, "fix_crash", {})
        const again = yield* settle(current, "fix_pid", {})
        const stale = yield* settle(current, "fix_pid", {})
        const fresh = yield* settle(yield* turn, "fix_pid", {})
        return { first, crash, again, stale, fresh, state: yield* stateOf }
      }),
    )
    expect(result.crash.settlement.error?.kind).toBe("failure")
    expect(result.crash.settlement.error?.message).toContain('MCP server "fix" closed the connection')
    expect(result.crash.settlement.error?.message).toContain("exited with code 7: fixture: crashing on purpose")
    expect(textOf(result.again.settlement)).not.toBe(String(result.first))
    expect(Number(textOf(result.again.settlement))).toBe(result.state.pid!)
    // Reconnecting registered the tools again: the turn made before sees them as stale.
    expect(result.stale.settlement.error?.kind).toBe("stale")
    expect(textOf(result.fresh.settlement)).toBe(String(result.state.pid))
  }, 30_000)

  // A call cancelled while it waited for the server to start again had its request sent anyway, the SDK refused it
  // as aborted, and that refusal was taken for a broken connection: the new server was killed, failing the calls
  // waiting on it (after one of them may have run there).
  test("a call cancelled while the server starts again leaves the connection, and the other calls on it, alone", async () => {
    const marker = join(tempDir("core-mcp-restart-"), "started")
    const result = await withLocation(fixture("serve", { env: { SLOW_RESTART: marker }, timeoutMs: 10_000 }), () =>
      Effect.gen(function* () {
        const current = yield* turn
        const crash = yield* settle(current, "fix_crash", {})
        const a = yield* Effect.forkChild(settle(current, "fix_echo", { text: "A" }))
        const b = yield* Effect.forkChild(settle(current, "fix_echo", { text: "B" }))
        // Both wait for the server, which takes 1.5 s to start again; A is cancelled meanwhile.
        yield* Effect.sleep("500 millis")
        yield* Fiber.interrupt(a)
        const answered = yield* Fiber.join(b)
        const pid = (yield* stateOf).pid
        const after = yield* settle(yield* turn, "fix_pid", {})
        return { crash, answered, pid, after, state: yield* stateOf }
      }),
    )
    expect(result.crash.settlement.error?.message).toContain("crashing on purpose")
    expect(result.answered.settlement).toMatchObject({ status: "success" })
    expect(textOf(result.answered.settlement)).toBe("echo: B")
    // The server B was answered by is still the one running.
    expect(result.state.status).toBe("connected")
    expect(textOf(result.after.settlement)).toBe(String(result.pid))
  }, 30_000)

  test("a server killed during a call is a clear failure, and reconnects on the next use", async () => {
    const result = await withLocation(fixture(), () => killedMidCall("fix_wait", {}, "fix_echo", { text: "back" }))
    expect(result.killed.error?.message).toContain('MCP server "fix" closed the connection while calling wait')
    expect(result.killed.error?.message).toContain("SIGKILL")
    expect(textOf(result.next.settlement)).toBe("echo: back")
    expect(result.state.pid).not.toBe(result.pid)
    expect(alive(result.pid)).toBe(false)
  }, 30_000)

  test("server progress becomes the call's progress; cancelling the call sends notifications/cancelled", async () => {
    const result = await withLocation(fixture(), () =>
      Effect.gen(function* () {
        const current = yield* turn
        const progress: Array<string> = []
        const started = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkChild(
          current.settle(
            { sessionID: "ses_cancel", agent: "build", assistantMessageID: "m", toolCallID: "c1", name: "fix_wait", input: {} },
            {
              onProgress: (update) =>
                Effect.sync(() => progress.push(update.message)).pipe(Effect.andThen(Deferred.succeed(started, undefined))),
            },
          ),
        )
        yield* Deferred.await(started)
        yield* Fiber.interrupt(fiber)
        const counted = yield* settle(current, "fix_cancelled", {})
        return { progress, counted }
      }),
    )
    expect(result.progress).toEqual(["waiting"])
    expect(textOf(result.counted.settlement)).toBe("1")
  }, 30_000)

  test("a server's process runs in its own group with the env given, never core's own, and ends with the Location", async () => {
    process.env.CORE_REMOTE_SECRET = "core's own"
    const result = await withLocation(fixture("serve", { env: { GIVEN: "yes" } }), () =>
      Effect.gen(function* () {
        const current = yield* turn
        const pid = (yield* stateOf).pid!
        return {
          pid,
          parent: readFileSync(`/proc/${ProcessGroup.stat(pid)!.ppid}/cmdline`, "utf8"),
          group: ProcessGroup.members(pid),
          given: yield* settle(current, "fix_env", { name: "GIVEN" }),
          secret: yield* settle(current, "fix_env", { name: "CORE_REMOTE_SECRET" }),
        }
      }),
    )
    delete process.env.CORE_REMOTE_SECRET
    expect(result.group).toContain(result.pid)
    // Started under a supervisor of its own, which ends it with core however core ends.
    expect(result.parent).toContain("__supervise")
    expect(textOf(result.given.settlement)).toBe("yes")
    expect(textOf(result.secret.settlement)).toBe("(unset)")
    expect(alive(result.pid)).toBe(false)
  }, 30_000)

  // A server's stdio were Bun's socket pairs, which a program cannot open again by name (ENXIO): a launcher script
  // under `set -e` that wrote `> /dev/stderr` died before starting the server.
  test("a server started by a script that opens its stdin, stdout and stderr by name runs; its pipes are let go with it", async () => {
    const directory = tempDir("core-remote-script-")
    const script = join(directory, "serve.sh")
    writeFileSync(
      script,
      `#!/bin/sh\nset -e\necho "starting the fixture" > /dev/stderr\nexec "${BUN}" "${FIXTURE}" serve < /dev/stdin > /dev/stdout\n`,
    )
    chmodSync(script, 0o755)
    const descriptors = () => readdirSync("/proc/self/fd").length
    const run = () =>
      withLocation({ mcp: { fix: { command: [script] } }, permission: { "fix_*": "allow" } }, () =>
        Effect.gen(function* () {
          const echoed = yield* settle(yield* turn, "fix_echo", { text: "by name" })
          const crashed = yield* settle(yield* turn, "fix_crash", {})
          return { echoed, crashed }
        }),
      )
    const first = await run()
    expect(first.echoed.settlement.status).toBe("success")
    expect(textOf(first.echoed.settlement)).toBe("echo: by name")
    // What the script and the server wrote on stderr reaches the failure that says how it ended.
    expect(first.crashed.settlement.error?.message).toContain("exited with code 7: starting the fixture\nfixture: crashing on purpose")
    const before = descriptors()
    for (let round = 0; round < 3; round++) await run()
    // Each server's pipes (three ends core keeps, and Bun's copies of them) are closed once it is gone.
    let after = descriptors()
    for (let wait = 0; wait < 50 && after > before; wait++) {
      await Bun.sleep(20)
      after = descriptors()
    }
    expect(after).toBeLessThanOrEqual(before)
  }, 60_000)

  // A server that says its list changed after every listing kept core listing it as fast as it could (a core's
  // worth of processor), each listing making every turn stale.
  test("a server announcing list_changed after every listing is listed once a second at most; the same tools leave turns current", async () => {
    const started = Date.now()
    const result = await withLocation(fixture("relist"), () =>
      Effect.gen(function* () {
        const before = yield* turn
        // Read until the server was listed three times (two of them on its announcements), or for 20 s at most: a
        // loaded machine is slower to get there, never allowed more listings for the time it took.
        let listings = 0
        while (listings < 3 && Date.now() - started < 20_000) {
          yield* Effect.sleep("500 millis")
          listings = Number(textOf((yield* settle(before, "fix_listings", {})).settlement))
        }
        return { listings, seconds: (Date.now() - started) / 1000, echo: yield* settle(before, "fix_echo", { text: "still current" }) }
      }),
    )
    // The first listing, the first announcement's at once, then one a second at most (and one more for the timers).
    expect(result.listings).toBeGreaterThanOrEqual(3)
    expect(result.listings).toBeLessThanOrEqual(3 + Math.floor(result.seconds))
    expect(textOf(result.echo.settlement)).toBe("echo: still current")
  }, 30_000)

  // Announced before the first listing was registered (here, before its answer), list_changed was dropped: the
  // server's new tool stayed unlisted until it announced again, which this one never does.
  test("list_changed that comes while the first listing is answered is acted on once it is registered", async () => {
    const result = await withLocation(fixture("early"), () =>
      Effect.gen(function* () {
        let names: ReadonlyArray<string> = []
        for (let polls = 0; polls < 100 && !names.includes("fix_extra"); polls++) {
          yield* Effect.sleep("100 millis")
          names = (yield* turn).definitions.map((definition) => definition.name)
        }
        return names
      }),
    )
    expect(result).toContain("fix_extra")
  }, 30_000)

  test("list_changed registers the tools again in a fresh scope: new tools appear, older turns are stale", async () => {
    const result = await withLocation(fixture(), () =>
      Effect.gen(function* () {
        const before = yield* turn
        const remote = yield* McpClient.Service
        yield* settle(before, "fix_grow", {})
        // The notification is handled when it arrives; the state shows it once the tools were listed again.
        while (!remote.states()[0]!.tools.includes("fix_extra")) yield* Effect.yieldNow
        const after = yield* turn
        const echo = (of: typeof before) => of.definitions.find((definition) => definition.name === "fix_echo")
        return {
          stale: yield* settle(before, "fix_echo", { text: "x" }),
          names: after.definitions.map((definition) => definition.name),
          extra: yield* settle(after, "fix_extra", {}),
          // A tool the listing left as it was is not made again (its validators, its schemas): the same definition.
          remade: echo(after) !== echo(before),
        }
      }),
    )
    expect(result.stale.settlement.error?.kind).toBe("stale")
    expect(result.remade).toBe(false)
    expect(result.names).toContain("fix_extra")
    expect(textOf(result.extra.settlement)).toBe("extra")
  }, 30_000)
})

describe("core as an MCP client: servers that misbehave", () => {
  test("lines on stdout that are not JSON-RPC are skipped and counted; calls still settle", async () => {
    const result = await withLocation(fixture("garbage"), () =>
      Effect.gen(function* () {
        const current = yield* turn
        return { echo: yield* settle(current, "fix_echo", { text: "through" }), state: yield* stateOf }
      }),
    )
    expect(textOf(result.echo.settlement)).toBe("echo: through")
    expect(result.state.ignoredLines).toBeGreaterThanOrEqual(3)
  }, 30_000)

  test("a server that never answers is a diagnostic after timeoutMs, its process ended; the rest of the Location works", async () => {
    const result = await withLocation(fixture("mute", { timeoutMs: 500 }), () =>
      Effect.gen(function* () {
        const current = yield* turn
        const remote = yield* McpClient.Service
        return { names: current.definitions.map((definition) => definition.name), state: yield* stateOf, diagnostics: remote.diagnostics() }
      }),
    )
    expect(result.state.status).toBe("failed")
    expect(result.names).toContain("read")
    expect(result.names.some((name) => name.startsWith("fix_"))).toBe(false)
    expect(result.diagnostics[0]!.message).toStartWith('MCP server "fix": the server did not answer within 500 ms while connecting')
    expect(result.diagnostics[0]!.file).toEndWith("core.json")
    expect(alive(result.state.pid!)).toBe(false)
  }, 30_000)

  test("a Location closed while a server is still connecting ends it at once, without waiting for the timeout", async () => {
    const result = await Effect.runPromise(
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          McpClient.layer({
            // A Location of its own: bun may lie inside the repository, and a server's program never runs from its Location.
            directory: tempDir("core-remote-loc-"),
            servers: [{ name: "fix", file: "core.json", server: { command: [BUN, FIXTURE, "mute"], timeoutMs: 60_000 } }],
            eager: false,
          }).pipe(Layer.provideMerge(Registry.layer), Layer.provide(Registry.applicationLayer)),
          scope,
        )
        const remote = Context.get(context, McpClient.Service)
        const connecting = yield* Effect.forkChild(remote.ensure)
        while (remote.states()[0]!.pid === undefined) yield* Effect.yieldNow
        const pid = remote.states()[0]!.pid!
        // The server would answer nothing for a minute; this test's own time limit is far shorter.
        yield* Scope.close(scope, Exit.void)
        yield* Fiber.join(connecting)
        return { pid, state: remote.states()[0]! }
      }),
    )
    expect(result.state.status).toBe("closed")
    expect(alive(result.pid)).toBe(false)
  }, 20_000)

  test("a command that does not exist is a diagnostic, not a crash", async () => {
    const result = await withLocation({ mcp: { ghost: { command: ["/nonexistent/mcp-server"] } } }, () =>
      Effect.gen(function* () {
        const current = yield* turn
        return { names: current.definitions.map((definition) => definition.name), diagnostics: (yield* McpClient.Service).diagnostics() }
      }),
    )
    expect(result.names).toContain("read")
    expect(result.diagnostics.map((diagnostic) => diagnostic.message)).toEqual([
      'MCP server "ghost": command "/nonexistent/mcp-server" not found (check the path, or that it is installed and on PATH)',
    ])
  }, 30_000)

  // What recursed past the stack (a validator, core's JSON of an answer) was an operational failure of core.
  test("a schema that refers to itself without end is not offered; an answer nested too deep fails that call", async () => {
    const result = await withLocation(fixture("deep"), () =>
      Effect.gen(function* () {
        const current = yield* turn
        return {
          names: current.definitions.map((definition) => definition.name),
          nested: yield* settle(current, "fix_nested", {}),
          diagnostics: (yield* McpClient.Service).diagnostics().map((diagnostic) => diagnostic.message),
        }
      }),
    )
    expect(result.names).not.toContain("fix_recur")
    expect(result.names).toContain("fix_echo")
    expect(result.diagnostics).toEqual(['MCP server "fix", tool "recur": its input schema cannot be used: a subschema applies itself to the same value without end'])
    expect(result.nested.settlement.status).toBe("error")
    expect(result.nested.settlement.error).toMatchObject({
      kind: "failure",
      message: 'MCP server "fix" answered fix_nested with arrays and objects nested deeper than 128 levels, which core does not read.',
    })
  }, 30_000)

  // A nextCursor on every page held `core tools` and every call of the Location for good, core's memory growing by the page.
  test("a server listing without end, or round in a circle, is listed so far: the tools listed first, and a diagnostic", async () => {
    const listed = (mode: string) =>
      withLocation(fixture(mode), () =>
        Effect.gen(function* () {
          const current = yield* turn
          const names = current.definitions.map((definition) => definition.name).filter((name) => name.startsWith("fix_"))
          return { names, diagnostics: (yield* McpClient.Service).diagnostics().map((diagnostic) => diagnostic.message) }
        }),
      )
    const endless = await listed("paginate")
    expect(endless.names).toHaveLength(Connection.MAX_PAGES)
    expect(endless.names.slice(0, 2)).toEqual(["fix_p0", "fix_p1"])
    expect(endless.diagnostics).toEqual([`MCP server "fix", it lists more than ${Connection.MAX_PAGES} pages of tools: those listed first are offered, the rest not`])
    const circle = await listed("circle")
    expect(circle.names.toSorted()).toEqual(["fix_p0", "fix_p1", "fix_p2"])
    expect(circle.diagnostics).toEqual(['MCP server "fix", its tools/list pages lead back to a page listed before: the tools listed so far are offered'])
    const many = await listed("many")
    expect(many.names).toHaveLength(Connection.MAX_TOOLS - 1)
    expect(many.names).not.toContain("fix_m0")
    expect(many.names).toContain("fix_m999")
    expect(many.names).not.toContain("fix_m1000")
    expect(many.diagnostics).toEqual([
      `MCP server "fix", it lists more than ${Connection.MAX_TOOLS} tools: those listed first are offered, the rest not`,
      `MCP server "fix", tool "m0": its description is 20000 characters long, more than the ${Connection.MAX_DESCRIPTION_CHARS} core offers a model at every turn`,
    ])
  }, 60_000)

  // Each within its bounds, a thousand such tools made every turn's catalog 69 MB.
  test("a server's tools beyond what one server may offer in all are left out, with a diagnostic; those listed first are offered", async () => {
    const result = await withLocation(fixture("heavy"), () =>
      Effect.gen(function* () {
        const current = yield* turn
        const names = current.definitions.map((definition) => definition.name).filter((name) => name.startsWith("fix_"))
        return { names, diagnostics: (yield* McpClient.Service).diagnostics().map((diagnostic) => diagnostic.message) }
      }),
    )
    expect(result.names.toSorted()).toEqual(Array.from({ length: 17 }, (_, index) => `fix_h${index}`).toSorted())
    expect(result.diagnostics).toEqual([
      `MCP server "fix", 23 of its tools are not offered: with them, its tools' descriptions and schemas would make more than the ${Connection.MAX_SERVER_CHARS} characters core offers a model from one server at every turn (those listed first are offered)`,
    ])
  }, 60_000)

  // Each page was given timeoutMs of its own: a server answering each just in time, a cursor on each, held every turn
  // of the Location for MAX_PAGES times timeoutMs (100 minutes at the default).
  test("a server's listing is given timeoutMs in all: pages answered slowly end it, with the tools listed by then", async () => {
    const started = performance.now()
    const result = await withLocation(fixture("paginate", { env: { PAGE_DELAY_MS: "400" }, timeoutMs: 1_500 }), () =>
      Effect.gen(function* () {
        const current = yield* turn
        const names = current.definitions.map((definition) => definition.name).filter((name) => name.startsWith("fix_"))
        return { names, diagnostics: (yield* McpClient.Service).diagnostics().map((diagnostic) => diagnostic.message), state: yield* stateOf }
      }),
    )
    expect(performance.now() - started).toBeLessThan(10_000)
    expect(result.names.length).toBeGreaterThan(0)
    expect(result.names.length).toBeLessThanOrEqual(4)
    expect(result.names[0]).toBe("fix_p0")
    expect(result.diagnostics).toEqual(['MCP server "fix", its tools/list pages took longer than 1500 ms in all: the tools listed by then are offered, the rest not'])
    expect(result.state.status).toBe("connected")
  }, 60_000)

  test("tool names core cannot offer are diagnostics naming the server and the tool; the others are offered", async () => {
    const result = await withLocation(fixture("bad-names"), () =>
      Effect.gen(function* () {
        const current = yield* turn
        return { names: current.definitions.map((definition) => definition.name), diagnostics: (yield* McpClient.Service).diagnostics() }
      }),
    )
    expect(result.names).toContain("fix_echo")
    const messages = result.diagnostics.map((diagnostic) => diagnostic.message)
    expect(messages).toHaveLength(2)
    expect(messages[0]).toStartWith('MCP server "fix", tool "has space": its core name "fix_has space" is not a valid tool name')
    expect(messages[1]).toStartWith(`MCP server "fix", tool "${"x".repeat(70)}": its core name`)
  }, 30_000)

  test("a tool listed twice, one whose schema cannot be compiled or is not an object are diagnostics naming the server and the tool; the others are offered", async () => {
    const result = await withLocation(fixture("bad-tools"), () =>
      Effect.gen(function* () {
        const current = yield* turn
        return {
          names: current.definitions.map((definition) => definition.name),
          echo: yield* settle(current, "fix_echo", { text: "first" }),
          echoDescription: current.definitions.find((definition) => definition.name === "fix_echo")!.description,
          state: yield* stateOf,
          diagnostics: (yield* McpClient.Service).diagnostics(),
        }
      }),
    )
    const messages = result.diagnostics.map((diagnostic) => diagnostic.message)
    expect(messages).toEqual([
      expect.stringContaining('MCP server "fix", tool "scalar": not offered: inputSchema.type: '),
      expect.stringContaining('MCP server "fix", tool "listy": not offered: outputSchema.type: '),
      expect.stringMatching(/^MCP server "fix", tool "fat": not offered: its input and output schemas are 70\d{3} characters of JSON, more than the 65536 core offers/),
      expect.stringMatching(/^MCP server "fix", tool "fat-output": not offered: its input and output schemas are 70\d{3} characters of JSON/),
      'MCP server "fix", tool "echo": the server lists "echo" twice',
      'MCP server "fix", tool "unmatched": its input schema cannot be used: the pattern "(" is not a regular expression',
      'MCP server "fix", tool "unmatched-keys": its input schema cannot be used: the pattern "[a-z" is not a regular expression',
      expect.stringContaining('MCP server "fix", tool "untyped": its input schema cannot be used: '),
    ])
    expect(messages[7]).toContain("strnig")
    for (const name of ["fix_unmatched", "fix_unmatched-keys", "fix_untyped", "fix_scalar", "fix_listy", "fix_fat", "fix_fat-output"]) {
      expect(result.names).not.toContain(name)
    }
    // The first of the two listings is the one offered.
    expect(result.names.filter((name) => name === "fix_echo")).toHaveLength(1)
    expect(result.echo.settlement.status).toBe("success")
    expect(result.echoDescription).toBe("Echoes text")
    expect(result.state.tools).toContain("fix_pid")
    expect(result.state.tools).toContain("fix_throws")
    expect(result.names).toContain("fix_roomy")
  }, 30_000)

  test("two servers' schemas of the same $id each check their own tool's input", async () => {
    const typed = (type: string) => ({ command: [BUN, FIXTURE, "typed"], env: { VALUE_TYPE: type } })
    const result = await withLocation(
      { mcp: { one: typed("string"), two: typed("number") }, permission: { "one_*": "allow", "two_*": "allow" } },
      () =>
        Effect.gen(function* () {
          const current = yield* turn
          const call = (name: string, value: unknown) => Effect.map(settle(current, name, { value }), (done) => done.settlement)
          return {
            text: yield* call("one_typed", "a"),
            number: yield* call("two_typed", 5),
            textRefused: yield* call("one_typed", 5),
            numberRefused: yield* call("two_typed", "a"),
          }
        }),
    )
    expect(textOf(result.text)).toBe('typed: "a"')
    expect(textOf(result.number)).toBe("typed: 5")
    expect(result.textRefused.error?.kind).toBe("invalid_input")
    expect(result.numberRefused.error?.kind).toBe("invalid_input")
  }, 30_000)

  test("a server tool whose core name is already taken in the Location is not offered, and says so", async () => {
    const tool =
      `import { Tool } from "@core/tool"\nimport { Effect, Schema } from "effect"\n` +
      `export default Tool.make({ description: "mine", input: Schema.Struct({}), output: Schema.String, ` +
      `execute: () => Effect.succeed("mine") })\n`
    const result = await withLocation(
      { ...fixture(), files: { "tools/fix_echo.ts": tool } },
      () =>
        Effect.gen(function* () {
          const current = yield* turn
          return { mine: yield* settle(current, "fix_echo", {}), diagnostics: (yield* McpClient.Service).diagnostics() }
        }),
    )
    expect(textOf(result.mine.settlement)).toBe("mine")
    expect(result.diagnostics.map((diagnostic) => diagnostic.message)).toEqual([
      'MCP server "fix", tool "echo": "fix_echo" is already a tool in this Location; the server\'s tool is not offered',
    ])
  }, 30_000)
})

/** A port nothing listens on now. */
const freePort = async (): Promise<number> => {
  const probe = Bun.serve({ port: 0, fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

/** Resolves when the everything server says on stderr that it listens. */
const listening = async (stderr: ReadableStream<Uint8Array>) => {
  const decoder = new TextDecoder()
  let seen = ""
  for await (const chunk of stderr) {
    seen += decoder.decode(chunk)
    if (seen.includes("listening on port")) return
  }
  throw new Error(`the server ended before listening:\n${seen}`)
}
