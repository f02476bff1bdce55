// The shell producer: reading 64 MiB and 1 GiB of output through it in fresh child processes (throughput and peak
// RSS, beside a bare Bun.spawn reader loop that keeps nothing), the same through `dist/core exec bash` end to end,
// and the spawn overhead of `true` through the producer (per-call supervisor, with and without the Landlock sandbox,
// with core.json, tools/, plugins/ and .core/ mounted read-only, and without supervisor) against a bare `Bun.spawn(["true"])` awaited, interleaved in this run. Targets: ≥ 1 GB/s in-process, peak RSS flat with output size, spawn overhead within 1.5x.

import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { Shell } from "../src/shell/shell"
import { buildCore, cleanup, duration, main, megabytes, progress, ratio, type Report, summarize } from "./measure"

const ROOT = join(import.meta.dir, "..")
const SIZES = [64 * 1024 * 1024, 1024 * 1024 * 1024] as const
const RUNS = 3
const SPAWNS = 200
const TARGET_BYTES_PER_SECOND = 1e9
/** How much more peak RSS reading 1 GiB may take than reading 64 MiB: flat (read chunks are freed as they go). */
const TARGET_RSS_GROWTH_BYTES = 16e6
const TARGET_SPAWN_RATIO = 1.5
/** The pause before each timed spawn, once the spare supervisor is up: the previous call's processes have gone. */
const QUIET_MS = 20
/** The producer's throughput against the bare reader loop's, which keeps nothing: the floor Bun allows. */
const TARGET_FLOOR_SHARE = 0.9

interface Sample {
  readonly ms: number
  readonly peakRss: number
  /** Sampled from /proc (core exec only): the highest anonymous and file-backed resident memory seen. */
  readonly peakAnon?: number
  readonly peakFile?: number
}

/** How often a `core exec`'s /proc/<pid>/status is read for its anonymous and file-backed resident memory. */
const SAMPLE_EVERY_MS = 10

/** RssAnon and RssFile of a process in bytes, or undefined once it is gone (or without /proc). */
const residentOf = (pid: number): { readonly anon: number; readonly file: number } | undefined => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN) * 1024
    return { anon: field("RssAnon"), file: field("RssFile") }
  } catch {
    return undefined
  }
}

const child = async (mode: "producer" | "bare", bytes: number): Promise<Sample> => {
  const process_ = Bun.spawn([process.execPath, join(import.meta.dir, "shell-child.ts"), mode, String(bytes)], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "inherit",
  })
  const [code, stdout] = await Promise.all([process_.exited, new Response(process_.stdout).text()])
  if (code !== 0) throw new Error(`shell-child ${mode} ${bytes} failed (exit ${code})`)
  return JSON.parse(stdout) as Sample
}

/** One `core exec bash` reading `bytes`: wall time of the whole process and its peak RSS. */
const exec = async (core: string, root: string, bytes: number): Promise<Sample> => {
  const location = mkdtempSync(join(root, "loc-"))
  const started = performance.now()
  const process_ = Bun.spawn(
    [core, "exec", "bash", "--input", JSON.stringify({ command: `head -c ${bytes} /dev/zero` }), "--location", location],
    {
      env: { ...process.env, CORE_DATA_DIR: mkdtempSync(join(root, "data-")), CORE_HOME: mkdtempSync(join(root, "home-")) },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    },
  )
  // Sampled, so a peak shorter than the interval can be missed: the split only, the total is the kernel's own peak.
  let peakAnon = 0
  let peakFile = 0
  const sampler = setInterval(() => {
    const resident = residentOf(process_.pid)
    // A process that has exited but is not yet reaped has a status without them.
    if (resident === undefined || !Number.isFinite(resident.anon) || !Number.isFinite(resident.file)) return
    peakAnon = Math.max(peakAnon, resident.anon)
    peakFile = Math.max(peakFile, resident.file)
  }, SAMPLE_EVERY_MS)
  const [code, stdout] = await Promise.all([process_.exited, new Response(process_.stdout).text(), new Response(process_.stderr).text()])
  clearInterval(sampler)
  const ms = performance.now() - started
  if (code !== 0) throw new Error(`core exec bash failed (exit ${code}): ${stdout.slice(0, 500)}`)
  const settlement = JSON.parse(stdout) as { content: ReadonlyArray<{ text?: string }> }
  if (!settlement.content.some((part) => part.text?.includes(`stdout: ${bytes.toLocaleString("en-US")} bytes`))) {
    throw new Error("the settlement does not report the bytes read")
  }
  return { ms, peakRss: process_.resourceUsage()?.maxRSS ?? Number.NaN, peakAnon, peakFile }
}

