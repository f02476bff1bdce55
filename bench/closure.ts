// What protecting the import closure of tool files costs. Per tool load: loading a tool file as discovery does
// (read, scan its imports, import it fresh), today's cost, against the same plus computing its closure cold (its
// relative module and that module's import, a package with a dependency, every nearer place a resolver would look);
// and the closure again warm (files unchanged: remembered scans, stats only), which every protected-path check and
// every command start pays; and warm again for a Location in a large folder (a /tmp of a machine in use) changed
// before each closure, a folder whose entries are not listed (Closure.LISTED_BYTES). Then `Protected.change` of one
// path in a Location of 10 such tools, against the same check in a Location without tools (what it cost before the
// closure). Target: a tool load with its closure cold ≤ 1.25x today's.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { Discovery } from "../src/location/discovery"
import { Closure } from "../src/permission/closure"
import { Protected } from "../src/permission/protected"
import { cleanup, duration, main, median, progress, ratio, type Report, summarize } from "./measure"

const LOCATIONS = 30
const TOOLS = 10
const WARM_RUNS = 2_000
const CHECKS = 2_000
const TARGET = 1.25
/** Entries of the large folder a Location is put in (a /tmp of a machine in use), and closures timed there. */
const BUSY_ENTRIES = 8_000
const BUSY_RUNS = 300

const TOOL = (index: number) => `import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"
import { fmt } from "../lib/fmt${index}"
import { pad } from "leftpad"

export default Tool.make({
  description: "Formats text",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(pad(fmt(input.text))),
})
`

const write = (root: string, files: Record<string, string>) => {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true })
    writeFileSync(join(root, path), text)
  }
}

/** A Location of `tools` tools, each importing its own module (which imports a shared one) and one package. */
const location = (parent: string, name: string, tools: number): string => {
  const root = join(parent, name)
  const files: Record<string, string> = {
    "lib/shared.ts": "export const wrap = (text: string) => `[${text}]`\n",
    "node_modules/leftpad/package.json": '{ "name": "leftpad", "main": "index.js", "dependencies": { "repeat": "1" } }',
    "node_modules/leftpad/index.js": "exports.pad = (text) => require('repeat').spaces(2) + text\n",
    "node_modules/repeat/package.json": '{ "name": "repeat", "main": "index.js" }',
    "node_modules/repeat/index.js": "exports.spaces = (n) => ' '.repeat(n)\n",
  }
  for (let index = 0; index < tools; index++) {
    files[`tools/t${index}.ts`] = TOOL(index)
    files[`lib/fmt${index}.ts`] = 'import { wrap } from "./shared"\nexport const fmt = (text: string) => wrap(text)\n'
  }
  write(root, files)
  return root
}

const time = (run: () => void): number => {
  const started = performance.now()
  run()
  return performance.now() - started
}

const timeAsync = async (run: () => Promise<unknown>): Promise<number> => {
  const started = performance.now()
  await run()
  return performance.now() - started
}

