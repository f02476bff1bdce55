export * as Settler from "./settler"

// Settles tool calls through a captured catalog: replay → resolve → decode → permission → execute → encode →
// project → bound → persist (DESIGN §2 laws 2, 6–10, 12), one named step each. Model-visible outcomes become settlements; defects and storage
// failures stay operational and are never turned into a result. Interruption records `cancelled`.

import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Image } from "../output/image"
import { Output } from "../output/output"
import { Permission } from "../permission/permission"
import { Rule } from "../permission/rule"
import { Registry } from "../registry/registry"
import { Store } from "../store/store"
import type { Definition } from "../tool/definition"
import * as Internal from "../tool/internal"
import { Tool } from "../tool/tool"
import { Execution } from "./execution"
import { Hints } from "./hints"
import { Hooks } from "./hooks"
import { Projection } from "./projection"
import { Replay } from "./replay"
import { Spans } from "./spans"
import { CallKey } from "../contract/call-key"
import { Settlement } from "../contract/settlement"
import { Stopping } from "./stopping"

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
}

export interface Settled {
  readonly settlement: Settlement.Info
  /** True when the call was already recorded and nothing ran. */
  readonly replayed: boolean
}

export interface Materialization {
  readonly definitions: ReadonlyArray<Definition.Definition>
  readonly settle: (call: Call, options?: Options) => Effect.Effect<Settled, OperationalError>
  /** What a name settles to through this turn, as `settle` resolves it (for explaining a call without making it). */
  readonly resolve: Registry.Catalog["resolve"]
}

export interface Interface {
  /** Captures this turn's catalog; `rules` hide tools whose action they wholly deny. */
  readonly materialize: (rules?: Rule.Ruleset) => Effect.Effect<Materialization>
  /** What settling `call` now would answer from its record, read as the settler reads it (see Replay.of). */
  readonly peek: (call: Call) => Effect.Effect<Replay.Verdict, OperationalError>
  /**
   * What `call` settled as when its settle was interrupted: what the settler recorded for it (`cancelled`, also
   * before it began, or the outcome that won the race); `undefined` when nothing is recorded for this very call.
   */
  readonly interrupted: (call: Call) => Effect.Effect<Settlement.Info | undefined, OperationalError>
}

export class Service extends Context.Service<Service, Interface>()("core/Settler") {}

const OUTPUT_OPTIONS = { errors: "all", reportInput: true } as const
/** How often a call running in another process is checked for its settlement. */
const OWNER_POLL_MS = 50

/** Another settler recorded or began the call first. */
const CONFLICT = Symbol("Settler.conflict")

/** A call as this settler handles it: with what its record keeps of it, and its trace when it is traced. */
type Received = Call & {
  readonly details: Store.Details
  readonly trace: Spans.Trace | undefined
}

/** An admitted call: its captured tool and decoded input. */
interface Admitted {
  readonly _tag: "Admitted"
  readonly tool: Internal.Record
  readonly input: unknown
}

/**
 * Why a step stops the call: a settlement to record for it (Refused), or a failure that is no settlement (Halted).
 * Steps hand back their exit, read by a pure function into a value or a Stop: settles are hot, and a step of the
 * fiber per step (a flatMap, a nested generator) costs more than the reading.
 */
abstract class Stop {}

/** The settlement to record for a call that goes no further. */
class Refused extends Stop {
  constructor(readonly settlement: Settlement.Info) {
    super()
  }
}

/** A failure that is not the tool's result (a defect, an operational failure, an interruption), failed as it came. */
class Halted extends Stop {
  constructor(readonly cause: Cause.Cause<OperationalError>) {
    super()
  }
}

/** The Location's services every step reads, bound once when the settler is built. */
interface Services {
  readonly store: Store.Interface
  readonly output: Output.Interface
  readonly permission: Permission.Interface
  /** The Location's plugin hooks (DESIGN §12), met after the stale and permission checks, before bounding. */
  readonly hooks: Hooks.Chain | undefined
  /** A call belongs to its Location (the permission service's project): the same ids elsewhere are another call. */
  readonly location: string
}

