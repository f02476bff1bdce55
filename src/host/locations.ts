export * as Locations from "./locations"

// Every Location the sidecar serves, each built on its first request and then kept while it is used (concurrent
// first requests share one build; a build that fails, say for an invalid core.json, is tried again by the next
// request). A Location other than the serve's own is let go (its scope closed: watchers stopped, turns gone) once
// it has gone unused for the idle period, or when more than `max` are kept (the least recently used first); never
// while a request holds it (an open event stream included) or a call runs in it. Also the application's own tools
// (`$CORE_HOME/tools/*.ts`) and their hot reload: a change there concerns every Location, and a change to
// `$CORE_HOME/core.json` rebuilds every Location's services.

import * as Deferred from "effect/Deferred"
import { Terminal } from "../contract/terminal"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { Config } from "../config/config"
import { Discovery } from "../location/discovery"
import { Skills } from "../location/skills"
import { Plugins } from "../plugin/plugins"
import { Registry } from "../registry/registry"
import { Guard } from "../shell/guard"
import type { Activity } from "./activity"
import { Host } from "./host"
import { Served } from "./served"
import { ToolFiles } from "./tool-files"
import { Watch } from "./watch"

/** Locations kept besides the serve's own. */
export const MAX_LOCATIONS = 32
export const IDLE_MS = 30 * 60 * 1000

export interface Interface {
  /**
   * The served Location at `directory` (a real, absolute directory), built on first use and held until the Scope
   * closes (it is not let go meanwhile).
   */
  readonly get: (directory: string) => Effect.Effect<Served.Interface, Config.ConfigError, Scope.Scope>
  /**
   * As `get`, at once, for a Location already built (undefined otherwise): held until `release` is called (once).
   * For answers that need no Scope of their own.
   */
  readonly hold: (directory: string) => { readonly served: Served.Interface; readonly release: () => void } | undefined
  /** The Locations built and kept so far. */
  readonly all: () => ReadonlyArray<Served.Interface>
}

export interface Options {
  readonly home: string
  readonly outputsDirectory: string
  readonly watch: boolean
  readonly log: (line: string) => void
  /** Where calls' asks and replies are told (none when absent). */
  readonly activity?: Activity.Log
  /** The serve's own Location, kept for the life of the sidecar. */
  readonly primary: string
  readonly max?: number
  readonly idleMs?: number
  /** The clock, in epoch milliseconds. */
  readonly now?: () => number
}

interface Kept {
  readonly directory: string
  readonly built: Deferred.Deferred<Served.Interface, Config.ConfigError>
  served: Served.Interface | undefined
  scope: Scope.Closeable | undefined
  /** Requests holding it. */
  holders: number
  /** When it was last taken or let go by a request. */
  used: number
  /** The same as an ordinal: which was used last, which a clock cannot tell apart within a millisecond. */
  recent: number
}

