export * as McpCommand from "./mcp-command"

// `core mcp`: serves one Location's tools to an MCP client over stdio. stdout carries JSON-RPC only; warnings and
// notes about declined asks go to stderr. It runs until the client closes stdin (or SIGINT/SIGTERM).

import { RootsListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import packageJson from "../../package.json" with { type: "json" }
import { Host } from "../host/host"
import { Sidecar } from "../host/sidecar"
import { Mcp } from "../mcp-server/mcp"
import { McpRoots } from "../mcp-server/mcp-roots"
import { McpStdio } from "../mcp-server/mcp-stdio"
import { Agent } from "../permission/agent"
import { Command } from "./command"
import { Runtime } from "./runtime"

export const HELP = `Usage: core mcp [--location DIR] [--agent ID]
       core mcp list [--location DIR] [--json]

Serve a Location's tools to an MCP client over stdio (JSON-RPC on stdin and stdout; notes on stderr).
tools/list is the agent's catalog; tools/call settles each call as core exec does: permissions,
bounded output with managed outputs, and at most once per (session, call). A call's _meta may name
"sessionID" and "toolCallID" (else: one session per run, the request id); a recorded pair replays.
A permission ask is put to the client's user (MCP elicitation) when the client can ask; otherwise
it is declined unless core.json allows the call.
A client that can ask its user (elicitation) is also offered the tool question, and one that can
sample (sampling) the tool task: it performs their calls (docs/mcp.md, host tools).

Options:
  --location DIR    the Location (default: the client's first MCP root that is a local directory,
                    else the current directory unless it is / or the home, where core mcp refuses)
  --agent ID        the agent making the calls: its rules filter and authorize them (default: build)
  -h, --help        show this help

Tool files and core.json are watched: a change is reloaded and announced with
notifications/tools/list_changed. A result whose output was bounded links the whole output
as a resource (core://outputs/ID), which resources/read returns.

Without --location, a change of the client's roots (notifications/roots/list_changed) moves the
server to the new first root, announced with notifications/tools/list_changed. A message over
8 MiB on one line is answered with an error and not read; a malformed request is answered with
a JSON-RPC error; the server keeps serving.

Runs until the client closes stdin. The same server over HTTP: /mcp in core serve.
\`core mcp list\` shows the MCP servers core.json connects core to, as a client (see core mcp list
--help).
`

const OPTIONS = {
  location: { type: "string" },
  agent: { type: "string" },
} as const

/**
 * stdout for JSON-RPC alone: what else would write there (a tool's console.log or process.stdout.write, in this
 * process) goes to stderr, and the transport gets the real stdout's own write.
 */
const claimStdout = (): McpStdio.Output => {
  const stdout = process.stdout
  const write = stdout.write.bind(stdout)
  Command.guardConsole()
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write
  return { write: (chunk) => write(chunk), once: (event, listener) => stdout.once(event, listener) }
}

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    if (args[0] !== "list") return yield* serve(args)
    const { McpListCommand } = yield* Effect.promise(() => import("./mcp-list-command"))
    return yield* McpListCommand.run(args.slice(1))
  })

const serve = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Command.parse("mcp", args, OPTIONS)
    if (values.help) {
      Command.stdout(HELP)
      return Command.EXIT.ok
    }
    if (positionals.length > 0) {
      return yield* new Command.UsageError({ command: "mcp", message: `unexpected argument "${positionals[0]}"` })
    }
    if (values.agent !== undefined && values.agent.trim() === "") {
      return yield* new Command.UsageError({ command: "mcp", message: "--agent cannot be empty" })
    }
    const environment = Host.environment()
    const agent = values.agent ?? Agent.DEFAULT_AGENT
    // A Location named on the command line is checked before anything is said on stdout.
    const named = values.location === undefined ? undefined : yield* Runtime.prepare("mcp", environment, values.location)
    return yield* Effect.gen(function* () {
      const scope = yield* Effect.scope
      const run = Effect.runPromiseWith(yield* Effect.context<never>())
      /** The sidecar's floor without HTTP: the Location watched and reloaded, calls run and recorded by the host. */
      const open = (prepared: Host.Prepared) =>
        Effect.gen(function* () {
          const sidecar = yield* Sidecar.make({
            environment,
            primary: prepared,
            watch: true,
            log: (line) => Command.stderr(`${line}\n`),
          })
          // The agent is checked before serving; MCP servers connect when the client first lists or calls.
          yield* sidecar.primary.capture(agent, { connect: false }).pipe(
            Effect.mapError(
              (error) =>
                new Command.UsageError({
                  command: "mcp",
                  message: `unknown agent "${error.agent}"; known agents: ${error.known.join(", ")}`,
                }),
            ),
          )
          return sidecar
        })
      const opened = named === undefined ? undefined : yield* open(named)
      const transport = new McpStdio.Transport(process.stdin, claimStdout())
      const session = yield* Mcp.session(
        opened === undefined ? undefined : { served: opened.primary, calls: opened.calls, outputs: opened.outputs },
        {
          agent,
          sessionID: `ses_mcp_${crypto.randomUUID()}`,
          name: "core",
          version: packageJson.version,
          note: Command.stderr,
          hostTools: true,
        },
      )
      const { server } = session
      const closed = new Promise<"closed">((resolve) => {
        server.onclose = () => resolve("closed")
      })
      const initialized = new Promise<"initialized">((resolve) => {
        server.oninitialized = () => resolve("initialized")
      })
      yield* Effect.promise(() => session.connect(transport))
      if (opened === undefined) {
        // No --location: the client's roots say where, once it has said what it supports.
        if ((yield* Effect.promise(() => Promise.race([initialized, closed]))) === "closed") return Command.EXIT.ok
        const located = yield* Effect.promise(() => McpRoots.locate(server))
        if (located._tag === "Refused") {
          Command.stderr(located.message)
          yield* session.close
          return Command.EXIT.usage
        }
        const sidecar = yield* open(yield* Runtime.prepare("mcp", environment, located.directory))
        // The session (its calls settled and recorded) closes before the sidecar it runs on.
        yield* Effect.addFinalizer(() => session.close)
        yield* session.attach({ served: sidecar.primary, calls: sidecar.calls, outputs: sidecar.outputs })
        if (McpRoots.supported(server)) {
          // The client's first root changed (or it gave one at last): that Location is served from now on.
          let serving = located.directory
          server.setNotificationHandler(RootsListChangedNotificationSchema, async () => {
            const directory = await McpRoots.listed(server)
            if (directory === undefined || directory === serving) return
            serving = directory
            const switched = await run(Effect.result(Scope.provide(sidecar.locations.get(directory), scope)))
            if (switched._tag === "Failure") {
              Command.stderr(`core mcp: cannot serve ${directory}: ${switched.failure.message}\n`)
              return
            }
            await run(session.attach({ served: switched.success, calls: sidecar.calls, outputs: sidecar.outputs }))
          })
        }
      }
      yield* Effect.promise(() => closed)
      yield* session.close
      return Command.EXIT.ok
    }).pipe(Effect.scoped)
  })
