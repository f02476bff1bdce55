// Cold start of the compiled binary, by CPU (user + system, the figure the targets are set in) and wall time:
// `core --version` and `core --help` (answered before core loads anything) and `core exec echo` in a one-tool Location
// (tools/echo.ts written against `@core/tool` and `effect`, no node_modules, settled in process with the SQLite
// store), and the same call forwarded to a `core serve` of the same data directory (docs/serve.md, "core exec
// forwards"), and `core exec bash` of a line read without bash's grammar and of one read with it, against `bun -e ';'`
// as the peer. Each run is a fresh process timed from spawn to exit; the commands
// alternate in rotating order so the noisy machine's drift lands on each alike. With `--base BINARY` (a compiled core
// of an earlier build), that build's exec, in process and forwarded to a serve of its own, is measured in the same rounds.

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { buildCore, cleanup, ECHO_TOOL, duration, main, progress, ratio, type Report, type Summary, summarize } from "./measure"

const RUNS = 30
const WARMUP_RUNS = 3
/** `core --version` CPU / `bun -e ';'` CPU. */
const VERSION_TARGET = 1.2
/** `core exec` of a one-tool Location, settled in process, CPU / `bun -e ';'` CPU. */
const EXEC_TARGET = 4
/** The line `core exec bash` runs: plain words, which need no grammar to be read. */
const PLAIN_LINE = "cd tools && ls -la | wc -l"
/** `core exec` of a one-tool Location, forwarded to a running `core serve`, CPU / `bun -e ';'` CPU. */
const FORWARDED_TARGET = 1.5

interface Command {
  readonly label: string
  readonly argv: ReadonlyArray<string>
  /** The environment it runs with, when not the bench's own. */
  readonly env?: Record<string, string | undefined>
  /** Why a run's output is not what the command should print, or undefined when it is. */
  readonly problem: (stdout: string) => string | undefined
}

interface Sample {
  readonly wallMs: number
  /** User and system CPU time of the process, from its resource usage at exit. */
  readonly cpuMs: number
}

/** `--base BINARY`: a compiled core (an earlier build) whose exec is measured in the same rounds. */
const baseBinary = (): string | undefined => {
  const at = process.argv.indexOf("--base")
  return at < 0 ? undefined : resolve(process.argv[at + 1]!)
}

