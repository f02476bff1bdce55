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
    // A JSON module (package.json, for the version) imports nothing.
    if (file.endsWith(".json")) return
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
    const entries = [...new Bun.Glob("host/*.ts").scanSync({ cwd: SRC })].sort()
    expect(entries).toContain("host/served.ts")
    for (const entry of entries) {
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

// The floors, lowest first (docs/architecture.md): a module imports only its own floor and the ones below it,
// counting type-only imports, since a type import is a dependency too. Each folder under src/ is on one floor,
// whole: no file sits apart from its folder, and every folder must be placed, so a new one takes a floor.
const FLOORS: ReadonlyArray<ReadonlyArray<string>> = [
  // the tool value and what it needs: refusals a tool may fail with; `@core/tool` (tools and plugins as authors
  // write them) and the module plugin serving it to tool files
  ["tool", "author"],
  // the services a settlement runs on, and the settlement's contract (the JSON shape the store persists)
  ["contract", "registry", "output", "permission", "store"],
  ["settlement"],
  // what fills a Location: built-ins, the shell producer they run on, tool files, core.json, MCP servers, plugins;
  // provider mappings
  ["builtin", "shell", "location", "config", "mcp-client", "plugin", "provider"],
  ["host"],
  // the edges; only the CLI, the binary's entry, starts another edge
  ["cli", "server", "mcp-server", "sdk"],
]
const EDGES = FLOORS[FLOORS.length - 1]!
const ENTRY = "cli"

/** The most specific placement of a path under src/ (a file before its folder), or undefined. */
const placement = (path: string): { readonly place: string; readonly floor: number } | undefined => {
  let found: { readonly place: string; readonly floor: number } | undefined
  FLOORS.forEach((places, floor) => {
    for (const place of places) {
      if (path !== place && !path.startsWith(`${place}/`)) continue
      if (found === undefined || place.length > found.place.length) found = { place, floor }
    }
  })
  return found
}

/**
 * The relative specifiers a module imports, type-only imports included: Bun's scanner drops `import type`,
 * `export type` and all-type specifier lists, so those forms are rewritten to value forms before scanning.
 */
const importsOf = (source: string): ReadonlyArray<string> => {
  const valued = source
    .replace(/\b(import|export)\s+type\s+(?=[{*])/g, "$1 ")
    .replace(/\bimport\s+type\s+(?=[A-Za-z_$][\w$]*\s+from\b)/g, "import ")
    .replace(/\b(import|export)\s*\{([^}]*)\}(\s*from\b)/g, (_, keyword: string, names: string, from: string) =>
      `${keyword} {${names.replace(/\btype\s+(?=[A-Za-z_$])/g, "")}}${from}`,
    )
  return transpiler
    .scanImports(valued)
    .map(({ path }) => path)
    .filter((path) => path.startsWith("."))
}

const sources = (): ReadonlyArray<string> =>
  [...new Bun.Glob("**/*.ts").scanSync({ cwd: SRC })].sort()

/** Whether an import from `file` of `target` (paths under src/) runs up a floor, or from one edge into another. */
const runsUp = (file: string, target: string): boolean => {
  const from = placement(file)
  const to = placement(target)
  if (from === undefined || to === undefined) return false
  const fromEdge = from.floor === FLOORS.length - 1
  const otherEdge = fromEdge && to.floor === from.floor && to.place !== from.place && from.place !== ENTRY
  return to.floor > from.floor || otherEdge
}

/** Each import of a module that runs up a floor, or from one edge into another, as `from -> to`. */
const violations = (): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (const file of sources()) {
    for (const specifier of importsOf(readFileSync(join(SRC, file), "utf8"))) {
      const resolved = relative(SRC, resolve(dirname(join(SRC, file)), specifier))
      if (resolved.startsWith("..")) continue
      const target = resolved.endsWith(".ts") || resolved.endsWith(".json") ? resolved : `${resolved}.ts`
      if (runsUp(file, target)) found.push(`${file} -> ${target}`)
    }
  }
  return found
}

