export * as Supervisor from "./supervisor"

// The per-call supervisor: core re-invoked as a small launcher (`core __supervise PID`, or `bun launch.ts
// __supervise PID` from source) that runs one command and makes sure nothing it started outlives it. It is a child
// subreaper, so every descendant stays its descendant however it detaches (setsid, `set -m`, double fork,
// setpgrp); it dies with core (a parent-death signal). It never enters a command's sandbox: a sandboxed command
// starts as a child of its own (./starter) that applies the sandbox to itself and execs the command, so nothing the
// command runs can signal the supervisor. One kill(-1) then ends all of the command's processes at once (`sealed`):
// the supervisor's own, as the first process of the command's PID namespace; otherwise its reaper's, a process the
// starter leaves in a Landlock domain the command's is nested in (Starter `reaperFor`). When the command exits,
// times out, is cancelled or core dies, it ends every descendant and reports what it ended. It imports nothing
// heavy: it starts for every command. It decides nothing and never writes to stdout or stderr, which belong to the
// command.

import { openSync, readSync, writeFileSync, writeSync } from "node:fs"
import { join } from "node:path"
import { Landlock } from "./landlock"
import { Namespace } from "./namespace"
import { Native } from "./native"
import { OwnExecutable } from "./own-executable"
import { SystemPrograms } from "./system-programs"
import { ProcessGroup } from "./process-group"
import { Starter } from "./starter"

/** The argument that makes the core executable a supervisor. */
export const LAUNCH = "__supervise"
/** An argument after core's pid: the supervisor mounts the paths an order names read-only for its command. */
export const ISOLATE = Starter.ISOLATE
/**
 * An argument after core's pid: the supervisor was started as the first process of a PID namespace of its own
 * (core did that, Native.spawnInPidNamespace), and mounts a /proc of that namespace for its command.
 */
export const PID = Starter.PID
/** An argument after core's pid, `deny=PORT,PORT`: core's own TCP ports, which the command may not connect to. */
export const DENY = Starter.DENY
/** An argument after core's pid, with `deny=`: descriptor 3 is core's ruleset for those ports (Starter.RULES). */
export const RULES = Starter.RULES
/**
 * An argument after core's pid, with `isolate`: the supervisor will take a sandboxed order, and has its starter make
 * ahead, while it waits for it, the mounts every sandbox has (the command's own terminals and /dev/shm, the system's
 * secrets covered); when the order comes, it covers only what changed since (a secret the system added or replaced).
 */
export const SANDBOX = Starter.SANDBOX
/**
 * An argument after core's pid: the order comes at once (there was no spare for it), so nothing is warmed up ahead
 * (no command started to have spawning ready); with `sandbox`, its starter starts at once, as a spare's does, but
 * cold (it readies nothing ahead).
 */
export const COLD = Starter.COLD

/** What the arguments after core's pid ask of a supervisor. */
export interface Flags {
  readonly isolate: boolean
  readonly deny: ReadonlyArray<number>
  readonly pid: boolean
  readonly sandbox?: boolean
  readonly cold?: boolean
  readonly rules?: boolean
  readonly userns?: boolean
}

/** An argument after core's pid: core started the supervisor in a user namespace of its own (Starter.USERNS). */
export const USERNS = Starter.USERNS

export const flags = (args: ReadonlyArray<string>): Flags => ({
  isolate: args.includes(ISOLATE),
  pid: args.includes(PID),
  sandbox: args.includes(SANDBOX),
  cold: args.includes(COLD),
  deny: Starter.ports(args),
  rules: args.includes(RULES),
  userns: args.includes(USERNS),
})

/** After SIGTERM, how long the processes get before SIGKILL (DESIGN §9). */
export const GRACE_MS = 3000
const POLL_MS = 20
const KILL_ROUNDS = 50
/** How long the supervisor, unsealed, keeps ending its children while it still has one (see `chase`). */
const CHASE_MS = 5_000
/** Rounds of `chase` between two turns of the event loop. */
const CHASE_ROUNDS_PER_TURN = 64
const SIGHUP = 1
const SIGKILL = 9

/**
 * What core tells a spare readied for a sandbox before its order: the grants it expects the order to make (the
 * last sandboxed order's), whose rules the spare builds while it waits (Landlock.prepare). An order granting
 * anything else gets its rules built as it comes.
 */
export interface Expect {
  readonly kind: "expect"
  readonly grants: Landlock.Grants
}

/** What core tells a spare once it is up, to be ignored: it readies the reading of messages before the order. */
export interface Prime {
  readonly kind: "prime"
}

