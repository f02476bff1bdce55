export * as LocationCheck from "./location-check"

// `core check [--location DIR] [--provider P]` with no tool name: checks a whole Location as CI would, loading it as
// every command does: its core.json files, tool files, plugins, skills and MCP servers (each connected to list its tools),
// and, with a provider, whether every tool fits that provider's rules. It reports every problem it finds, never
// only the first, and runs no tool.

import * as Effect from "effect/Effect"
import { Terminal } from "../contract/terminal"
import { Skill } from "../builtin/skill"
import { Config } from "../config/config"
import { Application } from "../location/application"
import { Location } from "../location/location"
import { Plugins } from "../plugin/plugins"
import { Provider } from "../provider/provider"
import { Registry } from "../registry/registry"
import { McpClient } from "../mcp-client/mcp-client"
import { Hooks } from "../settlement/hooks"
import { Host } from "../host/host"
import { Command } from "./command"

/** One thing wrong with the Location: what part of it, the file that says so, and what is wrong. */
export type Problem =
  | { readonly kind: "config" | "tool" | "plugin" | "skill" | "mcp"; readonly file?: string; readonly message: string }
  | ({ readonly kind: "provider" } & Provider.Problem)

const messageOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)

/** Says each problem on stderr, prints the report on stdout, and answers the exit code. */
const report = (
  body: Record<string, unknown>,
  problems: ReadonlyArray<Problem>,
  provider: Provider.Name | undefined,
): number => {
  Command.stdout(`${Terminal.pretty({ ...body, problems })}\n`)
  for (const problem of problems) {
    if (problem.kind === "provider") continue
    // A message that names its file first (a core.json's, with the line and column) is not given it twice.
    const named = problem.file === undefined || problem.message.startsWith(problem.file)
    Command.stderr(`core check: ${Terminal.block(`${named ? "" : `${problem.file}: `}${problem.message}`)}\n`)
  }
  const fitting = problems.filter((problem) => problem.kind === "provider")
  if (provider !== undefined && fitting.length > 0) Command.stderr(`core check: ${Terminal.block(Provider.error(provider, fitting).message)}\n`)
  if (problems.length === 0) return Command.EXIT.ok
  Command.stderr(`core check: ${problems.length} problem${problems.length === 1 ? "" : "s"} in ${Terminal.inline(String(body.location))}\n`)
  return Command.EXIT.modelError
}

export const run = (values: { readonly location?: string | undefined; readonly provider?: Provider.Name | undefined }) =>
  Effect.gen(function* () {
    const environment = Host.environment()
    const provider = values.provider
    const prepared = yield* Host.prepare(environment, values.location ?? ".").pipe(
      Effect.catchTag("Location.LocationError", (error) =>
        Effect.fail(new Command.UsageError({ command: "check", message: error.message })),
      ),
      // An invalid core.json keeps the Location from starting at all: that is the one problem to report.
      Effect.catchTag("Config.ConfigError", (error) => Effect.succeed(error)),
    )
    if (prepared instanceof Config.ConfigError) {
      const directory = Location.check(values.location ?? ".").pipe(Effect.orElseSucceed(() => values.location ?? "."))
      // The shape every check has: nothing loads, so no tool and no server.
      return report(
        { location: yield* directory, ...(provider === undefined ? {} : { provider }), tools: 0, servers: [] },
        [{ kind: "config", file: prepared.file, message: prepared.message }],
        provider,
      )
    }
    return yield* Effect.gen(function* () {
      const remote = yield* McpClient.Service
      yield* remote.ensure
      const registry = yield* Registry.Service
      const plugins = yield* Plugins.Service
      const problems: Array<Problem> = []
      for (const { file, message } of [...(yield* Application.Service).diagnostics, ...(yield* Location.Service).diagnostics]) {
        problems.push({ kind: "tool", file, message })
      }
      for (const { file, message } of plugins.diagnostics) problems.push({ kind: "plugin", file, message })
      for (const { file, message } of (yield* Skill.Service).diagnostics()) problems.push({ kind: "skill", file, message })
      for (const { file, message } of remote.diagnostics()) problems.push({ kind: "mcp", file, message })
      // Every tool of the Location, whatever the agents' rules hide, as a turn would advertise it.
      const { definitions } = registry.capture()
      try {
        Hooks.definitions(plugins.hooks, definitions)
      } catch (error) {
        problems.push({ kind: "plugin", message: messageOf(error) })
      }
      if (provider !== undefined) {
        for (const problem of Provider.lint(definitions, provider)) problems.push({ kind: "provider", ...problem })
      }
      const servers = remote.states().map((state) => ({ name: state.name, status: state.status, tools: state.tools }))
      return report(
        {
          location: prepared.directory,
          ...(provider === undefined ? {} : { provider }),
          tools: definitions.length,
          servers,
        },
        problems,
        provider,
      )
    }).pipe(Effect.provide(Host.catalogLayer(environment, prepared)))
  })
