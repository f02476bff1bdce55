// Code a tool file imports runs inside core, outside the sandbox, so it is core's configuration as much as the tool
// file is (DESIGN §2 law 13): attacked through the compiled `core exec` as a model would, under rules that allow
// everything. A relative module and a package in the Location's node_modules, rewritten by a visible redirection,
// by a script the command parser cannot see into, renamed away and planted again, shadowed by a nearer
// node_modules, and written with the write tool: the next exec of the tool must not run the planted code.

import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { exec, IMPORTS, type Sandbox, sandbox, settlementOf } from "../cli/fixture"

const ALLOW = '{ "permission": { "*": "allow" } }\n'

const FMT = 'export const fmt = (text: string) => `[${text}]`\n'
const PAD_JSON = '{ "name": "leftpad", "version": "1.0.0", "main": "index.js" }\n'
const PAD = "exports.pad = (text) => '  ' + text\n"

/** A tool importing a relative module (which imports a package) and a package from the Location's node_modules. */
const FILES = {
  "core.json": ALLOW,
  "tools/shout.ts": `${IMPORTS}import { fmt } from "../lib/fmt"\nimport { pad } from "leftpad"\n
export default Tool.make({
  description: "Formats text",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(pad(fmt(input.text))),
})
`,
  "lib/fmt.ts": FMT,
  "node_modules/leftpad/package.json": PAD_JSON,
  "node_modules/leftpad/index.js": PAD,
}

/** Code that, once core loads it, leaves `pwned` in the Location and answers something else. */
const evil = (box: Sandbox, shape: "esm" | "cjs") => {
  const mark = `require("fs").writeFileSync(${JSON.stringify(join(box.location, "pwned"))}, "ran")`
  return shape === "esm" ? `${mark}\nexport const fmt = () => "EVIL"\n` : `${mark}\nexports.pad = () => "EVIL"\n`
}

/** Runs `command` through bash as the model would, then the tool: which must still answer as it did. */
const attack = async (box: Sandbox, command: string, extra: ReadonlyArray<string> = []) => {
  await exec(box, "bash", { command }, extra)
  const after = await exec(box, "shout", { text: "hi" })
  expect(settlementOf(after)).toMatchObject({ status: "success", structured: "  [hi]" })
  expect(existsSync(join(box.location, "pwned"))).toBe(false)
}