const reasonOf = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  return error instanceof Error ? error.message : String(error)
}
const operational = (message: string) => (cause: unknown) => new OperationalError({ message, cause })
const hookFailed = (error: Hooks.HookError) => new OperationalError({ message: error.message, cause: error })
const refused = (call: Call, kind: Settlement.ErrorKind, message: string) =>
  new Refused(Settlement.error(call.name, call.toolCallID, kind, message))
/** Nothing recorded: the call goes on. */
const NOT_RECORDED = Effect.succeed(undefined)

// Persist: the call's record (DESIGN §2 law 12). A call that never began is recorded only if still absent; a call
// this process began, over its own intent.

const keyOf = (services: Services, call: Call): Store.Key => ({
  location: services.location,
  sessionID: call.sessionID,
  toolCallID: call.toolCallID,
})

const lookup = (services: Services, call: Call) =>
  services.store.lookup(keyOf(services, call)).pipe(Effect.mapError(operational("Could not read the settlement store")))

const recordFailed = (call: Call) => operational(`Could not record the settlement of ${call.name} (${call.toolCallID})`)

/**
 * Records the settlement of a call that never began (unknown, stale, invalid input, refused, or the replay of an
 * unsettled one), only if the call is still as `expected`; CONFLICT when another settler got there first.
 */
const recordNew = (
  services: Services,
  call: Received,
  settlement: Settlement.Info,
  expected: Store.Expected = { state: "absent", agent: call.agent, details: call.details },
  replayed = false,
) =>
  Spans.recorded(call.trace, "Settler.record", services.store.settle(keyOf(services, call), settlement, expected), Spans.RECORD, "settlement").pipe(
    Effect.mapError(recordFailed(call)),
    Effect.map((recorded): Settled | typeof CONFLICT => (recorded ? { settlement, replayed } : CONFLICT)),
  )

/** Records the settlement of a call this process ran; if another record won meanwhile, that one stands. */
const recordOwned = (services: Services, call: Received, settlement: Settlement.Info) =>
  Effect.gen(function* () {
    const owned = services.store.settle(keyOf(services, call), settlement, { state: "owned" })
    const recorded = Spans.recorded(call.trace, "Settler.record", owned, Spans.RECORD, "settlement")
    if (yield* recorded.pipe(Effect.mapError(recordFailed(call)))) {
      return { settlement, replayed: false }
    }
    const known = yield* lookup(services, call)
    return known?.state === "settled" ? { settlement: known.settlement, replayed: true } : { settlement, replayed: false }
  })

/** Records the intent to run a call: false when the call is already known (another settler got there first). */
const recordIntent = (services: Services, call: Received) =>
  Spans.recorded(
    call.trace,
    "Settler.record",
    services.store.begin(keyOf(services, call), call.name, call.agent, call.details),
    Spans.RECORD,
    "intent",
  ).pipe(Effect.mapError(operational("Could not record the call")))

/**
 * Records `cancelled` for a call interrupted before it began running (while asked for permission, or while
 * waiting for another owner), unless something else is recorded for it by now: that record stands.
 */
const recordCancelledBeforeStart = (services: Services, call: Received) =>
  services.store
    .settle(keyOf(services, call), Settlement.runnerOutcome(call.name, call.toolCallID, "cancelled"), {
      state: "absent",
      agent: call.agent,
      details: call.details,
    })
    .pipe(Effect.mapError(recordFailed(call)), Effect.asVoid)

// Admission: everything before the tool runs.

/** The record step from a fresh look at the call's record (after waiting for another settler). */
const replayed = (services: Services, call: Received): Effect.Effect<Settled | typeof CONFLICT | undefined, OperationalError> =>
  Effect.flatMap(lookup(services, call), (known) => replayOf(services, call, Replay.of(known, call)))

