// `/mcp` under attack: a local process without the token, a page rebinding DNS, and a token holder sending hostile
// bodies. Each request must be refused before a session exists or a tool runs, or answered without harm.

import { describe, expect, test } from "bun:test"
import { realpathSync } from "node:fs"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { Effect } from "effect"
import { McpEvents } from "../../src/mcp-server/mcp-events"
import { IMPORTS, runs, write } from "../cli/fixture"
import { tempDir } from "../support/temp"
import { echoTool } from "../support/tools"
import { HOST, INITIALIZE, TOKEN, httpHarness, httpTransport } from "./support"

const ECHO = echoTool({ record: "echo" })

const { served, connect, cleanups } = httpHarness()

const AUTH = { host: HOST, authorization: `Bearer ${TOKEN}` }

/** Reports progress `STEPS` times, then answers "done". */
const STEPS = 500
const CHATTY = `${IMPORTS}
export default Tool.make({
  description: "Reports progress, then finishes",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: (_input, context) => Effect.gen(function* () {
    for (let step = 1; step <= ${STEPS}; step++) yield* context.progress({ message: \`step \${step}\` })
    return "done"
  }),
})
`

const send = (
  handler: (request: Request) => Promise<Response>,
  method: string,
  headers: Record<string, string>,
  body?: unknown,
) =>
  handler(
    new Request(`http://${HOST}/mcp`, {
      method,
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    }),
  )

const callBody = (id: number, args: unknown, name = "echo") => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args },
})

describe("/mcp against a client without the token", () => {
  test("every method is refused without the token (401) and under a foreign Host (403), and a session survives it", async () => {
    const { web, mcp } = await served({ "tools/echo.ts": ECHO })
    const { client, transport } = await connect(web.handler)
    const id = transport.sessionId!
    for (const method of ["GET", "POST", "DELETE", "HEAD", "OPTIONS", "PUT"]) {
      const body = method === "POST" ? callBody(7, { text: "x" }) : undefined
      const bare = await send(web.handler, method, { host: HOST, "mcp-session-id": id }, body)
      expect([method, bare.status]).toEqual([method, 401])
      const wrong = await send(web.handler, method, { host: HOST, authorization: "Bearer nope", "mcp-session-id": id }, body)
      expect([method, wrong.status]).toEqual([method, 401])
      const rebound = await send(web.handler, method, { ...AUTH, host: "evil.example:4321", "mcp-session-id": id }, body)
      expect([method, rebound.status]).toEqual([method, 403])
    }
    expect(mcp.size()).toBe(1)
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("echo")
  })
})

