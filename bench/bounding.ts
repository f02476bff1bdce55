// Bounding one 100 MB text output: Output.bound's throughput (measuring it, keeping the full text as a managed
// output on disk, building the head + tail preview), against a bare Bun.write of the same text in the same process
// as the floor; and the peak RSS of a child process that does only that, against the output size. Each run is a
// fresh child (bench/bounding-child.ts) that generates the text itself.

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { cleanup, duration, main, megabytes, progress, ratio, type Report, summarize } from "./measure"

const OUTPUT_BYTES = 100_000_000
const RUNS = 5
const TARGET_RSS_FACTOR = 3

interface ChildResult {
  readonly bytes: number
  readonly boundMs: number
  readonly rawWriteMs: number
  readonly rssBase: number
  readonly rssWithText: number
  readonly peakRss: number
  readonly previewBytes: number
}

const child = async (directory: string): Promise<ChildResult> => {
  const spawned = Bun.spawn([process.execPath, join(import.meta.dir, "bounding-child.ts"), String(OUTPUT_BYTES), directory], {
    cwd: tmpdir(),
    stdout: "pipe",
    stderr: "pipe",
  })
  const [code, stdout, stderr] = await Promise.all([
    spawned.exited,
    new Response(spawned.stdout).text(),
    new Response(spawned.stderr).text(),
  ])
  if (code !== 0) throw new Error(`bounding child failed (exit ${code}):\n${stderr}`)
  return JSON.parse(stdout) as ChildResult
}

const throughput = (ms: number) => OUTPUT_BYTES / 1e6 / (ms / 1000)

const memory = (samples: ReadonlyArray<number>) => {
  const summary = summarize(samples)
  return [megabytes(summary.p50), `${megabytes(summary.min)} / ${megabytes(summary.max)}`, ratio(summary.p50 / OUTPUT_BYTES)]
}

export const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-bounding-"))
  try {
    const results: Array<ChildResult> = []
    for (let run = 0; run < RUNS; run++) {
      progress(`bounding: ${megabytes(OUTPUT_BYTES)} in a fresh process, run ${run + 1}/${RUNS}`)
      const directory = join(root, `run-${run}`)
      results.push(await child(directory))
      rmSync(directory, { recursive: true, force: true })
    }

    const bound = summarize(results.map((result) => throughput(result.boundMs)))
    const raw = summarize(results.map((result) => throughput(result.rawWriteMs)))
    const peak = summarize(results.map((result) => result.peakRss))
    const worst = peak.max / OUTPUT_BYTES
    const mbps = (value: number) => `${value.toFixed(0)} MB/s`
    return {
      name: "bounding: one 100 MB text",
      about:
        `${RUNS} fresh child processes, each generating ${megabytes(OUTPUT_BYTES)} of 100-byte lines in memory and ` +
        `bounding it once (content and structured output are that one string, as for a string-output tool).`,
      tables: [
        {
          title: "throughput (MB = 10^6 bytes)",
          columns: ["step", "p50", "min / max", "p50 time"],
          rows: [
            ["Output.bound (measure, keep on disk, preview)", mbps(bound.p50), `${mbps(bound.min)} / ${mbps(bound.max)}`, duration(OUTPUT_BYTES / 1e3 / bound.p50)],
            ["bare Bun.write of the same text (floor)", mbps(raw.p50), `${mbps(raw.min)} / ${mbps(raw.max)}`, duration(OUTPUT_BYTES / 1e3 / raw.p50)],
          ],
        },
        {
          title: "child process memory",
          columns: ["measure", "p50", "min / max", "p50 / output size"],
          rows: [
            ["RSS before generating the text", ...memory(results.map((result) => result.rssBase))],
            ["RSS holding the text", ...memory(results.map((result) => result.rssWithText))],
            ["peak RSS (VmHWM) after bounding", ...memory(results.map((result) => result.peakRss))],
          ],
        },
      ],
      targets: [
        {
          measure: "peak RSS / output size, worst of runs",
          value: ratio(worst),
          target: `< ${ratio(TARGET_RSS_FACTOR)}`,
          met: worst < TARGET_RSS_FACTOR,
        },
      ],
      notes: [
        `the preview sent to the model is ${results[0]!.previewBytes.toLocaleString("en")} bytes; the managed output ` +
          `file holds all ${OUTPUT_BYTES.toLocaleString("en")}`,
        `bounding costs ${ratio(raw.p50 / bound.p50)} the time of the bare write (p50); peak RSS over the RSS ` +
          `holding the text: ${megabytes(peak.p50 - summarize(results.map((result) => result.rssWithText)).p50)} (p50)`,
      ],
    }
  } finally {
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
