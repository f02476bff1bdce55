export * as Modules from "./modules"

// Serves `effect`, its modules and `@core/tool` to tool files loaded at run time, from the runtime's own copies,
// so tool values, schemas and Tool.Failure are the very instances the runtime checks, with or without a
// node_modules beside the tool. Installs a Bun plugin once per process. Modules load lazily: the `effect`
// barrel hands out namespaces that evaluate their module on first use, which keeps a cold start cold.

import * as Effect from "effect/Effect"
import * as EffectFunction from "effect/Function"
import * as Schema from "effect/Schema"
import { EFFECT_MODULES } from "./effect-modules"
import * as Sdk from "./index"
import { SDK_SPECIFIER } from "./served"

export { isServed, SDK_SPECIFIER } from "./served"

export { SUBPACKAGES } from "./subpackages"

/** What the `effect` barrel re-exports from `effect/Function` besides its namespaces. */
const FUNCTION_REEXPORTS = ["absurd", "cast", "flow", "hole", "identity", "pipe"] as const

/** A stand-in for a module namespace that evaluates the module when it is first looked into. */
const lazyNamespace = (load: () => object): object => {
  let namespace: object | undefined
  const real = () => (namespace ??= load())
  return new Proxy(Object.create(null) as object, {
    get: (_, key) => Reflect.get(real(), key),
    has: (_, key) => Reflect.has(real(), key),
    ownKeys: () => Reflect.ownKeys(real()),
    getOwnPropertyDescriptor: (_, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(real(), key)
      return descriptor === undefined ? undefined : { ...descriptor, configurable: true }
    },
  })
}

/** The served `effect` barrel: every `effect/<Module>` namespace by name, plus the Function re-exports. */
export const barrel = (): Record<string, unknown> => {
  const exports: Record<string, unknown> = {}
  for (const [specifier, load] of Object.entries(effectModules)) {
    const name = specifier.slice("effect/".length)
    if (specifier.startsWith("effect/") && /^[A-Z]/.test(name)) exports[name] = EVALUATED[specifier] ?? lazyNamespace(load)
  }
  const functions = effectModules["effect/Function"]!() as Record<string, unknown>
  for (const name of FUNCTION_REEXPORTS) exports[name] = functions[name]
  return exports
}

/**
 * In the compiled binary each loader is a bundled `require`. Run from source, a bare `require("effect/X")` would
 * be answered by this very plugin (and recurse), so it loads the module by its resolved path instead: the
 * module cache then hands back the instance the runtime already uses.
 */
const COMPILED = import.meta.path.startsWith("/$bunfs/")

/**
 * The modules nearly every tool file imports, which the runtime has evaluated before any tool file loads, served as
 * their own namespaces: a bundled `require` of one copies its exports into a new object (for Effect and Schema,
 * hundreds of properties: a millisecond of a cold start).
 */
const EVALUATED: Readonly<Record<string, object>> = {
  "effect/Effect": Effect,
  "effect/Function": EffectFunction,
  "effect/Schema": Schema,
}

const effectModules: Readonly<Record<string, () => object>> = COMPILED
  ? { ...EFFECT_MODULES, ...Object.fromEntries(Object.entries(EVALUATED).map(([specifier, namespace]) => [specifier, () => namespace])) }
  : Object.fromEntries(
      Object.keys(EFFECT_MODULES).map((specifier) => [specifier, () => require(Bun.resolveSync(specifier, import.meta.dir))]),
    )

const loaders: Readonly<Record<string, () => object>> = {
  ...effectModules,
  effect: barrel,
  [SDK_SPECIFIER]: () => Sdk,
}


let installed = false

export const install = (): void => {
  if (installed) return
  installed = true
  Bun.plugin({
    name: "core-modules",
    setup(build) {
      for (const [specifier, load] of Object.entries(loaders)) {
        build.module(specifier, () => ({ exports: load() as Record<string, unknown>, loader: "object" }))
      }
    },
  })
}
