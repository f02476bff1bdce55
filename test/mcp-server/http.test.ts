// `/mcp` as `core serve` answers it, in process: the same Host and token checks as every route, sessions made by
// initialize and bound to a Location and an agent, ended by DELETE or by the server's shutdown (their calls
// cancelled and recorded).

import { describe, expect, test } from "bun:test"
import { realpathSync } from "node:fs"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { IMPORTS, runs, write } from "../cli/fixture"
import { coreJson } from "../cli/permissions-fixture"
import { tempDir } from "../support/temp"
import { HOST, INITIALIZE, TOKEN, httpHarness } from "./support"
import { GREET, WAIT } from "./tools"

const HERE = `${IMPORTS}
export default Tool.make({
  description: "Says where it is",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed(import.meta.dir),
})
`

const { served, connect } = httpHarness()

const post = (handler: (request: Request) => Promise<Response>, headers: Record<string, string>, body: unknown = INITIALIZE) =>
  handler(
    new Request(`http://${HOST}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    }),
  )

describe("/mcp", () => {
  test("without the token it is refused with 401, and with a foreign Host with 403, before any session exists", async () => {
    const { web, mcp } = await served()
    const missing = await post(web.handler, { host: HOST })
    expect(missing.status).toBe(401)
    expect(((await missing.json()) as any).error.kind).toBe("unauthorized")
    expect((await post(web.handler, { host: HOST, authorization: "Bearer wrong" })).status).toBe(401)
    expect((await post(web.handler, { host: "evil.example:4321", authorization: `Bearer ${TOKEN}` })).status).toBe(403)
    expect(mcp.size()).toBe(0)
    await expect(connect(web.handler, { token: null })).rejects.toThrow()
  })

  test("a request that is not JSON, or not an initialize without a session, is refused with a JSON-RPC error", async () => {
    const { web, mcp } = await served()
    const auth = { host: HOST, authorization: `Bearer ${TOKEN}` }
    const garbage = await post(web.handler, auth, "{not json")
    expect(garbage.status).toBe(400)
    expect(((await garbage.json()) as any).error.code).toBe(-32700)
    const sessionless = await post(web.handler, auth, { jsonrpc: "2.0", id: 2, method: "tools/list" })
    expect(sessionless.status).toBe(400)
    const unknown = await post(web.handler, { ...auth, "mcp-session-id": "nope" }, { jsonrpc: "2.0", id: 2, method: "tools/list" })
    expect(unknown.status).toBe(404)
    const put = await web.handler(new Request(`http://${HOST}/mcp`, { method: "PUT", headers: auth }))
    expect(put.status).toBe(405)
    expect(mcp.size()).toBe(0)
  })

  test("a session serves the Location its initialize named with X-Core-Location, and refuses another one later", async () => {
    const root = realpathSync(tempDir("core-roots-"))
    const other = write(`${root}/other`, { "tools/here.ts": HERE })
    const { web, box } = await served({}, { roots: [root] })
    const { client, transport } = await connect(web.handler, { headers: { "x-core-location": other } })
    const names = (await client.listTools()).tools.map((tool) => tool.name)
    expect(names).toContain("here")
    const result = await client.callTool({ name: "here", arguments: {} })
    expect((result.content as Array<{ text: string }>)[0]!.text).toBe(`${other}/tools`)
    const elsewhere = await post(
      web.handler,
      { host: HOST, authorization: `Bearer ${TOKEN}`, "mcp-session-id": transport.sessionId!, "x-core-location": box.location },
      { jsonrpc: "2.0", id: 9, method: "tools/list" },
    )
    expect(elsewhere.status).toBe(400)
    expect(((await elsewhere.json()) as any).error.message).toContain(`This session serves ${other}`)
    const primary = await connect(web.handler)
    expect((await primary.client.listTools()).tools.map((tool) => tool.name)).not.toContain("here")
  })

  test("?agent= picks the agent whose rules filter the catalog; an unknown agent makes no session", async () => {
    const files = { "tools/wait.ts": WAIT, ...coreJson({ agents: { plan: { permission: { wait: "deny" } } } }) }
    const { web, mcp } = await served(files)
    const plan = await connect(web.handler, { search: "?agent=plan" })
    expect((await plan.client.listTools()).tools.map((tool) => tool.name)).not.toContain("wait")
    const build = await connect(web.handler)
    expect((await build.client.listTools()).tools.map((tool) => tool.name)).toContain("wait")
    expect(mcp.size()).toBe(2)
    await expect(connect(web.handler, { search: "?agent=ghost" })).rejects.toThrow(/Unknown agent \\"ghost\\"/)
    expect(mcp.size()).toBe(2)
  })

  test("the JSON API's definitions carry the same annotations (POST /v1/turns)", async () => {
    const { web } = await served()
    const answer = await web.handler(
      new Request(`http://${HOST}/v1/turns`, {
        method: "POST",
        headers: { host: HOST, authorization: `Bearer ${TOKEN}` },
        body: "{}",
      }),
    )
    const { definitions } = (await answer.json()) as { definitions: Array<{ name: string; annotations?: unknown }> }
    expect(definitions.find((definition) => definition.name === "grep")?.annotations).toEqual({
      readOnly: true,
      idempotent: true,
      openWorld: false,
    })
    expect(definitions.find((definition) => definition.name === "bash")?.annotations).toEqual({
      readOnly: false,
      destructive: true,
      idempotent: false,
      openWorld: true,
    })
  })

  test("DELETE ends the session: its running call is cancelled and recorded, and the session id is gone", async () => {
    const { web, mcp, box } = await served({ "tools/wait.ts": WAIT })
    const { client, transport } = await connect(web.handler)
    const call = { name: "wait", arguments: {}, _meta: { sessionID: "ses_host", toolCallID: "call_del" } }
    let started!: () => void
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    const pending = client.callTool(call, CallToolResultSchema, { onprogress: () => started() })
    pending.catch(() => undefined)
    await running
    const id = transport.sessionId!
    await transport.terminateSession()
    expect(mcp.size()).toBe(0)
    const again = await post(web.handler, { host: HOST, authorization: `Bearer ${TOKEN}`, "mcp-session-id": id }, {
      jsonrpc: "2.0",
      id: 3,
      method: "tools/list",
    })
    expect(again.status).toBe(404)
    const replay = await (await connect(web.handler)).client.callTool(call)
    expect(replay._meta?.["core/settlement"]).toMatchObject({ status: "cancelled" })
    expect(runs(box, "wait")).toBe(1)
  })

  // A DELETE refused for its protocol version was answered 400, and ended the session and cancelled its calls anyway.
  test("a DELETE refused (a protocol version not supported) ends nothing: the call runs on, the session too", async () => {
    const { web, mcp, box } = await served({ "tools/wait.ts": WAIT })
    const { client, transport } = await connect(web.handler)
    const id = transport.sessionId!
    let started!: () => void
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    const pending = client.callTool({ name: "wait", arguments: {} }, CallToolResultSchema, { onprogress: () => started() })
    await running
    const refused = await web.handler(
      new Request(`http://${HOST}/mcp`, {
        method: "DELETE",
        headers: { host: HOST, authorization: `Bearer ${TOKEN}`, "mcp-session-id": id, "mcp-protocol-version": "1999-01-01" },
      }),
    )
    expect(refused.status).toBe(400)
    expect(mcp.size()).toBe(1)
    // Still running, not cancelled: it has not answered.
    expect(await Promise.race([pending.then(() => "answered", () => "answered"), Bun.sleep(300).then(() => "running")])).toBe("running")
    expect((await client.listTools()).tools.some((tool) => tool.name === "wait")).toBe(true)
    pending.catch(() => undefined)
    await transport.terminateSession()
    expect(mcp.size()).toBe(0)
    expect(runs(box, "wait")).toBe(1)
  })

  // Answered 202 with no body, the POST left an SDK client waiting on the call's id until its own timeout.
  test("a call running as its session ends is answered, under its id, that the session ended; a streamed one too", async () => {
    const { web, box } = await served({ "tools/wait.ts": WAIT })
    const { client, transport } = await connect(web.handler)
    const id = transport.sessionId!
    const headers = { host: HOST, authorization: `Bearer ${TOKEN}`, "mcp-session-id": id, "mcp-protocol-version": "2025-06-18" }
    const plain = post(web.handler, headers, { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "wait", arguments: {} } })
    let started!: () => void
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    const streamed = client.callTool({ name: "wait", arguments: {} }, CallToolResultSchema, { onprogress: () => started() })
    streamed.catch(() => undefined)
    await running
    for (let tries = 0; tries < 200 && runs(box, "wait") < 2; tries++) await Bun.sleep(10)
    await transport.terminateSession()
    const answer = await plain
    expect(answer.status).toBe(200)
    expect(await answer.json()).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: { code: -32000, message: "The session ended before this call settled: the call was cancelled. Start a new session to call again." },
    })
    await expect(streamed).rejects.toThrow(/session ended|Connection closed/i)
  })

  test("a session unused for the idle period is ended by the next request; one with a call running is kept", async () => {
    let clock = 0
    const { web, mcp } = await served({ "tools/wait.ts": WAIT }, { sessions: { idleMs: 1_000, now: () => clock } })
    const idle = await connect(web.handler)
    const working = await connect(web.handler)
    let started!: () => void
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    const pending = working.client.callTool({ name: "wait", arguments: {} }, CallToolResultSchema, { onprogress: () => started() })
    pending.catch(() => undefined)
    await running
    clock = 5_000
    const fresh = await connect(web.handler)
    expect(mcp.size()).toBe(2)
    await expect(idle.client.listTools()).rejects.toThrow(/Session not found/)
    expect((await fresh.client.listTools()).tools.length).toBeGreaterThan(0)
  })

  test("beyond the bound, the least recently used idle session is ended", async () => {
    const { web, mcp } = await served({}, { sessions: { max: 2 } })
    const first = await connect(web.handler)
    const second = await connect(web.handler)
    await first.client.listTools()
    await connect(web.handler)
    expect(mcp.size()).toBe(2)
    await expect(second.client.listTools()).rejects.toThrow(/Session not found/)
    expect((await first.client.listTools()).tools.length).toBeGreaterThan(0)
  })

  test("with every session at the bound running a call, a new initialize is refused with 503 and none is ended", async () => {
    const { web, mcp } = await served({ "tools/wait.ts": WAIT }, { sessions: { max: 2 } })
    const busy = await Promise.all([connect(web.handler), connect(web.handler)])
    await Promise.all(
      busy.map(({ client }, index) => {
        let started!: () => void
        const running = new Promise<void>((resolve) => {
          started = resolve
        })
        client.callTool({ name: "wait", arguments: {}, _meta: { sessionID: "ses_full", toolCallID: `call_${index}` } }, CallToolResultSchema, {
          onprogress: () => started(),
        }).catch(() => undefined)
        return running
      }),
    )
    const refused = await post(web.handler, { host: HOST, authorization: `Bearer ${TOKEN}` })
    expect(refused.status).toBe(503)
    expect(((await refused.json()) as any).error.message).toStartWith("Too many MCP sessions (2), each with a call running")
    expect(mcp.size()).toBe(2)
    for (const { client } of busy) expect((await client.listTools()).tools.length).toBeGreaterThan(0)
  })

  test("the server's shutdown ends every session and records their running calls cancelled", async () => {
    const { web, mcp, box, sidecar } = await served({ "tools/wait.ts": WAIT })
    const { client } = await connect(web.handler)
    const call = { name: "wait", arguments: {}, _meta: { sessionID: "ses_host", toolCallID: "call_shut" } }
    let started!: () => void
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    const pending = client.callTool(call, CallToolResultSchema, { onprogress: () => started() })
    pending.catch(() => undefined)
    await running
    await Effect.runPromise(mcp.closeAll)
    expect(mcp.size()).toBe(0)
    const known = await Effect.runPromise(sidecar.store.lookup({ location: sidecar.primary.directory, sessionID: "ses_host", toolCallID: "call_shut" }))
    expect(known).toMatchObject({ state: "settled", settlement: { status: "cancelled" } })
    expect(runs(box, "wait")).toBe(1)
  })

  test("a POST nothing can be streamed for is answered with JSON; a call with a progress token, or from a client that can ask its user, as an event stream", async () => {
    const { web, box } = await served({ "tools/greet.ts": GREET })
    const auth = { host: HOST, authorization: `Bearer ${TOKEN}` }
    const open = async (capabilities: object) => {
      const initialized = await post(web.handler, auth, { ...INITIALIZE, params: { ...INITIALIZE.params, capabilities } })
      expect(initialized.headers.get("content-type")).toBe("application/json")
      const session = { ...auth, "mcp-session-id": initialized.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-06-18" }
      expect((await post(web.handler, session, { jsonrpc: "2.0", method: "notifications/initialized" })).status).toBe(202)
      return session
    }
    const greet = (id: number, meta: object = {}) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "greet", arguments: { who: `call ${id}` }, _meta: { toolCallID: `call_json_${id}`, ...meta } },
    })
    const plain = await open({})

    const listed = await post(web.handler, plain, { jsonrpc: "2.0", id: 2, method: "tools/list" })
    expect(listed.headers.get("content-type")).toBe("application/json")
    expect(((await listed.json()) as any).result.tools.map((tool: { name: string }) => tool.name)).toContain("greet")

    const called = await post(web.handler, plain, greet(3))
    expect(called.headers.get("content-type")).toBe("application/json")
    const answer = (await called.json()) as any
    expect(answer).toMatchObject({ jsonrpc: "2.0", id: 3, result: { structuredContent: { greeting: "hello call 3" } } })

    // A batch is answered as one array of results.
    const batch = await post(web.handler, plain, [greet(4), { jsonrpc: "2.0", id: 5, method: "tools/list" }])
    expect(batch.headers.get("content-type")).toBe("application/json")
    expect(((await batch.json()) as Array<{ id: number }>).map((entry) => entry.id).sort()).toEqual([4, 5])

    // The call's progress reaches its stream before its result.
    const progressed = await post(web.handler, plain, greet(6, { progressToken: "p6" }))
    expect(progressed.headers.get("content-type")).toBe("text/event-stream")
    const events = await progressed.text()
    expect(events.indexOf('"notifications/progress"')).toBeGreaterThan(-1)
    expect(events.indexOf('"notifications/progress"')).toBeLessThan(events.indexOf('"id":6'))

    // One call in a batch that streams makes the whole answer a stream.
    const mixed = await post(web.handler, plain, [greet(7), greet(8, { progressToken: "p8" })])
    expect(mixed.headers.get("content-type")).toBe("text/event-stream")
    const both = await mixed.text()
    expect(both).toContain('"id":7')
    expect(both).toContain('"id":8')

    // A client that can ask its user may be asked during any call: each call's answer is a stream.
    const asking = await open({ elicitation: { form: {} } })
    const asked = await post(web.handler, asking, greet(9))
    expect(asked.headers.get("content-type")).toBe("text/event-stream")
    expect(await asked.text()).toContain("hello call 9")
    const listedToo = await post(web.handler, asking, { jsonrpc: "2.0", id: 10, method: "tools/list" })
    expect(listedToo.headers.get("content-type")).toBe("application/json")
    expect(runs(box, "greet")).toBe(6)
  })
})
