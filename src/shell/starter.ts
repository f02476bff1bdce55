export * as Starter from "./starter"

// The process a sandboxed command starts as: core re-invoked once more (`core __start PID`, or `bun launch.ts
// __start PID` from source), a child of the command's supervisor (./supervisor). When the order comes, it applies
// the command's sandbox to itself (mounts, covers, Landlock rules, dropped capabilities, the socket filter) and then
// becomes the command (execve): the command is the sandbox's only process. The supervisor itself never enters the
// sandbox, so nothing the command runs shares a Landlock domain with it, and Landlock's signal scope keeps every
// signal from it (kill, tgkill, pidfd_send_signal, a SIGIO owner): a command cannot end its supervisor and outlive
// the call, whether or not core could give it a PID namespace. A spare supervisor readies its starter while it waits,
// so the order pays neither start. Like the supervisor, it imports nothing heavy and never writes to stdout or stderr.

import { lstatSync, writeFileSync } from "node:fs"
import { dirname } from "node:path"
import { Capabilities } from "./capabilities"
import { Landlock } from "./landlock"
import { Namespace } from "./namespace"
import { Native } from "./native"
import { Others } from "./others"
import { Sockets } from "./sockets"
import type { Supervisor } from "./supervisor"
import { SystemPrograms } from "./system-programs"

/** The argument that makes the core executable a starter. */
export const LAUNCH = "__start"
/** An argument after the supervisor's pid: the starter may make a mount namespace (Supervisor.ISOLATE). */
export const ISOLATE = "isolate"
/** An argument after the supervisor's pid: the starter makes ahead what every sandbox mounts (Supervisor.SANDBOX). */
export const SANDBOX = "sandbox"
/** An argument after the supervisor's pid: the order comes at once; no warm-up would pay off. */
export const COLD = "cold"
/** An argument after the supervisor's pid: it is in its supervisor's PID namespace, and mounts that namespace's /proc. */
export const PID = "pid"
/**
 * An argument after the supervisor's pid: core started the supervisor in a user namespace of its own (through
 * `unshare --user`, where core is not root), in which the kernel counts the command's processes apart (PROCESSES).
 */
export const USERNS = "userns"
/** An argument after the supervisor's pid, `deny=PORT,PORT`: core's own TCP ports, which the command may not connect to. */
export const DENY = "deny="
/**
 * An argument after the supervisor's pid, with `deny=`: descriptor RULES_FD is core's ruleset for those ports
 * (Landlock.connectRuleset), built once by core rather than by every supervisor and starter (a tenth of a second or
 * more each, which a call waited for whenever no spare was ready).
 */
export const RULES = "rules"
export const RULES_FD = 3
/**
 * An argument after the supervisor's pid, `reap=FD`: the supervisor has no PID namespace, and descriptor FD is the
 * end of a pipe its reaper reads (`reaper`).
 */
export const REAP = "reap="

export interface Flags {
  readonly isolate: boolean
  readonly sandbox: boolean
  readonly cold: boolean
  readonly pid: boolean
  readonly deny: ReadonlyArray<number>
  readonly rules?: boolean
  readonly userns?: boolean
  readonly reap?: number | undefined
}

export const flags = (args: ReadonlyArray<string>): Flags => ({
  isolate: args.includes(ISOLATE),
  sandbox: args.includes(SANDBOX),
  cold: args.includes(COLD),
  pid: args.includes(PID),
  deny: ports(args),
  rules: args.includes(RULES),
  userns: args.includes(USERNS),
  reap: reapOf(args),
})

/** The descriptor a `reap=FD` argument names, if any. */
const reapOf = (args: ReadonlyArray<string>): number | undefined => {
  const fd = Number(args.find((arg) => arg.startsWith(REAP))?.slice(REAP.length))
  return Number.isInteger(fd) && fd > 2 ? fd : undefined
}