describe("/mcp against a token holder's hostile requests", () => {
  test("an initialize naming a Location outside the allowed roots is refused and makes no session", async () => {
    const outside = realpathSync(tempDir("core-outside-"))
    const { web, mcp } = await served({ "tools/echo.ts": ECHO })
    const answer = await send(web.handler, "POST", { ...AUTH, "x-core-location": outside }, INITIALIZE)
    expect(answer.status).toBe(403)
    const dotted = await send(web.handler, "POST", { ...AUTH, "x-core-location": `${outside}/../..` }, INITIALIZE)
    expect(dotted.status).toBe(403)
    expect(mcp.size()).toBe(0)
  })

  test("an open session cannot be moved to a Location outside the roots, nor to another allowed one", async () => {
    const root = realpathSync(tempDir("core-roots-"))
    const other = write(`${root}/other`, { "tools/echo.ts": ECHO })
    const outside = realpathSync(tempDir("core-outside-"))
    const { web, box } = await served({ "tools/echo.ts": ECHO }, { roots: [root] })
    const { transport } = await connect(web.handler)
    const id = transport.sessionId!
    const far = await send(web.handler, "POST", { ...AUTH, "mcp-session-id": id, "x-core-location": outside }, callBody(5, { text: "x" }))
    expect(far.status).toBe(403)
    const near = await send(web.handler, "POST", { ...AUTH, "mcp-session-id": id, "x-core-location": other }, callBody(6, { text: "x" }))
    expect(near.status).toBe(400)
    expect(runs(box, "echo")).toBe(0)
  })

  // Every 400 was worded -32700 (a parse error), though the body was JSON: only a body that is no JSON text is one.
  test("a refused X-Core-Location is an invalid request (-32600), before a session and in one; JSON-RPC's parse error is for bodies", async () => {
    const { web, box } = await served({ "tools/echo.ts": ECHO })
    const { transport } = await connect(web.handler)
    for (const session of [{}, { "mcp-session-id": transport.sessionId! }]) {
      for (const [named, status] of [["rel", 400], ["/etc", 403]] as const) {
        const refused = await send(web.handler, "POST", { ...AUTH, ...session, "x-core-location": named }, "mcp-session-id" in session ? callBody(8, { text: "x" }) : INITIALIZE)
        expect(refused.status).toBe(status)
        expect(await refused.json()).toEqual({ jsonrpc: "2.0", error: { code: -32600, message: expect.stringContaining(named) }, id: null })
      }
    }
    expect(runs(box, "echo")).toBe(0)
  })

  test("a session id the client makes up is not adopted: initialize with it makes a fresh id, a call with it is 404", async () => {
    const { web, mcp } = await served({ "tools/echo.ts": ECHO })
    const chosen = "00000000-0000-4000-8000-000000000000"
    const fixed = await send(web.handler, "POST", { ...AUTH, "mcp-session-id": chosen }, INITIALIZE)
    expect(fixed.status).toBe(404)
    const fresh = await send(web.handler, "POST", AUTH, INITIALIZE)
    expect(fresh.status).toBe(200)
    expect(fresh.headers.get("mcp-session-id")).not.toBe(chosen)
    expect(fresh.headers.get("mcp-session-id")).toMatch(/^[0-9a-f-]{36}$/)
    expect(mcp.size()).toBe(1)
  })

  test("?agent= on a later request does not switch the session's agent", async () => {
    const files = {
      "tools/echo.ts": ECHO,
      "core.json": JSON.stringify({ permission: { "*": "allow" }, agents: { plan: { permission: { echo: "deny" } } } }),
    }
    const { web, box } = await served(files)
    const { transport } = await connect(web.handler, { search: "?agent=plan" })
    const id = transport.sessionId!
    const switched = await web.handler(
      new Request(`http://${HOST}/mcp?agent=build`, {
        method: "POST",
        headers: { ...AUTH, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": id, "mcp-protocol-version": "2025-06-18" },
        body: JSON.stringify(callBody(4, { text: "x" })),
      }),
    )
    const text = await switched.text()
    expect(text).toContain("isError")
    expect(runs(box, "echo")).toBe(0)
  })

  test("deeply nested, NUL-laden and batched bodies are answered without running anything unchecked", async () => {
    const { web, box, mcp } = await served({
      "tools/echo.ts": ECHO,
      "core.json": JSON.stringify({ permission: { "*": "allow" } }),
    })
    const { transport } = await connect(web.handler)
    const headers = { ...AUTH, "mcp-session-id": transport.sessionId!, "mcp-protocol-version": "2025-06-18" }
    const depth = 200_000
    const deep = `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"text":${"[".repeat(depth)}${"]".repeat(depth)}}}}`
    const deepAnswer = await send(web.handler, "POST", headers, deep)
    expect(deepAnswer.status).toBeLessThan(500)
    await deepAnswer.text()
    const deepInit = `${"[".repeat(depth)}${"]".repeat(depth)}`
    const deepInitAnswer = await send(web.handler, "POST", AUTH, deepInit)
    expect(deepInitAnswer.status).toBeLessThan(500)
    // A NUL in the tool's name is invalid params (no tool has such a name); in the input alone, invalid input.
    const nul = await send(web.handler, "POST", headers, callBody(12, { text: "a\u0000b" }, "ec\u0000ho"))
    expect(nul.status).toBeLessThan(500)
    expect(JSON.parse(await nul.text()).error).toMatchObject({ code: -32602, message: expect.stringContaining("holds a NUL character") })
    const nulInput = await send(web.handler, "POST", headers, callBody(15, { text: "a\u0000b" }))
    expect(nulInput.status).toBeLessThan(500)
    expect(await nulInput.text()).toContain("isError")
    const batch = await send(web.handler, "POST", headers, [callBody(13, { text: "one" }), callBody(14, { text: "two" })])
    expect(batch.status).toBeLessThan(500)
    await batch.text()
    const batchInit = await send(web.handler, "POST", AUTH, [INITIALIZE, INITIALIZE])
    expect(batchInit.status).toBe(400)
    expect(mcp.size()).toBe(1)
    expect(runs(box, "echo")).toBeLessThanOrEqual(2)
  })

  // The transport answered such JSON -32700 (a parse error), where stdio answers -32600, as JSON-RPC says.
  test("JSON that is no JSON-RPC message is an invalid request (-32600), under its id where it has one, as over stdio", async () => {
    const { web } = await served()
    const { transport } = await connect(web.handler)
    const headers = { ...AUTH, "mcp-session-id": transport.sessionId!, "mcp-protocol-version": "2025-06-18" }
    for (const [body, id] of [
      [{ jsonrpc: "1.0", id: 5, method: "tools/list" }, 5],
      [{ id: null, method: "tools/list" }, null],
      [5, null],
      [[1, 2], null],
    ] as const) {
      const answer = await send(web.handler, "POST", headers, body)
      expect([body, answer.status]).toEqual([body, 400])
      expect([body, await answer.json()]).toEqual([body, { jsonrpc: "2.0", error: { code: -32600, message: expect.stringContaining("not a JSON-RPC 2.0") }, id }])
    }
    // Text that is no JSON stays a parse error.
    const garbage = await send(web.handler, "POST", headers, "{not json")
    expect(((await garbage.json()) as { error: { code: number } }).error.code).toBe(-32700)
  })

  // Read as a number, 9007199254740993 was answered as 9007199254740992, and 1e400 as null: not the id sent.
  test("an id no JavaScript number holds exactly is answered as the client wrote it, as over stdio", async () => {
    const { web } = await served()
    const { transport } = await connect(web.handler)
    const headers = { ...AUTH, "mcp-session-id": transport.sessionId!, "mcp-protocol-version": "2025-06-18" }
    for (const [body, id, code] of [
      ['{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list"}', "9007199254740993", -32600],
      ['{"jsonrpc":"2.0","id":12345678901234567891,"method":"tools/call","params":{"name":5}}', "12345678901234567891", -32602],
      ['{"jsonrpc":"2.0","id":1e400,"method":"ping"}', "1e400", -32600],
      ['{"jsonrpc":"2.0","id":"9007199254740993","method":"tools/call","params":{"name":5}}', '"9007199254740993"', -32602],
      // A batch of one is answered as its element: with that element's id.
      ['[{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":5}}]', "1.5", -32602],
    ] as const) {
      const text = await (await send(web.handler, "POST", headers, body)).text()
      expect([body, /"id":([^,}]*)/.exec(text)?.[1], JSON.parse(text).error.code]).toEqual([body, id, code])
    }
  })

  test("a body over the cap is refused with 413 whether declared or chunked", async () => {
    const { web, mcp } = await served()
    const big = "x".repeat(11 * 1024 * 1024)
    const declared = await send(web.handler, "POST", AUTH, `{"a":"${big}"}`)
    expect(declared.status).toBe(413)
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        const chunk = new TextEncoder().encode("x".repeat(1024 * 1024))
        for (let i = 0; i < 12; i++) controller.enqueue(chunk)
        controller.close()
      },
    })
    const chunked = await web.handler(
      new Request(`http://${HOST}/mcp`, { method: "POST", headers: { ...AUTH, "content-type": "application/json" }, body: stream }),
    )
    expect(chunked.status).toBe(413)
    expect(mcp.size()).toBe(0)
  })

  // Answered in the API's error shape ({"error":{"kind":…}}), which an MCP client cannot read.
  test("a body not UTF-8, or over the cap, is refused in JSON-RPC's words, before a session and in one", async () => {
    const { web } = await served({ "tools/echo.ts": ECHO })
    const { transport } = await connect(web.handler)
    const raw = (headers: Record<string, string>, body: Uint8Array | string) =>
      web.handler(
        new Request(`http://${HOST}/mcp`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
          body,
        }),
      )
    const notUtf8 = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":7,"method":"ping","x":"'), Buffer.from([0xff]), Buffer.from('"}')])
    const big = `{"a":"${"x".repeat(11 * 1024 * 1024)}"}`
    for (const headers of [AUTH, { ...AUTH, "mcp-session-id": transport.sessionId! }]) {
      const refused = await raw(headers, notUtf8)
      expect(refused.status).toBe(400)
      expect(await refused.json()).toEqual({ jsonrpc: "2.0", error: { code: -32700, message: expect.stringContaining("not valid UTF-8") }, id: null })
      const large = await raw(headers, big)
      expect(large.status).toBe(413)
      expect(await large.json()).toEqual({ jsonrpc: "2.0", error: { code: -32600, message: expect.stringContaining("10 MiB") }, id: null })
    }
  })
})

