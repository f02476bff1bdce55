export * as OpenAi from "./openai"

// The `openai` mapping: a definition as a function tool of OpenAI's Responses API, its input schema passed as is
// (`strict: false`, so the model is guided by the schema, not held to it; decoding checks every call), and a
// settlement as a `function_call_output` item. `openai-strict` (./openai-strict) shares the result.
//
// OpenAI's published rules this follows (platform.openai.com/docs/guides/function-calling and the Responses API
// reference): a function tool is `{ type: "function", name, description, parameters, strict }`; `name` holds
// a-z, A-Z, 0-9, "_" and "-", at most 64 characters; `parameters` is a JSON Schema object. A tool result is
// `{ type: "function_call_output", call_id, output }`, `output` a string or a list of `input_text`, `input_image`
// (`image_url` may be a data: URL; PNG, JPEG, WEBP and non-animated GIF) and `input_file` (`file_data` as a data: URL
// with a `filename`) items. There is no error flag: an error is told by its text.

import type { Settlement } from "../contract/settlement"
import type { Definition } from "../tool/definition"
import { ProviderResult } from "./provider-result"
import { ProviderSchema } from "./provider-schema"

export const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/
export const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/webp", "image/gif"])
/**
 * Images as OpenAI takes them (images and vision guide): up to 20 MB each; at `detail: "high"` an image is scaled
 * to fit 2048×2048, then its short side to 768, before it is tiled: past 2048 px a side nothing more is seen.
 */
export const IMAGE_LIMITS = { maxBytes: 20 * 1024 * 1024, maxDimension: 2_048 } as const

export interface FunctionTool {
  readonly type: "function"
  readonly name: string
  readonly description: string
  readonly parameters: ProviderSchema.Node
  readonly strict: boolean
}

export type OutputItem =
  | { readonly type: "input_text"; readonly text: string }
  | { readonly type: "input_image"; readonly image_url: string }
  | { readonly type: "input_file"; readonly filename: string; readonly file_data: string }

export interface FunctionCallOutput {
  readonly type: "function_call_output"
  readonly call_id: string
  readonly output: string | ReadonlyArray<OutputItem>
}

/** What OpenAI's tool names hold (core's grammar fits within it; a renamed tool might not), said as `provider`'s. */
export const nameRule = (provider: string): string => `${provider} tool names hold only letters, digits, "_" and "-", at most 64`

export const tool = (definition: Definition.Definition): ProviderSchema.Mapped => {
  const problems = new ProviderSchema.Problems(definition.name)
  problems.checkName(NAME_PATTERN, nameRule("openai"))
  return problems.mapped(
    (): FunctionTool => ({
      type: "function",
      name: definition.name,
      description: definition.description,
      parameters: definition.inputSchema,
      strict: false,
    }),
  )
}

export const result = (settlement: Settlement.Info): FunctionCallOutput => {
  const pieces = ProviderResult.pieces(settlement)
  const output = pieces.every((piece) => piece.type === "text")
    ? pieces.map((piece) => piece.text).join("\n")
    : pieces.map((piece): OutputItem => {
        switch (piece.type) {
          case "text":
            return { type: "input_text", text: piece.text }
          case "media":
            return IMAGE_TYPES.has(piece.mime)
              ? { type: "input_image", image_url: `data:${piece.mime};base64,${piece.data}` }
              : { type: "input_file", filename: piece.name ?? "file", file_data: `data:${piece.mime};base64,${piece.data}` }
          case "link":
            return { type: "input_text", text: ProviderResult.described(piece, "not inline data, so not attached") }
        }
      })
  return { type: "function_call_output", call_id: settlement.callID, output }
}
