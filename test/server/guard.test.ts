// The connection guard in front of the sidecar's HTTP server, over raw sockets: it follows each request's framing on
// a kept-alive connection (no body, Content-Length, chunked, pipelined), so a long call after a health check on the
// same connection is released from the read deadline and answered past it; a client's own X-Core-Connection header
// is dropped; a burst of new connections larger than the server's unix socket queues is answered whole, and a server
// that stays unreachable closes the connection after a while; and the server's unix socket is in a private
// directory, gone once the server stops.

import { afterAll, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { join } from "node:path"
import { Deferred, Effect, Fiber } from "effect"
import { Runtime } from "../../src/cli/runtime"
import { Guard } from "../../src/server/guard"
import { Server } from "../../src/server/server"
import { ProcessDirs } from "../../src/shell/process-dirs"
import { IMPORTS, RAN, sandbox } from "./support"

const DEADLINE_S = 1
const TOKEN = "guard-token"

/** Waits, without reporting progress, until `<location>/gate` exists. */
const GATE = `${IMPORTS}${RAN}
import { existsSync } from "node:fs"
export default Tool.make({
  description: "Wait for the gate file",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () =>
    Effect.gen(function* () {
      ran("gate")
      while (!existsSync(joinPath(import.meta.dir, "..", "gate"))) yield* Effect.sleep(5)
      return "opened"
    }),
})
`

const stops: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const stop of stops.splice(0)) await stop()
})

const listen = async (before?: (data: string) => void, deadlineS = DEADLINE_S) => {
  const box = sandbox({ "tools/gate.ts": GATE })
  before?.(box.data)
  const environment = { dataDir: box.data, home: box.home }
  const stop = Deferred.makeUnsafe<void>()
  let onReady!: (ready: Server.Ready) => void
  const ready = new Promise<Server.Ready>((resolve) => (onReady = resolve))
  const log: Array<string> = []
  const fiber = Effect.runFork(
    Effect.gen(function* () {
      const primary = yield* Runtime.prepare("serve", environment, box.location)
      yield* Server.run({
        environment,
        primary,
        roots: [primary.directory],
        host: "127.0.0.1",
        port: 0,
        token: TOKEN,
        onReady,
        stop: Deferred.await(stop),
        log: (line) => log.push(line),
        readDeadlineS: deadlineS,
      })
    }).pipe(Effect.scoped),
  )
  const { url } = await ready
  const stopped = async () => {
    Deferred.doneUnsafe(stop, Effect.void)
    await Effect.runPromise(Fiber.await(fiber))
  }
  stops.push(stopped)
  return { box, log, port: Number(new URL(url).port), host: new URL(url).host, stop: stopped }
}

/** A raw connection: what it has received so far, and a wait until that satisfies a condition (or it closes). */
const raw = (port: number) => {
  const socket: Socket = connect(port, "127.0.0.1")
  let received = ""
  let closed = false
  const waiters: Array<() => void> = []
  const wake = () => {
    for (const waiter of waiters.splice(0)) waiter()
  }
  socket.on("data", (chunk) => {
    received += chunk.toString("latin1")
    wake()
  })
  socket.on("error", () => {})
  socket.on("close", () => {
    closed = true
    wake()
  })
  const until = async (done: (text: string) => boolean) => {
    while (!done(received) && !closed) await new Promise<void>((resolve) => waiters.push(resolve))
    return received
  }
  return { socket, until, closed: () => closed, received: () => received }
}

const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((match) => Number(match[1]))

/** Resolves once a connection holding half a header is closed by the deadline: the deadline has passed. */
const deadlinePassed = async (port: number, host: string) => {
  const marker = raw(port)
  marker.socket.write(`GET /v1/health HTTP/1.1\r\nHost: ${host}\r\n`)
  await marker.until(() => false)
}