describe("/mcp elicitation across sessions", () => {
  test("an elicitation answer posted by another session does not answer this session's ask", async () => {
    const { ElicitRequestSchema } = await import("@modelcontextprotocol/sdk/types.js")
    const { web, box, sidecar } = await served({
      "tools/echo.ts": ECHO,
      "core.json": JSON.stringify({ permission: { "*": "allow", echo: "ask" } }),
    })
    const transport = httpTransport(web.handler)
    const victim = new Client({ name: "victim", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } })
    let asked!: (id: string | number) => void
    const elicited = new Promise<string | number>((resolve) => {
      asked = resolve
    })
    let answer!: (result: { action: "decline" }) => void
    victim.setRequestHandler(ElicitRequestSchema, (_request, extra) => {
      asked(extra.requestId)
      return new Promise((resolve) => {
        answer = resolve
      })
    })
    await victim.connect(transport)
    cleanups.push(() => victim.close())
    const call = victim.callTool({ name: "echo", arguments: { text: "x" } })
    const requestId = await elicited
    const attacker = await connect(web.handler)
    const forged = {
      jsonrpc: "2.0",
      id: requestId,
      result: { action: "accept", content: { reply: "once" } },
    }
    const headers = { ...AUTH, "mcp-session-id": attacker.transport.sessionId!, "mcp-protocol-version": "2025-06-18" }
    const posted = await send(web.handler, "POST", headers, forged)
    expect(posted.status).toBeLessThan(500)
    await posted.text()
    // The ask is still the victim's to answer, and nothing ran.
    expect((await Effect.runPromise(sidecar.primary.pending)).length).toBe(1)
    expect(runs(box, "echo")).toBe(0)
    answer({ action: "decline" })
    const result = await call
    expect(result.isError).toBe(true)
    expect(result._meta?.["core/settlement"]).toMatchObject({ status: "declined" })
    expect(runs(box, "echo")).toBe(0)
  })
})