/** The folders each folder under src/ imports (other than itself), type-only imports included. */
const folderImports = (): ReadonlyMap<string, ReadonlySet<string>> => {
  const graph = new Map<string, Set<string>>()
  for (const file of sources()) {
    const from = file.split("/")[0]!
    for (const specifier of importsOf(readFileSync(join(SRC, file), "utf8"))) {
      const resolved = relative(SRC, resolve(dirname(join(SRC, file)), specifier))
      if (resolved.startsWith("..")) continue
      const to = resolved.split("/")[0]!
      if (to === from || !resolved.includes("/")) continue
      if (!graph.has(from)) graph.set(from, new Set())
      graph.get(from)!.add(to)
    }
  }
  return graph
}

/** The groups of nodes that reach each other (strongly connected, more than one node), each sorted. */
const cyclesOf = (graph: ReadonlyMap<string, ReadonlySet<string>>): ReadonlyArray<ReadonlyArray<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const found: Array<Array<string>> = []
  const visit = (node: string) => {
    index.set(node, index.size)
    low.set(node, index.get(node)!)
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node)!, low.get(next)!))
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!))
    }
    if (low.get(node) !== index.get(node)) return
    const group: Array<string> = []
    for (let top = stack.pop()!; ; top = stack.pop()!) {
      group.push(top)
      if (top === node) break
    }
    if (group.length > 1) found.push(group.sort())
  }
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node)
  return found
}

const folderCycles = () => cyclesOf(folderImports())

describe("the floors", () => {
  test("every folder under src/ has a floor", () => {
    const unplaced = sources().filter((file) => placement(file) === undefined)
    expect(unplaced).toEqual([])
  })

  test("no module imports a floor above its own, counting type-only imports", () => {
    expect(violations()).toEqual([])
  })

  test("an import up a floor or across edges is refused; down or within a floor it is not", () => {
    expect(runsUp("tool/tool.ts", "permission/permission.ts")).toBe(true)
    expect(runsUp("permission/permission.ts", "tool/refusal.ts")).toBe(false)
    expect(runsUp("store/store.ts", "contract/settlement.ts")).toBe(false)
    expect(runsUp("store/store.ts", "settlement/settler.ts")).toBe(true)
    expect(runsUp("permission/permission.ts", "store/approvals.ts")).toBe(false)
    expect(runsUp("location/discovery.ts", "author/modules.ts")).toBe(false)
    expect(runsUp("location/discovery.ts", "sdk/testing.ts")).toBe(true)
    expect(runsUp("host/served.ts", "server/api.ts")).toBe(true)
    expect(runsUp("host/host.ts", "cli/runtime.ts")).toBe(true)
    expect(runsUp("server/router.ts", "cli/runtime.ts")).toBe(true)
    expect(runsUp("sdk/testing.ts", "server/api.ts")).toBe(true)
    expect(runsUp("cli/serve-command.ts", "server/server.ts")).toBe(false)
    expect(runsUp("server/router.ts", "host/sidecar.ts")).toBe(false)
  })

  test("the scan sees type-only imports in every form", () => {
    const source = [
      `import type { A } from "./a"`,
      `import { type B, type C } from "./b"`,
      `import type D from "./d"`,
      `import type * as E from "./e"`,
      `export type { F } from "./f"`,
      `export { type G } from "./g"`,
      `import { H } from "./h"`,
      `export type I = { readonly type: string }`,
      `// import { J } from "./j"`,
      `const k = () => import("./k")`,
    ].join("\n")
    expect([...importsOf(source)].sort()).toEqual(["./a", "./b", "./d", "./e", "./f", "./g", "./h", "./k"])
  })

  test("every place is a whole folder", () => {
    const folders = new Set(sources().map((file) => file.split("/")[0]!))
    expect(FLOORS.flat().filter((place) => !folders.has(place))).toEqual([])
  })

  test("no folder imports another that imports it back, at whatever distance, counting type-only imports", () => {
    expect(folderCycles()).toEqual([])
  })

  test("a cycle between folders is found, direct or through others", () => {
    expect(cyclesOf(new Map([["a", new Set(["b"])], ["b", new Set(["a"])]]))).toEqual([["a", "b"]])
    expect(cyclesOf(new Map([["a", new Set(["b"])], ["b", new Set(["c"])], ["c", new Set(["a"])]]))).toEqual([["a", "b", "c"]])
    expect(cyclesOf(new Map([["a", new Set(["b"])], ["b", new Set(["c"])]]))).toEqual([])
  })

  test("an edge is the top floor and nothing is placed twice", () => {
    expect(EDGES).toContain(ENTRY)
    const places = FLOORS.flat()
    expect(new Set(places).size).toBe(places.length)
  })
})