/**
 * The record step: a recorded call replays (settled, or as interrupted when it never settled) and runs nothing; one
 * recorded for another agent or tool is a conflict; one another settler runs is waited for. `undefined`: none is
 * recorded, the call goes on.
 */
const replayOf = (
  services: Services,
  call: Received,
  verdict: Replay.Verdict,
): Effect.Effect<Settled | typeof CONFLICT | undefined, OperationalError> => {
  switch (verdict._tag) {
    case "Absent":
      return NOT_RECORDED
    case "Conflict":
      // Not recorded: the record is the other's.
      return Effect.succeed({ settlement: verdict.settlement, replayed: false })
    case "Settled":
      return Effect.succeed({ settlement: verdict.settlement, replayed: true })
    case "Interrupted":
      return recordNew(services, call, verdict.settlement, verdict.expected, true)
    case "Running":
      // Another settler is running this very call: wait for its settlement rather than run it twice.
      return Effect.sleep(OWNER_POLL_MS).pipe(Effect.andThen(replayed(services, call)))
  }
}

/** Resolve: the tool the turn's catalog captured for the call's name, or why there is none. */
const resolve = (catalog: Registry.Catalog, call: Call): Internal.Record | Refused => {
  const resolution = catalog.resolve(call.name)
  if (resolution._tag === "Unknown") {
    const equivalent = Hints.equivalent(call.name, (name) => catalog.resolve(name)._tag !== "Unknown")
    const hint =
      equivalent !== undefined
        ? ` core's tool for that is "${equivalent}": call it instead (its input schema is in the tool list).`
        : resolution.suggestions.length === 0
          ? " Use one of the tools in this turn's tool list."
          : ` Did you mean ${resolution.suggestions.map((name) => `"${name}"`).join(", ")}?`
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

/** Decode: the input by the tool's input schema (the codec boundary, DESIGN §2 law 2). */
const decode = (call: Received, tool: Internal.Record) =>
  Effect.exit(Schema.decodeUnknownEffect(tool.inputJson)(call.input, Internal.INPUT_OPTIONS))

/** The decoded input, or why it does not fit. */
const inputOf = (call: Call, tool: Internal.Record, exit: Exit.Exit<unknown, Schema.SchemaError>): unknown => {
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
const authorize = (permission: Permission.Interface, call: Received, tool: Internal.Record) =>
  Effect.exit(
    tool.checksPermissions
      ? Effect.void
      : permission.authorize(
          {
            sessionID: call.sessionID,
            agent: call.agent,
            source: { messageID: call.assistantMessageID, callID: call.toolCallID },
            metadata: { tool: call.name },
          },
          [{ action: Rule.actionOf(call.name), resources: ["*"], save: ["*"] }],
        ),
  )

/** Why authorization stops the call; `undefined`: allowed. */
const deniedBy = (call: Call, exit: Exit.Exit<void, unknown>): Stop | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const error = Cause.findError(exit.cause)
  if (error._tag === "Failure") return new Halted(error.failure)
  return refusalOf(call, error.success) ?? new Halted(Cause.die(error.success))
}

/** A permission refusal, met at admission or from the tool's own check, as the settlement it records. */
const refusalOf = (call: Call, refusal: unknown): Refused | undefined => {
  if (refusal instanceof Permission.Denied) return refused(call, "denied", refusal.message)
  if (refusal instanceof Permission.Rejected) return refused(call, "failure", refusal.message)
  if (refusal instanceof Permission.Declined) return new Refused(Settlement.declined(call.name, call.toolCallID, refusal))
  return undefined
}

/**
 * The before hooks: the input they leave (checked again by the tool's schema), or a plugin's denial; answered at
 * once (a done Effect) when no hook runs.
 */
const before = (hooks: Hooks.Chain | undefined, call: Call, tool: Internal.Record, input: unknown) => {
  if (hooks === undefined || !hooks.has(call.name, "tool.execute.before")) return Effect.succeed(input)
  const ran = Hooks.before(hooks, call.name, tool, input)
  const verdict = (outcome: Hooks.BeforeOutcome) =>
    outcome._tag === "Denied" ? refused(call, "denied", outcome.message) : outcome.input
  return Hooks.isDone(ran) ? Effect.succeed(verdict(ran.value)) : ran.pipe(Effect.mapError(hookFailed), Effect.map(verdict))
}

/**
 * Everything before the tool runs: replay a recorded call, reject unknown, stale and invalid calls and refused ones
 * (recording those settlements), or admit the call with its captured tool and decoded input.
 */
const admit: (
  services: Services,
  catalog: Registry.Catalog,
  call: Received,
) => Effect.Effect<Settled | Admitted | typeof CONFLICT, OperationalError> = Effect.fnUntraced(function* (
  services,
  catalog,
  call,
) {
  const verdict = Replay.of(yield* lookup(services, call), call)
  if (verdict._tag !== "Absent") {
    const recorded = yield* replayOf(services, call, verdict)
    if (recorded !== undefined) return recorded
  }
  const tool = resolve(catalog, call)
  if (tool instanceof Stop) return yield* stopNew(services, call, tool)
  const { trace } = call
  // Each step's span is recorded from two readings around it, once it has ended (nothing is read untraced).
  let started = Spans.now(trace)
  const decodedExit = yield* decode(call, tool)
  // Spans say what happened, never with what: messages here quote the input, which may hold secrets.
  if (trace !== undefined) trace.step("Settler.decode", started, performance.now(), undefined, "core.input.valid", Exit.isSuccess(decodedExit))
  const decoded = inputOf(call, tool, decodedExit)
  if (decoded instanceof Stop) return yield* stopNew(services, call, decoded)
  started = Spans.now(trace)
  const authorized = yield* authorize(services.permission, call, tool)
  if (trace !== undefined) {
    const decision = Spans.decisionOf(tool.checksPermissions, authorized)
    trace.step("Settler.permission", started, performance.now(), undefined, "core.permission.decision", decision)
  }
  const denied = deniedBy(call, authorized)
  if (denied !== undefined) return yield* stopNew(services, call, denied)
  // Hooks that answered at once (no-ops, most of them, or none) cost no step of the fiber.
  const hooked = before(services.hooks, call, tool, decoded)
  const input = Hooks.isDone(hooked) ? hooked.value : yield* hooked
  if (input instanceof Stop) return yield* stopNew(services, call, input)
  return { _tag: "Admitted", tool, input } satisfies Admitted
})

/** Ends a call stopped before it began: its refusal recorded as new (if still absent), or its failure failed. */
const stopNew = (services: Services, call: Received, stop: Stop) =>
  stop instanceof Refused ? recordNew(services, call, stop.settlement) : Effect.failCause((stop as Halted).cause)

/** Ends a call this process began: its refusal recorded over its intent, or its failure failed. */
const stopOwned = (services: Services, call: Received, stop: Stop) =>
  stop instanceof Refused ? recordOwned(services, call, stop.settlement) : Effect.failCause((stop as Halted).cause)

// Performing: what an admitted call does once its intent is recorded.

/**
 * Execute: the captured tool, interruptible by `restore` alone. What the call did while being cancelled, should it
 * be, goes to `stopping` (Stopping: never part of the tool's context).
 */
const execute = (
  call: Received,
  admitted: Admitted,
  options: Options | undefined,
  restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
  stopping: Array<string>,
) => {
  const context: Tool.Context = {
    sessionID: call.sessionID,
    agent: call.agent,
    assistantMessageID: call.assistantMessageID,
    toolCallID: call.toolCallID,
    progress: (update) => (options?.onProgress === undefined ? Effect.void : options.onProgress(update)),
  }
  return Effect.exit(
    restore(
      Effect.suspend((): Effect.Effect<unknown, Tool.Failure | Permission.Refusal | OperationalError> => {
        const called = Execution.call(call.name, admitted.tool, admitted.input, context)
        return called._tag === "Effect"
          ? called.effect
          : Effect.fail(new OperationalError({ message: called.message, cause: called.cause }))
      }),
    ).pipe(Effect.provideService(Stopping.Notes, stopping)),
  )
}

/**
 * The tool's output; or its refusals, failures and a cancellation as the settlement to record; anything else is
 * operational.
 */
const outputOf = (call: Call, exit: Exit.Exit<unknown, unknown>, stopping: ReadonlyArray<string>): unknown => {
  if (Exit.isSuccess(exit)) return exit.value
  if (Cause.hasInterruptsOnly(exit.cause)) {
    return new Refused(Settlement.runnerOutcome(call.name, call.toolCallID, "cancelled", stopping))
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
        message: `${call.name} failed with an unexpected error (only Tool.Failure is model-visible)`,
        cause: error.success,
      }),
    ),
  )
}

