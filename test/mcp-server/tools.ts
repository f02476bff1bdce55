// Tool files the MCP tests serve: a greeting with structured output and progress, a wait that runs until
// cancelled, outputs too large for the model (text and structured), and an image.

import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { IMPORTS, RAN } from "../cli/fixture"
import { waitTool } from "../support/tools"

export const GREET = `${IMPORTS}${RAN}
export default Tool.make({
  description: "Greets someone",
  input: Schema.Struct({ who: Schema.String }),
  output: Schema.Struct({ greeting: Schema.String, length: Schema.Number }),
  annotations: { readOnly: true, openWorld: false },
  execute: (input, context) => Effect.gen(function* () {
    yield* context.progress({ message: "thinking about " + input.who })
    ran("greet")
    const greeting = "hello " + input.who
    return { greeting, length: greeting.length }
  }),
})
`

export const WAIT = waitTool({ record: "wait", progress: { message: "waiting" } })

/** Runs until a file `go` appears in the Location (reporting progress first), then answers "done". */
export const SLOW = `${IMPORTS}${RAN}
import { existsSync } from "node:fs"
export default Tool.make({
  description: "Waits for go",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: (_input, context) => Effect.gen(function* () {
    ran("slow")
    yield* context.progress({ message: "waiting for go" })
    while (!existsSync(joinPath(import.meta.dir, "..", "go"))) yield* Effect.sleep(10)
    return "done"
  }),
})
`

export const BIG = `${IMPORTS}
export default Tool.make({
  description: "Prints many lines",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed(Array.from({ length: 5000 }, (_, i) => "line " + i).join("\\n")),
})
`

export const HUGE = `${IMPORTS}
export default Tool.make({
  description: "Answers a large object",
  input: Schema.Struct({}),
  output: Schema.Struct({ text: Schema.String }),
  execute: () => Effect.succeed({ text: "x".repeat(100000) }),
})
`

// One red pixel, as a PNG.
export const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="

export const PICTURE = `${IMPORTS}
export default Tool.make({
  description: "Draws a pixel",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed("drawn"),
  toModelOutput: () => [{ type: "text", text: "a pixel:" }, { type: "file", mime: "image/png", data: ${JSON.stringify(PIXEL)} }],
})
`

/**
 * Every message `client` receives from now on, in order, as its transport hands them over. The SDK's Client runs a
 * progress notification's handler a microtask later but answers a result at once, so a notification that reaches it
 * in the same read as its call's result is dropped by the Client itself: what the server sent is read here.
 */
export const received = (client: Client): Array<JSONRPCMessage> => {
  const transport = client.transport
  if (transport?.onmessage === undefined) throw new Error("the client is not connected")
  const messages: Array<JSONRPCMessage> = []
  const deliver = transport.onmessage
  transport.onmessage = (message, extra) => {
    messages.push(message)
    deliver(message, extra)
  }
  return messages
}

/** The progress notifications `messages` held before the result of request `id`, by their messages. */
export const progressBefore = (messages: ReadonlyArray<JSONRPCMessage>, id: unknown): Array<unknown> => {
  const result = messages.findIndex((message) => "id" in message && message.id === id && ("result" in message || "error" in message))
  return messages
    .slice(0, result === -1 ? messages.length : result)
    .flatMap((message) => ("method" in message && message.method === "notifications/progress" ? [message.params ?? {}] : []))
    .filter((params) => params.progressToken === id)
    .map((params) => params.message)
}
