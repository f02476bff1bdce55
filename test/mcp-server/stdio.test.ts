// `core mcp` end to end: the official MCP SDK client talking to core over stdio, run from source, against temp
// Locations with their own tool files and core.json.

import { afterEach, describe, expect, test } from "bun:test"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { CallToolResultSchema, ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js"
import { IMPORTS, runs, sandbox, type Sandbox } from "../cli/fixture"
import { coreJson, recording } from "../cli/permissions-fixture"
import { FIXTURE } from "../mcp-client/support"
import { stdioTransport } from "./stdio-client"
import { BIG, GREET, HUGE, PICTURE, PIXEL, progressBefore, received, SLOW, WAIT } from "./tools"

const MAIN = join(import.meta.dir, "../../src/cli/main.ts")

const NOISY = `${IMPORTS}
export default Tool.make({
  description: "Talks while it works",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.sync(() => {
    console.log("noise from console.log")
    process.stdout.write("noise from process.stdout\\n")
    return "done"
  }),
})
`

const open: Array<Client> = []

afterEach(async () => {
  for (const client of open.splice(0)) await client.close()
})

/** A client whose user answers each permission ask with `answer`; the forms it was shown are kept. */
const connectAsking = async (box: Sandbox, answer: ElicitResult) => {
  const transport = stdioTransport(box)
  const client = new Client({ name: "test", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } })
  const asked: Array<string> = []
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message)
    return answer
  })
  await client.connect(transport)
  open.push(client)
  return { client, asked }
}

const connect = async (box: Sandbox, extra: ReadonlyArray<string> = []) => {
  const transport = stdioTransport(box, extra)
  let stderr = ""
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const client = new Client({ name: "test", version: "1.0.0" })
  await client.connect(transport)
  open.push(client)
  return { client, stderr: () => stderr }
}

const textOf = (result: { readonly [key: string]: unknown }) =>
  (result.content as ReadonlyArray<{ type: string; text?: string }>)
    .filter((part) => part.type === "text")
    .map((part) => part.text)
    .join("\n")

