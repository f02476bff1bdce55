// glob's reading of rg's output checked against an independent reading on a real tree (a copy of this repository's
// sources and tests, with names that are not UTF-8, hold spaces, ':' or a line break, and files of equal times):
// every file rg lists, selected here with Ripgrep.selects, dated with statSync, ordered newest first (equal times
// by path) and cut to the limit.

import { describe, expect, test } from "bun:test"
import { cpSync, readdirSync, statSync, utimesSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { Glob } from "../../src/builtin/glob"
import { Ripgrep } from "../../src/builtin/ripgrep"
import { harness } from "../support/builtin"

const ROOT = join(import.meta.dir, "../..")

/** What glob should answer for `pattern` over the whole Location with `limit`. */
const expected = async (directory: string, pattern: string, limit: number): Promise<Glob.Output> => {
  const rg = await Effect.runPromise(Ripgrep.executable)
  const child = Bun.spawn([rg, ...Ripgrep.COMMON_FLAGS, "--files", "--null", "--", "."], { cwd: directory, stdout: "pipe" })
  const printed = Buffer.from(await new Response(child.stdout).arrayBuffer())
  await child.exited
  const found: Array<{ path: string; relative: string; utf8: boolean; modified: number }> = []
  for (let start = 0; start < printed.length; ) {
    const end = printed.indexOf(0, start)
    const relative = printed.subarray(start + 2, end)
    start = end + 1
    const absolute = Buffer.concat([Buffer.from(`${directory}/`), relative])
    let utf8 = true
    let path: string
    try {
      path = new TextDecoder("utf-8", { fatal: true }).decode(absolute)
    } catch {
      path = new TextDecoder().decode(absolute)
      utf8 = false
    }
    const shown = path.slice(directory.length + 1)
    if (!Ripgrep.selects(pattern, shown)) continue
    found.push({ path, relative: shown, utf8, modified: statSync(absolute).mtimeMs })
  }
  found.sort((a, b) => b.modified - a.modified || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  const kept = found.slice(0, limit)
  const notUtf8 = kept.filter((file) => !file.utf8).map((file) => file.relative)
  return {
    pattern,
    path: ".",
    files: kept.map((file) => file.relative),
    total: found.length,
    ...(notUtf8.length === 0 ? {} : { notUtf8 }),
  }
}

describe("glob reads rg's output as an independent listing does", () => {
  const h = harness()
  cpSync(join(ROOT, "src"), join(h.directory, "src"), { recursive: true })
  cpSync(join(ROOT, "test"), join(h.directory, "test"), { recursive: true, filter: (path) => !path.includes("node_modules") })
  h.write({ "a b.ts": "x", "c:d.ts": "x", "new\nline.ts": "x", "same/one.json": "{}", "same/two.json": "{}" })
  for (const name of ["bad\\377name.ts", "more/bad\\376.json"]) {
    expect(Bun.spawnSync(["bash", "-c", `mkdir -p "$0/more" && printf x > "$0/$(printf '${name}')"`, h.directory]).exitCode).toBe(0)
  }
  utimesSync(join(h.directory, "same/one.json"), 1_800_000_000, 1_800_000_000)
  utimesSync(join(h.directory, "same/two.json"), 1_800_000_000, 1_800_000_000)
  utimesSync(join(h.directory, "a b.ts"), 1_800_000_000.5, 1_800_000_000.5)

  const cases: ReadonlyArray<readonly [string, number]> = [
    ["**/*.ts", 1],
    ["**/*.ts", 100],
    ["**/*.ts", 20_000],
    ["*.json", 3],
    ["*.{json,md}", 50],
    ["src/**/*.ts", 30],
    ["*", 10_000],
  ]
  for (const [pattern, limit] of cases) {
    test(`${pattern}, limit ${limit}`, async () => {
      const want = await expected(h.directory, pattern, limit)
      expect(want.total).toBeGreaterThan(0)
      const { settlement } = await h.settle("glob", { pattern, limit })
      expect(settlement.status).toBe("success")
      // A long answer is bounded by the settlement and kept whole in its managed output.
      if (settlement.structured !== null) expect(settlement.structured).toEqual(want)
      else {
        const kept = readdirSync(join(h.data, "outputs"), { recursive: true })
          .map(String)
          .find((name) => name.endsWith(`${settlement.outputs[0]!.id}.json`))!
        expect(await Bun.file(join(h.data, "outputs", kept)).json()).toEqual(want)
      }
    })
  }
})
