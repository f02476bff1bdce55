// What a model is told about a tool's input: no bounds that mean nothing (Schema.Int's ±2^53), the real limits,
// and numbers that a model can send (finite JSON numbers). Schema.Number is refused in an input at Tool.make.

import { describe, expect, test } from "bun:test"
import { Effect, Layer, Schema } from "effect"
import { Builtins } from "../../src/builtin/builtins"
import { Location } from "../../src/location/location"
import { Registry } from "../../src/registry/registry"
import { settle } from "../../src/sdk/testing"
import { Shell } from "../../src/shell/shell"
import { Definition } from "../../src/tool/definition"
import { Tool } from "../../src/tool/tool"
import { Store } from "../../src/store/store"
import { tempDir } from "../support/temp"
import { Kernel } from "../../src/host/kernel"

const make = (input: Tool.Codec, output: Tool.Codec = Schema.String) =>
  Tool.make({ description: "d", input, output, execute: () => Effect.succeed("" as never) })

const mentionsSafeIntegerRange = (schema: unknown): boolean =>
  JSON.stringify(schema).includes(String(Number.MAX_SAFE_INTEGER))

describe("integer bounds", () => {
  test("Schema.Int is an integer without the ±2^53 bounds, in inputs and outputs", () => {
    const definition = Definition.of(
      make(Schema.Struct({ count: Schema.Int }), Schema.Struct({ total: Schema.Int })),
      "counts",
    )
    expect(definition.inputSchema).toMatchObject({ properties: { count: { type: "integer" } } })
    expect(mentionsSafeIntegerRange(definition)).toBe(false)
  })

  test("a real limit stays, without the meaningless one beside it", () => {
    const schema = Definition.of(
      make(Schema.Struct({ line: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)) })),
      "line",
    ).inputSchema
    expect(schema).toMatchObject({ properties: { line: { type: "integer", minimum: 1 } } })
    expect((schema.properties as Record<string, object>).line).not.toHaveProperty("maximum")
  })

  test("no built-in tool advertises the safe-integer range; bash's timeoutMs carries its real range", async () => {
    const directory = tempDir("core-schema-")
    const kernel = Kernel.layer({ store: Store.layerMemory, outputsDirectory: tempDir("core-schema-out-") })
    const builtins = Builtins.layer.pipe(Layer.provide(Shell.layer({ maxTimeoutMs: 90_000 })))
    const definitions = await Effect.runPromise(
      Effect.gen(function* () {
        return (yield* Registry.Service).capture().definitions
      }).pipe(Effect.provide(Location.layer(directory, builtins).pipe(Layer.provideMerge(kernel)))),
    )
    expect(definitions.length).toBeGreaterThan(5)
    for (const definition of definitions) expect([definition.name, mentionsSafeIntegerRange(definition)]).toEqual([definition.name, false])
    const bash = definitions.find((definition) => definition.name === "bash")!
    expect(bash.inputSchema).toMatchObject({ properties: { timeoutMs: { type: "integer", minimum: 1, maximum: 90_000 } } })
  })
})

describe("numbers in an input", () => {
  test("Schema.Number in an input is refused when the tool is made, naming the field and the fix", () => {
    expect(() => make(Schema.Struct({ lines: Schema.Number }))).toThrow(
      /input `lines` is Schema\.Number.*Use Schema\.Finite/,
    )
    expect(() => make(Schema.Struct({ range: Schema.Struct({ points: Schema.Array(Schema.NullOr(Schema.Number)) }) }))).toThrow(
      /input `range\.points\[\]`/,
    )
  })

  test("Schema.Finite, Schema.Int and NumberFromString are offered as plain JSON types", () => {
    const schema = Definition.of(
      make(Schema.Struct({ ratio: Schema.Finite, count: Schema.Int, since: Schema.NumberFromString })),
      "numbers",
    ).inputSchema
    expect(schema.properties).toEqual({ ratio: { type: "number" }, count: { type: "integer" }, since: { type: "string" } })
  })

  test("Schema.Number stays allowed in an output, where its JSON form says how non-finite values are written", () => {
    expect(() => make(Schema.Struct({}), Schema.Number)).not.toThrow()
  })

  test('"5" for a number is invalid input whose message names a number', async () => {
    const tool = Tool.make({
      description: "Double a number",
      input: Schema.Struct({ n: Schema.Finite }),
      output: Schema.Finite,
      execute: (input) => Effect.succeed(input.n * 2),
    })
    const settlement = await settle(tool, { n: "5" })
    expect(settlement.status).toBe("error")
    expect(settlement.error?.kind).toBe("invalid_input")
    expect(settlement.error?.message).toContain("Expected number")
    expect(settlement.error?.message).not.toContain("Infinity")
  })
})
