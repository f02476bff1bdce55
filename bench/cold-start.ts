// Cold start of the compiled binary: `core exec echo` in a one-tool Location (tools/echo.ts written against
// `@core/tool` and `effect`, no node_modules), against `bun -e 'console.log(1)'` as the peer and `core --version`
// as the binary's own floor. Each run is a fresh process timed from spawn to exit; the three commands alternate in
// rotating order so the noisy machine's drift lands on each alike.

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { buildCore, cleanup, ECHO_TOOL, duration, main, progress, ratio, type Report, type Summary, summarize } from "./measure"

const RUNS = 30
const WARMUP_RUNS = 3
const TARGET_RATIO = 8

interface Command {
  readonly label: string
  readonly argv: ReadonlyArray<string>
  /** Why a run's output is not what the command should print, or undefined when it is. */
  readonly problem: (stdout: string) => string | undefined
}

/** One fresh process, timed from spawn until it has exited. */
const time = async (command: Command, cwd: string, env: Record<string, string | undefined>): Promise<number> => {
  const started = performance.now()
  const child = Bun.spawn([...command.argv], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" })
  const code = await child.exited
  const elapsed = performance.now() - started
  const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
  const problem = code === 0 ? command.problem(stdout) : `exit ${code}`
  if (problem !== undefined) throw new Error(`${command.label}: ${problem}\n${stdout}${stderr}`)
  return elapsed
}

export const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-cold-"))
  try {
    const binary = join(root, "core")
    progress(`cold start: building the binary (build.ts --outfile)`)
    await buildCore(binary)
    const location = join(root, "location")
    mkdirSync(join(location, "tools"), { recursive: true })
    writeFileSync(join(location, "tools", "echo.ts"), ECHO_TOOL)
    const env = { ...process.env, CORE_DATA_DIR: join(root, "data"), CORE_HOME: join(root, "home") }

    const commands: ReadonlyArray<Command> = [
      {
        label: "bun -e 'console.log(1)'",
        argv: [process.execPath, "-e", "console.log(1)"],
        problem: (stdout) => (stdout === "1\n" ? undefined : "unexpected output"),
      },
      {
        label: "core --version",
        argv: [binary, "--version"],
        problem: (stdout) => (/^\d+\.\d+\.\d+/.test(stdout) ? undefined : "no version printed"),
      },
      {
        label: "core exec echo",
        argv: [binary, "exec", "echo", "--input", JSON.stringify({ text: "hi" }), "--location", location],
        problem: (stdout) => (JSON.parse(stdout).status === "success" ? undefined : "the call did not succeed"),
      },
    ]

    const samples = commands.map((): Array<number> => [])
    for (let run = -WARMUP_RUNS; run < RUNS; run++) {
      if (run === 0 || (run > 0 && run % 10 === 0)) progress(`cold start: run ${run + 1}/${RUNS} of each command`)
      for (let offset = 0; offset < commands.length; offset++) {
        const index = (Math.abs(run) + offset) % commands.length
        const elapsed = await time(commands[index]!, root, env)
        if (run >= 0) samples[index]!.push(elapsed)
      }
    }

    const [bun, version, exec] = samples.map(summarize) as [Summary, Summary, Summary]
    const execRatio = exec.p50 / bun.p50
    return {
      name: "cold start: compiled binary",
      about:
        `Spawn to exit, ${RUNS} alternating runs of each after ${WARMUP_RUNS} warm-up runs; the binary is built ` +
        `by build.ts, CORE_DATA_DIR and CORE_HOME are empty temp dirs, cwd is a temp dir.`,
      tables: [
        {
          title: "wall time per process",
          columns: ["command", "p50", "IQR", "min / max", "p50 / bun -e"],
          rows: commands.map((command, index) => {
            const summary = summarize(samples[index]!)
            return [
              command.label,
              duration(summary.p50),
              `${duration(summary.q1)} – ${duration(summary.q3)}`,
              `${duration(summary.min)} / ${duration(summary.max)}`,
              ratio(summary.p50 / bun.p50),
            ]
          }),
        },
      ],
      targets: [
        { measure: "core exec p50 / bun -e p50", value: ratio(execRatio), target: `≤ ${ratio(TARGET_RATIO)}`, met: execRatio <= TARGET_RATIO },
      ],
      notes: [
        `core exec spends ${duration(exec.p50 - version.p50)} (p50) beyond --version: loading the Location's ` +
          `tools/echo.ts, opening the SQLite store, settling and printing`,
        `core --version is the binary's floor: ${duration(version.p50 - bun.p50)} over bun -e before any command runs`,
      ],
    }
  } finally {
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
