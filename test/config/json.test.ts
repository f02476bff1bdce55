import { describe, expect, test } from "bun:test"
import { Json } from "../../src/config/json"

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

describe("Json.parseStrict on hostile text", () => {
  test("refuses 50,000 unclosed brackets with a located problem, not a stack overflow", () => {
    const parsed = Json.parseStrict("[".repeat(50_000))
    expect(parsed).toMatchObject({ ok: false, problem: { line: 1, column: Json.MAX_DEPTH + 1 } })
    expect(!parsed.ok && parsed.problem.message).toBe(`${Json.TOO_DEEP} at line 1, column ${Json.MAX_DEPTH + 1}`)
  })

  test("refuses valid JSON nested deeper than MAX_DEPTH, at the bracket that goes too deep", () => {
    const deep = `{"a":${"[".repeat(200_000)}${"]".repeat(200_000)}}`
    expect(Json.parseStrict(deep)).toMatchObject({ ok: false, problem: { line: 1, column: 6 + Json.MAX_DEPTH - 1 } })
    const objects = `${'{"a":'.repeat(Json.MAX_DEPTH + 1)}1${"}".repeat(Json.MAX_DEPTH + 1)}`
    expect(Json.parseStrict(objects).ok).toBe(false)
  })

  test("accepts nesting up to MAX_DEPTH, and brackets inside strings do not count", () => {
    const limit = `${"[".repeat(Json.MAX_DEPTH)}${"]".repeat(Json.MAX_DEPTH)}`
    expect(Json.parseStrict(limit).ok).toBe(true)
    expect(Json.parseStrict(JSON.stringify({ text: "[".repeat(10_000) })).ok).toBe(true)
    expect(Json.parseStrict(JSON.stringify({ text: "[".repeat(10_000) }).slice(0, -1)).ok).toBe(false)
  })
})

describe("Json.findBadValue", () => {
  test("finds the first string or key holding a NUL, in document order, with its path", () => {
    expect(Json.findBadValue({ pattern: "a", paths: ["x", "b\u0000", "c\u0000"] })).toEqual({ path: ["paths", 1], kind: "nul", text: "b\u0000" })
    expect(Json.findBadValue({ a: { "k\u0000": 1 } })?.path).toEqual(["a", "k\u0000"])
    expect(Json.findBadValue("\u0000")?.path).toEqual([])
    expect(Json.findBadValue({ text: "no nul here, whole \ud83d\ude00 characters", n: 1, ok: true, none: null })).toBeUndefined()
    expect(Json.describeBadValue({ path: ["input", "paths", 1], kind: "nul", text: "\u0000" })).toContain("input.paths[1] holds a NUL character")
  })

  test("finds half of a character (a lone surrogate) in a value or a key, and says which and where", () => {
    const lone = Json.findBadValue(JSON.parse('{"todos":[{"content":"ok \\ud83d"}]}'))
    expect(lone).toEqual({ path: ["todos", 0, "content"], kind: "half", text: "ok \ud83d" })
    expect(Json.describeBadValue(lone!)).toBe(
      "todos[0].content holds half of a character (the UTF-16 surrogate \\ud83d at position 3, without its other half), " +
        "which no tool accepts; send whole characters",
    )
    // A low surrogate alone, and one before its high half, are halves too; a key may hold one.
    expect(Json.findBadValue({ a: "\ude00" })?.kind).toBe("half")
    expect(Json.findBadValue({ a: "\ude00\ud83d" })?.kind).toBe("half")
    expect(Json.findBadValue({ ["k\ud800"]: 1 })).toEqual({ path: ["k\ud800"], kind: "half", text: "k\ud800" })
    // A NUL comes first where a string holds both.
    expect(Json.findBadValue({ a: "\u0000\ud800" })?.kind).toBe("nul")
  })

  // JSON.parse reads 1e400 as Infinity, which JSON.stringify writes as null: a tool checked with one was sent another.
  test("finds a number JSON cannot carry (1e400, -1e400), and says where; finite ones pass", () => {
    const parsed = JSON.parse('{"a":[1,2.5e308,{"x":-1e400}],"b":1e400}')
    expect(Json.findBadValue(parsed)).toEqual({ path: ["a", 1], kind: "infinite", text: "Infinity" })
    expect(Json.findBadValue({ x: -Infinity })).toEqual({ path: ["x"], kind: "infinite", text: "-Infinity" })
    expect(Json.findBadValue(Number.NaN)?.kind).toBe("infinite")
    // Behind a string no tool takes, findInfinite still finds it.
    expect(Json.findInfinite({ s: "\u0000", n: [Infinity] })).toEqual({ path: ["n", 0], kind: "infinite", text: "Infinity" })
    expect(Json.findInfinite({ s: "\u0000", n: [1] })).toBeUndefined()
    expect(Json.findBadValue({ max: Number.MAX_VALUE, min: -Number.MAX_VALUE, tiny: 5e-324, zero: -0 })).toBeUndefined()
    expect(Json.describeBadValue({ path: ["x"], kind: "infinite", text: "-Infinity" })).toBe(
      "x is a number beyond what JSON's numbers hold (read as -Infinity), which no tool accepts; send a finite number",
    )
  })
})

describe("Json.scan", () => {
  test("skips comments and strings, and reports a NUL escape at its string", () => {
    expect(Json.scan('// [[[[\n{"a": "[[[["}', { nul: true })).toBeUndefined()
    expect(Json.scan('{"a": "x\\u0000"}', { nul: true })).toEqual({ _tag: "Nul", offset: 6 })
    expect(Json.scan('{"a": "x\\u0000"}', { nul: false })).toBeUndefined()
    expect(Json.scan("[".repeat(Json.MAX_DEPTH + 1), { nul: false })).toEqual({ _tag: "TooDeep", offset: Json.MAX_DEPTH })
  })
})
