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
import { Plugin } from "../author/plugin"
import type { Definition } from "../tool/definition"
import * as Internal from "../tool/internal"
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
  readonly hooks: ReadonlyArray<(typeof Plugin.HOOKS)[number]>
}

/** The hooks of one Location, in installation order; each plugin's entry goes when its Scope closes. */
export class Chain {
  private entries: ReadonlyArray<Entry> = []
  /** The entries applying to each tool name met so far (settles are hot: match the patterns once per name). */
  private readonly byTool = new Map<string, ReadonlyArray<Entry>>()
  /** Which kinds of execute hook apply to each tool met so far (cleared with byTool). */
  private readonly hooking = new Map<string, Readonly<Record<"tool.execute.before" | "tool.execute.after", boolean>>>()

  /** Changes with every add and remove, so what was derived from the table knows when to derive it again. */
  version = 0

  /** Adds a plugin's hooks after the others; answers how to remove exactly them. */
  add(entry: Entry): () => void {
    this.entries = [...this.entries, entry]
    this.byTool.clear()
    this.hooking.clear()
    this.version++
    return () => {
      this.entries = this.entries.filter((candidate) => candidate !== entry)
      this.byTool.clear()
      this.hooking.clear()
      this.version++
    }
  }

  /** The entries whose hooks apply to `tool`, in installation order. */
  for(tool: string): ReadonlyArray<Entry> {
    if (this.entries.length === 0) return this.entries
    let applying = this.byTool.get(tool)
    if (applying === undefined) {
      applying = this.entries.filter(
        ({ hooks }) => hooks.tools === undefined || hooks.tools.some((pattern) => Rule.matches(pattern, tool)),
      )
      this.byTool.set(tool, applying)
    }
    return applying
  }

  /** Whether any hook of that kind applies to `tool` (settles skip the kinds none of the plugins hooks). */
  has(tool: string, hook: "tool.execute.before" | "tool.execute.after"): boolean {
    let kinds = this.hooking.get(tool)
    if (kinds === undefined) {
      const entries = this.for(tool)
      kinds = {
        "tool.execute.before": entries.some(({ hooks }) => hooks["tool.execute.before"] !== undefined),
        "tool.execute.after": entries.some(({ hooks }) => hooks["tool.execute.after"] !== undefined),
      }
      this.hooking.set(tool, kinds)
    }
    return kinds[hook]
  }

  get size(): number {
    return this.entries.length
  }
}

/** The Location's table; none (no hooks) unless a host provides one. */
export const Current = Context.Reference<Chain | undefined>("core/Hooks", { defaultValue: () => undefined })

/** A fresh table for one Location, shared by its settler and its plugins. */
export const layer = (): Layer.Layer<never> => Layer.succeed(Current, new Chain()) as Layer.Layer<never>

/** Which hooks apply to `tool`, plugin by plugin. */
export const applied = (table: Chain | undefined, tool: string): ReadonlyArray<Applied> =>
  (table?.for(tool) ?? []).flatMap(({ plugin, hooks }) => {
    const names = Plugin.HOOKS.filter((name) => typeof hooks[name] === "function")
    return names.length === 0 ? [] : [{ plugin, hooks: names }]
  })

const failed = (plugin: string, hook: string, message: string) => (cause: unknown) =>
  new HookError({ plugin, hook, message: `${hook} hook of ${plugin} ${message}`, cause })

/**
 * A read-only view of what a hook is handed. A hook that changed the input or the output in place (`input.n = "3"`,
 * not an answer) got past the schema checks: the tool ran on input its schema refuses, and a success carried
 * structured output its schema refuses (law 2). A hook changes the call only by answering, which is checked; a
 * change in place fails the hook, saying so. Only plain objects and arrays are viewed (a Date or a class instance
 * is handed as it is, its methods intact).
 */