/** A tool's output as encoded and projected: what the hooks after it and bounding start from. */
interface Encoded {
  /** The JSON encoding: the structured output (what the output JSON Schema describes). */
  readonly structured: unknown
  /** The content and structured output the projection made of it. */
  readonly projected: { readonly content: ReadonlyArray<Tool.Content>; readonly structured: unknown }
}

/**
 * Encode: the output by the tool's output schema (the codec boundary). The JSON encoding is the structured output;
 * toModelOutput gets the output encoded by the tool's own schema, as its type says.
 */
const encode = (tool: Internal.Record, output: unknown) =>
  Effect.exit(
    Effect.all([
      Schema.encodeEffect(tool.outputJson)(output, OUTPUT_OPTIONS),
      tool.toModelOutput === undefined ? Effect.succeed(undefined) : Schema.encodeEffect(tool.output)(output, OUTPUT_OPTIONS),
    ]),
  )

/** Project: the encodings as content (toModelOutput gets the decoded input), or why the output cannot be returned. */
const encodedOf = (
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
    `${call.name}'s toModelOutput returned ${problem._tag === "Some" ? problem.value : "something that is not content"}; this is a defect in the tool.`,
  )
}

/**
 * The after hooks: the content the model reads (a hook may replace it); a hook's failure is operational. Answered
 * at once (a done Effect) when no hook runs.
 */
