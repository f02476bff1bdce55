// The import closure of tool and plugin files (Closure) and the places the user's git runs code from (Git), on real
// temp directories: what each reaches, what it leaves out, and how a changed file is seen again. Protected.change
// answers for every place they name.

import { describe, expect, test } from "bun:test"
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Closure } from "../../src/permission/closure"
import { Git } from "../../src/permission/git"
import { Protected } from "../../src/permission/protected"
import { tempDir } from "../support/temp"

const files = (root: string, tree: Record<string, string>): string => {
  for (const [path, text] of Object.entries(tree)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

const reachedFrom = (root: string) => Closure.of(Closure.rootsOf(root)).reached.map((each) => each.path)

const rootsFor = (location: string) =>
  Protected.roots({ location, home: tempDir("core-home-"), dataDir: tempDir("core-data-"), readable: [] })

describe("Closure: the code tool and plugin files import", () => {
  test("follows relative modules, packages with their dependencies, and the nearer places a resolver looks first", () => {
    const root = files(tempDir("core-closure-"), {
      "tools/a.ts": 'import { b } from "../lib/b"\nimport "effect"\nimport "node:fs"\nimport { x } from "@scope/x/sub"\n',
      "plugins/p.ts": 'const m = await import("../shared/local.ts")\n',
      "shared/local.ts": "export {}\n",
      "lib/b.ts": 'import pad from "pad"\nexport const b = 1\n',
      "node_modules/@scope/x/package.json": '{ "name": "@scope/x", "dependencies": { "dep": "1" } }',
      "node_modules/dep/package.json": '{ "name": "dep" }',
      "node_modules/pad/package.json": '{ "name": "pad" }',
      "lib/unrelated.ts": "export {}\n",
      "tools/a.test.ts": 'import "../lib/unrelated"\n',
    })
    const reached = reachedFrom(root)
    expect(reached).toContain(join(root, "lib/b.ts"))
    expect(reached).toContain(join(root, "shared/local.ts"))
    expect(reached).toContain(join(root, "node_modules/@scope/x"))
    expect(reached).toContain(join(root, "node_modules/dep"))
    expect(reached).toContain(join(root, "node_modules/pad"))
    // Missing now, found first if planted: a nearer node_modules, another extension, the tsconfig mapping names.
    expect(reached).toContain(join(root, "lib/node_modules/pad"))
    expect(reached).toContain(join(root, "lib/b.tsx"))
    expect(reached).toContain(join(root, "lib/tsconfig.json"))
    expect(reached).toContain(join(root, "tsconfig.json"))
    // Served modules, built-ins, test files and what nothing imports are not reached.
    expect(reached.some((path) => path.includes("effect"))).toBe(false)
    expect(reached).not.toContain(join(root, "lib/unrelated.ts"))
    expect(reached).not.toContain(join(root, "tools/a.ts"))
  })

  // Bun and Node load `node_modules/leftpad.js` for a bare "leftpad" before a folder of that name: a model's write of
  // that file, beside a package not installed, ran its code inside core at the next tool load.
  test("a file of a package's name in each node_modules it is looked up in, missing or there, followed to its imports", () => {
    const root = files(tempDir("core-closure-"), {
      "tools/a.ts": 'import pad from "leftpad"\nimport other from "other"\nimport "@scope/x"\n',
      "node_modules/other.cjs": 'require("./helper.js")\n',
      "node_modules/helper.js": "module.exports = 1\n",
    })
    const reached = reachedFrom(root)
    for (const extension of [".js", ".ts", ".tsx", ".mjs", ".cjs", ".json"]) {
      expect(reached).toContain(join(root, `node_modules/leftpad${extension}`))
      expect(reached).toContain(join(root, `tools/node_modules/leftpad${extension}`))
      expect(reached).toContain(join(root, `node_modules/@scope/x${extension}`))
    }
    expect(reached).toContain(join(root, "node_modules/other.cjs"))
    expect(reached).toContain(join(root, "node_modules/helper.js"))
    // The nearest node_modules holding one decides: nothing further up is looked at for it.
    expect(reached).not.toContain(join(dirname(root), "node_modules/other.cjs"))
  })

  // debug loads supports-color, which its package.json names only under peerDependenciesMeta: a model that wrote
  // node_modules/supports-color/index.js ran its code inside core at the tool's next load.
  test("a package's every node_modules is protected whole: a package it loads without naming it, and one planted there", () => {
    const root = files(tempDir("core-closure-"), {
      "tools/a.ts": 'import createDebug from "debug"\n',
      "node_modules/debug/package.json": '{ "name": "debug", "peerDependenciesMeta": { "supports-color": { "optional": true } } }',
      "node_modules/debug/src/node.js": 'require("supports-color")\n',
      "node_modules/supports-color/index.js": "module.exports = {}\n",
      "node_modules/.pnpm/node_modules/hidden/index.js": "module.exports = {}\n",
    })
    const roots = rootsFor(root)
    for (const path of ["supports-color/index.js", "new-package/index.js", ".pnpm/node_modules/hidden/index.js", "debug/src/node.js"]) {
      expect([path, Protected.change(roots, join(root, "node_modules", path))]).toEqual([path, expect.stringContaining("code that tools/a.ts imports")])
    }
    // Where the resolver would look above the Location, missing now, too; files beside node_modules are not.
    expect(reachedFrom(root)).toContain(join(dirname(root), "node_modules"))
    expect(Protected.change(roots, join(root, "README.md"))).toBeUndefined()
  })

  test("a file: URL is followed as the path it names", () => {
    const root = tempDir("core-closure-")
    files(root, { "shared/evil.ts": "export {}\n", "tools/a.ts": `import "file://${join(root, "shared/evil.ts")}"\n` })
    expect(reachedFrom(root)).toContain(join(root, "shared/evil.ts"))
  })

  // Loads the transpiler's scan does not list: what they load was the model's to write, and ran inside core.
  test("a file requiring through createRequire or import.meta.require, or starting a Worker, has every module its strings name followed", () => {
    const root = tempDir("core-closure-")
    files(root, {
      "lib/a.js": "module.exports = 1\n",
      "lib/b.js": "module.exports = 2\n",
      "lib/w.ts": "postMessage(1)\n",
      "lib/resolved.js": "module.exports = 3\n",
      "lib/untouched.js": "module.exports = 4\n",
      "tools/req.ts":
        'import { createRequire } from "node:module"\nconst load = createRequire(import.meta.url)\nexport const a = load("../lib/a.js")\n' +
        'export const b = import.meta.require("../lib/b.js")\n',
      "tools/work.ts": 'export const w = new Worker(new URL("../lib/w.ts", import.meta.url))\nexport const r = require.resolve("../lib/resolved.js")\n',
      "tools/plain.ts": 'export const text = "../lib/untouched.js"\n',
    })
    const reached = reachedFrom(root)
    for (const name of ["a.js", "b.js", "w.ts", "resolved.js"]) expect([name, reached.includes(join(root, "lib", name))]).toEqual([name, true])
    // A file making no such load names modules only by its imports.
    expect(reached).not.toContain(join(root, "lib/untouched.js"))
  })

  // Each of these loads a file inside core, and a model that changed the file ran its code there at the next load:
  // requires the scan does not list, Workers under other names, native libraries, a program run on a file.
  test("a file making any other load (module.require, an aliased require, worker_threads, dlopen, spawn) has its strings followed", () => {
    const root = tempDir("core-closure-")
    const loads: Record<string, string> = {
      "m1.cjs": 'export const m = module.require("../lib/m1.cjs")\n',
      "m2.cjs": 'export const m = (0, require)("../lib/m2.cjs")\n',
      "m3.cjs": 'export const m = require.call(null, "../lib/m3.cjs")\n',
      "m5.cjs": 'const req = require\nexport const m = req("../lib/m5.cjs")\n',
      "w1.ts": 'import * as threads from "node:worker_threads"\nexport const w = new threads.Worker(new URL("../lib/w1.ts", import.meta.url))\n',
      "w2.ts": 'import { Worker as Thread } from "node:worker_threads"\nexport const w = new Thread(new URL("../lib/w2.ts", import.meta.url))\n',
      "libx.so": 'import { dlopen } from "bun:ffi"\nexport const lib = dlopen(new URL("../lib/libx.so", import.meta.url).pathname, {})\n',
      "libp.node": 'export const lib = process.dlopen({ exports: {} }, new URL("../lib/libp.node", import.meta.url).pathname)\n',
      "run.ts": 'export const run = Bun.spawn(["bun", "../lib/run.ts"])\n',
    }
    files(root, {
      ...Object.fromEntries(Object.keys(loads).map((name) => [`lib/${name}`, "module.exports = 1\n"])),
      ...Object.fromEntries(Object.entries(loads).map(([name, text], index) => [`tools/t${index}.ts`, text])),
    })
    const reached = reachedFrom(root)
    for (const name of Object.keys(loads)) expect([name, reached.includes(join(root, "lib", name))]).toEqual([name, true])
  })

  // Paths a module puts together from its own folder, and loads the word list missed: each ran a model's file in core.
  test("a module making a load of its own has its folder protected whole, and each file name in it taken as its folder's", () => {
    const root = tempDir("core-closure-")
    files(root, {
      "tools/t.ts": 'import "../lib/a.ts"\nimport "../lib/b.ts"\nimport "../helper.ts"\n',
      "lib/a.ts":
        'import { join } from "node:path"\n' +
        'try { await import(import.meta.dir + "/pa1.ts") } catch {}\n' +
        'try { await import(join(import.meta.dir, "sub", "pa2.ts")) } catch {}\n' +
        'try { await import(new URL("pa3.ts", import.meta.url).href) } catch {}\n' +
        "try { await import(`${import.meta.dir}/pa4.ts`) } catch {}\n",
      "lib/b.ts":
        'import { createRequire } from "node:module"\nimport { $ } from "bun"\n' +
        'try { createRequire(__filename)("./pb1.js") } catch {}\n' +
        'try { await import(__dirname + "/pb3.ts") } catch {}\n' +
        "try { await $`sh ./pb4.sh`.cwd(__dirname) } catch {}\n" +
        'try { await import(import .meta.dir + "/pb6.ts") } catch {}\n',
      // A module in the Location's own folder: not the whole Location, but the files its text names.
      "helper.ts": 'export const h = () => import(import.meta.dir + "/plugin-x.ts")\n',
      "README.md": "# app\n",
    })
    const roots = rootsFor(root)
    for (const path of ["lib/pa1.ts", "lib/sub/pa2.ts", "lib/pa3.ts", "lib/pa4.ts", "lib/pb1.js", "lib/pb3.ts", "lib/pb4.sh", "lib/pb6.ts", "lib/anything.txt", "plugin-x.ts"]) {
      expect([path, Protected.change(roots, join(root, path))]).toEqual([path, expect.stringContaining("code that tools/t.ts imports")])
    }
    expect(Protected.change(roots, join(root, "README.md"))).toBeUndefined()
    expect(Protected.change(roots, join(root, "src/app.ts"))).toBeUndefined()
  })

  // core serves `effect`, the modules it lists and `@core/tool` from its own copies; any other `effect/…` or
  // `@core/…` loads from the Location's node_modules, and a model that appended to node_modules/effect/dist/cli
  // ran its code in core at the next call of any tool.
  test("effect/ and @core/ specifiers core does not serve are packages like any other: their node_modules are protected", () => {
    const root = files(tempDir("core-closure-"), {
      "tools/a.ts": 'import { count } from "../lib/cli"\nimport * as Effect from "effect/Effect"\n',
      "lib/cli.ts": 'import * as Cli from "effect/cli"\nimport * as Util from "@core/util"\nexport const count = () => Object.keys(Cli).length + Object.keys(Util).length\n',
      "node_modules/effect/package.json": '{ "name": "effect" }',
      "node_modules/effect/dist/cli/index.js": "module.exports = {}\n",
      "node_modules/@core/util/package.json": '{ "name": "@core/util" }',
      "node_modules/@core/util/index.js": "module.exports = {}\n",
    })
    const roots = rootsFor(root)
    for (const path of ["effect/dist/cli/index.js", "@core/util/index.js"]) {
      expect([path, Protected.change(roots, join(root, "node_modules", path))]).toEqual([path, expect.stringContaining("code that tools/a.ts imports")])
    }
    // What core serves reaches no file: a Location importing only those protects no node_modules.
    const served = files(tempDir("core-closure-"), {
      "tools/a.ts": 'import { Effect } from "effect"\nimport * as Schema from "effect/Schema"\nimport { Tool } from "@core/tool"\n',
      "node_modules/effect/dist/index.js": "module.exports = {}\n",
    })
    expect(Protected.change(rootsFor(served), join(served, "node_modules/effect/dist/index.js"))).toBeUndefined()
  })

  test("follows a folder's package.json to the files it names, and a #subpath import through the nearest imports map", () => {
    const root = files(tempDir("core-closure-"), {
      "package.json": '{ "imports": { "#internal": "./src/internal.ts", "#pat/*": "./src/pat/*.js", "#dep": "pad", "#cond": { "bun": "./src/bun.ts", "default": "./src/other.ts" } } }',
      "tools/a.ts": 'import "../lib/fmt"\nimport "../lib/ex"\nimport "#internal"\n',
      "lib/fmt/package.json": '{ "main": "main.js" }',
      "lib/fmt/main.js": 'require("./helper.js")\n',
      "lib/fmt/helper.js": "",
      "lib/ex/package.json": '{ "exports": { ".": { "import": "./esm/index.js", "default": "./cjs/index.js" } } }',
      "lib/ex/esm/index.js": "",
      "src/internal.ts": "export {}\n",
      "node_modules/pad/package.json": '{ "name": "pad" }',
    })
    const reached = reachedFrom(root)
    for (const path of ["lib/fmt/main.js", "lib/fmt/helper.js", "lib/ex/esm/index.js", "lib/ex/cjs/index.js", "src/internal.ts", "src/pat", "src/bun.ts", "src/other.ts", "node_modules/pad", "tools/package.json", "package.json"]) {
      expect([path, reached.includes(join(root, path))]).toEqual([path, true])
    }
  })

  // Bun resolves a bare name as the package the importing file is part of first, when the nearest package.json is
  // named so: a model that renames the project's package.json after an imported package (its exports pointing at a
  // file of its own) would have that file run inside core on the next load.
  test("a bare import reaches the nearest package.json (and each nearer place), and where it is named so, the files it exports", () => {
    const root = files(tempDir("core-closure-"), {
      "package.json": '{ "name": "slugify", "exports": { ".": { "bun": "./evil.js", "default": "./other.js" } }, "main": "main.js" }',
      "tools/a.ts": 'import slugify from "slugify"\nimport "effect"\n',
      "node_modules/slugify/package.json": '{ "name": "slugify" }',
      "evil.js": "",
    })
    const reached = reachedFrom(root)
    for (const path of ["package.json", "tools/package.json", "evil.js", "other.js", "main.js", "node_modules/slugify"]) {
      expect([path, reached.includes(join(root, path))]).toEqual([path, true])
    }
    // Named otherwise, the package.json is still reached (a rename would decide), but what it names is not followed.
    writeFileSync(join(root, "package.json"), '{ "name": "project", "exports": "./evil.js" }')
    const other = reachedFrom(root)
    expect(other).toContain(join(root, "package.json"))
    expect(other).not.toContain(join(root, "evil.js"))
    // A tool importing only served modules (effect, @core/tool, node:*) leaves the project's package.json alone.
    const served = files(tempDir("core-closure-"), { "package.json": '{ "name": "effect" }', "tools/a.ts": 'import "effect"\nimport "@core/tool"\nimport "node:fs"\n' })
    expect(reachedFrom(served)).not.toContain(join(served, "package.json"))
  })

  test("a package reached through a symbolic link is protected where it really is too", () => {
    const root = files(tempDir("core-closure-"), {
      "tools/a.ts": 'import "linked"\n',
      "store/linked@1/package.json": '{ "name": "linked" }',
    })
    mkdirSync(join(root, "node_modules"))
    symlinkSync(join(root, "store/linked@1"), join(root, "node_modules/linked"))
    const reached = reachedFrom(root)
    expect(reached).toContain(join(root, "node_modules/linked"))
    expect(reached).toContain(join(root, "store/linked@1"))
  })

  test("a tool file that is a symbolic link protects the file it leads to, and what that imports", () => {
    const root = files(tempDir("core-closure-"), { "lib/real.ts": 'import "./helper"\n', "lib/helper.ts": "" })
    mkdirSync(join(root, "tools"))
    symlinkSync(join(root, "lib/real.ts"), join(root, "tools/linked.ts"))
    const reached = reachedFrom(root)
    expect(reached).toContain(join(root, "lib/real.ts"))
    expect(reached).toContain(join(root, "lib/helper.ts"))
  })

  test("a file changed since it was scanned is scanned again; one with a syntax error has what its strings name followed", () => {
    const root = files(tempDir("core-closure-"), { "tools/a.ts": 'import "../lib/one"\n', "lib/one.ts": "", "lib/two.ts": "" })
    expect(reachedFrom(root)).toContain(join(root, "lib/one.ts"))
    writeFileSync(join(root, "tools/a.ts"), 'import "../lib/two.ts"\n// longer than before\n')
    expect(reachedFrom(root)).toContain(join(root, "lib/two.ts"))
    expect(reachedFrom(root)).not.toContain(join(root, "lib/one.ts"))
    writeFileSync(join(root, "tools/a.ts"), 'import "../lib/one.ts"\nexport const = \n')
    expect(reachedFrom(root)).toContain(join(root, "lib/one.ts"))
    expect(reachedFrom(root)).not.toContain(join(root, "lib/two.ts"))
    writeFileSync(join(root, "tools/a.ts"), "export const = \n")
    expect(reachedFrom(root)).toEqual([])
  })

  // The transpiler's scan refuses what Bun runs: a class's `accessor`, JSX in a .js file. A module a tool imports
  // holding either was taken to import nothing, and what it imports went unprotected (a command rewrote it unasked).
  test("a module the transpiler's scan refuses, which Bun runs, has its imports followed", () => {
    const root = files(tempDir("core-closure-"), {
      "tools/a.ts": 'import { box } from "../lib/box.ts"\nimport { tag } from "../lib/tag.js"\nconsole.log(box(), tag())\n',
      "lib/box.ts": 'import { label } from "./label.ts"\nclass Box { accessor label = label }\nexport const box = () => new Box().label\n',
      "lib/label.ts": 'export const label = "boxed"\n',
      "lib/tag.js": '/** @jsxRuntime classic */\n/** @jsx h */\nimport { h } from "./h.js"\nexport const tag = () => <b>tagged</b>\n',
      "lib/h.js": "export const h = (name, props, ...children) => `<${name}>${children.join('')}</${name}>`\n",
    })
    const run = Bun.spawnSync([process.execPath, join(root, "tools/a.ts")], { stderr: "pipe" })
    expect(run.stdout.toString()).toBe("boxed <b>tagged</b>\n")
    const reached = reachedFrom(root)
    expect(reached).toContain(join(root, "lib/label.ts"))
    expect(reached).toContain(join(root, "lib/h.js"))
  })

  // The transpiler's fuller scan, which reads such a module, runs the macros it imports: a file a command made where
  // a tool's import was missing had its macro run by core, outside the sandbox, when another call's check read the
  // closure meanwhile. The closure reads its strings instead, escapes as JavaScript reads them.
  test("a module the transpiler's scan refuses has its imports followed without running any of its code", () => {
    const root = tempDir("core-closure-")
    const marker = join(root, "macro-ran")
    files(root, {
      "tools/a.ts": 'import { box } from "../lib/box.ts"\nconsole.log(box())\n',
      "lib/box.ts":
        // The transpiler resolves a macro's relative path from the working directory: a model would name its own.
        `import { stamp } from ${JSON.stringify(join(root, "lib/m.ts"))} with { type: "macro" }\n` +
        'import { label } from "./\\u006cabel.ts"\n' +
        "class Box { accessor label = label }\nexport const box = () => `${new Box().label} ${stamp()}`\n",
      "lib/m.ts": `import { writeFileSync } from "node:fs"\nexport const stamp = () => { writeFileSync(${JSON.stringify(marker)}, "ran"); return 1 }\n`,
      "lib/label.ts": 'export const label = "boxed"\n',
    })
    const reached = reachedFrom(root)
    expect(existsSync(marker)).toBe(false)
    expect(reached).toContain(join(root, "lib/m.ts"))
    expect(reached).toContain(join(root, "lib/label.ts"))
    // What the test stands on: Bun runs the macro (and the module) when it loads the tool.
    const run = Bun.spawnSync([process.execPath, join(root, "tools/a.ts")], { stderr: "pipe" })
    expect(run.stdout.toString()).toBe("boxed 1\n")
    expect(existsSync(marker)).toBe(true)
  })

  // A JSX pragma naming preact as its import source has Bun import preact/jsx-dev-runtime, which the scan does not list: a package there,
  // the user's or one a model planted, went unprotected.
  test("a JSX pragma's import source is followed as a package the file imports", () => {
    const root = files(tempDir("core-closure-"), {
      "tools/a.ts": 'import { view } from "../lib/view.tsx"\nconsole.log(view())\n',
      // Spelt in two, so that no dead-code check takes the pragma for an import of this repository.
      "lib/view.tsx": `/** @jsx${"ImportSource"} preact */\nexport const view = () => <b>x</b>\n`,
      "node_modules/preact/package.json": '{ "name": "preact", "exports": { "./jsx-dev-runtime": "./jsx.js", "./jsx-runtime": "./jsx.js" } }',
      "node_modules/preact/jsx.js": 'export const jsxDEV = () => "from preact"\nexport const jsx = jsxDEV\nexport const Fragment = "f"\n',
    })
    const run = Bun.spawnSync([process.execPath, join(root, "tools/a.ts")], { stderr: "pipe" })
    expect(run.stdout.toString()).toBe("from preact\n")
    expect(reachedFrom(root)).toContain(join(root, "node_modules/preact"))
  })

  // A large folder above a Location (a busy /tmp) is not listed but asked name by name: what it holds must be found
  // the same, and what is made there after one closure by the next.
  test("in a folder too large to list, the places a resolver looks are asked one by one, and seen again once it changes", () => {
    const big = tempDir("core-closure-big-")
    for (let index = 0; index < 3_000; index++) writeFileSync(join(big, `entry-${index}-${"x".repeat(60)}`), "")
    expect(statSync(big).size).toBeGreaterThan(Closure.LISTED_BYTES)
    const root = files(join(big, "location"), { "tools/a.ts": 'import pad from "pad"\n' })
    const before = reachedFrom(root)
    for (const missing of ["node_modules/pad", "package.json", "tsconfig.json", "jsconfig.json"]) expect(before).toContain(join(big, missing))
    // Asked again with nothing changed, the same answer.
    expect(reachedFrom(root)).toEqual(before)
    files(big, {
      "node_modules/pad/package.json": '{ "name": "pad", "main": "main.js", "dependencies": { "dep": "1" } }',
      "node_modules/dep/package.json": '{ "name": "dep" }',
      "tsconfig.json": "{}",
    })
    const after = reachedFrom(root)
    expect(after).toContain(join(big, "node_modules/pad"))
    expect(after).toContain(join(big, "node_modules/dep"))
    expect(after).toContain(join(big, "tsconfig.json"))
    // Found there, the search stops: nothing above the large folder is reached any longer.
    expect(after).not.toContain(join(dirname(big), "node_modules/pad"))
    expect(after).not.toContain(join(dirname(big), "tsconfig.json"))
  })

  // A folder core may search but not list (mode 711, as some home folders are): what is in it is asked by name.
  // Run as an unprivileged user, since root lists any folder.
  test.skipIf(process.getuid?.() !== 0 || Bun.which("setpriv") === null)(
    "in a folder that cannot be listed, a package is found by its name (SKIPPED unless root with setpriv)",
    () => {
      const shut = tempDir("core-closure-shut-")
      chmodSync(shut, 0o755)
      const root = files(join(shut, "inner", "location"), { "tools/a.ts": 'import pad from "pad"\n' })
      files(join(shut, "inner"), {
        "node_modules/pad/package.json": '{ "name": "pad", "dependencies": { "dep": "1" } }',
        "node_modules/dep/package.json": '{ "name": "dep" }',
      })
      chmodSync(join(shut, "inner"), 0o711)
      const script = `const { Closure } = await import(${JSON.stringify(join(import.meta.dir, "../../src/permission/closure.ts"))})
console.log(JSON.stringify(Closure.of(Closure.rootsOf(${JSON.stringify(root)})).reached.map((each) => each.path)))`
      const run = Bun.spawnSync(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, "-e", script], { stderr: "pipe" })
      expect(run.stderr.toString()).toBe("")
      const reached: Array<string> = JSON.parse(run.stdout.toString())
      expect(reached).toContain(join(shut, "inner/node_modules/pad"))
      expect(reached).toContain(join(shut, "inner/node_modules/dep"))
    },
  )

  // Bun's resolver finds a file by its name ignoring case: `../lib/fmt.ts` loads lib/FMT.ts where no lib/fmt.ts is.
  // The closure looked for the exact name alone, and what FMT.ts imports went unprotected.
  test("a missing file imported is found under another spelling, as Bun's resolver finds it, and followed", () => {
    const root = files(tempDir("core-closure-"), {
      "tools/a.ts": 'import { f } from "../lib/fmt.ts"\nconsole.log(f())\n',
      "lib/FMT.ts": 'import { g } from "./helper.ts"\nexport const f = () => "spelled " + g\n',
      "lib/Helper.ts": 'export const g = "otherwise"\n',
    })
    // What the resolver does, which the closure follows.
    const run = Bun.spawnSync([process.execPath, join(root, "tools/a.ts")], { stderr: "pipe" })
    expect(run.stdout.toString()).toBe("spelled otherwise\n")
    const reached = reachedFrom(root)
    for (const path of ["lib/fmt.ts", "lib/FMT.ts", "lib/helper.ts", "lib/Helper.ts"]) {
      expect([path, reached.includes(join(root, path))]).toEqual([path, true])
    }
    // Loaded there, the resolver looks no further.
    expect(reached).not.toContain(join(root, "lib/fmt.ts.ts"))
    expect(reached).not.toContain(join(root, "lib/fmt/index.ts"))
  })

  test("in a folder too large to list, another spelling of a missing file imported is found too", () => {
    const big = tempDir("core-closure-big-")
    for (let index = 0; index < 3_000; index++) writeFileSync(join(big, `entry-${index}-${"x".repeat(60)}`), "")
    const root = files(join(big, "location"), { "tools/a.ts": 'import "../../shared.ts"\n' })
    expect(reachedFrom(root)).toContain(join(big, "shared.ts"))
    expect(reachedFrom(root)).not.toContain(join(big, "Shared.ts"))
    files(big, { "Shared.ts": 'import "./next.ts"\n' })
    const after = reachedFrom(root)
    expect(after).toContain(join(big, "Shared.ts"))
    expect(after).toContain(join(big, "next.ts"))
  })

  test("an import cycle ends, and a directory with no tools or plugins reaches nothing", () => {
    const root = files(tempDir("core-closure-"), { "tools/a.ts": 'import "../lib/x.ts"\n', "lib/x.ts": 'import "./y.ts"\n', "lib/y.ts": 'import "./x.ts"\n' })
    expect(reachedFrom(root)).toEqual([join(root, "lib/x.ts"), join(root, "lib/y.ts")])
    expect(Closure.of(Closure.rootsOf(tempDir("core-empty-")))).toEqual({ reached: [], complete: true })
  })
})

describe("Git: what the user's git runs", () => {
  const git = (cwd: string, ...args: ReadonlyArray<string>) =>
    Bun.spawnSync(["git", ...args], { cwd, env: { PATH: process.env.PATH!, HOME: cwd } })
  const GIT = Bun.which("git") !== null

  test("nothing outside a repository", () => {
    expect(Git.places(tempDir("core-nogit-"))).toEqual([])
  })

  test.skipIf(!GIT)("a repository's hooks, config and attributes, found from a folder inside it (SKIPPED without git)", () => {
    const root = tempDir("core-git-")
    git(root, "init", "-q")
    mkdirSync(join(root, "sub"))
    const paths = Git.places(join(root, "sub")).map((place) => place.path)
    for (const path of ["hooks", "config", "info/attributes"]) expect(paths).toContain(join(root, ".git", path))
  })

  test.skipIf(!GIT)("a worktree: its .git pointer, the repository's hooks and config, and its own config.worktree (SKIPPED without git)", () => {
    const main = tempDir("core-git-")
    git(main, "init", "-q")
    git(main, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "x")
    const worktree = join(tempDir("core-wt-"), "wt")
    git(main, "worktree", "add", "-q", worktree)
    const paths = Git.places(worktree).map((place) => place.path)
    expect(paths).toContain(join(worktree, ".git"))
    expect(paths).toContain(join(main, ".git/hooks"))
    expect(paths).toContain(join(main, ".git/config"))
    expect(paths).toContain(join(main, ".git/worktrees/wt/config.worktree"))
  })

  test("a bare repository as the Location, and a submodule's git directory", () => {
    const root = files(tempDir("core-bare-"), { HEAD: "ref: refs/heads/main\n", config: "", "modules/a/b/HEAD": "x", "objects/.keep": "" })
    mkdirSync(join(root, "modules/a/b/objects"))
    const paths = Git.places(root).map((place) => place.path)
    expect(paths).toContain(join(root, "hooks"))
    expect(paths).toContain(join(root, "modules/a/b/hooks"))
    expect(paths).toContain(join(root, "modules/a/b/config"))
  })

  test("a .git file that points nowhere readable gives nothing, and is not followed past", () => {
    const root = files(tempDir("core-git-"), { ".git": "not a pointer\n" })
    expect(Git.places(root)).toEqual([])
  })
})

describe("Protected.change: code and git places", () => {

  // A command renamed lib/ (or .git/, node_modules/) away while it ran, a write through a file tool changed the code
  // under its new name, and the command renamed it back: the tool then loaded the model's code inside core.
  test("a protected place renamed away is protected under its new name, and what lies in it", () => {
    const location = files(tempDir("core-loc-"), {
      "tools/a.ts": 'import "../lib/b"\nimport "pad"\n',
      "lib/b.ts": "",
      "node_modules/pad/index.js": "",
      "node_modules/pad/package.json": "{}",
      ".git/HEAD": "ref: refs/heads/main\n",
      ".git/config": "[core]\n",
    })
    mkdirSync(join(location, ".git/objects"))
    const roots = rootsFor(location)
    expect(Protected.change(roots, join(location, "other.ts"))).toBeUndefined()
    renameSync(join(location, "lib"), join(location, "libx"))
    renameSync(join(location, "node_modules"), join(location, "nmx"))
    renameSync(join(location, ".git"), join(location, ".gx"))
    renameSync(join(location, ".gx/HEAD"), join(location, ".gx/HEAD.away"))
    expect(Protected.change(roots, join(location, "libx/b.ts"))).toContain("under another name")
    expect(Protected.change(roots, join(location, "nmx/pad/index.js"))).toContain("under another name")
    expect(Protected.change(roots, join(location, "nmx/planted/index.js"))).toContain("under another name")
    expect(Protected.change(roots, join(location, ".gx/config"))).toContain("under another name")
    // What nothing imports, in a folder that is not itself protected, stays the model's.
    expect(Protected.change(roots, join(location, "libx/new.ts"))).toBeUndefined()
    // A file made later in the place of one (a new file, whatever its inode number) is not the one seen.
    rmSync(join(location, "libx/b.ts"))
    writeFileSync(join(location, "libx/b.ts"), "")
    expect(Protected.change(roots, join(location, "libx/b.ts"))).toBeUndefined()
  })

  // While a sandboxed command runs, a file it made where a tool's import is missing stands until its guard undoes it;
  // a check of another call then reads it as the module the tool would load. With the transpiler's fuller scan, its
  // macro ran inside core, outside the sandbox.
  test("a check made while a command's file stands where an import is missing runs none of that file's code", () => {
    const location = files(tempDir("core-loc-"), { "tools/hi.ts": 'import { fmt } from "../lib/fmt.ts"\nexport const hi = fmt\n' })
    const roots = rootsFor(location)
    expect(Protected.change(roots, join(location, "lib/fmt.ts"))).toContain("code that tools/hi.ts imports")
    const marker = join(location, "scratch/ran")
    files(location, {
      "scratch/m.ts": `import { writeFileSync } from "node:fs"\nexport const go = () => { writeFileSync(${JSON.stringify(marker)}, "x"); return 1 }\n`,
      "lib/fmt.ts":
        `import { go } from ${JSON.stringify(join(location, "scratch/m.ts"))} with { type: "macro" }\n` +
        "class A { accessor x = go() }\nexport const fmt = new A().x\n",
    })
    expect(Protected.change(roots, join(location, "notes.txt"))).toBeUndefined()
    expect(existsSync(marker)).toBe(false)
    // What the file names is followed as the tool's: the macro's module is code core would load.
    expect(Protected.change(roots, join(location, "scratch/m.ts"))).toContain("code that tools/hi.ts imports")
  })

  // A command can make a file where an import is missing, sparse and of any size, while another call's check reads
  // the closure: read whole, 1.5 GB of it held core's thread for 10 s and took as much memory.
  test("a module or package.json past the size the closure reads is not read, and the whole Location is protected", () => {
    const location = files(tempDir("core-loc-"), {
      "tools/hi.ts": 'import { fmt } from "../lib/fmt.ts"\nimport { pad } from "pad"\nexport const hi = fmt + pad\n',
      "node_modules/pad/index.js": "export const pad = 1\n",
    })
    const roots = rootsFor(location)
    expect(Closure.of(Closure.rootsOf(location)).complete).toBe(true)
    mkdirSync(join(location, "lib"))
    writeFileSync(join(location, "lib/fmt.ts"), "")
    truncateSync(join(location, "lib/fmt.ts"), Closure.MAX_READ_BYTES + 1)
    // Twice: the second closure finds the file as the first left it, unread.
    for (let round = 0; round < 2; round++) {
      expect(Closure.of(Closure.rootsOf(location))).toMatchObject({ complete: false, unread: join(location, "lib/fmt.ts") })
    }
    expect(Protected.change(roots, join(location, "notes.txt"))).toContain("lib/fmt.ts, larger than 64 MiB")
    // At the bound it is read.
    truncateSync(join(location, "lib/fmt.ts"), Closure.MAX_READ_BYTES)
    expect(Closure.of(Closure.rootsOf(location)).complete).toBe(true)
    expect(Protected.change(roots, join(location, "notes.txt"))).toBeUndefined()
    writeFileSync(join(location, "node_modules/pad/package.json"), "")
    truncateSync(join(location, "node_modules/pad/package.json"), Closure.MAX_READ_BYTES + 1)
    expect(Closure.of(Closure.rootsOf(location))).toMatchObject({ complete: false, unread: join(location, "node_modules/pad/package.json") })
  })

  // Past the files the closure follows one by one, the rest was left the model's, unsaid: a write to the 5,050th
  // module of a chain ran inside core at the next load.
  test("a closure past what is followed file by file protects the whole Location, and says why", () => {
    const tree: Record<string, string> = { "tools/big.ts": 'import "../big/m0"\n' }
    const count = Closure.MAX_FOLLOWED + 100
    for (let index = 0; index < count; index++) tree[`big/m${index}.ts`] = `import "./m${index + 1}"\n`
    const location = files(tempDir("core-loc-"), tree)
    expect(Closure.of(Closure.rootsOf(location)).complete).toBe(false)
    const roots = rootsFor(location)
    for (const path of [`big/m${count - 50}.ts`, "README.md"]) {
      expect([path, Protected.change(roots, join(location, path))]).toEqual([path, expect.stringContaining("protects the whole Location")])
    }
    expect(Protected.change(roots, join(location, "big/m10.ts"))).toContain("code that tools/big.ts imports")
    // Within the bound, a closure is followed whole, and the rest of the Location stays the model's.
    const small = files(tempDir("core-loc-"), { "tools/a.ts": 'import "../lib/b"\n', "lib/b.ts": "" })
    expect(Closure.of(Closure.rootsOf(small)).complete).toBe(true)
    expect(Protected.change(rootsFor(small), join(small, "README.md"))).toBeUndefined()
  })

  test("names an imported module, a nearer planted package and a git hook; not an unrelated file", () => {
    const location = files(tempDir("core-loc-"), {
      "tools/a.ts": 'import "../lib/b"\nimport "pad"\n',
      "lib/b.ts": "",
      "node_modules/pad/package.json": "{}",
      ".git/HEAD": "ref: refs/heads/main\n",
      "other.ts": "",
    })
    mkdirSync(join(location, ".git/objects"))
    const roots = rootsFor(location)
    expect(Protected.change(roots, join(location, "lib/b.ts"))).toContain("code that tools/a.ts imports")
    expect(Protected.change(roots, join(location, "node_modules/pad/index.js"))).toContain("code that tools/a.ts imports")
    expect(Protected.change(roots, join(location, "tools/node_modules/pad/index.js"))).toContain("tools/")
    expect(Protected.change(roots, join(location, ".git/hooks/pre-commit"))).toContain("the hooks of the git repository")
    expect(Protected.change(roots, join(location, ".git/config"))).toContain("the config of the git repository")
    expect(Protected.change(roots, join(location, "other.ts"))).toBeUndefined()
    expect(Protected.change(roots, join(location, ".git/description"))).toBeUndefined()
    // A folder holding them is not itself asked for: a command given it meets the mounts instead.
    expect(Protected.change(roots, join(location, "lib"), { encloses: true })).toBeUndefined()
    expect(Protected.named(roots, join(location, ".git/hooks/x"))).toBe(true)
  })
})
