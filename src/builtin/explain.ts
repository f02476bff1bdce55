export * as Explain from "./explain"

// What a call would meet, found without running or asking anything: the input decoded as the call would be, the
// checks the tool makes (a built-in's plan, from the same functions its `execute` checks with; any other tool's
// action as a whole, as the settler checks it), each decided per resource now. `core check` and the sidecar's
// check route answer with this, so neither can disagree with what a call asks.

import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import type { Permission } from "../permission/permission"
import { Rule } from "../permission/rule"
import * as Internal from "../tool/internal"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"

/** The input does not decode as the tool's input: the call would be refused as invalid_input. */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("Explain.InvalidInput", {
  message: Schema.String,
}) {}

export type Verdict = "allow" | "deny" | "ask"

export interface Resource {
  readonly resource: string
  readonly decision: Verdict
  /** The rule that decided it, with where it was written; null when no rule matches (then it is asked). */
  readonly rule: {
    readonly action: string
    readonly resource: string
    readonly effect: Verdict
    readonly file: string
    readonly path: string
  } | null
  /** The saved approval that answers it. */
  readonly approvedBy?: string
}

export interface Check {
  readonly action: string
  readonly decision: Verdict
  /** Asked every time: no rule that allows and no saved approval answers it. */
  readonly alwaysAsked?: true
  /** What of core's own configuration it would change: only a person may approve it, each time. */
  readonly protected?: string
  readonly resources: ReadonlyArray<Resource>
  /** What an "always" reply would save, when the check is asked. */
  readonly alwaysSaves?: ReadonlyArray<string>
}

export interface Explanation {
  readonly tool: string
  readonly agent: string
  /** deny when any resource is denied (the call is refused before anything is asked), else ask when any is, else allow. */
  readonly decision: Verdict
  readonly checks: ReadonlyArray<Check>
}

/** A denial anywhere denies the call; otherwise an ask anywhere asks; otherwise it is allowed. */
const decisionOf = (effects: ReadonlyArray<Verdict>): Verdict =>
  effects.includes("deny") ? "deny" : effects.includes("ask") ? "ask" : "allow"

const resourceOf = (decision: Permission.Decision): Resource => ({
  resource: decision.resource,
  decision: decision.effect,
  rule:
    decision.rule === undefined
      ? null
      : {
          action: decision.rule.action,
          resource: decision.rule.resource,
          effect: decision.rule.effect,
          ...decision.rule.source,
        },
  ...(decision.approvedBy === undefined ? {} : { approvedBy: decision.approvedBy }),
})

/**
 * The checks a call of `tool` (advertised as `name`) makes for a decoded input, in order: a built-in's plan, or
 * the tool's action as a whole.
 */
export const checksOf = (
  tool: Tool.Any,
  name: string,
  input: unknown,
  agent: string,
): Effect.Effect<ReadonlyArray<Permission.Check>, Tool.Failure> => {
  const plan = Builtin.planOf(tool)
  if (plan !== undefined) return plan(input, agent)
  return Effect.succeed([{ action: Rule.actionOf(name), resources: ["*"], save: ["*"] }])
}

/** Explains a call of `tool` with a raw input (as the model gave it), for `agent`, running and asking nothing. */
export const call = (
  permission: Permission.Interface,
  call: { readonly name: string; readonly tool: Tool.Any; readonly input: unknown; readonly agent: string },
): Effect.Effect<Explanation, InvalidInput | Tool.Failure> =>
  Effect.gen(function* () {
    const record = Internal.get(call.tool)!
    const decoded = yield* Effect.exit(
      Schema.decodeUnknownEffect(record.inputJson)(call.input, { errors: "all", onExcessProperty: "error" }),
    )
    if (Exit.isFailure(decoded)) {
      const error = Cause.findError(decoded.cause)
      const detail = error._tag === "Success" ? String(error.success.message) : Cause.pretty(decoded.cause)
      return yield* new InvalidInput({ message: `invalid input for ${call.name}:\n${detail}` })
    }
    const checks = yield* checksOf(call.tool, call.name, decoded.value, call.agent)
    const decided = yield* permission.decide(call.agent, checks)
    const explained = decided.map(({ check, decisions }): Check => {
      const decision = decisionOf(decisions.map((entry) => entry.effect))
      return {
        action: check.action,
        decision,
        ...(check.ask === true ? { alwaysAsked: true as const } : {}),
        ...(check.protected === undefined ? {} : { protected: check.protected }),
        resources: decisions.map(resourceOf),
        ...(decision === "ask" ? { alwaysSaves: check.ask === true ? [] : check.save } : {}),
      }
    })
    return {
      tool: call.name,
      agent: call.agent,
      decision: decisionOf(explained.map((check) => check.decision)),
      checks: explained,
    }
  })

/**
 * The asks a call would make, in order, as a person would see them: none when any resource is denied; otherwise
 * each asked check with the resources it asks about and what "always" saves.
 */
export const asks = (
  explanation: Explanation,
): ReadonlyArray<{ readonly action: string; readonly resources: ReadonlyArray<string>; readonly save: ReadonlyArray<string> }> =>
  explanation.decision === "deny"
    ? []
    : explanation.checks
        .filter((check) => check.decision === "ask")
        .map((check) => ({
          action: check.action,
          resources: check.resources.filter((entry) => entry.decision === "ask").map((entry) => entry.resource),
          save: check.alwaysSaves ?? [],
        }))