const after = (hooks: Hooks.Chain | undefined, call: Call, input: unknown, encoded: Encoded) => {
  const { content } = encoded.projected
  if (hooks === undefined || !hooks.has(call.name, "tool.execute.after")) return Effect.succeed(content)
  const ran = Hooks.after(hooks, call.name, { input, output: encoded.structured, content }, Projection.decodeContent)
  return Hooks.isDone(ran) ? Effect.succeed(ran.value) : ran.pipe(Effect.mapError(hookFailed))
}

/** Images: every image part fitted to the image limits (the turn's provider's, where tighter) before bounding. */
const show = (services: Services, content: ReadonlyArray<Tool.Content>, options: Options | undefined) =>
  Effect.exit(services.output.images(content, options?.images))

/** The content with its images fitted; an image that cannot be shown fails the call. */
const shownOf = (call: Call, exit: Exit.Exit<ReadonlyArray<Tool.Content>, { readonly message: string }>) => {
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
const bound = (
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
const boundFailed = (error: { readonly message: string }) => new OperationalError({ message: error.message, cause: error })

/** Persist: the settlement of a call that ran and returned, as bounded. */
const succeeded = (call: Call, bounded: Output.Bounded): Settlement.Info => ({
  tool: call.name,
  callID: call.toolCallID,
  status: "success",
  content: bounded.content,
  structured: bounded.structured as Schema.Json,
  outputs: bounded.outputs,
})

/**
 * Runs an admitted call whose intent this process recorded: execute → encode → project → bound → persist.
 * Runs uninterruptibly but for `execute` (made interruptible by `restore`): once the tool has returned, an
 * interruption waits until its result is settled and recorded, so a finished call is never recorded cancelled.
 */
const perform = Effect.fnUntraced(function* (
  services: Services,
  call: Received,
  admitted: Admitted,
  options: Options | undefined,
  restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
) {
  const { trace } = call
  const stopping: Array<string> = []
  let started = Spans.now(trace)
  const executed = yield* execute(call, admitted, options, restore, stopping)
  if (trace !== undefined) trace.step("Settler.execute", started, performance.now(), undefined, "core.execute.outcome", Spans.outcomeOf(executed))
  const output = outputOf(call, executed, stopping)
  if (output instanceof Stop) return yield* stopOwned(services, call, output)
  const encoded = encodedOf(call, admitted, yield* encode(admitted.tool, output))
  if (encoded instanceof Stop) return yield* stopOwned(services, call, encoded)
  const hooked = after(services.hooks, call, admitted.input, encoded)
  const content = Hooks.isDone(hooked) ? hooked.value : yield* hooked
  const shown = shownOf(call, yield* show(services, content, options))
  if (shown instanceof Stop) return yield* stopOwned(services, call, shown)
  started = Spans.now(trace)
  const bounding = bound(services, call, admitted, encoded, shown, content !== encoded.projected.content)
  if (trace === undefined) return yield* recordOwned(services, call, succeeded(call, yield* Effect.mapError(bounding, boundFailed)))
  const boundExit = yield* Effect.exit(bounding)
  const ended = performance.now()
  if (Exit.isFailure(boundExit)) {
    trace.step("Settler.bound", started, ended, boundExit.cause)
    return yield* Effect.mapError(Effect.failCause(boundExit.cause), boundFailed)
  }
  const bounded = boundExit.value
  trace.step(
    "Settler.bound",
    started,
    ended,
    undefined,
    "core.output.bytes",
    Spans.contentBytes(bounded.content),
    "core.output.bounded",
    bounded.outputs.length > 0,
    "core.output.managed_bytes",
    bounded.outputs.reduce((sum, kept) => sum + kept.bytes, 0),
  )
  return yield* recordOwned(services, call, succeeded(call, bounded))
})

/** One settle of a received call: admit, record the intent, perform; again through the record on a CONFLICT. */
const run = (
  services: Services,
  catalog: Registry.Catalog,
  call: Received,
  options: Options | undefined,
): Effect.Effect<Settled, OperationalError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      // Only admission (which may wait for a reply or another owner) and execute can be interrupted; the
      // settler records what an interruption before the start means, whoever called it.
      const admission = yield* Effect.exit(restore(admit(services, catalog, call)))
      if (Exit.isFailure(admission)) {
        if (Cause.hasInterruptsOnly(admission.cause)) yield* recordCancelledBeforeStart(services, call)
        return yield* Effect.failCause(admission.cause)
      }
      const admitted = admission.value
      // Another settler recorded or began the call meanwhile: settle through its record instead.
      if (admitted === CONFLICT) return CONFLICT
      if (!("_tag" in admitted)) return admitted
      if (!(yield* recordIntent(services, call))) return CONFLICT
      // From here this process owns the call; an operational failure is recorded with its reason (for
      // operators), so a retry replays it as interrupted instead of running it again.
      return yield* perform(services, call, admitted, options, restore).pipe(
        Effect.tapCause((cause) => Effect.ignore(services.store.fail(keyOf(services, call), reasonOf(cause)))),
      )
    }),
  ).pipe(
    Effect.flatMap((outcome) => (outcome === CONFLICT ? run(services, catalog, call, options) : Effect.succeed(outcome))),
  )

