// What every benchmark shares: summarising samples (median, p99, quartiles, extremes), formatting durations and
// sizes, and the report a benchmark hands back (tables, targets, notes). A benchmark file run alone prints its
// report; run with `--json` (as bench/run.ts does) it prints the report as JSON on stdout. Figures only: nothing
// here passes or fails.

import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

export interface Summary {
  readonly n: number
  readonly min: number
  readonly q1: number
  readonly p50: number
  readonly q3: number
  readonly p99: number
  readonly max: number
  readonly mean: number
}

/** The `q` quantile (0..1) of sorted samples, interpolating between neighbours. */
const quantile = (sorted: ReadonlyArray<number>, q: number): number => {
  if (sorted.length === 0) return Number.NaN
  const position = (sorted.length - 1) * q
  const below = Math.floor(position)
  const above = Math.min(below + 1, sorted.length - 1)
  return sorted[below]! + (sorted[above]! - sorted[below]!) * (position - below)
}

export const summarize = (samples: ReadonlyArray<number>): Summary => {
  const sorted = Float64Array.from(samples).sort()
  const values = Array.from(sorted)
  let total = 0
  for (const value of values) total += value
  return {
    n: values.length,
    min: values[0] ?? Number.NaN,
    q1: quantile(values, 0.25),
    p50: quantile(values, 0.5),
    q3: quantile(values, 0.75),
    p99: quantile(values, 0.99),
    max: values[values.length - 1] ?? Number.NaN,
    mean: total / values.length,
  }
}

export const median = (samples: ReadonlyArray<number>): number => summarize(samples).p50

/** A duration given in milliseconds, in the unit that reads best. */
export const duration = (ms: number): string => {
  if (!Number.isFinite(ms)) return "n/a"
  if (ms < 1) return `${(ms * 1000).toFixed(ms < 0.01 ? 2 : 1)} µs`
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 2 : 1)} ms`
  return `${(ms / 1000).toFixed(2)} s`
}

/** Bytes in decimal megabytes (10^6), as throughput and sizes are quoted here. */
export const megabytes = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`

export const ratio = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(value < 10 ? 2 : 1)}x` : "n/a")

export interface Table {
  readonly title: string
  readonly columns: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
}

export interface Target {
  /** What is compared, e.g. "core (SQLite) p50 / MCP p50". */
  readonly measure: string
  readonly value: string
  readonly target: string
  readonly met: boolean
}

export interface Report {
  readonly name: string
  /** What was measured against what, in a line or two. */
  readonly about: string
  readonly tables: ReadonlyArray<Table>
  readonly targets: ReadonlyArray<Target>
  readonly notes: ReadonlyArray<string>
}

const renderTable = (table: Table): string => {
  const widths = table.columns.map((column, index) =>
    Math.max(column.length, ...table.rows.map((row) => (row[index] ?? "").length)),
  )
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((cell, index) => (index === 0 ? cell.padEnd(widths[index]!) : cell.padStart(widths[index]!))).join("  ")
  return [table.title, line(table.columns), widths.map((width) => "-".repeat(width)).join("  "), ...table.rows.map(line)]
    .map((text) => `  ${text}`.trimEnd())
    .join("\n")
}

export const renderTargets = (targets: ReadonlyArray<Target>, prefix = ""): Array<string> =>
  targets.map((target) => `  ${target.met ? "met    " : "NOT met"}  ${prefix}${target.measure}: ${target.value} (target ${target.target})`)

export const render = (report: Report): string =>
  [
    `== ${report.name} ==`,
    report.about,
    "",
    ...report.tables.flatMap((table) => [renderTable(table), ""]),
    ...report.notes.map((note) => `  note: ${note}`),
    ...(report.notes.length > 0 ? [""] : []),
    ...renderTargets(report.targets),
  ].join("\n")

/** Progress for a person watching: stderr, so `--json` output stays clean. */
export const progress = (message: string): void => {
  process.stderr.write(`  … ${message}\n`)
}

/** Removes a benchmark's temporary directories however it ends. */
export const cleanup = (paths: ReadonlyArray<string>): void => {
  for (const path of paths) rmSync(path, { recursive: true, force: true })
}

/**
 * The first line `child` prints on stdout (a server's ready line), its stdout left to read on; `what` names the
 * process should it exit first.
 */
export const firstLine = async (
  child: { readonly stdout: ReadableStream<Uint8Array>; readonly exited: Promise<number> },
  what: string,
): Promise<string> => {
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let text = ""
  try {
    while (!text.includes("\n")) {
      const chunk = await reader.read()
      if (chunk.done) throw new Error(`${what} exited before it was ready (code ${await child.exited})`)
      text += decoder.decode(chunk.value, { stream: true })
    }
  } finally {
    reader.releaseLock()
  }
  return text.slice(0, text.indexOf("\n"))
}

let logDirectory: string | undefined
let served = 0
/** A directory for servers' stderr, removed as this process exits. */
const logs = (): string => {
  if (logDirectory === undefined) {
    const made = mkdtempSync(join(tmpdir(), "core-bench-servers-"))
    logDirectory = made
    process.on("exit", () => rmSync(made, { recursive: true, force: true }))
  }
  return logDirectory
}

/**
 * Spawns a server that prints one JSON line on stdout once ready, and answers that line. Its stderr (core serve writes
 * a line per settled call there, as it does by default, and a run makes hundreds of thousands) goes to a file, whose
 * end is shown should the server exit before it is ready.
 */
export const spawnServer = async (argv: ReadonlyArray<string>, env: Record<string, string | undefined>) => {
  const log = join(logs(), `${++served}.log`)
  const child = Bun.spawn([...argv], { env, stdin: "ignore", stdout: "pipe", stderr: Bun.file(log) })
  try {
    return { child, log, ready: JSON.parse(await firstLine(child, argv.join(" "))) as Record<string, string> }
  } catch (cause) {
    const said = existsSync(log) ? readFileSync(log, "utf8").slice(-4_000) : ""
    throw new Error(`${(cause as Error).message}${said === "" ? "" : `; its stderr ended:\n${said}`}`)
  }
}

/** Resident memory of a process, in bytes. */
export const rss = (pid: number): number => {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return match === null ? Number.NaN : Number(match[1]) * 1024
}

/** Entry point of a benchmark file run alone: prints the report, or its JSON with `--json`. */
export const main = async (measure: () => Promise<Report>): Promise<void> => {
  const report = await measure()
  if (process.argv.includes("--json")) process.stdout.write(`${JSON.stringify(report)}\n`)
  else process.stdout.write(`${render(report)}\n`)
}

/** Builds the compiled core from the current sources into `outfile` (never dist/core, which may be older). */
export const buildCore = async (outfile: string): Promise<string> => {
  const root = join(import.meta.dir, "..")
  const child = Bun.spawn([process.execPath, join(root, "build.ts"), "--outfile", outfile], {
    cwd: root,
    stdout: "pipe",
    stderr: "pipe",
  })
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()])
  if (code !== 0) throw new Error(`building core failed (exit ${code}):\n${stderr}`)
  return outfile
}

/** The version of a package installed in node_modules, as a report names what it compared against. */
export const versionOf = (name: string): string => {
  try {
    return JSON.parse(readFileSync(join(import.meta.dir, "..", "node_modules", name, "package.json"), "utf8")).version
  } catch {
    return "unknown"
  }
}

/** A one-tool Location's `tools/echo.ts`: the trivial tool benchmarks settle. */
export const ECHO_TOOL = `import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"

export default Tool.make({
  description: "Echo text back",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(input.text),
})
`
