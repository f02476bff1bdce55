export * as Settler from "./settler"

// Settles tool calls through a captured catalog: replay → resolve → decode → permission → execute → encode →
// project → bound → persist (DESIGN §2 laws 2, 6–10, 12), one named step each (./steps). Model-visible outcomes become settlements; defects and storage
// failures stay operational and are never turned into a result. Interruption records `cancelled`. This module is
// the fiber path and chooses the path of each call: one whose steps end at once takes the immediate path
// (./immediate), the same steps without a fiber step per step, traced or not, plugin hooks included; an ask, a
// joiner, a record found, a store that answers later take this one.

import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Tracer from "effect/Tracer"
import { Output } from "../output/output"
import { Permission } from "../permission/permission"
import { Rule } from "../permission/rule"
import { Registry } from "../registry/registry"
import { Store } from "../store/store"
import type { Definition } from "../tool/definition"
import { Hooks } from "./hooks"
import { Immediate } from "./immediate"
import { Replay } from "./replay"
import { Spans } from "./spans"
import { CallKey } from "../contract/call-key"
import { Settlement } from "../contract/settlement"
import { Steps } from "./steps"
import { Stopping } from "./stopping"

export { OperationalError } from "./steps"
export type { Call, Settled } from "./steps"

export interface Materialization {
  readonly definitions: ReadonlyArray<Definition.Definition>
  readonly settle: (call: Steps.Call, options?: Steps.Options) => Effect.Effect<Steps.Settled, Steps.OperationalError>
  /** What a name settles to through this turn, as `settle` resolves it (for explaining a call without making it). */
  readonly resolve: Registry.Catalog["resolve"]
}

export interface Interface {
  /** Captures this turn's catalog; `rules` hide tools whose action they wholly deny. */
  readonly materialize: (rules?: Rule.Ruleset) => Effect.Effect<Materialization>
  /** What settling `call` now would answer from its record, read as the settler reads it (see Replay.of). */
  readonly peek: (call: Steps.Call) => Effect.Effect<Replay.Verdict, Steps.OperationalError>
  /**
   * What `call` settled as when its settle was interrupted: what the settler recorded for it (`cancelled`, also
   * before it began, or the outcome that won the race); `cancelled`, recorded now, for a call nothing is recorded
   * for (interrupted before its settle began); for a call another process runs, that this settle only stopped
   * waiting for it (Replay.settledAs); `undefined` when the record is another call's (another agent's or tool's).
   */
  readonly interrupted: (call: Steps.Call) => Effect.Effect<Settlement.Info | undefined, Steps.OperationalError>
}

export class Service extends Context.Service<Service, Interface>()("core/Settler") {}

/** How often a call running in another process is checked for its settlement. */
const OWNER_POLL_MS = 50

/** Nothing recorded: the call goes on. */
const NOT_RECORDED = Effect.succeed(undefined)

// Persist: the call's record (DESIGN §2 law 12). A call that never began is recorded only if still absent; a call
// this process began, over its own intent.

const lookup = (services: Steps.Services, call: Steps.Call) =>
  services.store.lookup(Steps.keyOf(services, call)).pipe(Effect.mapError(Steps.operational("Could not read the settlement store")))

/**
 * Records the settlement of a call that never began (unknown, stale, invalid input, refused, or the replay of an
 * unsettled one), only if the call is still as `expected`; Steps.CONFLICT when another settler got there first.
 */
const recordNew = (
  services: Steps.Services,
  call: Steps.Received,
  settlement: Settlement.Info,
  expected: Store.Expected = { state: "absent", agent: call.agent, details: call.details },
  replayed = false,
) =>
  Spans.recorded(call.trace, "Settler.record", services.store.settle(Steps.keyOf(services, call), settlement, expected), Spans.RECORD, "settlement").pipe(
    Effect.mapError(Steps.recordFailed(call)),
    Effect.map((recorded): Steps.Settled | typeof Steps.CONFLICT => (recorded ? { settlement, replayed } : Steps.CONFLICT)),
  )

