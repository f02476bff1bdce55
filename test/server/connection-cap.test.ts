// `core serve` (the compiled binary) against local processes that hold more connections than its open-file limit,
// each with half a request header and never the blank line that ends it. Without a cap below the limit, the held
// connections take every file descriptor and nothing is answered until the read deadline frees them; with it,
// /v1/health and a real call are answered while they are held, and the host's event stream lives on.
//
// The server runs under an open-file limit of 2,048: the flood must be in place well within the 10 s read deadline,
// and on 2 loaded cores a few thousand connections open in that time, not the 20,000 a limit of 20,000 would take
// (the guard's arithmetic is the same at any limit). Health and the call go on new connections, as a new client's
// would: a connection opened before the flood would still be answered without a cap.

import { describe, expect, test } from "bun:test"
import { readdirSync } from "node:fs"
import { join } from "node:path"
import { Server } from "../../src/server/server"
import { Supervised } from "../../src/shell/supervised"
import { callBody, IMPORTS, sandbox, serve } from "./support"

/** The server's open-file limit. */
const OPEN_FILES = 2_048
/** Connections held, in all: more than the server's open-file limit (the holders split them). */
const HELD = OPEN_FILES + 552
/** Each holder connects from a loopback address of its own (each has about 14,000 ports to connect from). */
const HOLDERS = ["127.0.0.2", "127.0.0.3"]
/** How long the holders get to open their connections, at most (the read deadline is 10 s). */
const OPENING_MS = 8_000
/** How long health and a call may take while the connections are held. */
const ANSWER_MS = 3_000

const ECHO = `${IMPORTS}
export default Tool.make({
  description: "Echo the text",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(input.text),
})
`

/** A process holding `count` connections with half a request header each; resolves when all are open. */
const hold = (port: number, host: string, count: number, source: string) => {
  const child = Bun.spawn(
    [process.execPath, join(import.meta.dir, "hold-connections.ts"), String(port), host, String(count), "partial", source],
    { stdin: "ignore", stdout: "pipe", stderr: "inherit" },
  )
  const opened = (async () => {
    const reader = child.stdout.getReader()
    let text = ""
    while (!text.includes("\n")) {
      const chunk = await reader.read()
      if (chunk.done) return undefined
      text += new TextDecoder().decode(chunk.value)
    }
    return JSON.parse(text.slice(0, text.indexOf("\n"))) as { connected: number; failed: number }
  })()
  return { child, opened }
}

/** Resolves once process `pid` has `count` open files, or after `ms`. */
const descriptorsReach = async (pid: number, count: number, ms: number) => {
  const until = performance.now() + ms
  while (performance.now() < until && readdirSync(`/proc/${pid}/fd`).length < count) await Bun.sleep(50)
}

describe("connections held to the open-file limit", () => {
  test(`${HELD} connections with half a header, over an open-file limit of ${OPEN_FILES}: health answers, a call settles and the event stream lives on while they are held`, async () => {
    const limit = Supervised.openFileLimit()!
    if (limit < HELD / HOLDERS.length + 100) throw new Error(`this test needs an open-file limit of ${HELD} (ulimit -n); it is ${limit}`)
    const box = sandbox({ "tools/echo.ts": ECHO })
    const server = await serve(box, [], {}, OPEN_FILES)
    const { port, host } = new URL(server.url)
    const events = await server.events()
    const { turnID } = await server.turn()

    const holders = HOLDERS.map((source) => hold(Number(port), host, HELD / HOLDERS.length, source))
    try {
      // The flood is in place once every connection is open, or (without a cap) once the server has no descriptor
      // left: the connections past that wait in its accept queue.
      const opened = await Promise.race([
        Promise.all(holders.map((holder) => holder.opened)),
        descriptorsReach(server.child.pid, OPEN_FILES - 10, OPENING_MS),
      ])
      if (Array.isArray(opened)) {
        // Some are closed for room before their client saw them open.
        const tried = opened.reduce((sum, line) => sum + (line?.connected ?? 0) + (line?.failed ?? 0), 0)
        expect(tried).toBe(HELD)
      }

      const health = await fetch(`${server.url}/v1/health`, { signal: AbortSignal.timeout(ANSWER_MS), keepalive: false })
      expect(health.status).toBe(200)
      expect(((await health.json()) as { ok: boolean }).ok).toBe(true)

      const call = await fetch(`${server.url}/v1/turns/${turnID}/calls`, {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        body: JSON.stringify(callBody({ name: "echo", input: { text: "still here" }, toolCallID: "call_held" })),
        signal: AbortSignal.timeout(ANSWER_MS),
        keepalive: false,
      })
      expect(call.status).toBe(200)
      expect(((await call.json()) as { structured: unknown }).structured).toBe("still here")
      // The host's event stream, opened before the flood and released from the deadline, was not taken for room.
      expect((await events.until("call.settled")).data.toolCallID).toBe("call_held")
      // Held below its limit, with room for what else it opens.
      expect(readdirSync(`/proc/${server.child.pid}/fd`).length).toBeLessThanOrEqual(Server.connectionDescriptors(OPEN_FILES) + 100)
      expect(server.stderr()).not.toContain("operational failure")
    } finally {
      for (const holder of holders) holder.child.kill("SIGKILL")
      await Promise.all(holders.map((holder) => holder.child.exited))
      await events.close()
    }
  }, 120_000)
})
