export * as Steps from "./steps"

// The steps of a settle that both of the settler's paths share (./settler runs them in a fiber, ./immediate
// without one): the call and its outcome types, and each step's reading of its exit into a value or a Stop (a
// settlement to record, or a failure that is no settlement). Pure but for the Effects they hand back to run:
// nothing here records, waits or decides which path a call takes.

import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { Bound } from "../output/bound"
import type { Image } from "../output/image"
import type { Output } from "../output/output"
import { Permission } from "../permission/permission"
import { Rule } from "../permission/rule"
import type { Registry } from "../registry/registry"
import type { Store } from "../store/store"
import * as Internal from "../tool/internal"
import { Tool } from "../tool/tool"
import { Nesting } from "../contract/nesting"
import { Settlement } from "../contract/settlement"
import { Execution } from "./execution"
import { Hooks } from "./hooks"
import { Hints } from "./hints"
import { Projection } from "./projection"
import type { Spans } from "./spans"
import type { Stopping } from "./stopping"
import { Turn } from "./turn"

/** A failure that is not a tool result: a broken store, an output that could not be kept, an unexpected error. */
export class OperationalError extends Schema.TaggedError<OperationalError>()("Settler.OperationalError", {
  message: Schema.String,
  cause: Schema.Defect(),
}) {}

export interface Call {
  readonly sessionID: string
  readonly agent: string
  readonly assistantMessageID: string
  readonly toolCallID: string
  readonly name: string
  readonly input: unknown
}

export interface Options {
  /** Receives the tool's `context.progress` updates. */
  readonly onProgress?: (update: Tool.Progress) => Effect.Effect<void>
  /** Image limits tighter than the Location's, for the model the result goes to (a provider's own). */
  readonly images?: Partial<Image.Limits>
  /**
   * Told what the call's record says, as soon as the settler knows it and before anything of the call is reported:
   * true when the answer replays a record (settled, or interrupted), false when the call goes on (nothing recorded,
   * a conflict, or another settler runs it). It may be told again when the settler reads the record again; the first
   * telling counts. A call settled without it is told nothing: its Settled says `replayed`.
   */
  readonly onRecord?: (replays: boolean) => void
}

export interface Settled {
  readonly settlement: Settlement.Info
  /** True when the call was already recorded and nothing ran. */
  readonly replayed: boolean
  /**
   * True when this process ran the call, but another settler's record of it stood before this one's could be made
   * (it answered the call as interrupted once this process's lease had lapsed: stopped, or cut off from the store):
   * the settlement is that record, and the tool did run here.
   */
  readonly superseded?: boolean
}

export const OUTPUT_OPTIONS = { errors: "all", reportInput: true } as const

/** Another settler recorded or began the call first. */
export const CONFLICT = Symbol("Settler.conflict")

/** A call as this settler handles it: with what its record keeps of it, and its trace when it is traced. */
export type Received = Call & {
  readonly details: Store.Details
  readonly trace: Spans.Trace | undefined
}

/** An admitted call: its captured tool and decoded input. */
export interface Admitted {
  readonly _tag: "Admitted"
  readonly tool: Internal.Record
  readonly input: unknown
}

/**
 * Why a step stops the call: a settlement to record for it (Refused), or a failure that is no settlement (Halted).
 * Steps hand back their exit, read by a pure function into a value or a Stop: settles are hot, and a step of the
 * fiber per step (a flatMap, a nested generator) costs more than the reading.
 */
export abstract class Stop {}

/** The settlement to record for a call that goes no further. */
export class Refused extends Stop {
  constructor(readonly settlement: Settlement.Info) {
    super()
  }
}

/** A failure that is not the tool's result (a defect, an operational failure, an interruption), failed as it came. */
export class Halted extends Stop {
  constructor(readonly cause: Cause.Cause<OperationalError>) {
    super()
  }
}

/** The Location's services every step reads, bound once when the settler is built. */
export interface Services {
  readonly store: Store.Interface
  readonly output: Output.Interface
  readonly permission: Permission.Interface
  /** The Location's plugin hooks (DESIGN §12), met after the stale and permission checks, before bounding. */
  readonly hooks: Hooks.Chain | undefined
  /** A call belongs to its Location (the permission service's project): the same ids elsewhere are another call. */
  readonly location: string
}

