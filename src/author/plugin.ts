export * as Plugin from "./plugin"

// The plugin value authors default-export from `<location>/plugins/*.ts` or `$CORE_HOME/plugins/*.ts` (DESIGN §12):
// `Plugin.make({ install })`. The installation Effect runs once per Location in a Scope the plugin owns and gets
// only the capabilities named here (register tools, the Location's directory, permission checks, the file
// boundary, the shell producer), never the registry. It sits on the tool floor beside `Tool`: it names the
// capabilities as services, and the Location floor (./plugins.ts) provides them.

import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { Refusal } from "../tool/refusal"
import { Tool } from "../tool/tool"
import * as Internal from "./plugin-internal"

/** A registration the plugin asked for was refused: an invalid name, or a value not made by `Tool.make`. */
export class RegistrationError extends Schema.TaggedError<RegistrationError>()("Plugin.RegistrationError", {
  name: Schema.optionalKey(Schema.String),
  message: Schema.String,
}) {}

/** A `tool.execute.before` hook refuses the call: it settles as an error of kind `denied` with this message. */
export class Denied extends Schema.TaggedError<Denied>()("Plugin.Denied", {
  message: Schema.String,
}) {}

/** Registers tools into the Location, in the plugin's Scope: closing it (reload, Location let go) removes them. */
export class Tools extends Context.Service<
  Tools,
  {
    /** Registers every `name: tool` of the record, atomically (one invalid name or value changes nothing). */
    readonly register: (record: Readonly<Record<string, Tool.Any>>) => Effect.Effect<void, RegistrationError, Scope.Scope>
  }
>()("core/Plugin/Tools") {}

/** The Location the plugin is installed in. */
export class Location extends Context.Service<
  Location,
  {
    /** Its real, absolute directory. */
    readonly directory: string
  }
>()("core/Plugin/Location") {}

/** One permission check, as built-in tools make them. */
export interface Check {
  /** The action rules name (`read`, `edit`, `bash`, a tool's own name ...). */
  readonly action: string
  /** What the action touches: paths, commands, or "*" for the whole action. */
  readonly resources: ReadonlyArray<string>
  /** The patterns an "always" reply saves; by default the resources themselves. */
  readonly save?: ReadonlyArray<string>
}

/** The Location's permission service: the same rules, asks and saved approvals the built-ins use. */
export class Permission extends Context.Service<
  Permission,
  {
    /**
     * Succeeds when the call's agent may do `check` (asking a person when a rule says ask); fails with the refusal
     * otherwise, a rule's deny before anything is asked. Give it the call's context: the ids tie an ask and an
     * approval to that call.
     */
    readonly assert: (context: Tool.Context, check: Check) => Effect.Effect<void, Refusal.Any>
  }
>()("core/Plugin/Permission") {}

/** Where a path really is, after following every symlink. */
export interface Resolved {
  /** Absolute, every symlink followed. */
  readonly path: string
  readonly exists: boolean
  readonly kind: "file" | "directory" | "other" | "missing"
  /** Whether it is the Location or under it. */
  readonly inside: boolean
}

/** The Location boundary: resolves a path and authorizes touching it, as the built-in file tools do. */
export class Boundary extends Context.Service<
  Boundary,
  {
    /** Where `path` (absolute, or relative to the Location) really leads; a Tool.Failure when it cannot be used. */
    readonly resolve: (path: string) => Effect.Effect<Resolved, Tool.Failure>
    /**
     * Checks `path` for the call as the built-ins do (one authorization path): outside the Location
     * `external_directory` on its directory first, then `action` (by default `read` or `edit` after `access`) on
     * the path; a rule denying either refuses before anything is asked. Touch only the answered `path`, and only
     * on success.
     */
    readonly authorize: (
      context: Tool.Context,
      request: { readonly path: string; readonly access: "read" | "write"; readonly action?: string },
    ) => Effect.Effect<Resolved, Tool.Failure | Refusal.Any>
  }
>()("core/Plugin/Boundary") {}

/** What one stream of a process carried, bounded as the shell producer captures it. */
export interface Captured {
  /** What was kept (all of it when `complete`). */
  readonly text: string
  /** Every byte the stream carried. */
  readonly bytes: number
  /** False when bytes were dropped beyond the capture limit. */
  readonly complete: boolean
}

