// The connection guard's queues, read deadline and limit, over raw sockets against a unix socket server of the
// test's own. What waits in a queue arrives whole and in order: a large upload whose first read holds the head and
// more than the guard's own buffer, to a server not reading at first, with requests after it; small requests pipelined
// on two connections at once past what their unix sockets hold; a large answer to a client not reading at first;
// requests on many new connections at once, each queued until its unix socket opens. The deadline closes the
// connections it holds, in any order they were released and armed again; and at its limit the guard closes the
// connection that has waited longest for its request, counting from the last request it began.

import { afterAll, describe, expect, test } from "bun:test"
import { connect, type Socket } from "node:net"
import { join } from "node:path"
import { Guard } from "../../src/server/guard"
import { tempDir } from "../support/temp"

/** More than the socket buffers on either side hold, and than the guard's buffer for putting a request together. */
const LARGE_BYTES = 4 * 1024 * 1024
/** How long the server, or the client, does not read. */
const STALL_MS = 300
/** How long to wait for what should arrive. */
const ARRIVAL_MS = 20_000

/** Bytes that differ from offset to offset, so that a run lost, doubled or swapped shows. */
const pattern = (length: number, seed: number): Buffer => {
  const bytes = Buffer.allocUnsafe(length)
  let state = seed
  for (let at = 0; at < length; at++) {
    state = (state * 1_103_515_245 + 12_345) >>> 0
    bytes[at] = state >>> 24
  }
  return bytes
}

interface Peer {
  /** What the server received on each of its connections, in the order they were made. */
  readonly received: Array<Array<Buffer>>
  readonly guard: Guard.Interface
  readonly server: Bun.SocketListener<Array<Buffer>>
}

const peers: Array<Peer> = []
afterAll(async () => {
  for (const { guard, server } of peers.splice(0)) {
    await guard.close(0)
    server.stop(true)
  }
})

/**
 * A guard in front of a unix socket server that records what it receives (not reading at first when `stall`), and
 * answers a request line `GET /large` with LARGE_BYTES of `answer` once.
 */
const peer = (options: { deadlineMs?: number; maxDescriptors?: number; stall?: boolean; answer?: Buffer }): Peer => {
  const backend = join(tempDir("guard-flow-"), "server.sock")
  const received: Array<Array<Buffer>> = []
  /** What is left of the answer to write, per socket. */
  const left = new Map<Bun.Socket<Array<Buffer>>, Buffer>()
  const write = (socket: Bun.Socket<Array<Buffer>>) => {
    const rest = left.get(socket)
    if (rest === undefined) return
    const written = socket.write(rest)
    if (written >= rest.length) left.delete(socket)
    else left.set(socket, rest.subarray(Math.max(written, 0)))
  }
  const server = Bun.listen<Array<Buffer>>({
    unix: backend,
    socket: {
      open: (socket) => {
        socket.data = []
        received.push(socket.data)
        if (options.stall === true) {
          socket.pause()
          setTimeout(() => socket.resume(), STALL_MS)
        }
      },
      data: (socket, data) => {
        socket.data.push(Buffer.from(data))
        if (options.answer !== undefined && Buffer.concat(socket.data).includes("GET /large ") && !left.has(socket)) {
          left.set(socket, options.answer)
          write(socket)
        }
      },
      drain: write,
    },
  })
  const guard = Guard.listen({
    hostname: "127.0.0.1",
    port: 0,
    backend,
    deadlineMs: options.deadlineMs ?? 60_000,
    maxDescriptors: options.maxDescriptors ?? 10_000,
    log: () => {},
  })
  const made = { received, guard, server }
  peers.push(made)
  return made
}

/** A client connection: what it received, whether it is closed, and a wait for a condition on those. */
const client = (port: number) => {
  const socket: Socket = connect(port, "127.0.0.1")
  const chunks: Array<Buffer> = []
  let length = 0
  let closed = false
  socket.on("data", (chunk: Buffer) => {
    chunks.push(chunk)
    length += chunk.length
  })
  socket.on("error", () => {})
  socket.on("close", () => (closed = true))
  const connected = new Promise((resolve) => socket.once("connect", resolve))
  return { socket, connected, closed: () => closed, length: () => length, received: () => Buffer.concat(chunks) }
}

/** Waits until `done`, or ARRIVAL_MS. */
const until = async (done: () => boolean) => {
  const end = performance.now() + ARRIVAL_MS
  while (!done() && performance.now() < end) await Bun.sleep(5)
}

const withID = (text: Buffer) => Buffer.from(text.toString("latin1").replace(/x-core-connection: \d+\r\n/g, "x-core-connection: ID\r\n"), "latin1")

