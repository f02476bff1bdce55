export * as Settler from "./settler"

// Settles tool calls through a captured catalog: resolve → decode → execute → encode → project → bound →
// persist (DESIGN §2 laws 2, 6–8, 10, 12). Model-visible outcomes become settlements; defects and storage
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
import { Spans } from "./spans"
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

const reasonOf = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  return error instanceof Error ? error.message : String(error)
}
const operational = (message: string) => (cause: unknown) => new OperationalError({ message, cause })
const hookFailed = (error: Hooks.HookError) => new OperationalError({ message: error.message, cause: error })

export const layer: Layer.Layer<
  Service,
  never,
  Registry.Service | Store.Service | Output.Service | Permission.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const registry = yield* Registry.Service
    const store = yield* Store.Service
    const output = yield* Output.Service
    const permission = yield* Permission.Service
    // The Location's plugin hooks (DESIGN §12), met after the stale and permission checks, before bounding.
    const hooks = yield* Hooks.Current
    const running = new Map<string, Deferred.Deferred<Settled, OperationalError>>()
    // A call belongs to its Location (the permission service's project): the same ids elsewhere are another call.
    const location = permission.project
    const keyOf = (call: Call): Store.Key => ({ location, sessionID: call.sessionID, toolCallID: call.toolCallID })

    const lookup = (call: Call) =>
      store.lookup(keyOf(call)).pipe(Effect.mapError(operational("Could not read the settlement store")))

    const recordFailed = (call: Call) =>
      operational(`Could not record the settlement of ${call.name} (${call.toolCallID})`)

    /**
     * Records the settlement of a call that never began (unknown, stale, invalid input, or the replay of an
     * unsettled one), only if the call is still as `expected`; CONFLICT when another settler got there first.
     */
    const recordNew = (call: Received, settlement: Settlement.Info, expected: Store.Expected, replayed = false) =>
      Spans.step(call.trace, "Settler.record", store.settle(keyOf(call), settlement, expected), Spans.RECORD_SETTLEMENT).pipe(
        Effect.mapError(recordFailed(call)),
        Effect.map((recorded): Settled | typeof CONFLICT => (recorded ? { settlement, replayed } : CONFLICT)),
      )

    const rejectNew = (call: Received, kind: Settlement.ErrorKind, message: string) =>
      recordNew(call, Settlement.error(call.name, call.toolCallID, kind, message), {
        state: "absent",
        agent: call.agent,
        details: call.details,
      })

    /** Records the settlement of a call this process ran; if another record won meanwhile, that one stands. */
    const recordOwned = (call: Received, settlement: Settlement.Info) =>
      Effect.gen(function* () {
        const owned = store.settle(keyOf(call), settlement, { state: "owned" })
        const recorded = Spans.step(call.trace, "Settler.record", owned, Spans.RECORD_SETTLEMENT)
        if (yield* recorded.pipe(Effect.mapError(recordFailed(call)))) {
          return { settlement, replayed: false }
        }
        const known = yield* lookup(call)
        return known?.state === "settled" ? { settlement: known.settlement, replayed: true } : { settlement, replayed: false }
      })

    const failOwned = (call: Received, kind: Settlement.ErrorKind, message: string) =>
      recordOwned(call, Settlement.error(call.name, call.toolCallID, kind, message))

    /** A recorded call that is unsettled and no longer running replays as interrupted, never runs again. */
    const replayUnsettled = (call: Received, known: Store.Record & { state: "started" | "failed" }) =>
      recordNew(
        call,
        Settlement.error(
          known.tool,
          call.toolCallID,
          "interrupted",
          known.state === "failed"
            ? `${known.tool} (${call.toolCallID}) ran but core could not settle it (an operational failure). It may ` +
                `have taken effect; check before calling it again with a new call id.`
            : `${known.tool} (${call.toolCallID}) was started but never settled: core stopped while it ran. It may ` +
                `or may not have taken effect; check before calling it again with a new call id.`,
        ),
        known.state === "failed" ? { state: "failed" } : { state: "abandoned", owner: known.owner },
        true,
      )

    /**
     * A recorded call asked by another agent or under another tool name: an error that is not recorded (the
     * record is the other's) and never shows that record. Records kept before agents were recorded name none.
     */
    const conflictOf = (call: Call, known: Store.Record): Settled | undefined => {
      const other = Store.otherThan(known, call)
      if (other === undefined) return undefined
      return {
        settlement: Settlement.error(
          call.name,
          call.toolCallID,
          "conflict",
          `The call id ${JSON.stringify(call.toolCallID)} in this session was already used ${other === "tool" ? "for another tool" : "by another agent"}; nothing ran. ` +
            `Call ${call.name} again with a new call id.`,
        ),
        replayed: false,
      }
    }

    /**
     * Everything before the tool runs: replay a recorded call, reject unknown, stale and invalid calls (recording
     * those settlements), or admit the call with its captured tool and decoded input.
     */
    const admit: (
      catalog: Registry.Catalog,
      call: Received,
    ) => Effect.Effect<Settled | Admitted | typeof CONFLICT, OperationalError> = Effect.fnUntraced(function* (
      catalog,
      call,
    ) {
      let known = yield* lookup(call)
      const conflict = known === undefined ? undefined : conflictOf(call, known)
      if (conflict !== undefined) return conflict
      // Another settler is running this very call: wait for its settlement rather than run it twice.
      while (known?.state === "started" && known.running) {
        yield* Effect.sleep(OWNER_POLL_MS)
        known = yield* lookup(call)
      }
      if (known?.state === "settled") return { settlement: known.settlement, replayed: true }
      if (known !== undefined) return yield* replayUnsettled(call, known)

      const resolution = catalog.resolve(call.name)
      if (resolution._tag === "Unknown") {
        const equivalent = Hints.equivalent(call.name, (name) => catalog.resolve(name)._tag !== "Unknown")
        const hint =
          equivalent !== undefined
            ? ` core's tool for that is "${equivalent}": call it instead (its input schema is in the tool list).`
            : resolution.suggestions.length === 0
              ? " Use one of the tools in this turn's tool list."
              : ` Did you mean ${resolution.suggestions.map((name) => `"${name}"`).join(", ")}?`
        return yield* rejectNew(call, "unknown", `Unknown tool "${call.name}"; nothing ran.${hint}`)
      }
      if (resolution._tag === "Stale") {
        return yield* rejectNew(
          call,
          "stale",
          `The tool "${call.name}" changed since this turn's tool list was made; nothing ran. Use the current tool list.`,
        )
      }
      // Captured: from here on, registry changes do not affect this call.
      const tool = Internal.get(resolution.tool)!

      // Spans say what happened, never with what: messages here quote the input, which may hold secrets.
      const decoded = yield* Spans.step(
        call.trace,
        "Settler.decode",
        Effect.exit(Schema.decodeUnknownEffect(tool.inputJson)(call.input, Internal.INPUT_OPTIONS)),
        { after: (exit) => ({ "core.input.valid": Exit.isSuccess(exit) }) },
      )
      if (Exit.isFailure(decoded)) {
        const error = Cause.findError(decoded.cause)
        if (error._tag === "Failure") return yield* Effect.failCause(error.failure)
        return yield* rejectNew(
          call,
          "invalid_input",
          `Invalid input for ${call.name}; nothing ran:\n` +
            `${Hints.describeIssues(error.success, Hints.misspelledKeys(call.input, tool.inputSchema))}\nFix the input to match ` +
            `the tool's input schema and call it again.`,
        )
      }
      // Authorization happens at settlement whatever the catalog showed (DESIGN §2 law 9): the tool's action,
      // as a whole, for the calling agent, unless the tool checks each path or command itself. An ask waits
      // here for a reply; nothing has run yet.
      const authorized = yield* Spans.step(
        call.trace,
        "Settler.permission",
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
        ),
        { after: (exit) => ({ "core.permission.decision": Spans.decisionOf(tool.checksPermissions, exit) }) },
      )
      if (Exit.isFailure(authorized)) {
        const error = Cause.findError(authorized.cause)
        if (error._tag === "Failure") return yield* Effect.failCause(error.failure)
        const refusal = error.success
        if (refusal instanceof Permission.Denied) return yield* rejectNew(call, "denied", refusal.message)
        if (refusal instanceof Permission.Rejected) return yield* rejectNew(call, "failure", refusal.message)
        if (refusal instanceof Permission.Declined) {
          return yield* recordNew(call, Settlement.declined(call.name, call.toolCallID, refusal), {
            state: "absent",
            agent: call.agent,
            details: call.details,
          })
        }
        return yield* Effect.die(refusal)
      }
      if (hooks === undefined || !hooks.has(call.name, "tool.execute.before")) {
        return { _tag: "Admitted", tool, input: decoded.value } satisfies Admitted
      }
      const before = Hooks.before(hooks, call.name, tool, decoded.value)
      // Hooks that answered at once (no-ops, most of them) cost no step of the fiber: settles are hot.
      const hooked = Hooks.isDone(before) ? before.value : yield* before.pipe(Effect.mapError(hookFailed))
      if (hooked._tag === "Denied") return yield* rejectNew(call, "denied", hooked.message)
      return { _tag: "Admitted", tool, input: hooked.input } satisfies Admitted
    })

    /**
     * Runs an admitted call whose intent this process recorded: execute → encode → project → bound → persist.
     * Runs uninterruptibly but for `execute` (made interruptible by `restore`): once the tool has returned, an
     * interruption waits until its result is settled and recorded, so a finished call is never recorded cancelled.
     */
    const perform = Effect.fnUntraced(function* (
      call: Received,
      admitted: Admitted,
      options: Options | undefined,
      restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
    ) {
      const { tool } = admitted
      const context: Tool.Context = {
        sessionID: call.sessionID,
        agent: call.agent,
        assistantMessageID: call.assistantMessageID,
        toolCallID: call.toolCallID,
        progress: (update) => (options?.onProgress === undefined ? Effect.void : options.onProgress(update)),
      }
      // What the call did while being cancelled, should it be (Stopping: never part of the tool's context).
      const stopping: Array<string> = []
      const executed = yield* Spans.step(
        call.trace,
        "Settler.execute",
        Effect.exit(
          restore(
            Effect.suspend((): Effect.Effect<unknown, Tool.Failure | Permission.Refusal | OperationalError> => {
              const called = Execution.call(call.name, tool, admitted.input, context)
              return called._tag === "Effect"
                ? called.effect
                : Effect.fail(new OperationalError({ message: called.message, cause: called.cause }))
            }),
          ).pipe(Effect.provideService(Stopping.Notes, stopping)),
        ),
        { after: (exit) => ({ "core.execute.outcome": Spans.outcomeOf(exit) }) },
      )
      if (Exit.isFailure(executed)) {
        if (Cause.hasInterruptsOnly(executed.cause)) {
          return yield* recordOwned(call, Settlement.runnerOutcome(call.name, call.toolCallID, "cancelled", stopping))
        }
        const error = Cause.findError(executed.cause)
        if (error._tag === "Failure") return yield* Effect.failCause(error.failure)
        if (error.success instanceof Tool.Failure) return yield* failOwned(call, "failure", error.success.message)
        // The tool's own permission check refused (DESIGN §2 law 9): settled like a refusal at admission.
        if (error.success instanceof Permission.Denied) return yield* failOwned(call, "denied", error.success.message)
        if (error.success instanceof Permission.Rejected) return yield* failOwned(call, "failure", error.success.message)
        if (error.success instanceof Permission.Declined) {
          return yield* recordOwned(call, Settlement.declined(call.name, call.toolCallID, error.success))
        }
        if (error.success instanceof OperationalError) return yield* error.success
        return yield* new OperationalError({
          message: `${call.name} failed with an unexpected error (only Tool.Failure is model-visible)`,
          cause: error.success,
        })
      }

      // The JSON encoding is the structured output (what the output JSON Schema describes); toModelOutput gets
      // the decoded input and the output encoded by the tool's own schema, as its type says.
      const encodings = yield* Effect.exit(
        Effect.all([
          Schema.encodeEffect(tool.outputJson)(executed.value, OUTPUT_OPTIONS),
          tool.toModelOutput === undefined
            ? Effect.succeed(undefined)
            : Schema.encodeEffect(tool.output)(executed.value, OUTPUT_OPTIONS),
        ]),
      )
      if (Exit.isFailure(encodings)) {
        const error = Cause.findError(encodings.cause)
        if (error._tag === "Failure") return yield* Effect.failCause(error.failure)
        return yield* failOwned(
          call,
          "invalid_output",
          `${call.name} produced output that does not match its output schema, so it was not returned:\n` +
            `${Hints.describeIssues(error.success)}\nThis is a defect in the tool, not in the input.`,
        )
      }
      const [structured, encoded] = encodings.value

      const projected = Projection.project(tool, admitted.input, structured, encoded)
      if (Exit.isFailure(projected)) {
        const problem = Exit.findErrorOption(projected)
        return yield* failOwned(
          call,
          "invalid_output",
          `${call.name}'s toModelOutput returned ${problem._tag === "Some" ? problem.value : "something that is not content"}; this is a defect in the tool.`,
        )
      }

      const after =
        hooks === undefined || !hooks.has(call.name, "tool.execute.after")
          ? undefined
          : Hooks.after(
              hooks,
              call.name,
              { input: admitted.input, output: structured, content: projected.value.content },
              Projection.decodeContent,
            )
      const content =
        after === undefined
          ? projected.value.content
          : Hooks.isDone(after)
            ? after.value
            : yield* after.pipe(Effect.mapError(hookFailed))
      // Content a hook replaced is all the model may read: the structured output it did not see through would
      // reach the model by another road (MCP structuredContent, a host showing `structured`), so it goes.
      const replaced = content !== projected.value.content
      // Images from any source are within the image limits before bounding; one that cannot be shown fails the call.
      const shown = yield* Effect.exit(output.images(content, options?.images))
      if (Exit.isFailure(shown)) {
        const error = Cause.findError(shown.cause)
        if (error._tag === "Failure") return yield* Effect.failCause(error.failure)
        return yield* failOwned(call, "failure", error.success.message)
      }
      const bounded = yield* Spans.step(
        call.trace,
        "Settler.bound",
        output.bound({
          content: shown.value,
          structured: replaced ? undefined : projected.value.structured,
          lossy: Internal.lostCapture(tool, structured),
          location,
          session: call.sessionID,
        }),
        {
          after: (bounded) => ({
            "core.output.bytes": Spans.contentBytes(bounded.content),
            "core.output.bounded": bounded.outputs.length > 0,
            "core.output.managed_bytes": bounded.outputs.reduce((sum, kept) => sum + kept.bytes, 0),
          }),
        },
      ).pipe(Effect.mapError((error) => new OperationalError({ message: error.message, cause: error })))
      return yield* recordOwned(call, {
        tool: call.name,
        callID: call.toolCallID,
        status: "success",
        content: bounded.content,
        structured: bounded.structured as Schema.Json,
        outputs: bounded.outputs,
      })
    })

    /**
     * Records `cancelled` for a call interrupted before it began running (while asked for permission, or while
     * waiting for another owner), unless something else is recorded for it by now: that record stands.
     */
    const recordCancelledBeforeStart = (call: Received) =>
      store
        .settle(keyOf(call), Settlement.runnerOutcome(call.name, call.toolCallID, "cancelled"), {
          state: "absent",
          agent: call.agent,
          details: call.details,
        })
        .pipe(Effect.mapError(recordFailed(call)), Effect.asVoid)

    const run = (
      catalog: Registry.Catalog,
      call: Received,
      options: Options | undefined,
    ): Effect.Effect<Settled, OperationalError> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          // Only admission (which may wait for a reply or another owner) and execute can be interrupted; the
          // settler records what an interruption before the start means, whoever called it.
          const admission = yield* Effect.exit(restore(admit(catalog, call)))
          if (Exit.isFailure(admission)) {
            if (Cause.hasInterruptsOnly(admission.cause)) yield* recordCancelledBeforeStart(call)
            return yield* Effect.failCause(admission.cause)
          }
          const admitted = admission.value
          // Another settler recorded or began the call meanwhile: settle through its record instead.
          if (admitted === CONFLICT) return CONFLICT
          if (!("_tag" in admitted)) return admitted
          const intent = store.begin(keyOf(call), call.name, call.agent, call.details)
          const fresh = yield* Spans.step(call.trace, "Settler.record", intent, Spans.RECORD_INTENT).pipe(
            Effect.mapError(operational("Could not record the call")),
          )
          if (!fresh) return CONFLICT
          // From here this process owns the call; an operational failure is recorded with its reason (for
          // operators), so a retry replays it as interrupted instead of running it again.
          return yield* perform(call, admitted, options, restore).pipe(
            Effect.tapCause((cause) => Effect.ignore(store.fail(keyOf(call), reasonOf(cause)))),
          )
        }),
      ).pipe(
        Effect.flatMap((outcome) => (outcome === CONFLICT ? run(catalog, call, options) : Effect.succeed(outcome))),
      )

    // Untraced unless a tracer that keeps spans is installed: settle is the per-call hot path, where a span costs
    // about as much as the pipeline (bench/trace.ts).
    const settleThrough = (catalog: Registry.Catalog) =>
      Effect.fnUntraced(function* (call: Call, options?: Options) {
        // Only the same call joins: asked by another agent or under another name, it meets the conflict in admit.
        const key = JSON.stringify([call.sessionID, call.toolCallID, call.agent, call.name])
        const joined = running.get(key)
        if (joined !== undefined) return yield* Deferred.await(joined)
        const done = yield* Deferred.make<Settled, OperationalError>()
        running.set(key, done)
        const received: Received = {
          ...call,
          // What operators see of the call (`core log`), whatever it settles as.
          details: { messageID: call.assistantMessageID, startedAt: Date.now(), ...Store.recordInput(call.input) },
          trace: undefined,
        }
        const tracer = Spans.keepingTracer()
        const settling =
          tracer === undefined
            ? run(catalog, received, options)
            : Spans.settle(received, received.details.inputBytes, tracer, (trace) =>
                run(catalog, { ...received, trace }, options),
              )
        return yield* settling.pipe(
          Effect.onExit((exit) =>
            Effect.gen(function* () {
              running.delete(key)
              // A joiner of an interrupted call gets what was recorded for it (cancelled, or the outcome that
              // won the race), not the interruption of a fiber that was not its own.
              if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) {
                const known = yield* Effect.exit(lookup(call))
                if (Exit.isSuccess(known) && known.value?.state === "settled") {
                  return yield* Deferred.succeed(done, { settlement: known.value.settlement, replayed: true })
                }
              }
              yield* Deferred.done(done, exit)
            }),
          ),
        )
      })

    let hooked:
      | { readonly base: ReadonlyArray<Definition.Definition>; readonly version: number; readonly definitions: ReadonlyArray<Definition.Definition> }
      | undefined
    /** The last materialization without hooks: the registry keeps its catalog while nothing changes, and so does this. */
    let plain: { readonly catalog: Registry.Catalog; readonly materialization: Materialization } | undefined
    // Untraced: hosts that settle each call against the catalog current at the call (MCP) materialize per call.
    const materialize = Effect.fnUntraced(function* (rules?: Rule.Ruleset) {
      const catalog = registry.capture(rules)
      if (plain?.catalog === catalog && (hooks === undefined || hooks.size === 0)) return plain.materialization
      const settle = settleThrough(catalog)
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

    return Service.of({ materialize })
  }),
)
