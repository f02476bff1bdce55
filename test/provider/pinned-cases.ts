// Tools whose definitions exercise every path of the provider mappings, for test/provider/pinned.test.ts: core's own
// schemas derived from Effect (optional fields, unions, nullables, literals, records, recursive and suspended
// schemas, refinements, descriptions, shared classes) and JSON Schemas written elsewhere, as an MCP server's arrive
// (oneOf, type lists, const, references with siblings, boolean schemas, unknown keywords, odd property names). What
// each provider receives for them is pinned in pinned.json, byte for byte.

import { Effect, Schema } from "effect"
import { Provider } from "../../src/provider/provider"
import { ProviderDialect } from "../../src/provider/provider-dialect"
import { Definition } from "../../src/tool/definition"
import type { JsonSchema } from "../../src/tool/json-schema"
import { Tool } from "../../src/tool/tool"

const derived = (name: string, input: Schema.Codec<any, any>): Definition.Definition =>
  Definition.of(Tool.make({ description: `The ${name} tool`, input, output: Schema.String, execute: () => Effect.succeed("") }), name)

/** A definition as a tool described by JSON Schema alone carries it: frozen, as `Definition.of` freezes its own. */
const described = (name: string, inputSchema: JsonSchema.JsonSchema): Definition.Definition =>
  deepFreeze({ name, description: `The ${name} tool`, inputSchema: structuredClone(inputSchema), outputSchema: {} })

const deepFreeze = <A>(value: A): A => {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
  }
  return value
}

class Range extends Schema.Class<Range>("Range")({ start: Schema.Int, end: Schema.Int }) {}

class Point extends Schema.Class<Point>("Point")({
  x: Schema.Finite.annotate({ description: "Horizontal" }),
  y: Schema.Finite,
}) {}

interface Tree {
  readonly label: string
  readonly children: ReadonlyArray<Tree>
}
const TreeSchema: Schema.Codec<Tree> = Schema.Struct({
  label: Schema.String,
  children: Schema.Array(Schema.suspend((): Schema.Codec<Tree> => TreeSchema)),
}).annotate({ identifier: "Tree" })

interface Even {
  readonly next?: Odd
}
interface Odd {
  readonly next?: Even
}
const EvenSchema: Schema.Codec<Even> = Schema.Struct({
  next: Schema.optionalKey(Schema.suspend((): Schema.Codec<Odd> => OddSchema)),
}).annotate({ identifier: "Even" })
const OddSchema: Schema.Codec<Odd> = Schema.Struct({
  next: Schema.optionalKey(Schema.suspend((): Schema.Codec<Even> => EvenSchema)),
}).annotate({ identifier: "Odd" })

