// A peer for bench/guard.ts: a small HTTP server in a process of its own, either Bun.serve on a loopback port
// ("direct") or Bun.serve on a unix socket behind the connection guard of `core serve` ("guard"). It answers
// GET /small (a short JSON body), GET /big (BIG_BYTES) and POST /echo (the body back), and prints one JSON line
// with its URL once ready.
//
//   bun bench/guard-peer.ts direct|guard

import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Guard } from "../src/server/guard"

export const BIG_BYTES = 10_000_000
const big = new Uint8Array(BIG_BYTES).fill(120)

const fetch = async (request: Request) => {
  const path = new URL(request.url).pathname
  if (path === "/small") return Response.json({ ok: true, version: "0.0.0" })
  if (path === "/big") return new Response(big)
  if (path === "/echo") return new Response(await request.text(), { headers: { "content-type": "application/json" } })
  return new Response("not found", { status: 404 })
}

// Only when run as the peer: bench/guard.ts imports BIG_BYTES, and a server started on import would keep it running.
if (import.meta.main) {
  if (process.argv[2] === "guard") {
    const socket = join(mkdtempSync(join(tmpdir(), "guard-bench-")), "http.sock")
    Bun.serve({ unix: socket, fetch, ...({ idleTimeout: 0 } as object) })
    const guard = Guard.listen({
      hostname: "127.0.0.1",
      port: 0,
      backend: socket,
      deadlineMs: 10_000,
      maxDescriptors: 10_000,
      log: (line) => process.stderr.write(`${line}\n`),
    })
    console.log(JSON.stringify({ url: `http://127.0.0.1:${guard.port}` }))
  } else {
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch })
    console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}` }))
  }
}
