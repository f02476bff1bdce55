// Discovery of tool files end to end (DESIGN §4): naming from files and exports, a diagnostic per file that
// cannot load (while the rest still load and run), application tools from $CORE_HOME and Location precedence.

import { beforeAll, describe, expect, test } from "bun:test"
import { join } from "node:path"
import type { Run } from "../support/binary"
import { core, exec, IMPORTS, own, sandbox, settlementOf, type Sandbox } from "./fixture"

const says = (text: string) => `Tool.make({
  description: ${JSON.stringify(`Says ${text}`)},
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed(${JSON.stringify(text)}),
})`

/** The names the test's own tool files contributed (built-ins left out). */
const namesOf = (result: Run) => own((JSON.parse(result.stdout) as Array<{ name: string }>).map((definition) => definition.name))

/** The stderr line that names `file`, or a failure listing all of stderr. */
const diagnosticFor = (stderr: string, file: string): string => {
  const line = stderr.split("\n").find((candidate) => candidate.includes(file))
  if (line === undefined) throw new Error(`no diagnostic names ${file}; stderr was:\n${stderr}`)
  return line
}

describe("naming", () => {
  test("the default export is named after the file, other exported tools <base>_<export>, other exports ignored", async () => {
    const box = sandbox({
      "tools/git.ts": `${IMPORTS}
export default ${says("git")}
export const status = ${says("status")}
export const log = ${says("log")}
export const VERSION = "2.4"
export const format = (text: string) => text.trim()
export const Input = Schema.Struct({ text: Schema.String })
export const lookalike = { description: "Looks like a tool", input: Input, output: Schema.String, execute: () => Effect.succeed("x") }
`,
    })
    const listed = await core(box, ["tools", "--json", "--location", box.location])
    expect(listed.code).toBe(0)
    expect(listed.stderr).toBe("")
    expect(namesOf(listed)).toEqual(["git", "git_log", "git_status"])

    const result = await exec(box, "git_status", {})
    expect(result.code).toBe(0)
    expect(settlementOf(result).structured).toBe("status")
  })

  test("a file name of 64 characters is a valid tool name", async () => {
    const name = `t${"o".repeat(62)}l`
    const box = sandbox({ [`tools/${name}.ts`]: `${IMPORTS}export default ${says("long")}\n` })
    const listed = await core(box, ["tools", "--json", "--location", box.location])
    expect(listed.stderr).toBe("")
    expect(namesOf(listed)).toEqual([name])
  })

  test("tool files may import effect sub-paths, node built-ins and relative modules without a node_modules", async () => {
    const box = sandbox({
      "tools/lib/shout.ts": `import * as Str from "effect/String"\nexport const shout = (text: string) => Str.toUpperCase(text) + "!"\n`,
      "tools/shout.ts": `import { Tool } from "@core/tool"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { basename } from "node:path"
import { shout } from "./lib/shout.ts"
export default Tool.make({
  description: "Shout the text back",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) =>
    input.text === ""
      ? Effect.fail(new Tool.Failure({ message: "Nothing to shout in " + basename(import.meta.path) }))
      : Effect.succeed(shout(input.text)),
})
`,
      "tools/shout.test.ts": `import { expect, test } from "bun:test"\ntest("never loaded by core", () => expect(1).toBe(1))\n`,
    })
    const listed = await core(box, ["tools", "--json", "--location", box.location])
    expect(listed.stderr).toBe("")
    expect(namesOf(listed)).toEqual(["shout"])

    const loud = await exec(box, "shout", { text: "hey" })
    expect(loud.code).toBe(0)
    expect(settlementOf(loud).structured).toBe("HEY!")
    const failed = await exec(box, "shout", { text: "" })
    expect(failed.code).toBe(1)
    expect(settlementOf(failed).error).toEqual({ kind: "failure", message: "Nothing to shout in shout.ts" })
  })

  // The binary reads package.json files at run time (build.ts, --compile-autoload-package-json) for this alone: without
  // it, a package with an exports map cannot be found from a tool file, though leaving it out starts core a
  // millisecond sooner.
  test("tool files may import packages from a node_modules beside them: an exports map, a CommonJS main, an imports map", async () => {
    const box = sandbox({
      "package.json": JSON.stringify({ name: "workspace", type: "module", imports: { "#suffix": "./suffix.ts" } }),
      "suffix.ts": `export const suffix = "?"\n`,
      "node_modules/esm-pkg/package.json": JSON.stringify({
        name: "esm-pkg",
        type: "module",
        exports: { ".": { import: "./dist/index.js", require: "./dist/missing.cjs" } },
      }),
      "node_modules/esm-pkg/dist/index.js": `export const shout = (text) => text.toUpperCase() + "!"\n`,
      "node_modules/cjs-pkg/package.json": JSON.stringify({ name: "cjs-pkg", main: "lib.js" }),
      "node_modules/cjs-pkg/lib.js": `module.exports = { twice: (text) => text + text }\n`,
      "tools/packaged.ts": `${IMPORTS}import { shout } from "esm-pkg"
import cjs from "cjs-pkg"
import { suffix } from "#suffix"
export default Tool.make({
  description: "Uses packages",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(shout(cjs.twice(input.text)) + suffix),
})
`,
    })
    const result = await exec(box, "packaged", { text: "hi" })
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" })
    expect(settlementOf(result).structured).toBe("HIHI!?")
  })
})

