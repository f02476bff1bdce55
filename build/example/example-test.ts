// Tests run the tool the way core runs it: settle() answers the settlement JSON that `core exec` prints.
import { describe, expect, test } from "bun:test"
import { check, settle } from "@core/tool/testing"
import example from "./example"

describe("example", () => {
  test("summarises the numbers, and tells the model in one line", async () => {
    const settlement = await settle(example, { values: [3, 1, 2, 10] }, { name: "example" })
    expect(settlement.status).toBe("success")
    expect(settlement.structured).toEqual({ count: 4, sum: 16, mean: 4, median: 2.5, min: 1, max: 10 })
    expect(settlement.content).toEqual([{ type: "text", text: "4 values: mean 4, median 2.5, min 1, max 10, sum 16" }])
  })

  test("answers an empty list with a failure the model can act on", async () => {
    const settlement = await settle(example, { values: [] }, { name: "example" })
    expect(settlement.status).toBe("error")
    expect(settlement.error).toEqual({
      kind: "failure",
      message: "There are no values to summarise; give at least one number.",
    })
  })

  test("refuses input that does not match its schema without running", async () => {
    const settlement = await settle(example, { values: ["3"] }, { name: "example" })
    expect(settlement.error?.kind).toBe("invalid_input")
  })

  test("is offered to the model with an object input schema", () => {
    const definition = check(example, "example")
    expect(definition.inputSchema).toMatchObject({ type: "object", required: ["values"] })
  })
})
