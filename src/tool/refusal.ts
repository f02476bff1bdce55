export * as Refusal from "./refusal"

// The refusals a permission check ends with, and so the errors a tool's `execute` may fail with besides
// `Tool.Failure`. They sit below the tool value (`tool/` names them in `execute`'s type), so this module imports
// nothing of core: not the permission service, the store or the settlement.

import * as Schema from "effect/Schema"

/** The rule that denied, as the permission service knows it, with where it was written. */
export interface DenyingRule {
  readonly action: string
  readonly resource: string
  readonly effect: string
  readonly source: { readonly file: string; readonly path: string }
}

/**
 * What the model reads when a rule denies: that it is the user's rule (which one, and where it is written), which
 * it must not work round. No advice on changing rules: that is the user's business, not the model's.
 */
export const deniedText = (input: {
  readonly action: string
  readonly resource: string
  readonly agent: string
  readonly rule: DenyingRule | undefined
}): string => {
  const rule = input.rule
  const why =
    rule === undefined
      ? ""
      : ` (rule ${JSON.stringify(rule.action)}: ${JSON.stringify(rule.resource)} → ${rule.effect}, ${rule.source.file}, ${rule.source.path})`
  return (
    `Denied: ${input.action} on ${JSON.stringify(input.resource)} is forbidden for the ${input.agent} agent by the ` +
    `user's rule${why}. Do not try to reach the same result another way.`
  )
}

/** Added to a refusal of a command line: nothing of it ran, so the model need not wonder what did. */
export const NOTHING_RAN = "Nothing in the command line ran."

/** A rule denies the action on a resource. Model-visible: the call settles as an error of kind `denied`. */
export class Denied extends Schema.TaggedError<Denied>()("Permission.Denied", {
  action: Schema.String,
  resource: Schema.String,
  message: Schema.String,
}) {}

/** A person rejected the request with feedback for the model: the call fails with that message. */
export class Rejected extends Schema.TaggedError<Rejected>()("Permission.Rejected", {
  action: Schema.String,
  message: Schema.String,
}) {}

/** A person said no without a message (or nobody could answer): the call settles as `declined`. */
export class Declined extends Schema.TaggedError<Declined>()("Permission.Declined", {
  action: Schema.String,
  /** What was asked for. */
  resources: Schema.Array(Schema.String),
  /** True when no person answered: nobody could be asked (no terminal), or core stopped first. */
  unattended: Schema.Boolean,
  /** When unattended: why nobody could be asked, naming the face. */
  why: Schema.optionalKey(Schema.String),
  message: Schema.String,
}) {}

/** Any refusal. */
export type Any = Denied | Rejected | Declined