describe("/mcp resources/read against guessed and crafted URIs", () => {
  test("a managed output URI with a path in it, or a guessed id, reads nothing", async () => {
    const { web } = await served()
    const { client } = await connect(web.handler)
    for (const uri of [
      "core://outputs/..%2F..%2Fstore.sqlite",
      "core://outputs/%2Fetc%2Fpasswd",
      "core://outputs/out_00000000_0000000000000000",
      "file:///etc/passwd",
      "core://outputs/out_00000000_0000000000000000/structured/..",
    ]) {
      await expect(client.readResource({ uri })).rejects.toThrow(/-32002/)
    }
  })
})

describe("/mcp against a client that does not read its event stream", () => {
  test("a call's progress waiting for the client is replaced by the latest; its result is kept", async () => {
    const { web, sidecar, answers } = await served({ "tools/chatty.ts": CHATTY, "core.json": JSON.stringify({ permission: { "*": "allow" } }) })
    const { transport } = await connect(web.handler)
    const headers = { ...AUTH, "mcp-session-id": transport.sessionId!, "mcp-protocol-version": "2025-06-18" }
    const ids = { sessionID: "ses_unread", toolCallID: "call_unread" }
    const body = { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "chatty", arguments: {}, _meta: { progressToken: "p", ...ids } } }
    const answer = await send(web.handler, "POST", headers, body)
    expect(answer.headers.get("content-type")).toStartWith("text/event-stream")
    // The stream is not read until every event of the call, its result last, has been written to it.
    await McpEvents.written(answers.at(-1)!.body!)
    const known = await Effect.runPromise(sidecar.store.lookup({ ...ids, location: sidecar.primary.directory }))
    expect(known?.state).toBe("settled")
    const events = (await answer.text())
      .split("\n\n")
      .filter((event) => event.startsWith("event: message"))
      .map((event) => JSON.parse(event.slice(event.indexOf("data: ") + "data: ".length)))
    const progress = events.filter((event) => event.method === "notifications/progress")
    expect(progress.length).toBeGreaterThanOrEqual(1)
    expect(progress.length).toBeLessThanOrEqual(2)
    expect(progress.at(-1).params).toMatchObject({ progressToken: "p", progress: STEPS, message: `step ${STEPS}` })
    expect(events.at(-1)).toMatchObject({ id: 9, result: { content: [{ type: "text", text: "done" }] } })
  })
})

