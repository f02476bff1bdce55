export * as Provider from "./provider"

// Provider-shaped definitions and results (DESIGN §14, §2 law 4): one mapping per provider turns a turn's
// definitions into that provider's tool shape and schema dialect, and a settlement into its tool-result block. A
// tool whose schema a provider cannot express is a model-compatibility error at preparation, naming the tool, the
// construct and the provider, never a request that fails at the provider. Pure: no services, no I/O.

import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { Settlement } from "../contract/settlement"
import type { Definition } from "../tool/definition"
import { Anthropic } from "./anthropic"
import { Gemini } from "./gemini"
import { OpenAi } from "./openai"
import { OpenAiStrict } from "./openai-strict"
import type { ProviderSchema } from "./provider-schema"

export const NAMES = ["openai", "openai-strict", "anthropic", "gemini"] as const
export const Name = Schema.Literals(NAMES)
export type Name = typeof Name.Type

export const isName = (value: string): value is Name => (NAMES as ReadonlyArray<string>).includes(value)

export type Problem = ProviderSchema.Problem

export class CompatibilityError extends Schema.TaggedError<CompatibilityError>()("Provider.CompatibilityError", {
  provider: Schema.String,
  problems: Schema.Array(
    Schema.Struct({ tool: Schema.String, path: Schema.String, construct: Schema.String, reason: Schema.String }),
  ),
  message: Schema.String,
}) {}

interface Mapping {
  readonly tool: (definition: Definition.Definition) => ProviderSchema.Mapped
  readonly result: (settlement: Settlement.Info) => unknown
  /** What one image may be for this provider (bytes, pixels on the long side), where it says. */
  readonly images: { readonly maxBytes?: number; readonly maxDimension?: number }
  /** How a call's arguments go back to the tool's own shape, where the provider's dialect changed it. */
  readonly normalizer?: (definition: Definition.Definition) => (input: unknown) => unknown
}

const MAPPINGS: Readonly<Record<Name, Mapping>> = {
  openai: { tool: OpenAi.tool, result: OpenAi.result, images: OpenAi.IMAGE_LIMITS },
  "openai-strict": {
    tool: OpenAiStrict.tool,
    result: OpenAi.result,
    normalizer: OpenAiStrict.normalizer,
    images: OpenAi.IMAGE_LIMITS,
  },
  anthropic: { tool: Anthropic.tool, result: Anthropic.result, images: Anthropic.IMAGE_LIMITS },
  gemini: { tool: Gemini.tool, result: Gemini.result, images: Gemini.IMAGE_LIMITS },
}

/**
 * What one image may be for `provider`: a call settled through a turn prepared for it resizes its images to the
 * tighter of these and the Location's `output.image` limits (the Location's stay the ceiling).
 */
export const imageLimits = (provider: Name) => MAPPINGS[provider].images

/** A turn's definitions prepared for one provider. */
export interface Prepared {
  readonly provider: Name
  /** One provider tool per definition, in the same order. */
  readonly tools: ReadonlyArray<unknown>
  /** A call's arguments as the tool declared them (identity unless the provider's dialect changed the shape). */
  readonly normalize: (name: string, input: unknown) => unknown
}

/** Mapped tools by provider, per definition: a definition is a frozen value reused every turn, so is its mapping. */
const mapped: Readonly<Record<Name, WeakMap<Definition.Definition, ProviderSchema.Mapped>>> = {
  openai: new WeakMap(),
  "openai-strict": new WeakMap(),
  anthropic: new WeakMap(),
  gemini: new WeakMap(),
}

/** Prepared catalogs by provider, per definitions array: an unchanged catalog shares its array between turns. */
const prepared: Readonly<Record<Name, WeakMap<ReadonlyArray<Definition.Definition>, Result.Result<Prepared, CompatibilityError>>>> = {
  openai: new WeakMap(),
  "openai-strict": new WeakMap(),
  anthropic: new WeakMap(),
  gemini: new WeakMap(),
}

const mapOne = (provider: Name, definition: Definition.Definition): ProviderSchema.Mapped => {
  let found = mapped[provider].get(definition)
  if (found === undefined) mapped[provider].set(definition, (found = MAPPINGS[provider].tool(definition)))
  return found
}

/** The problems of every definition that `provider` cannot take, in catalog order (empty when all can). */
export const lint = (definitions: ReadonlyArray<Definition.Definition>, provider: Name): ReadonlyArray<Problem> =>
  definitions.flatMap((definition) => {
    const one = mapOne(provider, definition)
    return one._tag === "Problems" ? one.problems : []
  })

const describe = (provider: Name, problems: ReadonlyArray<Problem>): string => {
  const tools = [...new Set(problems.map((problem) => problem.tool))]
  const lines = problems.map(
    (problem) =>
      `${problem.tool}: ${problem.path === "(root)" ? "" : `input \`${problem.path}\` is `}${problem.construct}: ${problem.reason}`,
  )
  return (
    `${tools.length === 1 ? "1 tool" : `${tools.length} tools`} cannot be offered to ${provider} models ` +
    `(${tools.join(", ")}):\n${lines.map((line) => `  - ${line}`).join("\n")}\n` +
    `Change ${tools.length === 1 ? "its schema" : "their schemas"}, hide ${tools.length === 1 ? "it" : "them"} from this ` +
    `agent with a permission rule, or prepare the turn for another provider mapping.`
  )
}

export const error = (provider: Name, problems: ReadonlyArray<Problem>) =>
  new CompatibilityError({ provider, problems, message: describe(provider, problems) })

/** The definitions as `provider` takes them, or the error naming every tool and construct it cannot express. */
export const prepare = (
  definitions: ReadonlyArray<Definition.Definition>,
  provider: Name,
): Result.Result<Prepared, CompatibilityError> => {
  const cached = prepared[provider].get(definitions)
  if (cached !== undefined) return cached
  const tools: Array<unknown> = []
  const problems: Array<Problem> = []
  for (const definition of definitions) {
    const one = mapOne(provider, definition)
    if (one._tag === "Tool") tools.push(one.tool)
    else for (const problem of one.problems) problems.push(problem)
  }
  const outcome: Result.Result<Prepared, CompatibilityError> =
    problems.length > 0 ? Result.fail(error(provider, problems)) : Result.succeed({ provider, tools, normalize: normalizing(definitions, provider) })
  prepared[provider].set(definitions, outcome)
  return outcome
}

/**
 * How a prepared turn normalises a call's arguments by tool name. The normalisers are made when the turn's first
 * call needs one: a turn is prepared for every model request, and calls few of its tools, if any.
 */
const normalizing = (definitions: ReadonlyArray<Definition.Definition>, provider: Name): Prepared["normalize"] => {
  const normalizer = MAPPINGS[provider].normalizer
  if (normalizer === undefined) return (_, input) => input
  let byName: Map<string, (input: unknown) => unknown> | undefined
  return (name, input) => {
    if (byName === undefined) {
      byName = new Map()
      for (const definition of definitions) byName.set(definition.name, normalizer(definition))
    }
    return byName.get(name)?.(input) ?? input
  }
}

/** A settlement as `provider`'s tool-result block, answering the call it settled (its `callID`). */
export const result = (provider: Name, settlement: Settlement.Info): unknown => MAPPINGS[provider].result(settlement)
