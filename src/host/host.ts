export * as Host from "./host"

// How a host process (the CLI, the sidecar) serves a Location from its environment: `$CORE_DATA_DIR` (managed
// outputs, the SQLite store), `$CORE_HOME` (application tools and core.json) and the Location's own core.json,
// wired into the kernel with the built-ins and discovered tools. It sits below the edges (cli, server, sdk) and
// imports none of them; errors stay typed here, and each edge words them for its own audience.

import { homedir } from "node:os"
import { join, resolve } from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Builtins } from "../builtin/builtins"
import { ReadTracking } from "../builtin/read-tracking"
import { Skill } from "../builtin/skill"
import { Config } from "../config/config"
import { Application } from "../location/application"
import { Discovery } from "../location/discovery"
import { Location } from "../location/location"
import { ManagedOutputs } from "../output/managed-outputs"
import { Retention } from "./retention"
import { ObjectStore } from "../output/object-store"
import { Output } from "../output/output"
import { Permission } from "../permission/permission"
import { McpClient } from "../mcp-client/mcp-client"
import { Plugins } from "../plugin/plugins"
import { PluginShell } from "../plugin/plugin-shell"
import { Hooks } from "../settlement/hooks"
import { Settler } from "../settlement/settler"
import { LoadGate } from "../shell/load-gate"
import { Home } from "../shell/home"
import { Shell } from "../shell/shell"
import { Approvals } from "../store/approvals"
import { Reads } from "../store/reads"
import type { PostgresStore } from "../store/postgres-store"
import { Project } from "../store/project"
import { SqliteStore } from "../store/sqlite-store"
import { Todos } from "../store/todos"
import { Store } from "../store/store"

export interface Environment {
  readonly dataDir: string
  readonly home: string
  /** `$CORE_STORE_URL`: settlements and saved approvals in a Postgres shared by a fleet, not in the data directory. */
  readonly storeUrl?: string
  /**
   * `$CORE_OUTPUTS_URL` (`s3://bucket/prefix`) with the `AWS_*` variables: managed outputs put in an object store
   * every host sharing it reads, besides the data directory.
   */
  readonly outputs?: { readonly url: string; readonly env: Readonly<Record<string, string | undefined>> }
}

export const environment = (env: Record<string, string | undefined> = process.env): Environment => ({
  dataDir: resolve(env.CORE_DATA_DIR || join(homedir(), ".local/share/core")),
  home: resolve(env.CORE_HOME || join(homedir(), ".config/core")),
  ...(env.CORE_STORE_URL ? { storeUrl: env.CORE_STORE_URL } : {}),
  ...(env.CORE_OUTPUTS_URL ? { outputs: { url: env.CORE_OUTPUTS_URL, env: awsOf(env) } } : {}),
})

const awsOf = (env: Record<string, string | undefined>) =>
  Object.fromEntries(Object.entries(env).filter(([name]) => name.startsWith("AWS_")))

/** Where managed outputs are kept. */
export const outputsDirectory = (environment: Environment) => join(environment.dataDir, "outputs")

export const outputsLayer = (
  environment: Environment,
  retentionDays?: number,
): Layer.Layer<ManagedOutputs.Service, ObjectStore.ConfigError> => {
  const options = {
    directory: outputsDirectory(environment),
    ...(retentionDays === undefined ? {} : { retentionDays }),
  }
  const given = environment.outputs
  if (given === undefined) return ManagedOutputs.layer(options)
  // A URL that cannot name a bucket stops the host at start; a store that cannot be reached is met per output.
  const settings = ObjectStore.settings(given.url, given.env)
  return settings instanceof ObjectStore.ConfigError
    ? Layer.effect(ManagedOutputs.Service, Effect.fail(settings))
    : ManagedOutputs.layer({ ...options, remote: ObjectStore.make(settings) })
}

/**
 * A layer of the Postgres store, its module loaded only when `$CORE_STORE_URL` names one: every other start of core
 * leaves it (and Bun's Postgres client) unloaded.
 */
const postgres = <A, E, R>(url: string, make: (store: typeof PostgresStore, url: string) => Layer.Layer<A, E, R>) =>
  Layer.unwrap(Effect.map(Effect.promise(() => import("../store/postgres-store")), (module) => make(module.PostgresStore, url)))

