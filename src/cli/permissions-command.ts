export * as PermissionsCommand from "./permissions-command"

// `core permissions [reset [--action A]]`: lists the "always" approvals saved for a Location, or clears them.

import * as Effect from "effect/Effect"
import { Terminal } from "../contract/terminal"
import { Location } from "../location/location"
import { Rule } from "../permission/rule"
import { Approvals } from "../store/approvals"
import { Command } from "./command"
import { Host } from "../host/host"

export const HELP = `Usage: core permissions [--location DIR]
       core permissions reset [--action A] [--location DIR]

List the approvals saved by "always" replies for a Location (action, pattern, when, by whom),
or clear them: all of them, or those of one action. With CORE_STORE_URL they are the team's,
shared by every host serving a checkout of the same repository (docs/fleet.md).

Options:
  --location DIR    the Location (default: the current directory)
  --action A        with reset: clear only this action's approvals
  -h, --help        show this help
`

const OPTIONS = {
  location: { type: "string" },
  action: { type: "string" },
} as const

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Command.parse("permissions", args, OPTIONS)
    if (values.help) {
      Command.stdout(HELP)
      return Command.EXIT.ok
    }
    const usage = (message: string) => new Command.UsageError({ command: "permissions", message })
    const [subcommand, ...extra] = positionals
    if (subcommand !== undefined && subcommand !== "reset") return yield* usage(`unknown subcommand "${subcommand}"`)
    if (extra.length > 0) return yield* usage(`unexpected argument "${extra[0]}"`)
    if (subcommand === undefined && values.action !== undefined) return yield* usage("--action goes with reset")
    const environment = Host.environment()
    // Only the directory is needed: a Location whose core.json is broken can still have its approvals reset.
    const directory = yield* Location.check(values.location ?? ".").pipe(Effect.mapError((error) => usage(error.message)))
    // `write` and `apply_patch` approvals are kept under the action they share, `edit`.
    const action = values.action === undefined ? undefined : Rule.actionOf(values.action)

    return yield* Effect.gen(function* () {
      const approvals = yield* Approvals.Service
      if (subcommand === "reset") {
        const removed = yield* approvals.reset(directory, action)
        const which = action === undefined ? "" : ` for ${action}`
        Command.stdout(`Removed ${removed} saved approval${removed === 1 ? "" : "s"}${which} in ${directory}.\n`)
        return Command.EXIT.ok
      }
      const saved = yield* approvals.list(directory)
      if (saved.length === 0) {
        Command.stdout(`No saved approvals in ${directory}.\n`)
        return Command.EXIT.ok
      }
      const width = Math.max(...saved.map((approval) => approval.action.length))
      const rows = saved.map(
        (approval) =>
          `${approval.action.padEnd(width)}  ${Terminal.shown(approval.pattern)}  (${new Date(approval.savedAt).toISOString()}` +
          `${approval.approvedBy === undefined ? "" : `, by ${approval.approvedBy}`})`,
      )
      Command.stdout(`${rows.join("\n")}\n`)
      return Command.EXIT.ok
    }).pipe(Effect.provide(Host.approvalsLayer(environment)))
  })