/** Core's ports, and whether its ruleset for them was handed over. */
type PortFlags = { readonly deny: ReadonlyArray<number>; readonly rules?: boolean | undefined }

/**
 * Keeps this process (and what it spawns) off core's ports `flags.deny`: with core's ruleset where it was handed
 * over (then marked close-on-exec, so that no command it spawns inherits it), else with one built here. Answers
 * undefined, or why it could not, where the kernel has network rules (ABI 4): the kernel refuses a layer past its
 * sixteenth (a command may have stacked fifteen of its own before asking core to run another) or without memory,
 * and a command must not then start able to reach core.
 */
export const denyPorts = (flags: PortFlags): string | undefined => {
  if (flags.deny.length === 0 || Landlock.abi() < 4) return undefined
  const failed = flags.rules === true && Landlock.restrictWith(RULES_FD) === undefined ? undefined : Landlock.denyConnect(flags.deny)
  // The rules see TCP alone: Multipath TCP and SMC, which fall back to TCP against core's listener, are refused.
  return failed ?? Sockets.refuseUnmediated()
}

/** Why a command does not start when `denyPorts` could not keep it off core's ports. */
export const unkept = (why: string): string => `Could not keep the command off core's ports: ${why}`

/** Marks core's ruleset, when it was handed over, close-on-exec: no program this process runs may add to it. */
export const keepRules = (flags: PortFlags): void => {
  if (flags.deny.length > 0 && flags.rules === true) Native.closeOnExec(RULES_FD)
}

/** The TCP ports a `deny=PORT,PORT` argument names, if any. */
export const ports = (args: ReadonlyArray<string>): ReadonlyArray<number> =>
  (args.find((arg) => arg.startsWith(DENY))?.slice(DENY.length).split(",") ?? [])
    .map(Number)
    .filter((port) => Number.isInteger(port) && port > 0 && port < 65_536)

/** The arguments that give a starter `flags`. */
export const argv = (flags: Flags): ReadonlyArray<string> => [
  ...(flags.isolate ? [ISOLATE] : []),
  ...(flags.sandbox ? [SANDBOX] : []),
  ...(flags.cold ? [COLD] : []),
  ...(flags.pid ? [PID] : []),
  ...(flags.userns === true ? [USERNS] : []),
  ...(flags.deny.length > 0 ? [`${DENY}${flags.deny.join(",")}`, ...(flags.rules === true ? [RULES] : [])] : []),
  ...(flags.reap === undefined ? [] : [`${REAP}${flags.reap}`]),
]

/** What the supervisor tells its starter: the grants to expect, then the order. */
export type Message = Supervisor.Expect | Supervisor.Order

/** What a starter tells its supervisor. Once the command runs, it says nothing more: its channel closes with the exec. */
export type Report =
  /** Warmed up and waiting for the order. */
  | { readonly kind: "ready" }
  /**
   * The sandbox is applied (`readOnly`: the order's read-only paths were mounted so; `reaper`: the pid of the reaper
   * started for the command, see `reaper`); the exec comes next.
   */
  | { readonly kind: "applied"; readonly readOnly: boolean; readonly reaper?: number | undefined }
  | Extract<Supervisor.Report, { kind: "refused" | "failed" }>

/** How many times the warm-up runs the sandbox's code with prepared rules: enough for it to be compiled. */
const WARM_ROUNDS = 3

/** How long rules built ahead from expected grants are used: past it, they are built again as the order comes. */
export const EXPECTED_MS = 5_000

const SIGKILL = 9

/** What a starter readies while it waits, for the order to come. */
export interface Readied {
  /** The sandbox's shared rules, made ready during the warm-up. */
  prepared: Landlock.Prepared | undefined
  /** The system's secrets covered so far (Namespace.hideSystemSecrets). */
  readonly hidden: Namespace.Hidden
  /** The mounts every sandbox has, made ahead (SANDBOX): whether /dev/shm is the command's own. */
  ahead: { readonly sharedMemory: boolean } | undefined
  /** The grants the order is expected to make (Expect), and when their rules were built ahead. */
  expected: Landlock.Grants | undefined
  expectedAt: number | undefined
}

