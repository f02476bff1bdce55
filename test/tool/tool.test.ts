import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { Definition } from "../../src/tool/definition"
import * as Internal from "../../src/tool/internal"
import { ToolName } from "../../src/tool/tool-name"
import { Tool } from "../../src/tool/tool"
import { echo } from "../support/tools"

describe("Tool.make", () => {
  test("makes an opaque, frozen value with no public fields", () => {
    const tool = echo()
    expect(Object.isFrozen(tool)).toBe(true)
    expect(Object.keys(tool)).toEqual([])
    expect(Object.getOwnPropertyNames(tool)).toEqual([])
    expect(JSON.stringify(tool)).toBe('"<Tool>"')
    expect(String(Object.prototype.toString.call(tool))).toBe("[object Tool]")
    expect(() => {
      ;(tool as unknown as Record<string, unknown>).execute = () => Effect.succeed("forged")
    }).toThrow()
  })

  test("recognises only values it made: clones and look-alikes are not tools", () => {
    const tool = echo()
    expect(Tool.isTool(tool)).toBe(true)
    expect(Tool.isTool({ ...tool })).toBe(false)
    expect(Tool.isTool(Object.create(Object.getPrototypeOf(tool)))).toBe(false)
    expect(Tool.isTool(structuredClone({ description: "x" }))).toBe(false)
    expect(Tool.isTool(null)).toBe(false)
  })

  test("keeps exactly the executor it was given", async () => {
    let ran = 0
    const config = {
      description: "counts",
      input: Schema.Struct({}),
      output: Schema.Number,
      execute: () => Effect.sync(() => ++ran),
    }
    const tool = Tool.make(config)
    // Changing the config afterwards cannot re-point the tool.
    ;(config as { execute: unknown }).execute = () => Effect.succeed(-1)
    const record = Internal.get(tool)!
    const context = { sessionID: "s", agent: "a", assistantMessageID: "m", toolCallID: "c", progress: () => Effect.void }
    expect(await Effect.runPromise(record.execute({}, context))).toBe(1)
    expect(ran).toBe(1)
  })

  test("refuses configs that are not tools", () => {
    const base = { description: "d", input: Schema.String, output: Schema.String, execute: () => Effect.succeed("") }
    expect(() => Tool.make({ ...base, description: "" })).toThrow(/description/)
    expect(() => Tool.make({ ...base, input: {} as never })).toThrow(/input/)
    expect(() => Tool.make({ ...base, output: "string" as unknown as typeof Schema.String })).toThrow(/output/)
    expect(() => Tool.make({ ...base, execute: undefined as never })).toThrow(/execute/)
    expect(() => Tool.make({ ...base, toModelOutput: 3 as never })).toThrow(/toModelOutput/)
  })

  test("a config marked to derive its input later (the built-ins') is checked when its definition is first made", () => {
    const config = { description: "d", input: Schema.Struct({ lines: Schema.Number }), output: Schema.String, execute: () => Effect.succeed("") }
    // Unmarked, the input is derived and refused at once, as for every author's tool.
    expect(() => Tool.make({ ...config })).toThrow(/Schema.Number/)
    const tool = Tool.make(Internal.deriveInputLater({ ...config }))
    expect(Tool.isTool(tool)).toBe(true)
    expect(() => Definition.of(tool, "later")).toThrow(/Schema.Number/)
    const fine = Tool.make(Internal.deriveInputLater({ ...config, input: Schema.Struct({ lines: Schema.Finite }) }))
    const definition = Definition.of(fine, "fine")
    expect(definition.inputSchema).toEqual(Definition.of(Tool.make({ ...config, input: Schema.Struct({ lines: Schema.Finite }) }), "eager").inputSchema)
    expect(Definition.of(fine, "fine")).toBe(definition)
  })

  test("Tool.Failure is a tagged, model-visible error carrying its message", () => {
    const failure = new Tool.Failure({ message: "No such city" })
    expect(failure._tag).toBe("Tool.Failure")
    expect(failure.message).toBe("No such city")
    expect(failure).toBeInstanceOf(Error)
  })
})

