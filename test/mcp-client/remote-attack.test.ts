// core as an MCP client of a hostile server: a flood of list_changed does not make core list the tools once per
// notification, resources naming files of the machine never turn into reads of them, and a server's schema
// cannot make core's own check of a model's input stall.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { McpClient } from "../../src/mcp-client/mcp-client"
import { BUN, settle, textOf, turn, withLocation } from "./support"

const FLOOD = join(import.meta.dir, "flood-server.ts")

const config = { mcp: { bad: { command: [BUN, FLOOD] } }, permission: { "bad_*": "allow" } }

describe("core as an MCP client of a hostile server", () => {
  test("a burst of list_changed is coalesced: the tools are listed again a few times, not once per notification", async () => {
    const result = await withLocation(config, () =>
      Effect.gen(function* () {
        const first = yield* turn
        yield* settle(first, "bad_flood", { times: 2_000 })
        // Turns go stale while the notifications are handled; the count is read through the first that is current.
        while (true) {
          const after = yield* turn
          const lists = (yield* settle(after, "bad_lists", {})).settlement
          if (lists.error?.kind === "stale") continue
          return { lists: textOf(lists), names: after.definitions.map((definition) => definition.name) }
        }
      }),
    )
    expect(result.names).toContain("bad_lists")
    expect(Number(result.lists)).toBeLessThanOrEqual(4)
  }, 30_000)

  test("resource links and blobs naming /etc/passwd are shown as names, never read", async () => {
    const result = await withLocation(config, () =>
      Effect.gen(function* () {
        const first = yield* turn
        return (yield* settle(first, "bad_links", {})).settlement
      }),
    )
    expect(result.status).toBe("success")
    expect(JSON.stringify(result)).not.toContain("root:")
    expect(result.content[0]).toEqual({ type: "text", text: "Resource: file:///etc/passwd (passwd)" })
  }, 30_000)

  test("a server's backtracking patterns are left to the server: core's check of the input never runs them", async () => {
    const result = await withLocation(config, () =>
      Effect.gen(function* () {
        const current = yield* turn
        const slow = "a".repeat(64) + "!"
        return {
          text: (yield* settle(current, "bad_match", { text: slow })).settlement,
          keys: (yield* settle(current, "bad_match", { text: "a", tags: { [`${"b".repeat(64)}!`]: "x" } })).settlement,
          checked: (yield* settle(current, "bad_match", { text: "a", pattern: 5 })).settlement,
          definition: current.definitions.find((definition) => definition.name === "bad_match")!,
        }
      }),
    )
    expect(textOf(result.text)).toStartWith("matched")
    expect(textOf(result.keys)).toStartWith("matched")
    // The rest of the schema is still checked, a property named "pattern" included; the model still reads the patterns.
    expect(result.checked.error?.kind).toBe("invalid_input")
    expect(JSON.stringify(result.definition.inputSchema)).toContain("^(a+)+$")
  }, 30_000)

  test("a schema a validator would try 2^40 subschemas of is not offered; a recursive one that is cheap to check is", async () => {
    const result = await withLocation(config, () =>
      Effect.gen(function* () {
        const current = yield* turn
        return {
          names: current.definitions.map((definition) => definition.name),
          filtered: (yield* settle(current, "bad_filter", { where: { and: [{ field: "a", equals: 1 }, { or: [{ field: "b" }] }] } })).settlement,
          wrong: (yield* settle(current, "bad_filter", { where: { and: [{ nope: 1 }] } })).settlement,
          diagnostics: (yield* McpClient.Service).diagnostics().map((diagnostic) => diagnostic.message),
        }
      }),
    )
    expect(result.names).toContain("bad_filter")
    for (const name of ["bad_bomb_input", "bad_bomb_probe", "bad_bomb_output", "bad_bomb_nested"]) expect(result.names).not.toContain(name)
    expect(result.filtered.status).toBe("success")
    expect(result.wrong.error?.kind).toBe("invalid_input")
    expect(result.diagnostics).toEqual(
      expect.arrayContaining([
        'MCP server "bad", tool "bomb_input": its input schema cannot be used: some data would meet more than 5000 of its subschemas on one value',
        'MCP server "bad", tool "bomb_probe": its input schema cannot be used: some data would meet more than 5000 of its subschemas on one value',
        'MCP server "bad", tool "bomb_output": not offered: its output schema cannot be used: some data would meet more than 5000 of its subschemas on one value',
        'MCP server "bad", tool "bomb_nested": its input schema cannot be used: some data would meet more than 5000 of its subschemas on one value',
      ]),
    )
  }, 60_000)

  // A validator checks `uniqueItems` by comparing every item with every other: 200,000 numbers in a result (or an
  // input) held core's thread for 26 s; an `enum` of thousands of values, each item against each. Left to the
  // server, as its patterns are; the rest of the schema, short enums included, core still checks.
  test("a server's uniqueItems and long enums are left to the server: core's checks never run them", async () => {
    const result = await withLocation(config, () =>
      Effect.gen(function* () {
        const current = yield* turn
        return {
          passed: (yield* settle(current, "bad_unique", { a: [2, 2], long: "none of them" })).settlement,
          answered: (yield* settle(current, "bad_unique", {})).settlement,
          wrong: (yield* settle(current, "bad_unique", { a: "not an array" })).settlement,
          short: (yield* settle(current, "bad_unique", { short: "z" })).settlement,
          definition: current.definitions.find((definition) => definition.name === "bad_unique")!,
        }
      }),
    )
    expect(result.passed).toMatchObject({ status: "success", structured: { a: [2, 2] } })
    expect(result.answered).toMatchObject({ status: "success", structured: { a: [1, 1] } })
    expect(result.wrong.error?.kind).toBe("invalid_input")
    expect(result.short.error?.kind).toBe("invalid_input")
    // The model still reads them.
    expect(result.definition.inputSchema).toMatchObject({ properties: { a: { uniqueItems: true }, short: { enum: ["x", "y"] } } })
    expect((result.definition.inputSchema as { properties: { long: { enum: Array<string> } } }).properties.long.enum).toHaveLength(100)
  }, 30_000)

  // Core refuses halves of characters in a model's input; a server's result carried them into the store and on to
  // the model, whose provider may refuse every later request of the conversation for one.
  test("halves of characters in a server's result, error or structured value reach no one: each is U+FFFD", async () => {
    const result = await withLocation(config, () =>
      Effect.gen(function* () {
        const current = yield* turn
        return {
          answered: (yield* settle(current, "bad_halves", {})).settlement,
          failed: (yield* settle(current, "bad_halves", { times: 1 })).settlement,
          refused: (yield* settle(current, "bad_halves", { times: 2 })).settlement,
        }
      }),
    )
    expect(textOf(result.answered)).toBe("a\uFFFDb")
    expect(result.answered.structured).toEqual({ "k\uFFFD": "\uFFFD", whole: "\u{1F600}" })
    expect(result.failed.error?.message).toBe("failed \uFFFD here")
    expect(result.refused.error?.message).toContain("refused \uFFFD there")
    for (const settlement of Object.values(result)) expect(JSON.stringify(settlement)).not.toMatch(/\\ud[89a-f]/)
  }, 30_000)

  test("a server's own error -32000 is its answer, in its words: the connection stays", async () => {
    const result = await withLocation(config, () =>
      Effect.gen(function* () {
        const current = yield* turn
        return [(yield* settle(current, "bad_refuse", {})).settlement, (yield* settle(current, "bad_refuse", {})).settlement]
      }),
    )
    const [first, second] = result.map((settlement) => settlement.error?.message ?? "")
    expect(first).toMatch(/^MCP server "bad" answered with an error while calling refuse: (MCP error -32000: )+the quota is spent \(pid \d+\)/)
    expect(first).not.toContain("closed the connection")
    // The same server process answered both: it was not dropped and started again.
    expect(second).toBe(first)
  }, 30_000)

  // Each such string took JavaScriptCore about a second to refuse, on the thread every Location's calls share.
  test("a server's backtracking output-schema pattern never runs on its own result: the rest of the schema still does", async () => {
    const result = await withLocation(config, () =>
      Effect.gen(function* () {
        const current = yield* turn
        const started = performance.now()
        const answered = (yield* settle(current, "bad_answer", { items: 20 })).settlement
        const ms = performance.now() - started
        const wrong = (yield* settle(current, "bad_answer", { wrong: true })).settlement
        return { answered, ms, wrong, definition: current.definitions.find((definition) => definition.name === "bad_answer")! }
      }),
    )
    expect(result.answered.status).toBe("success")
    expect(result.answered.structured).toEqual({ words: Array.from({ length: 20 }, () => `${"a".repeat(30)}!`) })
    expect(result.ms).toBeLessThan(2_000)
    expect(result.wrong.status).not.toBe("success")
    // The model still reads the pattern.
    expect(result.definition.outputSchema).toMatchObject({ properties: { words: { items: { pattern: "^(\\w+\\s?)*$" } } } })
  }, 60_000)
})
