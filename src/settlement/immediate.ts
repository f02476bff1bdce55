export * as Immediate from "./immediate"

// A settle without a fiber of its own: the fiber path's steps (./steps), in its order, each started at once in a
// fiber of the caller's context (`Effect.runForkWith`: a fiber runs synchronously to its first async boundary) and
// read as soon as it has ended, so a call whose steps all end at once (a synchronous tool, the memory or SQLite
// store, an allowed action) settles without a step of the settling fiber. It reads no record first: every record it
// makes is made only where none is (the intent, a refusal), and where one is, the fiber path answers from it (a
// replay, a conflict, a wait). Before the intent it only reads, until plugin hooks run: where a step would wait (an
// ask, a schema that waits) the call goes to the fiber path from its start. A call meeting before hooks reads its
// record first (a recorded call runs no hook, as on the fiber path); from the first hook on nothing runs twice: a
// step still running (a hook or a tool that went async, a store write) is awaited where it stands and the rest goes
// on as an Effect, interruptible only while a before hook or the tool runs, as on the fiber path. The settler
// decides when this path is taken.
//
// A traced call records the fiber path's step spans (./spans), each from two clock readings around its step, under
// the settle span the settler made (also the parent span of the steps' context, so a tool's own spans sit under
// it). The steps before the call is known to be this path's (decode, permission, the intent or a refusal recorded)
// are held and recorded once it is: a call handed to the fiber path from its start records its own there, and the
// fiber path, having read the call's record first, records none of these for a replay.

import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type { Registry } from "../registry/registry"
import { Store } from "../store/store"
import type { Tool } from "../tool/tool"
import { Hooks } from "./hooks"
import { Spans } from "./spans"
import { Steps } from "./steps"
import { Stopping } from "./stopping"

/** What a settle answers: at once (an Exit), or an Effect that goes on from the step that waits. */
export type Outcome =
  | Exit.Exit<Steps.Settled, Steps.OperationalError>
  | Effect.Effect<Steps.Settled, Steps.OperationalError>

/** What the settler gives this path for one call. */
export interface Handover {
  /**
   * The settling fiber's context: every step runs with it, as it would on the fiber path (a traced call's with its
   * settle span as the parent span).
   */
  readonly context: Context.Context<never>
  /** Restores the caller's interruptibility: the settle runs uninterruptibly but while its tool runs. */
  readonly restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The call settled by the fiber path from its start (this path recorded nothing for it). */
  readonly fibers: () => Effect.Effect<Steps.Settled, Steps.OperationalError>
  /** Told when the store answered later rather than at once (a remote store): this path gains nothing on it. */
  readonly waited: () => void
}

/**
 * Reads the exit of a step (its fiber, or its exit when it ran without one) with `next`: now if it has ended, else
 * once it ends (the rest of the settle as an Effect).
 */
const then = <A, E>(step: Fiber.Fiber<A, E> | Exit.Exit<A, E>, next: (exit: Exit.Exit<A, E>) => Outcome): Outcome => {
  if (Exit.isExit(step)) return next(step)
  const exit = step.pollUnsafe()
  return exit !== undefined ? next(exit) : Effect.flatMap(Fiber.await(step), next)
}

/**
 * A store operation: its exit at once where the store answers at once (`Store.Now`, with no fiber), else its
 * Effect started in a fiber of the settle's context.
 */
const stored = <A>(
  run: ReturnType<typeof Effect.runForkWith<never>>,
  now: (() => A) | undefined,
  effect: () => Effect.Effect<A, Store.StoreError>,
): Fiber.Fiber<A, Store.StoreError> | Exit.Exit<A, Store.StoreError> => {
  if (now === undefined) return run(effect())
  try {
    return Exit.succeed(now())
  } catch (error) {
    return error instanceof Store.StoreError ? Exit.fail(error) : Exit.die(error)
  }
}

const settledBy = (settlement: Steps.Settled["settlement"], replayed: boolean): Outcome =>
  Exit.succeed({ settlement, replayed })

