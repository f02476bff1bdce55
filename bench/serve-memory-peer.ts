// A reference point for bench/serve.ts, not a configuration core ships: `core serve`'s server (Server.run: the
// connection guard in front of Bun.serve, the router, the token and Host checks, a line per settled call on stderr
// at the default log level) with the in-memory settlement store instead of the durable one, in a process of its own,
// run from source. The difference from `core serve` is what durable recording (law 12) costs over HTTP, and what
// the compiled binary changes. Prints one JSON line `{ "url", "token" }` once listening.

import { Effect } from "effect"
import { Runtime } from "../src/cli/runtime"
import { Host } from "../src/host/host"
import { Security } from "../src/server/security"
import { Server } from "../src/server/server"
import { Store } from "../src/store/store"

const [location = "."] = process.argv.slice(2)
const environment = Host.environment()
const token = Security.generateToken()
const stderr = (line: string) => void process.stderr.write(`${line}\n`)
await Effect.runPromise(
  Effect.gen(function* () {
    const primary = yield* Runtime.prepare("serve", environment, location)
    yield* Server.run({
      environment,
      primary,
      roots: [primary.directory],
      host: "127.0.0.1",
      port: 0,
      token,
      stop: Effect.never,
      log: stderr,
      activity: { level: "info", write: stderr },
      store: Store.layerMemory,
      onReady: (ready) => process.stdout.write(`${JSON.stringify({ url: ready.url, token: ready.token })}\n`),
    })
  }).pipe(Effect.scoped),
)
