// What the sandbox's kernel side costs per spawn of `true` through the producer: a supervised, sandboxed run
// (Landlock, capabilities dropped, the seccomp filter on Unix sockets, a PID namespace of its own where core is
// root), the same without the PID namespace, one with a socket granted in core.json (bound socket files covered in
// a mount namespace instead), runs in a 25,000-file Location under a read rule denying `*.env` (the walk that
// finds the denied files, and one mount per file), and one in a 30,000-folder Location (the guard's search for
// repositories before and after the command), against a bare `Bun.spawn(["true"])` awaited, interleaved in one
// run. `--base REV` runs the same measure on a git worktree of REV too, for the ratios before.

import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { Builtin } from "../src/builtin/builtin"
import { Rule } from "../src/permission/rule"
import { Shell } from "../src/shell/shell"
import { cleanup, duration, main, progress, ratio, type Report, summarize, type Summary } from "./measure"

const ROOT = join(import.meta.dir, "..")
const SPAWNS = 150
const WARM = 15
/** The pause before each timed spawn, once every spare supervisor is up: the previous call's processes have gone. */
const QUIET_MS = 20
/** Spawns timed after an agent's pause between commands, and that pause (past the 5 s the grants are reused for). */
const PACED = 8
const PACE_MS = 6_000
/** What the tighter sandbox may add to a sandboxed spawn, as a share of the ratio before it. */
const TARGET_GROWTH = 1.1

/** The Location the read rule is measured in: this many folders of this many files. */
const FOLDERS = 250
const FILES_PER_FOLDER = 100
/** A Location of many folders (the repository search looks at every folder): this many, in folders of a thousand. */
const MANY_FOLDERS = 30_000
/** How many of its files the rule denies, per measured row (0: no read rule, the Location's own cost). */
const DENIED = [0, 10, 1000] as const

interface Figures {
  readonly bare: Summary
  readonly sandboxed: Summary
  readonly granted: Summary
  /** Absent in a tree before these rows existed. */
  readonly unpidded?: Summary
  readonly denied?: Readonly<Record<string, Summary>>
  /** In the Location of MANY_FOLDERS folders, no read rule. */
  readonly folders?: Summary
  /** Sandboxed, PACE_MS after the last command. Absent in a tree before this row existed. */
  readonly paced?: Summary
}

/** A Location of FOLDERS × FILES_PER_FOLDER files, `denied` of them named `*.env`, spread over the folders. */
const location = (root: string, denied: number): string => {
  const made = mkdtempSync(join(root, "tree-"))
  const every = denied === 0 ? Number.POSITIVE_INFINITY : Math.floor((FOLDERS * FILES_PER_FOLDER) / denied)
  for (let folder = 0, index = 0; folder < FOLDERS; folder++) {
    mkdirSync(join(made, `d${folder}`))
    for (let file = 0; file < FILES_PER_FOLDER; file++, index++)
      writeFileSync(join(made, `d${folder}`, `f${file}${index % every === 0 ? ".env" : ".txt"}`), "")
  }
  return made
}

/** An agent's rules denying reads of `*.env`. */
const RULES = [
  { action: "*", resource: "*", effect: "allow" },
  { action: "read", resource: "*.env", effect: "deny" },
] as const

/** A Location of MANY_FOLDERS empty folders, a thousand to a folder. */
const manyFolders = (root: string): string => {
  const made = mkdtempSync(join(root, "folders-"))
  for (let outer = 0; outer < MANY_FOLDERS / 1000; outer++) for (let inner = 0; inner < 1000; inner++) mkdirSync(join(made, `d${outer}`, `e${inner}`), { recursive: true })
  return made
}

/**
 * The read rule as the bash built-in passes it (Builtin.readDenied over the agent's rules in `root`): keyed by the
 * rules and the Location, so the walk's answers and an unchanged walk are reused from one spawn to the next.
 */
const readDenied = (root: string) => {
  const permission = { denies: (_agent: string, action: string) => Rule.denier(RULES, action) }
  return Builtin.readDenied({ directory: root, permission } as unknown as Parameters<typeof Builtin.readDenied>[0], "build")!
}