export const reasonOf = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  return error instanceof Error ? error.message : String(error)
}
export const operational = (message: string) => (cause: unknown) => new OperationalError({ message, cause })
export const hookFailed = (error: Hooks.HookError) => new OperationalError({ message: error.message, cause: error })
export const refused = (call: Call, kind: Settlement.ErrorKind, message: string) =>
  new Refused(Settlement.error(call.name, call.toolCallID, kind, message))

/**
 * Whether a refusal's message is past the bound (DESIGN §2 law 10: what goes back to the model is bounded, a
 * failure's words as much as an output: a tool's message quoting a whole file, a patch's thousand hunks).
 */
export const oversized = (services: Services, settlement: Settlement.Info): boolean => {
  const message = settlement.error?.message
  if (message === undefined) return false
  const { maxBytes, maxLines } = services.output.limits
  // A character is at most three bytes and ends at most one line: most messages are known to fit by their length.
  if (message.length * 3 <= maxBytes && message.length <= maxLines) return false
  return Bound.exceeds(message, services.output.limits)
}

/** A refusal whose message is past the bound, bounded as an output is: a preview, the whole kept as a managed output. */
export const boundRefusal = (services: Services, call: Received, settlement: Settlement.Info) => {
  const text = settlement.error!.message
  const projected = { content: [{ type: "text" as const, text }], structured: undefined, location: services.location, session: call.sessionID }
  return services.output.bound(projected).pipe(
    Effect.map((bounded): Settlement.Info => {
      const preview = bounded.content.map((part) => (part.type === "text" ? part.text : "")).join("\n")
      return { ...settlement, content: bounded.content, error: { ...settlement.error!, message: preview }, outputs: bounded.outputs }
    }),
    Effect.mapError(boundFailed),
  )
}

// Persist: the call's record (DESIGN §2 law 12).

export const keyOf = (services: Services, call: Call): Store.Key => ({
  location: services.location,
  sessionID: call.sessionID,
  toolCallID: call.toolCallID,
})

export const recordFailed = (call: Call) => operational(`Could not record the settlement of ${call.name} (${call.toolCallID})`)

/**
 * Records the settlement of a call this process ran whose record is gone (a retention sweep took it while this
 * process was held up past its lease): as new, unless a settler that waited for it recorded it first (`interrupted`),
 * whose record then stands, as another's always does. Either way every settle of the call answers one settlement.
 */
export const recordGone = (services: Services, call: Received, settlement: Settlement.Info): Effect.Effect<Settled, OperationalError> =>
  Effect.gen(function* () {
    const key = keyOf(services, call)
    const absent = { state: "absent", agent: call.agent, details: call.details } as const
    if (yield* services.store.settle(key, settlement, absent).pipe(Effect.mapError(recordFailed(call)))) return { settlement, replayed: false }
    const known = yield* services.store.lookup(key).pipe(Effect.mapError(operational("Could not read the settlement store")))
    return known?.state === "settled" ? { settlement: known.settlement, replayed: false, superseded: true } : { settlement, replayed: false }
  })

// Admission: everything before the tool runs.

/** Resolve: the tool the turn's catalog captured for the call's name, or why there is none. */
export const resolve = (catalog: Registry.Catalog, call: Call): Internal.Record | Refused => {
  const resolution = catalog.resolve(call.name)
  if (resolution._tag === "Unknown") {
    const equivalent = Hints.equivalent(call.name, (name) => catalog.resolve(name)._tag !== "Unknown")
    const hint =
      equivalent !== undefined
        ? ` core's tool for that is "${equivalent}": call it instead (its input schema is in the tool list).`
        : resolution.suggestions.length === 0
          ? " Use one of the tools you were offered."
          : ` Did you mean ${resolution.suggestions.map((name) => `"${name}"`).join(", ")}?`
    // The name as the settler keeps it: a longer one than any tool's is cut (CallKey.named), so that a model's
    // megabytes of name do not go back whole into its context.
    return refused(call, "unknown", `Unknown tool "${call.name}"; nothing ran.${hint}`)
  }
  if (resolution._tag === "Stale") {
    return refused(
      call,
      "stale",
      `The tool "${call.name}" changed since this turn's tool list was made; nothing ran. Use the current tool list.`,
    )
  }
  // Captured: from here on, registry changes do not affect this call.
  return Internal.get(resolution.tool)!
}

