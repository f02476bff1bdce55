// A plain `tools/call` (no progress token, no task, only core's ids in `_meta`) answered by the session itself
// rather than the SDK's dispatch (src/mcp-server/mcp.ts): answered with JSON, cancelled by notifications/cancelled
// like any request, and malformed ones still refused by the SDK as before. Over `/mcp` in process with the SDK client.

import { describe, expect, test } from "bun:test"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { realpathSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { IMPORTS, runs } from "../cli/fixture"
import { Router } from "../../src/server/router"
import { Security } from "../../src/server/security"
import { HOST, TOKEN, httpHarness } from "./support"
import { GREET, SLOW, WAIT } from "./tools"
import { BUN, FIXTURE } from "../mcp-client/support"

const FAILING = `${IMPORTS}
export default Tool.make({
  description: "Fails",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.fail(new Tool.Failure({ message: "it broke" })),
})
`

/** A tool whose execute dies: a defect, which is an operational failure and never a result the model reads. */
const DYING = `${IMPORTS}
export default Tool.make({
  description: "Dies",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.die(new Error("kaput")),
})
`

/** A Location whose one MCP server is the fixture server, its tools allowed. */
const REMOTE = JSON.stringify({ mcp: { fix: { command: [BUN, FIXTURE, "serve"] } }, permission: { "fix_*": "allow" } })

const { served, connect } = httpHarness()

/** Resolves once `check` holds, looking again every few milliseconds. */
const until = async (check: () => boolean, what: string) => {
  for (let tries = 0; tries < 2_000; tries++) {
    if (check()) return
    await Bun.sleep(5)
  }
  throw new Error(`never happened: ${what}`)
}

/** One JSON-RPC message POSTed in an existing session; answers the raw response. */
const rpc = (handler: (request: Request) => Promise<Response>, session: string, body: unknown) =>
  handler(raw(session, JSON.stringify(body)))

const raw = (session: string, body: string, headers: Record<string, string> = {}) =>

    new Request(`http://${HOST}/mcp`, {
      method: "POST",
      headers: {
        host: HOST,
        authorization: `Bearer ${TOKEN}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-06-18",
        ...headers,
      },
      body,
    })

const read = async (response: Response) => ({
  status: response.status,
  headers: Object.fromEntries([...response.headers.entries()].filter(([name]) => name !== "date").sort()),
  body: await response.text(),
})

describe("a plain tools/call", () => {
  test("is answered with JSON carrying its result; a tool's failure is an error result", async () => {
    const { web } = await served({ "tools/greet.ts": GREET, "tools/failing.ts": FAILING })
    const { transport } = await connect(web.handler)
    const session = transport.sessionId!
    const answer = await rpc(web.handler, session, {
      jsonrpc: "2.0",
      id: "a1",
      method: "tools/call",
      params: { name: "greet", arguments: { who: "Ada" }, _meta: { sessionID: "ses_plain", toolCallID: "call_plain" } },
    })
    expect(answer.status).toBe(200)
    expect(answer.headers.get("content-type")).toContain("application/json")
    const body = (await answer.json()) as { id: string; result: { content: Array<{ text: string }>; isError?: boolean } }
    expect(body.id).toBe("a1")
    expect(body.result.content[0]!.text).toContain("Ada")
    expect(body.result.isError).not.toBe(true)
    const failed = (await (
      await rpc(web.handler, session, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "failing", arguments: {} } })
    ).json()) as { id: number; result: { content: Array<{ text: string }>; isError?: boolean } }
    expect(failed.id).toBe(2)
    expect(failed.result.isError).toBe(true)
    expect(failed.result.content[0]!.text).toContain("it broke")
  })

  test("malformed ones are refused as invalid params, naming what is wrong, and the session goes on", async () => {
    const { web } = await served({ "tools/greet.ts": GREET })
    const { client, transport } = await connect(web.handler)
    const session = transport.sessionId!
    for (const params of [{ name: 7, arguments: {} }, { name: "greet", arguments: [1] }, { name: "greet", arguments: "x" }]) {
      const answer = (await (await rpc(web.handler, session, { jsonrpc: "2.0", id: 9, method: "tools/call", params })).json()) as {
        id: number
        error?: { code: number; message: string }
      }
      expect(answer.id).toBe(9)
      // Invalid params, in one line naming the place (the SDK answered an internal error with its issues as JSON).
      expect(answer.error?.code).toBe(-32602)
      expect(answer.error?.message).toMatch(/^Invalid params for tools\/call: params\.(name|arguments): /)
    }
    const result = await client.callTool({ name: "greet", arguments: { who: "Bo" } })
    expect(JSON.stringify(result.content)).toContain("Bo")
  })

  test("an id given twice in one batch is refused whole, and neither request runs", async () => {
    const { web, box } = await served({ "tools/greet.ts": GREET })
    const { transport } = await connect(web.handler)
    const session = transport.sessionId!
    const call = (who: string) => ({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "greet", arguments: { who } } })
    const answer = await rpc(web.handler, session, [call("Ada"), call("Bo")])
    expect(answer.status).toBe(400)
    expect(await answer.json()).toMatchObject({ id: 3, error: { code: -32600, message: expect.stringContaining("twice in this batch") } })
    expect(runs(box, "greet")).toBe(0)
    // Two ids in a batch are answered, each with its own.
    const both = await rpc(web.handler, session, [call("Ada"), { ...call("Bo"), id: 4 }])
    expect(both.status).toBe(200)
    const text = await both.text()
    expect(text).toContain("Ada")
    expect(text).toContain("Bo")
    expect(runs(box, "greet")).toBe(2)
  })

  test("a progress token of the wrong type is invalid params named by its request's id, not an unparsable body", async () => {
    const { web, box } = await served({ "tools/greet.ts": GREET })
    const { client, transport } = await connect(web.handler)
    const session = transport.sessionId!
    const params = { name: "greet", arguments: { who: "Ada" }, _meta: { progressToken: { x: 1 } } }
    const answer = await rpc(web.handler, session, { jsonrpc: "2.0", id: "p1", method: "tools/call", params })
    expect(answer.status).toBe(200)
    const body = (await answer.json()) as { id: string; error: { code: number; message: string } }
    expect(body).toMatchObject({ id: "p1", error: { code: -32602 } })
    expect(body.error.message).toContain("progressToken")
    // In a batch, the batch is refused naming it; nothing ran.
    const batch = await rpc(web.handler, session, [
      { jsonrpc: "2.0", id: "p2", method: "tools/call", params: { name: "greet", arguments: { who: "Bo" } } },
      { jsonrpc: "2.0", id: "p3", method: "tools/call", params },
    ])
    expect(batch.status).toBe(400)
    expect(await batch.json()).toMatchObject({ error: { code: -32600, message: expect.stringContaining("progressToken") } })
    expect(runs(box, "greet")).toBe(0)
    // A body that is not JSON-RPC at all is an invalid request, as over stdio.
    const junk = await rpc(web.handler, session, { hello: "there" })
    expect(junk.status).toBe(400)
    expect(await junk.json()).toMatchObject({ error: { code: -32600 } })
    expect(JSON.stringify((await client.callTool({ name: "greet", arguments: { who: "Cy" } })).content)).toContain("Cy")
  })

  test("cancelled by notifications/cancelled: interrupted, recorded cancelled, never run again", async () => {
    const { web, box } = await served({ "tools/wait.ts": WAIT })
    const { client } = await connect(web.handler)
    const abort = new AbortController()
    const call = { name: "wait", arguments: {}, _meta: { sessionID: "ses_host", toolCallID: "call_plain_cancel" } }
    // No progress token: nothing is sent to the client before the result.
    const cancelled = client.callTool(call, CallToolResultSchema, { signal: abort.signal })
    await until(() => runs(box, "wait") === 1, "the tool runs")
    abort.abort("enough")
    await expect(cancelled).rejects.toThrow()
    const replay = await client.callTool(call)
    expect(replay.isError).toBe(true)
    expect(replay._meta?.["core/settlement"]).toMatchObject({ status: "cancelled" })
    expect(runs(box, "wait")).toBe(1)
  })

  test("a request id reused while its request is answered is refused (MCP forbids it), with or without a progress token; the first is answered", async () => {
    const { web, box } = await served({ "tools/slow.ts": SLOW })
    const { transport } = await connect(web.handler)
    const session = transport.sessionId!
    for (const [id, meta] of [[8, { progressToken: "p8" }], [9, undefined]] as const) {
      const params = { name: "slow", arguments: {}, ...(meta === undefined ? {} : { _meta: meta }) }
      const first = web.handler(raw(session, JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params })))
      await until(() => runs(box, "slow") === (id === 8 ? 1 : 2), "the call runs")
      const second = await rpc(web.handler, session, { jsonrpc: "2.0", id, method: "tools/call", params })
      expect(second.status).toBe(400)
      expect(await second.json()).toMatchObject({ id, error: { code: -32600, message: expect.stringContaining("in use by another request") } })
      writeFileSync(join(box.location, "go"), "")
      expect(await (await first).text()).toContain('"done"')
      // The next call waits for go again.
      rmSync(join(box.location, "go"))
    }
  })

  test("an operational failure is a JSON-RPC internal error, never a result, and the session goes on", async () => {
    const { web } = await served({ "tools/greet.ts": GREET, "tools/dying.ts": DYING })
    const { client, transport } = await connect(web.handler)
    const answer = (await (
      await rpc(web.handler, transport.sessionId!, { jsonrpc: "2.0", id: "d1", method: "tools/call", params: { name: "dying", arguments: {} } })
    ).json()) as { id: string; result?: unknown; error?: { code: number; message: string } }
    expect(answer.id).toBe("d1")
    expect(answer.result).toBeUndefined()
    expect(answer.error?.code).toBe(-32603)
    expect(answer.error?.message).toContain("dying (d1) failed unexpectedly; the server log has the details")
    // The code is the error's own field: a client's McpError puts it in front of the message once.
    expect(answer.error?.message).not.toStartWith("MCP error")
    expect(answer.error?.message).not.toContain("kaput")
    const result = await client.callTool({ name: "greet", arguments: { who: "Bo" } })
    expect(JSON.stringify(result.content)).toContain("Bo")
  })

  test("a call of an MCP server's tool waits for the server to start, then is answered", async () => {
    const { web } = await served({ "core.json": REMOTE })
    const { transport } = await connect(web.handler)
    const answer = (await (
      await rpc(web.handler, transport.sessionId!, {
        jsonrpc: "2.0",
        id: 11,
        method: "tools/call",
        params: { name: "fix_echo", arguments: { text: "over there" } },
      })
    ).json()) as { id: number; result: { content: Array<{ text: string }>; isError?: boolean } }
    expect(answer.id).toBe(11)
    expect(answer.result.isError).not.toBe(true)
    expect(answer.result.content[0]!.text).toBe("echo: over there")
  })

  test("cancelled while its MCP server starts: the call is cancelled as soon as it begins; its POST ends with no answer", async () => {
    const { web } = await served({ "core.json": REMOTE })
    const { client, transport } = await connect(web.handler)
    const session = transport.sessionId!
    const meta = { sessionID: "ses_early", toolCallID: "call_early_cancel" }
    let answered = false
    // `hang` never ends by itself: only the cancellation ends it.
    const pending = rpc(web.handler, session, { jsonrpc: "2.0", id: 12, method: "tools/call", params: { name: "fix_hang", arguments: {}, _meta: meta } })
    void pending.then(() => (answered = true))
    const notified = await rpc(web.handler, session, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 12, reason: "enough" } })
    expect(notified.status).toBe(202)
    const replay = await client.callTool({ name: "fix_hang", arguments: {}, _meta: meta })
    expect(replay.isError).toBe(true)
    expect(replay._meta?.["core/settlement"]).toMatchObject({ status: "cancelled" })
    // Answered nothing, as the SDK answers no cancelled request; but the POST ends (it stayed open for good).
    const ended = await pending
    expect(answered).toBe(true)
    expect(ended.status).toBe(202)
    expect(await ended.text()).toBe("")
  })

  // Law 12: a second request for a running call waits for it. One that goes away stops waiting; it cancelled the
  // owner's call, in another session too.
  test("a request that joined a running call and is cancelled stops waiting; the call goes on, its owner's", async () => {
    const { web, box } = await served({ "tools/slow.ts": SLOW })
    const owner = await connect(web.handler)
    const other = await connect(web.handler)
    const meta = { sessionID: "ses_shared", toolCallID: "call_joined" }
    const params = { name: "slow", arguments: {}, _meta: meta }
    const owned = rpc(web.handler, owner.transport.sessionId!, { jsonrpc: "2.0", id: 1, method: "tools/call", params })
    await until(() => runs(box, "slow") === 1, "the tool runs")
    for (const [session, id] of [[owner.transport.sessionId!, 2], [other.transport.sessionId!, 3]] as const) {
      const joined = rpc(web.handler, session, { jsonrpc: "2.0", id, method: "tools/call", params })
      await Bun.sleep(50)
      const notified = await rpc(web.handler, session, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id } })
      expect(notified.status).toBe(202)
      const ended = await joined
      expect([id, ended.status, await ended.text()]).toEqual([id, 202, ""])
    }
    writeFileSync(join(box.location, "go"), "")
    const answer = (await (await owned).json()) as { id: number; result: { content: Array<{ text: string }>; _meta?: Record<string, unknown> } }
    expect(answer.result._meta?.["core/settlement"]).toMatchObject({ status: "success" })
    expect(answer.result.content[0]!.text).toBe("done")
    expect(runs(box, "slow")).toBe(1)
  })

  test("a session's messages to /mcp are answered as the router answers them, byte for byte", async () => {
    const { sidecar, mcp, box, log } = await served({ "tools/greet.ts": GREET })
    // A Location is held for each request answered directly.
    let held = 0
    const counting = {
      ...sidecar,
      locations: { ...sidecar.locations, hold: (directory: string) => (held++, sidecar.locations.hold(directory)) },
    }
    const make = (direct: boolean) =>
      Router.make({
        sidecar: counting,
        mcp,
        version: "test",
        checkToken: Security.tokenChecker(TOKEN),
        checkHost: Security.hostChecker("127.0.0.1", 4321),
        roots: [realpathSync(box.location)],
        log: (line) => log.push(line),
        direct,
      })
    const web = make(true)
    const routed = make(false)
    const { transport } = await connect(web.handler)
    const before = held
    const session = transport.sessionId!
    const call = (id: string) =>
      JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "greet", arguments: { who: "Ada" }, _meta: { toolCallID: id } } })
    const cases: Array<[string, (suffix: string) => Request]> = [
      ["a call", (s) => raw(session, call(`c_${s}`))],
      ["a listing", () => raw(session, JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/list" }))],
      ["a notification", () => raw(session, JSON.stringify({ jsonrpc: "2.0", method: "notifications/roots/list_changed" }))],
      ["not JSON", () => raw(session, "{")],
      ["an unknown session", () => raw("nope", JSON.stringify({ jsonrpc: "2.0", id: 6, method: "tools/list" }))],
      ["an unknown method", () => raw(session, JSON.stringify({ jsonrpc: "2.0", id: 7, method: "nope/nope" }))],
      ["a wrong token", () => raw(session, JSON.stringify({ jsonrpc: "2.0", id: 8, method: "tools/list" }), { authorization: "Bearer x" })],
    ]
    for (const [name, make] of cases) {
      const direct = await read(await web.handler(make("dq7")))
      const viaRouter = await read(await routed.handler(make("rq7")))
      expect({ name, ...direct, body: direct.body.replaceAll("dq7", "X") }).toEqual({
        name,
        ...viaRouter,
        body: viaRouter.body.replaceAll("rq7", "X"),
      })
    }
    // Each but the refused one (wrong token) was answered directly.
    expect(held - before).toBe(cases.length - 1)
    await routed.dispose()
    await web.dispose()
  })

  test("over /mcp, answered as the SDK's transport answers it, and every request it would refuse refused as before", async () => {
    const sides = await Promise.all(
      [true, false].map(async (direct) => {
        const { web } = await served({ "tools/greet.ts": GREET }, { sessions: { direct } })
        const { transport } = await connect(web.handler)
        return { web, session: transport.sessionId! }
      }),
    )
    const call = { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "greet", arguments: { who: "Ada" }, _meta: { toolCallID: "c1" } } }
    const cases: Array<[string, (session: string) => Request]> = [
      ["a plain call", (session) => raw(session, JSON.stringify(call))],
      ["no event streams accepted", (session) => raw(session, JSON.stringify(call), { accept: "application/json" })],
      ["not JSON by its type", (session) => raw(session, JSON.stringify(call), { "content-type": "text/plain; a=application/json" })],
      ["JSON by its type, with a charset", (session) => raw(session, JSON.stringify({ ...call, id: 4 }), { "content-type": "Application/JSON; charset=utf-8" })],
      ["an unsupported protocol version", (session) => raw(session, JSON.stringify(call), { "mcp-protocol-version": "1999-01-01" })],
      ["no protocol version", (session) => raw(session, JSON.stringify({ ...call, id: 5 }), { "mcp-protocol-version": "" })],
      ["a member JSON-RPC does not have", (session) => raw(session, JSON.stringify({ ...call, extra: true }))],
      ["an id that is not an integer", (session) => raw(session, JSON.stringify({ ...call, id: 1.5 }))],
    ]
    for (const [name, make] of cases) {
      const [direct, viaSdk] = await Promise.all(
        sides.map(async ({ web, session }) => {
          const request = make(session)
          if (request.headers.get("mcp-protocol-version") === "") request.headers.delete("mcp-protocol-version")
          const answer = await read(await web.handler(request))
          const headers = { ...answer.headers, "mcp-session-id": answer.headers["mcp-session-id"] === session ? "SESSION" : answer.headers["mcp-session-id"] }
          return { ...answer, headers }
        }),
      )
      expect({ name, ...direct! }).toEqual({ name, ...viaSdk! })
    }
  })
})