const spawnOverhead = async () => {
  const records = mkdtempSync(join(tmpdir(), "core-bench-runs-"))
  const cwd = mkdtempSync(join(tmpdir(), "core-bench-loc-"))
  // A Location with core's configuration in it: the supervisor also mounts those entries read-only.
  const configured = mkdtempSync(join(tmpdir(), "core-bench-conf-"))
  try {
    return await spawnsIn(records, cwd, configured)
  } finally {
    cleanup([records, cwd, configured])
  }
}

const spawnsIn = async (records: string, cwd: string, configured: string) => {
  const shell = Shell.make({}, { records })
  writeFileSync(join(configured, "core.json"), "{}")
  for (const entry of ["tools", "plugins", ".core"]) mkdirSync(join(configured, entry))
  const samples = {
    supervised: [] as Array<number>,
    sandboxed: [] as Array<number>,
    guarded: [] as Array<number>,
    group: [] as Array<number>,
    bare: [] as Array<number>,
  }
  const time = async (into: Array<number>, work: () => Promise<unknown>) => {
    // Calls from a model come seconds apart, time enough for the spare supervisor to come up: every timed call,
    // whatever its path, starts on a quiet machine, the spare up and the previous call's processes gone. (Back to
    // back, a call waits for the spare still starting; see `cold`.)
    await Effect.runPromise(shell.warm)
    await Bun.sleep(QUIET_MS)
    const started = performance.now()
    await work()
    into.push(performance.now() - started)
  }
  const once = async () => {
    await time(samples.supervised, () => Effect.runPromise(shell.run({ argv: ["true"], cwd })))
    await time(samples.sandboxed, () =>
      Effect.runPromise(shell.run({ argv: ["true"], cwd, sandbox: { location: cwd, approved: [] } })),
    )
    await time(samples.guarded, () =>
      Effect.runPromise(shell.run({ argv: ["true"], cwd: configured, sandbox: { location: configured, approved: [] } })),
    )
    await time(samples.group, () => Effect.runPromise(shell.run({ argv: ["true"], cwd, supervise: false })))
    await time(samples.bare, () => Bun.spawn(["true"]).exited)
  }
  // The first supervised call starts its supervisor cold; later ones find a spare already up.
  const cold: Array<number> = []
  await time(cold, () => Effect.runPromise(Shell.make({}, { records: cwd }).run({ argv: ["true"], cwd })))
  for (let index = 0; index < 20; index++) await once() // warm up
  for (const list of Object.values(samples)) list.length = 0
  for (let index = 0; index < SPAWNS; index++) await once()
  return {
    cold: cold[0]!,
    supervised: summarize(samples.supervised),
    sandboxed: summarize(samples.sandboxed),
    guarded: summarize(samples.guarded),
    group: summarize(samples.group),
    bare: summarize(samples.bare),
    sandbox: shell.sandbox.active,
  }
}

