export * as ServeCommand from "./serve-command"

// `core serve`: the HTTP sidecar (DESIGN §8). Parses flags, checks the Location and the allowed roots, prints the
// ready line on stdout once listening, and turns SIGINT/SIGTERM into a graceful shutdown that exits 0 (a second
// signal exits at once). Everything but the ready line goes to stderr.

import { realpathSync, statSync } from "node:fs"
import { resolve } from "node:path"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import packageJson from "../../package.json" with { type: "json" }
import { Activity } from "../host/activity"
import { McpHttp } from "../mcp-server/mcp-http"
import { Security } from "../server/security"
import { Server } from "../server/server"
import { ProcessGroup } from "../shell/process-group"
import { Shell } from "../shell/shell"
import { Command } from "./command"
import { Runtime } from "./runtime"
import { Host } from "../host/host"

export const HELP = `Usage: core serve [--location DIR] [--allow-root DIR]... [--host 127.0.0.1] [--port N] [--log-level L]

Serve tool calls over HTTP to agent hosts. Once listening, prints one JSON line on stdout:
  {"url":"http://127.0.0.1:PORT","token":"..."}
Every route but GET /v1/health needs the header Authorization: Bearer <token>.
Routes and their schemas: GET /v1/openapi.json. MCP clients connect to /mcp (streamable
HTTP, the same token; ?agent=ID picks the agent). A connection must deliver each request's
headers and body within 10 s; an authorized request is then given all the time it needs.

Options:
  --location DIR     the Location requests act on (default: the current directory)
  --allow-root DIR   a directory under which requests may name other Locations with the header
                     X-Core-Location (repeatable; the --location is always allowed)
  --host HOST        the address to listen on (default: 127.0.0.1; any other address is reachable
                     from other machines)
  --port N           the port to listen on (default: 0, a free port)
  --log-level L      what goes to stderr: error, warn, info (default: also one line per settled
                     call, ask and reply: core: call tool=... call=... status=... duration_ms=...)
                     or debug (also each call's input and each ask's resources: may hold secrets)
  -h, --help         show this help

Environment:
  CORE_TOKEN      the bearer token: visible ASCII without spaces (default: a fresh random
                  token each start)
  CORE_DATA_DIR   managed outputs and the settlement store (default ~/.local/share/core)
  CORE_STORE_URL  postgres://… : settlements and saved approvals in a Postgres shared by a
                  fleet (docs/fleet.md); add ?pgbouncer=true behind pgbouncer
  CORE_OUTPUTS_URL
                  s3://bucket/prefix : managed outputs in an S3-compatible store too, read on
                  every host sharing it (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, ...)
  CORE_LEASE_MS   how long a running call's lease lasts unless renewed (default 5000)
  CORE_USER       who saved approvals are recorded as approved by (default user@host)
  CORE_HOME       application tools and core.json (default ~/.config/core)
  OTEL_EXPORTER_OTLP_ENDPOINT
                  export OpenTelemetry traces over OTLP/HTTP: a span per request and per call
                  (see docs/operating.md)

Tool files (tools/*.ts), plugins (plugins/*.ts) and core.json of each served Location and of
CORE_HOME are watched and reloaded on change; a Location's plugins are closed when it is let go. SIGINT, SIGTERM or SIGHUP shuts down gracefully: running calls are cancelled (their
processes killed) and recorded, and core exits 0. A second signal exits at once (130), after
killing every process core started.
`

/**
 * For a person who started the server by hand: how to call it. The token stays on stdout only (stderr often ends
 * up in a host's logs), so the commands read it from a shell variable.
 */
const howToCall = (directory: string, url: string) => {
  const auth = `-H "Authorization: Bearer $TOKEN"`
  const call = JSON.stringify({
    sessionID: "ses_1",
    assistantMessageID: "msg_1",
    toolCallID: "call_1",
    name: "list",
    input: {},
  })
  return `core: serving ${directory} at ${url} (Ctrl-C stops)
core: try it, with TOKEN set to the token in the JSON line above:
  curl -s ${url}/v1/health
  curl -s ${auth} -X POST ${url}/v1/turns -d '{}'          # the tools, and a turnID
  curl -s ${auth} -X POST ${url}/v1/turns/TURN_ID/calls -d '${call}'
core: every route and schema: GET ${url}/v1/openapi.json (see docs/serve.md)
`
}

const OPTIONS = {
  location: { type: "string" },
  host: { type: "string" },
  port: { type: "string" },
  "log-level": { type: "string" },
} as const

const usage = (message: string) => new Command.UsageError({ command: "serve", message })