export const readied = (): Readied => ({
  prepared: undefined,
  hidden: new Map(),
  ahead: undefined,
  expected: undefined,
  expectedAt: undefined,
})

/** Builds ahead the rules of the expected grants, once the warm-up is done (it ends with the mounts made ahead). */
const expectRules = (readied: Readied) => {
  const expected = readied.expected
  if (expected === undefined || Landlock.abi() === 0) return
  const grants = readied.ahead?.sharedMemory ? { ...expected, write: [...expected.write, Namespace.SHARED_MEMORY] } : expected
  const made = Landlock.prepare(Landlock.abi(), grants)
  if (made === undefined) return
  if (readied.prepared !== undefined) Landlock.discard(readied.prepared)
  readied.prepared = made
  readied.expectedAt = performance.now()
}

/**
 * The folders to pin (Supervisor.Order.pinned) for a command that may write `writable`: each pinned one, and each
 * folder between a place it may write and a pinned one in it (`sub` for `sub/realgit`), since renaming that folder
 * would move the pinned one away as surely; parents first.
 */
const pinsOf = (pinned: ReadonlyArray<string>, writable: ReadonlyArray<string>): ReadonlyArray<string> => {
  const pins = new Set(pinned)
  for (const path of pinned) {
    for (const place of writable) {
      if (path === place || !Landlock.within(place, path)) continue
      for (let folder = dirname(path); folder !== place && Landlock.within(place, folder); folder = dirname(folder)) pins.add(folder)
    }
  }
  return [...pins].sort((a, b) => a.length - b.length)
}

/**
 * Applies an order's isolation to this thread, whose children (or whose exec) get it: read-only mounts, and with
 * grants the sandbox (hidden sockets, private terminals and shared memory, covers, Landlock rules, dropped
 * capabilities), then, given `ports`, the layer keeping it off core's ports. Answers whether the read-only paths
 * were mounted, or why the command must not start.
 */