/** A call this process ran whose record another settler made first: that record answers (Steps.Settled). */
const superseded = (settlement: Steps.Settled["settlement"]): Outcome => Exit.succeed({ settlement, replayed: false, superseded: true })

/** The cause of a failed exit, as a step span carries it; `undefined` for a success. */
const failureOf = (exit: Exit.Exit<unknown, unknown>): Cause.Cause<unknown> | undefined =>
  Exit.isSuccess(exit) ? undefined : exit.cause

/**
 * A traced call's steps held until the call is known to be this path's (each as name, start, end, failure and one
 * attribute); nothing is kept for an untraced one.
 */
class Held {
  private readonly steps: Array<unknown> = []
  constructor(private readonly trace: Spans.Trace) {}

  hold(name: string, started: number, ended: number, failure: Cause.Cause<unknown> | undefined, key: string, value: unknown): void {
    this.steps.push(name, started, ended, failure, key, value)
  }

  /** Records the steps held, in their order. */
  release(): void {
    const { steps, trace } = this
    for (let index = 0; index < steps.length; index += 6) {
      trace.step(
        steps[index] as string,
        steps[index + 1] as number,
        steps[index + 2] as number,
        steps[index + 3] as Cause.Cause<unknown> | undefined,
        steps[index + 4] as string,
        steps[index + 5],
      )
    }
    steps.length = 0
  }
}

/**
 * Settles `call` through `catalog` on this path, or hands it to the fiber path: where a step before its intent
 * waits, and where a record of the call is found.
 */
