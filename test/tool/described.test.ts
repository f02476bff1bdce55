// A tool described by JSON Schema alone (an MCP server's): its definition is the schema it came with, its input is
// checked by the given validator before execute runs, its structured value is what `structured` picks, and it
// registers, settles and goes stale like any tool.

import { describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Definition } from "../../src/tool/definition"
import { Described } from "../../src/tool/described"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"

const INPUT_SCHEMA = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }
const OUTPUT_SCHEMA = { type: "object", properties: { doubled: { type: "integer" } } }

const make = (runs: Array<unknown>) =>
  Described.make<{ readonly text: string; readonly doubled: number }>({
    description: "Doubles n",
    inputSchema: INPUT_SCHEMA,
    outputSchema: OUTPUT_SCHEMA,
    validate: (input) => (Number.isInteger((input as { n?: unknown }).n) ? undefined : "n must be an integer"),
    execute: (input) =>
      Effect.sync(() => {
        runs.push(input)
        const n = (input as { n: number }).n
        return { text: `twice ${n} is ${n * 2}`, doubled: n * 2 }
      }),
    toModelOutput: ({ output }) => [{ type: "text", text: output.text }],
    structured: (output) => ({ doubled: output.doubled }),
  })

describe("Described tools", () => {
  test("its definition holds the JSON Schemas it was given, and it is a tool", () => {
    const tool = make([])
    expect(Tool.isTool(tool)).toBe(true)
    expect(Definition.of(tool, "double")).toEqual({
      name: "double",
      description: "Doubles n",
      inputSchema: INPUT_SCHEMA,
      outputSchema: OUTPUT_SCHEMA,
    })
  })

  test("refuses an input schema that is not an object", () => {
    expect(() =>
      Described.make({
        description: "x",
        inputSchema: { type: "string" },
        validate: () => undefined,
        execute: () => Effect.succeed(1),
        toModelOutput: () => [],
        structured: () => undefined,
      }),
    ).toThrow("must be an object")
  })

  test("settles: invalid input never runs it, valid input projects through toModelOutput and structured", async () => {
    const runs: Array<unknown> = []
    const tool = make(runs)
    const settled = await Kernel.run(
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        yield* (yield* Registry.Service).tools.register({ double: tool }).pipe(Scope.provide(scope))
        const turn = yield* (yield* Settler.Service).materialize()
        const invalid = (yield* turn.settle(Kernel.call("double", { n: 1.5 }))).settlement
        const notObject = (yield* turn.settle(Kernel.call("double", [1]))).settlement
        const valid = (yield* turn.settle(Kernel.call("double", { n: 4 }))).settlement
        yield* Scope.close(scope, Exit.void)
        const stale = (yield* turn.settle(Kernel.call("double", { n: 5 }))).settlement
        return { invalid, notObject, valid, stale }
      }),
    )
    expect(settled.invalid.error?.kind).toBe("invalid_input")
    expect(settled.invalid.error?.message).toContain("n must be an integer")
    expect(settled.notObject.error?.kind).toBe("invalid_input")
    expect(settled.valid).toMatchObject({ status: "success", content: [{ type: "text", text: "twice 4 is 8" }], structured: { doubled: 8 } })
    expect(settled.stale.error?.kind).toBe("stale")
    expect(runs).toEqual([{ n: 4 }])
  })

  test("its definition is a frozen copy, as structuredClone copies: holes, other array keys, a __proto__ key, a Date", () => {
    const examples: Array<unknown> & { label?: string } = [1, , 3]
    examples.label = "three"
    const inputSchema = {
      type: "object",
      properties: { ["__proto__"]: { type: "string" }, when: { type: "string", default: new Date(0) } },
      examples,
    }
    const definition = Definition.of(schemaOnly(inputSchema), "copied")
    expect(definition.inputSchema).toEqual(structuredClone(inputSchema))
    expect(definition.inputSchema).not.toBe(inputSchema)
    const properties = definition.inputSchema.properties as Record<string, { default?: unknown }>
    expect(Object.keys(properties)).toEqual(["__proto__", "when"])
    expect(Object.getPrototypeOf(properties)).toBe(Object.prototype)
    expect(properties.when!.default).toBeInstanceOf(Date)
    expect(properties.when!.default).not.toBe(inputSchema.properties.when.default)
    const copied = definition.inputSchema.examples as typeof examples
    expect([1 in copied, copied.length, copied.label]).toEqual([false, 3, "three"])
    const frozen = (value: unknown): boolean =>
      typeof value !== "object" || value === null || (Object.isFrozen(value) && Object.values(value).every(frozen))
    expect(frozen(definition)).toBe(true)
    // The author's objects stay as they were.
    expect(Object.isFrozen(inputSchema) || Object.isFrozen(examples)).toBe(false)
  })

  test("a definition whose schema holds a function is refused, as structuredClone refuses it", () => {
    expect(() => Definition.of(schemaOnly({ type: "object", default: () => 1 }), "fn")).toThrow(
      expect.objectContaining({ name: "DataCloneError" }),
    )
  })
})

/** A described tool that only carries `inputSchema`. */
const schemaOnly = (inputSchema: Record<string, unknown>) =>
  Described.make({
    description: "Carries a schema",
    inputSchema,
    validate: () => undefined,
    execute: () => Effect.succeed(""),
    toModelOutput: () => [],
    structured: () => undefined,
  })
