export * as Tool from "./tool"

// The one opaque tool value. `make` is the only way to create one; the executor and schemas live in a private
// side table (./internal) so a tool value exposes nothing and cannot be forged, cloned or re-pointed.
// This module must not know about names, registries or settlement.

import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { Refusal } from "../permission/refusal"
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
  const inputSchema = JsonSchema.input(config.input)
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
  }, inputSchema)
  return tool
}

/** True only for values made by `Tool.make` in this runtime. */
export const isTool = (value: unknown): value is Any => Internal.has(value)
