// An MCP server over stdio for the client's fault paths, written with the SDK's low-level Server. The first
// argument picks how it misbehaves from the start: "serve" (plain), "garbage" (prints lines that are not JSON-RPC
// on stdout before and between answers), "mute" (never answers anything), "bad-names" (lists tools whose names
// core cannot offer), "bad-tools" (lists a tool twice, one whose input schema cannot be compiled, one whose input schema is not an
// object, one whose output schema is an array, and schemas too large to offer), "typed"
// (adds a tool whose schema has a fixed `$id` and a `value` of the JSON type $VALUE_TYPE names), "paginate" (a
// nextCursor on every page, without end), "circle" (cursors leading back to a page listed before), "many" (3,000 tools
// in 30 pages, the first with a 20,000-character description), "heavy" (40 tools of 60,000-character schemas), "deep" (adds a tool whose input schema refers to
// itself without end and one answering structured content nested 1,000 levels deep), "stubborn"
// (serves, but neither the end of its stdin nor SIGTERM ends it), "relist" (says its list changed after every listing),
// "oversized" (adds tools that write lines of 17 MiB as they are: an answer whose id sits in its middle, a request of
// its own that shares the call's id). Its tools hang, crash, fail, answer a JSON-RPC
// error, report progress, wait to be cancelled or change the tool list. With $SLOW_RESTART, it starts slowly after a
// crash.

import { existsSync, renameSync, writeFileSync } from "node:fs"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js"

const mode = process.argv[2] ?? "serve"
// Where a test reads this server's pid without speaking MCP to it.
// Written aside and renamed into place, so a reader never sees it half-written.
if (process.env.PID_FILE !== undefined) {
  writeFileSync(`${process.env.PID_FILE}.part`, String(process.pid))
  renameSync(`${process.env.PID_FILE}.part`, process.env.PID_FILE)
}
const say = (line: string) => process.stdout.write(`${line}\n`)

if (mode === "stubborn") {
  setInterval(() => undefined, 1000)
  process.on("SIGTERM", () => undefined)
}

