export * as Definition from "./definition"

// Derives what a model is offered for one registered name: description plus input and output JSON Schema,
// computed from the tool's Effect schemas once per (tool, name) and then reused, so a name yields the identical
// definition object every turn.

import * as Schema from "effect/Schema"
import * as Internal from "./internal"
import { JsonSchema } from "./json-schema"
import type { Tool } from "./tool"

/** `Tool.Annotations` as a schema, for the edges that read or write a definition as JSON. */
export const Annotations: Schema.Codec<Tool.Annotations> = Schema.Struct({
  readOnly: Schema.optionalKey(Schema.Boolean),
  destructive: Schema.optionalKey(Schema.Boolean),
  idempotent: Schema.optionalKey(Schema.Boolean),
  openWorld: Schema.optionalKey(Schema.Boolean),
})

export interface Definition {
  readonly name: string
  readonly description: string
  readonly inputSchema: JsonSchema.JsonSchema
  readonly outputSchema: JsonSchema.JsonSchema
  /** What the tool declares about its effects; absent when it declares nothing. */
  readonly annotations?: Tool.Annotations
}

/** The cached definition of `tool` under `name`. The tool must have been made by `Tool.make`. */
export const of = (tool: Tool.Any, name: string): Definition => {
  const record = Internal.get(tool)
  if (record === undefined) throw new TypeError("Definition.of: not a tool made by Tool.make")
  const cached = record.definitions.get(name) as Definition | undefined
  if (cached !== undefined) return cached
  // A copy is frozen, never the author's own annotation objects that the schemas may share.
  const definition = frozenCopy({
    name,
    description: record.description,
    inputSchema: record.inputSchema,
    outputSchema: record.outputSchema ?? JsonSchema.output(record.output),
    ...(record.annotations === undefined ? {} : { annotations: record.annotations }),
  }) as Definition
  record.definitions.set(name, definition)
  return definition
}

/**
 * A frozen deep copy of `value`, as `structuredClone` and then freezing every part would make it, in one walk: plain
 * objects and arrays (holes and keys besides indices kept) are copied here, anything else by `structuredClone` (which
 * refuses a function or a symbol). The copy keeps the original's strings rather than copies of them, so whoever
 * reads a definition compares a keyword's value with a string it already holds. Unlike `structuredClone`, an object
 * met twice is copied twice: a derived schema is a tree.
 */
const frozenCopy = (value: unknown): unknown => {
  if (typeof value === "function" || typeof value === "symbol") return structuredClone(value)
  if (typeof value !== "object" || value === null) return value
  const prototype = Object.getPrototypeOf(value)
  const array = Array.isArray(value)
  if (array ? prototype !== Array.prototype : prototype !== Object.prototype && prototype !== null) {
    return deepFreeze(structuredClone(value))
  }
  const copy = (array ? new Array((value as ReadonlyArray<unknown>).length) : {}) as Record<string, unknown>
  for (const key of Object.keys(value)) {
    const item = frozenCopy((value as Record<string, unknown>)[key])
    // "__proto__" is a legal property name in a schema: a key of the copy, never its prototype.
    if (key === "__proto__") Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true })
    else copy[key] = item
  }
  return Object.freeze(copy)
}

const deepFreeze = <A>(value: A): A => {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
  }
  return value
}
