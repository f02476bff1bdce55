export * as ToolsCommand from "./tools-command"

// `core tools`: what a model would be offered in a Location, as a table or (`--json`) as the definitions array.

import * as Effect from "effect/Effect"
import { Terminal } from "../contract/terminal"
import { Agent } from "../permission/agent"
import { Permission } from "../permission/permission"
import { Provider } from "../provider/provider"
import { Plugins } from "../plugin/plugins"
import { Registry } from "../registry/registry"
import { Hooks } from "../settlement/hooks"
import { Command } from "./command"
import { Diagnostics } from "./diagnostics"
import { Runtime } from "./runtime"
import { Host } from "../host/host"

export const HELP = `Usage: core tools [--location DIR] [--agent ID] [--json] [--provider P]

List the tools a model would be offered in a Location, in advertised order.

Options:
  --location DIR    the Location (default: the current directory)
  --agent ID        the agent whose catalog to show: tools its rules wholly deny are hidden
                    (default: build)
  --json            print [{ name, description, inputSchema, outputSchema, annotations? }] on stdout
  --provider P      prepare the tools for provider P (${Provider.NAMES.join(", ")}): with
                    --json, print them in that provider's tool shape; a tool P cannot take
                    is an error naming the tool and the construct (exit 1)
  -h, --help        show this help

The MCP servers core.json names are connected to list their tools (<server>_<tool>). Tool and
plugin load problems and servers that fail are reported on stderr; the other tools are still listed.
The table names, after a tool, the plugin hooks that apply to it (definition, before, after).

Exit codes: 0 listed, even when a file failed to load or a server failed (what a model would be
offered is still listed; \`core check\` exits 1 on such problems, for CI), 1 a tool provider P
cannot take, 2 usage error (or an invalid core.json), 3 operational failure.
`

const OPTIONS = {
  location: { type: "string" },
  agent: { type: "string" },
  json: { type: "boolean" },
  provider: { type: "string" },
} as const

/** A description's first line, as it is but for what a terminal acts on (an MCP server's description is its own). */
const firstLine = (text: string) => Terminal.inline(text.trim().split("\n")[0] ?? "")

/** `audit: before, after` for the hooks of plugin `audit` that apply to a tool. */
const hookLabel = (applied: Hooks.Applied) =>
  `${applied.plugin}: ${applied.hooks.map((hook) => hook.replace(/^tool\.(execute\.)?/, "")).join(", ")}`

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Command.parse("tools", args, OPTIONS)
    if (values.help) {
      Command.stdout(HELP)
      return Command.EXIT.ok
    }
    if (positionals.length > 0) {
      return yield* new Command.UsageError({ command: "tools", message: `unexpected argument "${positionals[0]}"` })
    }
    const provider = values.provider
    if (provider !== undefined && !Provider.isName(provider)) {
      return yield* new Command.UsageError({
        command: "tools",
        message: `unknown provider "${provider}": one of ${Provider.NAMES.join(", ")}`,
      })
    }
    const environment = Host.environment()
    const prepared = yield* Runtime.prepare("tools", environment, values.location)
    const directory = prepared.directory
    return yield* Effect.gen(function* () {
      yield* Diagnostics.report
      const permission = yield* Permission.Service
      const agent = values.agent ?? Agent.DEFAULT_AGENT
      yield* Runtime.checkAgent("tools", permission, agent)
      const registry = yield* Registry.Service
      const { hooks } = yield* Plugins.Service
      // As a turn advertises them: plugins' tool.definition hooks applied (one that fails is operational).
      const definitions = yield* Effect.try({
        try: () => Hooks.definitions(hooks, registry.capture(permission.rules(agent)).definitions),
        catch: (error) => error,
      }).pipe(Effect.orDie)
      const prepared = provider === undefined ? undefined : Provider.prepare(definitions, provider)
      if (prepared?._tag === "Failure") {
        return yield* new Command.Exit({ code: Command.EXIT.modelError, message: prepared.failure.message })
      }
      if (values.json) {
        Command.stdout(`${Terminal.pretty(prepared?.success.tools ?? definitions)}\n`)
        return Command.EXIT.ok
      }
      if (definitions.length === 0) {
        // The built-ins are always there, so an empty catalog means the agent's rules hide everything.
        const hidden = registry.capture().definitions.length
        Command.stdout(`No tools in ${directory} are offered to the ${agent} agent: its rules deny all ${hidden}.\n`)
        return Command.EXIT.ok
      }
      const width = Math.max(...definitions.map((definition) => definition.name.length))
      const rows = definitions.map((definition) => {
        const row = `${definition.name.padEnd(width)}  ${firstLine(definition.description)}`
        const applied = Hooks.applied(hooks, definition.name)
        return applied.length === 0 ? row : `${row}  [hooks: ${applied.map(hookLabel).join("; ")}]`
      })
      Command.stdout(`${rows.join("\n")}\n`)
      return Command.EXIT.ok
    }).pipe(Effect.provide(Host.catalogLayer(environment, prepared)))
  })