export const settle = (
  services: Steps.Services,
  catalog: Registry.Catalog,
  call: Steps.Received,
  options: Steps.Options | undefined,
  handover: Handover,
): Outcome => {
  const run = Effect.runForkWith(handover.context)
  const key = Steps.keyOf(services, call)
  const { trace } = call
  const held = trace === undefined ? undefined : new Held(trace)
  // One clock reading per step boundary: a step starts where the one before it ended (only the reading of its
  // outcome lies between), the first where the settle span starts.
  let at = trace === undefined ? 0 : trace.originMs
  const read = () => (at = performance.now())

  /** A call that never began, settled with `settlement` if still absent; the fiber path if another got there first. */
  const recordNew = (settlement: Steps.Settled["settlement"]) => {
    const started = at
    const expected = { state: "absent", agent: call.agent, details: call.details } as const
    const { store } = services
    const settling = stored(run, store.now && (() => store.now!.settle(key, settlement, expected)), () => store.settle(key, settlement, expected))
    return then(settling, (exit) => {
      if (held !== undefined) {
        if (Exit.isSuccess(exit) && !exit.value) return handover.fibers()
        held.hold("Settler.record", started, read(), failureOf(exit), Spans.RECORD, "settlement")
        held.release()
      }
      return Exit.isFailure(exit)
        ? Exit.failCause(Cause.map(exit.cause, Steps.recordFailed(call)))
        : exit.value
          ? settledBy(settlement, false)
          : handover.fibers()
    })
  }

  /** A call stopped before it began: its refusal recorded, or its failure failed. */
  const stopNew = (stop: Steps.Stop): Outcome => {
    // A message past the bound is bounded on the fiber path (it keeps the message as a managed output).
    if (stop instanceof Steps.Refused) return Steps.oversized(services, stop.settlement) ? handover.fibers() : recordNew(stop.settlement)
    held?.release()
    return Exit.failCause((stop as Steps.Halted).cause)
  }

  const tool = Steps.resolve(catalog, call)
  if (tool instanceof Steps.Stop) return stopNew(tool)
  let started = at
  const decoded = run(Steps.decode(call, tool)).pollUnsafe()
  if (decoded === undefined) return handover.fibers()
  held?.hold("Settler.decode", started, read(), undefined, "core.input.valid", Exit.isSuccess(decoded))
  const input = Steps.inputOf(call, tool, decoded)
  if (input instanceof Steps.Stop) return stopNew(input)
  if (!tool.checksPermissions) {
    // `authorize`'s first half: a call every rule allows is authorized by it; one that needs an ask is not this path's.
    started = at
    const allowed = run(services.permission.refuseDenied(call.agent, Steps.checksOf(call))).pollUnsafe()
    if (allowed === undefined || (Exit.isSuccess(allowed) && !allowed.value)) return handover.fibers()
    held?.hold("Settler.permission", started, read(), undefined, "core.permission.decision", Spans.decisionOf(false, allowed))
    const denied = Steps.deniedBy(call, allowed)
    if (denied !== undefined) return stopNew(denied)
  } else if (held !== undefined) {
    // Checked by the tool itself, inside execute: the step decides nothing and takes no time.
    held.hold("Settler.permission", at, at, undefined, "core.permission.decision", "by_tool")
  }

  /** Records the intent to run the call with the input the before hooks left, or stops it as they decided. */
  const begin = (hooked: unknown): Outcome => {
    if (hooked instanceof Steps.Stop) return stopNew(hooked)
    const admitted: Steps.Admitted = { _tag: "Admitted", tool, input: hooked }
    const started = at
    const { store } = services
    const beginning = stored(
      run,
      store.now && (() => store.now!.begin(key, call.name, call.agent, call.details)),
      () => store.begin(key, call.name, call.agent, call.details),
    )
    // A store that answers later (a remote one) is left to the fiber path from the next call on; this one goes on.
    if (!Exit.isExit(beginning) && beginning.pollUnsafe() === undefined) handover.waited()
    return then(beginning, (begun) => {
      // Recorded already (settled, begun, or another's): the fiber path answers from the record.
      if (Exit.isSuccess(begun) && !begun.value) return handover.fibers()
      if (held !== undefined) {
        held.hold("Settler.record", started, read(), failureOf(begun), Spans.RECORD, "intent")
        held.release()
      }
      if (Exit.isFailure(begun)) return Exit.failCause(Cause.map(begun.cause, Steps.operational("Could not record the call")))
      options?.onRecord?.(false)
      return owned(services, call, key, run, () => perform(services, call, key, admitted, options, handover, run, at))
    })
  }

  if (services.hooks === undefined || !services.hooks.has(call.name, "tool.execute.before")) return begin(input)
  // A recorded call runs nothing, its hooks neither: its record is read before the first hook runs, as the fiber
  // path reads it first. Found, or not read at once, the call is the fiber path's from its start.
  const { store } = services
  const looked = stored(run, store.now && (() => store.now!.lookup(key)), () => store.lookup(key))
  const known = Exit.isExit(looked) ? looked : looked.pollUnsafe()
  if (known === undefined) handover.waited()
  if (known === undefined || Exit.isFailure(known) || known.value !== undefined) return handover.fibers()
  // From the first hook on the call is this path's (a record found later is answered by the fiber path from it); it
  // goes on, as the fiber path tells once it has read the record.
  held?.release()
  options?.onRecord?.(false)

  /** A call interrupted in a before hook never began: recorded cancelled where still absent, as the fiber path does. */
  const cancelled = (cause: Cause.Cause<Steps.OperationalError>): Outcome =>
    then(run(Steps.cancelledBeforeStart(services, call)), (recorded) =>
      Exit.failCause(Exit.isFailure(recorded) ? recorded.cause : cause),
    )
  /** What the before hooks decided, once they have ended. */
  const decided = (exit: Exit.Exit<unknown, Steps.OperationalError>): Outcome => {
    if (held !== undefined) read()
    if (Exit.isSuccess(exit)) return begin(exit.value)
    return Cause.hasInterruptsOnly(exit.cause) ? cancelled(exit.cause) : stopNew(new Steps.Halted(exit.cause))
  }
  const hooked = Steps.before(services, call, tool, input)
  // Hooks that answered at once (no-ops, most of them) cost no fiber.
  if (Hooks.isDone(hooked)) return decided(hooked)
  const hooking = run(hooked)
  const ended = hooking.pollUnsafe()
  if (ended !== undefined) return decided(ended)
  // A hook went async: awaited where it stands, interruptibly, as admission is on the fiber path; interrupted, the
  // hook is stopped and the call, which never began, is recorded cancelled.
  return Effect.flatMap(
    Effect.exit(handover.restore(Fiber.await(hooking)).pipe(Effect.onInterrupt(() => Fiber.interrupt(hooking)))),
    (awaited) => (Exit.isSuccess(awaited) ? decided(awaited.value) : cancelled(awaited.cause)),
  )
}