/** Records the settlement of a call this process ran; if another record won meanwhile, that one stands. */
const recordOwned = (services: Steps.Services, call: Steps.Received, settlement: Settlement.Info) =>
  Effect.gen(function* () {
    const owned = services.store.settle(Steps.keyOf(services, call), settlement, { state: "owned" })
    const recorded = Spans.recorded(call.trace, "Settler.record", owned, Spans.RECORD, "settlement")
    if (yield* recorded.pipe(Effect.mapError(Steps.recordFailed(call)))) {
      return { settlement, replayed: false }
    }
    const known = yield* lookup(services, call)
    if (known === undefined) return yield* Steps.recordGone(services, call, settlement)
    return known.state === "settled" ? { settlement: known.settlement, replayed: false, superseded: true } : { settlement, replayed: false }
  })

/** Records the intent to run a call: false when the call is already known (another settler got there first). */
const recordIntent = (services: Steps.Services, call: Steps.Received) =>
  Spans.recorded(
    call.trace,
    "Settler.record",
    services.store.begin(Steps.keyOf(services, call), call.name, call.agent, call.details),
    Spans.RECORD,
    "intent",
  ).pipe(Effect.mapError(Steps.operational("Could not record the call")))

// Admission: everything before the tool runs.

/**
 * The record step from a fresh look at the call's record, after waiting for another settler that ran it. Its record
 * gone meanwhile (a retention sweep took it while its owner was held up past its lease), the call is not run here:
 * it may have run there. It is recorded `interrupted`, which its owner then answers too.
 */
const replayed = (services: Steps.Services, call: Steps.Received): Effect.Effect<Steps.Settled | typeof Steps.CONFLICT | undefined, Steps.OperationalError> =>
  Effect.flatMap(lookup(services, call), (known) =>
    known === undefined ? recordNew(services, call, Replay.forgotten(call), undefined, true) : replayOf(services, call, Replay.of(known, call)),
  )

/**
 * The record step: a recorded call replays (settled, or as interrupted when it never settled) and runs nothing; one
 * recorded for another agent or tool is a conflict; one another settler runs is waited for. `undefined`: none is
 * recorded, the call goes on.
 */
const replayOf = (
  services: Steps.Services,
  call: Steps.Received,
  verdict: Replay.Verdict,
): Effect.Effect<Steps.Settled | typeof Steps.CONFLICT | undefined, Steps.OperationalError> => {
  switch (verdict._tag) {
    case "Absent":
      return NOT_RECORDED
    case "Conflict":
      // Not recorded: the record is the other's.
      return Effect.succeed({ settlement: verdict.settlement, replayed: false })
    case "Settled":
      return Effect.succeed({ settlement: verdict.settlement, replayed: true })
    case "Interrupted":
      return verdict.expected === undefined
        ? Effect.succeed({ settlement: verdict.settlement, replayed: true })
        : recordNew(services, call, verdict.settlement, verdict.expected, true)
    case "Running":
      // Another settler is running this very call: wait for its settlement rather than run it twice.
      return Effect.sleep(OWNER_POLL_MS).pipe(Effect.andThen(replayed(services, call)))
  }
}

/**
 * Everything before the tool runs: replay a recorded call, reject unknown, stale and invalid calls and refused ones
 * (recording those settlements), or admit the call with its captured tool and decoded input.
 */