/** What core asks the supervisor to run (one per supervisor). */
export interface Order {
  readonly kind: "run"
  readonly argv: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  /** stdin bytes, base64; stdin is /dev/null when absent. */
  readonly stdin?: string
  /** stdin is the supervisor's own, a pipe core keeps open (a long-lived server core speaks to); wins over `stdin`. */
  readonly stdinPipe?: boolean
  /** The sandbox, applied before spawning; none when absent. */
  readonly grants?: Landlock.Grants
  /** Paths mounted read-only for the command (core's configuration in its Location), before the sandbox. */
  readonly readOnly?: ReadonlyArray<string>
  /** Who each of `readOnly` was when core looked (`dev:ino`): a mount on anything else does not start the command. */
  readonly readOnlyIds?: ReadonlyArray<string>
  /** Folders bound onto themselves (writable) for the command, before `readOnly`: it cannot rename them away. */
  readonly pinned?: ReadonlyArray<string>
  /**
   * With `grants`: paths the command must read nothing of although a grant holds them (what the agent's `read`
   * rules and core.json's denyRead deny), covered in its mount namespace before the sandbox. Where they cannot be
   * covered, the command does not start.
   */
  readonly cover?: Namespace.Cover
  /**
   * With `grants`: the socket files (or directories of them) the command may still connect to, granted in core.json
   * and its own directories (./sockets `reachable`); every other bound socket file is covered. Absent, the command
   * can make no Unix socket but a pair.
   */
  readonly sockets?: ReadonlyArray<string>
  readonly graceMs: number
}

/** A process the supervisor ended. */
export interface Ended {
  readonly pid: number
  readonly name: string
}

export type Report =
  /** Up and waiting for its order. */
  | { readonly kind: "ready" }
  /** `readOnly`: the order's read-only paths were mounted so (false when it named none). */
  /**
   * `pidNamespace`: the supervisor is the first process of a PID namespace of its own, the command's pid is as that
   * namespace numbers it, and everything in it ends with the supervisor.
   */
  | { readonly kind: "started"; readonly pid: number; readonly readOnly: boolean; readonly pidNamespace: boolean }
  /** The system refused to start the command: its errno name. */
  | { readonly kind: "refused"; readonly code: string; readonly message: string }
  /** Anything else that stopped the command from starting: a broken invariant. */
  | { readonly kind: "failed"; readonly message: string }
  | {
      readonly kind: "ended"
      readonly exitCode: number | null
      readonly signal: string | null
      /** Every process the supervisor ended, the command's own included when it was still running. */
      readonly killed: ReadonlyArray<Ended>
      readonly survivors: ReadonlyArray<number>
    }

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const send = (report: Report): Promise<void> =>
  new Promise((resolve) => {
    if (process.send === undefined || !process.connected) return resolve()
    process.send(report, undefined, undefined, () => resolve())
  })

const kill = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(pid, signal)
  } catch {
    // gone already, or not ours to signal: a survivor then, reported as such
  }
}

/** How long a supervisor whose core is gone may take to end its command's processes before it stops itself. */
const ORPHAN_DEADLINE_MS = 5_000

/**
 * This process's parent as the host's PID namespace numbers it, read each time from /proc/<pid>/stat of the host's
 * procfs through a handle opened now (before /proc is covered by the namespace's own); 0 once unreadable.
 */
const hostParent = (): (() => number) => {
  let fd: number | undefined
  try {
    fd = openSync("/proc/self/stat", "r")
  } catch {
    return () => 0
  }
  const buffer = Buffer.alloc(1024)
  return () => {
    try {
      const text = buffer.toString("latin1", 0, readSync(fd, buffer, 0, buffer.length, 0))
      return Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[1])
    } catch {
      return 0
    }
  }
}

/**
 * Whether one kill(-1, SIGKILL) reaches every process of the command and nothing else. Either the supervisor is the
 * first process of the command's PID namespace, whose processes alone its kill(-1) reaches then; or the command has a
 * reaper (`reaper`), whose kill(-1) reaches the processes of its Landlock domain, in which the command's is nested.
 */
let sealed = false

/** Whether the supervisor is the first process of the command's PID namespace: the only place its own kill(-1) may go. */
let namespaced = false

/**
 * The command's reaper, where its starter started one (Starter `reaperFor`): its pid, and the pipe it reads, one
 * line per kill(-1). It is a child of this process (a subreaper) in a session of its own, outside the command's
 * domain: the command can neither signal nor trace it, and it is never taken for one of the command's processes.
 */
let reaper: { readonly pid: number; readonly fd: number } | undefined

/** Lets the reaper go (its pipe closed, it ends): gone, or no longer needed. Nothing is sealed then but a namespace. */
const retire = () => {
  if (reaper !== undefined) Native.close(reaper.fd)
  reaper = undefined
  sealed = namespaced
}

/**
 * Ends and reaps the reaper, once the command's end is reported: it would otherwise outlive the supervisor, a zombie
 * until whatever adopts it reaps it. Its pid is still its own until it is reaped here.
 */