const figures = async (): Promise<Figures> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-sandbox-"))
  try {
    const cwd = mkdtempSync(join(root, "loc-"))
    const plain = Shell.make({}, { records: mkdtempSync(join(root, "runs-")) })
    const granted = Shell.make({ sockets: [join(root, "agent.sock")] }, { records: mkdtempSync(join(root, "runs-")) })
    const unpidded = Shell.make({}, { records: mkdtempSync(join(root, "runs-")), pids: false })
    const trees = DENIED.map((count) => [count, realpathSync(location(root, count))] as const)
    const wide = realpathSync(manyFolders(root))
    const samples: Record<string, Array<number>> = { bare: [], sandboxed: [], granted: [], unpidded: [], folders: [], paced: [] }
    for (const count of DENIED) samples[`denied${count}`] = []
    // Every producer's spare, not only the one the timed call takes: a spare still starting for the previous row
    // (a whole runtime's start-up) would take the processor from this one.
    const everySpare = Effect.all([plain.warm, granted.warm, unpidded.warm], { discard: true })
    const time = async (into: Array<number>, warm: Effect.Effect<void>, work: () => Promise<unknown>) => {
      await Effect.runPromise(Effect.andThen(warm, everySpare))
      await Bun.sleep(QUIET_MS)
      const started = performance.now()
      await work()
      into.push(performance.now() - started)
    }
    const sandboxed = (shell: Shell.Interface) => () =>
      Effect.runPromise(shell.run({ argv: ["true"], cwd, sandbox: { location: cwd, approved: [] } }))
    const once = async () => {
      await time(samples.unpidded!, unpidded.warm, sandboxed(unpidded))
      await time(samples.sandboxed!, plain.warm, sandboxed(plain))
      for (const [count, tree] of trees) {
        await time(samples[`denied${count}`]!, plain.warm, () =>
          Effect.runPromise(
            plain.run({
              argv: ["true"],
              cwd: tree,
              sandbox: { location: tree, approved: [], ...(count === 0 ? {} : { readDenied: readDenied(tree) }) },
            }),
          ),
        )
      }
      await time(samples.folders!, plain.warm, () =>
        Effect.runPromise(plain.run({ argv: ["true"], cwd: wide, sandbox: { location: wide, approved: [] } })),
      )
      await time(samples.granted!, granted.warm, sandboxed(granted))
      await time(samples.bare!, Effect.void, () => Bun.spawn(["true"]).exited)
    }
    for (let index = 0; index < WARM; index++) await once()
    for (const list of Object.values(samples)) list.length = 0
    for (let index = 0; index < SPAWNS; index++) await once()
    // Commands seconds apart, as an agent's come: what a spawn costs once the grants worked out for the last one
    // are older than they are reused for.
    for (let index = 0; index < PACED; index++) {
      await Effect.runPromise(everySpare)
      await Bun.sleep(PACE_MS)
      const started = performance.now()
      await sandboxed(plain)()
      samples.paced!.push(performance.now() - started)
    }
    return {
      bare: summarize(samples.bare!),
      sandboxed: summarize(samples.sandboxed!),
      granted: summarize(samples.granted!),
      unpidded: summarize(samples.unpidded!),
      denied: Object.fromEntries(DENIED.map((count) => [String(count), summarize(samples[`denied${count}`]!)])),
      folders: summarize(samples.folders!),
      paced: summarize(samples.paced!),
    }
  } finally {
    cleanup([root])
  }
}

/** The same measure on a worktree of `rev`, this file copied in. */
const base = async (rev: string): Promise<Figures> => {
  const tree = join(mkdtempSync(join(tmpdir(), "core-bench-base-")), "tree")
  const git = (args: ReadonlyArray<string>) => Bun.spawnSync(["git", ...args], { cwd: ROOT, stdout: "ignore", stderr: "inherit" })
  if (git(["worktree", "add", "--detach", tree, rev]).exitCode !== 0) throw new Error(`git worktree add ${rev} failed`)
  try {
    symlinkSync(join(ROOT, "node_modules"), join(tree, "node_modules"))
    writeFileSync(join(tree, "bench/sandbox-spawn.ts"), await Bun.file(import.meta.path).text())
    const child = Bun.spawn([process.execPath, join(tree, "bench/sandbox-spawn.ts"), "--figures"], { stdout: "pipe", stderr: "inherit" })
    const [code, stdout] = await Promise.all([child.exited, new Response(child.stdout).text()])
    if (code !== 0) throw new Error(`the measure on ${rev} failed (exit ${code})`)
    return JSON.parse(stdout) as Figures
  } finally {
    git(["worktree", "remove", "--force", tree])
    rmSync(join(tree, ".."), { recursive: true, force: true })
  }
}

