// A reference point for bench/serve.ts, not a configuration core ships: the same sidecar (Sidecar, Router, Bun.serve,
// as `core serve` composes them) with the in-memory settlement store instead of the durable one, in a process of
// its own, run from source. The difference from `core serve` is what durable recording (law 12) costs over HTTP.
// Prints one JSON line `{ "url", "token" }` once listening.

import { Effect, Scope } from "effect"
import { Runtime } from "../src/cli/runtime"
import { Host } from "../src/host/host"
import { Router } from "../src/server/router"
import { Security } from "../src/server/security"
import { Sidecar } from "../src/host/sidecar"
import { Store } from "../src/store/store"

const [location = "."] = process.argv.slice(2)
const environment = Host.environment()
const token = Security.generateToken()
const sidecar = await Effect.runPromise(
  Effect.gen(function* () {
    const primary = yield* Runtime.prepare("serve", environment, location)
    return yield* Sidecar.make({ environment, primary, watch: false, log: () => {}, store: Store.layerMemory })
  }).pipe(Scope.provide(Effect.runSync(Scope.make()))),
)
let checkHost: (host: string | undefined) => boolean = () => false
const web = Router.make({
  sidecar,
  version: "bench",
  checkToken: Security.tokenChecker(token),
  checkHost: (host) => checkHost(host),
  roots: [sidecar.primary.directory],
  log: () => {},
})
const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: web.handler })
checkHost = Security.hostChecker("127.0.0.1", server.port!)
process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${server.port}`, token })}\n`)