const endReaper = async () => {
  if (reaper === undefined) return
  const pid = reaper.pid
  // Killed before its pipe closes: at its pipe's end it would make one more kill(-1), needless now.
  Native.kill(pid, SIGKILL)
  retire()
  for (let tries = 0; tries < 100 && Native.reap(pid) === 0; tries++) await sleep(1)
}

/** Native.reap, noting the reaper's end should it be the child reaped: its pid may be another process's next. */
const reapChild = (pid = -1): number => {
  const reaped = Native.reap(pid)
  if (reaped > 0 && reaped === reaper?.pid) retire()
  return reaped
}

/**
 * One kill(-1, SIGKILL) of every process in reach (`sealed`): the supervisor's own in its PID namespace, or its
 * reaper's. Answers false where there is neither (the reaper gone: the machine ran out of memory and took it, or
 * someone ended it from outside, and was reaped since): the supervisor then chases what is left. Outside a namespace
 * its own kill(-1) would reach every process of the user, core among them, so it never makes one there.
 */
const strike = (): boolean => {
  if (reaper === undefined) return namespaced && Native.kill(-1, SIGKILL) === 0
  try {
    writeSync(reaper.fd, "\n")
    return true
  } catch {
    retire()
    return false
  }
}

/**
 * Ends at once every process still in the supervisor's reach once it is sealed, whether a search of /proc saw it or
 * not: kill(-1) signals them all in one step, during which the kernel lets no fork complete, so even a chain that
 * forks faster than /proc is read ends. Rounds until nothing the command started is left; answers what would not die.
 */
const sweep = async (command: Bun.Subprocess): Promise<ReadonlyArray<number>> => {
  for (let round = 0; round < KILL_ROUNDS && !alone(command); round++) {
    if (!strike()) return []
    await sleep(round === 0 ? 1 : POLL_MS)
  }
  if (alone(command)) return []
  try {
    return others(ProcessGroup.descendants(process.pid).map((process_) => process_.pid))
  } catch {
    return [command.pid]
  }
}

/** `pids` but the reaper's. */
const others = (pids: Array<number>): Array<number> => (reaper === undefined ? pids : pids.filter((pid) => pid !== reaper!.pid))

/**
 * Ends, unsealed, what the searches missed: a chain of processes that each fork the next and exit. Each process of
 * it is this subreaper's child once the one that forked it has exited, so the supervisor reads its own children
 * (ProcessGroup.children: a few small files, however many processes the machine runs) and SIGKILLs them, round
 * after round, until it has none: a process killed before its fork completes leaves no child, and one a fork
 * outran is the next round's. Where the kernel lists no children it searches /proc again, which an interpreter's
 * chain cannot outrun for long but a compiled one can. Up to CHASE_MS; answers what it ended and what is left.
 */
const chase = async (command: Bun.Subprocess): Promise<{ killed: ReadonlyArray<Ended>; survivors: ReadonlyArray<number> }> => {
  const killed = new Map<number, Ended>()
  const deadline = performance.now() + CHASE_MS
  for (let round = 1; !alone(command) && performance.now() < deadline; round++) {
    const listed = ProcessGroup.children(process.pid)
    const found = listed === undefined ? undefined : others(listed)
    if (found === undefined) {
      const again = await endAll(0).catch(() => undefined)
      if (again === undefined) break
      for (const ended of again.killed) killed.set(ended.pid, ended)
      continue
    }
    for (const pid of found) {
      // A child's pid stays its own until it is reaped (by `alone`, before the next read), so this reaches no other.
      Native.kill(pid, SIGKILL)
      if (!killed.has(pid)) killed.set(pid, { pid, name: ProcessGroup.stat(pid)?.name ?? "?" })
    }
    // The rounds run back to back, faster than a fork; now and then a turn of the event loop, for core's messages.
    if (round % CHASE_ROUNDS_PER_TURN === 0) await sleep(1)
  }
  if (alone(command)) return { killed: [...killed.values()], survivors: [] }
  return { killed: [...killed.values()], survivors: others(ProcessGroup.children(process.pid) ?? [command.pid]) }
}

/** Set when the end must not wait any longer (core is gone or forcing its exit): cuts a grace period short. */
let urgent = false

/**
 * Ends every descendant: SIGTERM, up to `graceMs` for them to go, then SIGKILL rounds until none is left. Answers
 * every process it saw (new ones forked meanwhile included) and those that would not die. Reads /proc.
 */
