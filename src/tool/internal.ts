// The private side of a tool value: its executor, schemas and derived definitions, keyed by the tool object.
// Only the registry and the settlement pipeline read this; the tool author's surface (`@core/tool`) never exports it.

import * as Schema from "effect/Schema"
import type * as Effect from "effect/Effect"
import type { Refusal } from "./refusal"
import type { Annotations, Content, Context, Failure } from "./tool"

/**
 * How every input is decoded (by the settler, after a plugin's hook replaced it, and when a call is explained):
 * inputs come from a model, so every problem is reported, with the value, and keys the schema does not know are
 * refused.
 */
export const INPUT_OPTIONS = { errors: "all", reportInput: true, onExcessProperty: "error" } as const

/**
 * The same, for a call explained to a host (`core check`, the check route) rather than settled for the model: the
 * value is not quoted back, so a smuggled key's value (a path, say) never appears in what the host is shown.
 */
export const EXPLAIN_OPTIONS = { ...INPUT_OPTIONS, reportInput: false } as const

export type Executor = (input: unknown, context: Context) => Effect.Effect<unknown, Failure | Refusal.Any>
export type Projector = (call: { readonly input: unknown; readonly output: unknown }) => string | ReadonlyArray<Content>

export interface Record {
  readonly description: string
  readonly input: Schema.Codec<unknown, unknown, never, never>
  readonly output: Schema.Codec<unknown, unknown, never, never>
  readonly execute: Executor
  readonly toModelOutput: Projector | undefined
  /** Whether execute checks permissions itself (see Tool.Config.checksPermissions). */
  readonly checksPermissions: boolean
  /** What the tool declares about its effects, when it does. */
  readonly annotations: Annotations | undefined
  /** The JSON codecs the runtime decodes input with and encodes output with (what the JSON Schemas describe). */
  readonly inputJson: Schema.Codec<unknown, unknown, never, never>
  readonly outputJson: Schema.Codec<unknown, unknown, never, never>
  /**
   * The input's JSON Schema, derived (and checked to be an object) when the tool is made; for a built-in, on first
   * use (see `deriveInputLater`).
   */
  readonly inputSchema: { readonly [key: string]: unknown }
  /** The output's JSON Schema when it is given rather than derived (a tool described by JSON Schema alone). */
  readonly outputSchema?: { readonly [key: string]: unknown }
  /** Definitions derived for this tool, one per registered name (see ./definition). */
  readonly definitions: Map<string, unknown>
}

export const ToolProto: object = Object.freeze(
  Object.create(null, {
    [Symbol.toStringTag]: { value: "Tool" },
    toJSON: { value: () => "<Tool>" },
  }),
)

const records = new WeakMap<object, Record>()

/** What a tool described by JSON Schema alone gives instead of deriving it from Effect schemas. */
export interface Described {
  readonly inputJson: Record["inputJson"]
  readonly outputJson: Record["outputJson"]
  readonly outputSchema: NonNullable<Record["outputSchema"]>
}

/**
 * The configs of core's own built-ins, whose input JSON Schema `Tool.make` derives on first use (a turn's
 * definitions, the hint for an invalid input) instead of at once: every Location a process loads makes every
 * built-in, `core exec` settles one tool, and deriving them all was a tenth of its start. Their tests check that each
 * input derives as `Tool.make` requires. An author's tool is derived and checked when it is made, always.
 */
const deferredInputs = new WeakSet<object>()

/** Marks a built-in's `Tool.make` config: its input's JSON Schema is derived on first use. */
export const deriveInputLater = <C extends object>(config: C): C => {
  deferredInputs.add(config)
  return config
}

/** Whether `config` was marked by `deriveInputLater`. */
export const derivesInputLater = (config: object): boolean => deferredInputs.has(config)

/**
 * What an input of no keys (`Schema.Struct({})`) is decoded with: Effect passes any object through such a struct,
 * whatever `onExcessProperty` says, so a key a model sends it would go unrefused (DESIGN: decoding refuses keys the
 * schema does not know). A struct of one key no value fits refuses every key as one it does not know, as any other
 * struct does, and decodes the empty object to itself.
 */
const NO_KEYS = Schema.Struct({ "": Schema.optionalKey(Schema.Never) })

/** Whether `schema` is a plain struct of no keys (no index signature, check or transformation on it). */
const noKeys = (schema: Schema.Top): boolean => {
  const ast = schema.ast
  return (
    ast._tag === "Objects" &&
    ast.propertySignatures.length === 0 &&
    ast.indexSignatures.length === 0 &&
    ast.checks === undefined &&
    ast.encoding === undefined
  )
}

export const remember = (
  tool: object,
  record: Omit<Record, "definitions" | "inputJson" | "outputJson" | "inputSchema" | "outputSchema">,
  inputSchema: Record["inputSchema"] | (() => Record["inputSchema"]),
  described?: Described,
): void => {
  // The JSON codecs are derived on first use: a process makes every built-in but settles calls of few of them.
  let inputJson = described?.inputJson
  let outputJson = described?.outputJson
  let derived = typeof inputSchema === "function" ? undefined : inputSchema
  records.set(
    tool,
    Object.freeze({
      ...record,
      get inputSchema() {
        return (derived ??= (inputSchema as () => Record["inputSchema"])())
      },
      get inputJson() {
        return (inputJson ??= Schema.toCodecJson(noKeys(record.input) ? NO_KEYS : record.input) as Schema.Codec<unknown, unknown, never, never>)
      },
      get outputJson() {
        return (outputJson ??= Schema.toCodecJson(record.output) as Schema.Codec<unknown, unknown, never, never>)
      },
      ...(described === undefined ? {} : { outputSchema: described.outputSchema }),
      definitions: new Map(),
    }),
  )
}

export const has = (value: unknown): boolean => typeof value === "object" && value !== null && records.has(value)

/** The private record of a tool, or undefined for a value not made by `Tool.make`. */
export const get = (value: unknown): Record | undefined =>
  typeof value === "object" && value !== null ? records.get(value) : undefined

/** Tools whose output can say that a producer's capture lost bytes: how to tell from the encoded output. */
const captureLosses = new WeakMap<Record, (encoded: unknown) => boolean>()

/**
 * Declares that `tool`'s output reports a lossy capture (a shell command whose output was cut before core kept
 * it), and how to tell from the encoded output; a preview then says the kept text is the text *as captured*.
 * For built-ins that run a producer; not part of the author surface.
 */
export const reportsCaptureLoss = <O>(tool: object, lost: (encoded: O) => boolean): void => {
  const record = get(tool)
  if (record !== undefined) captureLosses.set(record, lost as (encoded: unknown) => boolean)
}

/** Whether this encoded output of `record`'s tool says its producer's capture lost bytes. */
export const lostCapture = (record: Record, encoded: unknown): boolean => captureLosses.get(record)?.(encoded) === true