export const make = Effect.fnUntraced(function* (options: Options) {
  const scope = yield* Scope.Scope
  const context = yield* Effect.context<Served.Shared>()
  const max = options.max ?? MAX_LOCATIONS
  const idleMs = options.idleMs ?? IDLE_MS
  const now = options.now ?? Date.now
  /** In order of first use. */
  const kept = new Map<string, Kept>()
  let uses = 0
  const use = (entry: Kept) => {
    entry.used = now()
    entry.recent = ++uses
  }
  /**
   * Every Location this serve has been asked for, kept now or let go (idle, or past the bound) or failed to load:
   * each protects the others' configuration from its calls. A Location let go is loaded again on its next request,
   * running what its tools/ then hold: a model's change made while it was let go would run.
   */
  const asked = new Set<string>()
  /** Locations that could not be guarded from a command running as they were first named, and what to do. */
  const unguarded = new Map<string, string>()
  const unguardable = (directory: string, message: string) =>
    new Config.ConfigError({
      file: directory,
      path: "",
      expected: "a Location core could guard from the commands running as it was first named",
      found: "a command that may write it, which core could not guard it from",
      message,
    })
  const locations = () => [...asked]
  /** Whether the application's tools reported a diagnostic when first loaded (later ones reach each Location). */
  let homeWarned = false
  const applicationWarned = () => homeWarned

  // Built in a fiber of its own: a client that goes away mid-build does not fail the build for others waiting.
  const build = (entry: Kept) =>
    Effect.gen(function* () {
      // Served from now on: a command already running that may write it was not told of it as it started. It is
      // guarded from such a command from now (what the command changes of its configuration is taken out once it
      // ends), and loaded once the command has ended. One that could not be guarded stays refused: once the command
      // has ended, nothing would undo what it wrote.
      const refused = unguarded.get(entry.directory)
      if (refused !== undefined) return yield* unguardable(entry.directory, refused)
      const adopted = Guard.adopt(entry.directory)
      if ("refused" in adopted) {
        const message =
          `core could not guard ${entry.directory} from a command running in a Location holding it as it was first ` +
          `named, so it is not served by this core serve: look at what is in it (its core.json, tools/ and plugins/, ` +
          `and what they import), then restart core serve to serve it. Why: ${adopted.refused}`
        unguarded.set(entry.directory, message)
        return yield* unguardable(entry.directory, message)
      }
      yield* Effect.promise(() => adopted.ended)
      const config = yield* Host.loadConfig(entry.directory, options.home)
      const locationScope = yield* Scope.fork(scope)
      const served = yield* Served.make({ ...options, directory: entry.directory, config, locations, applicationWarned }).pipe(
        Scope.provide(locationScope),
        Effect.provideContext(context),
        Effect.onError(() => Scope.close(locationScope, Exit.void)),
      )
      entry.served = served
      entry.scope = locationScope
      return served
    }).pipe(
      Effect.onExit((exit) =>
        Effect.suspend(() => {
          if (Exit.isFailure(exit) && kept.get(entry.directory) === entry) kept.delete(entry.directory)
          return Deferred.done(entry.built, exit)
        }),
      ),
    )

  const NONE: ReadonlyArray<Scope.Closeable> = []

  /** Lets go of Locations idle too long, then of the least recently used beyond the bound; answers their scopes. */
  const evict = (): ReadonlyArray<Scope.Closeable> => {
    // Only the serve's own Location is kept (the usual case): there is nothing to let go of.
    if (kept.size === 0 || (kept.size === 1 && kept.has(options.primary))) return NONE
    const at = now()
    const idle = [...kept.values()]
      .filter((entry) => entry.directory !== options.primary && entry.scope !== undefined && entry.holders === 0)
      .filter((entry) => entry.served!.running() === 0)
      .sort((a, b) => a.recent - b.recent)
    let excess = kept.size - (kept.has(options.primary) ? 1 : 0) - max
    const gone: Array<Scope.Closeable> = []
    for (const entry of idle) {
      if (at - entry.used <= idleMs && excess <= 0) break
      kept.delete(entry.directory)
      gone.push(entry.scope!)
      excess--
    }
    return gone
  }

  /** Takes the Location at `directory` (building it if new) and lets go of others; uninterruptible, as the acquire. */
  const take = (directory: string) =>
    Effect.suspend(() => {
      let entry = kept.get(directory)
      const fresh = entry === undefined
      if (entry === undefined) {
        entry = { directory, built: Deferred.makeUnsafe(), served: undefined, scope: undefined, holders: 0, used: 0, recent: 0 }
        kept.set(directory, entry)
        asked.add(directory)
      }
      entry.holders++
      use(entry)
      const gone = evict()
      // Closing a Location (its watchers, its services) is not the requester's wait.
      const close = Effect.forEach(gone, (closed) => Scope.close(closed, Exit.void), { discard: true })
      return Effect.all([
        fresh ? Effect.forkIn(build(entry), scope) : Effect.void,
        gone.length === 0 ? Effect.void : Effect.forkIn(close, scope),
      ]).pipe(Effect.as(entry))
    })

  const get = (directory: string) =>
    Effect.acquireRelease(take(directory), (entry) =>
      Effect.sync(() => {
        entry.holders--
        use(entry)
      }),
    ).pipe(Effect.flatMap((entry) => Deferred.await(entry.built)))

  const hold: Interface["hold"] = (directory) => {
    const entry = kept.get(directory)
    const served = entry?.served
    if (entry === undefined || served === undefined) return undefined
    entry.holders++
    use(entry)
    const gone = evict()
    // Closing a Location (its watchers, its services) is not the requester's wait.
    if (gone.length > 0) {
      Effect.runFork(Effect.forkIn(Effect.forEach(gone, (closed) => Scope.close(closed, Exit.void), { discard: true }), scope))
    }
    let released = false
    return {
      served,
      release: () => {
        if (released) return
        released = true
        entry.holders--
        use(entry)
      },
    }
  }

  const application = yield* Registry.Application
  const home = ToolFiles.make(options.home, application.tools, scope, new ToolFiles.Versions())
  for (const diagnostic of yield* home.loadAll) {
    options.log(Terminal.warning(`${diagnostic.file}: ${diagnostic.message}`))
    homeWarned = true
  }

  const all = () => [...kept.values()].flatMap((entry) => (entry.served === undefined ? [] : [entry.served]))
  const everywhere = (effect: (served: Served.Interface) => Effect.Effect<void>) => Effect.forEach(all(), effect)

  const reloadHome = (changes: Watch.Changes) =>
    Effect.gen(function* () {
      // `$CORE_HOME/skills/` are every Location's skills.
      if (changes.skills) yield* everywhere((served) => served.reload({ files: new Set(), config: false, rescan: false, skills: true }))
      if (changes.config) yield* everywhere((served) => served.reload({ files: new Set(), config: true, rescan: false, skills: false }))
      // `$CORE_HOME/plugins/*.ts` install in every Location: each installs a changed one again.
      const plugins = new Set([...changes.files].filter(Plugins.isPluginFile))
      if (changes.rescan) for (const file of Discovery.toolFiles(options.home, Plugins.FOLDER)) plugins.add(file)
      if (plugins.size > 0) yield* everywhere((served) => served.reload({ files: plugins, config: false, rescan: false, skills: false }))
      const files = new Set([...changes.files].filter((file) => !Plugins.isPluginFile(file)))
      if (changes.rescan) for (const file of [...home.known(), ...Discovery.toolFiles(options.home)]) files.add(file)
      if (files.size === 0) return
      const results = yield* Effect.forEach([...files].sort(), (file) => home.reload(file))
      for (const { diagnostic } of results) {
        if (diagnostic === undefined) continue
        options.log(Terminal.warning(`${diagnostic.file}: ${diagnostic.message}`))
        yield* everywhere((served) => served.publish({ event: "diagnostic", data: diagnostic }))
      }
      const changed = results.filter(ToolFiles.changed)
      if (changed.length === 0) return
      const data = { reason: "tools" as const, files: changed.map((result) => result.file) }
      yield* everywhere((served) => served.publish({ event: "tools.changed", data }))
    })

  if (options.watch) yield* Watch.watch(options.home, reloadHome, [Skills.HOME_ROOT])

  return { get, hold, all } satisfies Interface
})