describe("McpEvents.kindOf", () => {
  const event = (message: unknown) => new TextEncoder().encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`)
  test("names the events a later one replaces, and keeps every other", () => {
    const progress = (token: unknown) => ({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: 1 } })
    expect(McpEvents.kindOf(event(progress("a")))).toBe('progress "a"')
    expect(McpEvents.kindOf(event(progress(7)))).toBe("progress 7")
    expect(McpEvents.kindOf(event({ jsonrpc: "2.0", method: "notifications/tools/list_changed" }))).toBe("list_changed")
    expect(McpEvents.kindOf(new TextEncoder().encode(": keepalive\n\n"))).toBe("comment")
    // Results, requests to the client, other notifications, two events in one chunk, a broken one: all kept.
    expect(McpEvents.kindOf(event({ jsonrpc: "2.0", id: 1, result: {} }))).toBeUndefined()
    expect(McpEvents.kindOf(event({ jsonrpc: "2.0", id: 2, method: "elicitation/create", params: {} }))).toBeUndefined()
    expect(McpEvents.kindOf(event({ jsonrpc: "2.0", method: "notifications/message", params: {} }))).toBeUndefined()
    expect(McpEvents.kindOf(event({ jsonrpc: "2.0", method: "notifications/progress", params: {} }))).toBeUndefined()
    const two = new Uint8Array([...event(progress("a")), ...event(progress("a"))])
    expect(McpEvents.kindOf(two)).toBeUndefined()
    expect(McpEvents.kindOf(new TextEncoder().encode("event: message\ndata: {oops\n\n"))).toBeUndefined()
    expect(McpEvents.kindOf(new TextEncoder().encode(`event: message\ndata: ${JSON.stringify(progress("a"))}\n`))).toBeUndefined()
  })

  test("a bounded stream hands on every event in order to a reader that keeps up", async () => {
    const chunks = [event({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "a", progress: 1 } })]
    chunks.push(event({ jsonrpc: "2.0", id: 1, result: {} }))
    let controller!: ReadableStreamDefaultController<Uint8Array>
    const source = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) })
    const reader = McpEvents.bounded(source).getReader()
    const seen: Array<string> = []
    for (const chunk of chunks) {
      const next = reader.read()
      controller.enqueue(chunk)
      seen.push(new TextDecoder().decode((await next).value))
    }
    controller.close()
    expect((await reader.read()).done).toBe(true)
    expect(seen).toEqual(chunks.map((chunk) => new TextDecoder().decode(chunk)))
  })

  test("written waits, without reading, until the source has written its last event; the events wait whole", async () => {
    let controller!: ReadableStreamDefaultController<Uint8Array>
    const source = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) })
    const stream = McpEvents.bounded(source)
    let done = false
    const written = McpEvents.written(stream).then(() => void (done = true))
    const progress = (step: number) => ({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "a", progress: step } })
    controller.enqueue(event(progress(1)))
    controller.enqueue(event(progress(2)))
    // Whatever is pending meanwhile runs first: the source has not ended, so nothing has resolved.
    await new Promise((resolve) => setImmediate(resolve))
    expect(done).toBe(false)
    controller.enqueue(event({ jsonrpc: "2.0", id: 1, result: {} }))
    controller.close()
    await written
    const events = (await new Response(stream).text()).split("\n\n").filter((text) => text !== "")
    expect(events.map((text) => JSON.parse(text.slice(text.indexOf("data: ") + 6)))).toEqual([progress(2), { jsonrpc: "2.0", id: 1, result: {} }])
    // A stream it did not make has nothing to wait for.
    await McpEvents.written(new ReadableStream())
  })
})
