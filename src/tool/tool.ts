export * as Tool from "./tool"

// The one opaque tool value. `make` is the only way to create one; the executor and schemas live in a private
// side table (./internal) so a tool value exposes nothing and cannot be forged, cloned or re-pointed.
// This module must not know about names, registries or settlement.

import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { Refusal } from "./refusal"
import * as Internal from "./internal"
import { JsonSchema } from "./json-schema"

/** A model-facing part: text, or a file (base64 data) such as an image. */
export type Content =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "file"; readonly data: string; readonly mime: string; readonly name?: string }

/** A live update a running tool reports (a host may show it; the model never sees it). */
export interface Progress {
  readonly message: string
  readonly metadata?: Readonly<Record<string, unknown>>
}

/** What every call sees: the ids exactly as the runner supplied them, and a progress reporter. No services. */
export interface Context {
  readonly sessionID: string
  readonly agent: string
  readonly assistantMessageID: string
  readonly toolCallID: string
  readonly progress: (update: Progress) => Effect.Effect<void>
}

/** The expected, model-visible failure of a tool. */
export class Failure extends Schema.TaggedError<Failure>()("Tool.Failure", {
  message: Schema.String,
}) {}

/** What `toModelOutput` projects: the decoded input and the encoded output of one call. */
export interface Projection<I extends Codec, O extends Codec> {
  readonly input: I["Type"]
  readonly output: O["Encoded"]
}

/**
 * What a tool declares about its effects, for clients that decide how carefully to treat a call (MCP's tool
 * annotations). Hints, never authorization: permission rules decide what runs. Left out, a client assumes the
 * worst (may write, may destroy, not idempotent, reaches outside).
 */
export interface Annotations {
  /** It changes nothing (reads only). */
  readonly readOnly?: boolean
  /** It may overwrite or delete what was there (meaningful when not read-only). */
  readonly destructive?: boolean
  /** Calling it again with the same input has no further effect. */
  readonly idempotent?: boolean
  /** It reaches beyond the Location (the network, other machines, any process). */
  readonly openWorld?: boolean
}

const ANNOTATION_KEYS: ReadonlySet<string> = new Set(["readOnly", "destructive", "idempotent", "openWorld"])

/** A schema usable as a tool codec: no services needed to decode or encode. */
export type Codec = Schema.Codec<any, any, never, never>

export interface Config<I extends Codec, O extends Codec> {
  readonly description: string
  readonly input: I
  readonly output: O
  /**
   * Runs the call and must return an Effect (wrap a Promise with `Effect.promise` or `Effect.tryPromise`, a plain
   * value with `Effect.succeed`). Fails with `Failure` for a model-visible failure; a tool that checks permissions
   * itself (with a permission service it captured) lets that check's refusal through, and the call settles as
   * refused.
   */
  readonly execute: (input: I["Type"], context: Context) => Effect.Effect<O["Type"], Failure | Refusal.Any>
  /**
   * Projects a call into the parts the model reads, from the decoded `input` and the *encoded* `output`; a string
   * is one text part. Pure and total. Without it, a string output becomes one text part and any other output stays
   * structured only (`content: []`).
   */
  readonly toModelOutput?: (call: Projection<I, O>) => string | ReadonlyArray<Content>
  /**
   * Set when `execute` checks permissions itself, per path or command, with a permission service the tool
   * captured (as built-in file and shell tools do). The settlement then leaves the checking to it instead of
   * checking the tool's action as a whole.
   */
  readonly checksPermissions?: boolean
  /** What the tool declares about its effects (see Annotations); optional. */
  readonly annotations?: Annotations
}

declare const ToolBrand: unique symbol

/** The opaque tool value. It has no public fields and no intrinsic name. */
export interface Tool<in out I extends Codec = Codec, in out O extends Codec = Codec> {
  readonly [ToolBrand]: { readonly input: I; readonly output: O }
}

/** Any tool, whatever its schemas. */
export type Any = Tool<any, any>

export const make = <I extends Codec, O extends Codec>(config: Config<I, O>): Tool<I, O> => {
  if (typeof config !== "object" || config === null) throw new TypeError("Tool.make expects a config object")
  if (typeof config.description !== "string" || config.description.trim() === "") {
    throw new TypeError("Tool.make: `description` must be a non-empty string")
  }
  if (!Schema.isSchema(config.input)) throw new TypeError("Tool.make: `input` must be an Effect Schema")
  if (!Schema.isSchema(config.output)) throw new TypeError("Tool.make: `output` must be an Effect Schema")
  if (typeof config.execute !== "function") throw new TypeError("Tool.make: `execute` must be a function")
  if (config.toModelOutput !== undefined && typeof config.toModelOutput !== "function") {
    throw new TypeError("Tool.make: `toModelOutput` must be a function when given")
  }
  const annotations = annotationsOf(config.annotations)
  const inputSchema = Internal.derivesInputLater(config) ? () => JsonSchema.input(config.input)! : JsonSchema.input(config.input)
  if (inputSchema === undefined) {
    throw new TypeError("Tool.make: `input` must describe a JSON object (a Schema.Struct): models call tools with one")
  }
  const tool = Object.freeze(Object.create(Internal.ToolProto)) as Tool<I, O>
  Internal.remember(tool, {
    description: config.description,
    input: config.input,
    output: config.output,
    execute: config.execute as Internal.Executor,
    toModelOutput: config.toModelOutput as Internal.Projector | undefined,
    checksPermissions: config.checksPermissions === true,
    annotations,
  }, inputSchema)
  return tool
}

/** The declared annotations, checked and copied (so later changes to the author's object change nothing). */
const annotationsOf = (value: unknown): Annotations | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError("Tool.make: `annotations` must be an object when given")
  }
  const copy: Record<string, boolean> = {}
  for (const [key, flag] of Object.entries(value)) {
    if (!ANNOTATION_KEYS.has(key)) {
      throw new TypeError(`Tool.make: unknown annotation "${key}"; use readOnly, destructive, idempotent or openWorld`)
    }
    if (typeof flag !== "boolean") throw new TypeError(`Tool.make: annotation "${key}" must be true or false`)
    copy[key] = flag
  }
  return Object.keys(copy).length === 0 ? undefined : Object.freeze(copy)
}

/** True only for values made by `Tool.make` in this runtime. */
export const isTool = (value: unknown): value is Any => Internal.has(value)
