export * as Runtime from "./runtime"

// Composes the layers a command runs on, from the environment: `$CORE_DATA_DIR` (managed outputs, the SQLite
// store), `$CORE_HOME` (application tools and core.json) and the Location's own core.json. The only place the
// CLI wires services together.

import { homedir } from "node:os"
import { join, resolve } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Builtins } from "../builtin/builtins"
import { ReadTracking } from "../builtin/read-tracking"
import { Config } from "../config/config"
import { Application } from "../location/application"
import { Location } from "../location/location"
import { ManagedOutputs } from "../output/managed"
import { Output } from "../output/output"
import { Permission } from "../permission/permission"
import { Registry } from "../registry/registry"
import { Approvals } from "../store/approvals"
import { Settler } from "../settlement/settler"
import { Shell } from "../shell/producer"
import { SqliteStore } from "../store/sqlite"
import { Reads } from "../store/reads"
import type { Store } from "../store/store"
import { Command } from "./command"

export interface Environment {
  readonly dataDir: string
  readonly home: string
}

export const environment = (env: Record<string, string | undefined> = process.env): Environment => ({
  dataDir: resolve(env.CORE_DATA_DIR || join(homedir(), ".local/share/core")),
  home: resolve(env.CORE_HOME || join(homedir(), ".config/core")),
})

export const outputsLayer = (environment: Environment, retentionDays?: number) =>
  ManagedOutputs.layer({
    directory: join(environment.dataDir, "outputs"),
    ...(retentionDays === undefined ? {} : { retentionDays }),
  })

/** A Location a command can run on: its real directory and its configuration. */
export interface Prepared {
  readonly directory: string
  readonly config: Config.Resolved
}

/** Checks the Location and loads its core.json files; a missing Location or an invalid file is a usage error. */
export const prepare = (command: string, environment: Environment, location: string | undefined) =>
  Effect.gen(function* () {
    const usage = (message: string) => new Command.UsageError({ command, message })
    const directory = yield* Location.check(location ?? ".").pipe(Effect.mapError((error) => usage(error.message)))
    const config = yield* Config.load({ location: directory, home: environment.home }).pipe(
      Effect.mapError((error) => usage(error.message)),
    )
    return { directory, config } satisfies Prepared
  })

/** The permission service of a Location, deciding from its configuration, with the given saved approvals. */
const permissionLayer = <E>(environment: Environment, prepared: Prepared, approvals: Layer.Layer<Approvals.Service, E>) =>
  Permission.layer({
    project: prepared.directory,
    configured: prepared.config,
    readableRoots: [join(environment.dataDir, "outputs")],
  }).pipe(Layer.provide(approvals))

/**
 * A Location's catalog: application tools and the Location's own, with the permission rules that filter it (saved
 * approvals are not needed to list tools, so none are opened).
 */
export const catalogLayer = (environment: Environment, prepared: Prepared) =>
  locationLayer(environment, prepared).pipe(
    Layer.provideMerge(permissionLayer(environment, prepared, Approvals.layerMemory)),
  )

/**
 * A Location with its built-in tools and discovered tools over the application's, given the Location's permission
 * service (the built-ins capture it).
 */
const locationLayer = (environment: Environment, prepared: Prepared, reads: Layer.Layer<Reads.Service, Store.StoreError> = Reads.layerMemory) =>
  Location.layer(
    prepared.directory,
    Builtins.layer.pipe(
      Layer.provide(Shell.layer(prepared.config.shell)),
      Layer.provide(reads),
      Layer.provide(Layer.succeed(ReadTracking.Required, prepared.config.editing?.readBeforeWrite ?? true)),
    ),
  ).pipe(Layer.provideMerge(Application.layer(environment.home)))

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

/** The durable store: settlements and saved approvals. */
export const storePath = (environment: Environment) => join(environment.dataDir, "core.db")

/** Saved approvals, in the durable store. */
export const approvalsLayer = (environment: Environment) => SqliteStore.approvalsLayer(storePath(environment))

/** A Location's catalog with its permission service and the saved approvals, for explaining decisions. */
export const checkingLayer = (environment: Environment, prepared: Prepared) =>
  locationLayer(environment, prepared).pipe(
    Layer.provideMerge(permissionLayer(environment, prepared, approvalsLayer(environment))),
  )

/** Everything needed to settle calls in a Location, with the durable store, managed outputs and its config. */
export const settlingLayer = (environment: Environment, prepared: Prepared) => {
  const { output } = prepared.config
  return Settler.layer.pipe(
    Layer.provideMerge(locationLayer(environment, prepared, Reads.layer(storePath(environment)))),
    Layer.provideMerge(permissionLayer(environment, prepared, approvalsLayer(environment))),
    Layer.provideMerge(
      Output.layer({
        ...(output.maxLines === undefined ? {} : { maxLines: output.maxLines }),
        ...(output.maxBytes === undefined ? {} : { maxBytes: output.maxBytes }),
      }),
    ),
    Layer.provideMerge(outputsLayer(environment, output.retentionDays)),
    Layer.provideMerge(SqliteStore.layer(storePath(environment))),
  )
}

/** An agent the Location knows, or a usage error listing the known ones. */
export const checkAgent = (command: string, permission: Permission.Interface, agent: string) =>
  permission.isAgent(agent)
    ? Effect.void
    : Effect.fail(
        new Command.UsageError({
          command,
          message: `unknown agent "${agent}"; known agents: ${permission.agents.join(", ")}`,
        }),
      )