const admit: (
  services: Steps.Services,
  catalog: Registry.Catalog,
  call: Steps.Received,
  options: Steps.Options | undefined,
) => Effect.Effect<Steps.Settled | Steps.Admitted | typeof Steps.CONFLICT, Steps.OperationalError> = Effect.fnUntraced(function* (
  services,
  catalog,
  call,
  options,
) {
  const verdict = Replay.of(yield* lookup(services, call), call)
  options?.onRecord?.(verdict._tag === "Settled" || verdict._tag === "Interrupted")
  if (verdict._tag !== "Absent") {
    const recorded = yield* replayOf(services, call, verdict)
    if (recorded !== undefined) return recorded
  }
  const tool = Steps.resolve(catalog, call)
  if (tool instanceof Steps.Stop) return yield* stopNew(services, call, tool)
  const { trace } = call
  // Each step's span is recorded from two readings around it, once it has ended (nothing is read untraced).
  let started = Spans.now(trace)
  const decodedExit = yield* Effect.exit(Steps.decode(call, tool))
  // Spans say what happened, never with what: messages here quote the input, which may hold secrets.
  if (trace !== undefined) trace.step("Settler.decode", started, performance.now(), undefined, "core.input.valid", Exit.isSuccess(decodedExit))
  const decoded = Steps.inputOf(call, tool, decodedExit)
  if (decoded instanceof Steps.Stop) return yield* stopNew(services, call, decoded)
  started = Spans.now(trace)
  const authorized = yield* Effect.exit(Steps.authorize(services.permission, call, tool))
  if (trace !== undefined) {
    const decision = Spans.decisionOf(tool.checksPermissions, authorized)
    trace.step("Settler.permission", started, performance.now(), undefined, "core.permission.decision", decision)
  }
  const denied = Steps.deniedBy(call, authorized)
  if (denied !== undefined) return yield* stopNew(services, call, denied)
  // Hooks that answered at once (no-ops, most of them, or none) cost no step of the fiber.
  const hooked = Steps.before(services, call, tool, decoded)
  const input = Hooks.isDone(hooked) ? hooked.value : yield* hooked
  if (input instanceof Steps.Stop) return yield* stopNew(services, call, input)
  return { _tag: "Admitted", tool, input } satisfies Steps.Admitted
})

/** Ends a call stopped before it began: its refusal recorded as new (if still absent), or its failure failed. */
const stopNew = (services: Steps.Services, call: Steps.Received, stop: Steps.Stop) =>
  stop instanceof Steps.Refused
    ? bounded(services, call, stop.settlement, (settlement) => recordNew(services, call, settlement))
    : Effect.failCause((stop as Steps.Halted).cause)

/** Ends a call this process began: its refusal recorded over its intent, or its failure failed. */
const stopOwned = (services: Steps.Services, call: Steps.Received, stop: Steps.Stop) =>
  stop instanceof Steps.Refused
    ? bounded(services, call, stop.settlement, (settlement) => recordOwned(services, call, settlement))
    : Effect.failCause((stop as Steps.Halted).cause)

/** Records a refusal, its message bounded first where it is past the bound (law 10; a step only then). */
const bounded = <A, E>(
  services: Steps.Services,
  call: Steps.Received,
  settlement: Settlement.Info,
  record: (settlement: Settlement.Info) => Effect.Effect<A, E>,
): Effect.Effect<A, E | Steps.OperationalError> =>
  Steps.oversized(services, settlement) ? Effect.flatMap(Steps.boundRefusal(services, call, settlement), record) : record(settlement)

// Performing: what an admitted call does once its intent is recorded.

/**
 * Execute: the captured tool, interruptible by `restore` alone. What the call did while being cancelled, should it
 * be, goes to `stopping` (Stopping: never part of the tool's context).
 */
const execute = (
  call: Steps.Received,
  admitted: Steps.Admitted,
  options: Steps.Options | undefined,
  restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
  stopping: Stopping.Record,
) => {
  return Effect.exit(
    restore(Steps.executing(call, admitted, Steps.contextOf(call, options))).pipe(Effect.provideService(Stopping.Current, stopping)),
  )
}

/**
 * Runs an admitted call whose intent this process recorded: execute → encode → project → bound → persist.
 * Runs uninterruptibly but for `execute` (made interruptible by `restore`): once the tool has returned, an
 * interruption waits until its result is settled and recorded, so a finished call is never recorded cancelled; but
 * an after hook still running Steps.AFTER_HOOK_GRACE_MS after it is stopped, and the call recorded cancelled.
 */
