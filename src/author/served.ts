export * as Served from "./served"

// The bare specifiers core serves to tool files and plugins from its own copies (./modules): only these reach no
// node_modules. Every other one, `effect/cli` or `@core/util` as much as any package, is a package's files that a
// tool's closure loads, and protected as such.

import { EFFECT_MODULES } from "./effect-modules"

export const SDK_SPECIFIER = "@core/tool"

/** Whether a bare specifier is one the runtime serves itself. */
export const isServed = (specifier: string): boolean =>
  specifier === "effect" || specifier === SDK_SPECIFIER || Object.hasOwn(EFFECT_MODULES, specifier)