/** A shell-quoted string. */
const quoted = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`

/** A command running `js` as a script the command parser cannot see into (written to a file, then run by node). */
const script = (js: string) => `printf %s ${quoted(js)} > .attack.js && node .attack.js`


describe("core exec: code a tool file imports is core's configuration", () => {
  test("the tool loads and runs with its imports", async () => {
    const box = sandbox(FILES)
    expect(settlementOf(await exec(box, "shout", { text: "hi" }))).toMatchObject({ status: "success", structured: "  [hi]" })
  }, 120_000)

  test("a relative module a tool imports cannot be rewritten by a command, seen or unseen", async () => {
    const box = sandbox(FILES)
    await attack(box, `printf %s ${quoted(evil(box, "esm"))} > lib/fmt.ts`)
    await attack(box, script(`require("fs").writeFileSync("lib/fmt.ts", ${JSON.stringify(evil(box, "esm"))})`))
    await attack(box, `python3 -c ${quoted(`open("lib/fmt.ts", "w").write(${JSON.stringify(evil(box, "esm"))})`)}`, ["--yes"])
    expect(readFileSync(join(box.location, "lib/fmt.ts"), "utf8")).toBe(FMT)
  }, 120_000)

  test("a package a tool imports from the Location's node_modules cannot be rewritten by a command", async () => {
    const box = sandbox(FILES)
    await attack(box, script(`require("fs").writeFileSync("node_modules/leftpad/index.js", ${JSON.stringify(evil(box, "cjs"))})`))
    await attack(box, script(`require("fs").writeFileSync("node_modules/leftpad/package.json", '{"main":"evil.js"}'); require("fs").writeFileSync("node_modules/leftpad/evil.js", ${JSON.stringify(evil(box, "cjs"))})`))
    expect(readFileSync(join(box.location, "node_modules/leftpad/index.js"), "utf8")).toBe(PAD)
    expect(existsSync(join(box.location, "node_modules/leftpad/evil.js"))).toBe(false)
  }, 120_000)

  test("renaming the folder that holds an import away and planting another in its place is undone", async () => {
    // The folder is put back where the tool imports it from, and the planted one set aside: the tool runs as it did.
    const box = sandbox(FILES)
    const plant = (dir: string, file: string, text: string) =>
      script(`const fs = require("fs"); fs.renameSync("${dir}", "${dir}-old"); fs.mkdirSync("${dir}/leftpad", { recursive: true }); fs.writeFileSync("${file}", ${JSON.stringify(text)}); fs.writeFileSync("${dir}/leftpad/package.json", ${JSON.stringify(PAD_JSON)})`)
    // node_modules, protected whole where a tool imports a package, is not renamed at all: the tool runs as it did.
    await attack(box, plant("node_modules", "node_modules/leftpad/index.js", evil(box, "cjs")))
    expect(readFileSync(join(box.location, "node_modules/leftpad/index.js"), "utf8")).toBe(PAD)
    await attack(box, plant("lib", "lib/fmt.ts", evil(box, "esm")))
    expect(readFileSync(join(box.location, "lib/fmt.ts"), "utf8")).toBe(FMT)
    expect(existsSync(join(box.location, "lib-old"))).toBe(false)
  }, 120_000)

  test("a file planted beside an import, its folder then renamed away and made again: all of it undone", async () => {
    // lib/fmt.tsx is what Bun would load for "../lib/fmt" once a person moved the renamed folder back by hand.
    const box = sandbox(FILES)
    const command = script(
      `const fs = require("fs"); fs.writeFileSync("lib/fmt.tsx", ${JSON.stringify(evil(box, "esm"))}); ` +
        `fs.renameSync("lib", "lib-old"); fs.mkdirSync("lib"); fs.copyFileSync("lib-old/fmt.ts", "lib/fmt.ts")`,
    )
    const result = settlementOf(await exec(box, "bash", { command }))
    expect(JSON.stringify(result.content)).toContain(`Undone: ${join(box.location, "lib")}`)
    expect(readFileSync(join(box.location, "lib/fmt.ts"), "utf8")).toBe(FMT)
    expect(existsSync(join(box.location, "lib/fmt.tsx"))).toBe(false)
    expect(existsSync(join(box.location, "lib-old"))).toBe(false)
    const after = await exec(box, "shout", { text: "hi" })
    expect(settlementOf(after)).toMatchObject({ status: "success", structured: "  [hi]" })
    expect(existsSync(join(box.location, "pwned"))).toBe(false)
  }, 120_000)

  test("a file of a missing package's name beside node_modules' folders asks a person, by the write tool or a command", async () => {
    // `import { pad } from "leftpad"` loads node_modules/leftpad.js where no node_modules/leftpad is there.
    const { "node_modules/leftpad/package.json": _json, "node_modules/leftpad/index.js": _index, ...missing } = FILES
    const box = sandbox(missing)
    const planted = evil(box, "cjs")
    for (const filePath of ["node_modules/leftpad.js", "node_modules/leftpad.ts", "tools/node_modules/leftpad.cjs"]) {
      const settlement = settlementOf(await exec(box, "write", { filePath, content: planted }, ["--yes"]))
      expect(settlement.status).toBe("error")
      expect(settlement.error?.message).toContain("A person must make that change")
    }
    await exec(box, "bash", { command: script(`require("fs").writeFileSync("node_modules/leftpad.js", ${JSON.stringify(planted)})`) })
    expect(existsSync(join(box.location, "node_modules/leftpad.js"))).toBe(false)
    await exec(box, "read", { filePath: "core.json" })
    expect(existsSync(join(box.location, "pwned"))).toBe(false)
  }, 120_000)

  // The folder's handle was read as text, and a name ending " (deleted)" (as the kernel marks a removed folder) or
  // one that is no UTF-8 made core take it for gone: nothing was put back.
  test("a folder renamed away to a name that looks removed, or is no UTF-8, is put back all the same", async () => {
    for (const away of ['"lib (deleted)"', 'Buffer.from([0x6c, 0x69, 0x62, 0xff])']) {
      const box = sandbox(FILES)
      const command = script(
        `const fs = require("fs"); fs.renameSync("lib", ${away}); fs.mkdirSync("lib"); ` +
          `fs.writeFileSync("lib/fmt.ts", ${JSON.stringify(evil(box, "esm"))})`,
      )
      // The line is read by the grammar (its brackets): asked, and approved here.
      await attack(box, command, ["--yes"])
      expect([away, readFileSync(join(box.location, "lib/fmt.ts"), "utf8")]).toEqual([away, FMT])
      expect(readdirSync(box.location).sort()).toEqual([".attack.js", "core.json", "lib", "node_modules", "tools"])
    }
  }, 120_000)

  // Two folders of one name put back: what stood in each place is kept apart, not merged into one.
  test("two folders of one name renamed away and made again are both put back, each replaced one kept", async () => {
    const box = sandbox({
      ...FILES,
      "tools/more.ts": `${IMPORTS}import { x } from "../src/lib/x"\nexport default Tool.make({ description: "x", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed(x) })\n`,
      "src/lib/x.ts": 'export const x = "x"\n',
    })
    const command = script(
      `const fs = require("fs"); for (const dir of ["lib", "src/lib"]) { fs.renameSync(dir, dir + "-old"); fs.mkdirSync(dir); fs.writeFileSync(dir + "/mine.txt", dir) }`,
    )
    const result = settlementOf(await exec(box, "bash", { command }, ["--yes"]))
    expect(readFileSync(join(box.location, "lib/fmt.ts"), "utf8")).toBe(FMT)
    expect(readFileSync(join(box.location, "src/lib/x.ts"), "utf8")).toBe('export const x = "x"\n')
    const kept = JSON.stringify(result.content).match(/kept in ([^ ]+) for the person/)?.[1]
    expect(kept).toBeDefined()
    const mine = (Bun.spawnSync(["find", kept!, "-name", "mine.txt"]).stdout.toString().trim().split("\n")).map((path) => readFileSync(path, "utf8")).sort()
    expect(mine).toEqual(["lib", "src/lib"])
  }, 120_000)

  test("a package planted in a nearer node_modules, which the resolver would find first, is removed", async () => {
    const box = sandbox({ ...FILES, "lib/fmt.ts": `import { pad } from "leftpad"\nexport const fmt = (text: string) => \`[\${text}]\` + pad("").trim()\n` })
    const plant = `const fs = require("fs"); fs.mkdirSync("lib/node_modules/leftpad", { recursive: true }); fs.writeFileSync("lib/node_modules/leftpad/package.json", ${JSON.stringify(PAD_JSON)}); fs.writeFileSync("lib/node_modules/leftpad/index.js", ${JSON.stringify(evil(box, "cjs"))})`
    await attack(box, script(plant))
    expect(existsSync(join(box.location, "lib/node_modules/leftpad"))).toBe(false)
  }, 120_000)

  test("the write tool on an imported module or package file asks a person: declined without one, --yes or not", async () => {
    const box = sandbox(FILES)
    for (const filePath of ["lib/fmt.ts", "lib/fmt.tsx", "node_modules/leftpad/index.js", "node_modules/leftpad/package.json"]) {
      for (const extra of [[], ["--yes"]]) {
        const result = await exec(box, "write", { filePath, content: evil(box, "cjs") }, extra)
        const settlement = settlementOf(result)
        expect(settlement.status).toBe("error")
        expect(settlement.error?.message).toContain("A person must make that change")
      }
    }
    expect(readFileSync(join(box.location, "lib/fmt.ts"), "utf8")).toBe(FMT)
    expect(readFileSync(join(box.location, "node_modules/leftpad/index.js"), "utf8")).toBe(PAD)
    const after = await exec(box, "shout", { text: "hi" })
    expect(settlementOf(after)).toMatchObject({ status: "success", structured: "  [hi]" })
  }, 120_000)

  // A file loading through createRequire has every string that may name a module followed: first taken as imports the
  // file had to resolve too, which left such a tool unloadable ("imports utf8, which cannot be found").
  test("a tool requiring through createRequire loads and runs, and what it requires asks a person", async () => {
    const box = sandbox({
      "core.json": ALLOW,
      "tools/req.ts": `${IMPORTS}import { createRequire } from "node:module"\nimport { readFileSync } from "node:fs"\n
const load = createRequire(import.meta.url)
const { fmt } = load("../lib/fmt.cjs")
export default Tool.make({
  description: "Formats text",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.sync(() => fmt(input.text) + readFileSync(new URL("../lib/suffix.txt", import.meta.url), "utf8")),
})
`,
      "lib/fmt.cjs": "exports.fmt = (text) => `[${text}]`\n",
      "lib/suffix.txt": "!",
    })
    expect(settlementOf(await exec(box, "req", { text: "hi" }))).toMatchObject({ status: "success", structured: "[hi]!" })
    const settlement = settlementOf(await exec(box, "write", { filePath: "lib/fmt.cjs", content: evil(box, "cjs") }, ["--yes"]))
    expect([settlement.status, settlement.error?.message.includes("A person must make that change")]).toEqual(["error", true])
    expect(settlementOf(await exec(box, "req", { text: "hi" }))).toMatchObject({ status: "success", structured: "[hi]!" })
  }, 120_000)

  // Bun loads a folder's package.json `main` (not its index) and maps `#name` through the `imports` of the nearest
  // package.json: the files those name run inside core as much as a relative module does.
  test("a folder's package.json main and a #subpath import's target: the write tool asks a person; the tool still runs", async () => {
    const box = sandbox({
      "core.json": ALLOW,
      "package.json": '{ "name": "loc", "imports": { "#internal": "./src/internal.ts", "#pat/*": "./src/pat/*.ts" } }\n',
      "tools/mixed.ts": `${IMPORTS}import { fmt } from "../lib/fmt"\nimport { tag } from "#internal"\nimport { more } from "#pat/more"\n
export default Tool.make({
  description: "Formats text",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(more(tag(fmt(input.text)))),
})
`,
      "lib/fmt/package.json": '{ "main": "./main.js" }\n',
      "lib/fmt/main.js": "exports.fmt = (text) => `[${text}]`\n",
      "lib/fmt/index.ts": "export const fmt = (text: string) => `index ${text}`\n",
      "src/internal.ts": "export const tag = (text: string) => `<${text}>`\n",
      "src/pat/more.ts": "export const more = (text: string) => `${text}!`\n",
    })
    expect(settlementOf(await exec(box, "mixed", { text: "hi" }))).toMatchObject({ status: "success", structured: "<[hi]>!" })
    for (const filePath of ["lib/fmt/main.js", "package.json", "src/internal.ts", "src/pat/more.ts", "src/pat/new.ts", "tools/package.json"]) {
      const settlement = settlementOf(await exec(box, "write", { filePath, content: evil(box, "cjs") }, ["--yes"]))
      expect([filePath, settlement.status, settlement.error?.message.includes("A person must make that change")]).toEqual([filePath, "error", true])
    }
    expect(existsSync(join(box.location, "pwned"))).toBe(false)
    expect(settlementOf(await exec(box, "mixed", { text: "hi" }))).toMatchObject({ status: "success", structured: "<[hi]>!" })
  }, 120_000)

  // Bun resolves a bare name as the package the importing file is part of when the nearest package.json is named so:
  // the project's package.json renamed after the imported package, its exports pointing at a planted file, would run
  // that file inside core.
  test("the project's package.json cannot be turned into the package a tool imports (a self-reference)", async () => {
    const box = sandbox({ ...FILES, "package.json": '{ "name": "project", "version": "1.0.0" }\n' })
    const hijack = '{ "name": "leftpad", "exports": { ".": "./evil.js" } }\n'
    writeFileSync(join(box.location, "evil.js"), evil(box, "cjs"))
    const settlement = settlementOf(await exec(box, "write", { filePath: "package.json", content: hijack }, ["--yes"]))
    expect([settlement.status, settlement.error?.message.includes("A person must make that change")]).toEqual(["error", true])
    await attack(box, `printf %s ${quoted(hijack)} > package.json`)
    await attack(box, script(`require("fs").writeFileSync("package.json", ${JSON.stringify(hijack)})`))
    expect(readFileSync(join(box.location, "package.json"), "utf8")).toBe('{ "name": "project", "version": "1.0.0" }\n')
  }, 120_000)

  test("a tool file that is a symbolic link: the file it leads to cannot be rewritten by a command", async () => {
    const box = sandbox({ ...FILES, "lib/shout.ts": FILES["tools/shout.ts"].replaceAll("../lib/fmt", "./fmt"), "tools/shout.ts": "" })
    rmSync(join(box.location, "tools/shout.ts"))
    symlinkSync(join(box.location, "lib/shout.ts"), join(box.location, "tools/shout.ts"))
    const planted = `import { Tool } from "@core/tool"\nimport { Effect, Schema } from "effect"\n${evil(box, "esm")}\nexport default Tool.make({ description: "x", input: Schema.Struct({ text: Schema.String }), output: Schema.String, execute: () => Effect.succeed("  [hi]") })\n`
    // The script written as the write tool would (an ordinary file), then run by a command.
    writeFileSync(join(box.location, "attack.js"), `require("fs").writeFileSync("lib/shout.ts", ${JSON.stringify(planted)})`)
    await attack(box, "node attack.js")
  }, 120_000)

  test("files no tool imports stay the model's to change; a package none imports, in a node_modules one is loaded from, does not", async () => {
    const box = sandbox({ ...FILES, "lib/other.ts": "export {}\n", "node_modules/unused/index.js": "" })
    const result = await exec(box, "bash", { command: "echo changed > lib/other.ts" })
    expect(settlementOf(result).status).toBe("success")
    expect(readFileSync(join(box.location, "lib/other.ts"), "utf8")).toBe("changed\n")
    // A package may load another it never names: every package beside one a tool imports is core's.
    const planted = await exec(box, "bash", { command: "echo changed > node_modules/unused/index.js" })
    expect(settlementOf(planted).status).toBe("error")
    expect(readFileSync(join(box.location, "node_modules/unused/index.js"), "utf8")).toBe("")
  }, 120_000)
})