export const apply = (
  order: Supervisor.Order,
  way: Namespace.Way,
  readied: Readied,
  ports?: PortFlags,
): { readonly readOnly: boolean; readonly reaper?: number | undefined } | { readonly failed: string } => {
  if (order.grants === undefined && readied.prepared !== undefined) Landlock.discard(readied.prepared)
  // A non-root core's command is in the user namespace core started its supervisor in, where the kernel counts its
  // processes and threads apart from the user's others: there they are bounded (a fork bomb), for good.
  if (ownNamespace) {
    const failed = Native.lowerLimit(Native.RLIMIT_NPROC, PROCESSES)
    if (failed !== 0) return { failed: `Could not bound the command's processes (errno ${failed})` }
  }
  const pins = pinsOf(order.pinned ?? [], order.grants?.write ?? [])
  // Where it cannot, the entries stay writable; core puts back what it can once the command has ended.
  const readOnly =
    ((order.readOnly?.length ?? 0) > 0 || pins.length > 0) && Namespace.protect(way, order.readOnly ?? [], pins) === undefined
  // Mounted on what core looked at, or the command does not start: another command of the Location may have moved a
  // folder above one (`.git`, `lib`) between core's look and the mount, and put it back once this one wrote the real
  // files (the mount then covered nothing, or its stand-in).
  if (readOnly && order.readOnlyIds !== undefined) {
    const moved = order.readOnly!.find((path, index) => identityOf(path) !== order.readOnlyIds![index])
    if (moved !== undefined) {
      return {
        failed:
          `a command running beside this one in the Location moved ${moved} as this one started, which core keeps ` +
          "read-only to commands; run this one again once that one has ended",
      }
    }
  }
  // Mounting, so before Landlock; where this process cannot, the command reaches every socket file, as it would
  // without the sandbox.
  if (order.grants !== undefined && order.sockets !== undefined && way === "mount") Sockets.hide(order.sockets)
  // Mounting too: /dev/pts and /dev/shm become the command's own, /dev/shm writable; where it cannot, the
  // command sees the host's terminals and /dev/shm stays unwritable.
  // Made ahead in a starter readied for a sandbox, but for the system's secrets added or replaced since.
  if (order.grants !== undefined) {
    if (readied.ahead === undefined) Namespace.privateTerminals(way)
    Namespace.hideSystemSecrets(way, readied.hidden)
  }
  // System V IPC and POSIX message queues of its own (a user's shared memory segments and queues were read and
  // written); where it cannot have them, it has none (Others.refuseIpc, below).
  const ownIpc = order.grants !== undefined && Native.unshare(Native.CLONE_NEWIPC) === 0
  const sharedMemory =
    order.grants !== undefined && (readied.ahead?.sharedMemory ?? Namespace.privateSharedMemory(way) === undefined)
  const grants =
    order.grants !== undefined && sharedMemory
      ? { ...order.grants, write: [...order.grants.write, Namespace.SHARED_MEMORY] }
      : order.grants
  // Every mount read-only but the places it may write: Landlock leaves a file's mode, owner, times and extended
  // attributes to the mounts. Where this process cannot mount, those stay open to the command (docs/shell.md).
  if (grants !== undefined && way === "mount") {
    // A folder pinned under a place it may write (the Location's .git) was made read-only with the rest: bound
    // again after that place, writable as it is.
    const pinned = pins.filter((path) => grants.write.some((place) => Landlock.within(place, path)))
    const kept = Namespace.readOnlyOutside(way, [...grants.write, ...pinned])
    if (kept !== undefined) return { failed: `Could not keep the command from changing files it may not write: ${kept}` }
  }
  // What the rules deny inside granted trees (last of the mounts: each namespace made after it would copy every
  // cover): a command that would read it must not start.
  if (order.grants !== undefined && order.cover !== undefined) {
    const uncovered = Namespace.cover(way, order.cover)
    if (uncovered !== undefined) return { failed: `Could not keep what the read and edit rules deny from the command: ${uncovered}` }
  }
  // After the last mount, before the command's own layer: the command's domain is nested in the reaper's.
  const reaper = order.grants !== undefined && reaping !== undefined ? reaperFor(reaping) : undefined
  // Rules built ahead from expected grants are as old as the wait: past EXPECTED_MS, built again now.
  if (readied.expectedAt !== undefined && performance.now() - readied.expectedAt > EXPECTED_MS && readied.prepared !== undefined) {
    Landlock.discard(readied.prepared)
    readied.prepared = undefined
  }
  if (grants !== undefined) {
    const failed = Landlock.restrict(grants, Landlock.abi(), true, [], readied.prepared)
    if (failed !== undefined) return { failed: `Could not apply the sandbox: ${failed}` }
  }
  // Core's ports last, on top of the filesystem layer: a new layer copies every rule of the layers under it, and
  // the ports' layer has one for each of the other 65,535 ports, so a filesystem layer made on top of it cost as
  // much as the ports' layer itself (17 ms here); made first, the filesystem layer costs half a millisecond.
  if (ports !== undefined) {
    const failed = denyPorts(ports)
    if (failed !== undefined) return { failed: unkept(failed) }
  }
  if (order.grants !== undefined) {
    // Last, as the mounts and rules above needed them. Where the kernel refuses, the command runs as it would
    // without them (nothing to drop, or no seccomp).
    Capabilities.drop()
    if (order.sockets === undefined) Sockets.refuse()
    // Nor may it set another process's limits or scheduling (core's, its supervisor's, another call's): Landlock
    // does not mediate those. Where the kernel has no seccomp, it could.
    Others.refuse()
    if (!ownIpc) Others.refuseIpc()
  }
  // Capabilities a user namespace gave the supervisor stay its own: the command inherits none of them.
  Native.prctl(Native.PR_CAP_AMBIENT, Native.PR_CAP_AMBIENT_CLEAR_ALL)
  return { readOnly, reaper }
}