describe("the connection guard's queues", () => {
  test("a large upload, its head in the first read, to a server not reading at first, arrives whole, and the requests after it framed", async () => {
    const { guard, received } = peer({ stall: true })
    const body = pattern(LARGE_BYTES, 1)
    const head = `POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: ${body.length}\r\n\r\n`
    const gets = Array.from({ length: 10 }, (_, index) => `GET /get-${index} HTTP/1.1\r\nHost: h\r\n\r\n`)
    const next = "GET /next HTTP/1.1\r\nHost: h\r\n\r\n"
    const framed = (text: string) => Buffer.from(`${text.slice(0, -2)}x-core-connection: ID\r\n\r\n`, "latin1")
    const expected = Buffer.concat([framed(head), body, ...gets.map(framed), framed(next)])
    const sender = client(guard.port)
    await sender.connected
    // One write: the guard's first read holds the head and as much of the body as the socket had.
    sender.socket.write(Buffer.concat([Buffer.from(head, "latin1"), body]))
    // Then requests read one at a time, each framed while what came before still waits for the server.
    for (const get of gets) {
      sender.socket.write(get)
      await Bun.sleep(5)
    }
    sender.socket.write(next)
    // Until the next request has arrived whole, after the body.
    const tail = () => Buffer.concat((received[0] ?? []).slice(-2)).toString("latin1").slice(-200)
    await until(() => /GET \/next [^]*\r\n\r\n$/.test(tail()))
    const passed = withID(Buffer.concat(received[0] ?? []))
    sender.socket.destroy()
    expect(passed.length).toBe(expected.length)
    expect(passed.equals(expected)).toBe(true)
  }, 60_000)

  test("a large answer to a client not reading at first arrives whole", async () => {
    const answer = pattern(LARGE_BYTES, 2)
    const { guard } = peer({ answer })
    const reader = client(guard.port)
    await reader.connected
    reader.socket.pause()
    reader.socket.write("GET /large HTTP/1.1\r\nHost: h\r\n\r\n")
    await Bun.sleep(STALL_MS)
    reader.socket.resume()
    await until(() => reader.length() >= answer.length)
    const got = reader.received()
    reader.socket.destroy()
    expect(got.length).toBe(answer.length)
    expect(got.equals(answer)).toBe(true)
  }, 60_000)

  test("small requests pipelined on two connections, to a server not reading at first, arrive as sent on each", async () => {
    // Each connection sends more than its unix socket holds, in reads the guard frames and puts together in its own
    // buffer: what a socket does not take is kept apart from that buffer, which the other connection's reads reuse.
    const BATCHES = 24
    const PER_BATCH = 400
    const { guard, received } = peer({ stall: true })
    const request = (name: string, batch: number, index: number) => `GET /${name}-${batch}-${index} HTTP/1.1\r\nHost: h\r\n\r\n`
    const batch = (name: string, number: number) =>
      Array.from({ length: PER_BATCH }, (_, index) => request(name, number, index)).join("")
    const expected = (name: string) =>
      Array.from({ length: BATCHES }, (_, number) => batch(name, number))
        .join("")
        .replaceAll("\r\n\r\n", "\r\nx-core-connection: ID\r\n\r\n")
    const senders = { a: client(guard.port), b: client(guard.port) }
    await Promise.all(Object.values(senders).map((sender) => sender.connected))
    for (let number = 0; number < BATCHES; number++) {
      for (const [name, sender] of Object.entries(senders)) sender.socket.write(batch(name, number))
      await Bun.sleep(2)
    }
    const passed = () => received.map((chunks) => withID(Buffer.concat(chunks)).toString("latin1"))
    await until(() => received.length === 2 && passed().every((text) => text.length >= expected("a").length))
    const texts = passed()
    for (const sender of Object.values(senders)) sender.socket.destroy()
    const named = Object.fromEntries(texts.map((text) => [text.slice(5, 6), text]))
    expect(named.a === expected("a")).toBe(true)
    expect(named.b === expected("b")).toBe(true)
  }, 60_000)

  test("requests on many new connections at once each reach the server on a connection of their own, as sent", async () => {
    const CONNECTIONS = 50
    const { guard, received } = peer({})
    const clients = Array.from({ length: CONNECTIONS }, () => client(guard.port))
    await Promise.all(clients.map((connection) => connection.connected))
    // Every request framed before any connection's unix socket is open: each waits in its own queue.
    clients.forEach((connection, index) => connection.socket.write(`GET /n-${index} HTTP/1.1\r\nHost: h\r\n\r\n`))
    await until(() => received.length === CONNECTIONS && received.every((chunks) => Buffer.concat(chunks).includes("\r\n\r\n")))
    const texts = received.map((chunks) => Buffer.concat(chunks).toString("latin1"))
    for (const connection of clients) connection.socket.destroy()
    const paths = texts.map((text) => /^GET \/n-(\d+) /.exec(text)?.[1]).map(Number)
    const ids = new Set(texts.map((text) => /x-core-connection: (\d+)\r\n/.exec(text)?.[1]))
    expect({ paths: paths.sort((a, b) => a - b), ids: ids.size }).toEqual({ paths: clients.map((_, index) => index), ids: CONNECTIONS })
    for (const text of texts) expect(text).toMatch(/^GET \/n-\d+ HTTP\/1\.1\r\nHost: h\r\nx-core-connection: \d+\r\n\r\n$/)
  }, 60_000)
})

