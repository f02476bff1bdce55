export * as BadValue from "./bad-value"

// A call whose input holds a value no tool takes (Json.findBadValue: a NUL character, which no store keeps as text,
// half of a character, which is no text at all, or a number JSON cannot carry, such as 1e400): refused as invalid input before anything loads, runs or is
// recorded, by `core exec` and by the MCP server alike (the HTTP API refuses the request body holding it,
// docs/serve.md), saying where it is so the model can call again without it.

import { Json } from "../config/json"
import { Settlement } from "../contract/settlement"

/** The `invalid_input` settlement of a call of `name` whose `input` holds a value no tool takes, or undefined. */
export const refusal = (name: string, toolCallID: string, input: unknown): Settlement.Info | undefined => {
  const bad = Json.findBadValue(input)
  return bad === undefined
    ? undefined
    : Settlement.error(name, toolCallID, "invalid_input", `Invalid input for ${name}: ${Json.describeBadValue(bad)} and call it again.`)
}
