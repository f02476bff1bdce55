export * as Hooks from "./hooks"

// The hooks a Location's plugins added (DESIGN §12), in installation order, and how a settlement meets them:
// definitions as advertised, the decoded input before the tool runs (replaced values are checked against the
// tool's input schema again), and the projection after. A hook that fails unexpectedly is reported as a HookError,
// which the settler turns into an operational failure; hooks never see call ids. Installing is ../plugin's.

import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { Rule } from "../permission/rule"
import type { Plugin } from "../plugin/plugin"
import type { Definition } from "../tool/definition"
import type * as Internal from "../tool/internal"
import type { Tool } from "../tool/tool"

/** A hook failed unexpectedly (a throw, a defect, an invalid replacement): an operational failure of the call. */
export class HookError extends Schema.TaggedError<HookError>()("Hooks.HookError", {
  plugin: Schema.String,
  hook: Schema.String,
  message: Schema.String,
  cause: Schema.Defect(),
}) {}

/** One plugin's hooks, named by its file. */
export interface Entry {
  readonly plugin: string
  readonly hooks: Plugin.Hooks
}

/** Which hooks of which plugin apply to a tool, for `core tools` and `core check`. */
export interface Applied {
  readonly plugin: string
  readonly hooks: ReadonlyArray<(typeof HOOK_NAMES)[number]>
}

const HOOK_NAMES = ["tool.definition", "tool.execute.before", "tool.execute.after"] as const

/** The hooks of one Location, in installation order; each plugin's entry goes when its Scope closes. */
export class Table {
  private entries: ReadonlyArray<Entry> = []

  /** Adds a plugin's hooks after the others; answers how to remove exactly them. */
  add(entry: Entry): () => void {
    this.entries = [...this.entries, entry]
    return () => {
      this.entries = this.entries.filter((candidate) => candidate !== entry)
    }
  }

  /** The entries whose hooks apply to `tool`, in installation order. */
  for(tool: string): ReadonlyArray<Entry> {
    if (this.entries.length === 0) return this.entries
    return this.entries.filter(({ hooks }) => hooks.tools === undefined || hooks.tools.some((pattern) => Rule.matches(pattern, tool)))
  }

  get size(): number {
    return this.entries.length
  }
}

/** The Location's table; none (no hooks) unless a host provides one. */
export const Current = Context.Reference<Table | undefined>("core/Hooks", { defaultValue: () => undefined })

/** A fresh table for one Location, shared by its settler and its plugins. */
export const layer = (): Layer.Layer<never> => Layer.succeed(Current, new Table()) as Layer.Layer<never>

/** Which hooks apply to `tool`, plugin by plugin. */
export const applied = (table: Table | undefined, tool: string): ReadonlyArray<Applied> =>
  (table?.for(tool) ?? []).flatMap(({ plugin, hooks }) => {
    const names = HOOK_NAMES.filter((name) => typeof hooks[name] === "function")
    return names.length === 0 ? [] : [{ plugin, hooks: names }]
  })

const failed = (plugin: string, hook: string, message: string) => (cause: unknown) =>
  new HookError({ plugin, hook, message: `${hook} hook of ${plugin} ${message}`, cause })

/**
 * Runs a hook's Effect (built by a call that may itself throw). Answers its success, an interruption or a failure
 * `allowed` accepts as an Exit; anything else (a throw, a defect, another error) is a HookError.
 */
const run = <A, E>(
  plugin: string,
  hook: string,
  make: () => Effect.Effect<A, E>,
  allowed: (error: unknown) => boolean = () => false,
): Effect.Effect<Exit.Exit<A, E>, HookError> =>
  Effect.suspend(() => {
    let effect: Effect.Effect<A, E>
    try {
      effect = make()
    } catch (cause) {
      return Effect.fail(failed(plugin, hook, `threw: ${messageOf(cause)}`)(cause))
    }
    if (!Effect.isEffect(effect)) {
      return Effect.fail(failed(plugin, hook, "did not return an Effect")(effect))
    }
    return Effect.exit(effect).pipe(
      Effect.flatMap((exit) => {
        if (Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause)) return Effect.succeed(exit)
        const error = Cause.findError(exit.cause)
        if (error._tag === "Success" && allowed(error.success)) return Effect.succeed(exit)
        return Effect.fail(failed(plugin, hook, `failed: ${Cause.pretty(exit.cause)}`)(Cause.squash(exit.cause)))
      }),
    )
  })

const messageOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "message" in cause ? String(cause.message) : String(cause)

