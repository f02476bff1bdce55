export * as Calls from "./calls"

// The calls the sidecar is running, by Location, (sessionID, toolCallID), agent and tool. Each runs in its own fiber
// in the server's scope, never the request's, so a client that goes away does not stop it: it settles and is
// recorded. A duplicate of a running call joins it (asked by another agent or tool, its settler answers a conflict
// instead); cancelling interrupts its fiber (its tool kills its processes) and it settles as
// `cancelled`, which its settler records (also when it was still waiting for a permission reply). Every
// `call.started` is followed by exactly one `call.settled` or, when the call ends operationally, `call.failed`.

import * as Cause from "effect/Cause"
import { Terminal } from "../contract/terminal"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"
import { Provider } from "../provider/provider"
import { Preparing } from "../shell/preparing"
import { CallKey } from "../contract/call-key"
import { Settlement } from "../contract/settlement"
import { Settler } from "../settlement/settler"
import { Store } from "../store/store"
import { Activity } from "./activity"
import { Events } from "./events"
import type { Served } from "./served"

export interface Entry {
  readonly call: Settler.Call
  /** The Location the call runs in (its asks are that Location's). */
  readonly served: Served.Interface
  /** Those listening to the call's own events (most clients just wait for the settlement). */
  listeners: Set<Listener> | undefined
  /** What the call's record says once known: whether its answer replays a record (Steps.Options.onRecord). */
  replays: boolean | undefined
  readonly done: Deferred.Deferred<Settler.Settled, Settler.OperationalError>
  fiber: Fiber.Fiber<unknown, unknown> | undefined
  /** Those waiting for the outcome outside Effect (Calls.outcome), told once `done` is. */
  waiting: Array<(outcome: Outcome) => void> | undefined
  /** The outcome, once `done` is. */
  outcome: Outcome | undefined
}

export type Outcome = Exit.Exit<Settler.Settled, Settler.OperationalError>

/** The call's outcome as a promise: for an edge that waits outside Effect, without a fiber of its own. */
export const outcome = (entry: Entry): Promise<Outcome> => {
  if (entry.outcome !== undefined) return Promise.resolve(entry.outcome)
  return new Promise((resolve) => (entry.waiting ??= []).push(resolve))
}

/** One listening to a call: told of its events as they happen, synchronously, in order. */
export interface Listener {
  /**
   * Told once, before any event, whether the call's answer replays a record: as soon as the settler knows, or when
   * the call ends (for a joiner already known, at once).
   */
  readonly recorded: (replays: boolean) => void
  /** Each event: progress (and with `asks`, its asks and delegated host calls), then its settlement or error. */
  readonly event: (event: Events.Call) => void
  /**
   * Also the call's asks and delegated host calls, in its Location: those already pending first (a call joined
   * while it waits for a reply), then each as it is published, each once.
   */
  readonly asks?: boolean
}

/** A call started, or joined. */
export interface Started {
  readonly entry: Entry
  /**
   * Whether the call was running already (started by another request): this one joined it, and waits for its
   * outcome. A joiner that goes away (cancelled, closed) stops waiting; the call is its owner's to cancel.
   */
  readonly joined: boolean
}

export interface Listening extends Started {
  /** Stops listening (idempotent); the call goes on. */
  readonly stop: () => void
}

export interface Interface {
  /** Runs `call` through `turn`, or joins it if it is running. */
  readonly start: (served: Served.Interface, turn: Served.Turn, call: Settler.Call) => Effect.Effect<Started>
  /** As `start`, with `listener` told of the call's events from its start (for a joiner, from now on). */
  readonly startListening: (
    served: Served.Interface,
    turn: Served.Turn,
    call: Settler.Call,
    listener: Listener,
  ) => Effect.Effect<Listening>
  /** Interrupts the running calls of that Location and ids; false when no such call is running. */
  readonly cancel: (key: Store.Key) => Effect.Effect<boolean>
  /** Cancels every running call and waits until each is settled and recorded. */
  readonly cancelAll: Effect.Effect<void>
}

/** Tells each of the entry's listeners (a copy: a listener may stop listening when told). */
const tell = (entry: Entry, event: Events.Call) => {
  if (entry.listeners === undefined) return
  for (const listener of [...entry.listeners]) listener.event(event)
}

/** Tells the entry's listeners what its record says, the first time it is known. */
const recorded = (entry: Entry, replays: boolean) => {
  if (entry.replays !== undefined) return
  entry.replays = replays
  if (entry.listeners !== undefined) for (const listener of [...entry.listeners]) listener.recorded(replays)
}