/**
 * Decode: the input by the tool's input schema (the codec boundary, DESIGN §2 law 2). An input nested deeper than
 * Nesting.MAX_DEPTH is refused first, as every edge that parses JSON refuses it: no decoding, validator or tool
 * overflows its stack on it (an MCP client sends it already parsed). A wide one is described by its first problem
 * (Nesting.describing).
 */
export const decode = (call: Call, tool: Internal.Record): Effect.Effect<unknown, Schema.SchemaError> =>
  Nesting.tooDeep(call.input)
    ? Effect.fail(new Schema.SchemaError(new SchemaIssue.InvalidValue({ message: `the input holds ${Nesting.TOO_DEEP}` }, call.input)))
    : Schema.decodeUnknownEffect(tool.inputJson)(call.input, Nesting.describing(call.input, Internal.INPUT_OPTIONS))

/** The decoded input, or why it does not fit. */
export const inputOf = (call: Call, tool: Internal.Record, exit: Exit.Exit<unknown, Schema.SchemaError>): unknown => {
  if (Exit.isSuccess(exit)) return exit.value
  const error = Cause.findError(exit.cause)
  if (error._tag === "Failure") return new Halted(error.failure)
  return refused(
    call,
    "invalid_input",
    `Invalid input for ${call.name}; nothing ran:\n` +
      `${Hints.describeIssues(error.success, Hints.misspelledKeys(call.input, tool.inputSchema))}\nFix the input to match ` +
      `the tool's input schema and call it again.`,
  )
}

/**
 * Permission: authorization happens at settlement whatever the catalog showed (DESIGN §2 law 9): the tool's action,
 * as a whole, for the calling agent, unless the tool checks each path or command itself. An ask waits here for a
 * reply; nothing has run yet.
 */
export const authorize = (permission: Permission.Interface, call: Call, tool: Internal.Record) =>
  tool.checksPermissions
    ? Effect.void
    : permission.authorize(
        {
          sessionID: call.sessionID,
          agent: call.agent,
          source: { messageID: call.assistantMessageID, callID: call.toolCallID },
          metadata: { tool: call.name },
        },
        checksOf(call),
      )

/** What a call is authorized for, as a whole: its tool's action on anything. */
export const checksOf = (call: Call): ReadonlyArray<Permission.Check> => [
  { action: Rule.actionOf(call.name), resources: ["*"], save: ["*"] },
]

/** Why authorization stops the call; `undefined`: allowed. */
export const deniedBy = (call: Call, exit: Exit.Exit<unknown, unknown>): Stop | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const error = Cause.findError(exit.cause)
  if (error._tag === "Failure") return new Halted(error.failure)
  return refusalOf(call, error.success) ?? new Halted(Cause.die(error.success))
}

/** A permission refusal, met at admission or from the tool's own check, as the settlement it records. */
export const refusalOf = (call: Call, refusal: unknown): Refused | undefined => {
  if (refusal instanceof Permission.Denied) return refused(call, "denied", refusal.message)
  if (refusal instanceof Permission.Rejected) return refused(call, "failure", refusal.message)
  if (refusal instanceof Permission.Declined) return new Refused(Settlement.declined(call.name, call.toolCallID, refusal))
  return undefined
}

/**
 * The before hooks (DESIGN §12), met once the call is authorized: the input they leave (checked again by the tool's
 * schema), or a plugin's denial as the settlement to record; a hook's failure is operational. Answered at once (a
 * done Effect) when no hook applies or every hook answered at once.
 */