/** `--allow-root` may repeat, which Command.parse does not do: its values are taken out first. */
const takeRoots = (args: ReadonlyArray<string>) => {
  const roots: Array<string> = []
  const rest: Array<string> = []
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!
    if (arg === "--") {
      rest.push(...args.slice(index))
      break
    }
    if (arg.startsWith("--allow-root=")) roots.push(arg.slice("--allow-root=".length))
    else if (arg !== "--allow-root") rest.push(arg)
    else if (index + 1 < args.length) roots.push(args[++index]!)
    else return Effect.fail(usage("--allow-root needs a value"))
  }
  // An empty root (a script's unset variable) would be the current directory, the whole file system from /.
  if (roots.some((root) => root.trim() === "")) return Effect.fail(usage("--allow-root cannot be empty: give a directory"))
  return Effect.succeed({ roots, rest })
}

const realDirectory = (flag: string, path: string) =>
  Effect.suspend(() => {
    try {
      if (statSync(path).isDirectory()) return Effect.succeed(realpathSync(path))
      return Effect.fail(usage(`${flag} ${path} is not a directory`))
    } catch {
      return Effect.fail(usage(`${flag} ${path} does not exist`))
    }
  })

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { roots: rootFlags, rest } = yield* takeRoots(args)
    const { values, positionals } = yield* Command.parse("serve", rest, OPTIONS)
    if (values.help) {
      Command.stdout(HELP)
      return Command.EXIT.ok
    }
    if (positionals.length > 0) return yield* usage(`unexpected argument "${positionals[0]}"`)
    const port = values.port === undefined ? 0 : Number(values.port)
    if (!/^\d+$/.test(values.port ?? "0") || port > 65535) return yield* usage(`--port must be 0-65535, not "${values.port}"`)
    const level = values["log-level"] ?? "info"
    if (!Activity.isLevel(level)) return yield* usage(`--log-level must be one of ${Activity.LEVELS.join(", ")}, not "${level}"`)
    const host = values.host ?? "127.0.0.1"
    if (host.trim() === "") return yield* usage("--host cannot be empty")

    const environment = Host.environment()
    const primary = yield* Runtime.prepare("serve", environment, values.location)
    const roots = [primary.directory]
    for (const root of rootFlags) roots.push(yield* realDirectory("--allow-root", resolve(root)))
    const given = process.env.CORE_TOKEN
    // Set but empty counts as set: a host that meant to choose the token must not get a random one silently.
    if (given !== undefined) {
      const problem = Security.tokenProblem(given)
      if (problem !== undefined) return yield* usage(problem)
    }
    const token = given ?? Security.generateToken()

    const stop = yield* Deferred.make<void>()
    let signalled = false
    const onSignal = () => {
      if (signalled) {
        // A second signal does not wait for the graceful path, but no process outlives core either.
        ProcessGroup.killAllNow()
        Command.exit(Command.EXIT.cancelled)
      }
      signalled = true
      Deferred.doneUnsafe(stop, Effect.void)
    }
    // SIGHUP too (its terminal or session gone): it killed the sidecar at once, a change being made left half done.
    process.on("SIGINT", onSignal).on("SIGTERM", onSignal).on("SIGHUP", onSignal)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        process.off("SIGINT", onSignal).off("SIGTERM", onSignal).off("SIGHUP", onSignal)
      }),
    )

    const sandbox = Shell.sandboxOf(primary.config.shell.sandbox).notice
    if (sandbox !== undefined) Command.stderr(`core: ${sandbox}\n`)
    const guard = Shell.guardNotice(primary.config.shell.sandbox)
    if (guard !== undefined) Command.stderr(`core: ${guard}\n`)
    const processes = Shell.processesNotice(primary.config.shell.sandbox)
    if (processes !== undefined) Command.stderr(`core: ${processes}\n`)
    yield* Server.run({
      environment,
      primary,
      roots,
      host,
      port,
      token,
      stop: Deferred.await(stop),
      log: (line) => {
        if (level !== "error" || !line.startsWith("core: warning")) Command.stderr(`${line}\n`)
      },
      activity: { level, write: (line) => Command.stderr(`${line}\n`) },
      mcp: (sidecar) =>
        McpHttp.make({ sidecar, version: packageJson.version, log: (line) => Command.stderr(`${line}\n`) }),
      onReady: (ready) => {
        Command.stdout(`${JSON.stringify(ready)}\n`)
        Command.stderr(howToCall(primary.directory, ready.url))
      },
    }).pipe(Effect.mapError((error) => new Command.Exit({ code: Command.EXIT.operational, message: error.message })))
    return Command.EXIT.ok
  }).pipe(Effect.scoped)
