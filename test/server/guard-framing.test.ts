// What the connection guard passes on to the server, byte for byte, for what a hostile client might send: pipelined
// requests (no body, a Content-Length body holding a blank line, a chunked body with extensions, a blank line in its
// data, and trailers), a forged X-Core-Connection, framing it cannot follow (then nothing after is framed), heads and
// chunk lines at and past their limits. Each is sent in one write, a byte at a time, in small uneven pieces, and (the
// pipelined requests) split in two at every byte: the server must receive the same bytes, with the connection's own
// header added before each head's blank line it framed. The server here is a unix socket recording what arrives.

import { afterAll, describe, expect, test } from "bun:test"
import { connect } from "node:net"
import { join } from "node:path"
import { Guard } from "../../src/server/guard"
import { tempDir } from "../support/temp"

/** Bun's header limit, and the guard's: a head held longer than this is passed on as it is. */
const MAX_HEAD_BYTES = 16 * 1024
/** A chunk-size or trailer line held longer than this leaves the connection unframed. */
const MAX_LINE_BYTES = 4 * 1024
/** How long to wait for what the guard passes on. */
const ARRIVAL_MS = 10_000

const directory = tempDir("guard-framing-")
const backend = join(directory, "server.sock")
/** What the server received on each of its connections, in the order they were made. */
const received: Array<Array<Buffer>> = []
const server = Bun.listen<Array<Buffer>>({
  unix: backend,
  socket: {
    open: (socket) => {
      socket.data = []
      received.push(socket.data)
    },
    data: (socket, data) => {
      socket.data.push(Buffer.from(data))
    },
  },
})
const log: Array<string> = []
const guard = Guard.listen({
  hostname: "127.0.0.1",
  port: 0,
  backend,
  deadlineMs: 60_000,
  maxDescriptors: 10_000,
  log: (line) => log.push(line),
})
afterAll(async () => {
  await guard.close(0)
  server.stop(true)
})

/** A head as the guard passes it on: the connection's header added before its blank line. */
const framed = (head: string) => `${head.slice(0, -2)}x-core-connection: ID\r\n\r\n`

/**
 * Sends `pieces` on a new connection, each after the guard has read the one before; answers what the server got,
 * once it is as long as `passed` (the connection's number read as ID), or after ARRIVAL_MS.
 */
const send = async (pieces: ReadonlyArray<string>, passed: string, pauseMs = 1): Promise<string> => {
  const connections = received.length
  const socket = connect(guard.port, "127.0.0.1")
  socket.setNoDelay(true)
  socket.on("error", () => {})
  await new Promise((resolve) => socket.once("connect", resolve))
  for (const piece of pieces) {
    socket.write(Buffer.from(piece, "latin1"))
    await Bun.sleep(pauseMs)
  }
  const until = performance.now() + ARRIVAL_MS
  // The connection's number, wherever the guard put it, reads as ID.
  const text = () =>
    received.length > connections
      ? Buffer.concat(received[connections]!).toString("latin1").replace(/x-core-connection: \d+\r\n/g, "x-core-connection: ID\r\n")
      : ""
  while (text().length < passed.length && performance.now() < until) await Bun.sleep(5)
  // Anything more the guard would pass on has arrived by now too.
  await Bun.sleep(20)
  socket.destroy()
  return text()
}

const bytes = (text: string) => Array.from(text)
/** Pieces of 1 to 7 bytes, the same each run. */
const uneven = (text: string) => {
  const pieces: Array<string> = []
  for (let at = 0, size = 1; at < text.length; at += size, size = (size * 5 + 3) % 7 || 1) {
    pieces.push(text.slice(at, at + size))
  }
  return pieces
}

const GET = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
const POST = "POST /b HTTP/1.1\r\nHost: h\r\ncontent-LENGTH :  11 \r\n\r\n"
const POST_BODY = "ab\r\n\r\ncdefg"
const CHUNKED = "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n"
const CHUNKED_BODY = '5;name="a;b";x=1\r\n\r\n\r\nX\r\n3\r\nyz!\r\n000;last\r\nTrailer-One: 1\r\nTrailer-Two: 2\r\n\r\n'
const FORGED = "GET /d HTTP/1.1\r\nX-Core-Connection: 1\r\nHost: h\r\nx-core-connection:2\r\n\r\n"

/** Requests one after another in one stream, every one framed. */
const PIPELINED = {
  sent: GET + POST + POST_BODY + CHUNKED + CHUNKED_BODY + FORGED + GET,
  passed: framed(GET) + framed(POST) + POST_BODY + framed(CHUNKED) + CHUNKED_BODY + framed("GET /d HTTP/1.1\r\nHost: h\r\n\r\n") + framed(GET),
}

/** A request whose framing the guard cannot follow, then one more: both passed on, only the first head framed. */
const unfollowable = (head: string, rest: string) => ({ sent: head + rest + GET, passed: framed(head) + rest + GET })