const endAll = async (graceMs: number): Promise<{ killed: ReadonlyArray<Ended>; survivors: ReadonlyArray<number> }> => {
  const self = process.pid
  const seen = new Map<number, Ended>()
  const look = () => {
    const found = ProcessGroup.descendants(self).filter((process_) => process_.pid !== reaper?.pid)
    for (const process_ of found) if (!seen.has(process_.pid)) seen.set(process_.pid, { pid: process_.pid, name: process_.name })
    return found
  }
  let left = look()
  if (left.length > 0 && graceMs > 0) {
    for (const process_ of left) kill(process_.pid, "SIGTERM")
    const deadline = performance.now() + graceMs
    while (left.length > 0 && performance.now() < deadline && !urgent) {
      await sleep(POLL_MS)
      left = look()
      // A process forked after the first round gets its SIGTERM too.
      for (const process_ of left) if (process_.state !== "Z") kill(process_.pid, "SIGTERM")
    }
  }
  for (let round = 0; round < KILL_ROUNDS && left.length > 0; round++) {
    for (const process_ of left) kill(process_.pid, "SIGKILL")
    await sleep(POLL_MS)
    left = look()
  }
  return { killed: [...seen.values()], survivors: left.map((process_) => process_.pid) }
}

const signalGroup = (pgid: number, signal: NodeJS.Signals) => kill(-pgid, signal)

/**
 * Ends the command's process group without reading /proc, where /proc cannot be read: SIGTERM, up to `graceMs`,
 * then SIGKILL rounds, until nothing the command started is left (`alone`). A process that left the group cannot
 * be found this way.
 */
const endGroup = async (
  command: Bun.Subprocess,
  name: string,
  graceMs: number,
): Promise<{ killed: ReadonlyArray<Ended>; survivors: ReadonlyArray<number> }> => {
  const running = command.exitCode === null && command.signalCode === null
  const killed = running ? [{ pid: command.pid, name }] : []
  signalGroup(command.pid, "SIGTERM")
  const deadline = performance.now() + graceMs
  while (!alone(command) && performance.now() < deadline && !urgent) await sleep(POLL_MS)
  for (let round = 0; round < KILL_ROUNDS && !alone(command); round++) {
    signalGroup(command.pid, "SIGKILL")
    await sleep(POLL_MS)
  }
  return { killed, survivors: alone(command) ? [] : [command.pid] }
}

/**
 * Whether nothing the command started is left, known without reading /proc: once the command has exited (and
 * Bun has reaped it), a subreaper with no child at all has no descendant either, since every orphan becomes its
 * child. Where the command has a reaper, a child of its own, its children are read: the reaper alone is nothing of
 * the command's. Reaps the orphans that ended meanwhile.
 */
const alone = (command: Bun.Subprocess): boolean => {
  if (command.exitCode === null && command.signalCode === null) return false
  let reaped: number
  do reaped = reapChild()
  while (reaped > 0)
  if (reaped === -1) return true
  if (reaper === undefined) return false
  try {
    const left = ProcessGroup.children(process.pid) ?? ProcessGroup.descendants(process.pid).map((process_) => process_.pid)
    return left.length === 1 && left[0] === reaper.pid
  } catch {
    return false
  }
}

/** The children Bun started here (the command, starters, the warm-up's), which Bun reaps itself: never `orphans`'. */
const spawned = new Set<number>()

/** Notes a child Bun started, until Bun has reaped it (its pid may then be another process's). */
const ours = (child: { readonly pid: number; readonly exited: Promise<unknown> }) => {
  spawned.add(child.pid)
  void child.exited.then(() => spawned.delete(child.pid))
}

/** Starts a command in its own session and group, with no terminal, its output the supervisor's own. */
const spawn = (argv: ReadonlyArray<string>, cwd: string, env: Readonly<Record<string, string>>, stdin: "inherit" | "ignore" | Buffer) => {
  const child = Bun.spawn([...argv], { cwd, env: { ...env }, stdin, stdout: "inherit", stderr: "inherit", detached: true })
  ours(child)
  return child
}

/** How often the orphans the supervisor adopted are reaped while its command runs. */
const REAP_MS = 250
/** Reaped at most per turn of the event loop. */
const REAP_BATCH = 4096

/**
 * Reaps the processes of the command that ended after their parent did (the supervisor, a subreaper or the first
 * process of its PID namespace, adopted them): left, each would hold its pid until the command's end, in the
 * namespace and on the machine (a command that leaves many, such as a server's short-lived helpers, takes pids from
 * every program). Stops at a child Bun started, which Bun reaps.
 */
const orphans = (): void => {
  for (let reaped = 0; reaped < REAP_BATCH; reaped++) {
    const pid = Native.endedChild()
    if (pid <= 0 || spawned.has(pid)) return
    reapChild(pid)
  }
}

type Ending = Extract<Report, { kind: "ended" }>

/** The report of an exited command's end, once nothing it started is left. */
const ended = (command: Bun.Subprocess, killed: ReadonlyArray<Ended>, survivors: ReadonlyArray<number>): Ending => ({
  kind: "ended",
  exitCode: command.exitCode,
  signal: command.signalCode === null ? null : String(command.signalCode),
  killed,
  survivors,
})

/**
 * Ends what is left of a command (every descendant), reaps the orphans ended meanwhile, and answers the report of
 * its end: at once when the command has exited alone, the usual case.
 */
