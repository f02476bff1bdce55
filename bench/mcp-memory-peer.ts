// A reference point for bench/mcp.ts, not a configuration core ships: core's MCP server exactly as `core mcp`
// (argument `stdio`) or `core serve`'s `/mcp` (argument `http`) compose it, run from source with the in-memory
// settlement store instead of the durable one. The difference from the compiled binary's figures is what durable
// recording (law 12) costs. Usage: `bun bench/mcp-memory-peer.ts stdio|http LOCATION`; in `http` mode it prints
// one JSON line `{ "url", "token" }` once listening.

import { Effect, Scope } from "effect"
import { Runtime } from "../src/cli/runtime"
import { Host } from "../src/host/host"
import { Sidecar } from "../src/host/sidecar"
import { Mcp } from "../src/mcp-server/mcp"
import { McpHttp } from "../src/mcp-server/mcp-http"
import { McpStdio } from "../src/mcp-server/mcp-stdio"
import { Router } from "../src/server/router"
import { Security } from "../src/server/security"
import { Store } from "../src/store/store"

const [mode = "stdio", location = "."] = process.argv.slice(2)
const environment = Host.environment()
const scope = Effect.runSync(Scope.make())
const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(effect.pipe(Scope.provide(scope)))
const sidecar = await run(
  Effect.gen(function* () {
    const primary = yield* Runtime.prepare("mcp", environment, location)
    return yield* Sidecar.make({ environment, primary, watch: false, log: () => {}, store: Store.layerMemory })
  }),
)

if (mode === "stdio") {
  const session = await run(
    Mcp.session(
      { served: sidecar.primary, calls: sidecar.calls, outputs: sidecar.outputs },
      { agent: "build", sessionID: "ses_bench", name: "core", version: "bench", note: () => {} },
    ),
  )
  // core's stdio transport, connected as `core mcp` connects it (a plain call answered by the session itself).
  await session.connect(new McpStdio.Transport(process.stdin, process.stdout))
} else {
  const token = Security.generateToken()
  const mcp = await run(McpHttp.make({ sidecar, version: "bench", log: () => {} }))
  let checkHost: (host: string | undefined) => boolean = () => false
  const web = Router.make({
    sidecar,
    mcp,
    version: "bench",
    checkToken: Security.tokenChecker(token),
    checkHost: (host) => checkHost(host),
    roots: [sidecar.primary.directory],
    log: () => {},
  })
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: web.handler })
  checkHost = Security.hostChecker("127.0.0.1", server.port!)
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${server.port}`, token })}\n`)
}
