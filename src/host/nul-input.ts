export * as NulInput from "./nul-input"

// A call whose input holds a NUL character (U+0000), which no tool takes (and no store keeps as text): refused as
// invalid input before anything loads, runs or is recorded, by `core exec` and by the MCP server alike (the HTTP API
// refuses the request body holding it, docs/serve.md), saying where it is so the model can call again without it.

import { Json } from "../config/json"
import { Settlement } from "../contract/settlement"

/** The `invalid_input` settlement of a call of `name` whose `input` holds a NUL character, or undefined. */
export const refusal = (name: string, toolCallID: string, input: unknown): Settlement.Info | undefined => {
  const nul = Json.findNul(input)
  return nul === undefined
    ? undefined
    : Settlement.error(name, toolCallID, "invalid_input", `Invalid input for ${name}: ${Json.describeNul(nul)} and call it again.`)
}
