// Image normalization of a 12-megapixel PNG (4000×3000, photo-like noise, about 33 MB): `core exec read` of it
// through the compiled binary (decode, resize to 2000 px, JPEG encode, base64, settlement JSON) against
// `core exec read` of a 40×30 PNG that passes untouched, spawn to exit, with each process's peak RSS; and the
// normalization alone in process (Image.normalize), so the binary's start-up is not in its figure. The codec is
// Bun's built-in `Bun.Image` (libspng, libjpeg-turbo, libwebp linked into the runtime): the binary size it adds is
// none; the binary's size is printed for reference. Targets: the 12 MP read within 3 s (p50), peak RSS under 512 MB.

import { mkdtempSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { Image } from "../src/output/image"
import { png } from "../test/support/image"
import { buildCore, cleanup, duration, main, megabytes, progress, ratio, type Report, summarize } from "./measure"

const RUNS = 5
const TARGET_MS = 3_000
const TARGET_RSS_BYTES = 512 * 1024 * 1024

interface Run {
  readonly ms: number
  readonly rss: number
  readonly note: string
}

const execRead = async (binary: string, location: string, file: string, home: string): Promise<Run> => {
  const started = performance.now()
  const child = Bun.spawn([binary, "exec", "read", "--input", JSON.stringify({ filePath: file }), "--location", location], {
    cwd: location,
    env: { ...process.env, CORE_HOME: home, CORE_DATA_DIR: join(home, "data") },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  })
  const [code, stdout] = await Promise.all([child.exited, new Response(child.stdout).text()])
  const ms = performance.now() - started
  if (code !== 0) throw new Error(`core exec read ${file} failed (exit ${code}): ${stdout.slice(0, 300)}`)
  const settlement = JSON.parse(stdout) as { content: ReadonlyArray<{ type: string; text?: string }> }
  const note = settlement.content.find((part) => part.type === "text")?.text ?? "(untouched)"
  return { ms, rss: child.resourceUsage()?.maxRSS ?? Number.NaN, note }
}

await main(async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-image-"))
  try {
    const location = join(root, "loc")
    const home = join(root, "home")
    for (const directory of [location, home]) Bun.spawnSync(["mkdir", "-p", directory])
    progress("image: making a 12 MP PNG")
    const large = png(4000, 3000)
    writeFileSync(join(location, "large.png"), large)
    writeFileSync(join(location, "small.png"), png(40, 30))
    progress("image: building the binary (build.ts --outfile)")
    const binary = await buildCore(join(root, "core"))

    const largeRuns: Array<Run> = []
    const smallRuns: Array<Run> = []
    await execRead(binary, location, "small.png", home) // warm-up: the page cache holds the binary
    for (let run = 0; run < RUNS; run++) {
      progress(`image: run ${run + 1} of ${RUNS}`)
      largeRuns.push(await execRead(binary, location, "large.png", home))
      smallRuns.push(await execRead(binary, location, "small.png", home))
    }

    const inProcess: Array<number> = []
    const part = { type: "file" as const, data: large.toString("base64"), mime: "image/png" }
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now()
      await Effect.runPromise(Image.normalize(part, Image.DEFAULT_LIMITS))
      inProcess.push(performance.now() - started)
    }

    const largeMs = summarize(largeRuns.map((run) => run.ms))
    const smallMs = summarize(smallRuns.map((run) => run.ms))
    const normalizeMs = summarize(inProcess)
    progress(`image: peak RSS per run: large ${largeRuns.map((run) => megabytes(run.rss)).join(", ")}; small ${smallRuns.map((run) => megabytes(run.rss)).join(", ")}`)
    const largeRss = Math.max(...largeRuns.map((run) => run.rss))
    const smallRss = Math.max(...smallRuns.map((run) => run.rss))
    const row = (name: string, ms: ReturnType<typeof summarize>, rss: number) => [
      name,
      duration(ms.p50),
      `${duration(ms.min)}–${duration(ms.max)}`,
      Number.isFinite(rss) ? megabytes(rss) : "n/a",
    ]
    return {
      name: "image: normalizing a 12 MP PNG",
      about:
        `core exec read of a 4000×3000 PNG (${megabytes(large.length)}) through the compiled binary, resized to ` +
        `2000 px and re-encoded, against read of a 40×30 PNG passed untouched; ${RUNS} runs each, spawn to exit.`,
      tables: [
        {
          title: "spawn to exit, and the normalization alone in process",
          columns: ["what", "p50", "range", "peak RSS"],
          rows: [
            row("core exec read large.png (12 MP)", largeMs, largeRss),
            row("core exec read small.png (untouched)", smallMs, smallRss),
            row("Image.normalize in process (12 MP)", normalizeMs, Number.NaN),
          ],
        },
      ],
      targets: [
        {
          measure: "core exec read of a 12 MP PNG, p50",
          value: duration(largeMs.p50),
          target: `≤ ${duration(TARGET_MS)}`,
          met: largeMs.p50 <= TARGET_MS,
        },
        {
          measure: "its peak RSS",
          value: megabytes(largeRss),
          target: `≤ ${megabytes(TARGET_RSS_BYTES)}`,
          met: largeRss <= TARGET_RSS_BYTES,
        },
      ],
      notes: [
        `the 12 MP read costs ${ratio(largeMs.p50 / smallMs.p50)} the untouched one's time and ${megabytes(largeRss - smallRss)} ` +
          `more peak RSS (the untouched read's is the binary's own, its mapped executable included); its note: ${largeRuns[0]!.note}`,
        `binary size added by the codec: 0 bytes (Bun.Image is part of the runtime); the binary is ${megabytes(statSync(binary).size)}`,
      ],
    }
  } finally {
    cleanup([root])
  }
})