export interface Run {
  /** The program and its arguments (no shell: pass `["sh", "-c", line]` for one). */
  readonly argv: ReadonlyArray<string>
  /** Where to run, absolute or relative to the Location; the Location by default. */
  readonly cwd?: string
  readonly stdin?: Uint8Array
  /** Wall-clock limit; the Location's default when absent, never more than its maximum. */
  readonly timeoutMs?: number
}

export interface Ran {
  /** Null when a signal ended it. */
  readonly exitCode: number | null
  readonly signal: string | null
  /** Set when the timeout ended it. */
  readonly timedOut: boolean
  readonly stdout: Captured
  readonly stderr: Captured
}

/**
 * The shell producer built-in `bash` runs on: its own process group under a per-call supervisor (every descendant
 * ends with the run, or when it is interrupted), bounded capture, timeouts, and the OS sandbox (writes only in the
 * Location and temp) where the kernel has one. It checks no permission: assert what the model chose first.
 * `@core/tool/testing` runs no processes: there every run fails with a Tool.Failure saying so, unless the test
 * Location was given a stand-in (`location({ shell })`).
 */
export class Shell extends Context.Service<
  Shell,
  { readonly run: (request: Run) => Effect.Effect<Ran, Tool.Failure> }
>()("core/Plugin/Shell") {}

/** Everything an installation may use. */
export type Capabilities = Tools | Location | Permission | Boundary | Shell

/** A definition as advertised, for `tool.definition`. */
export interface Definition {
  readonly name: string
  readonly description: string
  readonly inputSchema: unknown
  readonly outputSchema: unknown
}

/** A call about to run, for `tool.execute.before`: the tool's name and its decoded input. No ids. */
export interface Before {
  readonly tool: string
  readonly input: unknown
}

/** A call that ran, for `tool.execute.after`: its decoded input, encoded output and the projection so far. */
export interface After {
  readonly tool: string
  readonly input: unknown
  readonly output: unknown
  readonly content: ReadonlyArray<Tool.Content>
}

/**
 * What a plugin may hook, for the tools whose names match `tools` (`*` and `?` wildcards; every tool by default),
 * whoever registered them. Hooks run in installation order, inside the settlement after the stale check and the
 * permission check; one that fails unexpectedly (a throw, a defect) is an operational failure of the call.
 */
export interface Hooks {
  readonly tools?: ReadonlyArray<string>
  /** Adjusts a definition as advertised: answer `{ description }` to replace it; the name never changes. */
  readonly "tool.definition"?: (definition: Definition) => { readonly description: string } | void
  /**
   * Sees the decoded input: answer `{ input }` to replace it with another value of the tool's input type (checked
   * again against its schema), nothing to keep it, or fail with `Plugin.Denied` to refuse the call.
   */
  readonly "tool.execute.before"?: (call: Before) => Effect.Effect<{ readonly input: unknown } | void, Denied>
  /** Sees the result: answer `{ content }` to replace what the model reads (still bounded), nothing to keep it. */
  readonly "tool.execute.after"?: (
    result: After,
  ) => Effect.Effect<{ readonly content: string | ReadonlyArray<Tool.Content> } | void>
}

/** The hook names, in the order a call meets them. */
export const HOOKS = ["tool.definition", "tool.execute.before", "tool.execute.after"] as const

export interface Config<E> {
  /**
   * Runs once per Location, in the plugin's own Scope: acquire resources there (`Effect.acquireRelease`), build
   * tools that capture them and register them through `Plugin.Tools`. Answer the plugin's hooks, if any.
   */
  readonly install: Effect.Effect<Hooks | void, E, Capabilities | Scope.Scope>
}

declare const PluginBrand: unique symbol

/** The opaque plugin value. */
export interface Plugin {
  readonly [PluginBrand]: true
}

const PluginProto: object = Object.freeze(
  Object.create(null, { [Symbol.toStringTag]: { value: "Plugin" }, toJSON: { value: () => "<Plugin>" } }),
)

export const make = <E>(config: Config<E>): Plugin => {
  if (typeof config !== "object" || config === null) throw new TypeError("Plugin.make expects a config object")
  if (typeof config.install !== "object" || config.install === null || !("pipe" in config.install)) {
    throw new TypeError("Plugin.make: `install` must be an Effect (Effect.gen(function* () { ... }))")
  }
  const plugin = Object.freeze(Object.create(PluginProto)) as Plugin
  Internal.remember(plugin, config.install as Internal.Installation)
  return plugin
}

/** True only for values made by `Plugin.make` in this runtime. */
export const isPlugin = (value: unknown): value is Plugin => Internal.has(value)