const conclude = (command: Bun.Subprocess, name: string, grace: number): Ending | Promise<Ending> => {
  if (alone(command)) return ended(command, [], [])
  return (async () => {
    // Should /proc be unreadable, the group is still ended rather than the call left waiting.
    let { killed, survivors } = await endAll(grace).catch(() => endGroup(command, name, grace))
    await command.exited
    if (sealed) survivors = await sweep(command)
    // Not sealed (no Landlock signal scope, or a command run without a sandbox): a chain of processes that each fork
    // the next and exit changes pid faster than /proc is read, and one search can miss it; it cannot leave this
    // subreaper without a child, though.
    if (!sealed && !alone(command)) {
      const chased = await chase(command)
      killed = [...killed, ...chased.killed.filter((found) => !killed.some((known) => known.pid === found.pid))]
      survivors = chased.survivors
    }
    // Orphans it adopted and ended are its children: reap them, so none is left a zombie.
    while (reapChild() > 0);
    return ended(command, killed, survivors)
  })()
}

/** Sends the last report and exits. */
const deliver = (report: Ending): Promise<never> =>
  // Core gone: nobody to tell. Otherwise a report that cannot be delivered must not keep this process alive.
  (urgent ? Promise.resolve() : Promise.race([send(report), sleep(1000)])).then(endReaper).then(() => process.exit(0))

/** Delivers the report as soon as it is known: in the same turn when the command exited alone. */
const settle = (report: Ending | Promise<Ending>): Promise<never> =>
  report instanceof Promise ? report.then(deliver) : deliver(report)

/**
 * Makes the supervisor what it must be before any order: dying with core (and exiting now if core is gone already),
 * a subreaper, unable to gain privileges, unreadable by its command, and keeping the command from core's ports.
 * Answers whether it is the first process of its own PID namespace, and how it reads core's pid.
 */
const harden = (parent: number, pid: boolean, way: Namespace.Way, deny: ReadonlyArray<number>, rules: boolean) => {
  // Dies with core: a parent-death signal, then a check that core did not die before it was set.
  Native.prctl(Native.PR_SET_PDEATHSIG, SIGHUP)
  // The first process of its own PID namespace sees no parent (getppid answers 0): its parent is read from the
  // host's /proc, through a handle opened before the namespace's own /proc covers it.
  const inNamespace = pid && process.pid === 1
  const parentOf = inNamespace ? hostParent() : Native.getppid
  if (parentOf() !== parent) process.exit(0)
  // Its command then sees only the namespace's processes: where this cannot be mounted, it sees the host's /proc
  // (its pids still the namespace's, and everything still ending with the supervisor).
  if (inNamespace) Namespace.ownProc(way)
  // And has at most as many processes and threads as a non-root core's command (which RLIMIT_NPROC bounds, a limit
  // the kernel does not apply to root): where the kernel cannot bound the namespace, it runs unbounded.
  if (inNamespace) Namespace.boundProcesses(Starter.PROCESSES)
  Native.prctl(Native.PR_SET_CHILD_SUBREAPER, 1)
  Native.prctl(Native.PR_SET_NO_NEW_PRIVS, 1)
  // Should the machine run out of memory, the kernel ends a command (which inherits this) before core or anything
  // else: a command's memory is not bounded otherwise, and a hog would take the sidecar down with it.
  try {
    writeFileSync("/proc/self/oom_score_adj", "1000")
  } catch {
    // No /proc to write (a namespace without it): the kernel's own choice stands.
  }
  // Nothing the command runs may read this process's memory or environment, nor core's (both non-dumpable):
  // even run by root, the command cannot gain CAP_SYS_PTRACE, which would override that. (Fails harmlessly
  // for a user who has no capabilities to drop.)
  Native.prctl(Native.PR_SET_DUMPABLE, 0)
  Native.prctl(Native.PR_CAPBSET_DROP, Native.CAP_SYS_PTRACE)
  // Core's own ports, before the order comes: this layer takes the longest to build, and does not depend on it.
  // (It leaves the filesystem alone, so mounting stays possible until the order's sandbox is applied.) Where the
  // kernel refuses it, no order runs (see `main`).
  const unkept = Starter.denyPorts({ deny, rules })
  return { inNamespace, parentOf, unkept }
}

/** Spawns an order's command; answers it, or the report of why it could not start (refused with a code, or failed). */
const spawnOrder = (order: Order): Bun.Subprocess | Extract<Report, { kind: "refused" | "failed" }> => {
  try {
    const stdin = order.stdinPipe === true ? "inherit" : order.stdin === undefined ? "ignore" : Buffer.from(order.stdin, "base64")
    return spawn(order.argv, order.cwd, order.env, stdin)
  } catch (cause) {
    const code = typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
    const text = cause instanceof Error ? cause.message : String(cause)
    return typeof code === "string" ? { kind: "refused", code, message: text } : { kind: "failed", message: text }
  }
}

