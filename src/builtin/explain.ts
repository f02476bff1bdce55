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
import { Nesting } from "../contract/nesting"
import { Rule } from "../permission/rule"
import { Hints } from "../settlement/hints"
import * as Internal from "../tool/internal"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"

/** The input does not decode as the tool's input: the call would be refused as invalid_input. */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("Explain.InvalidInput", {
  message: Schema.String,
}) {}

const Verdict = Schema.Literals(["allow", "deny", "ask"])
export type Verdict = typeof Verdict.Type

/** One resource of a check, decided now (the schema the check route's OpenAPI document shows). */
export const Resource = Schema.Struct({
  resource: Schema.String,
  decision: Verdict,
  rule: Schema.NullOr(
    Schema.Struct({
      action: Schema.String,
      resource: Schema.String,
      effect: Verdict,
      file: Schema.String.annotate({ description: "Where the rule was written (a core.json, or core's defaults)" }),
      path: Schema.String.annotate({ description: "The rule's place in that file" }),
    }),
  ).annotate({ description: "The rule that decided it; null when none matches (then it is asked)" }),
  approvedBy: Schema.optionalKey(Schema.String.annotate({ description: "The saved approval that answers it" })),
}).annotate({ identifier: "CheckedResource" })
export type Resource = typeof Resource.Type

/** One check of the call: its action, the decision over its resources, and what an ask would save. */
export const Check = Schema.Struct({
  action: Schema.String,
  decision: Verdict,
  alwaysAsked: Schema.optionalKey(
    Schema.Literal(true).annotate({
      description: "Asked every time: what it runs cannot be known from the input, so no rule or saved approval answers it",
    }),
  ),
  protected: Schema.optionalKey(
    Schema.String.annotate({
      description: "What of core's own configuration the check would change: only a person may approve it, each time",
    }),
  ),
  resources: Schema.Array(Resource),
  alwaysSaves: Schema.optionalKey(
    Schema.Array(Schema.String).annotate({ description: 'When asked: the patterns an "always" reply saves' }),
  ),
})
export type Check = typeof Check.Type

/** What a call would meet: `core check` prints it, the check route answers it (with the plugin hooks beside it). */
export const Explanation = Schema.Struct({
  tool: Schema.String,
  agent: Schema.String,
  decision: Verdict.annotate({
    description: "deny when a rule denies any resource (the call is refused before anything is asked), else ask when any resource is asked, else allow",
  }),
  checks: Schema.Array(Check).annotate({ description: "The checks the call makes, in the order it makes them" }),
})
export type Explanation = typeof Explanation.Type

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
      Schema.decodeUnknownEffect(record.inputJson)(call.input, Nesting.describing(call.input, Internal.EXPLAIN_OPTIONS)),
    )
    if (Exit.isFailure(decoded)) {
      const error = Cause.findError(decoded.cause)
      // Worded as the settlement words it for the model (each key's problem, a misspelt key's likely name).
      const detail =
        error._tag === "Success"
          ? Hints.describeIssues(error.success, Hints.misspelledKeys(call.input, record.inputSchema))
          : Cause.pretty(decoded.cause)
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