/**
 * The most processes and threads a command of a non-root core may have at once (RLIMIT_NPROC, soft and hard, where
 * the user's own limit is not lower), its supervisor's among them.
 */
export const PROCESSES = 4096

/** Whether core started this starter's supervisor in a user namespace of its own (USERNS), set as the starter starts. */
let ownNamespace = false

/** The reaper's pipe (REAP) and the supervisor's pid, set as the starter starts where the supervisor gave one. */
let reaping: { readonly fd: number; readonly supervisor: number } | undefined

const EPERM = 1

/**
 * What a reaper runs: for each line the supervisor writes, one kill(-1, SIGKILL), which reaches every process of
 * the reaper's domain but itself (the command's, nested in it) and nothing else; when the pipe ends (the supervisor
 * gone, killed outright or by the OOM killer), one more, and it ends: nothing of the command outlives its
 * supervisor. Started in the background and left by the shell that started it, so that it is the supervisor's child
 * (a subreaper's) rather than the command's, in a session of its own; that shell prints its pid.
 */
const REAPER = "( while read -r _; do kill -9 -1; done; kill -9 -1 ) <&3 >/dev/null 2>&1 3<&- & echo $!"

/**
 * Where the supervisor has no PID namespace, seals this thread in a Landlock domain of its own that handles the
 * signal scope and grants every move (Landlock.scopeSignals with `moves`), after the mounts (a thread in it can no
 * longer mount), and starts in it the command's reaper: a process outside the command's domain, which the command
 * therefore cannot signal, trace or read, and whose kill(-1) ends every process of the command in one step, found
 * or not (the supervisor, outside every domain, would reach every process of the user). The scope is proven before
 * anything relies on it: it must refuse a signal to the supervisor, a process outside it. Answers the reaper's pid,
 * or undefined where there is none (no signal scope before ABI 6, no shell): the supervisor then chases what is
 * left through its own children.
 */