/** Sends the report of a command that did not start, and exits. */
const refuse = (report: Extract<Report, { kind: "refused" | "failed" }>) => void send(report).then(() => process.exit(0))

/** How it went with a starter's order: the command runs, or the report of why it does not. */
type Outcome =
  | { readonly kind: "started"; readonly readOnly: boolean; readonly reaper?: number | undefined }
  | Extract<Report, { kind: "refused" | "failed" }>
  /** It ended before saying anything of an order (killed while it waited, say): nothing of the command ran. */
  | { readonly kind: "gone" }

/** What a starter that ended before starting the command is reported as. */
const STARTER_GONE = "The sandboxed command's starter ended before starting it"

/** A starter (./starter): the process a sandboxed command starts as. */
interface Starting {
  readonly process: Bun.Subprocess
  /** True once it is warm and waiting for its order; false when it ended before. */
  readonly ready: Promise<boolean>
  /** Known once its order was taken: its exec closes its channel (started), or it says why not. */
  readonly outcome: Promise<Outcome>
  /** Whether its channel has closed: it exec'd, or it is gone. */
  readonly closed: () => boolean
  /** The end the supervisor writes of the pipe the command's reaper would read (`reaper`), where it was given one. */
  readonly reap?: number | undefined
}

/**
 * Starts a starter for this supervisor, in a session of its own (the command's), with the supervisor's stdout and
 * stderr (the command's output) and `stdin`: the supervisor's own, for a server's pipe, or /dev/null. Given `reaped`
 * (the supervisor has no PID namespace), it is handed the pipe its command's reaper would read.
 */
const startStarter = (flags: Starter.Flags, stdin: "inherit" | "ignore", reaped: boolean): Starting => {
  // Core's ruleset for its ports goes on as the starter's descriptor 3, where this process was handed one; the
  // reaper's pipe after it.
  const given = flags.rules === true && flags.deny.length > 0 ? [Starter.RULES_FD] : []
  const pipe = reaped ? Native.pipe() : undefined
  const ends = typeof pipe === "object" ? pipe : undefined
  if (ends !== undefined) given.push(ends[0])
  const reap = ends === undefined ? undefined : 2 + given.length
  let onReady: (ready: boolean) => void = () => {}
  let onOutcome: (outcome: Outcome) => void = () => {}
  const ready = new Promise<boolean>((resolve) => (onReady = resolve))
  const outcome = new Promise<Outcome>((resolve) => (onOutcome = resolve))
  let applied: { readonly readOnly: boolean; readonly reaper?: number | undefined } | undefined
  let closed = false
  let process_: Bun.Subprocess
  try {
    process_ = Bun.spawn(
      [
        ...OwnExecutable.argv(join(import.meta.dir, "launch.ts")),
        Starter.LAUNCH,
        String(process.pid),
        ...Starter.argv({ ...flags, reap }),
      ],
      {
        cwd: "/",
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
        stdio: [stdin, "inherit", "inherit", ...given],
        detached: true,
        serialization: "json",
        ipc: (report: Starter.Report) => {
          if (report.kind === "ready") onReady(true)
          else if (report.kind === "applied") applied = report
          else onOutcome(report)
        },
        // Its channel closes on the exec, which leaves it nothing that speaks to the supervisor: the command started.
        // Closed with nothing said, it ended before.
        onDisconnect: () => {
          closed = true
          onReady(false)
          onOutcome(applied === undefined ? { kind: "gone" } : { kind: "started", readOnly: applied.readOnly, reaper: applied.reaper })
        },
      },
    )
  } catch (cause) {
    if (ends !== undefined) Native.close(ends[1])
    throw cause
  } finally {
    // The starter's end is its own now (and its reaper's).
    if (ends !== undefined) Native.close(ends[0])
  }
  ours(process_)
  return { process: process_, ready, outcome, closed: () => closed, reap: ends?.[1] }
}

/** Ends a starter that will not be used, and waits until it is gone (it must not be taken for the command's). */
const dismiss = async (starter: Starting) => {
  if (starter.reap !== undefined) Native.close(starter.reap)
  starter.process.kill("SIGKILL")
  await starter.process.exited
}

/**
 * Runs the supervisor to its end (it exits the process); `parent` is core's pid. With `isolate`, it mounts the
 * paths an order names read-only for its command, where it holds CAP_SYS_ADMIN (see ./namespace); with `deny`,
 * the command cannot connect to those TCP ports, where Landlock has network rules. A sandboxed order runs through a
 * starter (./starter), readied while the supervisor waits when `sandbox` says one will come.
 */
