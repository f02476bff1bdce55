export * as Runtime from "./runtime"

// Composes the layers a command runs on, from the environment: `$CORE_DATA_DIR` (managed outputs, the SQLite
// store) and `$CORE_HOME` (application tools). The only place the CLI wires services together.

import { homedir } from "node:os"
import { join, resolve } from "node:path"
import * as Layer from "effect/Layer"
import { Application } from "../location/application"
import { Location } from "../location/location"
import { ManagedOutputs } from "../output/managed"
import { Output } from "../output/output"
import { Permission } from "../permission/permission"
import { Registry } from "../registry/registry"
import { Approvals } from "../store/approvals"
import { Settler } from "../settlement/settler"
import { SqliteStore } from "../store/sqlite"
import type { Store } from "../store/store"

export interface Environment {
  readonly dataDir: string
  readonly home: string
}

export const environment = (env: Record<string, string | undefined> = process.env): Environment => ({
  dataDir: resolve(env.CORE_DATA_DIR || join(homedir(), ".local/share/core")),
  home: resolve(env.CORE_HOME || join(homedir(), ".config/core")),
})

export const outputsLayer = (environment: Environment) =>
  ManagedOutputs.layer({ directory: join(environment.dataDir, "outputs") })

/** A Location's catalog: application tools and the Location's own, without any settlement machinery. */
export const catalogLayer = (environment: Environment, directory: string) =>
  Location.layer(directory).pipe(Layer.provideMerge(Application.layer(environment.home)))

/**
 * A settlement kernel without discovery: application and Location registries, the settler, bounding with managed
 * outputs in `outputsDirectory`, and the given store. Library users, tests and benchmarks register tools themselves.
 */
export const kernelLayer = <E>(options: {
  readonly store: Layer.Layer<Store.Service, E>
  readonly outputsDirectory: string
  readonly limits?: Partial<Output.Limits>
  /** Who decides permissions; by default core's defaults (everything allowed) with approvals in memory. */
  readonly permission?: Layer.Layer<Permission.Service>
}) =>
  Settler.layer.pipe(
    Layer.provideMerge(
      options.permission ?? Permission.layer({ project: options.outputsDirectory }).pipe(Layer.provide(Approvals.layerMemory)),
    ),
    Layer.provideMerge(Registry.layer),
    Layer.provideMerge(Registry.applicationLayer),
    Layer.provideMerge(Output.layer(options.limits)),
    Layer.provideMerge(ManagedOutputs.layer({ directory: options.outputsDirectory })),
    Layer.provideMerge(options.store),
  )

const storePath = (environment: Environment) => join(environment.dataDir, "core.db")

/** Everything needed to settle calls in a Location, with the durable store and managed outputs. */
export const settlingLayer = (environment: Environment, directory: string) =>
  Settler.layer.pipe(
    Layer.provideMerge(Permission.layer({ project: directory }).pipe(Layer.provide(SqliteStore.approvalsLayer(storePath(environment))))),
    Layer.provideMerge(catalogLayer(environment, directory)),
    Layer.provideMerge(Output.layer()),
    Layer.provideMerge(outputsLayer(environment)),
    Layer.provideMerge(SqliteStore.layer(storePath(environment))),
  )
