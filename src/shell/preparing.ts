export * as Preparing from "./preparing"

// Calls prepared at once, process-wide. Preparing a call (decoding, deciding permissions, parsing a command, setting
// up its sandbox and guard) is processor work on core's one thread, and the scheduler runs every ready fiber in one
// macrotask: a host's burst of hundreds of calls would all be prepared before the HTTP server answered again. A call
// holds a turn until it first waits on the world (its tool's execute starts, a person is asked for permission, or
// for bash `done`: its process is about to start), it ends, or BUDGET_MS passes; each turn is granted on a macrotask
// of its own, but for one: a call that finds no other prepared nor waiting is let in at once, once per turn of the
// event loop (a call alone waits for no macrotask; a burst still takes its turns).

import * as Effect from "effect/Effect"
import { Turn as SettleTurn } from "../settlement/turn"

/** Calls being prepared at once, at most. */
export const AT_ONCE = 2

/** How long one call may hold its turn before the next is let in regardless. */
export const BUDGET_MS = 100

/** Ends the running call's turn (idempotent); undefined outside a gated call. The settler ends it as a tool's
 * execute starts, but for a tool that keeps it (../settlement/turn). */
export const Turn = SettleTurn.End

let holding = 0
const queued: Array<() => void> = []
/** Whether a turn may be granted at once: none was since the event loop last ran (reset on a macrotask). */
let atOnce = true
/** The turn granted at once and not yet ended, whose budget starts counting if it outlives the macrotask. */
let unbudgeted: { readonly at: number; readonly arm: (ms: number) => void } | undefined
const macrotask = () => {
  atOnce = true
  const held = unbudgeted
  unbudgeted = undefined
  held?.arm(Math.max(0, BUDGET_MS - (performance.now() - held.at)))
}

/** The next waiting call is let in on a macrotask of its own, so the event loop runs in between. */
const next = () => {
  while (holding < AT_ONCE && queued.length > 0) {
    holding++
    const grant = queued.shift()!
    setImmediate(grant)
  }
}

/**
 * Waits for a turn, then resumes with its end. Interrupted while it waits (a cancelled call), it leaves the queue; a
 * turn granted to it meanwhile goes straight to the next call. No AbortSignal per call: the wait is the hot path.
 */
const admit: Effect.Effect<() => void> = Effect.callback<() => void>((resume) => {
  let ended = false
  let cancelled = false
  let budget: ReturnType<typeof setTimeout> | undefined
  const end = () => {
    if (ended) return
    ended = true
    clearTimeout(budget)
    if (unbudgeted?.arm === arm) unbudgeted = undefined
    holding--
    next()
  }
  const arm = (ms: number) => {
    if (!ended) budget = setTimeout(end, ms)
  }
  if (atOnce && holding === 0 && queued.length === 0) {
    // Alone: granted now, its budget armed only should it still hold the turn once this macrotask is over.
    atOnce = false
    holding++
    unbudgeted = { at: performance.now(), arm }
    setImmediate(macrotask)
    resume(Effect.succeed(end))
    return
  }
  let granted = false
  const grant = () => {
    // Granted but interrupted before this macrotask ran: the turn goes straight to the next call.
    if (cancelled) return end()
    granted = true
    arm(BUDGET_MS)
    resume(Effect.succeed(end))
  }
  queued.push(grant)
  next()
  return Effect.sync(() => {
    cancelled = true
    const index = queued.indexOf(grant)
    if (index !== -1) queued.splice(index, 1)
    // Interrupted as its turn was handed over: nobody will end it but this.
    if (granted) end()
  })
})

/** Runs `effect` once it has a turn, ending the turn when `effect` calls `done` or ends. */
export const gated = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.acquireUseRelease(
    Effect.interruptible(admit),
    (end) => Effect.provideService(effect, Turn, end),
    (end) => Effect.sync(end),
  )

/** Ends the running call's turn: it is about to wait on the world. */
export const done: Effect.Effect<void> = Effect.map(Turn, (end) => end?.())
