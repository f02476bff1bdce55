// `core mcp` over stdio against hostile input: lines that are not JSON-RPC, deeply nested JSON and a very long line
// are answered or skipped without ending the server, a call's `_meta` cannot switch the agent it was started for,
// and a request id sent again in the same session replays the call it named instead of running the tool again.

import { afterEach, describe, expect, test } from "bun:test"
import { join } from "node:path"
import type { Subprocess } from "bun"
import { IMPORTS, RAN, runs, sandbox } from "../cli/fixture"
import { coreJson } from "../cli/permissions-fixture"
import { echoTool } from "../support/tools"

const MAIN = join(import.meta.dir, "../../src/cli/main.ts")

const ECHO = echoTool({ record: "echo" })

const COUNT = `${IMPORTS}${RAN}
import { readFileSync } from "node:fs"
export default Tool.make({
  description: "Says how many times it ran",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () =>
    Effect.sync(() => {
      ran("count")
      const log = readFileSync(joinPath(import.meta.dir, "..", "ran.log"), "utf8")
      return \`run \${log.split("\\n").filter((line) => line === "count").length}\`
    }),
})
`

const started: Array<Subprocess<"pipe", "pipe", "pipe">> = []
afterEach(async () => {
  for (const child of started.splice(0)) {
    child.stdin.end()
    await child.exited
  }
})

/**
 * `core mcp` as a raw line protocol: `send` writes text, `next(id)` takes the next message answering that id (an id
 * sent twice is answered twice).
 */
const raw = (files: Record<string, string>, args: ReadonlyArray<string> = []) => {
  const box = sandbox(files)
  const child = Bun.spawn([process.execPath, MAIN, "mcp", "--location", box.location, ...args], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", HOME: box.home, ...box.env },
  })
  started.push(child)
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  const answers = new Map<unknown, Array<any>>()
  /** The notifications read so far, in order. */
  const notifications: Array<any> = []
  /** Every line read so far, as written. */
  const texts: Array<string> = []
  const next = async (id: string | number | null): Promise<any> => {
    while (!answers.get(id)?.length) {
      const newline = buffer.indexOf("\n")
      if (newline !== -1) {
        texts.push(buffer.slice(0, newline))
        const message = JSON.parse(texts.at(-1)!)
        buffer = buffer.slice(newline + 1)
        if ("id" in message) answers.set(message.id, [...(answers.get(message.id) ?? []), message])
        else notifications.push(message)
        continue
      }
      const { value, done } = await reader.read()
      if (done) throw new Error(`core mcp ended before answering ${id}`)
      buffer += decoder.decode(value, { stream: true })
    }
    return answers.get(id)!.shift()
  }
  const send = (text: string) => {
    child.stdin.write(text)
    child.stdin.flush()
  }
  const request = (id: number, method: string, params: unknown = {}) => send(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`)
  const initialize = async () => {
    request(0, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } })
    await next(0)
    send(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`)
  }
  /** How many answers with this id were read and not yet taken. */
  const unread = (id: string | number | null) => answers.get(id)?.length ?? 0
  return { box, child, send, request, next, initialize, notifications, unread, texts }
}

/** Writes `finished` to ran.log only if it is not cancelled within a second and a half. */
const SLOW = `${IMPORTS}${RAN}
export default Tool.make({
  description: "Waits, then records that it finished",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () =>
    Effect.gen(function* () {
      yield* Effect.sleep(1_500)
      ran("finished")
      return "finished"
    }),
})
`

