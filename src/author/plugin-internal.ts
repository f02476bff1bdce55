// The private side of a plugin value: its installation Effect, keyed by the plugin object. Only the installer
// (./plugins.ts) reads it; `@core/tool` never exports it, so a plugin value exposes nothing and cannot be forged.

import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Capabilities, Hooks } from "./plugin"

export type Installation = Effect.Effect<Hooks | void, unknown, Capabilities | Scope.Scope>

const installs = new WeakMap<object, Installation>()

export const remember = (plugin: object, install: Installation): void => {
  installs.set(plugin, install)
}

export const has = (value: unknown): boolean => typeof value === "object" && value !== null && installs.has(value)

/** The installation Effect of a value made by `Plugin.make`, or undefined for anything else. */
export const installOf = (value: unknown): Installation | undefined =>
  typeof value === "object" && value !== null ? installs.get(value) : undefined