const UNFOLLOWABLE = {
  "two different Content-Lengths": unfollowable("POST /e HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "abcd"),
  "a Content-Length with a sign": unfollowable("POST /e HTTP/1.1\r\nContent-Length: +4\r\n\r\n", "abcd"),
  "a Content-Length of 16 digits": unfollowable("POST /e HTTP/1.1\r\nContent-Length: 0000000000000004\r\n\r\n", "abcd"),
  "both a Content-Length and chunked": unfollowable("POST /e HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n", "0\r\n\r\n"),
  "a coding before chunked": unfollowable("POST /e HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "0\r\n\r\n"),
  "chunked twice": unfollowable("POST /e HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "0\r\n\r\n"),
  "a chunk size that is not hexadecimal": unfollowable(CHUNKED, "zz\r\nab\r\n0\r\n\r\n"),
  "a chunk size past 2^53": unfollowable(CHUNKED, "fffffffffffffffff\r\nab\r\n0\r\n\r\n"),
  "an upgrade": unfollowable("GET /e HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", "raw bytes"),
  CONNECT: unfollowable("connect h:1 HTTP/1.1\r\nHost: h\r\n\r\n", "raw bytes"),
}

/** Requests that are framed as usual, then one more. */
const FOLLOWED = {
  "Content-Length: 0": { sent: `POST /e HTTP/1.1\r\nContent-Length: 0\r\n\r\n${GET}`, passed: framed("POST /e HTTP/1.1\r\nContent-Length: 0\r\n\r\n") + framed(GET) },
  "Content-Length twice, the same": {
    sent: `POST /e HTTP/1.1\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nab${GET}`,
    passed: `${framed("POST /e HTTP/1.1\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n")}ab${framed(GET)}`,
  },
  "a head with no fields": { sent: `GET / HTTP/1.1\r\n\r\n${GET}`, passed: framed("GET / HTTP/1.1\r\n\r\n") + framed(GET) },
  "a name that only begins like a framing field": {
    sent: `POST /e HTTP/1.1\r\nContent-Lengths: 5\r\nX-Core-Connections: 9\r\n\r\n${GET}`,
    passed: framed("POST /e HTTP/1.1\r\nContent-Lengths: 5\r\nX-Core-Connections: 9\r\n\r\n") + framed(GET),
  },
}

describe("what the connection guard passes on", () => {
  const strategies: Record<string, (text: string) => ReadonlyArray<string>> = {
    "in one write": (text) => [text],
    "a byte at a time": bytes,
    "in uneven small pieces": uneven,
  }

  for (const [strategy, split] of Object.entries(strategies)) {
    test(`pipelined requests of every framing, ${strategy}`, async () => {
      expect(await send(split(PIPELINED.sent), PIPELINED.passed)).toBe(PIPELINED.passed)
    }, 60_000)

    test(`framing the guard cannot follow is passed on as it is, and nothing after it is framed, ${strategy}`, async () => {
      for (const [name, { sent, passed }] of Object.entries(UNFOLLOWABLE)) {
        expect({ name, passed: await send(split(sent), passed) }).toEqual({ name, passed })
      }
    }, 60_000)

    test(`framing it follows goes on to the next request, ${strategy}`, async () => {
      for (const [name, { sent, passed }] of Object.entries(FOLLOWED)) {
        expect({ name, passed: await send(split(sent), passed) }).toEqual({ name, passed })
      }
    }, 60_000)
  }

  test("pipelined requests split in two at every byte", async () => {
    for (let at = 1; at < PIPELINED.sent.length; at++) {
      const pieces = [PIPELINED.sent.slice(0, at), PIPELINED.sent.slice(at)]
      expect({ at, passed: await send(pieces, PIPELINED.passed) }).toEqual({ at, passed: PIPELINED.passed })
    }
  }, 120_000)

  test("a head held up to the limit is framed; one held past it is passed on as it is, and nothing after is framed", async () => {
    const head = (fill: number) => `GET /f HTTP/1.1\r\nX-Fill: ${"a".repeat(fill)}`
    const prefix = "GET /f HTTP/1.1\r\nX-Fill: ".length
    const atLimit = head(MAX_HEAD_BYTES - prefix)
    const atLimitPassed = framed(`${atLimit}\r\n\r\n`) + framed(GET)
    expect(await send([atLimit, `\r\n\r\n${GET}`], atLimitPassed, 50)).toBe(atLimitPassed)
    const past = head(MAX_HEAD_BYTES - prefix + 1)
    const pastPassed = `${past}\r\n\r\n${GET}`
    expect(await send([past, `\r\n\r\n${GET}`], pastPassed, 50)).toBe(pastPassed)
    // Whole in one read, a head past the limit is framed: the server refuses it (431) as it would without the guard.
    const whole = framed(`${head(MAX_HEAD_BYTES)}\r\n\r\n`)
    expect(await send([`${head(MAX_HEAD_BYTES)}\r\n\r\n`], whole)).toBe(whole)
  }, 60_000)

  test("a chunk line held up to the limit is read; one held past it leaves the connection unframed", async () => {
    const extension = (length: number) => `1;${"e".repeat(length - 2)}`
    const atLimit = extension(MAX_LINE_BYTES)
    const rest = `\r\nZ\r\n0\r\n\r\n${GET}`
    const atLimitPassed = `${framed(CHUNKED)}${atLimit}\r\nZ\r\n0\r\n\r\n${framed(GET)}`
    expect(await send([CHUNKED + atLimit, rest], atLimitPassed, 50)).toBe(atLimitPassed)
    const past = extension(MAX_LINE_BYTES + 1)
    const pastPassed = `${framed(CHUNKED)}${past}${rest}`
    expect(await send([CHUNKED + past, rest], pastPassed, 50)).toBe(pastPassed)
    expect(log).toEqual([])
  }, 60_000)
})
