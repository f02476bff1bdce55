export * as ToolsCommand from "./tools"

// `core tools`: what a model would be offered in a Location, as a table or (`--json`) as the definitions array.

import * as Effect from "effect/Effect"
import { Location } from "../location/location"
import { Registry } from "../registry/registry"
import { Command } from "./command"
import { Diagnostics } from "./diagnostics"
import { Runtime } from "./runtime"

export const HELP = `Usage: core tools [--location DIR] [--agent ID] [--json]

List the tools a model would be offered in a Location, in advertised order.

Options:
  --location DIR    the Location (default: the current directory)
  --agent ID        the agent whose catalog to show (default: build; every agent sees the same
                    catalog until permission rules from core.json are read)
  --json            print [{ name, description, inputSchema, outputSchema }] on stdout
  -h, --help        show this help

Tool load problems are reported on stderr; the other tools are still listed.
`

const OPTIONS = {
  location: { type: "string" },
  agent: { type: "string" },
  json: { type: "boolean" },
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
    const directory = yield* Location.check(values.location ?? ".").pipe(
      Effect.mapError((error) => new Command.UsageError({ command: "tools", message: error.message })),
    )
    return yield* Effect.gen(function* () {
      yield* Diagnostics.report
      const { definitions } = (yield* Registry.Service).capture()
      if (values.json) {
        Command.stdout(`${JSON.stringify(definitions, null, 2)}\n`)
        return Command.EXIT.ok
      }
      if (definitions.length === 0) {
        Command.stdout(`No tools in ${directory}. Add one as tools/NAME.ts (see README).\n`)
        return Command.EXIT.ok
      }
      const width = Math.max(...definitions.map((definition) => definition.name.length))
      const rows = definitions.map((definition) => `${definition.name.padEnd(width)}  ${firstLine(definition.description)}`)
      Command.stdout(`${rows.join("\n")}\n`)
      return Command.EXIT.ok
    }).pipe(Effect.provide(Runtime.catalogLayer(Runtime.environment(), directory)))
  })