const perform = Effect.fnUntraced(function* (
  services: Steps.Services,
  call: Steps.Received,
  admitted: Steps.Admitted,
  options: Steps.Options | undefined,
  restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
) {
  const { trace } = call
  const stopping = new Stopping.Record()
  let started = Spans.now(trace)
  const executed = yield* execute(call, admitted, options, restore, stopping)
  if (trace !== undefined) trace.step("Settler.execute", started, performance.now(), undefined, "core.execute.outcome", Spans.outcomeOf(executed))
  const output = Steps.outputOf(call, executed, stopping)
  if (output instanceof Steps.Stop) return yield* stopOwned(services, call, output)
  const encoded = Steps.encodedOf(call, admitted, yield* Effect.exit(Steps.encode(admitted.tool, output)))
  if (encoded instanceof Steps.Stop) return yield* stopOwned(services, call, encoded)
  const hooked = Steps.after(services, call, admitted.input, encoded)
  // A hook that goes async runs in a fiber of its own: cancelled meanwhile, the call waits for it a while, no more.
  const content = Hooks.isDone(hooked)
    ? hooked.value
    : Steps.hookedOf(call, yield* Steps.hooksEnded(yield* Effect.forkChild(Effect.interruptible(hooked)), restore))
  if (content instanceof Steps.Stop) return yield* stopOwned(services, call, content)
  const shown = Steps.shownOf(call, yield* Effect.exit(Steps.show(services, content, options)))
  if (shown instanceof Steps.Stop) return yield* stopOwned(services, call, shown)
  started = Spans.now(trace)
  const bounding = Steps.bound(services, call, admitted, encoded, shown, content !== encoded.projected.content)
  if (trace === undefined) return yield* recordOwned(services, call, Steps.succeeded(call, yield* Effect.mapError(bounding, Steps.boundFailed)))
  const boundExit = yield* Effect.exit(bounding)
  const ended = performance.now()
  if (Exit.isFailure(boundExit)) {
    trace.step("Settler.bound", started, ended, boundExit.cause)
    return yield* Effect.mapError(Effect.failCause(boundExit.cause), Steps.boundFailed)
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
  return yield* recordOwned(services, call, Steps.succeeded(call, bounded))
})

/** One settle of a received call: admit, record the intent, perform; again through the record on a Steps.CONFLICT. */
const run = (
  services: Steps.Services,
  catalog: Registry.Catalog,
  call: Steps.Received,
  options: Steps.Options | undefined,
): Effect.Effect<Steps.Settled, Steps.OperationalError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      // Only admission (which may wait for a reply or another owner) and execute can be interrupted; the
      // settler records what an interruption before the start means, whoever called it.
      const admission = yield* Effect.exit(restore(admit(services, catalog, call, options)))
      if (Exit.isFailure(admission)) {
        if (Cause.hasInterruptsOnly(admission.cause)) yield* Steps.cancelledBeforeStart(services, call)
        return yield* Effect.failCause(admission.cause)
      }
      const admitted = admission.value
      // Another settler recorded or began the call meanwhile: settle through its record instead.
      if (admitted === Steps.CONFLICT) return Steps.CONFLICT
      if (!("_tag" in admitted)) return admitted
      if (!(yield* recordIntent(services, call))) return Steps.CONFLICT
      // From here this process owns the call; an operational failure is recorded with its reason (for
      // operators), so a retry replays it as interrupted instead of running it again.
      return yield* perform(services, call, admitted, options, restore).pipe(
        Effect.tapCause((cause) => Effect.ignore(services.store.fail(Steps.keyOf(services, call), Steps.reasonOf(cause)))),
      )
    }),
  ).pipe(
    Effect.flatMap((outcome) => (outcome === Steps.CONFLICT ? run(services, catalog, call, options) : Effect.succeed(outcome))),
  )

/** `call` under the tool name it is kept under (CallKey.named): a name longer than any tool's, bounded. */
const keptAs = (call: Steps.Call): Steps.Call => {
  const name = CallKey.named(call.name)
  return name === call.name ? call : { ...call, name }
}

