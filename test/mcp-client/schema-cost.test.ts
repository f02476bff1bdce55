// What checking a value against an MCP server's schema can cost, bounded before core compiles it: a schema of a
// few hundred bytes that would make a validator try 2^N subschemas on one value is refused; the recursive and the
// wide schemas real servers declare are not.

import { describe, expect, test } from "bun:test"
import { SchemaCost } from "../../src/mcp-client/schema-cost"

const TOO_MANY = `some data would meet more than ${SchemaCost.MAX_APPLIED} of its subschemas on one value`

/** `anyOf: [{$ref: next}, {$ref: next}]`, `depth` deep, on one value. */
const doubling = (depth: number) => ({
  $defs: Object.fromEntries([
    ...Array.from({ length: depth }, (_, at) => [`d${at}`, { anyOf: [{ $ref: `#/$defs/d${at + 1}` }, { $ref: `#/$defs/d${at + 1}` }] }]),
    [`d${depth}`, { type: "string" }],
  ]),
  allOf: [{ $ref: "#/$defs/d0" }],
})

describe("SchemaCost.problem", () => {
  test("a schema that doubles what applies to one value at each step is refused past the bound, not before", () => {
    // Each level is two branches and the two schemas they name: 4 * 2^10 - 3 applications in all, then 4 * 2^11 - 3.
    expect(SchemaCost.problem(doubling(10))).toBeUndefined()
    expect(SchemaCost.problem(doubling(11))).toBe(TOO_MANY)
    expect(SchemaCost.problem(doubling(60))).toBe(TOO_MANY)
  })

  test("so is one that doubles at each level of the data, through a property, an item or any key", () => {
    expect(SchemaCost.problem({ type: "object", properties: { x: { anyOf: [{ $ref: "#" }, { $ref: "#" }] } } })).toBe(TOO_MANY)
    expect(SchemaCost.problem({ type: "array", items: { allOf: [{ $ref: "#" }, { $ref: "#" }] } })).toBe(TOO_MANY)
    expect(SchemaCost.problem({ type: "object", additionalProperties: { oneOf: [{ $ref: "#" }, { $ref: "#" }] } })).toBe(TOO_MANY)
    expect(SchemaCost.problem({ prefixItems: [{ $ref: "#/$defs/a" }], $defs: { a: { items: [{ if: { $ref: "#" }, then: { $ref: "#" } }] } } })).toBe(TOO_MANY)
  })

  test("a subschema that applies itself to the same value without end is refused", () => {
    expect(SchemaCost.problem({ $ref: "#" })).toBe("a subschema applies itself to the same value without end")
    expect(SchemaCost.problem({ $defs: { a: { not: { $ref: "#/$defs/b" } }, b: { allOf: [{ $ref: "#/$defs/a" }] } }, $ref: "#/$defs/a" })).toBe(
      "a subschema applies itself to the same value without end",
    )
  })

  test("recursive schemas that apply themselves once per level of the data pass", () => {
    const tree = { type: "object", properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#" } } } }
    expect(SchemaCost.problem(tree)).toBeUndefined()
    const filter = {
      $defs: {
        filter: {
          anyOf: [
            { properties: { and: { type: "array", items: { $ref: "#/$defs/filter" } } } },
            { properties: { or: { type: "array", items: { $ref: "#/$defs/filter" } } } },
            { properties: { not: { $ref: "#/$defs/filter" } } },
            { properties: { field: { type: "string" } } },
          ],
        },
      },
      properties: { where: { $ref: "#/$defs/filter" } },
    }
    expect(SchemaCost.problem(filter)).toBeUndefined()
  })

  test("a wide union, shared definitions and the keywords that are not schemas pass", () => {
    const union = { oneOf: Array.from({ length: 1_000 }, (_, at) => ({ allOf: [{ $ref: "#/$defs/base" }, { properties: { kind: { const: `k${at}` } } }] })), $defs: { base: { type: "object" } } }
    expect(SchemaCost.problem(union)).toBeUndefined()
    expect(SchemaCost.problem({ type: "object", properties: { enum: { enum: [{ anyOf: [] }] }, const: { const: { $ref: "#" } }, default: { default: { $ref: "#" } } } })).toBeUndefined()
    for (const schema of [true, false, {}, null, "text", { $ref: "#/nowhere" }, { $ref: "http://example.com/s" }, { $ref: "#/%zz" }]) {
      expect(SchemaCost.problem(schema)).toBeUndefined()
    }
  })
})
