// A call's event stream through the compiled `core serve` on a real socket (src/server/call-stream.ts): a reader
// that stops reading gets the newest progress in place of those past a bound, and the settlement, while the
// server's memory stays bounded; a reader that goes away mid-stream leaves the call to settle and be recorded, and the server answering.

import { describe, expect, test } from "bun:test"
import { connect, type Socket } from "node:net"
import { Events } from "../../src/host/events"
import { Latch } from "../support/latch"
import { gateTool } from "../support/tools"
import { EventReader, IMPORTS, sandbox, serve } from "./support"

/** Reports `CHATTER` progress events of about 1 KiB each as fast as it can, then answers "done". */
const CHATTER = 20_000
const CHATTY = `${IMPORTS}
export default Tool.make({
  description: "Reports progress, then finishes",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: (_, context) =>
    Effect.gen(function* () {
      const pad = "x".repeat(1000)
      for (let step = 1; step <= ${CHATTER}; step++) yield* context.progress({ message: step + " " + pad })
      return "done"
    }),
})
`

/** A raw HTTP/1.1 request for a call's event stream. */
const streamRequest = (url: string, token: string, turnID: string, toolCallID: string, name: string, route = "calls") => {
  const body = JSON.stringify({ sessionID: "ses_stream", assistantMessageID: "m", toolCallID, name, input: {} })
  const { host } = new URL(url)
  return (
    `POST /v1/turns/${turnID}/${route} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\n` +
    `Accept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  )
}

/** A socket to the server's address. */
const open = (url: string): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url)
    const socket = connect({ host: hostname, port: Number(port) }, () => resolve(socket))
    socket.once("error", reject)
  })

/** The events of a chunked SSE body, read whole (`text` holds the answer from its status line on). */
const eventsOf = (text: string) => {
  const head = text.indexOf("\r\n\r\n")
  let at = head + 4
  let body = ""
  for (;;) {
    const lineEnd = text.indexOf("\r\n", at)
    const size = Number.parseInt(text.slice(at, lineEnd), 16)
    // The end, or a chunk this reader cannot follow (sizes count bytes, the text characters): it stops rather than spin.
    if (!(size > 0)) break
    body += text.slice(lineEnd + 2, lineEnd + 2 + size)
    at = lineEnd + 2 + size + 2
  }
  return body
    .split("\n\n")
    // A stream may open with a comment (its head then goes out at once): readers skip it.
    .filter((block) => block !== "" && !block.startsWith(":"))
    .map((block) => {
      const [event, data] = block.split("\n") as [string, string]
      return { event: event.slice("event: ".length), data: JSON.parse(data.slice("data: ".length)) }
    })
}

/** Resident memory of a process, in bytes. */
const rss = async (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(await Bun.file(`/proc/${pid}/status`).text())![1]) * 1024

describe("a call's event stream on a real socket", () => {
  test("a reader that stops reading gets the newest progress in place of those past a bound, and the settlement", async () => {
    const box = sandbox({ "tools/chatty.ts": CHATTY })
    const server = await serve(box)
    const { turnID } = await server.turn()
    const socket = await open(server.url)
    // Nothing is read until the call has settled: the socket's buffers fill, then the stream's.
    socket.pause()
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    const ended = new Promise<void>((resolve) =>
      socket.on("data", () => {
        if (Buffer.concat(chunks.slice(-2)).toString("latin1").endsWith("0\r\n\r\n")) resolve()
      }),
    )
    socket.write(streamRequest(server.url, server.token, turnID, "call_slow", "chatty"))
    for (;;) {
      const recorded = await server.json("GET", "/v1/settlements/ses_stream/call_slow")
      if (recorded.status === 200) break
      await Bun.sleep(50)
    }
    // Some 20 MB were reported; the server holds no more than its buffer of them for this reader.
    expect(await rss(server.child.pid)).toBeLessThan(400 * 1024 * 1024)
    socket.resume()
    await ended
    socket.destroy()
    const events = eventsOf(Buffer.concat(chunks).toString("utf8"))
    expect(events.at(-1)).toEqual({ event: "settlement", data: expect.objectContaining({ status: "success", structured: "done" }) })
    const steps = events.filter((event) => event.event === "progress").map((event) => Number(event.data.message.split(" ")[0]))
    // The first ones went into the socket's buffers before the reader stopped, then a MiB of them waited; past that
    // each replaced the one waiting before it (a progress is the call's state now): the newest is what is read last.
    expect(steps.length).toBeLessThan(Events.BUFFER)
    expect(steps.every((step, index) => index === 0 || step > steps[index - 1]!)).toBe(true)
    expect(steps.at(-1)).toBe(CHATTER)
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)
  })

  // `/calls` is answered without the router, `/calls/stream` through it: both the same.
  for (const route of ["calls", "calls/stream"]) test(`a reader that goes away mid-stream leaves the call to settle and be recorded, and the server answering (${route})`, async () => {
    await using latch = Latch.open()
    const box = sandbox({ "tools/gate.ts": gateTool(latch, { progress: { message: "waiting" } }) })
    const server = await serve(box)
    const { turnID } = await server.turn()
    const socket = await open(server.url)
    let received = ""
    const progressed = new Promise<void>((resolve) =>
      socket.on("data", (chunk: Buffer) => {
        received += chunk.toString("utf8")
        if (received.includes("event: progress")) resolve()
      }),
    )
    socket.write(streamRequest(server.url, server.token, turnID, "call_gone", "gate", route))
    await progressed
    expect(received).toStartWith("HTTP/1.1 200")
    // A second reader joins the running call (a host that reconnected) and stays. Its head comes with its first
    // event (Bun sends a stream's head with its first bytes), so it is awaited only once the call can settle.
    const joining = server.fetch("POST", `/v1/turns/${turnID}/${route}`, {
      body: { sessionID: "ses_stream", assistantMessageID: "m", toolCallID: "call_gone", name: "gate", input: {} },
      headers: { accept: "text/event-stream" },
    })
    socket.destroy()
    await Bun.sleep(300)
    latch.release()
    const joined = await joining
    expect(joined.status).toBe(200)
    expect(await new EventReader(joined).rest()).toEqual([
      { event: "settlement", data: expect.objectContaining({ status: "success", structured: "opened" }) },
    ])
    for (;;) {
      const recorded = await server.json("GET", "/v1/settlements/ses_stream/call_gone")
      if (recorded.status === 200) {
        expect(recorded.body).toMatchObject({ status: "success", structured: "opened" })
        break
      }
      await Bun.sleep(50)
    }
    // Posted again with a stream, it replays at once.
    const again = await server.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: { sessionID: "ses_stream", assistantMessageID: "m", toolCallID: "call_gone", name: "gate", input: {} },
      headers: { accept: "text/event-stream" },
    })
    expect(again.headers.get("x-core-replayed")).toBe("true")
    expect(await new EventReader(again).rest()).toEqual([
      { event: "settlement", data: expect.objectContaining({ status: "success", structured: "opened" }) },
    ])
    expect(server.stderr()).not.toContain("operational")
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)
  })
})
