export * as Location from "./location"

// A Location: an absolute working directory with its own registry, settler and discovered `tools/*.ts`, over
// the process-wide application placement. The layer checks the directory, loads its tools into the layer's
// scope (so closing the Location removes them) and keeps the load diagnostics.

import { realpathSync, statSync } from "node:fs"
import { resolve } from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { Registry } from "../registry/registry"
import { Discovery } from "./discovery"

export class LocationError extends Schema.TaggedError<LocationError>()("Location.LocationError", {
  directory: Schema.String,
  message: Schema.String,
}) {}

export interface Interface {
  readonly directory: string
  readonly diagnostics: ReadonlyArray<Discovery.Diagnostic>
}

export class Service extends Context.Service<Service, Interface>()("core/Location") {}

/** The Location's real absolute directory, or a LocationError when it is missing or not a directory. */
export const check = (directory: string): Effect.Effect<string, LocationError> =>
  Effect.suspend(() => {
    // An empty path (a script's unset variable) would be the current directory: never taken for it.
    if (directory.trim() === "") {
      return Effect.fail(
        new LocationError({
          directory,
          message: "The Location is an empty path: give a directory (--location DIR), or leave the option out for the current directory",
        }),
      )
    }
    const absolute = resolve(directory)
    let isDirectory = false
    try {
      isDirectory = statSync(absolute).isDirectory()
    } catch {
      return Effect.fail(new LocationError({ directory: absolute, message: `Location ${absolute} does not exist` }))
    }
    return isDirectory
      ? Effect.succeed(realpathSync(absolute))
      : Effect.fail(new LocationError({ directory: absolute, message: `Location ${absolute} is not a directory` }))
  })

const discovered = (directory: string) =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const absolute = yield* check(directory)
      const registry = yield* Registry.Service
      const { diagnostics } = yield* Discovery.load(absolute, registry.tools)
      return Service.of({ directory: absolute, diagnostics })
    }),
  )

/**
 * A Location at `directory`: its registry (over the application placement) with its discovered tools. `builtins`
 * (the built-ins, then plugins) registers tools first, so that a Location's own tool of the same name wins.
 */
export const layer = <A = never, E = never, R = never>(
  directory: string,
  builtins?: Layer.Layer<A, E, Registry.Service | R>,
): Layer.Layer<Service | Registry.Service | A, LocationError | E, Registry.Application | Exclude<R, Registry.Service>> =>
  (builtins === undefined ? discovered(directory) : discovered(directory).pipe(Layer.provideMerge(builtins))).pipe(
    Layer.provideMerge(Registry.layer),
  ) as Layer.Layer<Service | Registry.Service | A, LocationError | E, Registry.Application | Exclude<R, Registry.Service>>