/** The SQLite store in the data directory: settlements and saved approvals (unless `$CORE_STORE_URL`), what sessions read. */
export const storePath = (environment: Environment) => join(environment.dataDir, "core.db")

/** The durable settlement store: the fleet's Postgres when `$CORE_STORE_URL` names one, else the data directory's. */
export const storeLayer = (environment: Environment) =>
  environment.storeUrl === undefined
    ? SqliteStore.layer(storePath(environment))
    : postgres(environment.storeUrl, (store, url) => store.layer(url))

/**
 * Saved approvals, in the durable store: with `$CORE_STORE_URL`, the fleet's for a project known across machines,
 * and the data directory's for one known by a path on this machine (which holds here only: Approvals.split).
 */
export const approvalsLayer = (environment: Environment): Layer.Layer<Approvals.Service, Store.StoreError> => {
  const local = SqliteStore.approvalsLayer(storePath(environment))
  if (environment.storeUrl === undefined) return local
  const shared = postgres(environment.storeUrl, (store, url) => store.approvalsLayer(url))
  return Layer.effect(
    Approvals.Service,
    Effect.gen(function* () {
      const fleet = Context.get(yield* Layer.build(shared), Approvals.Service)
      const own = Context.get(yield* Layer.build(local), Approvals.Service)
      const identities = new Map<string, boolean>()
      const machineOnly = (directory: string) => {
        let only = identities.get(directory)
        if (only === undefined) identities.set(directory, (only = Project.machineOnly(Project.identityOf(directory))))
        return only
      }
      return Approvals.split(fleet, own, machineOnly)
    }),
  )
}

/** A Location a host can serve: its real directory and its configuration. */
export interface Prepared {
  readonly directory: string
  readonly config: Config.Resolved
}

/** Checks the Location and loads its core.json files (and `$CORE_HOME`'s). */
// Every tool and plugin file core imports waits while a command of its Location runs in any core process, and is
// refused where a dead core's command may have left what it planted.
Discovery.gateImports((location, file, load) =>
  LoadGate.loading(location, load).pipe(
    Effect.catchTag("LoadGate.Stale", (stale) => Effect.fail(new Discovery.LoadError({ file, message: stale.message }))),
  ),
)

/**
 * The core.json files of the Location at `directory` (and `$CORE_HOME`'s), loaded once no command of it runs in any
 * core process (a core.json one made is taken out when it ends); where a dead core's command may have left what it
 * planted, a ConfigError saying so.
 */
export const loadConfig = (directory: string, home: string, guards?: string) =>
  LoadGate.loading(directory, Config.load({ location: directory, home }), guards).pipe(Effect.catchTag("LoadGate.Stale", staleConfig))

/** A load refused where a dead core's command may have left what it planted: a ConfigError saying so. */
const staleConfig = (stale: LoadGate.Stale) =>
  Effect.fail(
    new Config.ConfigError({
      file: stale.file,
      path: "",
      expected: "the Location as it was when a command started",
      found: "paths changed by a command of a core process that was stopped",
      message: stale.message,
    }),
  )

export const prepare = (environment: Environment, location: string) =>
  Effect.gen(function* () {
    const guards = LoadGate.directoryOf({ CORE_DATA_DIR: environment.dataDir })
    let directory = yield* Location.check(location)
    // Named through a link: where no mount namespace holds a served Location in place, a command of one holding it
    // can rename it away and leave a link to a folder of the model's, which would be loaded here. The name is
    // resolved again once no command of the Location it names (as written) runs in any core process, as the guard
    // has put it back by then.
    const named = resolve(location)
    if (named !== directory) directory = yield* loadingName(named, Location.check(location), guards)
    const config = yield* loadConfig(directory, environment.home, guards)
    return { directory, config } satisfies Prepared
  })

/** `check` (of the name `named`) under its Location's lock, as loadConfig takes it. */
const loadingName = (named: string, check: Effect.Effect<string, Location.LocationError>, guards: string) =>
  LoadGate.loading(named, check, guards).pipe(Effect.catchTag("LoadGate.Stale", staleConfig))

