export * as Execution from "./execution"

// Calling a tool's execute, checked at the call (DESIGN §4): it must return an Effect. A throw, or a return that
// is not an Effect (a Promise, a plain value: the usual slip of a new author), is refused with a message that
// says what to write instead, before it reaches the fiber runtime, where it would hang or fail with words that
// mean nothing to the author. This module never decides how a refusal is settled: the settler does.

import * as Effect from "effect/Effect"
import type { Permission } from "../permission/permission"
import type * as Internal from "../tool/internal"
import type { Tool } from "../tool/tool"

/** What calling execute gave: the Effect to run, or why there is none. */
export type Called =
  | { readonly _tag: "Effect"; readonly effect: Effect.Effect<unknown, Tool.Failure | Permission.Refusal> }
  | { readonly _tag: "Refused"; readonly message: string; readonly cause: unknown }

/** Why `execute`'s return cannot run, and what to write instead; undefined for an Effect. */
const notAnEffect = (name: string, returned: unknown): string | undefined => {
  if (Effect.isEffect(returned)) return undefined
  const isPromise =
    typeof returned === "object" && returned !== null && typeof (returned as { then?: unknown }).then === "function"
  const what = isPromise
    ? "a Promise"
    : returned === null || returned === undefined
      ? String(returned)
      : `a plain ${typeof returned}`
  const fix = isPromise
    ? "Wrap async work in an Effect: `execute: (input) => Effect.promise(() => work(input))`, or " +
      "`Effect.tryPromise({ try: () => work(input), catch: (error) => new Tool.Failure({ message: String(error) }) })` " +
      "when it can reject."
    : "Return `Effect.succeed(value)` for a value, or `Effect.sync(() => compute(input))` for a computation."
  return `${name}'s execute returned ${what}, not an Effect, so core cannot run it as a call. ${fix}`
}

/**
 * Where an error was made, as its stack's first frame says (` (at execute (tools/x.ts:7:30))`), or "": an operational
 * failure's words are for the tool's author, who looks for the line.
 */
export const whereOf = (error: unknown): string => {
  const stack = error instanceof Error ? error.stack : undefined
  const frame = stack?.split("\n").find((line) => line.trimStart().startsWith("at "))?.trim()
  return frame === undefined ? "" : ` (${frame})`
}

const threwSynchronously = (name: string, thrown: unknown): string =>
  `${name}'s execute threw before returning an Effect: ${thrown instanceof Error ? thrown.message : String(thrown)}${whereOf(thrown)}. ` +
  "Return an Effect instead: `Effect.try(() => compute(input))` or `Effect.sync(...)` for code that may throw, and " +
  "fail with `new Tool.Failure({ message })` for a failure the model should see."

/** Calls `tool`'s execute, registered under `name`, and checks that it gave an Effect. */
export const call = (name: string, tool: Internal.Record, input: unknown, context: Tool.Context): Called => {
  let returned: unknown
  try {
    returned = tool.execute(input, context)
  } catch (thrown) {
    return { _tag: "Refused", message: threwSynchronously(name, thrown), cause: thrown }
  }
  const problem = notAnEffect(name, returned)
  if (problem === undefined) return { _tag: "Effect", effect: returned as Effect.Effect<unknown, Tool.Failure | Permission.Refusal> }
  // A Promise left behind must not reject unhandled (that would end the process).
  if (typeof (returned as { then?: unknown } | null)?.then === "function") {
    ;(returned as PromiseLike<unknown>).then(undefined, () => undefined)
  }
  // The value returned is no error: kept apart from the message (a string "hi" was read as the cause, ": hi").
  return { _tag: "Refused", message: problem, cause: new Error(problem) }
}
