export * as Locations from "./locations"

// Every Location the sidecar serves, each built on its first request and then kept (concurrent first requests
// share one build; a build that fails, say for an invalid core.json, is tried again by the next request). Also
// the application's own tools (`$CORE_HOME/tools/*.ts`) and their hot reload: a change there concerns every
// Location, and a change to `$CORE_HOME/core.json` rebuilds every Location's services.

import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { Config } from "../config/config"
import { Discovery } from "../location/discovery"
import { Registry } from "../registry/registry"
import { Served } from "./served"
import { ToolFiles } from "./tool-files"
import { Watch } from "./watch"

export interface Interface {
  /** The served Location at `directory` (a real, absolute directory), built on first use. */
  readonly get: (directory: string) => Effect.Effect<Served.Interface, Config.ConfigError>
  /** The Locations built so far. */
  readonly all: () => ReadonlyArray<Served.Interface>
}

export interface Options {
  readonly home: string
  readonly outputsDirectory: string
  readonly watch: boolean
  readonly log: (line: string) => void
}

export const make = Effect.fnUntraced(function* (options: Options) {
  const scope = yield* Scope.Scope
  const context = yield* Effect.context<Served.Shared>()
  const building = new Map<string, Deferred.Deferred<Served.Interface, Config.ConfigError>>()
  const ready: Array<Served.Interface> = []

  // Built in a fiber of its own: a client that goes away mid-build does not fail the build for others waiting.
  const build = (directory: string, deferred: Deferred.Deferred<Served.Interface, Config.ConfigError>) =>
    Effect.gen(function* () {
      const config = yield* Config.load({ location: directory, home: options.home })
      const locationScope = yield* Scope.fork(scope)
      const served = yield* Served.make({ ...options, directory, config }).pipe(
        Scope.provide(locationScope),
        Effect.provideContext(context),
        Effect.onError(() => Scope.close(locationScope, Exit.void)),
      )
      ready.push(served)
      return served
    }).pipe(
      Effect.onExit((exit) =>
        Effect.suspend(() => {
          if (Exit.isFailure(exit)) building.delete(directory)
          return Deferred.done(deferred, exit)
        }),
      ),
    )

  const get = (directory: string) =>
    Effect.suspend(() => {
      const known = building.get(directory)
      if (known !== undefined) return Deferred.await(known)
      const deferred = Deferred.makeUnsafe<Served.Interface, Config.ConfigError>()
      building.set(directory, deferred)
      return Effect.forkIn(build(directory, deferred), scope).pipe(Effect.andThen(Deferred.await(deferred)))
    })

  const application = yield* Registry.Application
  const home = ToolFiles.make(options.home, application.tools, scope, new ToolFiles.Versions())
  for (const diagnostic of yield* home.loadAll) options.log(`core: warning: ${diagnostic.file}: ${diagnostic.message}`)

  const everywhere = (effect: (served: Served.Interface) => Effect.Effect<void>) => Effect.forEach([...ready], effect)

  const reloadHome = (changes: Watch.Changes) =>
    Effect.gen(function* () {
      if (changes.config) yield* everywhere((served) => served.reload({ files: new Set(), config: true, rescan: false }))
      const files = new Set(changes.files)
      if (changes.rescan) for (const file of [...home.known(), ...Discovery.toolFiles(options.home)]) files.add(file)
      if (files.size === 0) return
      const results = yield* Effect.forEach([...files].sort(), (file) => home.reload(file))
      for (const { diagnostic } of results) {
        if (diagnostic === undefined) continue
        options.log(`core: warning: ${diagnostic.file}: ${diagnostic.message}`)
        yield* everywhere((served) => served.publish({ event: "diagnostic", data: diagnostic }))
      }
      const changed = results.filter(ToolFiles.changed)
      if (changed.length === 0) return
      const data = { reason: "tools" as const, files: changed.map((result) => result.file) }
      yield* everywhere((served) => served.publish({ event: "tools.changed", data }))
    })

  if (options.watch) yield* Watch.watch(options.home, reloadHome)

  return { get, all: () => [...ready] } satisfies Interface
})