/** What an interrupted settle of `call` settled as, read from its record (Replay.settledAs). */
const interruptedOf = (services: Steps.Services, call: Steps.Call) =>
  Effect.flatMap(lookup(services, call), (known) => {
    if (known !== undefined) return Effect.succeed(Replay.settledAs(known, call))
    // Interrupted before its settle began (waiting for its turn to be prepared): recorded `cancelled` now, as one
    // interrupted before it began running is, so a retry replays it rather than run it; unless another settler
    // recorded the call meanwhile, whose record then stands.
    const details: Store.Details = { messageID: call.assistantMessageID, startedAt: Date.now(), ...Store.recordInput(call.input) }
    return Steps.cancelledBeforeStart(services, { ...call, details, trace: undefined }).pipe(
      Effect.andThen(lookup(services, call)),
      Effect.map((now) => Replay.settledAs(now, call)),
    )
  })

/**
 * Whether a settle takes the immediate path (./immediate) where it applies; on by default. Turned off, every call
 * settles on the fiber path alone (the law tests run on both).
 */
export const Immediately = Context.Reference<boolean>("core/Settler.Immediately", { defaultValue: () => true })

/** A settle in flight in a settler, under its call's ids: who asked for it, the tool it named, and its outcome. */
interface Running {
  readonly agent: string
  readonly name: string
  readonly done: Deferred.Deferred<Steps.Settled, Steps.OperationalError>
}

/**
 * A settle in flight under `key` in `running`, until it ends: a duplicate joins it, and a joiner of an interrupted
 * call gets what was recorded for it (cancelled, or the outcome that won the race), not the interruption of a
 * fiber that was not its own.
 */
const tracked = (
  services: Steps.Services,
  running: Map<string, Running>,
  key: string,
  call: Steps.Call,
  trace: Spans.Trace | undefined,
  settling: Effect.Effect<Steps.Settled, Steps.OperationalError>,
) => {
  const done = Deferred.makeUnsafe<Steps.Settled, Steps.OperationalError>()
  running.set(key, { agent: call.agent, name: call.name, done })
  // Combinators, not a generator: run once per call, a generator's optimized code was dropped and made again and
  // again in a long run (a thread of JIT compiling that a busy sidecar's calls wait on).
  return settling.pipe(
    Effect.onExit((exit) => {
      if (trace !== undefined) Spans.end(trace, exit)
      if (running.get(key)?.done === done) running.delete(key)
      if (Exit.isSuccess(exit) || !Cause.hasInterruptsOnly(exit.cause)) return Deferred.done(done, exit)
      return Effect.flatMap(Effect.exit(interruptedOf(services, call)), (recorded) =>
        Exit.isSuccess(recorded) && recorded.value !== undefined
          ? Deferred.succeed(done, { settlement: recorded.value, replayed: true })
          : Deferred.done(done, exit),
      )
    }),
  )
}

/**
 * Settles calls through `catalog`; a duplicate of a call running in this settler (the same ids, agent and tool)
 * joins it through `running`. Asked by another agent or under another name, it is a conflict: the ids are the
 * running call's, though it may have recorded nothing yet (it waits on an ask, or a before hook). A call
 * nothing runs under yet, traced or not, hooked or not, takes the immediate path (./immediate) unless the store was
 * found to answer later; it is tracked in `running` only once a step of it waits.
 */
