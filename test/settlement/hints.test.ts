// What a refused call tells the model so it can correct itself: the key an unknown input key was meant to be,
// and core's own tool for a name another product uses. Settled through the real settler.

import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { Registry } from "../../src/registry/registry"
import { Nesting } from "../../src/contract/nesting"
import { Hints } from "../../src/settlement/hints"
import { Settler } from "../../src/settlement/settler"
import * as Internal from "../../src/tool/internal"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"

const tool = (input: Tool.Codec) =>
  Tool.make({ description: "t", input, output: Schema.String, execute: () => Effect.succeed("ran") })

const settleOnce = (record: Record<string, Tool.Any>, name: string, input: unknown) =>
  Kernel.run(
    Effect.gen(function* () {
      yield* (yield* Registry.Service).tools.register(record)
      const turn = yield* (yield* Settler.Service).materialize()
      return (yield* turn.settle(Kernel.call(name, input))).settlement
    }),
  )

describe("unknown input keys", () => {
  const read = tool(
    Schema.Struct({ filePath: Schema.String, offset: Schema.optionalKey(Schema.Finite), limit: Schema.optionalKey(Schema.Finite) }),
  )
  const bash = tool(Schema.Struct({ command: Schema.String, timeoutMs: Schema.optionalKey(Schema.Finite) }))

  test("file_path is paired with filePath, and nothing runs", async () => {
    const settlement = await settleOnce({ read }, "read", { file_path: "a.txt" })
    expect(settlement.error?.kind).toBe("invalid_input")
    expect(settlement.error?.message).toContain('- file_path: unknown key; did you mean "filePath"?')
    expect(settlement.error?.message).toContain("nothing ran")
  })

  test("timeout is paired with timeoutMs beside a valid command", async () => {
    const settlement = await settleOnce({ bash }, "bash", { command: "ls", timeout: 5 })
    expect(settlement.error?.message).toContain('- timeout: unknown key; did you mean "timeoutMs"?')
  })

  // Two letters typed in the wrong order are one slip: it counted as two edits, past the bound, and went unpaired.
  test("a key with two letters swapped is paired with the key it meant", async () => {
    const greet = tool(Schema.Struct({ name: Schema.String, language: Schema.optionalKey(Schema.String) }))
    const settlement = await settleOnce({ greet }, "greet", { name: "Ada", langauge: "fr" })
    expect(settlement.error?.message).toContain('- langauge: unknown key; did you mean "language"?')
    expect(Hints.intendedKeys(["nmae"], ["name"], new Set())).toEqual(new Map([["nmae", "name"]]))
  })

  test("a key like none the tool takes is reported as it is, without a guess", async () => {
    const settlement = await settleOnce({ bash }, "bash", { command: "ls", colour: "red" })
    expect(settlement.error?.message).toContain("- colour: ")
    expect(settlement.error?.message).not.toContain("did you mean")
  })

  test("the pairing prefers a key the input left out, and spells keys without case, _ or -", () => {
    expect(Hints.intendedKeys(["file_path", "old-string", "Limit"], ["filePath", "oldString", "limit"], new Set())).toEqual(
      new Map([
        ["file_path", "filePath"],
        ["old-string", "oldString"],
        ["Limit", "limit"],
      ]),
    )
    expect(Hints.intendedKeys(["paths"], ["path", "pattern"], new Set())).toEqual(new Map([["paths", "path"]]))
    // `limit` is given already, so `limitt` more likely meant `limits`.
    expect(Hints.intendedKeys(["limitt"], ["limit", "limits"], new Set(["limit"]))).toEqual(new Map([["limitt", "limits"]]))
    expect(Hints.intendedKeys(["zzz"], ["filePath"], new Set())).toEqual(new Map())
  })

  // 38,000 keys of 256 characters, each compared with every key the tool takes, held core serve's thread for twenty
  // seconds, and every one of them was quoted back.
  test("an input of thousands of unknown keys is answered at once, with twenty of them described", async () => {
    let seed = 7
    const letter = () => "abcdefghijklmnopqrstuvwxyz"[(seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % 26]
    const input: Record<string, unknown> = { command: "ls" }
    for (let index = 0; index < 38_000; index++) input[Array.from({ length: 256 }, letter).join("")] = 1
    // (The generator repeats itself: some thousands of them are distinct.)
    input[`timeoutMz${"q".repeat(1_000)}`] = 2
    const started = performance.now()
    const settlement = await settleOnce({ bash }, "bash", input)
    expect(performance.now() - started).toBeLessThan(3_000)
    const message = settlement.error?.message ?? ""
    expect(settlement.error?.kind).toBe("invalid_input")
    expect(message.split("\n").filter((line) => line.startsWith("- ")).length).toBe(21)
    const unknown = Object.keys(input).length - 1
    expect(unknown).toBeGreaterThan(5_000)
    expect(message).toContain(`- … and ${unknown - 20} more issues like these`)
    expect(message.length).toBeLessThan(20_000)
  })
})

// A million unknown keys (9 MB, under the body's limit) held core serve's one thread for two seconds finding each,
// then described twenty: past Nesting.MOST_DESCRIBED keys and items, the first problem alone is found.
test("an input of a million unknown keys is refused by its first, without finding the rest", async () => {
  const bash = tool(Schema.Struct({ command: Schema.String }))
  const input: Record<string, unknown> = { command: "ls" }
  for (let index = 0; index < 1_000_000; index++) input[`k${index}`] = 1
  const wide = await settleOnce({ bash }, "bash", input)
  expect(wide.error?.kind).toBe("invalid_input")
  const message = wide.error?.message ?? ""
  expect(message).toContain("k0")
  expect(message.split("\n").filter((line) => line.startsWith("- ")).length).toBe(1)
  expect(message).not.toContain("more issues")
  // Every problem of a value just under the bound is still described, twenty named and the rest counted.
  const narrow: Record<string, unknown> = { command: "ls" }
  for (let index = 0; index < Nesting.MOST_DESCRIBED - 1; index++) narrow[`k${index}`] = 1
  expect((await settleOnce({ bash }, "bash", narrow)).error?.message).toContain(`- … and ${Nesting.MOST_DESCRIBED - 21} more issues like these`)
})

describe("tool names other products use", () => {
  const record = {
    bash: tool(Schema.Struct({ command: Schema.String })),
    read: tool(Schema.Struct({ filePath: Schema.String })),
    edit: tool(Schema.Struct({ filePath: Schema.String })),
  }

  for (const [other, core] of [
    ["run_shell_command", "bash"],
    ["Bash", "bash"],
    ["read_file", "read"],
    ["Read", "read"],
    ["str_replace_editor", "edit"],
    ["str_replace_based_edit_tool", "edit"],
  ] as const) {
    test(`${other} points to ${core}`, async () => {
      const settlement = await settleOnce(record, other, {})
      expect(settlement.error).toEqual({
        kind: "unknown",
        message: `Unknown tool "${other}"; nothing ran. core's tool for that is "${core}": call it instead (its input schema is in the tool list).`,
      })
    })
  }

  test("a product's name for a tool this turn does not offer falls back to the nearest names", async () => {
    const settlement = await settleOnce(record, "write_file", {})
    expect(settlement.error?.message).not.toContain("core's tool for that")
  })
})

describe("a preview of a capture that lost bytes", () => {
  test("says the text is kept as captured only when the tool's output says its capture was cut", async () => {
    const capture = Tool.make({
      description: "A producer's result",
      input: Schema.Struct({ complete: Schema.Boolean }),
      output: Schema.Struct({ text: Schema.String, complete: Schema.Boolean }),
      execute: (input) => Effect.succeed({ text: "line\n".repeat(5_000), complete: input.complete }),
      toModelOutput: ({ output }) => output.text,
    })
    Internal.reportsCaptureLoss<{ complete: boolean }>(capture, (output) => !output.complete)
    const summaryOf = async (complete: boolean) => {
      const settlement = await settleOnce({ capture }, "capture", { complete })
      return (settlement.content[0] as { text: string }).text.split("\n")[0]!
    }
    expect(await summaryOf(false)).toContain("The text as captured (the capture had already lost bytes")
    expect(await summaryOf(true)).toContain("The whole text is kept in")
  })
})
