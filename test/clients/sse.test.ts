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
