export * as Application from "./application"

// The process placement's own tools: `$CORE_HOME/tools/*.ts`, loaded by the same discovery as a Location's and
// registered for the life of the process (the layer's scope). Shared by every Location.

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Registry } from "../registry/registry"
import { Discovery } from "./discovery"

export interface Interface {
  readonly home: string
  readonly diagnostics: ReadonlyArray<Discovery.Diagnostic>
}

export class Service extends Context.Service<Service, Interface>()("core/Application") {}

/** Application tools discovered under `home`, over a fresh process placement. */
export const layer = (home: string): Layer.Layer<Service | Registry.Application> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const application = yield* Registry.Application
      const { diagnostics } = yield* Discovery.load(home, application.tools)
      return Service.of({ home, diagnostics })
    }),
  ).pipe(Layer.provideMerge(Registry.applicationLayer))