/** Definitions as the plugins adjust them; the name and schemas stay. Throws HookError for a hook that fails. */
export const definitions = (
  table: Table | undefined,
  definitions: ReadonlyArray<Definition.Definition>,
): ReadonlyArray<Definition.Definition> => {
  if (table === undefined || table.size === 0) return definitions
  return definitions.map((definition) => {
    let description = definition.description
    for (const { plugin, hooks } of table.for(definition.name)) {
      const hook = hooks["tool.definition"]
      if (hook === undefined) continue
      let answer: { readonly description: string } | void
      try {
        answer = hook({ ...definition, description })
      } catch (cause) {
        throw failed(plugin, "tool.definition", `threw: ${messageOf(cause)}`)(cause)
      }
      if (answer === undefined) continue
      if (typeof answer !== "object" || answer === null || typeof answer.description !== "string") {
        throw failed(plugin, "tool.definition", "answered something other than { description: string }")(answer)
      }
      description = answer.description
    }
    return description === definition.description ? definition : { ...definition, description }
  })
}

const isDenied = (error: unknown): boolean =>
  typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "Plugin.Denied"

const INPUT_OPTIONS = { errors: "all", onExcessProperty: "error" } as const

/** What `tool.execute.before` hooks decided: the input to run with, or a refusal. */
export type BeforeOutcome =
  | { readonly _tag: "Run"; readonly input: unknown }
  | { readonly _tag: "Denied"; readonly plugin: string; readonly message: string }

/** Runs the before hooks in order; a replaced input must encode and decode again with the tool's input schema. */
export const before = (
  table: Table | undefined,
  name: string,
  tool: Internal.Record,
  input: unknown,
): Effect.Effect<BeforeOutcome, HookError> =>
  Effect.gen(function* () {
    let current = input
    for (const { plugin, hooks } of table?.for(name) ?? []) {
      const hook = hooks["tool.execute.before"]
      if (hook === undefined) continue
      const exit = yield* run(plugin, "tool.execute.before", () => hook({ tool: name, input: current }), isDenied)
      if (Exit.isFailure(exit)) {
        if (Cause.hasInterruptsOnly(exit.cause)) return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
        const error = Cause.findError(exit.cause)
        const message = error._tag === "Success" ? String(error.success.message) : "refused"
        return { _tag: "Denied", plugin, message } satisfies BeforeOutcome
      }
      const answer = exit.value
      if (answer === undefined) continue
      if (typeof answer !== "object" || answer === null || !("input" in answer)) {
        return yield* failed(plugin, "tool.execute.before", "answered something other than { input } or nothing")(answer)
      }
      const encoded = yield* Schema.encodeUnknownEffect(tool.inputJson)(answer.input, INPUT_OPTIONS).pipe(
        Effect.flatMap((json) => Schema.decodeUnknownEffect(tool.inputJson)(json, INPUT_OPTIONS)),
        Effect.mapError((issue) =>
          failed(plugin, "tool.execute.before", `replaced the input of ${name} with a value its input schema refuses: ${issue.message}`)(issue),
        ),
      )
      current = encoded
    }
    return { _tag: "Run", input: current } satisfies BeforeOutcome
  })

/** Runs the after hooks in order over the projection; answers the content the model reads. */
export const after = (
  table: Table | undefined,
  name: string,
  call: { readonly input: unknown; readonly output: unknown; readonly content: ReadonlyArray<Tool.Content> },
  decodeContent: (parts: unknown) => Exit.Exit<ReadonlyArray<Tool.Content>, unknown>,
): Effect.Effect<ReadonlyArray<Tool.Content>, HookError> =>
  Effect.gen(function* () {
    let content = call.content
    for (const { plugin, hooks } of table?.for(name) ?? []) {
      const hook = hooks["tool.execute.after"]
      if (hook === undefined) continue
      const exit = yield* run(plugin, "tool.execute.after", () => hook({ tool: name, input: call.input, output: call.output, content }))
      if (Exit.isFailure(exit)) return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
      const answer = exit.value
      if (answer === undefined) continue
      const parts =
        typeof answer === "object" && answer !== null && "content" in answer
          ? typeof answer.content === "string"
            ? [{ type: "text", text: answer.content }]
            : answer.content
          : undefined
      const decoded = parts === undefined ? undefined : decodeContent(parts)
      if (decoded === undefined || Exit.isFailure(decoded)) {
        return yield* failed(plugin, "tool.execute.after", "answered something other than { content } of text or file parts")(answer)
      }
      content = decoded.value
    }
    return content
  })