/** What a Location's services are wired from: its real directory, its configuration, where managed outputs are. */
export interface Settings {
  readonly directory: string
  readonly config: Config.Resolved
  readonly outputsDirectory: string
  /** The Locations this core serves now, where it serves several (real directories). */
  readonly locations?: () => ReadonlyArray<string>
}

const settingsOf = (environment: Environment, prepared: Prepared): Settings => ({
  directory: prepared.directory,
  config: prepared.config,
  outputsDirectory: outputsDirectory(environment),
})

/** The built-in tools as the configuration sets them up, registering into the Location's registry. */
export const builtinsLayer = (config: Config.Resolved) =>
  Builtins.layer.pipe(
    Layer.provideMerge(Shell.layer(config.shell)),
    Layer.provide(Layer.succeed(ReadTracking.Required, config.editing?.readBeforeWrite ?? true)),
  )

/**
 * The built-ins (`skill` among them when there are skills), then the plugins of `$CORE_HOME` and of the Location
 * (DESIGN §12), registering into the Location's
 * registry in that order; the Location's `tools/*.ts` come after. The plugins' hook table comes from below
 * (`Hooks.layer`), shared with the settler.
 */
export const extensionsLayer = (
  directory: string,
  home: string,
  config: Config.Resolved,
  options: Pick<Plugins.Options, "versionOf" | "bump"> = {},
) =>
  Plugins.layer({
    ...options,
    directory,
    home,
    shell: Effect.gen(function* () {
      return PluginShell.capability(yield* Shell.Service, directory)
    }),
  }).pipe(Layer.provideMerge(Skill.layer({ directory, home }).pipe(Layer.provideMerge(builtinsLayer(config)))))

/** The user's home, and the paths in it core.json opens to tools and commands (shell.allowRead, shell.allowWrite). */
const userOf = (settings: Settings) => {
  const home = homedir()
  const expand = (paths: ReadonlyArray<string> | undefined) => (paths ?? []).map((path) => Home.expand(path, home, settings.directory))
  const write = expand(settings.config.shell.allowWrite)
  return { home, read: [...expand(settings.config.shell.allowRead), ...write], write }
}

/** The permission service of a Location, deciding from its configuration (saved approvals come from the host). */
export const permissionLayer = (settings: Settings) =>
  Permission.layer({
    project: settings.directory,
    configured: settings.config,
    user: userOf(settings),
    // Its own managed outputs only: another Location's are in core's data directory, which no tool reads.
    readableRoots: [ManagedOutputs.locationDirectory(settings.outputsDirectory, settings.directory)],
    ...(settings.locations === undefined ? {} : { locations: settings.locations }),
  })

/**
 * The one wiring of a Location's settling services, for every host: the settler over the given registry (the
 * built-ins and the tools registered in it), the permission service and bounding as the configuration sets them.
 * The store, saved approvals, managed outputs and what sessions read come from the host, which may share them
 * between Locations.
 */
export const servicesLayer = <ROut, E, RIn>(settings: Settings, registry: Layer.Layer<ROut, E, RIn>) => {
  const { output } = settings.config
  // The retention the Location's own core.json sets, recorded where every process sharing the store sweeps by it;
  // where the store cannot record it, the Location is not served (another process would sweep it by another).
  const own = settings.config.retentionDays.location
  const retained = Layer.effectDiscard(
    Effect.gen(function* () {
      yield* Retention.retain(yield* Store.Service, yield* ManagedOutputs.Service, settings.directory, own)
    }).pipe(
      Effect.catchTag("Store.StoreError", (error) =>
        Effect.fail(
          new Config.ConfigError({
            file: join(settings.directory, Config.FILE_NAME),
            path: "output.retentionDays",
            expected: "a retention the settlement store records",
            found: error.message,
            message: `The Location's retention (output.retentionDays) could not be recorded: ${error.message}`,
          }),
        ),
      ),
    ),
  )
  return Settler.layer.pipe(
    Layer.provideMerge(retained),
    Layer.provideMerge(registry),
    Layer.provideMerge(permissionLayer(settings)),
    Layer.provideMerge(
      Output.layer({
        ...(output.maxLines === undefined ? {} : { maxLines: output.maxLines }),
        ...(output.maxBytes === undefined ? {} : { maxBytes: output.maxBytes }),
        ...(output.previewBytes === undefined ? {} : { previewBytes: output.previewBytes }),
        ...(output.maxSessionBytes === undefined ? {} : { maxSessionBytes: output.maxSessionBytes }),
        ...(output.image === undefined ? {} : { image: output.image }),
      }),
    ),
    Layer.provideMerge(Hooks.layer()),
  )
}