const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-shell-"))
  try {
    const inProcess: Record<string, Array<Sample>> = {}
    for (const bytes of SIZES) {
      for (const mode of ["producer", "bare"] as const) {
        progress(`shell: ${mode} reading ${megabytes(bytes)}, ${RUNS} runs`)
        const samples: Array<Sample> = []
        for (let run = 0; run < RUNS; run++) samples.push(await child(mode, bytes))
        inProcess[`${mode} ${bytes}`] = samples
      }
    }
    progress("shell: building core from the current sources")
    const core = await buildCore(join(root, "core"))
    const throughCore: Record<number, Array<Sample>> = {}
    for (const bytes of SIZES) {
      progress(`shell: core exec bash reading ${megabytes(bytes)}, ${RUNS} runs`)
      const samples: Array<Sample> = []
      for (let run = 0; run < RUNS; run++) samples.push(await exec(core, root, bytes))
      throughCore[bytes] = samples
    }
    progress(`shell: spawning true ${SPAWNS} times each way, interleaved`)
    const spawn = await spawnOverhead()

    const rate = (bytes: number, samples: ReadonlyArray<Sample>) => summarize(samples.map((sample) => bytes / (sample.ms / 1000)))
    const peak = (samples: ReadonlyArray<Sample>) => summarize(samples.map((sample) => sample.peakRss))
    const speed = (value: number) => `${(value / 1e9).toFixed(2)} GB/s`
    const row = (label: string, bytes: number, samples: ReadonlyArray<Sample>) => {
      const throughput = rate(bytes, samples)
      const rss = peak(samples)
      return [label, megabytes(bytes), speed(throughput.p50), `${speed(throughput.min)} / ${speed(throughput.max)}`, megabytes(rss.p50), megabytes(rss.max)]
    }
    const [small, large] = SIZES
    const producerLarge = rate(large, inProcess[`producer ${large}`]!)
    const floorShare = producerLarge.p50 / rate(large, inProcess[`bare ${large}`]!).p50
    const growthOf = (samples: Record<number, ReadonlyArray<Sample>>) => peak(samples[large]!).max - peak(samples[small]!).p50
    const growth = growthOf({ [small]: inProcess[`producer ${small}`]!, [large]: inProcess[`producer ${large}`]! })
    const bareGrowth = growthOf({ [small]: inProcess[`bare ${small}`]!, [large]: inProcess[`bare ${large}`]! })
    const coreGrowth = growthOf(throughCore)
    // Like against like, beside the target's worst-over-median (which a run-to-run spread alone can push up).
    const coreMedianGrowth = peak(throughCore[large]!).p50 - peak(throughCore[small]!).p50
    const coreWorstGrowth = peak(throughCore[large]!).max - peak(throughCore[small]!).max
    const sampledGrowth = (field: "peakAnon" | "peakFile") =>
      summarize(throughCore[large]!.map((sample) => sample[field] ?? Number.NaN)).p50 -
      summarize(throughCore[small]!.map((sample) => sample[field] ?? Number.NaN)).p50
    const spawnRatio = spawn.supervised.p50 / spawn.bare.p50
    const sandboxRatio = spawn.sandboxed.p50 / spawn.bare.p50
    const spawnRow = (label: string, summary: typeof spawn.bare) => [
      label,
      duration(summary.p50),
      `${duration(summary.q1)} / ${duration(summary.q3)}`,
      `${duration(summary.min)} / ${duration(summary.max)}`,
    ]

    return {
      name: "shell: the process producer",
      about:
        `head -c N /dev/zero read through the producer and a bare reader loop (fresh child process per run, ${RUNS} runs ` +
        `each), through core exec bash end to end, and ${SPAWNS} spawns of true each way, interleaved.`,
      tables: [
        {
          title: "reading output (MB = 10^6 bytes; GB/s = 10^9 bytes/s)",
          columns: ["path", "output", "p50", "min / max", "peak RSS p50", "peak RSS max"],
          rows: [
            ...SIZES.map((bytes) => row("producer (capture 1 MiB per stream, group kill)", bytes, inProcess[`producer ${bytes}`]!)),
            ...SIZES.map((bytes) => row("bare Bun.spawn reader loop (keeps nothing)", bytes, inProcess[`bare ${bytes}`]!)),
            ...SIZES.map((bytes) => row("core exec bash (whole process)", bytes, throughCore[bytes]!)),
          ],
        },
        {
          title: "spawn overhead of `true`",
          columns: ["path", "p50", "q1 / q3", "min / max"],
          rows: [
            spawnRow("Shell.run, per-call supervisor (warm spare), every descendant ended", spawn.supervised),
            spawnRow(`Shell.run, supervisor + Landlock sandbox${spawn.sandbox ? "" : " (no Landlock here: unsandboxed)"}`, spawn.sandboxed),
            spawnRow("Shell.run, sandbox + core.json, tools/, plugins/, .core/ mounted read-only", spawn.guarded),
            spawnRow("Shell.run without supervisor (process group only, as rg runs)", spawn.group),
            spawnRow('bare Bun.spawn(["true"]) awaited', spawn.bare),
          ],
        },
      ],
      targets: [
        {
          measure: `producer throughput reading ${megabytes(large)} (p50)`,
          value: speed(producerLarge.p50),
          target: `≥ ${speed(TARGET_BYTES_PER_SECOND)}`,
          met: producerLarge.p50 >= TARGET_BYTES_PER_SECOND,
        },
        {
          measure: `producer throughput / bare reader loop throughput, ${megabytes(large)} (p50)`,
          value: ratio(floorShare),
          target: `≥ ${ratio(TARGET_FLOOR_SHARE)}`,
          met: floorShare >= TARGET_FLOOR_SHARE,
        },
        {
          measure: `producer peak RSS growth, ${megabytes(large)} (worst) over ${megabytes(small)} (p50)`,
          value: megabytes(growth),
          target: `≤ ${megabytes(TARGET_RSS_GROWTH_BYTES)}`,
          met: growth <= TARGET_RSS_GROWTH_BYTES,
        },
        {
          measure: `core exec bash peak RSS growth, ${megabytes(large)} (worst) over ${megabytes(small)} (p50)`,
          value: megabytes(coreGrowth),
          target: `≤ ${megabytes(TARGET_RSS_GROWTH_BYTES)}`,
          met: coreGrowth <= TARGET_RSS_GROWTH_BYTES,
        },
        {
          measure: "spawn of true: supervised Shell.run p50 / bare Bun.spawn p50",
          value: ratio(spawnRatio),
          target: `≤ ${ratio(TARGET_SPAWN_RATIO)}`,
          met: spawnRatio <= TARGET_SPAWN_RATIO,
        },
        {
          measure: "spawn of true: sandboxed, configuration read-only, Shell.run p50 / bare Bun.spawn p50",
          value: ratio(spawn.guarded.p50 / spawn.bare.p50),
          target: `≤ ${ratio(TARGET_SPAWN_RATIO)}`,
          met: spawn.guarded.p50 / spawn.bare.p50 <= TARGET_SPAWN_RATIO,
        },
        {
          measure: "spawn of true: supervised and sandboxed Shell.run p50 / bare Bun.spawn p50",
          value: ratio(sandboxRatio),
          target: `≤ ${ratio(TARGET_SPAWN_RATIO)}`,
          met: sandboxRatio <= TARGET_SPAWN_RATIO,
        },
      ],
      notes: [
        "the producer keeps at most 1 MiB per stream and 1 MiB of the merged view; the rest is counted and reported as dropped",
        `peak RSS growth from ${megabytes(small)} to ${megabytes(large)} of output: producer ${megabytes(growth)}, bare reader loop ${megabytes(bareGrowth)} (its chunks wait for garbage collection; the producer frees each once its captures have copied what they keep)`,
        `core exec bash peak RSS growth from ${megabytes(small)} to ${megabytes(large)}: ${megabytes(coreMedianGrowth)} median over median, ${megabytes(coreWorstGrowth)} worst over worst; sampled every ${SAMPLE_EVERY_MS} ms, median over median: anonymous ${megabytes(sampledGrowth("peakAnon"))}, file-backed ${megabytes(sampledGrowth("peakFile"))} (pages of the core binary itself, such as the JIT compilers' code once the read loop is hot: clean and reclaimable)`,
        "core exec bash's peak comes as it settles, after the stream, and does not depend on the output's size: it bounds the captures (1 MiB per stream, 1 MiB merged) and keeps the structured output whole as a managed output, whose JSON of NUL bytes (head -c N /dev/zero) is six bytes a byte",
        "core exec bash times include the binary's start-up, the permission check, parsing the command line and settling",
        `each timed spawn, whatever its path, starts once the spare supervisor is up and after a ${QUIET_MS} ms pause, so that no call pays for the previous one's processes`,
        'the bare spawn uses Bun.spawn\'s defaults (stdout piped and never read, stderr inherited, no process group)',
        `the first supervised call of a core starts its supervisor cold: ${duration(spawn.cold)} (from source: bun on launch.ts); from the second call on, a spare supervisor is kept warm`,
      ],
    }
  } finally {
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
