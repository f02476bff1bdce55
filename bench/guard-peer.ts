// A peer for bench/guard.ts: a small HTTP server in a process of its own, either Bun.serve on a loopback port
// ("direct"), Bun.serve on a unix socket behind the connection guard of `core serve` ("guard"), or the same behind a
// bare relay ("relay": Bun.listen passing each connection's bytes to the unix socket and back as they come, with
// backpressure, and nothing else: no framing, deadline or limit), which shows what the extra hop costs on its own.
// It answers GET /small (a short JSON body), GET /big (BIG_BYTES) and POST /echo (the body back), each released
// from the guard's read deadline as core serve releases a request with its token, and prints one
// JSON line with its URL once ready. The unix socket is made in DIRECTORY (which the caller removes once done: the
// peer is killed), else in a temporary directory of its own.
//
//   bun bench/guard-peer.ts direct|guard|relay [DIRECTORY]

import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Guard } from "../src/server/guard"

export const BIG_BYTES = 10_000_000
const big = new Uint8Array(BIG_BYTES).fill(120)

/** Lets the guard know a request passed the checks, as core serve's router does for every request with its token. */
let release: (request: Request) => void = () => {}

const fetch = async (request: Request) => {
  release(request)
  const path = new URL(request.url).pathname
  if (path === "/small") return Response.json({ ok: true, version: "0.0.0" })
  if (path === "/big") return new Response(big)
  if (path === "/echo") return new Response(await request.text(), { headers: { "content-type": "application/json" } })
  return new Response("not found", { status: 404 })
}

interface Relayed {
  readonly client: Bun.Socket<Relayed>
  server: Bun.Socket<Relayed> | undefined
  /** What waits for a socket to take it. */
  readonly toServer: Array<Uint8Array>
  readonly toClient: Array<Uint8Array>
}

/** Writes `bytes` after what waits for `to`; what it does not take waits, and `from` pauses until it drains. */
const relay = (to: Bun.Socket<Relayed>, waiting: Array<Uint8Array>, bytes: Uint8Array, from: Bun.Socket<Relayed>) => {
  if (waiting.length > 0) {
    waiting.push(bytes)
    return
  }
  const written = to.write(bytes)
  if (written < bytes.length) {
    waiting.push(bytes.subarray(Math.max(written, 0)))
    from.pause()
  }
}

/** Writes what waits for `to`; once it has all gone, `from` reads again. */
const drain = (to: Bun.Socket<Relayed>, waiting: Array<Uint8Array>, from: Bun.Socket<Relayed> | undefined) => {
  while (waiting.length > 0) {
    const bytes = waiting[0]!
    const written = to.write(bytes)
    if (written < bytes.length) {
      waiting[0] = bytes.subarray(Math.max(written, 0))
      return
    }
    waiting.shift()
  }
  from?.resume()
}

/** The bare relay: each connection gets its unix socket as it opens. */
const listenRelay = (socket: string) =>
  Bun.listen<Relayed>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open: (client) => {
        const relayed: Relayed = { client, server: undefined, toServer: [], toClient: [] }
        client.data = relayed
        void Bun.connect<Relayed>({
          unix: socket,
          data: relayed,
          socket: {
            open: (server) => {
              relayed.server = server
              drain(server, relayed.toServer, undefined)
            },
            data: (server, data) => relay(client, relayed.toClient, data, server),
            drain: (server) => drain(server, relayed.toServer, client),
            close: () => {
              client.end()
            },
          },
        })
      },
      data: (client, data) => {
        const relayed = client.data
        if (relayed.server === undefined) relayed.toServer.push(data)
        else relay(relayed.server, relayed.toServer, data, client)
      },
      drain: (client) => {
        const relayed = client.data
        if (relayed.server !== undefined) drain(client, relayed.toClient, relayed.server)
      },
      close: (client) => {
        client.data.server?.end()
      },
    },
  })

// Only when run as the peer: bench/guard.ts imports BIG_BYTES, and a server started on import would keep it running.
if (import.meta.main) {
  const socketIn = () => join(process.argv[3] ?? mkdtempSync(join(tmpdir(), "core-bench-guard-")), "http.sock")
  if (process.argv[2] === "relay") {
    const socket = socketIn()
    Bun.serve({ unix: socket, fetch, ...({ idleTimeout: 0 } as object) })
    console.log(JSON.stringify({ url: `http://127.0.0.1:${listenRelay(socket).port}` }))
  } else if (process.argv[2] === "guard") {
    const socket = socketIn()
    Bun.serve({ unix: socket, fetch, ...({ idleTimeout: 0 } as object) })
    const guard = Guard.listen({
      hostname: "127.0.0.1",
      port: 0,
      backend: socket,
      deadlineMs: 10_000,
      maxDescriptors: 10_000,
      log: (line) => process.stderr.write(`${line}\n`),
    })
    release = guard.release
    console.log(JSON.stringify({ url: `http://127.0.0.1:${guard.port}` }))
  } else {
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch })
    console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}` }))
  }
}