export const before = (services: Services, call: Call, tool: Internal.Record, input: unknown): Effect.Effect<unknown, OperationalError> => {
  const { hooks } = services
  if (hooks === undefined || !hooks.has(call.name, "tool.execute.before")) return Effect.succeed(input)
  const ran = Hooks.before(hooks, call.name, tool, input)
  if (!Hooks.isDone(ran)) return ran.pipe(Effect.mapError(hookFailed), Effect.map((outcome) => verdictOf(call, outcome)))
  return ran.value instanceof Hooks.Denial ? Effect.succeed(verdictOf(call, ran.value)) : ran
}

/** What the before hooks answered: the input they left, or their denial as the settlement to record. */
const verdictOf = (call: Call, outcome: unknown): unknown =>
  outcome instanceof Hooks.Denial ? refused(call, "denied", outcome.message) : outcome

/**
 * Records `cancelled` for a call interrupted before it began running (while asked for permission, waiting for
 * another owner, or in a before hook), unless something else is recorded for it by now: that record stands.
 */
export const cancelledBeforeStart = (services: Services, call: Received) =>
  services.store
    .settle(keyOf(services, call), Settlement.cancelledBeforeStart(call.name, call.toolCallID), {
      state: "absent",
      agent: call.agent,
      details: call.details,
    })
    .pipe(Effect.mapError(recordFailed(call)), Effect.asVoid)

// Performing: what an admitted call does once its intent is recorded.

/**
 * An update as a tool reported it, checked before any host sees it (a tool file is JavaScript, whatever its types
 * say): `{ message }` with a string message, and `metadata` only where it is a plain object JSON can carry (a
 * BigInt, a cycle or a function in it would break the host's event stream); a copy, so the tool changing its object
 * later changes nothing shown; bounded (MAX_PROGRESS_CHARS). Anything else is dropped: a tool's progress is never a
 * reason its call fails.
 */
const progressOf = (update: unknown): Tool.Progress | undefined => {
  if (typeof update !== "object" || update === null) return undefined
  const { message: given, metadata } = update as { readonly message?: unknown; readonly metadata?: unknown }
  if (typeof given !== "string") return undefined
  const message = given.length > MAX_PROGRESS_CHARS ? `${given.slice(0, MAX_PROGRESS_CHARS)}…` : given
  if (metadata === undefined || typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) return { message }
  try {
    const text = JSON.stringify(metadata)
    return text.length > MAX_PROGRESS_CHARS * 8 ? { message } : { message, metadata: JSON.parse(text) as Readonly<Record<string, unknown>> }
  } catch {
    return { message }
  }
}

/**
 * The longest progress message shown (cut, with `…`), and an eighth of the most JSON its metadata may make (or it is
 * left out): each update is kept for every event reader that has yet to read it (4,096 of them at most), and an MCP
 * server's updates of 10 MB each held gigabytes in `core serve` behind one slow reader.
 */
const MAX_PROGRESS_CHARS = 4_000

/** The context a call's tool gets: the runner's ids exactly, and its progress reporter (DESIGN §2 law 3). */
export const contextOf = (call: Call, options: Options | undefined): Tool.Context => {
  const onProgress = options?.onProgress
  return {
    sessionID: call.sessionID,
    agent: call.agent,
    assistantMessageID: call.assistantMessageID,
    toolCallID: call.toolCallID,
    progress:
      onProgress === undefined
        ? () => Effect.void
        : (update) =>
            Effect.suspend(() => {
              const checked = progressOf(update)
              return checked === undefined ? Effect.void : onProgress(checked)
            }),
  }
}

/** Execute: the captured tool's Effect, called when it runs; an execute that gives no Effect fails operationally. */
export const executing = (call: Call, admitted: Admitted, context: Tool.Context) =>
  Effect.andThen(
    // Preparing is over: a tool that waits on the world lets the next call be prepared (./turn).
    Turn.startExecuting(admitted.tool),
    Effect.suspend((): Effect.Effect<unknown, Tool.Failure | Permission.Refusal | OperationalError> => {
      const called = Execution.call(call.name, admitted.tool, admitted.input, context)
      return called._tag === "Effect"
        ? called.effect
        : Effect.fail(new OperationalError({ message: called.message, cause: called.cause }))
    }),
  )