describe("Definition", () => {
  test("derives input and output JSON Schema from the Effect schemas, with shared parts in $defs", () => {
    const Point = Schema.Struct({ x: Schema.Finite, y: Schema.Finite }).annotate({ identifier: "Point" })
    const tool = Tool.make({
      description: "Distance between two points",
      input: Schema.Struct({ from: Point, to: Point, unit: Schema.optionalKey(Schema.Literals(["m", "km"])) }),
      output: Schema.Struct({ distance: Schema.Finite }),
      execute: () => Effect.succeed({ distance: 0 }),
    })
    const definition = Definition.of(tool, "distance")
    expect(definition.name).toBe("distance")
    expect(definition.description).toBe("Distance between two points")
    expect(definition.inputSchema).toMatchObject({
      type: "object",
      properties: { from: { $ref: "#/$defs/Point" }, to: { $ref: "#/$defs/Point" }, unit: { enum: ["m", "km"] } },
      required: ["from", "to"],
      $defs: { Point: { type: "object", required: ["x", "y"] } },
    })
    expect(definition.outputSchema).toMatchObject({ type: "object", properties: { distance: { type: "number" } } })
    expect(definition.outputSchema).not.toHaveProperty("$defs")
  })

  test("describes the JSON form of a codec, not its decoded type", () => {
    const tool = Tool.make({
      description: "d",
      input: Schema.Struct({ when: Schema.Date }),
      output: Schema.String,
      execute: () => Effect.succeed(""),
    })
    expect(Definition.of(tool, "when").inputSchema).toMatchObject({ properties: { when: { type: "string" } } })
  })

  test("an input is always an object at the root that refuses unknown keys, as decoding does", () => {
    const make = (input: Tool.Codec) =>
      Tool.make({ description: "d", input, output: Schema.String, execute: () => Effect.succeed("") })
    expect(Definition.of(make(Schema.Struct({})), "none").inputSchema).toEqual({
      type: "object",
      properties: {},
      additionalProperties: false,
    })
    expect(Definition.of(make(Schema.Struct({ a: Schema.String })), "one").inputSchema).toMatchObject({
      type: "object",
      additionalProperties: false,
    })
    class Query extends Schema.Class<Query>("Query")({ text: Schema.String }) {}
    const classInput = Definition.of(make(Query), "query").inputSchema
    expect(classInput).toMatchObject({ type: "object", properties: { text: { type: "string" } }, required: ["text"] })
    expect(classInput).not.toHaveProperty("$ref")
  })

  test("an input schema that is not an object is refused when the tool is made", () => {
    const make = (input: Tool.Codec) => () =>
      Tool.make({ description: "d", input, output: Schema.String, execute: () => Effect.succeed("") })
    expect(make(Schema.String)).toThrow(/JSON object/)
    expect(make(Schema.Array(Schema.String))).toThrow(/JSON object/)
    expect(make(Schema.Union([Schema.Struct({ a: Schema.String }), Schema.Struct({ b: Schema.String })]))).toThrow(
      /JSON object/,
    )
  })

  test("freezes its own copy, never the author's annotation objects", () => {
    const examples = [{ text: "hello" }]
    const tool = Tool.make({
      description: "d",
      input: Schema.Struct({ text: Schema.String }).annotate({ examples }),
      output: Schema.String,
      execute: () => Effect.succeed(""),
    })
    Definition.of(tool, "annotated")
    expect(Object.isFrozen(examples)).toBe(false)
    expect(Object.isFrozen(examples[0])).toBe(false)
  })

  test("yields the identical, frozen definition for a name every time", () => {
    const tool = echo()
    const first = Definition.of(tool, "echo")
    expect(Definition.of(tool, "echo")).toBe(first)
    expect(Object.isFrozen(first)).toBe(true)
    expect(Object.isFrozen(first.inputSchema)).toBe(true)
    expect(Definition.of(tool, "say").name).toBe("say")
    expect(Definition.of(tool, "echo")).toBe(first)
  })
})

describe("annotations", () => {
  const annotated = (annotations: unknown) =>
    Tool.make({
      description: "Reads",
      input: Schema.Struct({}),
      output: Schema.String,
      annotations: annotations as Tool.Annotations,
      execute: () => Effect.succeed("ok"),
    })

  test("the declared hints are carried on every definition, as a frozen copy of the author's object", () => {
    const declared = { readOnly: true, openWorld: false }
    const tool = annotated(declared)
    declared.readOnly = false
    const definition = Definition.of(tool, "reads")
    expect(definition.annotations).toEqual({ readOnly: true, openWorld: false })
    expect(Object.isFrozen(definition.annotations)).toBe(true)
  })

  test("a tool that declares none (or an empty object) has no annotations on its definition", () => {
    expect("annotations" in Definition.of(echo(), "echo")).toBe(false)
    expect("annotations" in Definition.of(annotated({}), "reads")).toBe(false)
  })

  test("an unknown hint, a value that is not a boolean, or annotations that are not an object are refused", () => {
    expect(() => annotated({ readonly: true })).toThrow('unknown annotation "readonly"')
    expect(() => annotated({ destructive: "yes" })).toThrow('annotation "destructive" must be true or false')
    expect(() => annotated([true])).toThrow("`annotations` must be an object")
    expect(() => annotated(null)).toThrow("`annotations` must be an object")
  })
})

describe("ToolName", () => {
  test("accepts names of the grammar and explains why others are refused", () => {
    for (const name of ["a", "read", "git_status", "A-b_9", "x".repeat(64)]) expect(ToolName.problem(name)).toBeUndefined()
    expect(ToolName.problem("")).toMatch(/empty/)
    expect(ToolName.problem("9lives")).toMatch(/start with a letter/)
    expect(ToolName.problem("_x")).toMatch(/start with a letter/)
    expect(ToolName.problem("has space")).toMatch(/letters, digits/)
    expect(ToolName.problem("dot.name")).toMatch(/letters, digits/)
    expect(ToolName.problem("x".repeat(65))).toMatch(/65 characters/)
  })
})
