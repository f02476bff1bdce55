// Plugin.Boundary under a hostile model: the paths a model gives a plugin's tool (`..`, symlinks, other spellings
// of core's configuration) are judged where they really lead, as the built-in file tools judge them.

import { describe, expect, test } from "bun:test"
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import { location } from "../../src/sdk/testing"
import { Plugin } from "../../src/author/plugin"
import { Tool } from "../../src/tool/tool"
import { tempDir } from "../support/temp"

/** A plugin registering `scribble`, which writes a file through the boundary. */
const scribble = Plugin.make({
  install: Effect.gen(function* () {
    const tools = yield* Plugin.Tools
    const boundary = yield* Plugin.Boundary
    yield* tools.register({
      scribble: Tool.make({
        description: "Write a text file",
        input: Schema.Struct({ path: Schema.String, text: Schema.String }),
        output: Schema.String,
        checksPermissions: true,
        execute: (input, context) =>
          Effect.gen(function* () {
            const file = yield* boundary.authorize(context, { path: input.path, access: "write" })
            yield* Effect.promise(() => Bun.write(file.path, input.text))
            return file.path
          }),
      }),
    })
  }),
})

const ORIGINAL = '{ "permission": { "*": "ask" } }\n'

describe("Plugin.Boundary against the paths a model chooses", () => {
  test("every spelling of core's configuration is asked of a person, whatever the rules allow", async () => {
    const directory = tempDir("core-plugin-scribble-")
    writeFileSync(join(directory, "core.json"), ORIGINAL)
    mkdirSync(join(directory, "tools"))
    mkdirSync(join(directory, "sub"))
    symlinkSync(join(directory, "core.json"), join(directory, "alias.json"))
    symlinkSync(join(directory, "tools"), join(directory, "sub/t"))
    await using loc = await location({ directory, plugins: [scribble], permission: { rules: [{ action: "*", resource: "*", effect: "allow" }] } })
    const attempts = ["core.json", "./core.json", "sub/../core.json", `${directory}/core.json`, "alias.json", "tools/evil.ts", "sub/t/evil.ts", "plugins/evil.ts", ".core/x"]
    for (const path of attempts) {
      const traced = await loc.trace("scribble", { path, text: "{}" })
      expect([path, traced.settlement.status]).toEqual([path, "declined"])
      expect(traced.asks.length).toBeGreaterThan(0)
    }
    expect(readFileSync(join(directory, "core.json"), "utf8")).toBe(ORIGINAL)
    expect(() => readFileSync(join(directory, "tools/evil.ts"))).toThrow()
    // An ordinary file is written without asking.
    expect((await loc.trace("scribble", { path: "notes.txt", text: "ok" })).settlement.status).toBe("success")
  })

  test("`..` and a symlink leading out of the Location ask external_directory for where they really lead", async () => {
    const directory = tempDir("core-plugin-scribble-")
    const outside = tempDir("core-plugin-scribble-outside-")
    symlinkSync(outside, join(directory, "door"))
    await using loc = await location({ directory, plugins: [scribble] })
    for (const path of [`../${outside.split("/").at(-1)}/x.txt`, "door/x.txt"]) {
      const traced = await loc.trace("scribble", { path, text: "out" })
      expect([path, traced.settlement.status]).toEqual([path, "declined"])
      expect(traced.asks.map((ask) => ask.action)).toEqual(["external_directory"])
      expect(traced.asks[0]!.resources).toEqual([`${outside}/*`])
    }
    expect(() => readFileSync(join(outside, "x.txt"))).toThrow()
  })
})
