// The client's server-sent events reader against the event-stream format: fields split across chunks, several
// data lines, comments, every line ending (\n, \r\n, a lone \r, one cut between chunks) and an event the stream
// ends before finishing.

import { expect, test } from "bun:test"
import * as Sse from "../../clients/typescript/src/sse"

const read = async (chunks: ReadonlyArray<string>) => {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
      controller.close()
    },
  })
  const comments: Array<string> = []
  const events: Array<Sse.Message> = []
  for await (const message of Sse.read(body, (comment) => comments.push(comment))) events.push(message)
  return { events, comments }
}

test("reads events split across chunks, joins data lines, and reports comments", async () => {
  expect(await read([": connected\n\nevent: progress\ndata: {\"message\":", "\"a\"}\n\ndata: 1\n", "data: 2\n\n"])).toEqual({
    events: [
      { event: "progress", data: '{"message":"a"}' },
      { event: "message", data: "1\n2" },
    ],
    comments: ["connected"],
  })
})

test("takes \\r\\n, a lone \\r and a \\r\\n cut between chunks as line ends; an unfinished last event is dropped", async () => {
  expect(await read(["event: a\r", "\ndata:x\r\n\r", "\nevent: b\rdata: y\r\rdata: z"])).toEqual({
    events: [
      { event: "a", data: "x" },
      { event: "b", data: "y" },
    ],
    comments: [],
  })
})

test("a data field without a value, or a line without a colon, counts as empty", async () => {
  expect((await read(["data\ndata:\n\n"])).events).toEqual([{ event: "message", data: "\n" }])
})

/** A body that sends `chunk` again and again, counting what was pulled and whether the reader let it go. */
const endless = (chunk: string) => {
  const encoded = new TextEncoder().encode(chunk)
  const seen = { pulled: 0, cancelled: false }
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      seen.pulled++
      controller.enqueue(encoded)
    },
    cancel() {
      seen.cancelled = true
    },
  })
  return { body, seen }
}

const drain = async (body: ReadableStream<Uint8Array>, maxLineLength?: number) => {
  const events: Array<Sse.Message> = []
  for await (const message of Sse.read(body, undefined, maxLineLength)) events.push(message)
  return events
}

test("an endless line fails with LineTooLong at the default 64 Mi bound, having read little past it, and the body is let go", async () => {
  const { body, seen } = endless("x".repeat(1024 * 1024))
  const started = performance.now()
  const error = await drain(body).catch((error: unknown) => error)
  const elapsed = performance.now() - started
  expect(error).toBeInstanceOf(Sse.LineTooLong)
  expect(error).toMatchObject({ kind: "line_too_long", status: 502, limit: Sse.DEFAULT_MAX_LINE_LENGTH })
  expect((error as Error).message).toContain(String(Sse.DEFAULT_MAX_LINE_LENGTH))
  expect(seen.pulled).toBeLessThanOrEqual(Sse.DEFAULT_MAX_LINE_LENGTH / (1024 * 1024) + 2)
  expect(seen.cancelled).toBe(true)
  // Each chunk is scanned once: 64 MiB is read in well under the minutes a quadratic scan took.
  expect(elapsed).toBeLessThan(20_000)
})

test("the bound is configurable; a line of exactly the bound is read, one character more fails", async () => {
  const at = await read(["data: ", "x".repeat(10), "\n\n"])
  expect(at.events).toEqual([{ event: "message", data: "x".repeat(10) }])
  const line = `data: ${"y".repeat(10)}`
  const exact = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(`${line}\n\n`))
      controller.close()
    },
  })
  expect(await drain(exact, line.length)).toEqual([{ event: "message", data: "y".repeat(10) }])
  const over = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(`${line}z\n\n`))
      controller.close()
    },
  })
  expect(await drain(over, line.length).catch((error: unknown) => error)).toBeInstanceOf(Sse.LineTooLong)
})

test("an endless event of short data lines, never ended by a blank line, is bounded too", async () => {
  const { body, seen } = endless("data: 0123456789\n".repeat(1000))
  const error = await drain(body, 1024 * 1024).catch((error: unknown) => error)
  expect(error).toBeInstanceOf(Sse.LineTooLong)
  expect(seen.cancelled).toBe(true)
})

test("a client's call whose event stream sends an endless line fails clearly, once, without resending the call", async () => {
  const { Core, CoreError } = await import("../../clients/typescript/src/index")
  let posts = 0
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      if (request.method === "POST") posts++
      const chunk = new TextEncoder().encode("x".repeat(64 * 1024))
      return new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(": connected\n\nevent: progress\ndata: "))
          },
          pull(controller) {
            controller.enqueue(chunk)
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      )
    },
  })
  try {
    const core = Core.connect({ url: `http://127.0.0.1:${server.port}`, token: "t", maxLineLength: 1024 * 1024 })
    const call = { sessionID: "s", assistantMessageID: "m", toolCallID: "c", name: "echo", input: {} }
    const error = await core.settle("turn", call, { stream: true }).catch((error: unknown) => error)
    expect(error).toBeInstanceOf(CoreError)
    expect(error).toMatchObject({ kind: "line_too_long", limit: 1024 * 1024 })
    expect(posts).toBe(1)
  } finally {
    server.stop(true)
  }
})

test("each hands events on in order as they complete; what its handler throws ends the read and lets the body go", async () => {
  const body = (chunks: ReadonlyArray<string>) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
        controller.close()
      },
    })
  const seen: Array<Sse.Message> = []
  const comments: Array<string> = []
  await Sse.each(body([": hi\n\nevent: a\ndata: 1\n", "\ndata: 2\r\n\r", "\ndata: left"]), (message) => seen.push(message), (comment) => comments.push(comment))
  expect(seen).toEqual([
    { event: "a", data: "1" },
    { event: "message", data: "2" },
  ])
  expect(comments).toEqual(["hi"])
  const { body: endlessBody, seen: pulled } = endless("data: x\n\n")
  let handed = 0
  const error = await Sse.each(endlessBody, () => {
    if (++handed === 3) throw new Error("enough")
  }).catch((error: unknown) => error)
  expect((error as Error).message).toBe("enough")
  expect(handed).toBe(3)
  expect(pulled.cancelled).toBe(true)
})