/**
 * The tool's output; or its refusals, failures and a cancellation as the settlement to record; anything else is
 * operational.
 */
export const outputOf = (call: Call, exit: Exit.Exit<unknown, unknown>, stopping: Stopping.Record): unknown => {
  if (Exit.isSuccess(exit)) return exit.value
  if (Cause.hasInterruptsOnly(exit.cause)) {
    // Its change was made in full as the cancel came: that is what the call did.
    if (stopping.finished !== undefined) return stopping.finished.output
    // Stopped in its own permission checks, before it did anything (waiting for a person's answer, say).
    if (stopping.unstarted && stopping.notes.length === 0) return new Refused(Settlement.cancelledBeforeStart(call.name, call.toolCallID))
    return new Refused(Settlement.runnerOutcome(call.name, call.toolCallID, "cancelled", stopping.notes))
  }
  const error = Cause.findError(exit.cause)
  if (error._tag === "Failure") return new Halted(error.failure)
  if (error.success instanceof Tool.Failure) return refused(call, "failure", error.success.message)
  // The tool's own permission check refused (DESIGN §2 law 9): settled like a refusal at admission.
  const refusal = refusalOf(call, error.success)
  if (refusal !== undefined) return refusal
  if (error.success instanceof OperationalError) return new Halted(Cause.fail(error.success))
  return new Halted(
    Cause.fail(
      new OperationalError({
        message: `${call.name} failed with an unexpected error (only Tool.Failure is model-visible)${Execution.whereOf(error.success)}`,
        cause: error.success,
      }),
    ),
  )
}

/** A tool's output as encoded and projected: what the hooks after it and bounding start from. */
export interface Encoded {
  /** The JSON encoding: the structured output (what the output JSON Schema describes). */
  readonly structured: unknown
  /** The content and structured output the projection made of it. */
  readonly projected: { readonly content: ReadonlyArray<Tool.Content>; readonly structured: unknown }
}

/**
 * Encode: the output by the tool's output schema (the codec boundary). The JSON encoding is the structured output;
 * toModelOutput gets the output encoded by the tool's own schema, as its type says.
 */
export const encode = (tool: Internal.Record, output: unknown) =>
  Effect.all([
    Schema.encodeEffect(tool.outputJson)(output, OUTPUT_OPTIONS),
    tool.toModelOutput === undefined ? Effect.succeed(undefined) : Schema.encodeEffect(tool.output)(output, OUTPUT_OPTIONS),
  ])

/** Project: the encodings as content (toModelOutput gets the decoded input), or why the output cannot be returned. */
export const encodedOf = (
  call: Call,
  admitted: Admitted,
  exit: Exit.Exit<readonly [unknown, unknown], Schema.SchemaError>,
): Encoded | Stop => {
  if (Exit.isFailure(exit)) {
    const error = Cause.findError(exit.cause)
    if (error._tag === "Failure") return new Halted(error.failure)
    return refused(
      call,
      "invalid_output",
      `${call.name} produced output that does not match its output schema, so it was not returned:\n` +
        `${Hints.describeIssues(error.success)}\nThis is a defect in the tool, not in the input.`,
    )
  }
  const [structured, encoded] = exit.value
  const projected = Projection.project(admitted.tool, admitted.input, structured, encoded)
  if (Exit.isSuccess(projected)) return { structured, projected: projected.value }
  const problem = Exit.findErrorOption(projected)
  return refused(
    call,
    "invalid_output",
    `${call.name}'s toModelOutput returned something that is not content${problem._tag === "Some" ? `: ${problem.value}` : ""}; this is a defect in the tool.`,
  )
}

/**
 * The after hooks over the projection: the content the model reads (a hook may replace it); a hook's failure is
 * operational. Answered at once (a done Effect) when no hook applies or every hook answered at once.
 */