const readOnly = <A>(value: A): A => {
  if (typeof value !== "object" || value === null) return value
  const prototype = Object.getPrototypeOf(value)
  if (prototype !== Object.prototype && prototype !== Array.prototype && prototype !== null) return value
  // A frozen (or sealed) value's members must be read through a proxy as they are (the proxy's invariant), so a
  // member left writable by a shallow freeze was handed as it is: its copy is viewed instead, its members viewed.
  const view = new Proxy(Object.isExtensible(value) ? value : Array.isArray(value) ? [...value] : { ...value }, READ_ONLY)
  views.add(view)
  return view as A
}

/** The views handed out: a change is refused only when it is made on one of them. */
const views = new WeakSet<object>()

const refuseChange = (_target: object, key: PropertyKey): never => {
  throw new TypeError(
    `a hook changed ${typeof key === "symbol" ? "a property" : JSON.stringify(key)} of what it was handed in place: ` +
      "what a hook is handed is read-only; it changes the call by answering ({ input } or { content })",
  )
}

const READ_ONLY: ProxyHandler<object> = {
  get: (target, key) => readOnly(Reflect.get(target, key)),
  // A descriptor's value is viewed as a read of it is: it is not a way around the view.
  getOwnPropertyDescriptor: (target, key) => {
    const descriptor = Reflect.getOwnPropertyDescriptor(target, key)
    if (descriptor !== undefined && "value" in descriptor) descriptor.value = readOnly(descriptor.value)
    return descriptor
  },
  // A view can also be the prototype of a hook's own object: `Object.assign({}, input.env)` of an input holding a
  // `__proto__` key (JSON's, a model's) makes it so, and each later key assigned to that object reaches this trap.
  // That object is the hook's to change: the key is made its own, as if the view were any other prototype.
  set: (target, key, value, receiver) =>
    views.has(receiver)
      ? refuseChange(target, key)
      : Reflect.defineProperty(receiver, key, { value, writable: true, enumerable: true, configurable: true }),
  defineProperty: refuseChange,
  deleteProperty: refuseChange,
  setPrototypeOf: () => refuseChange({}, "prototype"),
  preventExtensions: () => false,
}

/**
 * What a before hook is handed: the tool's name and the input, as one read-only view (one proxy per call; what it
 * holds is viewed as it is read, so a hook that looks at nothing costs no more). A plain object under the view, so
 * that spreading it, `JSON.stringify` and `Object.entries` see every member, each viewed.
 */
const beforeArgument = (tool: string, input: unknown) => readOnly({ tool, input })

/** What an after hook is handed: the tool's name, the input, the output and the content, as one read-only view. */
const afterArgument = (tool: string, input: unknown, output: unknown, content: ReadonlyArray<Tool.Content>) =>
  readOnly({ tool, input, output, content })

/**
 * A hook's Effect, from a call of `hook` with `argument` that may throw or answer something else: those become
 * defects, as a failing Effect's.
 */
const invoke = <I, A, E>(hook: (argument: I) => Effect.Effect<A, E>, argument: I): Effect.Effect<A, E> => {
  let effect: Effect.Effect<A, E>
  try {
    effect = hook(argument)
  } catch (cause) {
    return Effect.die(cause)
  }
  return Effect.isEffect(effect) ? effect : Effect.die(new TypeError(`answered ${typeof effect}, not an Effect`))
}

/** The HookError of a hook whose Effect ended in `cause` (anything but an interruption or an allowed failure). */
const hookFailure = (plugin: string, hook: string, cause: Cause.Cause<unknown>): HookError => {
  const error = Cause.findError(cause)
  const reason = error._tag === "Success" ? error.success : Cause.squash(cause)
  return failed(plugin, hook, `failed: ${messageOf(reason)}`)(reason)
}

const EMPTY: ReadonlyArray<Entry> = []

/** Whether an Effect is already a success (`Effect.succeed`, `Effect.void` are), so its value can be read now. */
export const isDone = <A, E>(effect: Effect.Effect<A, E>): effect is Exit.Success<A, never> => Exit.isExit(effect) && Exit.isSuccess(effect)

const messageOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "message" in cause ? String(cause.message) : String(cause)

/** Definitions as the plugins adjust them; the name and schemas stay. Throws HookError for a hook that fails. */
export const definitions = (
  table: Chain | undefined,
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

/** A `tool.execute.before` hook of `plugin` refused the call: it settles as denied with `message`. */
export class Denial {
  constructor(
    readonly plugin: string,
    readonly message: string,
  ) {}
}

/**
 * Runs the before hooks in order; a replaced input must encode and decode again with the tool's input schema. Answers
 * the input to run with, or a Denial; at once (a done Effect) when every hook answered at once.
 */
export const before = (table: Chain | undefined, name: string, tool: Internal.Record, input: unknown): Effect.Effect<unknown, HookError> => {
  const entries = table === undefined ? EMPTY : table.for(name)
  if (!entries.some((entry) => entry.hooks["tool.execute.before"] !== undefined) || !unviewed(input, 0)) {
    return beforeFrom(entries, 0, name, tool, input)
  }
  // A Date or a class instance (a Schema.Class input) is handed as it is, methods and all, so a change made in place
  // is found by the input's JSON before and after the hooks: the tool never runs on an input its schema did not check.
  // Its JSON, or undefined where its schema no longer encodes it (a changed member it refuses).
  const json = (value: unknown) =>
    Effect.match(Schema.encodeUnknownEffect(tool.inputJson)(value, Internal.INPUT_OPTIONS), {
      onFailure: () => undefined,
      onSuccess: (encoded) => JSON.stringify(encoded),
    })
  return Effect.flatMap(json(input), (was) =>
    Effect.flatMap(beforeFrom(entries, 0, name, tool, input), (result) =>
      result !== input
        ? Effect.succeed(result)
        : Effect.flatMap(json(input), (now) =>
            now !== undefined && now === was
              ? Effect.succeed(input)
              : Effect.fail(
                  new HookError({
                    plugin: entries.filter((entry) => entry.hooks["tool.execute.before"] !== undefined).map((entry) => entry.plugin).join(", "),
                    hook: "tool.execute.before",
                    message:
                      `a tool.execute.before hook changed the input of ${name} in place: what a hook is handed is read-only; ` +
                      "it changes the call by answering ({ input })",
                    cause: undefined,
                  }),
                ),
          ),
    ),
  )
}

/** Whether `value` holds what `readOnly` hands as it is (a Date, a class instance): a change to it is not refused. */
const unviewed = (value: unknown, depth: number): boolean => {
  if (typeof value !== "object" || value === null || depth > 64) return false
  const prototype = Object.getPrototypeOf(value)
  if (prototype !== Object.prototype && prototype !== Array.prototype && prototype !== null) return true
  for (const key in value) if (unviewed((value as Record<string, unknown>)[key], depth + 1)) return true
  return false
}

/** The before hooks of `entries` from `index` on, over the input `current`. */
const beforeFrom = (
  entries: ReadonlyArray<Entry>,
  index: number,
  name: string,
  tool: Internal.Record,
  current: unknown,
): Effect.Effect<unknown, HookError> => {
  let effect: Effect.Effect<{ readonly input: unknown } | void, Plugin.Denied>
  for (;; index++) {
    if (index === entries.length) return Effect.succeed(current)
    const hook = entries[index]!.hooks["tool.execute.before"]
    if (hook === undefined) continue
    effect = invoke(hook, beforeArgument(name, current))
    // A hook that answered nothing at once (Effect.void) passes on without a step of its own: hooks are per call.
    if (!(isDone(effect) && effect.value === undefined)) break
  }
  const { plugin } = entries[index]!
  return Effect.matchCauseEffect(effect, {
    onFailure: (cause): Effect.Effect<unknown, HookError> => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
      const error = Cause.findError(cause)
      if (error._tag === "Success" && isDenied(error.success)) return Effect.succeed(new Denial(plugin, String(error.success.message)))
      return Effect.fail(hookFailure(plugin, "tool.execute.before", cause))
    },
    onSuccess: (answer) => {
      if (answer === undefined) return beforeFrom(entries, index + 1, name, tool, current)
      if (typeof answer !== "object" || answer === null || !("input" in answer)) {
        return Effect.fail(failed(plugin, "tool.execute.before", "answered something other than { input } or nothing")(answer))
      }
      return Schema.encodeUnknownEffect(tool.inputJson)(answer.input, Internal.INPUT_OPTIONS).pipe(
        // Decoded from a copy of its JSON: what the hook answered may hold the views it was handed (an encoding
        // hands unchanged values on as they are), and the tool gets its own input, never a hook's view.
        Effect.flatMap((json) =>
          Schema.decodeUnknownEffect(tool.inputJson)(json === undefined ? json : JSON.parse(JSON.stringify(json)), Internal.INPUT_OPTIONS),
        ),
        Effect.mapError((issue) =>
          failed(
            plugin,
            "tool.execute.before",
            `replaced the input of ${name} with a value its input schema refuses: ${issue.message}`,
          )(issue),
        ),
        Effect.flatMap((replaced) => beforeFrom(entries, index + 1, name, tool, replaced)),
      )
    },
  })
}

