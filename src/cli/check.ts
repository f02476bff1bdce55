export * as CheckCommand from "./check"

// `core check NAME --input JSON`: explains, without running anything or asking anyone, what a call would meet:
// the decision for each resource, the rule that decided it and the file it came from, or what an "always"
// reply would save. Prints JSON on stdout.

import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import { Builtin } from "../builtin/builtin"
import { Agent } from "../permission/agent"
import { Permission } from "../permission/permission"
import { Rule } from "../permission/rule"
import { Registry } from "../registry/registry"
import * as Internal from "../tool/internal"
import { Command } from "./command"
import { Diagnostics } from "./diagnostics"
import { ExecCommand } from "./exec"
import { Runtime } from "./runtime"

export const HELP = `Usage: core check NAME --input JSON [--location DIR] [--agent ID]

Explain the permission decision for a call without running anything. A call makes one or more
checks, in order: a built-in checks each path it touches (external_directory first for a path
outside the Location) or each command of a bash line; any other tool checks its action as a
whole. For each check and each of its resources: the decision (allow, deny or ask), the rule
that decided it and its file, a saved approval that answers it, and what an "always" reply
would save. Prints JSON on stdout: { tool, agent, decision, checks: [{ action, decision,
resources, alwaysSaves?, alwaysAsked? }] }.

Options:
  --input JSON      the call's input, a JSON object ("-" reads it from stdin); it is decoded
                    as the call would be, and an invalid input is reported
  --location DIR    the Location (default: the current directory)
  --agent ID        the agent making the call (default: build)
  -h, --help        show this help

Exit codes: 0 explained, 1 unknown tool, invalid input or a path that cannot be used,
2 usage error, 3 operational failure
(e.g. an unreadable settlement store).
`

const OPTIONS = {
  input: { type: "string" },
  location: { type: "string" },
  agent: { type: "string" },
} as const

const usage = (message: string) => new Command.UsageError({ command: "check", message })

/** A denial anywhere denies the call; otherwise an ask anywhere asks; otherwise it is allowed. */
const decisionOf = (decisions: ReadonlyArray<{ readonly effect: "allow" | "deny" | "ask" }>) =>
  decisions.some((entry) => entry.effect === "deny")
    ? ("deny" as const)
    : decisions.some((entry) => entry.effect === "ask")
      ? ("ask" as const)
      : ("allow" as const)

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Command.parse("check", args, OPTIONS)
    if (values.help) {
      Command.stdout(HELP)
      return Command.EXIT.ok
    }
    const [name, ...extra] = positionals
    if (name === undefined) return yield* usage("NAME is required: core check NAME --input JSON")
    if (extra.length > 0) return yield* usage(`unexpected argument "${extra[0]}"`)
    const input = yield* ExecCommand.readInput("check", values.input)
    const environment = Runtime.environment()
    const prepared = yield* Runtime.prepare("check", environment, values.location)
    const agent = values.agent ?? Agent.DEFAULT_AGENT

    return yield* Effect.gen(function* () {
      yield* Diagnostics.report
      const permission = yield* Permission.Service
      yield* Runtime.checkAgent("check", permission, agent)
      const resolution = (yield* Registry.Service).capture().resolve(name)
      if (resolution._tag !== "Found") {
        const hint = resolution._tag === "Unknown" && resolution.suggestions.length > 0
          ? ` Did you mean ${resolution.suggestions.join(", ")}?`
          : ""
        return yield* new Command.Exit({ code: Command.EXIT.modelError, message: `unknown tool "${name}".${hint}` })
      }
      const tool = Internal.get(resolution.tool)!
      const decoded = yield* Effect.exit(Schema.decodeUnknownEffect(tool.inputJson)(input, { errors: "all", onExcessProperty: "error" }))
      if (Exit.isFailure(decoded)) {
        const error = Cause.findError(decoded.cause)
        const detail = error._tag === "Success" ? String(error.success.message) : Cause.pretty(decoded.cause)
        return yield* new Command.Exit({ code: Command.EXIT.modelError, message: `invalid input for ${name}:\n${detail}` })
      }
      // A built-in names the checks it makes, per path or command; any other tool checks its action as a whole.
      const plan = Builtin.planOf(resolution.tool)
      const planned = plan === undefined
        ? [{ action: Rule.actionOf(name), resources: ["*"], save: ["*"] }]
        : yield* plan(decoded.value, agent).pipe(
            Effect.catchTag("Tool.Failure", (failure) =>
              Effect.fail(new Command.Exit({ code: Command.EXIT.modelError, message: `${name}: ${failure.message}` })),
            ),
          )
      const checks = []
      for (const check of planned) {
        const decisions = (yield* permission.explain({ agent, action: check.action, resources: check.resources })).map(
          // Asked every time: no allow rule or saved approval answers it (what the call runs cannot be known).
          (entry) => (check.ask === true && entry.effect === "allow" ? { ...entry, effect: "ask" as const, approvedBy: undefined } : entry),
        )
        const decision = decisionOf(decisions)
        checks.push({
          action: check.action,
          decision,
          ...(check.ask === true ? { alwaysAsked: true } : {}),
          resources: decisions.map((entry) => ({
            resource: entry.resource,
            decision: entry.effect,
            rule:
              entry.rule === undefined
                ? null
                : { action: entry.rule.action, resource: entry.rule.resource, effect: entry.rule.effect, ...entry.rule.source },
            ...(entry.approvedBy === undefined ? {} : { approvedBy: entry.approvedBy }),
          })),
          ...(decision === "ask" ? { alwaysSaves: check.save } : {}),
        })
      }
      const decision = decisionOf(checks.map((check) => ({ effect: check.decision })))
      Command.stdout(`${JSON.stringify({ tool: name, agent, decision, checks }, null, 2)}\n`)
      return Command.EXIT.ok
    }).pipe(Effect.provide(Runtime.checkingLayer(environment, prepared)))
  })
