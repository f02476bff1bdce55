export * as McpListCommand from "./mcp-list-command"

// `core mcp list`: the MCP servers a Location's core.json names, each connected as a turn would connect it, with
// its state, its tools and what kept a server or a tool from being offered. Exit 1 when a server failed.

import * as Effect from "effect/Effect"
import { Terminal } from "../contract/terminal"
import { Host } from "../host/host"
import { McpClient } from "../mcp-client/mcp-client"
import { Command } from "./command"
import { Runtime } from "./runtime"

export const HELP = `Usage: core mcp list [--location DIR] [--json]

Connect each MCP server that core.json names (under "mcp") and show its state: connected or
failed (and why), its tools as the Location offers them (<server>_<tool>), and the tools it
could not offer. Exits 1 when a server failed to connect.

Options:
  --location DIR    the Location (default: the current directory)
  --json            print [{ name, kind, target, status, tools, problems, error?, pid?, ignoredLines? }]
  -h, --help        show this help
`

const OPTIONS = {
  location: { type: "string" },
  json: { type: "boolean" },
} as const

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Command.parse("mcp list", args, OPTIONS)
    if (values.help) {
      Command.stdout(HELP)
      return Command.EXIT.ok
    }
    if (positionals.length > 0) {
      return yield* new Command.UsageError({ command: "mcp list", message: `unexpected argument "${positionals[0]}"` })
    }
    const environment = Host.environment()
    const prepared = yield* Runtime.prepare("mcp list", environment, values.location)
    return yield* Effect.gen(function* () {
      const states = (yield* McpClient.Service).states()
      const failed = states.some((state) => state.status !== "connected")
      if (values.json) {
        Command.stdout(`${Terminal.pretty(states)}\n`)
      } else if (states.length === 0) {
        Command.stdout(`No MCP servers are configured for ${prepared.directory} (core.json "mcp").\n`)
      } else {
        const lines: Array<string> = []
        for (const state of states) {
          const tools = state.status === "connected" ? `${state.tools.length} tools` : ""
          lines.push(Terminal.inline(`${state.name}  ${state.kind}  ${state.status}  ${tools}  ${state.target}`.replace(/ {3,}/g, "  ")))
          if (state.error !== undefined) lines.push(`  error: ${Terminal.inline(state.error)}`)
          if (state.tools.length > 0) lines.push(`  tools: ${Terminal.inline(state.tools.join(", "))}`)
          for (const problem of state.problems) lines.push(`  not offered: ${Terminal.inline(problem)}`)
          if ((state.ignoredLines ?? 0) > 0) lines.push(`  skipped ${state.ignoredLines} stdout lines that were not JSON-RPC`)
        }
        // Names, errors and targets are the servers' own words: nothing in them may drive the terminal.
        Command.stdout(`${lines.join("\n")}\n`)
      }
      return failed ? Command.EXIT.modelError : Command.EXIT.ok
    }).pipe(Effect.provide(Host.catalogLayer(environment, prepared)))
  })