/** One fresh process, timed from spawn until it has exited. */
const time = async (command: Command, cwd: string, env: Record<string, string | undefined>): Promise<Sample> => {
  const started = performance.now()
  const child = Bun.spawn([...command.argv], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" })
  const code = await child.exited
  const wallMs = performance.now() - started
  const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
  const problem = code === 0 ? command.problem(stdout) : `exit ${code}`
  if (problem !== undefined) throw new Error(`${command.label}: ${problem}\n${stdout}${stderr}`)
  const usage = child.resourceUsage()
  if (usage === undefined) throw new Error(`${command.label}: no resource usage`)
  return { wallMs, cpuMs: Number(usage.cpuTime.user + usage.cpuTime.system) / 1000 }
}

export const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-cold-"))
  /** The serves started, stopped however the run ends. */
  const serves: Array<Bun.Subprocess> = []
  try {
    const binary = join(root, "core")
    progress(`cold start: building the binary (build.ts --outfile)`)
    await buildCore(binary)
    const location = join(root, "location")
    mkdirSync(join(location, "tools"), { recursive: true })
    writeFileSync(join(location, "tools", "echo.ts"), ECHO_TOOL)
    const env = { ...process.env, CORE_DATA_DIR: join(root, "data"), CORE_HOME: join(root, "home") }
    // A second data directory with a core serve of the Location running: exec there forwards its call to it.
    const servedEnv = { ...env, CORE_DATA_DIR: join(root, "served-data") }
    const startServe = async (core: string, serveEnv: Record<string, string | undefined>) => {
      const serve = Bun.spawn([core, "serve", "--location", location], { cwd: root, env: serveEnv, stdout: "pipe", stderr: "pipe" })
      serves.push(serve)
      const log = new Response(serve.stderr).text()
      const ready = await serve.stdout.getReader().read()
      if (ready.done) throw new Error(`${core} serve did not start:\n${await log}`)
      return { serve, log }
    }
    const { serve, log: serveLog } = await startServe(binary, servedEnv)
    const base = baseBinary()
    const baseServedEnv = { ...env, CORE_DATA_DIR: join(root, "base-served-data") }
    const baseServe = base === undefined ? undefined : await startServe(base, baseServedEnv)
    const execArgs = ["exec", "echo", "--input", JSON.stringify({ text: "hi" }), "--location", location]
    const bashArgs = (command: string) => ["exec", "bash", "--input", JSON.stringify({ command }), "--yes", "--location", location]
    const succeeded = (stdout: string) => (JSON.parse(stdout).status === "success" ? undefined : "the call did not succeed")

    const commands: ReadonlyArray<Command> = [
      {
        label: "bun -e ';'",
        argv: [process.execPath, "-e", ";"],
        problem: (stdout) => (stdout === "" ? undefined : "unexpected output"),
      },
      {
        label: "core --version",
        argv: [binary, "--version"],
        problem: (stdout) => (/^\d+\.\d+\.\d+/.test(stdout) ? undefined : "no version printed"),
      },
      {
        label: "core --help",
        argv: [binary, "--help"],
        problem: (stdout) => (stdout.includes("Usage:") ? undefined : "no usage printed"),
      },
      { label: "core exec echo", argv: [binary, ...execArgs], problem: succeeded },
      { label: "core exec echo, forwarded", argv: [binary, ...execArgs], env: servedEnv, problem: succeeded },
      ...(base === undefined
        ? []
        : [
            { label: "base: core exec echo", argv: [base, ...execArgs], problem: succeeded },
            { label: "base: core exec echo, forwarded", argv: [base, ...execArgs], env: baseServedEnv, problem: succeeded },
          ]),
      // A sandboxed command, approved once (--yes): a line of plain words is read without loading bash's grammar,
      // which one the grammar must read (here for its 2>&1) loads.
      { label: "core exec bash, a plain line", argv: [binary, ...bashArgs(PLAIN_LINE)], problem: succeeded },
      { label: "core exec bash, a line for the grammar", argv: [binary, ...bashArgs(`${PLAIN_LINE} 2>&1`)], problem: succeeded },
    ]

    const samples = commands.map((): Array<Sample> => [])
    for (let run = -WARMUP_RUNS; run < RUNS; run++) {
      if (run === 0 || (run > 0 && run % 10 === 0)) progress(`cold start: run ${run + 1}/${RUNS} of each command`)
      for (let offset = 0; offset < commands.length; offset++) {
        const index = (Math.abs(run) + offset) % commands.length
        const elapsed = await time(commands[index]!, root, commands[index]!.env ?? env)
        if (run >= 0) samples[index]!.push(elapsed)
      }
    }

    const cpu = samples.map((runs) => summarize(runs.map((sample) => sample.cpuMs)))
    const wall = samples.map((runs) => summarize(runs.map((sample) => sample.wallMs)))
    for (const { serve: child, log } of [{ serve, log: serveLog }, ...(baseServe === undefined ? [] : [baseServe])]) {
      child.kill()
      await child.exited
      // Each forwarded run settled in the sidecar (its log line), not in process.
      const settled = (await log).split("\n").filter((line) => line.startsWith("core: call tool=echo")).length
      if (settled !== RUNS + WARMUP_RUNS) throw new Error(`the sidecar settled ${settled} of ${RUNS + WARMUP_RUNS} forwarded calls`)
    }
    const [bunCpu, versionCpu, , execCpu, forwardedCpu] = cpu as [Summary, Summary, Summary, Summary, Summary]
    const [bunWall, versionWall, , execWall, forwardedWall] = wall as [Summary, Summary, Summary, Summary, Summary]
    const versionRatio = versionCpu.p50 / bunCpu.p50
    const execRatio = execCpu.p50 / bunCpu.p50
    const forwardedRatio = forwardedCpu.p50 / bunCpu.p50
    const table = (title: string, summaries: ReadonlyArray<Summary>, peer: Summary) => ({
      title,
      columns: ["command", "p50", "IQR", "min / max", "p50 / bun -e"],
      rows: commands.map((command, index) => {
        const summary = summaries[index]!
        return [
          command.label,
          duration(summary.p50),
          `${duration(summary.q1)} – ${duration(summary.q3)}`,
          `${duration(summary.min)} / ${duration(summary.max)}`,
          ratio(summary.p50 / peer.p50),
        ]
      }),
    })
    return {
      name: "cold start: compiled binary",
      about:
        `Spawn to exit, ${RUNS} alternating runs of each after ${WARMUP_RUNS} warm-up runs; CPU is user + system time ` +
        `of the process; the binary is built by build.ts, CORE_DATA_DIR and CORE_HOME are empty temp dirs, cwd is a temp dir; the forwarded ` +
        `exec has a core serve of the Location running on a data directory of its own.`,
      tables: [table("CPU time per process", cpu, bunCpu), table("wall time per process", wall, bunWall)],
      targets: [
        {
          measure: "core --version CPU p50 / bun -e CPU p50",
          value: ratio(versionRatio),
          target: `≤ ${ratio(VERSION_TARGET)}`,
          met: versionRatio <= VERSION_TARGET,
        },
        {
          measure: "core exec (one-tool Location, in process) CPU p50 / bun -e CPU p50",
          value: ratio(execRatio),
          target: `≤ ${ratio(EXEC_TARGET)}`,
          met: execRatio <= EXEC_TARGET,
        },
        {
          measure: "core exec (one-tool Location, forwarded to a running core serve) CPU p50 / bun -e CPU p50",
          value: ratio(forwardedRatio),
          target: `≤ ${ratio(FORWARDED_TARGET)}`,
          met: forwardedRatio <= FORWARDED_TARGET,
        },
      ],
      notes: [
        ...(base === undefined
          ? []
          : [
              `base build ${base}: this build / base, CPU p50: exec ${ratio(execCpu.p50 / cpu[5]!.p50)}, exec forwarded ` +
                `${ratio(forwardedCpu.p50 / cpu[6]!.p50)}`,
            ]),
        `core exec spends ${duration(execCpu.p50 - versionCpu.p50)} CPU (${duration(execWall.p50 - versionWall.p50)} ` +
          `wall, p50) beyond --version: loading Effect, the host and the built-ins, the Location's tools/echo.ts, ` +
          `opening the SQLite store, settling and printing`,
        `core exec forwarded spends ${duration(forwardedCpu.p50)} CPU (${duration(forwardedWall.p50)} wall, p50) in ` +
          `exec itself: reading the serve's record, health, a turn, the host tools and the call on its unix socket ` +
          `(the sidecar's own CPU for the call is not counted)`,
        `core exec bash of "${PLAIN_LINE}": ${duration(cpu.at(-2)!.p50)} CPU (${duration(wall.at(-2)!.p50)} wall, p50), read ` +
          `without bash's grammar; with 2>&1 added, read by the grammar (loaded for it): ${duration(cpu.at(-1)!.p50)} CPU ` +
          `(${duration(wall.at(-1)!.p50)} wall); both sandboxed, supervised, and in process`,
        `core --version answers in ${duration(versionCpu.p50)} CPU (${duration(versionWall.p50)} wall, p50): the entry ` +
          `answers it before loading anything of core`,
      ],
    }
  } finally {
    for (const child of serves) child.kill()
    await Promise.all(serves.map((child) => child.exited))
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
