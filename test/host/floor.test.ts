// The host floor sits below the edges (DESIGN §3): nothing under src/host imports the CLI, the server or the
// testing kit (discovery does use the SDK's module plugin, which serves `@core/tool` and `effect` to tool files),
// and the author kit's testing module reaches the kernel without the CLI, the server or any built-in.

import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

const SRC = join(import.meta.dir, "../../src")
const transpiler = new Bun.Transpiler({ loader: "ts" })

/** Every source file `entry` reaches through relative imports, as paths under src/. */
const reach = (entry: string): ReadonlySet<string> => {
  const seen = new Set<string>()
  const visit = (file: string) => {
    const path = relative(SRC, file)
    if (seen.has(path)) return
    seen.add(path)
    for (const { path: specifier } of transpiler.scanImports(readFileSync(file, "utf8"))) {
      if (!specifier.startsWith(".")) continue
      const target = resolve(dirname(file), specifier)
      visit(target.endsWith(".ts") || target.endsWith(".json") ? target : `${target}.ts`)
    }
  }
  visit(join(SRC, entry))
  return seen
}

const under = (files: ReadonlySet<string>, folders: ReadonlyArray<string>) =>
  [...files].filter((file) => folders.some((folder) => file.startsWith(`${folder}/`))).sort()

describe("the host floor", () => {
  test("nothing under src/host imports an edge", () => {
    for (const entry of ["host/host.ts", "host/kernel.ts", "host/retention.ts"]) {
      const reached = reach(entry)
      expect([entry, under(reached, ["cli", "server"])]).toEqual([entry, []])
      expect(reached.has("sdk/testing.ts")).toBe(false)
    }
  })

  test("@core/tool/testing reaches the kernel without the CLI, the server, the built-ins or the shell", () => {
    const reached = reach("sdk/testing.ts")
    expect(reached.has("host/kernel.ts")).toBe(true)
    expect(under(reached, ["cli", "server", "builtin", "shell", "config"])).toEqual([])
    expect(reached.has("host/host.ts")).toBe(false)
  })
})