const measure = async (): Promise<Report> => {
  const rev = process.argv[process.argv.indexOf("--base") + 1]
  const against = process.argv.includes("--base") && rev !== undefined ? rev : undefined
  progress(`sandbox: spawning true ${SPAWNS} times each way, interleaved`)
  const now = await figures()
  progress(against === undefined ? "sandbox: no --base given" : `sandbox: the same on ${against}`)
  const before = against === undefined ? undefined : await base(against)
  const row = (label: string, summary: Summary, bare: Summary, before?: Summary) => [
    label,
    duration(summary.p50),
    `${duration(summary.q1)} / ${duration(summary.q3)}`,
    ratio(summary.p50 / bare.p50),
    before === undefined ? "" : ratio(summary.p50 / before.p50),
  ]
  const runs = [["this tree", now] as const, ...(before === undefined ? [] : [[against!, before] as const])]
  const growth = before === undefined ? undefined : now.sandboxed.p50 / now.bare.p50 / (before.sandboxed.p50 / before.bare.p50)
  return {
    name: "sandbox: spawning true, sandboxed",
    about: `${SPAWNS} spawns of true each way, interleaved, each once every spare supervisor is up and after a ${QUIET_MS} ms pause.`,
    tables: runs.map(([label, run]) => ({
      title: `spawn of true (${label})`,
      columns: ["path", "p50", "q1 / q3", "p50 / bare", "p50 / sandboxed without PID namespace"],
      rows: [
        ...(run.unpidded === undefined ? [] : [row("Shell.run, sandboxed, without a PID namespace", run.unpidded, run.bare, run.unpidded)]),
        row("Shell.run, supervised and sandboxed (no socket granted)", run.sandboxed, run.bare, run.unpidded),
        ...Object.entries(run.denied ?? {}).map(([count, summary]) =>
          row(
            `Shell.run, sandboxed, ${(FOLDERS * FILES_PER_FOLDER).toLocaleString("en")}-file Location, ${count === "0" ? "no read rule" : `${count} files read-denied`}`,
            summary,
            run.bare,
            run.unpidded,
          ),
        ),
        ...(run.folders === undefined
          ? []
          : [row(`Shell.run, sandboxed, ${MANY_FOLDERS.toLocaleString("en")}-folder Location, no read rule`, run.folders, run.bare, run.unpidded)]),
        row("Shell.run, sandboxed, one socket granted in core.json", run.granted, run.bare, run.unpidded),
        ...(run.paced === undefined
          ? []
          : [row(`Shell.run, supervised and sandboxed, ${PACE_MS / 1000} s after the last command (${PACED} spawns)`, run.paced, run.bare, run.unpidded)]),
        row('bare Bun.spawn(["true"]) awaited', run.bare, run.bare, run.unpidded),
      ],
    })),
    targets:
      growth === undefined
        ? []
        : [
            {
              measure: `sandboxed spawn / bare, this tree over ${against}`,
              value: ratio(growth),
              target: `≤ ${ratio(TARGET_GROWTH)}`,
              met: growth <= TARGET_GROWTH,
            },
          ],
    notes: [
      "each run's ratios are against the bare spawn measured in that same run; the base runs after this tree's, not interleaved",
      "before the socket grant existed, the granted row is the plain sandboxed path (the setting is ignored)",
      "the PID namespace is had only where core is root; elsewhere both sandboxed rows are the same path",
      `the paced row waits ${PACE_MS / 1000} s before each spawn, as an agent's commands come: past the 5 s a Location's grants are reused for, they are worked out again ahead of time while its commands keep coming`,
      "the read-denied rows look at the Location at every spawn (the walk reused while no folder changed: its folders trusted by their watches, or one lstat per folder where none can be set) and mount one cover per denied file",
      `every sandboxed spawn searches its Location for repositories before and after the command (the guard): the ${MANY_FOLDERS.toLocaleString("en")}-folder row is what that search costs where the Location has many folders`,
    ],
  }
}

if (import.meta.main) {
  if (process.argv.includes("--figures")) process.stdout.write(`${JSON.stringify(await figures())}\n`)
  else await main(measure)
}
