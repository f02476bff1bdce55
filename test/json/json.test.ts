import { describe, expect, test } from "bun:test"
import { Json } from "../../src/json/json"

describe("Json.parseStrict", () => {
  test("parses valid JSON", () => {
    expect(Json.parseStrict('{"city":"Oslo","n":[1,2]}')).toEqual({ ok: true, value: { city: "Oslo", n: [1, 2] } })
  })

  test("says what is wrong and where, by line and column", () => {
    const missingComma = Json.parseStrict('{\n  "city": "Oslo"\n  "days": 3\n}')
    expect(missingComma).toMatchObject({ ok: false, problem: { line: 3, column: 3 } })
    expect(!missingComma.ok && missingComma.problem.message).toBe("comma expected at line 3, column 3")
    expect(Json.parseStrict('{"a":1,}')).toMatchObject({ ok: false, problem: { line: 1, column: 8 } })
    expect(Json.parseStrict("")).toMatchObject({ ok: false, problem: { offset: 0 } })
    expect(Json.parseStrict("{city: 1}")).toMatchObject({ ok: false, problem: { column: 2 } })
  })

  test("refuses comments and trailing commas (inputs are strict JSON)", () => {
    expect(Json.parseStrict('// note\n{"a":1}').ok).toBe(false)
    expect(Json.parseStrict("[1,2,]").ok).toBe(false)
  })
})
