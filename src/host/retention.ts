export * as Retention from "./retention"

// The retention sweep: expired managed outputs, then the records of calls as old (their outputs went with them),
// each Location by its own retention where its core.json sets one (kept in the store, so every process sharing it
// sweeps alike), every other by the operator's.
// The store records each sweep, so processes sharing a data directory sweep at most once an hour whether or not
// an outputs directory exists, and prunes in small batches through its time index, yielding between them, so a
// large backlog never holds the store or the event loop for long. It decides nothing about what is kept.

import * as Effect from "effect/Effect"
import { ManagedOutputs } from "../output/managed-outputs"
import type { Store } from "../store/store"

/** Records removed per batch. */
export const BATCH = 500

export const INTERVAL_MS = ManagedOutputs.SWEEP_INTERVAL_MS

/** Prunes the records from before `before` (of `location`, else of the Locations keeping no retention of their own). */
const prune = (store: Store.Interface, before: number, location?: string) =>
  Effect.gen(function* () {
    let removed = 0
    while (true) {
      const batch = yield* store.prune(before, BATCH, location)
      removed += batch
      if (batch < BATCH) return removed
      yield* Effect.yieldNow
    }
  })

const run = (store: Store.Interface, outputs: ManagedOutputs.Interface) =>
  Effect.gen(function* () {
    const own = yield* store.retentions
    yield* outputs.retain(own)
    yield* outputs.sweep
    const now = Date.now()
    let removed = yield* prune(store, now - outputs.retentionMs)
    for (const [location, retentionMs] of own) removed += yield* prune(store, now - retentionMs, location)
    return removed
  })

/**
 * Records the retention a Location's own core.json sets (or that it sets none), and has the managed outputs keep
 * every Location's as the store has them: a Location's outputs are found expired by its own from then on.
 */
export const retain = (store: Store.Interface, outputs: ManagedOutputs.Interface, location: string, retentionDays: number | undefined) =>
  store.retain(location, retentionDays === undefined ? undefined : retentionDays * ManagedOutputs.DAY_MS).pipe(
    Effect.andThen(store.retentions),
    Effect.flatMap(outputs.retain),
  )

/** Sweeps now and records it; answers how many call records were removed. */
export const sweep = (store: Store.Interface, outputs: ManagedOutputs.Interface) =>
  store.claimSweep(Date.now(), 0).pipe(Effect.andThen(run(store, outputs)), Effect.withSpan("Retention.sweep"))

/** Sweeps unless a process sharing the store did within the hour; answers the records removed, or undefined. */
export const sweepIfDue = (store: Store.Interface, outputs: ManagedOutputs.Interface) =>
  store.claimSweep(Date.now(), INTERVAL_MS).pipe(
    Effect.flatMap((claimed) => (claimed ? run(store, outputs) : Effect.succeed(undefined))),
    Effect.withSpan("Retention.sweepIfDue"),
  )