if (mode === "mute") {
  process.stdin.resume()
} else {
  const object = (properties: Record<string, unknown> = {}, required: Array<string> = []) => ({
    type: "object" as const,
    properties,
    required,
  })
  const tools: Array<{
    name: string
    description: string
    inputSchema: ReturnType<typeof object>
    outputSchema?: ReturnType<typeof object>
    annotations?: Record<string, boolean>
  }> = [
    {
      name: "echo",
      description: "Echoes text",
      inputSchema: object({ text: { type: "string", minLength: 1 } }, ["text"]),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    { name: "pid", description: "Its process id", inputSchema: object() },
    { name: "env", description: "An environment variable", inputSchema: object({ name: { type: "string" } }, ["name"]) },
    { name: "hang", description: "Never answers", inputSchema: object() },
    { name: "crash", description: "Exits mid-call", inputSchema: object() },
    { name: "fail", description: "Answers with isError", inputSchema: object() },
    { name: "media", description: "An image, a resource with text and one with a blob", inputSchema: object() },
    {
      name: "structured",
      description: "Structured content",
      inputSchema: object(),
      outputSchema: object({ total: { type: "number" } }, ["total"]),
    },
    { name: "wait", description: "Reports progress, then waits until cancelled", inputSchema: object() },
    { name: "cancelled", description: "How many calls were cancelled", inputSchema: object() },
    { name: "big", description: "Many lines of text", inputSchema: object() },
    { name: "huge", description: "An answer of 17 MiB, on one line", inputSchema: object() },
    { name: "slow", description: "Answers after `ms` milliseconds", inputSchema: object({ ms: { type: "number" } }) },
    { name: "count", description: "How many times it was called", inputSchema: object() },
    { name: "grow", description: "Adds the tool `extra` and says the list changed", inputSchema: object() },
  ]
  if (mode === "oversized") {
    tools.push({ name: "hidden", description: "A 17 MiB answer whose id is neither first nor last, then nothing", inputSchema: object() })
    tools.push({ name: "asks-big", description: "A 17 MiB request of its own with the call's id, then an answer", inputSchema: object() })
  }
  if (mode === "relist") tools.push({ name: "listings", description: "How many times the tools were listed", inputSchema: object() })
  if (mode === "bad-names") {
    tools.push({ name: "has space", description: "Bad", inputSchema: object() })
    tools.push({ name: "x".repeat(70), description: "Too long", inputSchema: object() })
  } else {
    // Not in "bad-names", whose offered tools are counted.
    tools.push({ name: "throws", description: "Answers a JSON-RPC error", inputSchema: object() })
  }
  if (mode === "bad-tools") {
    tools.push({ name: "echo", description: "Echoes text, listed again", inputSchema: object() })
    tools.push({ name: "unmatched", description: "A pattern that is no regular expression", inputSchema: object({ a: { type: "string", pattern: "(" } }) })
    tools.push({
      name: "unmatched-keys",
      description: "Property names matched by a pattern that is no regular expression",
      inputSchema: object({ tags: { type: "object", patternProperties: { "[a-z": { type: "string" } } } }),
    })
    tools.push({ name: "untyped", description: "A type JSON Schema does not have", inputSchema: object({ a: { type: "strnig" } }) })
    // Not MCP tools at all: an input schema that is not an object, and an output schema that is an array.
    tools.push({ name: "scalar", description: "Takes a bare string", inputSchema: { type: "string" } as never })
    tools.push({ name: "listy", description: "Answers a list", inputSchema: object(), outputSchema: { type: "array" } as never })
    // A short description, and a schema whose own descriptions say 70,000 characters more (or one at the bound).
    const said = (chars: number) => object({ a: { type: "string", description: "x".repeat(chars) } })
    tools.push({ name: "fat", description: "Short", inputSchema: said(70_000) })
    tools.push({ name: "fat-output", description: "Short", inputSchema: object(), outputSchema: said(70_000) })
    tools.push({ name: "roomy", description: "Short", inputSchema: said(60_000) })
  }
  if (mode === "typed") {
    tools.push({
      name: "typed",
      description: "Echoes a value of its type",
      inputSchema: Object.assign(object({ value: { type: process.env.VALUE_TYPE } }, ["value"]), { $id: "https://fixture.example/typed.json" }),
    })
  }
  if (mode === "format") {
    // A format Ajv does not know, named with escape sequences: Ajv's logger wrote it to the terminal as it was.
    const format = "\u001b[2J\u001b[H\u001b]52;c;ZXZpbA==\u0007APPROVED"
    tools.push({
      name: "formatted",
      description: "Echoes text, its schemas naming a format nobody knows",
      inputSchema: object({ text: { type: "string", format } }, ["text"]),
      outputSchema: object({ text: { type: "string", format } }, ["text"]),
    })
  }
  if (mode === "deep") {
    tools.push({ name: "recur", description: "A schema that refers to itself without end", inputSchema: { type: "object", $ref: "#" } as never })
    tools.push({ name: "nested", description: "Answers structured content nested 1,000 levels deep", inputSchema: object() })
  }
  let grown = false
  let cancelled = 0
  let counted = 0
  const server = new Server({ name: "fixture", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } })
  let listings = 0
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    listings++
    const cursor = Number(request.params?.cursor ?? 0)
    // Pages without end, a tool each; "circle": pages whose cursors go 1, 2, 1, 2, ...
    if (mode === "paginate" || mode === "circle") {
      // $PAGE_DELAY_MS: each page answered after that long (within any one request's timeout).
      if (process.env.PAGE_DELAY_MS !== undefined) await Bun.sleep(Number(process.env.PAGE_DELAY_MS))
      const page = [{ name: `p${cursor}`, description: `Page ${cursor}`, inputSchema: object() }]
      return { tools: page, nextCursor: String(mode === "circle" && cursor === 2 ? 1 : cursor + 1) }
    }
    // 30 pages of 100 tools, the first with a description too long to offer.
    if (mode === "many") {
      const page = Array.from({ length: 100 }, (_, index) => ({
        name: `m${cursor * 100 + index}`,
        description: cursor === 0 && index === 0 ? "x".repeat(20_000) : "Many",
        inputSchema: object(),
      }))
      return { tools: page, ...(cursor < 29 ? { nextCursor: String(cursor + 1) } : {}) }
    }
    // 40 tools of a 60,000-character schema each: every one within its bounds, 2.4 MB in all.
    if (mode === "heavy") {
      const inputSchema = object({ a: { type: "string", description: "x".repeat(60_000) } })
      return { tools: Array.from({ length: 40 }, (_, index) => ({ name: `h${index}`, description: "Heavy", inputSchema })) }
    }
    if (mode === "garbage") say("this line is not JSON-RPC")
    // Says the list changed again after every listing, though it never does.
    if (mode === "relist") setTimeout(() => void server.sendToolListChanged(), 0)
    const listed = grown ? [...tools, { name: "extra", description: "Added later", inputSchema: object() }] : tools
    // "early": its tools change while the first listing is answered, said once, before that answer goes out.
    if (mode === "early" && listings === 1) {
      grown = true
      await server.sendToolListChanged()
    }
    return { tools: listed }
  })
  const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] })
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = (request.params.arguments ?? {}) as Record<string, unknown>
    if (mode === "garbage") say('{"not":"a message"}')
    switch (request.params.name) {
      case "echo":
        return text(`echo: ${args.text}`)
      case "formatted":
        return { ...text(String(args.text)), structuredContent: { text: String(args.text) } }
      case "pid":
        return text(String(process.pid))
      case "nested": {
        let deep: unknown = "bottom"
        for (let level = 0; level < 1_000; level++) deep = [deep]
        return { ...text("deep"), structuredContent: { deep } }
      }
      case "env":
        return text(process.env[String(args.name)] ?? "(unset)")
      case "hang":
        return await new Promise<never>(() => undefined)
      case "throws":
        // A server's error quoting its configuration (FIXTURE_TOKEN, given by core.json's env).
        throw new McpError(ErrorCode.InternalError, process.env.FIXTURE_TOKEN === undefined ? "boom" : `boom: upstream refused ${process.env.FIXTURE_TOKEN}`)
      case "typed":
        return text(`typed: ${JSON.stringify(args.value)}`)
      case "crash":
        // A server that quotes its configuration as it dies (FIXTURE_TOKEN, given by core.json's env).
        if (process.env.FIXTURE_TOKEN !== undefined) {
          const token = process.env.FIXTURE_TOKEN
          process.stderr.write(`fixture: auth failed with token=${token}\n`)
          process.stderr.write(`fixture: as sent ${encodeURIComponent(token)} ${JSON.stringify(token)} ${Buffer.from(token).toString("base64")}\n`)
          if (process.env.FIXTURE_SPLIT !== undefined) {
            // Split across two writes, the first long enough to be let go of: its half must not be left alone.
            process.stderr.write(`${"x".repeat(5_000)} token=${token.slice(0, 8)}`)
            await Bun.sleep(150)
            process.stderr.write(`${token.slice(8)} rejected\n${"y".repeat(600)}\n`)
          }
        }
        process.stderr.write("fixture: crashing on purpose\n")
        process.exit(7)
      case "fail": {
        // An error result and a progress message quoting its configuration (FIXTURE_TOKEN, given by core.json's env).
        const token = process.env.FIXTURE_TOKEN
        if (token === undefined) return { ...text("the fixture refuses"), isError: true }
        const progressToken = request.params._meta?.progressToken
        if (progressToken !== undefined) {
          await extra.sendNotification({ method: "notifications/progress", params: { progressToken, progress: 1, message: `sending ${token}` } })
          // Given time to be passed on before the call ends (a call's progress after its end is not).
          await Bun.sleep(200)
        }
        return { ...text(`the fixture refuses: 401 for token ${token}`), isError: true }
      }
      case "media":
        return {
          content: [
            { type: "image" as const, data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==", mimeType: "image/png" },
            { type: "resource" as const, resource: { uri: "file:///notes.txt", mimeType: "text/plain", text: "note text" } },
            { type: "resource" as const, resource: { uri: "file:///data.bin", mimeType: "application/octet-stream", blob: "AAEC" } },
          ],
        }
      case "structured":
        return { ...text('{"total":3}'), structuredContent: { total: 3 } }
      case "wait": {
        const token = request.params._meta?.progressToken
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: 1, total: 2, message: "waiting" },
          })
        }
        return await new Promise((resolve) => {
          extra.signal.addEventListener("abort", () => {
            cancelled++
            resolve(text("cancelled"))
          })
        })
      }
      case "cancelled":
        return text(String(cancelled))
      case "big":
        return text(Array.from({ length: 5000 }, (_, index) => `line ${index + 1}`).join("\n"))
      case "huge":
        return text("x".repeat(17 * 1024 * 1024))
      case "hidden":
        say(`{"result":{"content":[{"type":"text","text":"${"x".repeat(17 * 1024 * 1024)}"}]},"id":${JSON.stringify(extra.requestId)},"jsonrpc":"2.0"}`)
        return new Promise<never>(() => {})
      case "asks-big":
        say(`{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"${"x".repeat(17 * 1024 * 1024)}"}}],"maxTokens":1},"jsonrpc":"2.0","id":${JSON.stringify(extra.requestId)}}`)
        return text("answered after asking")
      case "slow":
        await Bun.sleep(Number((request.params.arguments as { ms?: number } | undefined)?.ms ?? 0))
        return text("slow")
      case "count":
        return text(String(++counted))
      case "grow":
        grown = true
        await server.sendToolListChanged()
        return text("grown")
      case "extra":
        return text("extra")
      case "listings":
        return text(String(listings))
      default:
        throw new Error(`unknown tool ${request.params.name}`)
    }
  })
  if (mode === "garbage") say("starting up (not JSON-RPC)")
  // $SLOW_RESTART names a file the first start leaves: every later start (after a crash) takes a while to answer.
  const marker = process.env.SLOW_RESTART
  if (marker !== undefined) {
    if (existsSync(marker)) await Bun.sleep(1_500)
    else writeFileSync(marker, "started")
  }
  await server.connect(new StdioServerTransport())
}