/**
 * The services a host shares between the Locations it serves: the settlement store (the durable one unless given),
 * what sessions read and their todo lists (beside durable settlements, else in memory), saved approvals and managed
 * outputs. The store
 * is opened first, so the others find it created.
 */
export const sharedLayer = (
  environment: Environment,
  retentionDays: number | undefined,
  store?: Layer.Layer<Store.Service, Store.StoreError>,
) =>
  Layer.mergeAll(
    store === undefined ? Reads.layer(storePath(environment)) : Reads.layerMemory,
    store !== undefined
      ? Todos.layerMemory
      : environment.storeUrl === undefined
        ? Todos.layer(storePath(environment))
        : postgres(environment.storeUrl, (store, url) => store.todosLayer(url)),
    approvalsLayer(environment),
    outputsLayer(environment, retentionDays),
  ).pipe(Layer.provideMerge(store ?? storeLayer(environment)))

/**
 * The MCP servers core.json names, registering their tools into the Location's registry after its own tools.
 * `eager` connects them all while the layer is built, for a command whose catalog is made at once; otherwise
 * the host calls `ensure` before making a catalog.
 */
export const remoteLayer = (
  directory: string,
  config: Config.Resolved,
  eager: boolean,
  onChange?: (server: string) => void,
) =>
  McpClient.layer({
    directory,
    servers: config.mcp ?? [],
    eager,
    ...(onChange === undefined ? {} : { onChange }),
  })

/**
 * A Location with its built-in tools, discovered tools and MCP servers' tools over the application's, given the
 * Location's permission service (the built-ins capture it) and what sessions read. A command that lists the
 * catalog connects its MCP servers while the Location is built (`eager`); one that calls a tool connects only the
 * server that could offer it, when it asks (`McpClient.ensureFor`).
 */
const locationLayer = (environment: Environment, prepared: Prepared, eager: boolean) =>
  remoteLayer(prepared.directory, prepared.config, eager).pipe(
    Layer.provideMerge(Location.layer(prepared.directory, extensionsLayer(prepared.directory, environment.home, prepared.config))),
    Layer.provideMerge(Application.layer(environment.home)),
  )

/**
 * A Location's catalog: application tools and the Location's own, with the permission rules that filter it (saved
 * approvals are not needed to list tools, so none are opened).
 */
export const catalogLayer = (environment: Environment, prepared: Prepared) =>
  locationLayer(environment, prepared, true).pipe(
    Layer.provide(Reads.layerMemory),
    Layer.provideMerge(permissionLayer(settingsOf(environment, prepared)).pipe(Layer.provide(Approvals.layerMemory))),
    Layer.provideMerge(Hooks.layer()),
  )

/** A Location's catalog with its permission service and the saved approvals, for explaining decisions. */
export const checkingLayer = (environment: Environment, prepared: Prepared) =>
  locationLayer(environment, prepared, false).pipe(
    Layer.provide(Reads.layerMemory),
    Layer.provideMerge(permissionLayer(settingsOf(environment, prepared)).pipe(Layer.provide(approvalsLayer(environment)))),
    Layer.provideMerge(Hooks.layer()),
  )

/**
 * Everything needed to settle calls in a Location, with the durable store (unless another is given), managed
 * outputs and its config.
 */
export const settlingLayer = (
  environment: Environment,
  prepared: Prepared,
  store?: Layer.Layer<Store.Service, Store.StoreError>,
) =>
  servicesLayer(settingsOf(environment, prepared), locationLayer(environment, prepared, false)).pipe(
    Layer.provideMerge(sharedLayer(environment, prepared.config.retentionDays.operator, store)),
  )
