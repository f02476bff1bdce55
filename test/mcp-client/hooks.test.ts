// Plugin hooks on MCP client tools (DESIGN §12, §13): a Location plugin's `tool.definition`, `tool.execute.before`
// and `tool.execute.after` apply to the `<server>_<tool>` tools of its core.json servers as to any tool. A replaced
// input is what the server receives; a refusal never reaches the server; the replaced projection is what the
// model reads. Against the fixture server, wired as `core exec` wires a Location.

import { describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import { BUN, FIXTURE, settle, textOf, turn, withLocation } from "./support"

/** A plugin hooking `fix_*`: logs what it sees, upper-cases `text`, refuses "forbidden" and fix_crash, rewrites the result. */
const HOOKS = `import { Plugin } from "@core/tool"
import { Effect } from "effect"

export const seen: Array<unknown> = []

export default Plugin.make({
  install: Effect.succeed<Plugin.Hooks>({
    tools: ["fix_*"],
    "tool.definition": (definition) => ({ description: definition.description + " (hooked)" }),
    "tool.execute.before": (call) => {
      const input = call.input as { readonly text?: string }
      if (call.tool === "fix_crash" || input.text === "forbidden") return Effect.fail(new Plugin.Denied({ message: "Not that word." }))
      return Effect.succeed({ input: { ...input, text: String(input.text).toUpperCase() } })
    },
    "tool.execute.after": (result) =>
      Effect.succeed({
        content: "after saw " + JSON.stringify(result.input) + " and " + JSON.stringify(result.content) + " from " + result.tool,
      }),
  }),
})
`

const config = {
  mcp: { fix: { command: [BUN, FIXTURE, "serve"] } },
  permission: { "fix_*": "allow" },
  files: { "plugins/hooks.ts": HOOKS },
}

describe("plugin hooks on MCP client tools", () => {
  test("before replaces the input the server receives, after replaces what the model reads, definition applies", async () => {
    const result = await withLocation(config, () =>
      Effect.gen(function* () {
        const current = yield* turn
        const echo = current.definitions.find((definition) => definition.name === "fix_echo")!
        const read = current.definitions.find((definition) => definition.name === "read")!
        const hooked = yield* settle(current, "fix_echo", { text: "hello" })
        return { echo, read, hooked }
      }),
    )
    expect(result.echo.description).toBe("Echoes text (hooked)")
    // The filter holds: a built-in is not hooked.
    expect(result.read.description).not.toContain("(hooked)")
    expect(result.hooked.settlement.status).toBe("success")
    // The server answered for the replaced input, and the after hook saw that answer and the replaced input.
    expect(textOf(result.hooked.settlement)).toBe(
      `after saw {"text":"HELLO"} and [{"type":"text","text":"echo: HELLO"}] from fix_echo`,
    )
  }, 30_000)

  test("a refusal settles as denied and never reaches the server", async () => {
    const result = await withLocation(config, () =>
      Effect.gen(function* () {
        const current = yield* turn
        const before = yield* settle(current, "fix_pid", {})
        const refused = yield* settle(current, "fix_echo", { text: "forbidden" })
        // fix_crash ends the server mid-call: had the refused call reached it, the next call would find it gone.
        const crash = yield* settle(current, "fix_crash", {})
        const after = yield* settle(current, "fix_pid", {})
        return { before, refused, crash, after }
      }),
    )
    for (const refused of [result.refused, result.crash]) {
      expect(refused.settlement.status).toBe("error")
      expect(refused.settlement.error).toEqual({ kind: "denied", message: "Not that word." })
    }
    expect(result.after.settlement.status).toBe("success")
    // The same server process answered before and after: it never crashed, so it never took the refused call.
    expect(textOf(result.after.settlement)).toBe(textOf(result.before.settlement))
  }, 30_000)
})
