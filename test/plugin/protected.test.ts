// A model cannot install or change a plugin (DESIGN §2 law 13): `plugins/` of the Location and of $CORE_HOME is
// core's own configuration, so every tool that writes (write, edit, apply_patch, bash) asks a person for it, under
// "*": "allow" with saved "always" approvals, and no rule or approval answers; nor can a plugin's own tool be
// turned on it, since the boundary it writes through asks the same.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import { Plugin } from "../../src/author/plugin"
import { location } from "../../src/sdk/testing"
import { Tool } from "../../src/tool/tool"
import { messageOf, world } from "../permission/protected-harness"
import { tempDir } from "../support/temp"

type World = ReturnType<typeof world>

const KEPT = "export default 1\n"
const patch = (body: string) => `*** Begin Patch\n${body}\n*** End Patch`
const planted = (w: World) => existsSync(join(w.directory, "plugins/x.ts"))
const keptChanged = (w: World) => readFileSync(join(w.directory, "plugins/kept.ts"), "utf8") !== KEPT

const ATTEMPTS: ReadonlyArray<{
  readonly name: string
  readonly tool: string
  readonly input: (w: World) => unknown
  readonly setup?: (w: World) => void
  readonly changed: (w: World) => boolean
}> = [
  { name: "write plugins/x.ts", tool: "write", input: () => ({ filePath: "plugins/x.ts", content: "x" }), changed: planted },
  {
    name: "write $CORE_HOME/plugins/x.ts",
    tool: "write",
    input: (w) => ({ filePath: join(w.home, "plugins/x.ts"), content: "x" }),
    changed: (w) => existsSync(join(w.home, "plugins/x.ts")),
  },
  {
    name: "write through a symlinked directory pointing at plugins/",
    tool: "write",
    setup: (w) => symlinkSync(join(w.directory, "plugins"), join(w.directory, "lib")),
    input: () => ({ filePath: "lib/x.ts", content: "x" }),
    changed: planted,
  },
  {
    name: "edit plugins/kept.ts",
    tool: "edit",
    input: () => ({ filePath: "plugins/kept.ts", oldString: "1", newString: "2" }),
    changed: keptChanged,
  },
  {
    name: "apply_patch add plugins/x.ts",
    tool: "apply_patch",
    input: () => ({ patchText: patch("*** Add File: plugins/x.ts\n+x") }),
    changed: planted,
  },
  {
    name: "apply_patch update plugins/kept.ts",
    tool: "apply_patch",
    input: () => ({ patchText: patch("*** Update File: plugins/kept.ts\n@@\n-export default 1\n+export default 2") }),
    changed: keptChanged,
  },
  {
    name: "apply_patch move a file into plugins/",
    tool: "apply_patch",
    setup: (w) => writeFileSync(join(w.directory, "a.ts"), "export {}\n"),
    input: () => ({ patchText: patch("*** Update File: a.ts\n*** Move to: plugins/x.ts\n@@\n-export {}\n+export { }") }),
    changed: planted,
  },
  {
    name: "apply_patch delete plugins/kept.ts",
    tool: "apply_patch",
    input: () => ({ patchText: patch("*** Delete File: plugins/kept.ts") }),
    changed: (w) => !existsSync(join(w.directory, "plugins/kept.ts")),
  },
  { name: "bash echo > plugins/x.ts", tool: "bash", input: () => ({ command: "echo x > plugins/x.ts" }), changed: planted },
  {
    name: "bash cp into plugins/",
    tool: "bash",
    setup: (w) => writeFileSync(join(w.directory, "evil.ts"), "x"),
    input: () => ({ command: "cp evil.ts plugins/x.ts" }),
    changed: planted,
  },
  {
    name: "bash sed -i plugins/kept.ts",
    tool: "bash",
    input: () => ({ command: "sed -i s/1/2/ plugins/kept.ts" }),
    changed: keptChanged,
  },
  {
    name: "bash mv a directory over a new plugins/ of $CORE_HOME",
    tool: "bash",
    setup: (w) => {
      mkdirSync(join(w.directory, "evil"))
      writeFileSync(join(w.directory, "evil/x.ts"), "x")
    },
    input: (w) => ({ command: `mv evil ${join(w.home, "plugins")}` }),
    changed: (w) => existsSync(join(w.home, "plugins/x.ts")),
  },
]

describe("plugins/ is protected from every writing tool", () => {
  for (const attempt of ATTEMPTS) {
    test(`${attempt.name}: asked of a person, never answered by a rule or a saved approval`, async () => {
      const w = world({ "plugins/kept.ts": KEPT })
      attempt.setup?.(w)
      for (const action of ["edit", "bash", "external_directory"]) await w.approve(action, ["*"])
      const outcome = await w.settle(attempt.tool, attempt.input(w), "yes")
      expect(outcome.settlement.status).toBe("error")
      expect(messageOf(outcome.settlement)).toContain("A person must make that change")
      expect(outcome.asks.some((ask) => ask.protected !== undefined)).toBe(true)
      expect(attempt.changed(w)).toBe(false)
    })
  }
})

describe("a plugin's tool cannot be turned on plugins/", () => {
  test("writing through Plugin.Boundary asks for plugins/ even where the rules allow everything", async () => {
    const save = Plugin.make({
      install: Effect.gen(function* () {
        const boundary = yield* Plugin.Boundary
        yield* (yield* Plugin.Tools).register({
          save: Tool.make({
            description: "Save a file of the project",
            input: Schema.Struct({ path: Schema.String, text: Schema.String }),
            output: Schema.String,
            checksPermissions: true,
            execute: (input, context) =>
              Effect.gen(function* () {
                const file = yield* boundary.authorize(context, { path: input.path, access: "write" })
                yield* Effect.promise(() => Bun.write(file.path, input.text))
                return "saved"
              }),
          }),
        })
      }),
    })
    const directory = tempDir("core-plugin-protected-")
    await using loc = await location({
      directory,
      plugins: [save],
      permission: { rules: [{ action: "*", resource: "*", effect: "allow" }] },
    })
    expect((await loc.settle("save", { path: "notes.txt", text: "x" })).structured).toBe("saved")
    const attempt = await loc.trace("save", { path: "plugins/evil.ts", text: "x" })
    expect(attempt.settlement.status).not.toBe("success")
    expect(attempt.asks.length).toBe(1)
    expect(existsSync(join(directory, "plugins/evil.ts"))).toBe(false)
  })
})