const settleThrough = (
  services: Steps.Services,
  running: Map<string, Running>,
  catalog: Registry.Catalog,
  store: { waits: boolean },
) =>
  // Untraced unless a tracer that keeps spans is installed: settle is the per-call hot path, where a span costs
  // about as much as the pipeline (bench/trace.ts). Uninterruptible as the fiber path's own steps are, the
  // caller's interruptibility restored for the fiber path and while a tool runs.
  (asked: Steps.Call, options?: Steps.Options): Effect.Effect<Steps.Settled, Steps.OperationalError> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.withFiber((fiber) => {
        // Every edge refuses such ids; here too, since a record kept under one would answer another call (law 12).
        const malformed = CallKey.malformed(asked)
        if (malformed !== undefined) return Effect.fail(new Steps.OperationalError({ message: malformed, cause: undefined }))
        // A name longer than any tool's is settled (as unknown) and kept under its bounded form, from here on.
        const call = keptAs(asked)
        const key = CallKey.of(services.location, call)
        const inFlight = running.get(key)
        if (inFlight !== undefined) {
          const other = inFlight.name !== call.name ? "tool" : inFlight.agent !== call.agent ? "agent" : undefined
          if (other === undefined) return restore(Deferred.await(inFlight.done))
          // Not recorded: the ids are the running call's (as a record of it would answer, law 12).
          return Effect.succeed({ settlement: Replay.conflict(call, other), replayed: false })
        }
        // What operators see of the call (`core log`), whatever it settles as.
        const details: Store.Details = { messageID: call.assistantMessageID, startedAt: Date.now(), ...Store.recordInput(call.input) }
        const tracer = Spans.keepingTracer()
        const trace = tracer === undefined ? undefined : Spans.begin(call, details.inputBytes, tracer)
        const received: Steps.Received = { ...call, details, trace }
        const fibers = () => restore(trace === undefined ? run(services, catalog, received, options) : Spans.under(trace, run(services, catalog, received, options)))
        if (!store.waits && fiber.getRef(Immediately)) {
          const outcome = Immediate.settle(services, catalog, received, options, {
            // A traced call's steps run under its settle span, as the fiber path's do.
            context: trace === undefined ? fiber.context : Context.add(fiber.context, Tracer.ParentSpan, trace.parent),
            restore,
            fibers,
            waited: () => {
              store.waits = true
            },
          })
          // Settled at once: nobody could have joined it meanwhile.
          if (Exit.isExit(outcome)) {
            if (trace !== undefined) Spans.end(trace, outcome)
            return outcome
          }
          return tracked(services, running, key, call, trace, outcome)
        }
        return tracked(services, running, key, call, trace, fibers())
      }),
    )

export const layer: Layer.Layer<
  Service,
  never,
  Registry.Service | Store.Service | Output.Service | Permission.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const registry = yield* Registry.Service
    const permission = yield* Permission.Service
    const services: Steps.Services = {
      store: yield* Store.Service,
      output: yield* Output.Service,
      permission,
      hooks: yield* Hooks.Current,
      location: permission.project,
    }
    const { hooks } = services
    const running = new Map<string, Running>()
    /** Whether the store was found to answer a write later rather than at once (a remote store). */
    const store = { waits: false }

    let hooked:
      | { readonly base: ReadonlyArray<Definition.Definition>; readonly version: number; readonly definitions: ReadonlyArray<Definition.Definition> }
      | undefined
    /** The last materialization without hooks: the registry keeps its catalog while nothing changes, and so does this. */
    let plain: { readonly catalog: Registry.Catalog; readonly materialization: Materialization } | undefined
    // Untraced and without a generator: hosts that settle each call against the catalog current at the call (MCP)
    // materialize per call, where a generator's optimized code is dropped and made again over a long run.
    const materialize = (rules?: Rule.Ruleset): Effect.Effect<Materialization> =>
      Effect.suspend(() => {
        const catalog = registry.capture(rules)
        if (plain?.catalog === catalog && (hooks === undefined || hooks.size === 0)) return Effect.succeed(plain.materialization)
        const settle = settleThrough(services, running, catalog, store)
        if (hooks !== undefined && hooks.size > 0) {
          // Adjusted now, so a failing tool.definition hook fails this turn (operationally), not a later read; kept
          // while neither the catalog nor the hooks change, as the registry keeps its catalog.
          const base = catalog.definitions
          if (hooked?.base !== base || hooked.version !== hooks.version) {
            try {
              hooked = { base, version: hooks.version, definitions: Hooks.definitions(hooks, base) }
            } catch (error) {
              return Effect.die(error)
            }
          }
          return Effect.succeed({ definitions: hooked.definitions, settle, resolve: catalog.resolve })
        }
        const materialization: Materialization = {
          get definitions() {
            return catalog.definitions
          },
          settle,
          resolve: catalog.resolve,
        }
        plain = { catalog, materialization }
        return Effect.succeed(materialization)
      })

    return Service.of({
      materialize,
      peek: (asked) => {
        const call = keptAs(asked)
        return Effect.map(lookup(services, call), (known) => Replay.of(known, call))
      },
      interrupted: (call) => interruptedOf(services, keptAs(call)),
    })
  }),
)