export const main = async (
  parent: number,
  { isolate, deny, pid, sandbox = false, cold = false, rules = false, userns = false }: Flags = { isolate: false, deny: [], pid: false },
): Promise<never> => {
  // What core handed over from descriptor 3 on (its ruleset for its ports, passed on to the starters as they start;
  // core's executable, where unshare started this one) reaches no command.
  Native.closeAllOnExec()
  const way: Namespace.Way = isolate && Native.capable(Native.CAP_SYS_ADMIN) ? "mount" : "none"
  // The first process of the command's PID namespace: its own kill(-1) reaches the command's processes alone.
  // Otherwise the command's starter leaves a reaper for it (`reaper`).
  namespaced = pid && process.pid === 1
  sealed = namespaced
  /**
   * The starter readied for the order, and the grants core expects it to make. A sandboxed spare's starts first,
   * so that its start overlaps this one's: it readies itself (its /proc, what every sandbox mounts).
   */
  let starter: Starting | undefined = sandbox
    ? startStarter({ isolate, sandbox: !cold, cold, pid: sealed, deny, rules, userns }, "ignore", !sealed)
    : undefined
  let expected: Expect | undefined
  // Core's ports are kept from the commands this process spawns itself: not a sandboxed spare's, as its starter
  // does that for its own (unless an order without a sandbox comes, below).
  let denied = !sandbox
  const hardened = harden(parent, pid, way, denied ? deny : [], rules)
  const { inNamespace, parentOf } = hardened
  /** Why this process is not off core's ports though it must be, if so: then every order is refused. */
  let unkept = hardened.unkept

  let child: Bun.Subprocess | undefined
  let ending: Promise<never> | undefined
  /** While a starter has the order: settled once the command runs or cannot. */
  let launching: Promise<unknown> | undefined
  let graceMs = GRACE_MS
  /** The command's name as the kernel shows it, for a report made without /proc. */
  let name = ""
  const finish = (grace: number): Promise<never> =>
    (ending ??= (launching ?? Promise.resolve()).then(() =>
      child === undefined ? process.exit(0) : settle(conclude(child, name, grace)),
    ))

  // SIGTERM: end gracefully (a timeout or a cancel). SIGHUP: core is gone or forcing its exit: no grace.
  process.on("SIGTERM", () => void finish(graceMs))
  process.on("SIGHUP", () => {
    urgent = true
    void finish(0)
  })
  // A terminal's Ctrl-C is core's to handle; core then tells the supervisor.
  process.on("SIGINT", () => {})
  process.on("disconnect", () => {
    urgent = true
    void finish(0)
  })
  // The order waits for the warm-up below: its spawn must be the supervisor's only child, or ending the command
  // would find the warm-up's process still there.
  let warmed: () => void = () => {}
  const warm = new Promise<void>((resolve) => (warmed = resolve))
  let ordered = false
  let isWarm = false
  process.on("message", (message: unknown) => {
    if ((message as { readonly kind?: string }).kind === "prime") return
    if ((message as { readonly kind?: string }).kind === "expect") {
      if (ordered) return
      expected = message as Expect
      if (starter !== undefined) starter.process.send(expected)
      return
    }
    if (ordered) return
    ordered = true
    if (isWarm) run(message as Order)
    else void warm.then(() => run(message as Order))
  })
  /** Runs an order without a sandbox: spawned by this process, after its read-only mounts (none: see `run`). */
  const runHere = (order: Order | undefined) => {
    if (order === undefined) return
    if (!denied) unkept = Starter.denyPorts({ deny, rules })
    denied = true
    if (unkept !== undefined) return refuse({ kind: "failed", message: Starter.unkept(unkept) })
    const applied = Starter.apply(order, way, Starter.readied())
    if ("failed" in applied) return refuse({ kind: "failed", message: applied.failed })
    const spawned = spawnOrder(order)
    if ("kind" in spawned) return refuse(spawned)
    started(spawned, applied.readOnly)
  }
  /**
   * Runs a sandboxed order through a starter: the one readied, or one started now (a server's, which reads this
   * process's stdin). This process stays out of the sandbox. (None: see `run`.)
   */
  const runStarted = async (order: Order | undefined) => {
    if (order === undefined) return
    // A starter started now would inherit this process's layer on core's ports, which the kernel refused.
    if (unkept !== undefined) return refuse({ kind: "failed", message: Starter.unkept(unkept) })
    const readied = starter
    starter = undefined
    /** A starter started now: it inherits this process's namespaces and its layer on core's ports. */
    const fresh = () =>
      startStarter(
        { isolate, sandbox: false, cold: true, pid: false, deny: denied ? [] : deny, rules, userns },
        order.stdinPipe === true ? "inherit" : "ignore",
        !inNamespace,
      )
    const handOver = (to: Starting): Promise<Outcome> => {
      try {
        to.process.send(order)
      } catch {
        // Gone already: its channel's close says so.
      }
      return to.outcome
    }
    // The readied one does not take a server's order (its stdin is /dev/null), nor one it cannot (it ended while it
    // waited, killed from outside): it goes, and one started now takes the order.
    let using = readied !== undefined && order.stdinPipe !== true && !readied.closed() ? readied : undefined
    if (readied !== undefined && using === undefined) await dismiss(readied)
    using ??= fresh()
    let outcome = await handOver(using)
    // The readied one ended as the order came, before it did any of it: the order is given to one started now.
    if (outcome.kind === "gone" && using === readied) {
      await dismiss(using)
      using = fresh()
      outcome = await handOver(using)
    }
    if (outcome.kind === "gone") return refuse({ kind: "failed", message: STARTER_GONE })
    if (outcome.kind !== "started") return refuse(outcome)
    if (outcome.reaper !== undefined && using.reap !== undefined) {
      reaper = { pid: outcome.reaper, fd: using.reap }
      sealed = true
    } else if (using.reap !== undefined) Native.close(using.reap)
    started(using.process, outcome.readOnly)
  }
  /** The command runs: reported, and followed to its end (none: see `run`). */
  const started = (command: Bun.Subprocess | undefined, readOnly: boolean) => {
    if (command === undefined) return
    child = command
    // The command's output pipes are the command's alone now: they close as soon as its last process is gone,
    // without waiting for the supervisor to exit.
    Native.releaseOutput()
    setInterval(orphans, REAP_MS).unref()
    void send({ kind: "started", pid: command.pid, readOnly, pidNamespace: inNamespace })
    void command.exited.then(() => finish(graceMs))
  }
  /**
   * Runs the order. Without one it runs nothing, but has its code compiled: the warm-up calls it so before the order
   * (a function's first call costs a tenth of a millisecond or more, compiling it).
   */
  const run = (order: Order | undefined) => {
    if (order === undefined) {
      runHere(undefined)
      void runStarted(undefined)
      started(undefined, false)
      return
    }
    if (child !== undefined || ending !== undefined) return
    graceMs = order.graceMs
    name = (order.argv[0] ?? "").split("/").pop()!.slice(0, 15)
    if (order.grants === undefined) {
      // A starter readied for a sandbox is not this order's: it goes before the command starts.
      const unused = starter
      starter = undefined
      if (unused === undefined) return runHere(order)
      launching = dismiss(unused).then(() => runHere(order))
      return
    }
    // Whatever goes wrong on the way is reported at once, rather than left to core's wait for a start.
    launching = runStarted(order).catch((cause: unknown) =>
      refuse({ kind: "failed", message: `Could not start the sandboxed command: ${cause instanceof Error ? cause.message : String(cause)}` }),
    )
  }
  // Should the parent-death signal be missed, the supervisor still notices that core is gone.
  // And should ending ever stall with core gone, nothing is left to report to: it stops itself outright, once the
  // descendants have had their SIGKILL rounds.
  let stalled: ReturnType<typeof setTimeout> | undefined
  setInterval(() => {
    if (parentOf() !== parent) {
      urgent = true
      stalled ??= setTimeout(() => process.kill(process.pid, "SIGKILL"), ORPHAN_DEADLINE_MS)
      void finish(0)
    }
  }, 1000).unref()
  // Code run for the first time in a process costs several milliseconds more than the next time (Bun sets up its
  // spawning on first use; the code of an order and of its end is cold): spent here, while the supervisor waits as
  // the spare, not when the command starts. A supervisor readied for a sandbox readies its starter, which spends
  // the sandbox's own (and makes what every sandbox mounts); any other starts a command and concludes its end as an
  // order's are. One started for an order at hand (`cold`) spends nothing ahead: the order would only wait for it.
  if (starter !== undefined) await starter.ready
  else if (!cold) await warmUp(way)
  run(undefined)
  isWarm = true
  warmed()
  void send({ kind: "ready" })
  return new Promise<never>(() => {})
}

/**
 * Applies an order that asks for nothing (no grants, nothing read-only: it only clears the ambient capabilities,
 * as every order does), opens and closes /dev/null as `Native.releaseOutput` does, starts a command and concludes
 * its end, as an order's are: to have that code compiled before the order.
 */
const warmUp = async (way: Namespace.Way) => {
  Starter.apply({ kind: "run", argv: [], cwd: "/", env: {}, graceMs: 0 }, way, Starter.readied())
  Native.releaseOutput([])
  const warmer = SystemPrograms.find("true")
  if (warmer === null) return
  try {
    const warming = spawnOrder({ kind: "run", argv: [warmer], cwd: "/", env: {}, graceMs: 0 })
    if ("kind" in warming) return
    // Concluded once it has exited, as an order's command is: the usual end, which asks nothing to stop.
    await warming.exited
    await conclude(warming, "", 0)
  } catch {
    // nothing to warm with: the command's spawn takes the first-use cost
  }
}