/**
 * The rest of a call this process began, `performing`: an operational failure is recorded with its reason (for
 * operators), so a retry replays it as interrupted instead of running it again. What it throws is a defect, as the
 * fiber runtime makes of a throw.
 */
const owned = (
  services: Steps.Services,
  call: Steps.Received,
  key: Store.Key,
  run: ReturnType<typeof Effect.runForkWith<never>>,
  performing: () => Outcome,
): Outcome => {
  let outcome: Outcome
  try {
    outcome = performing()
  } catch (defect) {
    outcome = Exit.die(defect)
  }
  const { store } = services
  const fail = (cause: Cause.Cause<Steps.OperationalError>) => Effect.ignore(store.fail(key, Steps.reasonOf(cause)))
  if (!Exit.isExit(outcome)) return Effect.tapCause(outcome, fail)
  if (Exit.isSuccess(outcome)) return outcome
  const failed = outcome
  // Recorded failed where it can be; a store failing to record it changes nothing of the outcome.
  return then(
    stored(run, store.now && (() => store.now!.fail(key, Steps.reasonOf(failed.cause))), () => fail(failed.cause)),
    () => failed,
  )
}

/** Execute → encode → project → bound → persist, for an admitted call whose intent is recorded. */
const perform = (
  services: Steps.Services,
  call: Steps.Received,
  key: Store.Key,
  admitted: Steps.Admitted,
  options: Steps.Options | undefined,
  handover: Handover,
  run: ReturnType<typeof Effect.runForkWith<never>>,
  begun: number,
): Outcome => {
  const { trace } = call
  /** The last step boundary read (the intent recorded, to begin with: execute starts there). */
  let at = begun
  /** The settlement of a call this process ran; if another record won meanwhile, that one stands. */
  const recordOwned = (settlement: Steps.Settled["settlement"]) => {
    const started = at
    const { store } = services
    const expected = { state: "owned" } as const
    const settling = stored(run, store.now && (() => store.now!.settle(key, settlement, expected)), () => store.settle(key, settlement, expected))
    return then(settling, (exit) => {
      trace?.step("Settler.record", started, Spans.now(trace), failureOf(exit), Spans.RECORD, "settlement")
      if (Exit.isFailure(exit)) return Exit.failCause(Cause.map(exit.cause, Steps.recordFailed(call)))
      if (exit.value) return settledBy(settlement, false)
      return then(stored(run, store.now && (() => store.now!.lookup(key)), () => store.lookup(key)), (known) => {
        if (Exit.isFailure(known)) {
          return Exit.failCause(Cause.map(known.cause, Steps.operational("Could not read the settlement store")))
        }
        if (known.value === undefined) return Steps.recordGone(services, call, settlement)
        return known.value.state === "settled" ? superseded(known.value.settlement) : settledBy(settlement, false)
      })
    })
  }

  /** A stop recorded over the intent; `afresh` when work not timed lies between the last step and its record. */
  const stopOwned = (stop: Steps.Stop, afresh = false): Outcome => {
    if (afresh) at = Spans.now(trace)
    if (!(stop instanceof Steps.Refused)) return Exit.failCause((stop as Steps.Halted).cause)
    if (!Steps.oversized(services, stop.settlement)) return recordOwned(stop.settlement)
    return then(run(Steps.boundRefusal(services, call, stop.settlement)), (bounded) =>
      Exit.isFailure(bounded) ? Exit.failCause(bounded.cause) : recordOwned(bounded.value),
    )
  }

  const stopping = new Stopping.Record()
  const tool = Effect.runForkWith(Context.add(handover.context, Stopping.Current, stopping))(
    Steps.executing(call, admitted, Steps.contextOf(call, options)),
  )
  const executed = tool.pollUnsafe()
  const performed = (exit: Exit.Exit<unknown, unknown>): Outcome => {
    if (trace !== undefined) trace.step("Settler.execute", at, (at = performance.now()), undefined, "core.execute.outcome", Spans.outcomeOf(exit))
    const output = Steps.outputOf(call, exit, stopping)
    if (output instanceof Steps.Stop) return stopOwned(output)
    return then(run(Steps.encode(admitted.tool, output)), (encodedExit) => {
      const encoded = Steps.encodedOf(call, admitted, encodedExit)
      if (encoded instanceof Steps.Stop) return stopOwned(encoded, true)
      /** Images, bound and record, for the content the after hooks left (all the model reads if they replaced it). */
      const shows = (content: ReadonlyArray<Tool.Content>): Outcome =>
        then(run(Steps.show(services, content, options)), (shownExit) => {
          const shown = Steps.shownOf(call, shownExit)
          if (shown instanceof Steps.Stop) return stopOwned(shown, true)
          const bounding = Spans.now(trace)
          return then(run(Steps.bound(services, call, admitted, encoded, shown, content !== encoded.projected.content)), (bounded) => {
            if (trace !== undefined) at = boundStep(trace, bounding, bounded)
            return Exit.isFailure(bounded)
              ? Exit.failCause(Cause.map(bounded.cause, Steps.boundFailed))
              : recordOwned(Steps.succeeded(call, bounded.value))
          })
        })
      const hooked = Steps.after(services, call, admitted.input, encoded)
      // Hooks that answered at once (no-ops, or none) cost no fiber; one that goes async is awaited where it stands,
      // as on the fiber path: cancelled meanwhile, for Steps.AFTER_HOOK_GRACE_MS at most.
      if (Hooks.isDone(hooked)) return shows(hooked.value)
      const hooks = run(hooked)
      const leftBy = (exit: Exit.Exit<ReadonlyArray<Tool.Content>, Steps.OperationalError>): Outcome => {
        const content = Steps.hookedOf(call, exit)
        return content instanceof Steps.Stop ? stopOwned(content, true) : shows(content)
      }
      const ended = hooks.pollUnsafe()
      return ended !== undefined ? leftBy(ended) : Effect.flatMap(Steps.hooksEnded(hooks, handover.restore), leftBy)
    })
  }
  if (executed !== undefined) return performed(executed)
  // The tool went async: it goes on in its fiber, awaited interruptibly; interrupted, the call's tool is stopped and
  // its own exit read (an interruption, or the result that won the race).
  return Effect.flatMap(
    Effect.exit(handover.restore(Fiber.await(tool)).pipe(Effect.onInterrupt(() => Fiber.interrupt(tool)))),
    () => performed(tool.pollUnsafe()!),
  )
}

/** The bound step of a traced call, as the fiber path records it; when it ended. */
const boundStep = (trace: Spans.Trace, started: number, bounded: Exit.Exit<Effect.Success<ReturnType<typeof Steps.bound>>, unknown>): number => {
  const ended = performance.now()
  if (Exit.isFailure(bounded)) {
    trace.step("Settler.bound", started, ended, bounded.cause)
    return ended
  }
  const { content, outputs } = bounded.value
  trace.step(
    "Settler.bound",
    started,
    ended,
    undefined,
    "core.output.bytes",
    Spans.contentBytes(content),
    "core.output.bounded",
    outputs.length > 0,
    "core.output.managed_bytes",
    outputs.reduce((sum, kept) => sum + kept.bytes, 0),
  )
  return ended
}
