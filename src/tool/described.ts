export * as Described from "./described"

// A tool described by JSON Schema alone, as a tool of another protocol arrives (an MCP server's): its input is
// checked against the JSON Schema it came with by a validator the caller gives, and its output's structured part
// is chosen by the caller; the same side table holds it, so it settles, resolves and goes stale like any tool.
// It never derives a schema, and it never exposes what it holds.

import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { Refusal } from "./refusal"
import * as Internal from "./internal"
import type { JsonSchema } from "./json-schema"
import type { Annotations, Any, Content, Context, Failure } from "./tool"

export interface Config<O> {
  readonly description: string
  /** The input's JSON Schema, an object at the root, passed through to definitions as given. */
  readonly inputSchema: JsonSchema.JsonSchema
  /** The structured output's JSON Schema; `{}` (anything) when not given. */
  readonly outputSchema?: JsonSchema.JsonSchema
  /** What the tool says about its effects (hints for clients, never authorization). */
  readonly annotations?: Annotations
  /** Why an input does not match `inputSchema`, or undefined when it does. */
  readonly validate: (input: unknown) => string | undefined
  readonly execute: (input: unknown, context: Context) => Effect.Effect<O, Failure | Refusal.Any>
  /** The parts the model reads. */
  readonly toModelOutput: (call: { readonly input: unknown; readonly output: O }) => ReadonlyArray<Content>
  /** The settlement's structured value of an output (valid against `outputSchema`); undefined for none. */
  readonly structured: (output: O) => unknown
}

const ToolProto = Internal.ToolProto

export const make = <O>(config: Config<O>): Any => {
  if (config.inputSchema.type !== "object") throw new TypeError("Described.make: the input schema must be an object")
  const input = Schema.Unknown.check(
    Schema.makeFilter((value) => {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return "expected an object"
      return config.validate(value) ?? true
    }),
  ) as Schema.Codec<unknown, unknown, never, never>
  const output = Schema.Unknown as Schema.Codec<unknown, unknown, never, never>
  const outputJson = Schema.Unknown.pipe(
    Schema.decodeTo(
      Schema.Unknown,
      SchemaTransformation.transform({ decode: (value) => value, encode: (value) => config.structured(value as O) }),
    ),
  ) as Schema.Codec<unknown, unknown, never, never>
  const tool = Object.freeze(Object.create(ToolProto)) as Any
  Internal.remember(
    tool,
    {
      description: config.description,
      input,
      output,
      execute: config.execute as Internal.Executor,
      toModelOutput: config.toModelOutput as Internal.Projector,
      checksPermissions: false,
      annotations: config.annotations === undefined ? undefined : Object.freeze({ ...config.annotations }),
    },
    config.inputSchema,
    { inputJson: input, outputJson, outputSchema: config.outputSchema ?? {} },
  )
  return tool
}