const measure = async (): Promise<Report> => {
  const parent = mkdtempSync(join(tmpdir(), "core-bench-closure-"))
  try {
    progress(`making ${LOCATIONS} Locations of ${TOOLS} tools`)
    const locations = Array.from({ length: LOCATIONS }, (_, index) => location(parent, `l${index}`, TOOLS))
    // Warm Bun's loader and core's module plugin on a Location of its own.
    const warm = location(parent, "warm", 1)
    await Effect.runPromise(Discovery.importFile(join(warm, "tools/t0.ts")))

    progress("loading tool files, and computing each one's closure cold")
    const loads: Array<number> = []
    const cold: Array<number> = []
    for (const [index, root] of locations.entries()) {
      for (let tool = 0; tool < TOOLS; tool++) {
        const file = join(root, `tools/t${tool}.ts`)
        // Alternate which goes first, so neither always meets a cache the other warmed (the OS page cache).
        const load = () => timeAsync(() => Effect.runPromise(Discovery.importFile(file)))
        const closure = () => time(() => Closure.of([file]))
        if ((index + tool) % 2 === 0) {
          loads.push(await load())
          cold.push(closure())
        } else {
          cold.push(closure())
          loads.push(await load())
        }
      }
    }
    progress("computing a closure warm (files unchanged)")
    const warmRuns: Array<number> = []
    const one = join(locations[0]!, "tools/t0.ts")
    for (let run = 0; run < WARM_RUNS; run++) warmRuns.push(time(() => Closure.of([one])))

    progress("computing a closure warm in a large folder that changes before each")
    // A Location in a folder of many entries (a busy /tmp) that something writes in between two closures.
    const busy = join(parent, "busy")
    mkdirSync(busy)
    for (let index = 0; index < BUSY_ENTRIES; index++) writeFileSync(join(busy, `entry-${index}-${"x".repeat(40)}`), "")
    const busyTool = join(location(busy, "l", 1), "tools/t0.ts")
    Closure.of([busyTool])
    const busyRuns: Array<number> = []
    for (let run = 0; run < BUSY_RUNS; run++) {
      // A file made or removed: the folder itself changes (a file written over would not change it).
      if (run % 2 === 0) writeFileSync(join(busy, "changed"), "")
      else rmSync(join(busy, "changed"))
      busyRuns.push(time(() => Closure.of([busyTool])))
    }

    progress("checking a path with Protected.change, with and without tools")
    const bare = join(parent, "bare")
    mkdirSync(bare)
    const rootsOf = (root: string) =>
      Protected.roots({ location: root, home: join(parent, "home"), dataDir: join(parent, "data"), readable: [] })
    const withTools = rootsOf(locations[0]!)
    const without = rootsOf(bare)
    const checked: Array<number> = []
    const before: Array<number> = []
    for (let run = 0; run < CHECKS; run++) {
      if (run % 2 === 0) {
        checked.push(time(() => Protected.change(withTools, join(locations[0]!, "src/a.ts"))))
        before.push(time(() => Protected.change(without, join(bare, "src/a.ts"))))
      } else {
        before.push(time(() => Protected.change(without, join(bare, "src/a.ts"))))
        checked.push(time(() => Protected.change(withTools, join(locations[0]!, "src/a.ts"))))
      }
    }
    const load = summarize(loads)
    const closure = summarize(cold)
    const again = summarize(warmRuns)
    const inBusy = summarize(busyRuns)
    const check = summarize(checked)
    const baseline = summarize(before)
    const perLoad = (load.p50 + closure.p50) / load.p50
    const reached = Closure.of([one]).reached.length
    const row = (label: string, summary: ReturnType<typeof summarize>, against: string) => [
      label,
      duration(summary.p50),
      duration(summary.q1),
      duration(summary.q3),
      duration(summary.p99),
      against,
    ]
    return {
      name: "import closure",
      about:
        `Loading a tool file (read, import scan, fresh import) against computing its import closure (${reached} ` +
        `paths: a module and its import, a package and its dependency, the nearer places a resolver looks), and ` +
        `Protected.change in a Location of ${TOOLS} tools against one without.`,
      tables: [
        {
          title: "per tool file",
          columns: ["", "p50", "q1", "q3", "p99", "vs load"],
          rows: [
            row("load today", load, "1.00x"),
            row("closure, cold", closure, ratio(closure.p50 / load.p50)),
            row("closure, warm", again, ratio(again.p50 / load.p50)),
            row(`closure, warm, in a folder of ${BUSY_ENTRIES} entries changed before each`, inBusy, ratio(inBusy.p50 / load.p50)),
          ],
        },
        {
          title: `one protected-path check (Protected.change), ${CHECKS / 1} runs`,
          columns: ["", "p50", "q1", "q3", "p99", "vs no tools"],
          rows: [
            row(`Location of ${TOOLS} tools`, check, ratio(check.p50 / baseline.p50)),
            row("Location without tools", baseline, "1.00x"),
          ],
        },
      ],
      targets: [
        {
          measure: "tool load with its closure cold / today's load (p50)",
          value: ratio(perLoad),
          target: `≤ ${TARGET}x`,
          met: perLoad <= TARGET,
        },
      ],
      notes: [
        `the warm closure (${duration(again.p50)} per tool) is paid by every command start and every protected-path check, once per tool and plugin file of the Location`,
        `median of ${loads.length} loads and ${cold.length} cold closures over ${LOCATIONS} Locations; ${median(warmRuns) < median(cold) ? "warm is cheaper than cold, as it should be" : "warm was not cheaper than cold: noisy run"}`,
      ],
    }
  } finally {
    cleanup([parent])
  }
}

if (import.meta.main) await main(measure)