/** What an after hook sees of a call. */
interface Ran {
  readonly input: unknown
  readonly output: unknown
  readonly content: ReadonlyArray<Tool.Content>
}

/** Runs the after hooks in order over the projection; answers the content the model reads. */
export const after = (
  table: Chain | undefined,
  name: string,
  call: Ran,
  decodeContent: (parts: unknown) => Exit.Exit<ReadonlyArray<Tool.Content>, unknown>,
): Effect.Effect<ReadonlyArray<Tool.Content>, HookError> =>
  afterFrom(table === undefined ? EMPTY : table.for(name), 0, name, call, decodeContent, call.content)

/** The after hooks of `entries` from `index` on, over the content `content`. */
const afterFrom = (
  entries: ReadonlyArray<Entry>,
  index: number,
  name: string,
  call: Ran,
  decodeContent: (parts: unknown) => Exit.Exit<ReadonlyArray<Tool.Content>, unknown>,
  content: ReadonlyArray<Tool.Content>,
): Effect.Effect<ReadonlyArray<Tool.Content>, HookError> => {
  let effect: Effect.Effect<{ readonly content: string | ReadonlyArray<Tool.Content> } | void>
  for (;; index++) {
    if (index === entries.length) return Effect.succeed(content)
    const hook = entries[index]!.hooks["tool.execute.after"]
    if (hook === undefined) continue
    effect = invoke(hook, afterArgument(name, call.input, call.output, content))
    if (!(isDone(effect) && effect.value === undefined)) break
  }
  const { plugin } = entries[index]!
  return Effect.matchCauseEffect(effect, {
    onFailure: (cause): Effect.Effect<ReadonlyArray<Tool.Content>, HookError> =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.fail(hookFailure(plugin, "tool.execute.after", cause)),
    onSuccess: (answer) => {
      if (answer === undefined) return afterFrom(entries, index + 1, name, call, decodeContent, content)
      const parts =
        typeof answer === "object" && answer !== null && "content" in answer
          ? typeof answer.content === "string"
            ? [{ type: "text", text: answer.content }]
            : answer.content
          : undefined
      const decoded = parts === undefined ? undefined : decodeContent(parts)
      if (decoded === undefined || Exit.isFailure(decoded)) {
        return Effect.fail(
          failed(plugin, "tool.execute.after", "answered something other than { content } of text or file parts")(answer),
        )
      }
      return afterFrom(entries, index + 1, name, call, decodeContent, decoded.value)
    },
  })
}
