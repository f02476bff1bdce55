export * as Preparing from "./preparing"

// Calls prepared at once, process-wide. Preparing a call (decoding, deciding permissions, parsing a command, setting
// up its sandbox and guard) is processor work on core's one thread, and the scheduler runs every ready fiber in one
// macrotask: a host's burst of hundreds of calls would all be prepared before the HTTP server answered again. A call
// holds a turn until it first waits on the world (its tool's execute starts, a person is asked for permission, or
// for bash `done`: its process is about to start), it ends, or BUDGET_MS passes. Waiting calls are let in on a
// macrotask, each turn handed on within it to the next waiting call while the macrotask has taken less than
// SLICE_MS (a call prepared at once, as most are, gives its turn back before the next is let in): a burst is prepared
// in slices, the event loop running in between, without a macrotask (and an event loop's turn) per call. A call that
// finds no other prepared nor waiting is let in at once, once per turn of the event loop (a call alone waits for no
// macrotask; a burst still takes its turns).

import * as Effect from "effect/Effect"
import { Turn as SettleTurn } from "../settlement/turn"

/** Calls being prepared at once, at most. */
export const AT_ONCE = 2

/** How long one call may hold its turn before the next is let in regardless. */
export const BUDGET_MS = 100

/**
 * How long the calls let in on one macrotask may take together before the event loop runs again. Letting each in on
 * a macrotask of its own cost a sidecar a quarter of a trivial call's processor time (an event loop's turn each).
 */
export const SLICE_MS = 1

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

/** Whether a slice runs now: it lets the next waiting calls in itself. */
let slicing = false

/**
 * Lets `grant`'s call in, then, while this macrotask has taken less than SLICE_MS, each next waiting call whose turn
 * can be had (the calls before it gave theirs back, most by ending at once); the rest wait for a macrotask.
 */
const slice = (grant: () => void) => () => {
  const until = performance.now() + SLICE_MS
  slicing = true
  try {
    grant()
    while (holding < AT_ONCE && queued.length > 0 && performance.now() < until) {
      holding++
      queued.shift()!()
    }
  } finally {
    slicing = false
  }
  next()
}

/** The next waiting calls are let in on a macrotask (in slices), so the event loop runs in between. */
const next = () => {
  if (slicing) return
  while (holding < AT_ONCE && queued.length > 0) {
    holding++
    setImmediate(slice(queued.shift()!))
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
    resume(Effect.succeed(end))
    // Its budget only if it still holds the turn (it ended at once, as most do: no timer to make and clear).
    arm(BUDGET_MS)
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
