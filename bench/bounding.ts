// Bounding one 100 MB output: Output.bound's throughput (measuring it, keeping what does not fit as a managed output
// on disk, building the preview), against a bare Bun.write of the same text in the same process as the floor; and
// the peak RSS of a child process that does only that, against the output size. Two shapes: a string output (the
// same text as content and structured) and a shell-like output (the text, and `{ output, exitCode }` structured).
// Each run is a fresh child (bench/bounding-child.ts) that generates the text itself. The same children also run
// the bounding of the `main` branch's source (extracted with git archive), in alternation, so one bound per
// settlement is compared with what came before in the same run.

import { mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { cleanup, duration, main, megabytes, progress, ratio, type Report, summarize } from "./measure"

const OUTPUT_BYTES = 100_000_000
const RUNS = 7
const TARGET_RSS_FACTOR = 3
const ROOT = join(import.meta.dir, "..")
const SHAPES = ["string", "object"] as const
type Shape = (typeof SHAPES)[number]

interface ChildResult {
  readonly bytes: number
  readonly boundMs: number
  readonly rawWriteMs: number
  readonly rssBase: number
  readonly rssWithText: number
  readonly peakRss: number
  readonly previewBytes: number
  readonly outputs: number
}

const child = async (directory: string, shape: Shape, root: string): Promise<ChildResult> => {
  const spawned = Bun.spawn(
    [process.execPath, join(import.meta.dir, "bounding-child.ts"), String(OUTPUT_BYTES), directory, shape, root],
    { cwd: tmpdir(), stdout: "pipe", stderr: "pipe" },
  )
  const [code, stdout, stderr] = await Promise.all([
    spawned.exited,
    new Response(spawned.stdout).text(),
    new Response(spawned.stderr).text(),
  ])
  if (code !== 0) throw new Error(`bounding child failed (exit ${code}):\n${stderr}`)
  return JSON.parse(stdout) as ChildResult
}

/** The `main` branch's source tree in a temp directory (sharing this node_modules), or undefined without git. */
const previousTree = async (into: string): Promise<string | undefined> => {
  const archive = Bun.spawn(["git", "-C", ROOT, "archive", "--format=tar", "main", "src"], { stdout: "pipe", stderr: "pipe" })
  const tar = Bun.spawn(["tar", "-x", "-C", into], { stdin: archive.stdout, stderr: "pipe" })
  if ((await archive.exited) !== 0 || (await tar.exited) !== 0) return undefined
  symlinkSync(join(ROOT, "node_modules"), join(into, "node_modules"))
  return into
}

const throughput = (ms: number) => OUTPUT_BYTES / 1e6 / (ms / 1000)
const mbps = (value: number) => `${value.toFixed(0)} MB/s`

const memory = (samples: ReadonlyArray<number>) => {
  const summary = summarize(samples)
  return [megabytes(summary.p50), `${megabytes(summary.min)} / ${megabytes(summary.max)}`, ratio(summary.p50 / OUTPUT_BYTES)]
}

export const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-bounding-"))
  try {
    const previous = await previousTree(mkdtempSync(join(root, "main-")))
    const trees = previous === undefined ? [["this tree", ROOT] as const] : [["this tree", ROOT] as const, ["main", previous] as const]
    const results = new Map<string, Array<ChildResult>>()
    for (let run = 0; run < RUNS; run++) {
      for (const shape of SHAPES) {
        // Alternating, so drift on the shared machine lands on both trees alike.
        for (const [label, tree] of run % 2 === 0 ? trees : [...trees].reverse()) {
          progress(`bounding: ${megabytes(OUTPUT_BYTES)} ${shape} output with ${label}, run ${run + 1}/${RUNS}`)
          const directory = join(root, `run-${run}-${shape}-${label.replace(/\W/g, "")}`)
          const key = `${shape}/${label}`
          results.set(key, [...(results.get(key) ?? []), await child(directory, shape, tree)])
          rmSync(directory, { recursive: true, force: true })
        }
      }
    }

    const of = (shape: Shape, label: string) => results.get(`${shape}/${label}`) ?? []
    /** Each run's two trees ran back to back: the median of their time ratios is the least drift-prone figure. */
    const pairedRatio = (shape: Shape) => {
      const main = of(shape, "main")
      return summarize(of(shape, "this tree").map((result, index) => result.boundMs / main[index]!.boundMs)).p50
    }
    const rows: Array<Array<string>> = []
    const comparisons: Array<string> = []
    for (const shape of SHAPES) {
      for (const [label] of trees) {
        const runs = of(shape, label)
        const bound = summarize(runs.map((result) => throughput(result.boundMs)))
        rows.push([
          `${shape}, ${label}`,
          mbps(bound.p50),
          `${mbps(bound.min)} / ${mbps(bound.max)}`,
          duration(OUTPUT_BYTES / 1e3 / bound.p50),
          String(runs[0]?.outputs ?? 0),
        ])
      }
      if (previous !== undefined) {
        const now = summarize(of(shape, "this tree").map((result) => result.boundMs)).p50
        const before = summarize(of(shape, "main").map((result) => result.boundMs)).p50
        comparisons.push(
          `${shape} output: this tree takes ${ratio(now / before)} the time of main (p50 over p50); ` +
            `${ratio(pairedRatio(shape))} as the median of the runs' side-by-side pairs`,
        )
      }
    }
    const current = [...SHAPES.flatMap((shape) => of(shape, "this tree"))]
    const raw = summarize(current.map((result) => throughput(result.rawWriteMs)))
    rows.push(["bare Bun.write of the text (floor)", mbps(raw.p50), `${mbps(raw.min)} / ${mbps(raw.max)}`, duration(OUTPUT_BYTES / 1e3 / raw.p50), "-"])
    // The memory target is the string output's (one text in memory); a structured object also holds its JSON.
    const worst = Math.max(...of("string", "this tree").map((result) => result.peakRss)) / OUTPUT_BYTES
    const slowest = previous === undefined ? undefined : Math.max(...SHAPES.map(pairedRatio))
    return {
      name: "bounding: one 100 MB output",
      about:
        `${RUNS} fresh child processes per shape and tree, each generating ${megabytes(OUTPUT_BYTES)} of 100-byte ` +
        `lines in memory and bounding it once: a string output (content and structured are that one string) and ` +
        `a shell-like output (the text as content, { output, exitCode } as structured)` +
        (previous === undefined ? "." : `; the same with the main branch's bounding, alternating.`),
      tables: [
        {
          title: "throughput (MB = 10^6 bytes)",
          columns: ["output, tree", "p50", "min / max", "p50 time", "managed outputs"],
          rows,
        },
        {
          title: "child process memory",
          columns: ["measure", "p50", "min / max", "p50 / output size"],
          rows: [
            ["RSS before generating the text", ...memory(current.map((result) => result.rssBase))],
            ["RSS holding the text", ...memory(current.map((result) => result.rssWithText))],
            ...SHAPES.flatMap((shape) =>
              trees.map(([label]) => [`peak RSS (VmHWM), ${shape}, ${label}`, ...memory(of(shape, label).map((result) => result.peakRss))]),
            ),
          ],
        },
      ],
      targets: [
        {
          measure: "peak RSS / output size, string output, worst of runs",
          value: ratio(worst),
          target: `< ${ratio(TARGET_RSS_FACTOR)}`,
          met: worst < TARGET_RSS_FACTOR,
        },
        ...(slowest === undefined
          ? []
          : [
              {
                measure: "one bound per settlement / main's bounding, time, worst shape (median of paired runs)",
                value: ratio(slowest),
                target: `<= ${ratio(1)} (within noise)`,
                met: slowest <= 1.1,
              },
            ]),
      ],
      notes: [
        `the preview sent to the model is ${current[0]!.previewBytes.toLocaleString("en")} bytes; the managed output ` +
          `keeps all ${OUTPUT_BYTES.toLocaleString("en")}`,
        ...comparisons,
      ],
    }
  } finally {
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