/** Runs calls in `scope` (the server's), recording with `store`. */
export const make = (
  scope: Scope.Scope,
  store: Store.Interface,
  log: (line: string) => void,
  activity?: Activity.Log,
): Interface => {
  const running = new Map<string, Entry>()

  /**
   * What an interrupted call settled as: what its settler recorded (cancelled, also when it was interrupted before
   * it began, or the outcome that won the race). Only when nothing is recorded (another owner still runs it) is
   * the answer a `cancelled` that is not a record.
   */
  const cancelled = (turn: Served.Turn, call: Settler.Call) =>
    turn.generation.settler.interrupted(call).pipe(
      Effect.map((recorded) => ({
        settlement: recorded ?? Settlement.runnerOutcome(CallKey.named(call.name), call.toolCallID, "cancelled"),
        replayed: false,
      })),
    )

  /** The call's outcome, from how its fiber ended: a settlement, or an operational failure (never a defect). */
  const outcomeOf = (
    turn: Served.Turn,
    call: Settler.Call,
    exit: Exit.Exit<Settler.Settled, Settler.OperationalError>,
  ) => {
    if (Exit.isSuccess(exit)) return Effect.succeed(exit)
    if (Cause.hasInterruptsOnly(exit.cause)) return Effect.exit(cancelled(turn, call))
    const error = Cause.findError(exit.cause)
    if (error._tag === "Success") return Effect.succeed(Exit.fail(error.success))
    log(`core: operational failure settling ${Activity.value(CallKey.named(call.name))} (${Activity.value(call.toolCallID)}):\n  ${Terminal.block(Cause.pretty(exit.cause))}`)
    return Effect.succeed(
      Exit.fail(
        new Settler.OperationalError({
          message: `${CallKey.named(call.name)} (${call.toolCallID}) failed unexpectedly; the server log has the details`,
          cause: Cause.squash(exit.cause),
        }),
      ),
    )
  }

  /**
   * Adds `listener` to `entry`; with `asks`, also to the asks of the call in its Location (a call joined in another
   * Location asks there): those pending now first, then those published, each once.
   */
  const listen = (entry: Entry, listener: Listener, fresh: boolean) =>
    Effect.gen(function* () {
      const ids = { sessionID: entry.call.sessionID, toolCallID: entry.call.toolCallID }
      let unwatch: (() => void) | undefined
      if (listener.asks === true) {
        const home = entry.served
        const sent = new Set<string>()
        let early: Array<Events.Server> | undefined = []
        const forward = (event: Events.Server) => {
          if (event.event === "permission.asked") {
            if (!sent.has(event.data.id)) listener.event({ event: "permission", data: event.data })
          } else if (event.event === "host_call" && !sent.has(event.data.id)) listener.event({ event: "host_call", data: event.data })
        }
        // Watched before the pending ones are read, so an ask is in the snapshot, in the published ones, or in both.
        unwatch = home.watchAsks(ids, (event) => (early === undefined ? forward(event) : early.push(event)))
        const isOwn = (request: CallKey.Ids) => request.sessionID === ids.sessionID && request.toolCallID === ids.toolCallID
        // A call not yet launched has asked nothing: only a joiner may find asks of it pending.
        const pending = fresh ? [] : (yield* home.pending).filter(isOwn)
        const delegated = fresh ? [] : home.hostTools.pending().filter(isOwn)
        for (const data of pending) listener.event({ event: "permission", data })
        for (const data of delegated) listener.event({ event: "host_call", data })
        for (const request of [...pending, ...delegated]) sent.add(request.id)
        const published = early
        early = undefined
        for (const event of published) forward(event)
      }
      entry.listeners ??= new Set()
      entry.listeners.add(listener)
      if (entry.replays !== undefined) listener.recorded(entry.replays)
      let stopped = false
      return {
        entry,
        joined: !fresh,
        stop: () => {
          if (stopped) return
          stopped = true
          unwatch?.()
          entry.listeners?.delete(listener)
        },
      } satisfies Listening
    })

  /**
   * Runs `entry` (just added as running under `key`) through `turn`, in its own fiber in the server's scope. Written
   * with combinators, not generators: run once per call, a generator's optimized code was dropped and made again over
   * and over in a long run (a thread of JIT compiling that a busy sidecar's calls wait on).
   */
  const launch = (key: string, entry: Entry, turn: Served.Turn) =>
    Effect.flatMap(turn.generation.enter, (leave) => {
      const { call, served } = entry
      const ids = { sessionID: call.sessionID, toolCallID: call.toolCallID }
      const startedAt = performance.now()

      const onProgress = (update: { readonly message: string; readonly metadata?: Readonly<Record<string, unknown>> }) => {
        const listened = served.listened()
        if (entry.listeners === undefined && !listened) return Effect.void
        const data = Events.progress(update)
        tell(entry, { event: "progress", data })
        return listened ? served.publish({ event: "call.progress", data: { ...ids, ...data } }) : Effect.void
      }
      let left = false
      const leaveOnce = Effect.suspend(() => {
        if (left) return Effect.void
        left = true
        return leave
      })
      /** What is told of the outcome once it is everyone's: the activity line, the call's listeners, the events. */
      const told = (outcome: Exit.Exit<Settler.Settled, Settler.OperationalError>): Effect.Effect<void> => {
        if (entry.waiting !== undefined) for (const resolve of entry.waiting.splice(0)) resolve(outcome)
        const durationMs = performance.now() - startedAt
        if (Exit.isSuccess(outcome)) {
          const { settlement, replayed } = outcome.value
          Activity.settled(activity, served.directory, call, outcome.value, durationMs)
          recorded(entry, replayed)
          tell(entry, { event: "settlement", data: settlement })
          return served.listened() ? served.publish({ event: "call.settled", data: { ...ids, replayed, settlement } }) : Effect.void
        }
        const error = Cause.findError(outcome.cause)
        const message = error._tag === "Success" ? error.success.message : "operational failure"
        Activity.settled(activity, served.directory, call, { failed: message }, durationMs)
        recorded(entry, false)
        tell(entry, { event: "error", data: { error: { kind: "operational", message } } })
        return served.publish({ event: "call.failed", data: { ...ids, tool: CallKey.named(call.name), message } })
      }
      // The call stops counting as running in its Location before anyone gets its outcome. The deferred is
      // completed before the final event is published: a joiner that subscribes and then finds the call not yet
      // done is sure to receive that event.
      const finish = (exit: Exit.Exit<Settler.Settled, Settler.OperationalError>) =>
        Effect.flatMap(outcomeOf(turn, call, exit), (outcome) => {
          running.delete(key)
          return Effect.andThen(leaveOnce, () => {
            entry.outcome = outcome
            return Effect.andThen(Deferred.done(entry.done, outcome), () => told(outcome))
          })
        }).pipe(Effect.ensuring(leaveOnce))

      // Prepared in turn with every other call (Preparing): a burst of calls leaves the server time to answer.
      // A turn prepared for a provider resizes images to what that provider takes, where it is tighter.
      const images = turn.prepared === undefined ? {} : { images: Provider.imageLimits(turn.prepared.provider) }
      // Kept for a joiner that listens later; the JSON answer reads `replayed` from the settlement.
      const onRecord = (replays: boolean) => recorded(entry, replays)
      const launched = Preparing.gated(turn.materialization.settle(call, { onProgress, onRecord, ...images })).pipe(
        Effect.onExit(finish),
        Effect.forkIn(scope, { startImmediately: true }),
        Effect.map((fiber) => {
          entry.fiber = fiber
        }),
      )
      // The calls' events are made only while someone reads them (most hosts just wait for their settlements).
      return served.listened()
        ? Effect.andThen(served.publish({ event: "call.started", data: { ...ids, tool: CallKey.named(call.name), turnID: turn.id } }), launched)
        : launched
    })

  /** The running call of that Location and ids, or a new entry for it, added as running but not yet launched. */
  const entryOf = (served: Served.Interface, call: Settler.Call) => {
    const key = CallKey.of(served.directory, call, call)
    const existing = running.get(key)
    if (existing !== undefined) return { key, entry: existing, fresh: false }
    const entry: Entry = {
      call,
      served,
      listeners: undefined,
      replays: undefined,
      done: Deferred.makeUnsafe<Settler.Settled, Settler.OperationalError>(),
      fiber: undefined,
      waiting: undefined,
      outcome: undefined,
    }
    running.set(key, entry)
    return { key, entry, fresh: true }
  }

  const start: Interface["start"] = (served, turn, call) =>
    Effect.suspend((): Effect.Effect<Started> => {
      const { key, entry, fresh } = entryOf(served, call)
      return fresh ? Effect.as(launch(key, entry, turn), { entry, joined: false }) : Effect.succeed({ entry, joined: true })
    })

  // Listening before a new call is launched, so none of its events is missed.
  const startListening: Interface["startListening"] = (served, turn, call, listener) =>
    Effect.gen(function* () {
      const { key, entry, fresh } = entryOf(served, call)
      const listening = yield* listen(entry, listener, fresh)
      if (fresh) yield* launch(key, entry, turn)
      return listening
    })

  const cancel = (key: Store.Key) =>
    Effect.suspend(() => {
      const fibers = [...running.values()].flatMap((entry) =>
        entry.fiber !== undefined &&
        entry.served.directory === key.location &&
        entry.call.sessionID === key.sessionID &&
        entry.call.toolCallID === key.toolCallID
          ? [entry.fiber]
          : [],
      )
      if (fibers.length === 0) return Effect.succeed(false)
      // Not awaited: killing a process tree can take seconds; the call's clients get its settlement.
      return Effect.forkDetach(Fiber.interruptAll(fibers)).pipe(Effect.as(true))
    })

  const cancelAll = Effect.suspend(() =>
    Fiber.interruptAll([...running.values()].flatMap((entry) => (entry.fiber === undefined ? [] : [entry.fiber]))),
  )

  return { start, startListening, cancel, cancelAll }
}