describe("core mcp", () => {
  test("tools/list offers the Location's tools with their schemas; outputSchema only for an object at the root", async () => {
    const box = sandbox({ "tools/greet.ts": GREET })
    const { client } = await connect(box)
    const { tools } = await client.listTools()
    const greet = tools.find((tool) => tool.name === "greet")
    expect(greet?.description).toBe("Greets someone")
    expect(greet?.inputSchema).toMatchObject({ type: "object", properties: { who: { type: "string" } } })
    // The tool's own schema, or the marker a bounded success sends in place of a value too large to return.
    expect(greet?.outputSchema?.anyOf).toMatchObject([
      { type: "object", properties: { greeting: { type: "string" } } },
      { required: ["core/withheld"] },
    ])
    const read = tools.find((tool) => tool.name === "read")
    expect(read?.inputSchema.type).toBe("object")
    expect(read !== undefined && "outputSchema" in read).toBe(false)
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe("object")
      if (tool.outputSchema !== undefined) expect(tool.outputSchema.type).toBe("object")
    }
  })

  test("tools/list leaves out the tools the agent's rules wholly deny", async () => {
    const box = sandbox({ "tools/greet.ts": GREET, ...coreJson({ permission: { greet: "deny" } }) })
    const { client } = await connect(box)
    const names = (await client.listTools()).tools.map((tool) => tool.name)
    expect(names).toContain("read")
    expect(names).not.toContain("greet")
    const called = await client.callTool({ name: "greet", arguments: { who: "eve" } })
    expect(called.isError).toBe(true)
    expect(runs(box, "greet")).toBe(0)
  })

  test("a tool's call settles: text content, structuredContent the client checks against outputSchema, progress", async () => {
    const box = sandbox({ "tools/greet.ts": GREET })
    const { client } = await connect(box)
    // The client checks structuredContent against the advertised outputSchema, so it needs the list first.
    await client.listTools()
    const messages = received(client)
    const progress: Array<string | undefined> = []
    const result = await client.callTool({ name: "greet", arguments: { who: "ada" } }, CallToolResultSchema, {
      onprogress: (update) => {
        progress.push(update.message)
      },
    })
    expect(result.isError).toBeFalsy()
    expect(result.structuredContent).toEqual({ greeting: "hello ada", length: 9 })
    expect(JSON.parse(textOf(result))).toEqual({ greeting: "hello ada", length: 9 })
    // Sent before the result, for this call (request 2: the listing was 1). The Client hands it on unless it read
    // both at once (see `received`).
    expect(progressBefore(messages, 2)).toEqual(["thinking about ada"])
    expect(progress.length).toBeLessThanOrEqual(1)
    expect(result._meta?.["core/settlement"]).toMatchObject({ status: "success", outputs: [] })
    // Nothing was left out: no link.
    expect((result.content as Array<{ type: string }>).some((part) => part.type === "resource_link")).toBe(false)
    expect(runs(box, "greet")).toBe(1)
  })

  test("the built-in read reads a file of the Location", async () => {
    const box = sandbox({ "notes.txt": "first line\nsecond line\n" })
    const { client } = await connect(box)
    const result = await client.callTool({ name: "read", arguments: { filePath: "notes.txt" } })
    expect(result.isError).toBeFalsy()
    expect(textOf(result)).toContain("second line")
    expect(result.structuredContent).toBeUndefined()
  })

  test("invalid input is an error result the model reads, and the tool does not run", async () => {
    const box = sandbox({ "tools/greet.ts": GREET })
    const { client } = await connect(box)
    const result = await client.callTool({ name: "greet", arguments: { who: 42 } })
    expect(result.isError).toBe(true)
    expect(textOf(result)).toContain("Invalid input for greet")
    expect(result.structuredContent).toBeUndefined()
    expect(runs(box, "greet")).toBe(0)
  })

  test("an unknown tool is an error result, not a protocol error", async () => {
    const box = sandbox()
    const { client } = await connect(box)
    const result = await client.callTool({ name: "nope", arguments: {} })
    expect(result.isError).toBe(true)
    expect(textOf(result)).toContain("nope")
  })

  test("a call the rules ask about is declined (nobody to answer), with a note for the model and one on stderr", async () => {
    const box = sandbox({ "tools/deploy.ts": recording("deploy"), ...coreJson({ permission: { deploy: "ask" } }) })
    const { client, stderr } = await connect(box)
    const result = await client.callTool({ name: "deploy", arguments: { target: "prod" } })
    expect(result.isError).toBe(true)
    expect(textOf(result)).toContain('permission for deploy on "*" needs a person\'s approval, and the MCP client cannot ask its user.')
    expect(result._meta?.["core/settlement"]).toMatchObject({ status: "declined" })
    expect(runs(box, "deploy")).toBe(0)
    expect(stderr()).toContain('declined deploy on "*"')
    expect(stderr()).toContain("the MCP client cannot ask its user; allow it in core.json")
  })

  test("a client that can ask its user gets the ask as a form; once runs the call", async () => {
    const box = sandbox({ "tools/deploy.ts": recording("deploy"), ...coreJson({ permission: { deploy: "ask" } }) })
    const { client, asked } = await connectAsking(box, { action: "accept", content: { reply: "once" } })
    const result = await client.callTool({ name: "deploy", arguments: { target: "prod" } })
    expect(result.isError).toBeFalsy()
    expect(textOf(result)).toBe("deploy prod")
    expect(asked).toEqual([expect.stringContaining('Allow deploy on "*"?')])
    expect(runs(box, "deploy")).toBe(1)
  })

  test("a user who declines the form declines the call, and the model reads that a person said no", async () => {
    const box = sandbox({ "tools/deploy.ts": recording("deploy"), ...coreJson({ permission: { deploy: "ask" } }) })
    const { client, asked } = await connectAsking(box, { action: "decline" })
    const result = await client.callTool({ name: "deploy", arguments: { target: "prod" } })
    expect(result.isError).toBe(true)
    expect(result._meta?.["core/settlement"]).toMatchObject({ status: "declined" })
    expect(textOf(result)).toContain("a person declined permission for deploy")
    expect(asked).toHaveLength(1)
    expect(runs(box, "deploy")).toBe(0)
  })

  test("without a way to ask, a change to core.json is refused as needing a person", async () => {
    const box = sandbox({ ...coreJson({ permission: { write: "allow" } }) })
    const before = readFileSync(join(box.location, "core.json"), "utf8")
    const { client } = await connect(box)
    const result = await client.callTool({ name: "write", arguments: { filePath: "core.json", content: "{}" } })
    expect(result.isError).toBe(true)
    expect(textOf(result)).toContain("A person must make that change")
    expect(readFileSync(join(box.location, "core.json"), "utf8")).toBe(before)
  })

  test("a call the rules allow runs without asking", async () => {
    const box = sandbox({ "tools/deploy.ts": recording("deploy"), ...coreJson({ permission: { deploy: "allow" } }) })
    const { client } = await connect(box)
    const result = await client.callTool({ name: "deploy", arguments: { target: "prod" } })
    expect(result.isError).toBeFalsy()
    expect(textOf(result)).toBe("deploy prod")
    expect(runs(box, "deploy")).toBe(1)
  })

  test("an oversized output is bounded to a preview, the rest kept as a managed output the read tool can open", async () => {
    const box = sandbox({ "tools/big.ts": BIG, ...coreJson({ output: { maxLines: 50, maxBytes: 4096 } }) })
    const { client } = await connect(box)
    const result = await client.callTool({ name: "big", arguments: {} })
    expect(result.isError).toBeFalsy()
    const text = textOf(result)
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(4096)
    expect(text).toContain("line 0")
    expect(text).not.toContain("line 2500")
    const outputs = (result._meta?.["core/settlement"] as { outputs: Array<{ id: string; bytes: number }> }).outputs
    expect(outputs).toHaveLength(1)
    const path = /filePath "([^"]+)"/.exec(text)?.[1]
    expect(path).toBeDefined()
    const rest = await client.callTool({ name: "read", arguments: { filePath: path, offset: 2500, limit: 3 } })
    expect(rest.isError).toBeFalsy()
    expect(textOf(rest)).toContain("line 2500")
  })

  test("a bounded success stays a success the SDK client checks against the advertised outputSchema", async () => {
    const box = sandbox({ "tools/huge.ts": HUGE, ...coreJson({ output: { maxLines: 50, maxBytes: 4096 } }) })
    const { client } = await connect(box)
    // Listing first makes the SDK client check every result of the tool against its outputSchema (it throws if not).
    expect((await client.listTools()).tools.find((tool) => tool.name === "huge")?.outputSchema?.type).toBe("object")
    const result = await client.callTool({ name: "huge", arguments: {} })
    expect(result.isError ?? false).toBe(false)
    expect(Object.keys(result.structuredContent ?? {})).toEqual(["core/withheld"])
    expect(textOf(result)).toContain("read the rest with the read tool")
    const links = (result.content as Array<{ type: string }>).filter((part) => part.type === "resource_link")
    expect(links).toHaveLength(1)
    expect(result._meta?.["core/settlement"]).toMatchObject({ status: "success", outputs: [expect.anything()] })
  })

  test("ids in _meta make a call replay across runs: the tool runs once and answers the same", async () => {
    const box = sandbox({ "tools/greet.ts": GREET })
    const call = { name: "greet", arguments: { who: "bob" }, _meta: { sessionID: "ses_host", toolCallID: "call_7" } }
    const first = await (await connect(box)).client.callTool(call)
    for (const client of open.splice(0)) await client.close()
    const second = await (await connect(box)).client.callTool(call)
    expect(second.content).toEqual(first.content)
    expect(second._meta?.["core/settlement"]).toMatchObject({ callID: "call_7", status: "success" })
    expect(runs(box, "greet")).toBe(1)
    // Without _meta ids every request is its own call.
    await open[0]!.callTool({ name: "greet", arguments: { who: "bob" } })
    expect(runs(box, "greet")).toBe(2)
  })

  test("an image part is MCP image content", async () => {
    const box = sandbox({ "tools/picture.ts": PICTURE })
    const { client } = await connect(box)
    const result = await client.callTool({ name: "picture", arguments: {} })
    expect(result.content).toEqual([
      { type: "text", text: "a pixel:" },
      { type: "image", data: PIXEL, mimeType: "image/png" },
    ])
  })

  test("a cancelled request interrupts the call, which is recorded as cancelled and never runs again", async () => {
    const box = sandbox({ "tools/wait.ts": WAIT })
    const { client } = await connect(box)
    const abort = new AbortController()
    const call = { name: "wait", arguments: {}, _meta: { sessionID: "ses_host", toolCallID: "call_wait" } }
    // Cancelled once the tool reports it is running: the client sends notifications/cancelled.
    const cancelled = client.callTool(call, CallToolResultSchema, {
      signal: abort.signal,
      onprogress: () => abort.abort("enough"),
    })
    await expect(cancelled).rejects.toThrow()
    const replay = await client.callTool(call)
    expect(replay.isError).toBe(true)
    expect(replay._meta?.["core/settlement"]).toMatchObject({ status: "cancelled" })
    expect(textOf(replay)).toContain("was cancelled")
    expect(runs(box, "wait")).toBe(1)
  })

  test("a request that joined a running call and is cancelled stops waiting; the call goes on and its owner gets it", async () => {
    const box = sandbox({ "tools/slow.ts": SLOW })
    const { client } = await connect(box)
    const call = { name: "slow", arguments: {}, _meta: { sessionID: "ses_host", toolCallID: "call_joined" } }
    let running!: () => void
    const started = new Promise<void>((resolve) => (running = resolve))
    // With progress tokens: each goes the way of a call that reports progress.
    const owned = client.callTool(call, CallToolResultSchema, { onprogress: () => running() })
    await started
    const abort = new AbortController()
    const joined = client.callTool(call, CallToolResultSchema, { signal: abort.signal, onprogress: () => {} })
    await Bun.sleep(50)
    abort.abort("enough")
    await expect(joined).rejects.toThrow()
    // A plain request (no progress token) joined and cancelled the same way.
    const plainAbort = new AbortController()
    const plain = client.callTool(call, CallToolResultSchema, { signal: plainAbort.signal })
    await Bun.sleep(50)
    plainAbort.abort("enough")
    await expect(plain).rejects.toThrow()
    writeFileSync(join(box.location, "go"), "")
    const result = await owned
    expect(result._meta?.["core/settlement"]).toMatchObject({ status: "success" })
    expect(textOf(result)).toBe("done")
    expect(runs(box, "slow")).toBe(1)
  })

  test("a call still running when the client goes away is interrupted and recorded cancelled", async () => {
    const box = sandbox({ "tools/wait.ts": WAIT })
    const call = { name: "wait", arguments: {}, _meta: { sessionID: "ses_host", toolCallID: "call_gone" } }
    const first = await connect(box)
    let started!: () => void
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    const pending = first.client.callTool(call, CallToolResultSchema, { onprogress: () => started() })
    pending.catch(() => undefined)
    await running
    for (const client of open.splice(0)) await client.close()
    const replay = await (await connect(box)).client.callTool(call)
    expect(replay._meta?.["core/settlement"]).toMatchObject({ status: "cancelled" })
    expect(runs(box, "wait")).toBe(1)
  })

  test("SIGTERM interrupts a running call, records it cancelled, and core exits", async () => {
    const box = sandbox({ "tools/wait.ts": WAIT })
    const call = { name: "wait", arguments: {}, _meta: { sessionID: "ses_host", toolCallID: "call_term" } }
    const transport = stdioTransport(box)
    const client = new Client({ name: "test", version: "1.0.0" })
    await client.connect(transport)
    let closed!: () => void
    const gone = new Promise<void>((resolve) => {
      closed = resolve
    })
    transport.onclose = () => closed()
    // One signal, to the pid read while the process runs (a second would force the exit without recording).
    const pid = transport.pid!
    let signalled = false
    const terminate = () => {
      if (!signalled) process.kill(pid, "SIGTERM")
      signalled = true
    }
    const pending = client.callTool(call, CallToolResultSchema, { onprogress: terminate })
    pending.catch(() => undefined)
    await gone
    const replay = await (await connect(box)).client.callTool(call)
    expect(replay._meta?.["core/settlement"]).toMatchObject({ status: "cancelled" })
    expect(runs(box, "wait")).toBe(1)
  })

  test("what a tool writes to stdout goes to stderr, so stdout stays JSON-RPC", async () => {
    const box = sandbox({ "tools/noisy.ts": NOISY })
    const { client, stderr } = await connect(box)
    const errors: Array<Error> = []
    client.onerror = (error) => errors.push(error)
    const result = await client.callTool({ name: "noisy", arguments: {} })
    expect(textOf(result)).toBe("done")
    expect(stderr()).toContain("noise from console.log\n")
    expect(stderr()).toContain("noise from process.stdout\n")
    expect(errors).toEqual([])
  })

  test("an unknown agent is a usage error on stderr, and stdout stays empty", async () => {
    const box = sandbox()
    const child = Bun.spawn([process.execPath, MAIN, "mcp", "--location", box.location, "--agent", "ghost"], {
      env: { ...process.env, ...box.env },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    })
    const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
    expect(code).toBe(2)
    expect(stdout).toBe("")
    expect(stderr).toContain('unknown agent "ghost"')
  })

  test("a built-in's call starts no MCP server, even one that would never answer initialize", async () => {
    const box = sandbox({})
    const pidFile = join(box.location, "..", `${box.location.split("/").pop()}-mute.pid`)
    writeFileSync(
      join(box.location, "core.json"),
      JSON.stringify({
        permission: { "*": "allow" },
        mcp: { mute: { command: [process.execPath, FIXTURE, "mute"], env: { PID_FILE: pidFile }, timeoutMs: 600_000 } },
      }),
    )
    writeFileSync(join(box.location, "notes.txt"), "no server needed\n")
    const { client } = await connect(box)
    const result = await client.callTool({ name: "read", arguments: { filePath: "notes.txt" } })
    expect(textOf(result)).toContain("no server needed")
    expect(existsSync(pidFile)).toBe(false)
  })

  test("the server ends when the client closes stdin", async () => {
    const box = sandbox()
    writeFileSync(join(box.location, "a.txt"), "a\n")
    const child = Bun.spawn([process.execPath, MAIN, "mcp", "--location", box.location], {
      env: { ...process.env, ...box.env },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    })
    child.stdin.end()
    expect(await child.exited).toBe(0)
    expect(await new Response(child.stdout).text()).toBe("")
  })
})
