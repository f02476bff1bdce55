// What checking a value against an MCP server's schema can cost, bounded before core compiles it: a schema of a
// few hundred bytes that would make a validator try 2^N subschemas on one value is refused; the recursive and the
// wide schemas real servers declare are not.

import { describe, expect, test } from "bun:test"
import { McpSdk } from "../../src/mcp-client/mcp-sdk"
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
    for (const schema of [true, false, {}, null, "text", { $id: "https://example.com/s", properties: { a: { $ref: "#/$defs/a" } }, $defs: { a: {} } }]) {
      expect(SchemaCost.problem(schema)).toBeUndefined()
    }
  })

  test("anchors are followed; draft-07 dependencies too", () => {
    const anchored = (depth: number) => ({
      $ref: "#a0",
      $defs: Object.fromEntries([
        ...Array.from({ length: depth }, (_, at) => [`d${at}`, { $anchor: `a${at}`, anyOf: [{ $ref: `#a${at + 1}` }, { $ref: `#a${at + 1}` }] }]),
        [`d${depth}`, { $anchor: `a${depth}`, type: "string" }],
      ]),
    })
    expect(SchemaCost.problem(anchored(5))).toBeUndefined()
    expect(SchemaCost.problem(anchored(22))).toBe(TOO_MANY)
    const draft7 = {
      $ref: "#b0",
      definitions: Object.fromEntries([
        ...Array.from({ length: 22 }, (_, at) => [`d${at}`, { $id: `#b${at}`, anyOf: [{ $ref: `#b${at + 1}` }, { $ref: `#b${at + 1}` }] }]),
        ["d22", { $id: "#b22", type: "string" }],
      ]),
    }
    expect(SchemaCost.problem(draft7)).toBe(TOO_MANY)
    const dependencies = {
      $ref: "#/$defs/d0",
      $defs: Object.fromEntries([
        ...Array.from({ length: 22 }, (_, at) => [`d${at}`, { dependencies: { x: { $ref: `#/$defs/d${at + 1}` }, y: { $ref: `#/$defs/d${at + 1}` }, z: ["x"] } }]),
        ["d22", { required: ["zz"] }],
      ]),
    }
    expect(SchemaCost.problem(dependencies)).toBe(TOO_MANY)
  })

  test("a reference it cannot follow, or a schema of its own inside with references of its own, is refused", () => {
    expect(SchemaCost.problem({ $ref: "#/nowhere" })).toBe('it refers to "#/nowhere", which core does not follow')
    expect(SchemaCost.problem({ properties: { a: { $ref: "http://x.test/s#/$defs/d0" } } })).toBe('it refers to "http://x.test/s#/$defs/d0", which core does not follow')
    expect(SchemaCost.problem({ $ref: "#/%zz" })).toBe('it refers to "#/%zz", which core does not follow')
    expect(SchemaCost.problem({ $defs: { a: { $id: "http://x.test/a", $ref: "#/$defs/b", $defs: { b: {} } } } })).toBe(
      'it names a schema of its own inside it ($id "http://x.test/a"), whose references core does not follow',
    )
    // A value that looks like a schema in data keywords is data.
    expect(SchemaCost.problem({ enum: [{ $id: "http://x.test/a" }], const: { $ref: "#/nowhere" } })).toBeUndefined()
  })
})

describe("McpSdk.validators", () => {
  // Collecting every error (the SDK's default), a result of millions of wrong values held gigabytes in core.
  test("a value's check stops at its first error, whatever the count of wrong values", () => {
    const validate = McpSdk.validators().getValidator({ type: "object", properties: { a: { type: "array", items: { type: "string" } } } })
    const result = validate({ a: new Array(1_000_000).fill(0) })
    expect(result.valid).toBe(false)
    expect(result.errorMessage?.match(/must be string/g)).toHaveLength(1)
    expect(validate({ a: ["x", "y"] }).valid).toBe(true)
    // Formats are still checked.
    expect(McpSdk.validators().getValidator({ type: "string", format: "email" })("not an address").valid).toBe(false)
  })
})
