// The sidecar against a hostile local process without the token: Bun.serve in process on a loopback port, real
// sockets. Connections that send nothing, half a header or a trickling body are held by thousands; /v1/health still
// answers, the read deadline closes every one of them, and the host's own quiet call and event stream (released
// from the deadline once they passed the checks) outlive it. Every wait is on a socket or stream event. And what the
// server keeps on disk is the user's alone.

import { afterAll, describe, expect, test } from "bun:test"
import { chmodSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { connect } from "node:net"
import { join } from "node:path"
import { Deferred, Effect, Fiber } from "effect"
import { Runtime } from "../../src/cli/runtime"
import { Server } from "../../src/server/server"
import { Supervised } from "../../src/shell/supervised"
import { Latch } from "../support/latch"
import { gateTool } from "../support/tools"
import { callBody, client, EventReader, IMPORTS, inProcess, runs, sandbox } from "./support"

/** Held connections, a third of each kind. */
const HELD = 5_000
/** A short read deadline, so the test sees it pass (Bun closes within this plus its 4-second timer step). */
const DEADLINE_S = 2
const TOKEN = "edge-token"

/** Waits at `latch`, without reporting progress: quiet for as long as that takes. */
const GATE = (latch: Latch.Interface) => gateTool(latch, { record: "gate" })

const stops: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const stop of stops.splice(0)) await stop()
})

/** `core serve`'s server in process on a free loopback port, with a short read deadline. */
const listen = async (files: Record<string, string>) => {
  const box = sandbox(files)
  const environment = { dataDir: box.data, home: box.home }
  const stop = Deferred.makeUnsafe<void>()
  const log: Array<string> = []
  let onReady!: (ready: Server.Ready) => void
  const ready = new Promise<Server.Ready>((resolve) => (onReady = resolve))
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
        readDeadlineS: DEADLINE_S,
      })
    }).pipe(Effect.scoped),
  )
  const { url } = await Promise.race([
    ready,
    Effect.runPromise(Fiber.join(fiber)).then(() => {
      throw new Error(`the server stopped before it was ready:\n${log.join("\n")}`)
    }),
  ])
  stops.push(async () => {
    Deferred.doneUnsafe(stop, Effect.void)
    await Effect.runPromise(Fiber.await(fiber))
  })
  const host = new URL(url).host
  return { box, url, log, port: Number(new URL(url).port), host, ...client((request) => fetch(request), url, host, TOKEN) }
}

/** Starts the hostile process (./hold-connections.ts) against the server; yields each JSON line it prints. */
const holdConnections = (port: number, host: string, count: number) => {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "hold-connections.ts"), String(port), host, String(count)], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
  })
  stops.push(async () => {
    child.kill("SIGKILL")
    await child.exited
  })
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  return {
    pid: child.pid,
    next: async (): Promise<Record<string, number>> => {
      while (!buffer.includes("\n")) {
        const chunk = await reader.read()
        if (chunk.done) throw new Error(`the connection holder exited (${await child.exited}) with: ${buffer}`)
        buffer += decoder.decode(chunk.value, { stream: true })
      }
      const line = buffer.slice(0, buffer.indexOf("\n"))
      buffer = buffer.slice(line.length + 1)
      return JSON.parse(line)
    },
  }
}

describe("connections held without the token", () => {
  test(`${HELD} held connections (silent, half a header, a trickling body): health answers, the deadline closes them all, the host's quiet call and stream live on`, async () => {
    if (Supervised.openFileLimit()! < HELD + 1_000) {
      throw new Error(`this test needs an open-file limit of ${HELD + 1_000} (ulimit -n); it is ${Supervised.openFileLimit()!}`)
    }
    await using latch = Latch.open()
    const server = await listen({ "tools/gate.ts": GATE(latch) })
    expect(server.log.some((line) => line.includes("open-file limit"))).toBe(false)

    // The host's own requests, begun before the flood: an event stream and a call that stays quiet until the gate.
    const events = await server.events()
    const { turnID } = await server.turn()
    const call = server.json("POST", `/v1/turns/${turnID}/calls`, { body: callBody({ name: "gate", input: {}, toolCallID: "call_quiet" }) })
    expect((await events.until("call.started")).data.toolCallID).toBe("call_quiet")
    await latch.entered()

    const holder = holdConnections(server.port, server.host, HELD)
    expect(await holder.next()).toEqual({ connected: HELD, failed: 0 })

    const health = await fetch(`${server.url}/v1/health`, { signal: AbortSignal.timeout(1_000) })
    expect(health.status).toBe(200)
    // Clients are told how long an idle connection lasts, so they stop reusing it before the deadline closes it.
    expect(health.headers.get("keep-alive")).toBe(`timeout=${Server.READ_DEADLINE_S}`)
    expect(((await health.json()) as any).ok).toBe(true)

    // The deadline closes every held connection, trickling or not.
    expect(await holder.next()).toEqual({ closed: HELD, failed: 0 })

    // Past the deadline, the quiet call and the quiet stream are still there.
    expect(runs(server.box, "gate")).toBe(1)
    latch.release()
    const answer = await call
    expect(answer.status).toBe(200)
    expect(answer.body.structured).toBe("opened")
    expect((await events.until("call.settled")).data.toolCallID).toBe("call_quiet")
    await events.close()
  }, 120_000)

  test("a request that never finishes its body is cut at the deadline, and one with the token is read in full", async () => {
    const server = await listen({})
    // With the token, but a body that never completes: it is not released before its body is in.
    const socket = connect(server.port, "127.0.0.1")
    const closed = new Promise<string>((resolve) => {
      let answered = ""
      socket.on("data", (chunk) => (answered += chunk.toString()))
      socket.on("close", () => resolve(answered))
    })
    socket.once("connect", () =>
      socket.write(
        `POST /v1/turns HTTP/1.1\r\nHost: ${server.host}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: 50\r\n\r\n{`,
      ),
    )
    expect(await closed).not.toContain("200 OK")
    // The same request sent whole is answered.
    expect((await server.json("POST", "/v1/turns", { body: {} })).status).toBe(200)
    const reader = new EventReader(await server.fetch("GET", "/v1/events"))
    await reader.connected()
    await reader.close()
  }, 60_000)
})