describe("the connection guard", () => {
  test("on one kept-alive connection: health, a chunked call quiet past the deadline, then a request with a body, all answered in order", async () => {
    const server = await listen()
    const client = raw(server.port)
    const auth = `Host: ${server.host}\r\nAuthorization: Bearer ${TOKEN}\r\n`
    // Two requests in one write (pipelined); health is public and never released.
    client.socket.write(`GET /v1/health HTTP/1.1\r\nHost: ${server.host}\r\n\r\nPOST /v1/turns HTTP/1.1\r\n${auth}Content-Length: 2\r\n\r\n{}`)
    const turnText = await client.until((text) => statuses(text).length === 2 && text.includes('"turnID"'))
    expect(statuses(turnText)).toEqual([200, 200])
    const turnID = /"turnID":"([^"]+)"/.exec(turnText)![1]!

    // A call with a chunked body (with a chunk extension; Bun refuses trailers), quiet for longer than the deadline.
    const body = JSON.stringify({ sessionID: "s", assistantMessageID: "m", toolCallID: "call_gate", name: "gate", input: {} })
    const half = Math.floor(body.length / 2)
    const chunk = (text: string) => `${text.length.toString(16)};ext=1\r\n${text}\r\n`
    client.socket.write(`POST /v1/turns/${turnID}/calls HTTP/1.1\r\n${auth}Transfer-Encoding: chunked\r\n\r\n`)
    client.socket.write(chunk(body.slice(0, half)))
    client.socket.write(`${chunk(body.slice(half))}0\r\n\r\n`)
    await deadlinePassed(server.port, server.host)
    expect({ closed: client.closed(), received: client.received() }).toEqual({ closed: false, received: turnText })
    writeFileSync(join(server.box.location, "gate"), "")
    const called = await client.until((text) => text.includes('"opened"'))
    expect(statuses(called)).toEqual([200, 200, 200])

    // And the connection goes on: a request with a Content-Length body after it.
    client.socket.write(`POST /v1/turns HTTP/1.1\r\n${auth}Content-Length: 2\r\n\r\n{}`)
    expect(statuses(await client.until((text) => statuses(text).length === 4))).toEqual([200, 200, 200, 200])
    expect(client.closed()).toBe(false)
    client.socket.destroy()
  }, 60_000)

  test("a connection that never passes the token is closed at its deadline, however many answered requests it sends", async () => {
    const server = await listen()
    const anonymous = raw(server.port)
    const trusted = raw(server.port)
    const health = `GET /v1/health HTTP/1.1\r\nHost: ${server.host}\r\n\r\n`
    // One request with the token: released, its connection's deadline starts again with each request after it.
    trusted.socket.write(`GET /v1/permissions HTTP/1.1\r\nHost: ${server.host}\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`)
    await trusted.until((text) => statuses(text).length === 1)
    const started = performance.now()
    // Health, answered without the token, asked again and again well within each deadline.
    for (let round = 1; !anonymous.closed() && performance.now() - started < DEADLINE_S * 3_000; round++) {
      anonymous.socket.write(health)
      trusted.socket.write(health)
      await anonymous.until((text) => statuses(text).length === round)
      await Bun.sleep((DEADLINE_S * 1_000) / 4)
    }
    expect(anonymous.closed()).toBe(true)
    expect(performance.now() - started).toBeLessThan(DEADLINE_S * 2_000)
    expect(statuses(anonymous.received()).every((status) => status === 200)).toBe(true)
    expect(trusted.closed()).toBe(false)
    trusted.socket.destroy()
  }, 60_000)

  test("a client's own X-Core-Connection is dropped: naming another connection releases neither that one nor breaks its own", async () => {
    const server = await listen()
    // The server's first connection (the guard numbers them from 1): half a header, no token.
    const victim = raw(server.port)
    await new Promise((resolve) => victim.socket.once("connect", resolve))
    victim.socket.write(`GET /v1/health HTTP/1.1\r\nHost: ${server.host}\r\n`)
    // A token holder's request naming it.
    const forger = raw(server.port)
    forger.socket.write(
      `POST /v1/turns HTTP/1.1\r\nHost: ${server.host}\r\nAuthorization: Bearer ${TOKEN}\r\nx-core-CONNECTION: 1\r\nContent-Length: 2\r\n\r\n{}`,
    )
    expect(statuses(await forger.until((text) => statuses(text).length === 1))).toEqual([200])
    // The victim was not released: the deadline closes it. The forger's own request was: it is still open.
    await victim.until(() => false)
    expect(victim.closed()).toBe(true)
    await deadlinePassed(server.port, server.host)
    expect(forger.closed()).toBe(false)
    forger.socket.destroy()
  }, 60_000)

  test("a burst of new connections, more than the server's unix socket has room to queue, is answered whole", async () => {
    // Bun.serve's listener queues 512 connections it has not accepted yet; the guard connects to it as each
    // connection's first request arrives, so a burst of requests on new connections passes that at once.
    const BURST = 1_200
    const server = await listen(undefined, 30)
    const clients = Array.from({ length: BURST }, () => raw(server.port))
    // Every connection open first, then every request at once.
    await Promise.all(clients.map((client) => new Promise((resolve) => client.socket.once("connect", resolve))))
    for (const client of clients) client.socket.write(`GET /v1/health HTTP/1.1\r\nHost: ${server.host}\r\n\r\n`)
    const answered = await Promise.all(clients.map((client) => client.until((text) => statuses(text).length === 1)))
    for (const client of clients) client.socket.destroy()
    expect(answered.filter((text) => statuses(text)[0] === 200).length).toBe(BURST)
    expect(server.log.filter((line) => line.includes("cannot reach"))).toEqual([])
  }, 60_000)

  test("a server that stays unreachable: the connection is tried for a while, then closed, said once on stderr", async () => {
    const box = sandbox({})
    const log: Array<string> = []
    const guard = Guard.listen({
      hostname: "127.0.0.1",
      port: 0,
      backend: join(box.data, "nobody-listens.sock"),
      deadlineMs: 30_000,
      maxDescriptors: 1_000,
      log: (line) => log.push(line),
    })
    try {
      const client = raw(guard.port)
      const started = performance.now()
      client.socket.write(`GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:${guard.port}\r\n\r\n`)
      await client.until(() => false)
      const waited = performance.now() - started
      expect({ received: client.received(), cannotReach: log.filter((line) => line.includes("cannot reach")).length }).toEqual({
        received: "",
        cannotReach: 1,
      })
      // Tried again for about 5 s, and never for the read deadline's 30 s.
      expect(waited).toBeGreaterThan(4_000)
      expect(waited).toBeLessThan(20_000)
      expect(guard.descriptors()).toBe(0)
    } finally {
      await guard.close(0)
    }
  }, 60_000)

  test("a request head longer than Bun's header limit is passed on and refused by Bun (431), as without the guard", async () => {
    const server = await listen()
    const client = raw(server.port)
    client.socket.write(`GET /v1/health HTTP/1.1\r\nHost: ${server.host}\r\nX-Long: ${"a".repeat(20 * 1024)}\r\n\r\n`)
    expect(statuses(await client.until((text) => statuses(text).length === 1))[0]).toBe(431)
  }, 60_000)

  test("the server's unix socket is in a 0700 directory of the data directory, removed at stop (and at start, one a killed core of this machine left)", async () => {
    // A pid no process has (above the kernel's pid_max of 2^22).
    const left = `serve-9999999-${ProcessDirs.machine()}abcdef`
    // Another host's serve sharing the data directory (its pid means nothing here), and a name core did not make.
    const elsewhere = `serve-9999999-${ProcessDirs.machine() === "00000000" ? "11111111" : "00000000"}abcdef`
    const foreign = "serve-9999999-abcdef"
    const server = await listen((data) => [left, elsewhere, foreign].forEach((name) => mkdirSync(join(data, name), { recursive: true })))
    const directories = readdirSync(server.box.data).filter((name) => name.startsWith("serve-") && name !== elsewhere && name !== foreign)
    expect(directories).toHaveLength(1)
    expect(directories[0]).toStartWith(`serve-${process.pid}-${ProcessDirs.machine()}`)
    const directory = join(server.box.data, directories[0]!)
    expect(statSync(directory).mode & 0o777).toBe(0o700)
    expect(statSync(join(directory, "http.sock")).isSocket()).toBe(true)
    expect(existsSync(join(server.box.data, elsewhere))).toBe(true)
    expect(existsSync(join(server.box.data, foreign))).toBe(true)
    await server.stop()
    expect(existsSync(directory)).toBe(false)
  }, 60_000)
})
