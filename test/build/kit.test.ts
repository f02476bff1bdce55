// The author kit that every binary embeds for `core init`: the kernel's testing module and its dependencies,
// every file intact. Builds the archive as build.ts does (reused when no input changed).

import { beforeAll, describe, expect, test } from "bun:test"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import * as Kit from "../../build/kit"

const ROOT = join(import.meta.dir, "../..")

/** Where each packaged folder of the kit comes from. */
const SOURCES: ReadonlyArray<readonly [string, string]> = [
  ["node_modules/effect/", "node_modules/effect/"],
  ["node_modules/undici-types/", "node_modules/undici-types/"],
  ["types/bun-types/", "node_modules/bun-types/"],
  ["types/node/", "node_modules/@types/node/"],
]

let files: Record<string, string> = {}

beforeAll(async () => {
  const kit = await Kit.ensure()
  const archive = JSON.parse(new TextDecoder().decode(Bun.zstdDecompressSync(readFileSync(kit.path)))) as {
    files: Record<string, string>
  }
  files = archive.files
}, 300_000)

describe("the kit archive", () => {
  test("every packaged file is byte for byte the installed one", () => {
    let compared = 0
    for (const [path, text] of Object.entries(files)) {
      const source = SOURCES.find(([prefix]) => path.startsWith(prefix))
      if (source === undefined) continue
      const original = join(ROOT, source[1], path.slice(source[0].length))
      expect(existsSync(original)).toBe(true)
      const stored = new TextEncoder().encode(text)
      if (!Buffer.from(stored).equals(readFileSync(original))) throw new Error(`${path} differs from ${original}`)
      compared++
    }
    expect(compared).toBeGreaterThan(1000)
  })

  test("@core/tool holds the kernel's JavaScript and declarations only: no binaries, no built-ins, no CLI", () => {
    const own = Object.keys(files).filter((path) => path.startsWith("node_modules/@core/tool/"))
    expect(own.length).toBeGreaterThan(3)
    for (const path of own) expect(path).toMatch(/\.(js|d\.ts)$|\/package\.json$/)
    for (const folder of ["builtin", "cli", "server", "shell"]) {
      expect(own.filter((path) => path.includes(`/types/${folder}/`))).toEqual([])
    }
    // The bundler opens each module it includes with a `// src/<path>` comment.
    const modules = own
      .filter((path) => path.endsWith(".js"))
      .flatMap((path) => [...files[path]!.matchAll(/^\/\/ src\/(\S+)$/gm)].map((match) => match[1]!))
    expect(modules).toContain("sdk/testing.ts")
    expect(modules).toContain("host/kernel.ts")
    expect(modules.filter((module) => /^(builtin|cli|server|shell|config)\//.test(module) || module === "host/host.ts")).toEqual([])
  })
})