describe("the data directory", () => {
  test("is created 0700, and the store (with its -wal and -shm) and managed outputs are 0600", async () => {
    const BIG = `${IMPORTS}
export default Tool.make({
  description: "Print many lines",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed(Array.from({ length: 50 }, (_, i) => "line " + i).join("\\n")),
})
`
    const sidecar = await inProcess(
      { "tools/big.ts": BIG, "core.json": '{ "output": { "maxLines": 10 } }' },
      // Gone before the sidecar starts: it creates the data directory itself.
      { before: (box) => rmSync(box.data, { recursive: true, force: true }) },
    )
    const { turnID } = await sidecar.turn()
    const settled = await sidecar.settle(turnID, { name: "big", input: {} })
    expect(settled.body.outputs).toHaveLength(1)
    const mode = (path: string) => statSync(path).mode & 0o777
    const data = sidecar.box.data
    expect(mode(data)).toBe(0o700)
    for (const file of ["core.db", "core.db-wal", "core.db-shm", "core.db.journal", "core.db.journal-shm"]) expect({ file, mode: mode(join(data, file)) }).toEqual({ file, mode: 0o600 })
    expect(mode(join(data, "outputs"))).toBe(0o700)
    // Each Location's and session's directory of outputs is 0700, and each output in them 0600.
    const entries = readdirSync(join(data, "outputs"), { recursive: true }).map(String).filter((name) => !name.startsWith("."))
    expect(entries.filter((name) => name.includes("/out_")).length).toBeGreaterThan(0)
    for (const name of entries) {
      const path = join(data, "outputs", name)
      expect({ name, mode: mode(path) }).toEqual({ name, mode: statSync(path).isDirectory() ? 0o700 : 0o600 })
    }
  })
})

describe("an existing data directory", () => {
  test("left open to others (0755) by an older core is made 0700 at start, so nothing in it can be reached", async () => {
    const sidecar = await inProcess(
      {},
      {
        before: (box) => {
          mkdirSync(join(box.data, "outputs"), { recursive: true })
          chmodSync(box.data, 0o755)
          writeFileSync(join(box.data, "outputs", "out_old"), "kept before\n", { mode: 0o644 })
        },
      },
    )
    await sidecar.turn()
    expect(statSync(sidecar.box.data).mode & 0o777).toBe(0o700)
  })

  test("a shared sticky directory such as the system temp dir is left as it is", async () => {
    const sidecar = await inProcess({}, { before: (box) => chmodSync(box.data, 0o1777) })
    await sidecar.turn()
    expect(statSync(sidecar.box.data).mode & 0o7777).toBe(0o1777)
  })
})

describe("the open-file limit", () => {
  test("core serve warns at start when it is low", async () => {
    const box = sandbox({})
    const main = join(import.meta.dir, "../../src/cli/main.ts")
    const child = Bun.spawn(["sh", "-c", 'ulimit -n 1024 && exec "$@"', "sh", process.execPath, main, "serve", "--location", box.location], {
      env: { ...process.env, ...box.env },
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
    })
    stops.push(async () => {
      child.kill("SIGKILL")
      await child.exited
    })
    let stderr = ""
    const decoder = new TextDecoder()
    for await (const chunk of child.stderr) {
      stderr += decoder.decode(chunk, { stream: true })
      if (stderr.includes("open-file limit")) break
    }
    expect(stderr).toContain("the open-file limit is 1024 (ulimit -n)")
    expect(stderr).toContain(`at least ${Server.MIN_OPEN_FILES}`)
    child.kill("SIGTERM")
    expect(await child.exited).toBe(0)
  }, 60_000)
})
