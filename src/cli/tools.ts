export * as ToolsCommand from "./tools"

// `core tools`: what a model would be offered in a Location, as a table or (`--json`) as the definitions array.

import * as Effect from "effect/Effect"
import { Agent } from "../permission/agent"
import { Permission } from "../permission/permission"
import { Provider } from "../provider/provider"
import { Registry } from "../registry/registry"
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

The MCP servers core.json names are connected to list their tools (<server>_<tool>). Tool load
problems and servers that fail are reported on stderr; the other tools are still listed.
`

const OPTIONS = {
  location: { type: "string" },
  agent: { type: "string" },
  json: { type: "boolean" },
  provider: { type: "string" },
} as const

const firstLine = (text: string) => text.trim().split("\n")[0] ?? ""

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
      const { definitions } = registry.capture(permission.rules(agent))
      const prepared = provider === undefined ? undefined : Provider.prepare(definitions, provider)
      if (prepared?._tag === "Failure") {
        return yield* new Command.Exit({ code: Command.EXIT.modelError, message: prepared.failure.message })
      }
      if (values.json) {
        Command.stdout(`${JSON.stringify(prepared?.success.tools ?? definitions, null, 2)}\n`)
        return Command.EXIT.ok
      }
      if (definitions.length === 0) {
        // The built-ins are always there, so an empty catalog means the agent's rules hide everything.
        const hidden = registry.capture().definitions.length
        Command.stdout(`No tools in ${directory} are offered to the ${agent} agent: its rules deny all ${hidden}.\n`)
        return Command.EXIT.ok
      }
      const width = Math.max(...definitions.map((definition) => definition.name.length))
      const rows = definitions.map((definition) => `${definition.name.padEnd(width)}  ${firstLine(definition.description)}`)
      Command.stdout(`${rows.join("\n")}\n`)
      return Command.EXIT.ok
    }).pipe(Effect.provide(Host.catalogLayer(environment, prepared)))
  })
