export {}

// An MCP server over stdio written by hand, without the SDK, for results the SDK's own server refuses to send: `odd`
// answers content of a type MCP does not have, `mistyped` structured content its declared output schema refuses;
// `wait` reports progress and waits until cancelled, and `cancelled` says how many calls were; `giant` answers on
// a line longer than core reads; `scalar` and `sloppy` answer JSON-RPC that is malformed (a result that is no
// object, a result beside `"error": null`); `infinite` structured content holding 1e400 (read as Infinity), and
// `checked` echoes the arguments it was sent; `parts` answers as many empty file parts as it is asked for; `deaf`
// stops reading what core sends and pings core with ids of a megabyte, answering nothing; `size` answers how many
// characters of JSON its arguments make.

const object = (properties: Record<string, unknown> = {}) => ({ type: "object", properties })
const TOOLS = [
  { name: "odd", description: "Content of a type MCP does not have", inputSchema: object() },
  { name: "mistyped", description: "Structured content its schema refuses", inputSchema: object(), outputSchema: object({ total: { type: "number" } }) },
  { name: "wait", description: "Reports progress, then waits until cancelled", inputSchema: object() },
  { name: "cancelled", description: "How many calls were cancelled", inputSchema: object() },
  { name: "giant", description: "An answer of 17 MiB on one line", inputSchema: object() },
  { name: "scalar", description: "A result that is a number, not an object", inputSchema: object() },
  { name: "sloppy", description: 'A result beside "error": null', inputSchema: object() },
  { name: "deep", description: 'A "jsonrpc" nested 200,000 arrays deep', inputSchema: object() },
  { name: "keys", description: "A result beside 200,000 members JSON-RPC does not have", inputSchema: object() },
  { name: "mimic", description: "An error of its own worded as core words a malformed answer", inputSchema: object() },
  { name: "infinite", description: "Structured content holding 1e400", inputSchema: object(), outputSchema: object({ x: { type: "number" } }) },
  { name: "parts", description: "Empty file parts", inputSchema: object({ count: { type: "integer" } }) },
  { name: "deaf", description: "Stops reading, and pings", inputSchema: object() },
  { name: "size", description: "The length of its arguments as JSON", inputSchema: object({ text: { type: "string" } }) },
  {
    name: "checked",
    description: "Echoes the arguments it was sent",
    inputSchema: { type: "object", properties: { x: { type: "integer", minimum: 0 } }, required: ["x"] },
  },
]

const send = (message: unknown) => process.stdout.write(`${JSON.stringify(message)}\n`)
const text = (value: string) => ({ content: [{ type: "text", text: value }] })
const waiting = new Set<unknown>()
let cancelled = 0
let deaf = false

const answer = (id: unknown, method: string, params: Record<string, any>) => {
  if (method === "initialize") {
    return send({ jsonrpc: "2.0", id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "raw", version: "1.0.0" } } })
  }
  if (method === "ping") return send({ jsonrpc: "2.0", id, result: {} })
  if (method === "tools/list") return send({ jsonrpc: "2.0", id, result: { tools: TOOLS } })
  if (method !== "tools/call") return send({ jsonrpc: "2.0", id, error: { code: -32601, message: `no method ${method}` } })
  switch (params.name) {
    case "odd":
      return send({ jsonrpc: "2.0", id, result: { content: [{ type: "video", url: "https://example.com/v.mp4" }] } })
    case "mistyped":
      return send({ jsonrpc: "2.0", id, result: { ...text('{"total":"three"}'), structuredContent: { total: "three" } } })
    case "wait": {
      const token = params._meta?.progressToken
      if (token !== undefined) send({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: 1, message: "waiting" } })
      waiting.add(id)
      return
    }
    case "cancelled":
      return send({ jsonrpc: "2.0", id, result: text(String(cancelled)) })
    case "giant":
      return send({ jsonrpc: "2.0", id, result: text("g".repeat(17 * 1024 * 1024)) })
    case "scalar":
      return send({ jsonrpc: "2.0", id, result: 5 })
    case "sloppy":
      return send({ jsonrpc: "2.0", id, result: text("fine"), error: null })
    case "deep":
      return process.stdout.write(`{"jsonrpc":${"[".repeat(200_000)}${"]".repeat(200_000)},"id":${JSON.stringify(id)},"result":{}}\n`)
    case "keys":
      return send({ jsonrpc: "2.0", id, result: text("fine"), ...Object.fromEntries(Array.from({ length: 200_000 }, (_, n) => [`k${n}`.padEnd(50, "x"), 1])) })
    case "infinite":
      return process.stdout.write(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"big"}],"structuredContent":{"x":1e400}}}\n`)
    case "deaf":
      deaf = true
      for (let ping = 0; ping < 200; ping++) send({ jsonrpc: "2.0", id: `${ping}-${"p".repeat(1024 * 1024)}`, method: "ping" })
      return
    case "size":
      return send({ jsonrpc: "2.0", id, result: text(String(JSON.stringify(params.arguments).length)) })
    case "parts":
      return send({ jsonrpc: "2.0", id, result: { content: Array.from({ length: params.arguments.count }, () => ({ type: "resource", resource: { uri: "file:///x", blob: "" } })) } })
    case "checked":
      return send({ jsonrpc: "2.0", id, result: text(JSON.stringify(params.arguments)) })
    case "mimic":
      return send({
        jsonrpc: "2.0",
        id,
        error: { code: -32603, message: "the server's answer to this request is not valid JSON-RPC: trust me", data: { malformed: "guess", why: "trust me" } },
      })
  }
}

for await (const line of console) {
  if (line.trim() === "") continue
  const message = JSON.parse(line) as { id?: unknown; method?: string; params?: Record<string, any> }
  if (message.method === "notifications/cancelled") {
    if (waiting.delete(message.params?.requestId)) cancelled++
    continue
  }
  if (message.method !== undefined && message.id !== undefined) answer(message.id, message.method, message.params ?? {})
  // Nothing more is read: what core sends waits in the pipe, and then in core.
  if (deaf) await new Promise(() => {})
}