export const CASES: ReadonlyArray<Definition.Definition> = [
  // Schemas like real tools': optional fields with bounds, literals, an array of a class, a nested struct, a union.
  derived(
    "edit_file",
    Schema.Struct({
      filePath: Schema.String.annotate({ description: "The file, relative to the Location" }),
      offset: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
      limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 2000 }))),
      mode: Schema.optionalKey(Schema.Literals(["fast", "exact", "fuzzy"])),
      ranges: Schema.optionalKey(Schema.Array(Range)),
      options: Schema.optionalKey(
        Schema.Struct({ ignoreCase: Schema.optionalKey(Schema.Boolean), context: Schema.optionalKey(Schema.Int) }),
      ),
      target: Schema.optionalKey(
        Schema.Union([
          Schema.Struct({ kind: Schema.Literal("line"), line: Schema.Int }),
          Schema.Struct({ kind: Schema.Literal("text"), text: Schema.String }),
        ]),
      ),
    }),
  ),
  // Every field required and closed: what needs no change for a strict dialect.
  derived("move", Schema.Struct({ from: Point, to: Point, steps: Schema.Array(Schema.Struct({ dx: Schema.Int, dy: Schema.Int })) })),
  // Nullables and unions: null as a branch, in an optional field, and in a union of three.
  derived(
    "unions",
    Schema.Struct({
      label: Schema.NullOr(Schema.String),
      note: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isMaxLength(20)))),
      value: Schema.Union([Schema.String, Schema.Int, Schema.Literal(true)]),
      choice: Schema.optionalKey(Schema.Union([Schema.Literal("a"), Schema.Literal(1), Schema.Null])),
      shape: Schema.Union([
        Schema.Struct({ kind: Schema.Literal("circle"), radius: Schema.Finite.check(Schema.isGreaterThan(0)) }),
        Schema.Struct({ kind: Schema.Literal("box"), corner: Point, size: Schema.optionalKey(Schema.Int) }),
        Schema.Null,
      ]),
    }),
  ),
  // Refinements each dialect words differently, with and without a description to append them to.
  derived(
    "refined",
    Schema.Struct({
      name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64)).annotate({ description: "A name" }),
      code: Schema.String.check(Schema.isPattern(/^[A-Z]{3}$/u)),
      id: Schema.String.check(Schema.isUUID()),
      ratio: Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1, exclusiveMinimum: true })),
      step: Schema.Int.check(Schema.isMultipleOf(5)),
      tags: Schema.Array(Schema.String).check(Schema.isMinLength(2), Schema.isMaxLength(5)),
      one: Schema.Array(Schema.String).check(Schema.isMinLength(1)),
      unique: Schema.Array(Schema.Int).check(Schema.isUnique()),
      count: Schema.Literals([1, 2, 3]),
      flag: Schema.Literal(false),
    }),
  ),
  // Descriptions on the struct, its fields and a class, and a class at the root (inlined there).
  derived(
    "described",
    Schema.Struct({
      point: Point.annotate({ description: "Where" }),
      inner: Schema.Struct({ a: Schema.String }).annotate({ description: "Nested", title: "Inner" }),
      empty: Schema.String.annotate({ description: "" }),
    }).annotate({ description: "The whole input" }),
  ),
  derived("point", Point),
  // What some dialects cannot express: a record, a tuple, any value, null alone, names with dashes or dots.
  derived("labels", Schema.Struct({ labels: Schema.Record(Schema.String, Schema.String) })),
  derived("loose", Schema.Struct({ value: Schema.Unknown, pair: Schema.Tuple([Schema.String, Schema.Finite]), nothing: Schema.Null })),
  derived("names", Schema.Struct({ "file-path": Schema.String, "a.b": Schema.Int, ok_name: Schema.Boolean })),
  // Recursive and suspended schemas: a tree, and two definitions referring to each other.
  derived("tree", Schema.Struct({ root: TreeSchema })),
  derived("parity", Schema.Struct({ start: EvenSchema })),
  derived("nothing", Schema.Struct({})),
  // JSON Schemas written elsewhere, in core's dialect.
  described("mcp_mixed", {
    type: "object",
    title: "Mixed",
    $comment: "written by hand",
    properties: {
      either: { oneOf: [{ type: "string", format: "email" }, { type: "integer", format: "int32" }], description: "One of two" },
      maybe: { type: ["string", "null"], default: "x" },
      many: { type: ["string", "integer", "null"] },
      fixed: { const: "v1", description: "Always v1" },
      number: { const: 3 },
      point: { $ref: "#/$defs/Point", description: "A point, described here" },
      bare: { $ref: "#/$defs/Point" },
      remote: { $ref: "https://example.com/schema.json" },
      anything: { items: true, type: "array", minItems: 0, maxItems: 3, uniqueItems: true },
      when: { type: "string", format: "date-time", examples: ["2024-01-01T00:00:00Z"] },
      host: { type: "string", format: "hostname", "x-extra": { a: 1 } },
      mixed: { enum: ["a", 1, null] },
      nullable: { type: "string", nullable: true },
      ["__proto__"]: { type: "string" },
      constructor: { type: "integer", minimum: 0 },
      bag: { type: "object", properties: { inner: { type: "number", exclusiveMaximum: 10 } }, maxProperties: 2 },
    },
    required: ["either", "point"],
    additionalProperties: false,
    $defs: {
      Point: { type: "object", properties: { x: { type: "number" }, y: { type: "number" } }, required: ["x", "y"], additionalProperties: false },
      Unused: { type: "string", minLength: 2 },
    },
  }),
  described("mcp_refused", {
    type: "object",
    properties: {
      all: { allOf: [{ type: "string" }, { minLength: 1 }] },
      not: { not: { type: "null" } },
      open: { type: "object", additionalProperties: true },
      keyed: { type: "object", patternProperties: { "^x": { type: "string" } } },
      conditional: { if: { type: "string" }, then: { minLength: 1 } },
      list: { type: "array", contains: { type: "integer" } },
      odd: { type: "tuple" },
    },
  }),
  // References that resolve to nothing, to a name objects inherit, to a definition named "__proto__", and ones
  // that are not references as the pattern `#/$defs/NAME` reads it (a name with a line break, no name at all).
  described("mcp_references", {
    type: "object",
    properties: {
      missing: { $ref: "#/$defs/Missing", description: "Nowhere" },
      inherited: { $ref: "#/$defs/constructor" },
      odd: { $ref: "#/$defs/__proto__" },
      broken: { $ref: "#/$defs/A\nB" },
      empty: { $ref: "#/$defs/" },
    },
    required: ["missing"],
    additionalProperties: false,
    $defs: { ["__proto__"]: { type: "string", minLength: 1 }, "A\nB": { type: "integer" } },
  }),
  described(
    "mcp_draft07",
    ProviderDialect.canonical({
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        query: { type: "string", description: "What to find", default: "all" },
        range: { $ref: "#/definitions/Range" },
        pair: { type: "array", items: [{ type: "string" }, { type: "integer" }], additionalItems: false },
      },
      required: ["query", "range"],
      additionalProperties: false,
      definitions: {
        Range: { type: "object", properties: { from: { type: "integer" }, to: { type: "integer" } }, required: ["from", "to"] },
      },
    }),
  ),
]

/** What `provider` receives for `definition`: its tool, or the problems and the message of the compatibility error. */
export const prepared = (definition: Definition.Definition, provider: Provider.Name): unknown => {
  const result = Provider.prepare([definition], provider)
  return result._tag === "Success"
    ? { tool: result.success.tools[0] }
    : { problems: result.failure.problems, message: result.failure.message }
}
