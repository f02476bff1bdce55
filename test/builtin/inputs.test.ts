// The built-ins' inputs are derived to JSON Schema when a definition first needs them (Builtin.tool), not when the
// tools are made at every Location's start: so the check Tool.make makes of an author's input (an object at the
// root, no number a model cannot send) is made here, for every built-in, as it is registered.

import { expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { Builtin } from "../../src/builtin/builtin"
import { Builtins } from "../../src/builtin/builtins"
import { Skill } from "../../src/builtin/skill"
import * as Internal from "../../src/tool/internal"
import { JsonSchema } from "../../src/tool/json-schema"
import { harness } from "../support/builtin"

test("every built-in's input derives as Tool.make requires, and its definition is that derivation", async () => {
  const location = harness()
  for (const name of Builtins.NAMES) {
    const record = Internal.get(await location.tool(name))!
    const eager = JsonSchema.input(record.input)
    expect({ name, type: eager?.type }).toEqual({ name, type: "object" })
    expect({ name, schema: record.inputSchema as unknown }).toEqual({ name, schema: eager as unknown })
  }
  // The skill tool is registered only where there are skills; its input is checked the same way.
  expect(JsonSchema.input(Skill.Input)?.type).toBe("object")
})

test("Builtin.tool leaves the input's check to the first definition", () => {
  const config = { description: "d", input: Schema.Struct({ n: Schema.Number }), output: Schema.String, execute: () => Effect.succeed("") }
  const tool = Builtin.tool(config)
  expect(() => Internal.get(tool)!.inputSchema).toThrow(/Schema.Number/)
})