/** What an interrupted settle of `call` settled as, read from its record (Replay.settledAs). */
const interruptedOf = (services: Services, call: Call) =>
  Effect.map(lookup(services, call), (known) => Replay.settledAs(known, call))

/**
 * Settles calls through `catalog`; a duplicate of a call running in this settler (the same ids, agent and tool)
 * joins it through `running`. Asked by another agent or under another name, it meets the conflict in admit.
 */
const settleThrough = (
  services: Services,
  running: Map<string, Deferred.Deferred<Settled, OperationalError>>,
  catalog: Registry.Catalog,
) =>
  // Untraced unless a tracer that keeps spans is installed: settle is the per-call hot path, where a span costs
  // about as much as the pipeline (bench/trace.ts).
  Effect.fnUntraced(function* (call: Call, options?: Options) {
    const key = CallKey.of(services.location, call, call)
    const joined = running.get(key)
    if (joined !== undefined) return yield* Deferred.await(joined)
    const done = yield* Deferred.make<Settled, OperationalError>()
    running.set(key, done)
    // What operators see of the call (`core log`), whatever it settles as.
    const details: Store.Details = { messageID: call.assistantMessageID, startedAt: Date.now(), ...Store.recordInput(call.input) }
    const tracer = Spans.keepingTracer()
    const trace = tracer === undefined ? undefined : Spans.begin(call, details.inputBytes, tracer)
    const received: Received = { ...call, details, trace }
    const settling = trace === undefined ? run(services, catalog, received, options) : Spans.under(trace, run(services, catalog, received, options))
    return yield* settling.pipe(
      Effect.onExit((exit) =>
        Effect.gen(function* () {
          if (trace !== undefined) Spans.end(trace, exit)
          running.delete(key)
          // A joiner of an interrupted call gets what was recorded for it (cancelled, or the outcome that
          // won the race), not the interruption of a fiber that was not its own.
          if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) {
            const recorded = yield* Effect.exit(interruptedOf(services, call))
            if (Exit.isSuccess(recorded) && recorded.value !== undefined) {
              return yield* Deferred.succeed(done, { settlement: recorded.value, replayed: true })
            }
          }
          yield* Deferred.done(done, exit)
        }),
      ),
    )
  })

