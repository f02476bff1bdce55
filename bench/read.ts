// Reading pages of large files with the read built-in, each in a fresh child process (bench/read-child.ts) so its
// peak RSS is clean: the first page of a 2 MB text file, the first page of a 2 GB file (1 MB of text lines, then
// extended to 2 GB without writing: only the first page is text, and only it should be read), and the last page of
// a 256 MB text file (streamed through). Reference: the naive way, reading the 256 MB file whole into a string.
// Target: peak RSS independent of file size (each within 1.1x of the 2 MB file's).

import { closeSync, mkdtempSync, openSync, truncateSync, writeFileSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { Read } from "../src/builtin/read"
import { Kernel } from "../src/host/kernel"
import { Location } from "../src/location/location"
import { Permission } from "../src/permission/permission"
import { Registry } from "../src/registry/registry"
import { Settler } from "../src/settlement/settler"
import { Shell } from "../src/shell/shell"
import { Approvals } from "../src/store/approvals"
import { Reads } from "../src/store/reads"
import { Store } from "../src/store/store"
import { cleanup, duration, main, megabytes, progress, ratio, type Report, summarize } from "./measure"

const RUNS = 5
const TARGET_RSS_RATIO = 1.1
const LINE_BYTES = 100
const SMALL_BYTES = 2_000_000
const HEAD_BYTES = 1_000_000
const HUGE_BYTES = 2 * 1024 ** 3
const LONG_BYTES = 256_000_000

interface ChildResult {
  readonly readMs: number
  readonly rssBase: number
  readonly peakRss: number
  readonly lines: number
}

/** `bytes` of numbered 100-byte text lines, written a megabyte at a time. */
const writeText = (path: string, bytes: number) => {
  const line = (index: number) => `line ${String(index).padStart(9, "0")}: ${"the quick brown fox jumps over the lazy dog ".repeat(3)}`.slice(0, LINE_BYTES - 1)
  const fd = openSync(path, "w")
  try {
    let index = 0
    for (let written = 0; written < bytes; ) {
      const lines: Array<string> = []
      for (let count = 0; count < 10_000 && written + lines.length * LINE_BYTES < bytes; count++) lines.push(line(++index))
      const block = `${lines.join("\n")}\n`
      writeSync(fd, block)
      written += block.length
    }
  } finally {
    closeSync(fd)
  }
}

const child = async (mode: "read" | "whole", file: string, offset: number): Promise<ChildResult> => {
  const spawned = Bun.spawn([process.execPath, join(import.meta.dir, "read-child.ts"), mode, file, String(offset)], {
    cwd: tmpdir(),
    stdout: "pipe",
    stderr: "pipe",
  })
  const [code, stdout, stderr] = await Promise.all([
    spawned.exited,
    new Response(spawned.stdout).text(),
    new Response(spawned.stderr).text(),
  ])
  if (code !== 0) throw new Error(`read child failed (exit ${code}):\n${stderr}`)
  return JSON.parse(stdout) as ChildResult
}

const TRACKING_CALLS = 600
const TRACKING_VARIANTS = ["off", "memory", "sqlite"] as const
type Tracking = (typeof TRACKING_VARIANTS)[number]

/**
 * A kernel whose `read` records what the session read nowhere, in memory, or in the durable SQLite store (as
 * `core exec` and `core serve` do); answers how to settle one read of `file`, and how to dispose of it.
 */
const trackingKernel = async (root: string, file: string, reads: Tracking) => {
  const permission = Permission.layer({ project: root, configured: { rules: [], agents: new Map() } }).pipe(
    Layer.provide(Approvals.layerMemory),
  )
  const kernel = Kernel.layer({ store: Store.layerMemory, outputsDirectory: join(root, "outputs"), permission })
  const store = reads === "sqlite" ? Reads.layer(join(root, `core-${crypto.randomUUID()}.db`)) : Reads.layerMemory
  const builtin = Layer.effectDiscard(
    Effect.gen(function* () {
      const registry = yield* Registry.Service
      const service = yield* Permission.Service
      const shell = yield* Shell.Service
      const tracked = yield* Reads.Service
      const services = { directory: service.project, permission: service, shell, ...(reads === "off" ? {} : { reads: tracked }) }
      yield* registry.tools.register({ read: Read.make(services) }).pipe(Effect.orDie)
    }),
  ).pipe(Layer.provide(Shell.layer()), Layer.provide(store))
  const runtime = ManagedRuntime.make(Location.layer(root, builtin).pipe(Layer.provideMerge(kernel)))
  const turn = await runtime.runPromise(
    Effect.gen(function* () {
      return yield* (yield* Settler.Service).materialize()
    }),
  )
  let id = 0
  const call = async () => {
    const started = performance.now()
    const { settlement } = await runtime.runPromise(
      turn.settle({ sessionID: "s", agent: "build", assistantMessageID: "m", toolCallID: `c${id++}`, name: "read", input: { filePath: file } }),
    )
    if (settlement.status !== "success") throw new Error(`read failed: ${JSON.stringify(settlement.error)}`)
    return performance.now() - started
  }
  return { call, dispose: () => runtime.dispose() }
}

/** Per-call times of settling `read` on `file` with each kind of tracking, the kinds interleaved call by call. */
export const trackingCost = async (root: string, file: string): Promise<Record<Tracking, Array<number>>> => {
  const kernels = await Promise.all(TRACKING_VARIANTS.map((reads) => trackingKernel(root, file, reads)))
  try {
    for (let warm = 0; warm < 30; warm++) for (const kernel of kernels) await kernel.call()
    const times: Record<Tracking, Array<number>> = { off: [], memory: [], sqlite: [] }
    for (let run = 0; run < TRACKING_CALLS; run++) {
      for (const [index, kernel] of kernels.entries()) times[TRACKING_VARIANTS[index]!].push(await kernel.call())
    }
    return times
  } finally {
    for (const kernel of kernels) await kernel.dispose()
  }
}

export const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-read-"))
  try {
    progress("read: writing a 2 MB file, a 2 GB file (1 MB of text, the rest unwritten) and a 256 MB file")
    const small = join(root, "small.txt")
    writeText(small, SMALL_BYTES)
    const huge = join(root, "huge.txt")
    writeText(huge, HEAD_BYTES)
    truncateSync(huge, HUGE_BYTES)
    const long = join(root, "long.txt")
    writeText(long, LONG_BYTES)
    const lastPage = Math.floor(LONG_BYTES / LINE_BYTES) - 1_000

    const cases = [
      { label: "2 MB file, first page", mode: "read" as const, file: small, offset: 1, bytes: SMALL_BYTES },
      { label: "2 GB file, first page", mode: "read" as const, file: huge, offset: 1, bytes: HUGE_BYTES },
      { label: `256 MB file, page at line ${lastPage.toLocaleString("en")}`, mode: "read" as const, file: long, offset: lastPage, bytes: LONG_BYTES },
      { label: "reference: 256 MB read whole as a string", mode: "whole" as const, file: long, offset: lastPage, bytes: LONG_BYTES },
    ]
    const results = new Map<string, Array<ChildResult>>(cases.map((entry) => [entry.label, []]))
    for (let run = 0; run < RUNS; run++) {
      for (const entry of cases) {
        progress(`read: ${entry.label}, run ${run + 1}/${RUNS}`)
        results.get(entry.label)!.push(await child(entry.mode, entry.file, entry.offset))
      }
    }
    const peak = (label: string) => summarize(results.get(label)!.map((result) => result.peakRss))
    const base = peak(cases[0]!.label).p50
    const rows = cases.map((entry) => {
      const samples = results.get(entry.label)!
      const time = summarize(samples.map((result) => result.readMs))
      const rss = summarize(samples.map((result) => result.peakRss))
      const growth = summarize(samples.map((result) => result.peakRss - result.rssBase))
      return [
        entry.label,
        `${samples[0]!.lines} lines`,
        `${duration(time.p50)} (${duration(time.min)} / ${duration(time.max)})`,
        `${megabytes(rss.p50)} (${megabytes(rss.min)} / ${megabytes(rss.max)})`,
        megabytes(growth.p50),
        ratio(rss.p50 / base),
      ]
    })
    const targets = cases.slice(1, 3).map((entry) => {
      const value = peak(entry.label).p50 / base
      return {
        measure: `${entry.label}: peak RSS / 2 MB file's peak RSS (p50)`,
        value: ratio(value),
        target: `≤ ${TARGET_RSS_RATIO}x`,
        met: value <= TARGET_RSS_RATIO,
      }
    })
    progress("read: the cost of read tracking per call")
    const trackingRoot = mkdtempSync(join(tmpdir(), "core-bench-read-tracking-"))
    writeFileSync(join(trackingRoot, "small.ts"), "export const x = 1 // a small source file\n".repeat(100))
    writeText(join(trackingRoot, "page.txt"), 150_000)
    const trackingRows: Array<Array<string>> = []
    for (const [file, label] of [["small.ts", "4 KB file"], ["page.txt", "150 KB file (more than one read block)"]] as const) {
      const times = await trackingCost(trackingRoot, file)
      const off = summarize(times.off)
      for (const reads of TRACKING_VARIANTS) {
        const summary = summarize(times[reads])
        trackingRows.push([
          `${label}, ${reads === "off" ? "not tracked" : reads === "memory" ? "tracked in memory" : "tracked in SQLite (WAL)"}`,
          `${duration(summary.p50)} (${duration(summary.min)} / ${duration(summary.max)})`,
          reads === "off" ? "" : `${((summary.p50 - off.p50) * 1000).toFixed(0)} µs`,
        ])
      }
    }
    cleanup([trackingRoot])
    return {
      name: "read: pages of large files",
      about:
        `${RUNS} runs of each case, each a fresh child process that settles one read call in process (a kernel with ` +
        "the built-ins) after a warm-up call; peak RSS is the child's VmHWM.",
      tables: [
        {
          title: "one page (MB = 10^6 bytes)",
          columns: ["case", "shown", "read time p50 (min / max)", "peak RSS p50 (min / max)", "peak − RSS before", "vs 2 MB"],
          rows,
        },
        {
          title: `read tracking: one read call settled in process, ${TRACKING_CALLS} calls each, the three interleaved`,
          columns: ["case", "per call p50 (min / max)", "tracking cost p50"],
          rows: trackingRows,
        },
      ],
      targets,
      notes: [
        "the 2 GB file is 1 MB of text lines extended with truncate, so the disk holds 1 MB; a read that went past the " +
          "first page would meet NUL bytes and take seconds.",
      ],
    }
  } finally {
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