describe("files that cannot load", () => {
  const LONG = "a".repeat(65)
  let box: Sandbox
  let listed: Run
  let executed: Run

  beforeAll(async () => {
    box = sandbox({
      "tools/good.ts": `${IMPORTS}export default ${says("good")}\n`,
      "tools/syntax.ts": `${IMPORTS}export default Tool.make({ description: "unfinished",\n`,
      "tools/internal.ts": `${IMPORTS}import { secret } from "@core/internal"\nexport default secret\n`,
      "tools/missing.ts": `${IMPORTS}import pad from "left-pad-that-is-not-installed"\nexport default pad\n`,
      "tools/9lives.ts": `${IMPORTS}export default ${says("nine")}\n`,
      [`tools/${LONG}.ts`]: `${IMPORTS}export default ${says("long")}\n`,
      "tools/dollar.ts": `${IMPORTS}export default ${says("dollar")}\nexport const $cash = ${says("cash")}\n`,
      "tools/throws.ts": `${IMPORTS}throw new Error("refusing to load on a Tuesday")\n`,
      "tools/nothing.ts": `export const answer = 42\n`,
    })
    listed = await core(box, ["tools", "--json", "--location", box.location])
    executed = await exec(box, "good", {})
  })

  const file = (name: string) => join(box.location, "tools", name)

  test("the other tools still load and are listed, with diagnostics only on stderr", () => {
    expect(listed.code).toBe(0)
    expect(namesOf(listed)).toEqual(["good"])
    for (const line of listed.stderr.trimEnd().split("\n")) expect(line).toStartWith("core: warning: ")
  })

  test("exec still settles a call to a tool that loaded, and reports the diagnostics on stderr", () => {
    expect(executed.code).toBe(0)
    expect(settlementOf(executed).structured).toBe("good")
    expect(executed.stderr).toContain(file("syntax.ts"))
  })

  const cases: ReadonlyArray<{ readonly name: string; readonly file: () => string; readonly reason: ReadonlyArray<string> }> = [
    { name: "a syntax error", file: () => "syntax.ts", reason: ["syntax error"] },
    { name: 'an import of "@core/internal"', file: () => "internal.ts", reason: ['"@core/internal"', '"@core/tool"'] },
    { name: "an import that cannot be resolved", file: () => "missing.ts", reason: ['"left-pad-that-is-not-installed"', "cannot be found"] },
    { name: "a name that does not start with a letter", file: () => "9lives.ts", reason: ['"9lives"', "must start with a letter"] },
    { name: "a name over 64 characters", file: () => `${LONG}.ts`, reason: ["65 characters", "64"] },
    { name: "an export whose derived name is invalid", file: () => "dollar.ts", reason: ["dollar_$cash"] },
    // With the line it was thrown at: the message alone left the author to search the file.
    { name: "an error thrown at import", file: () => "throws.ts", reason: ["failed to load at line 3, column 11: refusing to load on a Tuesday"] },
    { name: "no exported tool", file: () => "nothing.ts", reason: ["exports no tool"] },
  ]
  for (const { name, file: fileName, reason } of cases) {
    test(`a file with ${name} is a diagnostic naming the file and the reason`, () => {
      const line = diagnosticFor(listed.stderr, file(fileName()))
      for (const text of reason) expect(line).toContain(text)
    })
  }

  test("a file that fails to register contributes none of its tools", () => {
    expect(namesOf(listed)).not.toContain("dollar")
  })
})