describe("core mcp over stdio against hostile input", () => {
  test("a request id reused while its call runs joins it, and cancelling that id cancels the call", async () => {
    const mcp = raw({ "tools/slow.ts": SLOW, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    mcp.request(81, "tools/call", { name: "slow", arguments: {} })
    await Bun.sleep(200)
    // The same id again (MCP forbids it): it joins the running call; the client's cancel of the id must still reach it.
    mcp.request(81, "tools/call", { name: "slow", arguments: {} })
    await Bun.sleep(200)
    mcp.send(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 81 } })}\n`)
    await Bun.sleep(2_500)
    expect(runs(mcp.box, "finished")).toBe(0)
    // Asked again after, the call replays its cancelled record.
    mcp.request(81, "tools/call", { name: "slow", arguments: {} })
    const replay = (await mcp.next(81)).result
    expect(replay._meta["core/settlement"]).toMatchObject({ callID: "81", status: "cancelled" })
  }, 30_000)

  test("a request id reused at once after its cancel is answered: the cancel reaches the request it was sent for alone", async () => {
    const mcp = raw({ "tools/slow.ts": SLOW, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    const call = (id: number) => JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "slow", arguments: {} } })
    const cancel = (id: number) => JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id } })
    // The first call of a session is the SDK's to dispatch (host tools are offered first): the id again, still being
    // answered, is refused.
    mcp.send(`${call(31)}\n${cancel(31)}\n${call(31)}\n`)
    expect((await mcp.next(31)).error).toMatchObject({ code: -32600 })
    // A plain call: the id again joins the call it names, cancelled, and is answered so.
    mcp.send(`${call(32)}\n${cancel(32)}\n${call(32)}\n`)
    expect((await mcp.next(32)).result._meta["core/settlement"]).toMatchObject({ callID: "32", status: "cancelled" })
    expect(runs(mcp.box, "finished")).toBe(0)
  }, 30_000)

  test("a request id reused while its call runs, with a progress token, is refused: a cancel of the id still cancels the call", async () => {
    const mcp = raw({ "tools/slow.ts": SLOW, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    mcp.request(82, "tools/call", { name: "slow", arguments: {} })
    await Bun.sleep(200)
    mcp.request(82, "tools/call", { name: "slow", arguments: {}, _meta: { progressToken: "p" } })
    const refused = await mcp.next(82)
    expect(refused.error.code).toBe(-32600)
    expect(refused.error.message).toContain("still being answered")
    mcp.send(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 82 } })}\n`)
    await Bun.sleep(2_500)
    expect(runs(mcp.box, "finished")).toBe(0)
  }, 30_000)

  test("the empty request id is a call id a route can name (quoted), and an initialize with a wrong version is invalid params", async () => {
    const mcp = raw({ "tools/count.ts": COUNT, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    mcp.send(`${JSON.stringify({ jsonrpc: "2.0", id: "", method: "tools/call", params: { name: "count", arguments: {} } })}\n`)
    expect((await mcp.next("")).result._meta["core/settlement"].callID).toBe('""')
    mcp.request(5, "initialize", { protocolVersion: 5, capabilities: {}, clientInfo: { name: "raw", version: "1" } })
    const wrong = await mcp.next(5)
    expect(wrong.error.code).toBe(-32602)
    expect(wrong.error.message).toStartWith("Invalid params for initialize: params.protocolVersion:")
    expect(wrong.error.message).not.toContain("\n")
  }, 30_000)

  test("garbage, malformed JSON-RPC, deep nesting and a long line are each answered; the next request is answered", async () => {
    const mcp = raw({ "tools/echo.ts": ECHO, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    mcp.send("not json at all\n")
    mcp.send('{"jsonrpc":"2.0","id":"x"}\n')
    mcp.send('{"jsonrpc":"1.0","id":5,"method":"tools/list"}\n')
    mcp.send(`${"[".repeat(100_000)}${"]".repeat(100_000)}\n`)
    mcp.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"text":${"[".repeat(50_000)}${"]".repeat(50_000)}}}}\n`)
    mcp.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"${"x".repeat(2 * 1024 * 1024)}"}}}\n`)
    mcp.request(8, "tools/call", { name: "echo", arguments: { text: "still here" } })
    // A line that is not JSON, and an array (a batch): parse error and invalid request, with id null (JSON-RPC 2.0 §5.1).
    expect((await mcp.next(null)).error.code).toBe(-32700)
    expect((await mcp.next(null)).error.code).toBe(-32600)
    // Malformed requests whose id can be read are answered with it: the client is not left waiting.
    expect((await mcp.next("x")).error.code).toBe(-32600)
    expect((await mcp.next(5)).error.code).toBe(-32600)
    const deep = await mcp.next(6)
    expect(deep.result?.isError ?? deep.error !== undefined).toBe(true)
    const long = await mcp.next(7)
    expect(long.result.isError).not.toBe(true)
    const after = await mcp.next(8)
    expect(after.result.content[0].text).toBe("still here")
    expect(mcp.child.exitCode).toBe(null)
  }, 60_000)

  // Read as text, bytes that are not UTF-8 were U+FFFD each: `_meta` call ids "k\xff" and "k\xfe" were one call, and
  // the second answered the first's settlement without running.
  test("a line that is not UTF-8 is refused, with its id where it can be read, and runs nothing", async () => {
    const mcp = raw({ "tools/echo.ts": ECHO, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    const line = (id: string, byte: number) =>
      Buffer.concat([
        Buffer.from(`{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"sessionID":"s","toolCallID":"k`),
        Buffer.from([byte]),
        Buffer.from(`"}}}\n`),
      ])
    // An id that is not valid JSON (`01`, a bad escape) is not one that can be read: answered with id null.
    mcp.child.stdin.write(Buffer.concat([line("01", 0xff), line('"\\q"', 0xff)]))
    for (let index = 0; index < 2; index++) expect((await mcp.next(null)).error.message).toContain("not valid UTF-8")
    // A response (to nothing core asked) that is not UTF-8 is skipped: JSON-RPC never answers a response.
    mcp.child.stdin.write(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":31,"result":{"x":"'), Buffer.from([0xff]), Buffer.from('"}}\n')]))
    mcp.child.stdin.write(Buffer.concat([line("21", 0xff), line("22", 0xfe), line('"q\u00ff"', 0xfe)]))
    mcp.child.stdin.flush()
    for (const id of [21, 22]) {
      const refused = await mcp.next(id)
      expect(refused.error.code).toBe(-32600)
      expect(refused.error.message).toContain("not valid UTF-8")
    }
    expect((await mcp.next("q\u00ff")).error.code).toBe(-32600)
    mcp.request(23, "tools/call", { name: "echo", arguments: { text: "in UTF-8" }, _meta: { sessionID: "s", toolCallID: "k\u00ff" } })
    expect((await mcp.next(23)).result.content[0].text).toBe("in UTF-8")
    expect(mcp.unread(31)).toBe(0)
    expect(runs(mcp.box, "echo")).toBe(1)
  }, 30_000)

  // Read as a number, 9007199254740993 was answered as 9007199254740992: a client matching answers by id waited for
  // its own forever.
  test("an id no JavaScript number holds exactly is answered with the id as the client wrote it, on every refusal", async () => {
    const mcp = raw({ "tools/echo.ts": ECHO, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    mcp.send('{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}\n')
    mcp.send('{"jsonrpc":"2.0","id":12345678901234567891,"method":"tools/call","params":{"name":5}}\n')
    mcp.send('{"jsonrpc":"2.0","id":1e400,"method":"ping","params":{"id":7}}\n')
    mcp.send('{"id":1,"jsonrpc":"1.0","method":"ping","id":9007199254740995}\n')
    mcp.send(`{"jsonrpc":"2.0","id":18014398509481985,"method":"tools/call","params":{"name":"echo","arguments":{"text":"${"z".repeat(9 * 1024 * 1024)}"}}}\n`)
    mcp.child.stdin.write(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":36028797018963971,"method":"ping","params":{"x":"'), Buffer.from([0xff]), Buffer.from('"}}\n')]))
    mcp.request(50, "tools/call", { name: "echo", arguments: { text: "after" } })
    expect((await mcp.next(50)).result.content[0].text).toBe("after")
    const refusals = mcp.texts.filter((text) => text.includes('"error"'))
    expect(refusals.map((text) => /"id":([^,]*),/.exec(text)?.[1])).toEqual([
      "9007199254740993",
      "12345678901234567891",
      "1e400",
      "9007199254740995",
      "18014398509481985",
      "36028797018963971",
    ])
    // Each as its refusal says: not JSON-RPC (an id JSON-RPC's schema refuses), invalid params, too large, not UTF-8.
    expect(refusals.map((text) => JSON.parse(text).error.code)).toEqual([-32600, -32602, -32600, -32600, -32600, -32600])
    expect(refusals[1]).toContain("Invalid params for tools/call")
    expect(refusals[4]).toContain("too large")
    expect(refusals[5]).toContain("not valid UTF-8")
    expect(runs(mcp.box, "echo")).toBe(1)
  }, 60_000)

  // JSON.parse reads 1e400 as Infinity, which JSON writes back as null: an MCP server's tool checked it and got null.
  test("an argument JSON cannot carry (1e400) is invalid input, and runs nothing", async () => {
    const mcp = raw({ "tools/echo.ts": ECHO, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    mcp.send('{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x","n":{"m":-1e400}}}}\n')
    const refused = await mcp.next(40)
    expect(refused.result.isError).toBe(true)
    expect(refused.result.content[0].text).toBe(
      "Invalid input for echo: n.m is a number beyond what JSON's numbers hold (read as -Infinity), which no tool accepts; send a finite number and call it again.",
    )
    expect(runs(mcp.box, "echo")).toBe(0)
  }, 30_000)

  test("a 20 MB line is answered with an error carrying its id, unread, and the server keeps serving", async () => {
    const mcp = raw({ "tools/echo.ts": ECHO, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    const text = "y".repeat(20 * 1024 * 1024)
    mcp.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"${text}"}}}\n`)
    // Only the beginning and the end of a line too large are read: an id written last (as the SDKs write it) is found
    // there, one in its middle is not, and that answer has id null.
    mcp.send(`{"method":"tools/call","params":{"name":"echo","arguments":{"text":"${text}"}},"jsonrpc":"2.0","id":10}\n`)
    mcp.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"${text}"}},"id":12,"x":1}\n`)
    // An id at the start that is not valid JSON (`01`) cannot be read either, nor is one at the end then taken instead.
    mcp.send(`{"jsonrpc":"2.0","id":01,"method":"tools/call","params":{"name":"echo","arguments":{"text":"${text}"}},"id":13}\n`)
    // A response too large (a client's answer to a request of the server's) is never answered.
    mcp.send(`{"result":{"content":[{"type":"text","text":"${text}"}]},"jsonrpc":"2.0","id":14}\n`)
    mcp.request(11, "tools/call", { name: "echo", arguments: { text: "after the flood" } })
    for (const id of [9, 10]) {
      const refused = await mcp.next(id)
      expect(refused.error.code).toBe(-32600)
      expect(refused.error.message).toContain("too large")
    }
    for (let index = 0; index < 2; index++) {
      const unread = await mcp.next(null)
      expect(unread.error.code).toBe(-32600)
      expect(unread.error.message).toContain("too large")
    }
    expect((await mcp.next(11)).result.content[0].text).toBe("after the flood")
    expect(mcp.texts.filter((text) => text.includes('"id":14') || text.includes('"id":12') || text.includes('"id":13'))).toEqual([])
    expect(runs(mcp.box, "echo")).toBe(1)
    expect(mcp.child.exitCode).toBe(null)
  }, 60_000)

  test("a client that stops reading: every answer is kept until it reads again, whole and in order", async () => {
    const mcp = raw({ "tools/echo.ts": ECHO, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    // Far more than a pipe holds (64 KiB on Linux): the server's writes wait for the client to read.
    const CALLS = 300
    const text = (index: number) => `${index}:${"z".repeat(4096)}`
    for (let index = 1; index <= CALLS; index++) mcp.request(100 + index, "tools/call", { name: "echo", arguments: { text: text(index) } })
    await Bun.sleep(1_000)
    expect(mcp.child.exitCode).toBe(null)
    for (let index = 1; index <= CALLS; index++) {
      const answer = await mcp.next(100 + index)
      expect(answer.result.content[0].text).toBe(text(index))
    }
    mcp.request(99, "tools/call", { name: "echo", arguments: { text: "read again" } })
    expect((await mcp.next(99)).result.content[0].text).toBe("read again")
  }, 60_000)

  // Each notification waited for the one before it to be written: a client that gave a progress token and did not
  // read held every one in core's memory (hundreds of MB for a chatty call). Newer progress now replaces older while
  // one is being written, as on /mcp; the result still comes after the last notification.
  test("a client that stops reading during a chatty call holds one waiting progress notification, not all of them", async () => {
    const REPORTS = 20_000
    const CHATTY = `${IMPORTS}${RAN}
export default Tool.make({
  description: "Reports progress many times",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: (_, context) =>
    Effect.gen(function* () {
      for (let index = 1; index <= ${REPORTS}; index++) yield* context.progress({ message: \`step \${index} \${"p".repeat(1000)}\` })
      ran("chatty")
      return "done"
    }),
})
`
    const mcp = raw({ "tools/chatty.ts": CHATTY, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    mcp.request(3, "tools/call", { name: "chatty", arguments: {}, _meta: { progressToken: "tok" } })
    const deadline = Date.now() + 30_000
    while (runs(mcp.box, "chatty") === 0 && Date.now() < deadline) await Bun.sleep(50)
    expect(runs(mcp.box, "chatty")).toBe(1)
    // Now read: a few notifications (what the pipe held, and the last), in order, then the result.
    const result = await mcp.next(3)
    const progress = mcp.notifications.filter((message) => message.method === "notifications/progress").map((message) => message.params.progress as number)
    expect(result.result.content[0].text).toBe("done")
    expect(progress.length).toBeGreaterThan(0)
    expect(progress.length).toBeLessThan(REPORTS / 10)
    expect(progress).toEqual([...progress].sort((a, b) => a - b))
    expect(progress.at(-1)).toBe(REPORTS)
  }, 90_000)

  test("a call's _meta cannot switch the agent: plan's denial holds whatever _meta says", async () => {
    const mcp = raw(
      { "tools/echo.ts": ECHO, ...coreJson({ permission: { "*": "allow" }, agents: { plan: { permission: { echo: "deny" } } } }) },
      ["--agent", "plan"],
    )
    await mcp.initialize()
    mcp.request(1, "tools/call", { name: "echo", arguments: { text: "x" }, _meta: { agent: "build", sessionID: "ses_a", toolCallID: "c1" } })
    const answer = await mcp.next(1)
    expect(answer.result.isError).toBe(true)
    expect(runs(mcp.box, "echo")).toBe(0)
  }, 60_000)

  // A numeric `_meta.toolCallID` was dropped for the request id: the same host id sent again under another request id
  // ran the tool a second time.
  test("_meta ids that are not non-empty strings, and _meta the schema refuses, are invalid params; nothing runs; null counts as none", async () => {
    const mcp = raw({ "tools/count.ts": COUNT, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    const metas: ReadonlyArray<Record<string, unknown>> = [
      { sessionID: "host", toolCallID: 42 },
      { sessionID: ["host"], toolCallID: "c" },
      { sessionID: "host", toolCallID: "  " },
      { sessionID: "host", toolCallID: "c", assistantMessageID: {} },
    ]
    for (const [index, _meta] of metas.entries()) {
      // With a progress token too: the SDK's dispatch, not the plain path, must refuse it as well.
      for (const progress of [{}, { progressToken: `p${index}` }]) {
        const id = index * 2 + (Object.keys(progress).length > 0 ? 101 : 100)
        mcp.request(id, "tools/call", { name: "count", arguments: {}, _meta: { ..._meta, ...progress } })
        const refused = await mcp.next(id)
        expect([id, refused.error?.code]).toEqual([id, -32602])
        expect(refused.error.message).toContain("must be a non-empty string")
      }
    }
    expect(runs(mcp.box, "count")).toBe(0)
    // Params the SDK's schema refuses are invalid params naming the place, as /mcp answers them (not an invalid request).
    for (const [id, _meta, place] of [
      [150, { progressToken: { x: 1 } }, "params._meta.progressToken"],
      [151, "str", "params._meta"],
    ] as const) {
      mcp.request(id, "tools/call", { name: "count", arguments: {}, _meta })
      const refused = await mcp.next(id)
      expect([id, refused.error?.code]).toEqual([id, -32602])
      expect(refused.error.message).toContain(place)
    }
    expect(runs(mcp.box, "count")).toBe(0)
    mcp.request(200, "tools/call", { name: "count", arguments: {}, _meta: { sessionID: null, toolCallID: "host-1" } })
    expect((await mcp.next(200)).result._meta["core/settlement"].callID).toBe("host-1")
  }, 60_000)

  test("a request id sent again in the same session replays its call: the tool ran once, both answers are one settlement", async () => {
    const mcp = raw({ "tools/count.ts": COUNT, ...coreJson({ permission: { "*": "allow" } }) })
    await mcp.initialize()
    const call = (id: number) => {
      mcp.request(id, "tools/call", { name: "count", arguments: {} })
      return mcp.next(id).then((answer) => answer.result)
    }
    const first = await call(9)
    const again = await call(9)
    const other = await call(10)
    expect(first.content).toEqual([{ type: "text", text: "run 1" }])
    expect(again).toEqual(first)
    expect(again._meta["core/settlement"]).toMatchObject({ callID: "9", status: "success" })
    // Another request id is another call: the tool runs again.
    expect(other.content).toEqual([{ type: "text", text: "run 2" }])
    expect(other._meta["core/settlement"].callID).toBe("10")
    expect(runs(mcp.box, "count")).toBe(2)
    // JSON-RPC has 9 and "9" as two ids: the string is another call, recorded under its id quoted.
    mcp.send(`${JSON.stringify({ jsonrpc: "2.0", id: "9", method: "tools/call", params: { name: "count", arguments: {} } })}\n`)
    const quoted = (await mcp.next("9")).result
    expect(quoted.content).toEqual([{ type: "text", text: "run 3" }])
    expect(quoted._meta["core/settlement"].callID).toBe('"9"')
    expect(runs(mcp.box, "count")).toBe(3)
    // A lone surrogate would be kept as U+FFFD, another call's id: as a request id it is quoted as JSON escapes it
    // (whole characters), and as a _meta id it is refused as invalid params.
    mcp.send('{"jsonrpc":"2.0","id":"x\\ud800","method":"tools/call","params":{"name":"count","arguments":{}}}\n')
    const lone = (await mcp.next("x\ud800")).result
    expect(lone._meta["core/settlement"].callID).toBe('"x\\ud800"')
    mcp.send('{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"count","arguments":{},"_meta":{"toolCallID":"m\\udfff"}}}\n')
    const refused = await mcp.next(12)
    expect(refused.error.code).toBe(-32602)
    expect(refused.error.message).toContain("is not well-formed Unicode")
    expect(runs(mcp.box, "count")).toBe(4)
    // A NUL cannot be kept by every store: as a request id it is quoted too, as a _meta id refused.
    mcp.send('{"jsonrpc":"2.0","id":"x\\u0000y","method":"tools/call","params":{"name":"count","arguments":{}}}\n')
    const nul = (await mcp.next("x\u0000y")).result
    expect(nul._meta["core/settlement"].callID).toBe('"x\\u0000y"')
    mcp.send('{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"count","arguments":{},"_meta":{"toolCallID":"m\\u0000"}}}\n')
    const nulMeta = await mcp.next(13)
    expect(nulMeta.error.code).toBe(-32602)
    expect(nulMeta.error.message).toContain("holds a NUL character")
    expect(runs(mcp.box, "count")).toBe(5)
  }, 60_000)
})
