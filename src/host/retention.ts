export * as Retention from "./retention"

// The retention sweep: expired managed outputs, then the records of calls as old (their outputs went with them).
// The store records each sweep, so processes sharing a data directory sweep at most once an hour whether or not
// an outputs directory exists, and prunes in small batches through its time index, yielding between them, so a
// large backlog never holds the store or the event loop for long. It decides nothing about what is kept.

import * as Effect from "effect/Effect"
import { ManagedOutputs } from "../output/managed-outputs"
import type { Store } from "../store/store"

/** Records removed per batch. */
export const BATCH = 500

export const INTERVAL_MS = ManagedOutputs.SWEEP_INTERVAL_MS

const run = (store: Store.Interface, outputs: ManagedOutputs.Interface) =>
  Effect.gen(function* () {
    yield* outputs.sweep
    const before = Date.now() - outputs.retentionMs
    let removed = 0
    while (true) {
      const batch = yield* store.prune(before, BATCH)
      removed += batch
      if (batch < BATCH) return removed
      yield* Effect.yieldNow
    }
  })

/** Sweeps now and records it; answers how many call records were removed. */
export const sweep = (store: Store.Interface, outputs: ManagedOutputs.Interface) =>
  store.claimSweep(Date.now(), 0).pipe(Effect.andThen(run(store, outputs)), Effect.withSpan("Retention.sweep"))

/** Sweeps unless a process sharing the store did within the hour; answers the records removed, or undefined. */
export const sweepIfDue = (store: Store.Interface, outputs: ManagedOutputs.Interface) =>
  store.claimSweep(Date.now(), INTERVAL_MS).pipe(
    Effect.flatMap((claimed) => (claimed ? run(store, outputs) : Effect.succeed(undefined))),
    Effect.withSpan("Retention.sweepIfDue"),
  )
