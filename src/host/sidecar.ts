export * as Sidecar from "./sidecar"

// What the HTTP sidecar runs on, without the HTTP: the shared services (one durable store, the managed outputs,
// the application's tools), the served Locations, the running calls and the hourly retention sweep. Built in a
// Scope whose closing cancels running calls first (each settles and is recorded), then closes the Locations, and
// the store last.

import { join } from "node:path"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { Host } from "./host"
import { Retention } from "./retention"
import { ManagedOutputs } from "../output/managed-outputs"
import { Registry } from "../registry/registry"
import { Store } from "../store/store"
import type { Activity } from "./activity"
import { Calls } from "./calls"
import { Locations } from "./locations"
import type { Served } from "./served"

export interface Options {
  readonly environment: Host.Environment
  /** The serve's own Location (`--location`), built before the sidecar answers anything. */
  readonly primary: Host.Prepared
  /** Whether tool files and core.json are watched for changes. */
  readonly watch: boolean
  /** Writes a line for the operator (stderr). */
  readonly log: (line: string) => void
  /** Where each settled call, ask and reply is told, at its level (none when absent). */
  readonly activity?: Activity.Log
  /** The settlement store; by default the durable one in the data directory. */
  readonly store?: Layer.Layer<Store.Service, Store.StoreError>
  /** Waits until the next retention sweep is due; by default an hour (tests sweep when they say). */
  readonly nextSweep?: Effect.Effect<void>
  /** How many other Locations are kept, and for how long unused (defaults in ./locations). */
  readonly locations?: Pick<Locations.Options, "max" | "idleMs" | "now">
}

export interface Interface {
  readonly primary: Served.Interface
  readonly locations: Locations.Interface
  readonly calls: Calls.Interface
  readonly store: Store.Interface
  readonly outputs: ManagedOutputs.Interface
  /** Completed when the sidecar begins to shut down: open event streams end then. */
  readonly closing: Deferred.Deferred<void>
}

const sharedLayer = (options: Options) =>
  Layer.merge(
    Host.sharedLayer(options.environment, options.primary.config.retentionDays.operator, options.store),
    Registry.applicationLayer,
  )

export const make = Effect.fn("Sidecar.make")(function* (options: Options) {
  const scope = yield* Scope.Scope
  const context = yield* Layer.build(sharedLayer(options))
  const store = Context.get(context, Store.Service)
  const outputs = Context.get(context, ManagedOutputs.Service)
  const locations = yield* Locations.make({
    home: options.environment.home,
    outputsDirectory: join(options.environment.dataDir, "outputs"),
    watch: options.watch,
    log: options.log,
    ...(options.activity === undefined ? {} : { activity: options.activity }),
    primary: options.primary.directory,
    ...options.locations,
  }).pipe(Effect.provideContext(context))
  const primary = yield* locations.get(options.primary.directory)
  // Forked last, so closing the sidecar's Scope interrupts the calls before anything they record with goes.
  const calls = Calls.make(yield* Scope.fork(scope), store, options.log, options.activity)

  // Expired managed outputs go, and the records of calls as old (their outputs went with them): at start when an
  // hour has passed since the last sweep (before serving), then hourly in the background, in batches that yield
  // to the requests being served.
  yield* Retention.sweepIfDue(store, outputs).pipe(Effect.ignore)
  const nextSweep = options.nextSweep ?? Effect.sleep(Retention.INTERVAL_MS)
  yield* Effect.forkScoped(Effect.forever(nextSweep.pipe(Effect.andThen(Retention.sweep(store, outputs)), Effect.ignore)))

  const closing = yield* Deferred.make<void>()
  yield* Effect.addFinalizer(() => Deferred.succeed(closing, undefined))

  return { primary, locations, calls, store, outputs, closing } satisfies Interface
})