describe("exec of a tool whose file failed to load", () => {
  test("names the file and the reason, settles nothing, and runs the same call once the file is fixed", async () => {
    const box = sandbox({ "tools/broken.ts": `${IMPORTS}export default Tool.make({\n  description: "x",,\n})\n` })
    const file = join(box.location, "tools", "broken.ts")
    const refused = await exec(box, "broken", {}, ["--session", "ses_fix", "--call", "call_fix"])
    expect(refused.code).toBe(2)
    expect(refused.stdout).toBe("")
    expect(refused.stderr).toContain(`core exec: the tool "broken" did not load: ${file}: syntax error at line 4, column 20`)
    // The command was right: the tool's file is what to fix, not the usage.
    expect(refused.stderr).not.toContain("--help")
    expect(refused.stderr).toContain("Fix the file, then see whether it loads: core check")

    await Bun.write(file, `${IMPORTS}export default ${says("fixed")}\n`)
    const fixed = await exec(box, "broken", {}, ["--session", "ses_fix", "--call", "call_fix"])
    expect(fixed.code).toBe(0)
    expect(settlementOf(fixed).structured).toBe("fixed")
  })

  test("names a missing package and how to install it", async () => {
    const box = sandbox({ "tools/pad.ts": `${IMPORTS}import pad from "left-pad-not-here"\nexport default pad\n` })
    const refused = await exec(box, "pad", {})
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain(`the tool "pad" did not load: ${join(box.location, "tools", "pad.ts")}`)
    expect(refused.stderr).toContain("npm install left-pad-not-here")
  })
})

describe("application tools", () => {
  const home = {
    "tools/echo.ts": `${IMPORTS}export default ${says("application echo")}\n`,
    "tools/zeta.ts": `${IMPORTS}export default ${says("zeta")}\n`,
    "tools/broken.ts": `${IMPORTS}export default Tool.make(\n`,
  }

  test("tools in $CORE_HOME/tools are listed with the Location's, and their load problems are reported", async () => {
    const box = sandbox({ "tools/alpha.ts": `${IMPORTS}export default ${says("alpha")}\n` }, home)
    const listed = await core(box, ["tools", "--json", "--location", box.location])
    expect(listed.code).toBe(0)
    expect(namesOf(listed)).toEqual(["alpha", "echo", "zeta"])
    expect(diagnosticFor(listed.stderr, join(box.home, "tools", "broken.ts"))).toContain("syntax error")

    const zeta = await exec(box, "zeta", {})
    expect(zeta.code).toBe(0)
    expect(settlementOf(zeta).structured).toBe("zeta")
  })

  test("a Location tool takes precedence over the application tool of the same name", async () => {
    const box = sandbox({ "tools/echo.ts": `${IMPORTS}export default ${says("location echo")}\n` }, home)
    const listed = await core(box, ["tools", "--json", "--location", box.location])
    const definitions = JSON.parse(listed.stdout) as Array<{ name: string; description: string }>
    expect(definitions.filter((definition) => definition.name === "echo")).toEqual([
      expect.objectContaining({ name: "echo", description: "Says location echo" }),
    ])

    const echo = await exec(box, "echo", {})
    expect(echo.code).toBe(0)
    expect(settlementOf(echo).structured).toBe("location echo")
  })
})