describe("the connection guard's deadline and limit", () => {
  test("the deadline closes the connections it holds, and not one released from the middle of them until its next request", async () => {
    const DEADLINE_MS = 1_000
    const { guard, received } = peer({ deadlineMs: DEADLINE_MS })
    const first = client(guard.port)
    await first.connected
    const released = client(guard.port)
    await released.connected
    released.socket.write("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
    await until(() => received.length === 1 && Buffer.concat(received[0]!).includes("\r\n\r\n"))
    const id = /x-core-connection: (\d+)\r\n/.exec(Buffer.concat(received[0]!).toString("latin1"))![1]!
    const last = client(guard.port)
    await last.connected
    await until(() => guard.descriptors() === 1 + 3 + 1)
    // Under the deadline, oldest first: first, released, last. Released from the middle of them:
    guard.release(new Request("http://h/a", { headers: { "x-core-connection": id } }))
    // A connection opened now is closed a deadline from now: by then, so are the others under it.
    const marker = client(guard.port)
    await marker.connected
    await until(() => marker.closed())
    expect({ first: first.closed(), released: released.closed(), last: last.closed() }).toEqual({ first: true, released: false, last: true })
    // Its next request puts it under the deadline again.
    released.socket.write("GET /b HTTP/1.1\r\n")
    await until(() => released.closed())
    expect(released.closed()).toBe(true)
    expect(guard.descriptors()).toBe(0)
  }, 60_000)

  for (const released of [true, false]) {
    test(`at its limit, the guard closes the connection waiting longest for its request, counted from ${released ? "the last request it began, once one was released" : "its first byte while none was released"}`, async () => {
      // A connection holds 1 descriptor until its first request passes, then 3; a new one needs room for 3.
      const { guard, received } = peer({ maxDescriptors: 7 })
      const open = async () => {
        const connection = client(guard.port)
        await connection.connected
        return connection
      }
      const early = await open()
      const second = await open()
      const third = await open()
      await until(() => guard.descriptors() === 3)
      // The first connection's request, after the others opened: it is passed on (3 descriptors).
      early.socket.write("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
      await until(() => received.length === 1 && Buffer.concat(received[0]!).includes("\r\n\r\n"))
      expect(guard.descriptors()).toBe(3 + 1 + 1)
      if (released) {
        // Released (it passed the checks, as the server says with the header the guard added), and then another
        // request begun: the connection waits for that one, counted from it.
        const id = /x-core-connection: (\d+)/i.exec(Buffer.concat(received[0]!).toString())![1]!
        guard.release(new Request("http://h/a", { headers: { "x-core-connection": id } }))
        early.socket.write("GET /b HTTP/1.1\r\n")
        // Half a head: held by the guard (nothing reaches the server), its deadline begun with its first byte.
        await Bun.sleep(100)
      }
      const states = (connections: Record<string, ReturnType<typeof client>>) =>
        Object.fromEntries(Object.entries(connections).map(([name, connection]) => [name, connection.closed() ? "closed" : "open"]))
      const fourth = await open()
      if (released) {
        // Each new connection makes room by closing one: second, then third, then early (after them, by its request).
        await until(() => second.closed())
        expect(states({ early, second, third, fourth })).toEqual({ early: "open", second: "closed", third: "open", fourth: "open" })
        const fifth = await open()
        await until(() => third.closed())
        expect(states({ early, third, fourth, fifth })).toEqual({ early: "open", third: "closed", fourth: "open", fifth: "open" })
        const sixth = await open()
        await until(() => early.closed())
        expect(states({ early, fourth, fifth, sixth })).toEqual({ early: "closed", fourth: "open", fifth: "open", sixth: "open" })
        for (const connection of [fourth, fifth, sixth]) connection.socket.destroy()
      } else {
        // Never released, its request gained it no time: it is the oldest, and goes first.
        await until(() => early.closed())
        expect(states({ early, second, third, fourth })).toEqual({ early: "closed", second: "open", third: "open", fourth: "open" })
        for (const connection of [second, third, fourth]) connection.socket.destroy()
      }
    }, 60_000)
  }
})
