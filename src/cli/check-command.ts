export * as CheckCommand from "./check-command"

// `core check NAME --input JSON`: explains, without running anything or asking anyone, what a call would meet:
// the decision for each resource, the rule that decided it and the file it came from, or what an "always"
// reply would save. Prints JSON on stdout. Without NAME it checks the whole Location (check-location.ts).

import * as Effect from "effect/Effect"
import { Terminal } from "../contract/terminal"
import { Json } from "../config/json"
import { Explain } from "../builtin/explain"
import { Agent } from "../permission/agent"
import { Permission } from "../permission/permission"
import { Provider } from "../provider/provider"
import { Plugins } from "../plugin/plugins"
import { Hooks } from "../settlement/hooks"
import { McpClient } from "../mcp-client/mcp-client"
import { Registry } from "../registry/registry"
import { Command } from "./command"
import { Shell } from "../shell/shell"
import { Diagnostics } from "./diagnostics"
import { ExecCommand } from "./exec-command"
import { LocationCheck } from "./location-check"
import { Runtime } from "./runtime"
import { Host } from "../host/host"

export const HELP = `Usage: core check NAME --input JSON [--location DIR] [--agent ID]
       core check [--location DIR] [--provider P]

With NAME: explain the permission decision for a call without running anything. A call makes
one or more checks, in order: a built-in checks each path it touches (external_directory first
for a path outside the Location) or each command of a bash line; any other tool checks its
action as a whole. For each check and each of its resources: the decision (allow, deny or
ask), the rule that decided it and its file, a saved approval that answers it, and what an
"always" reply would save. These are the checks the call itself makes: it asks exactly what is
listed as ask, in order, and when any resource is denied (decision deny) it is refused before
anything is asked. Prints JSON on stdout: { tool, agent, decision, checks: [{ action,
decision, resources, alwaysSaves?, alwaysAsked?, protected? }] }; "protected" says what of
core's own configuration a check would change, which only a person may approve, each time.
Exit codes: 0 explained, 1 unknown tool, invalid input or a path that cannot be used, 2 usage
error, 3 operational failure (e.g. an unreadable settlement store).

Without NAME: check the whole Location, for CI: its core.json files, every tool file and
plugin (here and in $CORE_HOME), each MCP server core.json names (connected to list its
tools), and with --provider (one of ${Provider.NAMES.join(", ")}) that every tool, whatever the
agents' rules hide, can be offered to provider P. Prints JSON on stdout: { location, provider?,
tools, servers: [{ name, status, tools }], problems: [{ kind, file?, message }] } (kind config,
tool, plugin, skill or mcp; a provider problem is { kind: "provider", tool, path, construct,
reason }), and each problem on stderr; an invalid core.json is the one problem (tools 0, no
servers: the Location does not start). Exit codes: 0 no problem, 1 any problem, 2 usage error
(e.g. a Location that does not exist).

Options:
  --input JSON      the call's input, a JSON object ("-" reads it from stdin); it is decoded
                    as the call would be, and an invalid input is reported
  --location DIR    the Location (default: the current directory)
  --agent ID        the agent making the call (default: build)
  --provider P      with no NAME: also check every tool against provider P's rules
  -h, --help        show this help
`

const OPTIONS = {
  input: { type: "string" },
  location: { type: "string" },
  agent: { type: "string" },
  provider: { type: "string" },
} as const

const usage = (message: string) => new Command.UsageError({ command: "check", message })

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Command.parse("check", args, OPTIONS)
    if (values.help) {
      Command.stdout(HELP)
      return Command.EXIT.ok
    }
    const [name, ...extra] = positionals
    const provider = values.provider
    if (provider !== undefined && !Provider.isName(provider)) {
      return yield* usage(`unknown provider "${provider}": one of ${Provider.NAMES.join(", ")}`)
    }
    if (name === undefined) {
      if (values.input !== undefined) return yield* usage("NAME is required with --input: core check NAME --input JSON")
      if (values.agent !== undefined) {
        return yield* usage("--agent checks one call of that agent: core check NAME --input JSON --agent ID")
      }
      return yield* LocationCheck.run({ ...values, provider })
    }
    if (provider !== undefined) return yield* usage(`--provider checks the whole Location; it takes no NAME ("${name}")`)
    if (extra.length > 0) return yield* usage(`unexpected argument "${extra[0]}"`)
    const input = yield* ExecCommand.readInput("check", values.input)
    // No tool takes a NUL character, half of a character or a number past JSON's: the call would be refused as invalid input before any
    // check, as exec and the HTTP check refuse it.
    const bad = Json.findBadValue(input)
    if (bad !== undefined) {
      return yield* new Command.Exit({ code: Command.EXIT.modelError, message: `invalid input for ${name}: ${Json.describeBadValue(bad)}` })
    }
    const environment = Host.environment()
    const prepared = yield* Runtime.prepare("check", environment, values.location)
    const agent = values.agent ?? Agent.DEFAULT_AGENT

    return yield* Effect.gen(function* () {
      yield* Diagnostics.report
      const sandbox = Shell.sandboxOf(prepared.config.shell.sandbox).notice
      if (sandbox !== undefined) Command.stderr(`core: ${sandbox}\n`)
      const guard = Shell.guardNotice(prepared.config.shell.sandbox)
      if (guard !== undefined) Command.stderr(`core: ${guard}\n`)
      const processes = Shell.processesNotice(prepared.config.shell.sandbox)
      if (processes !== undefined) Command.stderr(`core: ${processes}\n`)
      const permission = yield* Permission.Service
      yield* Runtime.checkAgent("check", permission, agent)
      yield* (yield* McpClient.Service).ensureFor(name)
      const resolution = (yield* Registry.Service).capture().resolve(name)
      if (resolution._tag !== "Found") {
        const hint = resolution._tag === "Unknown" && resolution.suggestions.length > 0
          ? ` Did you mean ${resolution.suggestions.join(", ")}?`
          : " Run 'core tools' to list the Location's tools."
        return yield* new Command.Exit({ code: Command.EXIT.modelError, message: `unknown tool "${name}".${hint}` })
      }
      const explained = yield* Explain.call(permission, { name, tool: resolution.tool, input, agent }).pipe(
        Effect.catchTags({
          "Explain.InvalidInput": (error) => Effect.fail(new Command.Exit({ code: Command.EXIT.modelError, message: error.message })),
          "Tool.Failure": (failure) =>
            Effect.fail(new Command.Exit({ code: Command.EXIT.modelError, message: `${name}: ${failure.message}` })),
        }),
      )
      // The plugin hooks a call to this tool meets after the permission checks (DESIGN §12).
      const hooks = Hooks.applied((yield* Plugins.Service).hooks, name)
      Command.stdout(`${Terminal.pretty(hooks.length === 0 ? explained : { ...explained, hooks })}\n`)
      return Command.EXIT.ok
    }).pipe(Effect.provide(Host.checkingLayer(environment, prepared)))
  })