export const after = (services: Services, call: Call, input: unknown, encoded: Encoded): Effect.Effect<ReadonlyArray<Tool.Content>, OperationalError> => {
  const { hooks } = services
  const { content } = encoded.projected
  if (hooks === undefined || !hooks.has(call.name, "tool.execute.after")) return Effect.succeed(content)
  const ran = Hooks.after(hooks, call.name, { input, output: encoded.structured, content }, Projection.decodeContent)
  return Hooks.isDone(ran) ? ran : ran.pipe(Effect.mapError(hookFailed))
}

/**
 * How long after hooks still running are waited for once their call is cancelled (the tool has run: what they
 * answer is what the call settles with): a hook that never ends (a request nobody answers) left the call, and a
 * sidecar shutting down, waiting for good. As long as a command is given to end once told to.
 */
export const AFTER_HOOK_GRACE_MS = 3_000

/**
 * The exit of after hooks running in `hooks`, awaited interruptibly (`restore`): interrupted, they are given
 * AFTER_HOOK_GRACE_MS more to end, then stopped.
 */
export const hooksEnded = <A, E>(
  hooks: Fiber.Fiber<A, E>,
  restore: <X, Y, Z>(effect: Effect.Effect<X, Y, Z>) => Effect.Effect<X, Y, Z>,
): Effect.Effect<Exit.Exit<A, E>> =>
  Effect.flatMap(Effect.exit(restore(Fiber.await(hooks))), (waited) =>
    Exit.isSuccess(waited)
      ? Effect.succeed(waited.value)
      : Effect.flatMap(Effect.timeoutOption(Fiber.await(hooks), AFTER_HOOK_GRACE_MS), (ended) =>
          Option.isSome(ended) ? Effect.succeed(ended.value) : Effect.andThen(Fiber.interrupt(hooks), Fiber.await(hooks)),
        ),
  )

/**
 * What the after hooks left, once they ended: the content; or, where the call was cancelled and they did not end
 * within the grace (after the tool had run: its output is not shown), `cancelled`; a hook's failure is operational.
 */
export const hookedOf = (call: Call, exit: Exit.Exit<ReadonlyArray<Tool.Content>, OperationalError>): ReadonlyArray<Tool.Content> | Stop => {
  if (Exit.isSuccess(exit)) return exit.value
  if (Cause.hasInterruptsOnly(exit.cause)) return new Refused(Settlement.runnerOutcome(call.name, call.toolCallID, "cancelled"))
  return new Halted(exit.cause)
}

/** Images: every image part fitted to the image limits (the turn's provider's, where tighter) before bounding. */
export const show = (services: Services, content: ReadonlyArray<Tool.Content>, options: Options | undefined) =>
  services.output.images(content, options?.images)

/** The content with its images fitted; an image that cannot be shown fails the call. */
export const shownOf = (call: Call, exit: Exit.Exit<ReadonlyArray<Tool.Content>, { readonly message: string }>) => {
  if (Exit.isSuccess(exit)) return exit.value
  const error = Cause.findError(exit.cause)
  if (error._tag === "Failure") return new Halted(error.failure)
  return refused(call, "failure", error.success.message)
}

/**
 * Bound: the output bounded (DESIGN §2 law 10), kept in managed outputs where it does not fit. Content a hook
 * replaced is all the model may read: the structured output it did not see through would reach the model by
 * another road (MCP structuredContent, a host showing `structured`), so it goes.
 */
export const bound = (
  services: Services,
  call: Received,
  admitted: Admitted,
  encoded: Encoded,
  content: ReadonlyArray<Tool.Content>,
  replaced: boolean,
) =>
  services.output.bound({
    content,
    structured: replaced ? undefined : encoded.projected.structured,
    lossy: Internal.lostCapture(admitted.tool, encoded.structured),
    location: services.location,
    session: call.sessionID,
  })

/** Bounding failed: operational (the output could not be kept). */
export const boundFailed = (error: { readonly message: string }) => new OperationalError({ message: error.message, cause: error })

/** Persist: the settlement of a call that ran and returned, as bounded. */
export const succeeded = (call: Call, bounded: Output.Bounded): Settlement.Info => ({
  tool: call.name,
  callID: call.toolCallID,
  status: "success",
  content: bounded.content,
  structured: bounded.structured as Schema.Json,
  outputs: bounded.outputs,
})