const reaperFor = ({ fd, supervisor }: { readonly fd: number; readonly supervisor: number }): number | undefined => {
  if (Landlock.scopeSignals(Landlock.abi(), true) !== undefined || Native.kill(supervisor, 0) !== EPERM) return undefined
  const shell = SystemPrograms.find("sh")
  if (shell === null) return undefined
  // Capabilities a user namespace gave the supervisor are not the reaper's either: it needs none.
  Native.prctl(Native.PR_CAP_AMBIENT, Native.PR_CAP_AMBIENT_CLEAR_ALL)
  try {
    const started = Bun.spawnSync([shell, "-c", REAPER], { stdio: ["ignore", "pipe", "ignore", fd], detached: true, env: {}, cwd: "/" })
    const pid = Number(started.stdout.toString().trim())
    return started.exitCode === 0 && Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

/** Who the entry at `path` is (`dev:ino`, not following a link), or undefined where there is none. */
const identityOf = (path: string): string | undefined => {
  try {
    const stats = lstatSync(path)
    return `${stats.dev}:${stats.ino}`
  } catch {
    return undefined
  }
}

/** Spends, while the starter waits, the first-use costs an order would otherwise pay, and makes ahead what every sandbox mounts. */
const warmUp = (ready: Readied, sandbox: boolean, way: Namespace.Way) => {
  // An order that asks for nothing (it only clears the ambient capabilities, as every order does), against a
  // readiness of its own: `apply` compiled before the order.
  apply({ kind: "run", argv: [], cwd: "/", env: {}, graceMs: 0 }, way, readied())
  Capabilities.drop(false)
  // The exec's strings, as `become` builds them (Native.execute): their first build is not the order's.
  Native.cStrings(Object.entries(process.env).map(([name, value]) => `${name}=${value}`))
  Sockets.prepare()
  Others.prepare()
  // A spawn's first costs twenty milliseconds more than the next: the reaper's is not the order's.
  const warmer = reaping === undefined ? null : SystemPrograms.find("true")
  if (warmer !== null) Bun.spawnSync([warmer], { stdio: ["ignore", "pipe", "ignore"], detached: true, env: {}, cwd: "/" })
  if (Landlock.abi() > 0) {
    const sample = { read: Landlock.granted(Landlock.SYSTEM_READABLE, []), write: ["/tmp"], devices: Landlock.devices() }
    Landlock.restrict(sample, Landlock.abi(), false)
    for (let round = 0; round < WARM_ROUNDS; round++) Landlock.restrict(sample, Landlock.abi(), false, [], Landlock.prepare())
    ready.prepared = Landlock.prepare()
  }
  if (sandbox && way === "mount") {
    Namespace.privateTerminals(way)
    Namespace.hideSystemSecrets(way, ready.hidden)
    ready.ahead = { sharedMemory: Namespace.privateSharedMemory(way) === undefined }
  }
}

const send = (report: Report): Promise<void> =>
  new Promise((resolve) => {
    if (process.send === undefined || !process.connected) return resolve()
    process.send(report, undefined, undefined, () => resolve())
  })

/** The errno's name and text, as Bun.spawn words a refused start. */
const refusal = (errno: number, syscall: string, path: string): Extract<Report, { kind: "refused" }> => {
  // node:util costs milliseconds to load, and every core that settles in process imports this module: it is
  // loaded only here, for a start refused.
  const { getSystemErrorMap } = require("node:util") as typeof import("node:util")
  const [code, text] = getSystemErrorMap().get(-errno) ?? [`E${errno}`, "unknown error"]
  return { kind: "refused", code, message: `${code}: ${text}, ${syscall} '${path}'` }
}

/** Where the program of `argv[0]` is, as Bun.spawn finds it: a path as given, a name on the order's PATH. */
const program = (order: Supervisor.Order): string | undefined => {
  const name = order.argv[0] ?? ""
  if (name.includes("/")) return name
  return Bun.which(name, { PATH: order.env.PATH ?? process.env.PATH ?? "", cwd: order.cwd }) ?? undefined
}

/**
 * Becomes the order's command: its stdin, its isolation, its directory, then the exec. Reports why when it cannot
 * (and the supervisor then ends it); returns nothing when the exec is under way, or when there is no order (the
 * warm-up's call, which has it compiled).
 */
const become = async (
  order: Supervisor.Order | undefined,
  way: Namespace.Way,
  readied: Readied,
  ports: PortFlags,
): Promise<Report | undefined> => {
  if (order === undefined) return undefined
  // stdin: the supervisor's own (a server's pipe) when the order says so, as this process was started with it; else
  // the order's bytes in a file of memory, as Bun.spawn gives them, or /dev/null, as it was started with.
  if (order.stdinPipe !== true && order.stdin !== undefined) {
    const fd = Native.memoryFile(Buffer.from(order.stdin, "base64"))
    if (fd < 0) return { kind: "failed", message: `Could not hold the command's stdin (errno ${-fd})` }
    const moved = Native.dup2(fd, 0)
    Native.close(fd)
    if (moved !== 0) return { kind: "failed", message: `Could not give the command its stdin (errno ${moved})` }
  }
  const applied = apply(order, way, readied, ports)
  if ("failed" in applied) return { kind: "failed", message: applied.failed }
  try {
    process.chdir(order.cwd)
  } catch (cause) {
    const errno = typeof cause === "object" && cause !== null && "errno" in cause ? Math.abs(Number(cause.errno)) : 2
    return refusal(errno, "chdir", order.cwd)
  }
  const path = program(order)
  if (path === undefined) return { kind: "refused", code: "ENOENT", message: `Executable not found in $PATH: "${order.argv[0]}"` }
  // Said before the exec, which closes the channel: the supervisor takes that close for the command's start.
  await send({ kind: "applied", readOnly: applied.readOnly, reaper: applied.reaper })
  const env = Object.entries(order.env).map(([name, value]) => `${name}=${value}`)
  return refusal(Native.execute(path, order.argv, env), "execve", path)
}

/**
 * Runs the starter to its exec (or its end); `supervisor` is its supervisor's pid. It readies itself while it waits:
 * with `pid`, the PID namespace's own /proc; unless `cold`, what a sandbox takes (`warmUp`). With `deny`, the layer
 * keeping the command off core's ports comes with the order, last (see `apply`).
 */
export const main = async (supervisor: number, { isolate, sandbox, cold, pid, deny, rules, userns, reap }: Flags): Promise<never> => {
  keepRules({ deny, rules })
  ownNamespace = userns === true
  // The reaper's pipe reaches the reaper alone: never the command, which could read what the supervisor writes.
  if (reap !== undefined) {
    Native.closeOnExec(reap)
    reaping = { fd: reap, supervisor }
  }
  // Dies with its supervisor, the command it becomes too (the signal outlives the exec): nothing of a call is left
  // running once its supervisor is gone.
  Native.prctl(Native.PR_SET_PDEATHSIG, SIGKILL)
  if (Native.getppid() !== supervisor) process.exit(0)
  // Nothing else may read or change it while it waits (the exec makes the command as dumpable as any process).
  Native.prctl(Native.PR_SET_DUMPABLE, 0)
  // The command it becomes is what the kernel ends first when memory runs out (Supervisor's `harden` says why); set
  // here too, as a starter readied ahead may have been started before its supervisor set its own.
  try {
    writeFileSync("/proc/self/oom_score_adj", "1000")
  } catch {
    // No /proc to write: the kernel's own choice stands.
  }
  const way: Namespace.Way = isolate && Native.capable(Native.CAP_SYS_ADMIN) ? "mount" : "none"
  // Read while /proc is still the host's and in reach: the exec restores their defaults.
  Native.ignoredSignals()
  // The command sees only its namespace's processes; where this cannot be mounted, the host's /proc.
  if (pid) Namespace.ownProc(way)
  Native.prctl(Native.PR_SET_NO_NEW_PRIVS, 1)
  const ready = readied()
  let ordered: Supervisor.Order | undefined
  let isWarm = false
  const run = (order: Supervisor.Order | undefined) =>
    void become(order, way, ready, { deny, rules })
      // An error on the way is reported, rather than left to the supervisor's wait for a start.
      .catch((cause: unknown): Report => ({ kind: "failed", message: `Could not start the sandboxed command: ${cause instanceof Error ? cause.message : String(cause)}` }))
      .then((report) => (report === undefined ? undefined : send(report).then(() => process.exit(0))))
  process.on("message", (message: Message) => {
    if (message.kind === "expect") {
      if (ordered !== undefined) return
      ready.expected = message.grants
      if (isWarm) expectRules(ready)
      return
    }
    if (ordered !== undefined) return
    ordered = message
    if (isWarm) run(message)
  })
  // Its supervisor gone: nothing is left to start for.
  process.on("disconnect", () => {
    if (ordered === undefined) process.exit(0)
  })
  if (!cold) {
    warmUp(ready, sandbox, way)
    expectRules(ready)
    // Built again before they are EXPECTED_MS old, while no order has come: the order finds them fresh, however
    // long the starter waited for it.
    setInterval(() => {
      if (ordered === undefined) expectRules(ready)
    }, EXPECTED_MS - 1_000).unref()
  }
  // Compiled before the order (run without one does nothing): a function's first call costs a tenth of a
  // millisecond or more.
  if (!cold) run(undefined)
  isWarm = true
  if (ordered !== undefined) run(ordered)
  else void send({ kind: "ready" })
  return new Promise<never>(() => {})
}
