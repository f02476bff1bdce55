// The cost of confining rg (spawned from a thread of core that Landlock restricts to reading beneath the searched
// directory, kept for that directory) for grep- and glob-like searches, three ways interleaved in the same run:
// `Ripgrep.run` confined (as grep, glob and list run it where the kernel has Landlock), `Ripgrep.run` unconfined
// (spawned directly in the held directory, as without Landlock), and bare rg spawned with the same arguments (the
// peer). On a small tree (this repository's src/, the per-call cost shows) and a larger one (a copy of
// node_modules/effect). Figures only; target: confined grep on the larger tree ≤ 1.5x bare rg.

import { cpSync, mkdtempSync, realpathSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { Ripgrep } from "../src/builtin/ripgrep"
import { Pinned } from "../src/permission/pinned"
import { Landlock } from "../src/shell/landlock"
import { cleanup, duration, main, progress, ratio, type Report, summarize } from "./measure"

const ROOT = join(import.meta.dir, "..")
const RUNS = 21
const TARGET_RATIO = 1.5

const SEARCHES = [
  { label: "grep export const", args: ["--line-number", "--no-heading", "--with-filename", "--null", "--color=never", "--regexp=export const"] },
  { label: "glob (all files)", args: ["--files", "--null"] },
] as const

const timed = async (run: () => Promise<unknown>): Promise<number> => {
  const started = performance.now()
  await run()
  return performance.now() - started
}

export const measure = async (): Promise<Report> => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "core-bench-rg-")))
  try {
    const trees = [
      { label: "src/ (small)", path: join(root, "small") },
      { label: "effect (larger)", path: join(root, "large") },
    ]
    cpSync(join(ROOT, "src"), trees[0]!.path, { recursive: true })
    cpSync(join(ROOT, "node_modules", "effect"), trees[1]!.path, { recursive: true, dereference: true })
    const rg = await Effect.runPromise(Ripgrep.executable)
    const confinedAvailable = Landlock.abi() > 0
    const rows: Array<Array<string>> = []
    const targets: Array<Report["targets"][number]> = []
    for (const tree of trees) {
      const held = await Pinned.directory(tree.path)
      try {
        for (const search of SEARCHES) {
          const args = [...Ripgrep.COMMON_FLAGS, ...search.args, "--", "."]
          const sink = () => undefined
          const ways = {
            bare: async () => {
              const child = Bun.spawn([rg, ...args], { cwd: tree.path, stdin: "ignore", stdout: "pipe", stderr: "pipe" })
              for await (const _ of child.stdout) void _
              await child.exited
            },
            unconfined: () => Effect.runPromise(Ripgrep.run({ args, cwd: held.at(""), onData: sink })),
            confined: () => Effect.runPromise(Ripgrep.run({ args, cwd: held.at(""), root: tree.path, onData: sink })),
          }
          const samples = { bare: [] as Array<number>, unconfined: [] as Array<number>, confined: [] as Array<number> }
          progress(`search-confined: ${tree.label}, ${search.label}`)
          // Warm-up: the first confined call makes the directory's thread; it is kept for the next.
          for (let index = 0; index < 3; index++) for (const run of Object.values(ways)) await run()
          for (let index = 0; index < RUNS; index++) {
            samples.bare.push(await timed(ways.bare))
            samples.unconfined.push(await timed(ways.unconfined))
            samples.confined.push(await timed(ways.confined))
          }
          const bare = summarize(samples.bare).p50
          const unconfined = summarize(samples.unconfined).p50
          const confined = summarize(samples.confined).p50
          rows.push([
            tree.label,
            search.label,
            duration(bare),
            duration(unconfined),
            duration(confined),
            ratio(unconfined / bare),
            ratio(confined / bare),
            duration(confined - unconfined),
          ])
          if (tree === trees[1] && search === SEARCHES[0]) {
            targets.push({
              measure: "confined grep on the larger tree / bare rg (p50)",
              value: ratio(confined / bare),
              target: `≤ ${TARGET_RATIO}x`,
              met: confined / bare <= TARGET_RATIO,
            })
          }
        }
      } finally {
        await held.close()
      }
    }
    return {
      name: "search-confined",
      about: `rg through Ripgrep.run, confined and unconfined, against bare rg; medians of ${RUNS} interleaved runs.`,
      tables: [
        {
          title: "per search (p50)",
          columns: ["tree", "search", "bare rg", "unconfined", "confined", "unconf./bare", "conf./bare", "confinement adds"],
          rows,
        },
      ],
      targets,
      notes: confinedAvailable ? [] : ["this kernel has no Landlock: 'confined' ran unconfined"],
    }
  } finally {
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
