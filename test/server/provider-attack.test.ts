// Provider mappings under a hostile model: openai-strict's null-normalisation must pass on nothing the tool's schema
// would not have taken without it, and a bad provider in `POST /v1/turns` is a bad request, never a failure of core.

import { describe, expect, test } from "bun:test"
import { echoTool } from "../support/tools"
import { inProcess } from "./support"

const ECHO = echoTool({
  description: "Echo the input back as JSON",
  fields: "times: Schema.optionalKey(Schema.Int), nested: Schema.optionalKey(Schema.Struct({ path: Schema.String }))",
  answer: "JSON.stringify({ text: input.text, path: input.nested?.path ?? null })",
})

describe("openai-strict normalisation against a hostile model", () => {
  test("a __proto__ key cannot supply a property the arguments left out, at the top or nested", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const turn = await sidecar.json("POST", "/v1/turns", { body: { provider: "openai-strict" } })
    const top = JSON.parse('{"times":null,"__proto__":{"text":"smuggled"}}')
    const answer = await sidecar.settle(turn.body.turnID, { name: "echo", input: top, toolCallID: "call_proto_top" })
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ status: "error", error: { kind: "invalid_input" } })
    const nested = JSON.parse('{"text":"t","times":null,"nested":{"__proto__":{"path":"/etc/passwd"}}}')
    const deep = await sidecar.settle(turn.body.turnID, { name: "echo", input: nested, toolCallID: "call_proto_nested" })
    expect(deep.body).toMatchObject({ status: "error", error: { kind: "invalid_input" } })
    // The same arguments through a turn without a provider are refused the same way.
    const plain = await sidecar.json("POST", "/v1/turns", { body: {} })
    const raw = await sidecar.settle(plain.body.turnID, { name: "echo", input: top, toolCallID: "call_proto_plain" })
    expect(raw.body).toMatchObject({ status: "error", error: { kind: "invalid_input" } })
  })

  test("the check route sees what the call would: a smuggled path is no path", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const turn = await sidecar.json("POST", "/v1/turns", { body: { provider: "openai-strict" } })
    const input = JSON.parse('{"__proto__":{"filePath":"/etc/passwd"}}')
    const checked = await sidecar.json("POST", `/v1/turns/${turn.body.turnID}/check`, { body: { name: "read", input } })
    expect(checked.status).toBeLessThan(500)
    expect(JSON.stringify(checked.body)).not.toContain("/etc/passwd")
  })
})

describe("POST /v1/turns with a bad provider", () => {
  test("an unknown, inherited or mistyped provider is a 400, never a 500", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    for (const provider of ["bogus", "__proto__", "constructor", "toString", "", 42, null, ["openai"], { name: "openai" }]) {
      const answer = await sidecar.json("POST", "/v1/turns", { body: { provider } })
      expect([provider, answer.status]).toEqual([provider, 400])
    }
  })
})
