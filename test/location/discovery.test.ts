import { describe, expect, test } from "bun:test"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import { Discovery } from "../../src/location/discovery"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"
import { tempDir } from "../support/temp"
import { echoTool } from "../support/tools"

const TOOL = () => echoTool({ description: "echo" })

/** A Location directory whose tools/ holds the given files. */
const location = (files: Record<string, string>) => {
  const directory = tempDir()
  mkdirSync(join(directory, "tools"))
  for (const [name, source] of Object.entries(files)) writeFileSync(join(directory, "tools", name), source)
  return directory
}

const load = (directory: string) =>
  Effect.gen(function* () {
    const registry = yield* Registry.Service
    const result = yield* Discovery.load(directory, registry.tools)
    return { ...result, names: registry.capture().definitions.map((definition) => definition.name) }
  })

describe("Discovery", () => {
  test("names the default export after the file and other exported tools <base>_<export>; ignores the rest", async () => {
    const directory = location({
      "echo.ts": TOOL(),
      "git.ts": `
import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"
const make = (what: string) => Tool.make({ description: what, input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed(what) })
export const status = make("status")
export const log = make("log")
export const notATool = { description: "looks like one" }
export const VERSION = 3
`,
    })
    const result = await Kernel.run(load(directory))
    expect(result.names).toEqual(["echo", "git_log", "git_status"])
    expect(result.diagnostics).toEqual([])
    expect(result.loaded.map((loaded) => [...loaded.names].sort())).toEqual([["echo"], ["git_log", "git_status"]])
  })

  test("tools load without a node_modules nearby and share the runtime's Effect and Tool instances", async () => {
    const directory = location({
      "fail.ts": `
import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"
import * as Option from "effect/Option"
export default Tool.make({
  description: "fails",
  input: Schema.Struct({ n: Schema.NumberFromString }),
  output: Schema.String,
  execute: (input) => Option.isSome(Option.some(input.n)) ? Effect.fail(new Tool.Failure({ message: "n=" + input.n })) : Effect.succeed(""),
})
`,
    })
    const settlement = await Kernel.run(
      Effect.gen(function* () {
        yield* load(directory)
        const turn = yield* (yield* Settler.Service).materialize()
        return (yield* turn.settle(Kernel.call("fail", { n: "4" }))).settlement
      }),
    )
    // Decoding used the runtime's Schema (NumberFromString ran) and the Failure was recognised as Tool.Failure.
    expect(settlement.error).toEqual({ kind: "failure", message: "n=4" })
  })

  test("a different effect in a nearby node_modules is not used: tools get the runtime's own", async () => {
    const directory = location({
      "which.ts": `
import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"
export default Tool.make({
  description: "reports which effect it got",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed(typeof (Schema as any).fake === "string" ? "impostor" : "runtime"),
})
`,
    })
    const fake = join(directory, "node_modules", "effect")
    mkdirSync(fake, { recursive: true })
    writeFileSync(join(fake, "package.json"), JSON.stringify({ name: "effect", version: "0.0.1", type: "module", main: "index.js" }))
    writeFileSync(join(fake, "index.js"), `export const Schema = { fake: "yes" }\nexport const Effect = {}\n`)
    const settlement = await Kernel.run(
      Effect.gen(function* () {
        const { diagnostics } = yield* load(directory)
        expect(diagnostics).toEqual([])
        const turn = yield* (yield* Settler.Service).materialize()
        return (yield* turn.settle(Kernel.call("which", {}))).settlement
      }),
    )
    expect(settlement.structured).toBe("runtime")
  })

  test("each broken file becomes a diagnostic naming the file and reason while the others still load", async () => {
    const directory = location({
      "good.ts": TOOL(),
      "syntax.ts": "export default Tool.make({ description: ",
      "internal.ts": `import { x } from "@core/internal"\nexport default x`,
      "deep.ts": `import * as E from "effect/internal/effect"\nexport default E`,
      "sql.ts": `import * as Sql from "effect/sql"\nexport default Sql`,
      "missing.ts": `import leftPad from "left-pad-that-is-not-installed"\nexport default leftPad`,
      "9lives.ts": TOOL(),
      "throws.ts": `throw new Error("exploded at import")`,
      "empty.ts": "export const value = 1",
      "helper.test.ts": "this is not even typescript (((",
      "types.d.ts": "export type X = number",
    })
    const result = await Kernel.run(load(directory))
    expect(result.names).toEqual(["good"])
    const byFile = Object.fromEntries(result.diagnostics.map((diagnostic) => [diagnostic.file.split("/").pop(), diagnostic.message]))
    expect(Object.keys(byFile).sort()).toEqual(["9lives.ts", "deep.ts", "empty.ts", "internal.ts", "missing.ts", "sql.ts", "syntax.ts", "throws.ts"])
    expect(byFile["sql.ts"]).toContain('"effect/sql", which this core does not include')
    expect(byFile["syntax.ts"]).toMatch(/^syntax error/)
    expect(byFile["internal.ts"]).toContain('"@core/internal", which is not public')
    expect(byFile["deep.ts"]).toContain('"effect/internal/effect", one of Effect\'s internal modules')
    expect(byFile["missing.ts"]).toContain("left-pad-that-is-not-installed")
    expect(byFile["9lives.ts"]).toContain("must start with a letter")
    expect(byFile["throws.ts"]).toContain("exploded at import")
    expect(byFile["empty.ts"]).toContain("exports no tool")
    // A helper module there is the usual cause: where shared code goes is said.
    expect(byFile["empty.ts"]).toContain("a folder of tools/ (tools/lib/), whose files are not loaded as tools")
    for (const diagnostic of result.diagnostics) expect(diagnostic.file.startsWith(join(directory, "tools"))).toBe(true)
  })

  test("a file whose exports include an invalid derived name registers none of its tools", async () => {
    const directory = location({
      "multi.ts": `
import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"
const make = () => Tool.make({ description: "d", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("") })
export const fine = make()
export const ${"x".repeat(64)} = make()
`,
    })
    const result = await Kernel.run(load(directory))
    expect(result.names).toEqual([])
    expect(result.diagnostics[0]!.message).toContain("limit is 64")
  })

  test("a file that never finishes loading is reported after the timeout and does not hold up the others", async () => {
    const directory = location({ "good.ts": TOOL(), "stuck.ts": `await new Promise(() => {})\nexport default 1` })
    const result = await Kernel.run(
      Effect.gen(function* () {
        const registry = yield* Registry.Service
        const loaded = yield* Discovery.load(directory, registry.tools, { timeoutMs: 200 })
        return { ...loaded, names: registry.capture().definitions.map((definition) => definition.name) }
      }),
    )
    expect(result.names).toEqual(["good"])
    expect(result.diagnostics).toEqual([{ file: join(directory, "tools", "stuck.ts"), message: expect.stringContaining("did not finish loading") }])
  })

  test("two files yielding the same name are both loaded, the later one wins, and it is reported", async () => {
    const directory = location({
      "git.ts": `
import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"
export const status = Tool.make({ description: "from git.ts", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("") })
`,
      "git_status.ts": TOOL(),
    })
    const result = await Kernel.run(
      Effect.gen(function* () {
        const registry = yield* Registry.Service
        const loaded = yield* Discovery.load(directory, registry.tools)
        return { ...loaded, definitions: registry.capture().definitions }
      }),
    )
    expect(result.definitions.map((definition) => [definition.name, definition.description])).toEqual([["git_status", "echo"]])
    expect(result.diagnostics).toEqual([
      { file: join(directory, "tools", "git_status.ts"), message: "defines git_status, which git.ts also defines; this file's wins" },
    ])
  })

  test("a directory without tools/ loads nothing and reports nothing", async () => {
    const result = await Kernel.run(load(tempDir()))
    expect(result).toMatchObject({ names: [], diagnostics: [], loaded: [] })
  })

  test("recordOf keeps only values made by Tool.make", () => {
    const tool = Tool.make({ description: "d", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("") })
    expect(Object.keys(Discovery.recordOf("/x/tools/box.ts", { default: tool, extra: tool, other: {}, n: 1 }))).toEqual(["box", "box_extra"])
  })
})
