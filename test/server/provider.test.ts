// `POST /v1/turns { provider }` in process (DESIGN §8, §14): the turn answers its definitions and the provider's
// tools; its calls answer with the provider's result block beside the settlement (JSON, events and replays); an
// openai-strict call's nulls for optional properties reach the tool as absent; a tool the provider cannot take
// fails the turn with model_compatibility; an unknown provider is a bad request.

import { describe, expect, test } from "bun:test"
import { echoTool } from "../support/tools"
import { EventReader, IMPORTS, callBody, inProcess } from "./support"

const ECHO = echoTool({
  description: "Echo the input back as JSON",
  fields: "times: Schema.optionalKey(Schema.Int), style: Schema.optionalKey(Schema.Struct({ upper: Schema.optionalKey(Schema.Boolean) }))",
  answer: "JSON.stringify(input)",
})

const RECORD = `${IMPORTS}
export default Tool.make({
  description: "Label things",
  input: Schema.Struct({ labels: Schema.Record(Schema.String, Schema.String) }),
  output: Schema.String,
  execute: () => Effect.succeed("ok"),
})
`

describe("POST /v1/turns with a provider", () => {
  test("answers the definitions and, in the same order, the provider's tools", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const answer = await sidecar.json("POST", "/v1/turns", { body: { provider: "anthropic" } })
    expect(answer.status).toBe(200)
    expect(answer.body.provider).toBe("anthropic")
    expect(answer.body.tools.map((tool: any) => tool.name)).toEqual(answer.body.definitions.map((definition: any) => definition.name))
    const echo = answer.body.tools.find((tool: any) => tool.name === "echo")
    expect(echo).toMatchObject({ description: "Echo the input back as JSON", strict: true, input_schema: { type: "object" } })
    // Without a provider the answer is core's own shape alone.
    const plain = await sidecar.json("POST", "/v1/turns", { body: {} })
    expect(Object.keys(plain.body).sort()).toEqual(["definitions", "turnID"])
  })

  test("openai-strict: null for an optional property reaches the tool as absent, and the call answers a function_call_output", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const turn = await sidecar.json("POST", "/v1/turns", { body: { provider: "openai-strict" } })
    const echo = turn.body.tools.find((tool: any) => tool.name === "echo")
    expect(echo.parameters.required).toEqual(["text", "times", "style"])
    const input = { text: "hi", times: null, style: { upper: null } }
    const answer = await sidecar.settle(turn.body.turnID, { name: "echo", input, toolCallID: "call_strict" })
    expect(answer.status).toBe(200)
    expect(answer.body.status).toBe("success")
    expect(answer.body.structured).toBe('{"text":"hi","style":{}}')
    expect(answer.body.result).toEqual({ type: "function_call_output", call_id: "call_strict", output: '{"text":"hi","style":{}}' })
    // The replay carries the block too.
    const again = await sidecar.settle(turn.body.turnID, { name: "echo", input, toolCallID: "call_strict" })
    expect(again.headers.get("x-core-replayed")).toBe("true")
    expect(again.body.result).toEqual(answer.body.result)
  })

  test("the same nulls through a turn without a provider are invalid input", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const { turnID } = await sidecar.turn()
    const answer = await sidecar.settle(turnID, { name: "echo", input: { text: "hi", times: null } })
    expect(answer.body.error.kind).toBe("invalid_input")
    expect(answer.body).not.toHaveProperty("result")
  })

  test("the event stream's settlement carries the provider's block; an error is flagged", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const turn = await sidecar.json("POST", "/v1/turns", { body: { provider: "anthropic" } })
    const response = await sidecar.fetch("POST", `/v1/turns/${turn.body.turnID}/calls`, {
      body: callBody({ name: "echo", input: { text: 3 }, toolCallID: "call_bad" }),
      headers: { accept: "text/event-stream" },
    })
    const events = await new EventReader(response).rest()
    const settlement = events.find((event) => event.event === "settlement")!
    expect(settlement.data.status).toBe("error")
    expect(settlement.data.result).toMatchObject({ type: "tool_result", tool_use_id: "call_bad", is_error: true })
  })

  test("the check route sees the arguments as the tool will", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const turn = await sidecar.json("POST", "/v1/turns", { body: { provider: "openai-strict" } })
    const answer = await sidecar.json("POST", `/v1/turns/${turn.body.turnID}/check`, {
      body: { name: "echo", input: { text: "hi", times: null, style: null } },
    })
    expect(answer.status).toBe(200)
    expect(answer.body.tool).toBe("echo")
  })

  test("a tool the provider cannot take fails the turn with model_compatibility naming tool, construct and provider", async () => {
    const sidecar = await inProcess({ "tools/labels.ts": RECORD })
    const answer = await sidecar.json("POST", "/v1/turns", { body: { provider: "gemini" } })
    expect(answer.status).toBe(400)
    expect(answer.body.error.kind).toBe("model_compatibility")
    expect(answer.body.error.message).toContain("cannot be offered to gemini models (labels)")
    expect(answer.body.error.message).toContain("labels: input `labels` is a record")
    // openai takes it.
    expect((await sidecar.json("POST", "/v1/turns", { body: { provider: "openai" } })).status).toBe(200)
  })

  test("an unknown provider is a bad request listing the known ones", async () => {
    const sidecar = await inProcess()
    const answer = await sidecar.json("POST", "/v1/turns", { body: { provider: "cohere" } })
    expect(answer.status).toBe(400)
    expect(answer.body.error.kind).toBe("bad_request")
    expect(answer.body.error.message).toContain("provider")
  })
})