export const layer: Layer.Layer<
  Service,
  never,
  Registry.Service | Store.Service | Output.Service | Permission.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const registry = yield* Registry.Service
    const permission = yield* Permission.Service
    const services: Services = {
      store: yield* Store.Service,
      output: yield* Output.Service,
      permission,
      hooks: yield* Hooks.Current,
      location: permission.project,
    }
    const { hooks } = services
    const running = new Map<string, Deferred.Deferred<Settled, OperationalError>>()

    let hooked:
      | { readonly base: ReadonlyArray<Definition.Definition>; readonly version: number; readonly definitions: ReadonlyArray<Definition.Definition> }
      | undefined
    /** The last materialization without hooks: the registry keeps its catalog while nothing changes, and so does this. */
    let plain: { readonly catalog: Registry.Catalog; readonly materialization: Materialization } | undefined
    // Untraced: hosts that settle each call against the catalog current at the call (MCP) materialize per call.
    const materialize = Effect.fnUntraced(function* (rules?: Rule.Ruleset) {
      const catalog = registry.capture(rules)
      if (plain?.catalog === catalog && (hooks === undefined || hooks.size === 0)) return plain.materialization
      const settle = settleThrough(services, running, catalog)
      if (hooks !== undefined && hooks.size > 0) {
        // Adjusted now, so a failing tool.definition hook fails this turn (operationally), not a later read; kept
        // while neither the catalog nor the hooks change, as the registry keeps its catalog.
        const base = catalog.definitions
        if (hooked?.base !== base || hooked.version !== hooks.version) {
          const definitions = yield* Effect.try({
            try: () => Hooks.definitions(hooks, base),
            catch: (error) => error,
          }).pipe(Effect.orDie)
          hooked = { base, version: hooks.version, definitions }
        }
        return { definitions: hooked.definitions, settle, resolve: catalog.resolve }
      }
      const materialization: Materialization = {
        get definitions() {
          return catalog.definitions
        },
        settle,
        resolve: catalog.resolve,
      }
      plain = { catalog, materialization }
      return materialization
    })

    return Service.of({
      materialize,
      peek: (call) => Effect.map(lookup(services, call), (known) => Replay.of(known, call)),
      interrupted: (call) => interruptedOf(services, call),
    })
  }),
)
