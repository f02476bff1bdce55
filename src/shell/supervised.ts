export * as Supervised from "./supervised"

// Core's side of the per-call supervisor (./supervisor): starting one (a spare is kept warm once commands repeat,
// so a call does not wait for a process to start), handing it the command, stopping it, and the records that let
// a later core end what a dead core left running. A record (`<data dir>/runs/<marker>.json`) names the owning
// core and the supervisor, each by pid and start time; the command's environment carries the marker
// (CORE_RUN=<marker>), which survives setsid and double forks but not a command that clears its environment.

import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { availableParallelism } from "node:os"
import { join } from "node:path"
import { Landlock } from "./landlock"
import { Native } from "./native"
import { OwnExecutable } from "./own-executable"
import { SidecarPorts } from "../permission/sidecar-ports"
import { SystemPrograms } from "./system-programs"
import { PipeEnd } from "./pipe-end"
import { ProcessGroup } from "./process-group"
import { Supervisor } from "./supervisor"

/** The variable every supervised command carries, naming its run. */
export const MARKER = "CORE_RUN"

/**
 * How long a supervisor may take to say how starting its command went. One that says nothing by then is stuck (it
 * would hold the call, and its cancellation, forever): it is killed, and the call treats it as gone.
 */
export const START_TIMEOUT_MS = 30_000

/**
 * Supervisors this core starts at once, at most (a warm spare taken is no start). Each start is a process's whole
 * start-up; hundreds at once (a host's burst of bash calls) leave core itself, and its HTTP server, no processor for
 * seconds. The rest wait their turn, in order, and a call cancelled while waiting never starts. One processor is left
 * to core: on 2, one start at a time kept the burst as fast (27 s for 300 calls) and halved the wait of a health
 * check beside it (p50 9-14 → 4-5 ms, p100 414-617 → 332-542 ms, measured here), where two at once left core a
 * third of the machine.
 */
export const MAX_STARTING = Math.max(1, availableParallelism() - 1)

/** The process's open-file limit; undefined where unknown. */
export const openFileLimit = (): number | undefined => {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((entry) => entry.startsWith("Max open files"))
    const limit = Number(line?.split(/\s+/)[3])
    return Number.isFinite(limit) ? limit : undefined
  } catch {
    return undefined
  }
}

/** Descriptors of core's one running command holds at most: its supervisor's socket and pipes, its capture's (~14). */
const DESCRIPTORS_PER_COMMAND = 16

/**
 * Commands this process runs at once, at most: half its descriptors (its open-file limit, which Bun raises to the
 * hard one at start), the other half left to its server's connections (which the server bounds itself), the store and
 * MCP servers. Past it, a host's burst of calls across sessions waits its turn rather than failing (EMFILE) and
 * taking the descriptors the server needs to answer anyone: 625 at the 20,000 of a common limit.
 */
export const MAX_RUNNING = Math.max(16, Math.floor((openFileLimit() ?? 1024) / 2 / DESCRIPTORS_PER_COMMAND))

/**
 * Turns at something of which at most `limit` are had at once, process-wide: those waiting, by whose they are (a
 * session's), take them one owner after the other, a turn each, so that one session's burst of commands does not hold
 * another session's first one behind all of it. A turn resolves with its release; waiting, it rejects once `signal`
 * aborts (and takes no turn). Aborted once granted, it is released: the caller gave up before it took the turn (an
 * Effect's promise aborts only while it waits for it).
 */
const turns = (limit: number) => {
  let held = 0
  const waiting = new Map<string, Array<() => void>>()
  const rotation: Array<string> = []
  const grantFree = () => {
    while (held < limit && rotation.length > 0) {
      const owner = rotation.shift()!
      const queue = waiting.get(owner)!
      const grant = queue.shift()!
      if (queue.length > 0) rotation.push(owner)
      else waiting.delete(owner)
      grant()
    }
  }
  /** A turn had now, with its release. */
  const had = (): (() => void) => {
    held++
    let released = false
    return () => {
      if (released) return
      released = true
      held--
      grantFree()
    }
  }
  /** Whether a turn is free and nobody waits for one. */
  const free = () => held < limit && rotation.length === 0
  /** A turn now, where one is free; undefined otherwise. */
  const now = (): (() => void) | undefined => (free() ? had() : undefined)
  const take = (signal: AbortSignal | undefined, owner: string): Promise<() => void> =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason)
      const grant = () => {
        const release = had()
        signal?.addEventListener("abort", release, { once: true })
        resolve(release)
      }
      if (free()) return grant()
      const queue = waiting.get(owner)
      if (queue === undefined) {
        waiting.set(owner, [grant])
        rotation.push(owner)
      } else {
        queue.push(grant)
      }
      signal?.addEventListener(
        "abort",
        () => {
          const queued = waiting.get(owner)
          const index = queued?.indexOf(grant) ?? -1
          if (index === -1) return
          queued!.splice(index, 1)
          if (queued!.length === 0) {
            waiting.delete(owner)
            rotation.splice(rotation.indexOf(owner), 1)
          }
          reject(signal.reason)
        },
        { once: true },
      )
    })
  return { now, take }
}

/** A turn to start a supervisor (MAX_STARTING at once). */
const startTurn = turns(MAX_STARTING).take

/**
 * A turn to run a command (MAX_RUNNING at once), taken by `owner` (a session) before anything of the command is
 * prepared and released once it has ended: `now` where one is free, else `take` to wait for one.
 */
export const runTurn = turns(MAX_RUNNING)

/** How core starts a supervisor: itself, as a launcher; from source, bun on the supervisor's file. */
const launcher = (
  isolate: boolean,
  deny: ReadonlyArray<number>,
  pid = false,
  sandboxed = false,
  cold = false,
  rules = false,
  at?: number,
  userns = false,
): ReadonlyArray<string> => [
  ...OwnExecutable.argv(join(import.meta.dir, "launch.ts"), at),
  Supervisor.LAUNCH,
  String(process.pid),
  ...(isolate ? [Supervisor.ISOLATE] : []),
  ...(userns ? [Supervisor.USERNS] : []),
  ...(pid ? [Supervisor.PID] : []),
  ...(sandboxed ? [Supervisor.SANDBOX] : []),
  ...(cold ? [Supervisor.COLD] : []),
  ...(deny.length > 0 ? [`${Supervisor.DENY}${deny.join(",")}`, ...(rules ? [Supervisor.RULES] : [])] : []),
]

/**
 * The TCP ports this core listens on (`core serve`): commands of a sandboxed pool may not connect to them, nor to
 * those of the user's other sidecars (SidecarPorts). A process-wide fact, so kept here; supervisors already started
 * for other ports are not used.
 */
const ownPorts = new Set<number>()

/**
 * Records a TCP port this core listens on, so that no sandboxed command of any core of the user started from now on
 * can connect to it; answers why the other cores could not be told, or undefined.
 */
export const listening = (port: number): string | undefined => {
  ownPorts.add(port)
  return SidecarPorts.register(port)
}

/** The ports sandboxed commands are kept off now: this core's and every other sidecar's of the user. */
const deniedPorts = (): ReadonlyArray<number> => [...new Set([...ownPorts, ...SidecarPorts.live()])].sort((a, b) => a - b)

/** The Landlock ruleset keeping commands off `ports` (Landlock.connectRuleset), kept for the ports it was built for. */
let connectRules: { readonly ports: string; readonly fd: number } | undefined

/**
 * The descriptor of the ruleset keeping commands off `deny` (core's ports), built once for them and handed to every
 * supervisor (its descriptor 3, Supervisor.RULES); undefined when there are none, or where it cannot be built (the
 * supervisor then builds its own, which cannot either). Close-on-exec here: no other program core runs gets it.
 */
const rulesFor = (deny: ReadonlyArray<number>): number | undefined => {
  if (deny.length === 0) return undefined
  const ports = deny.join(",")
  if (connectRules?.ports === ports) return connectRules.fd
  const built = Landlock.connectRuleset(deny)
  if (typeof built === "string") return undefined
  if (connectRules !== undefined) Native.close(connectRules.fd)
  connectRules = { ports, fd: built }
  return built
}

/**
 * Whether a supervisor can be started from here: always from the compiled core; from source when the supervisor's
 * file is beside this one (not when this module was bundled elsewhere, as in the tool authors' testing kit).
 */
export const launchable = (): boolean => OwnExecutable.compiled() || existsSync(join(import.meta.dir, "launch.ts"))

type Process_ = Bun.Subprocess<"ignore", "pipe", "pipe">

/**
 * How starting a command went, as its supervisor reported it; `gone` when the supervisor exited (killed from
 * outside) before reporting anything, so whether the command started is not known.
 */
export type Start =
  | Extract<Supervisor.Report, { kind: "started" | "refused" | "failed" }>
  | { readonly kind: "gone"; readonly message: string }

export interface Run {
  readonly pid: number
  readonly stdout: ReadableStream<Uint8Array>
  readonly stderr: ReadableStream<Uint8Array>
  /** How starting the command went. */
  readonly started: Promise<Start>
  /** The supervisor's last report, or undefined when it died without one; after `stop`, once it has exited. */
  readonly ended: Promise<Extract<Supervisor.Report, { kind: "ended" }> | undefined>
  /** Ends the command and every descendant: SIGTERM, then SIGKILL after the grace period. */
  readonly stop: () => void
  readonly marker: string
  /** The signal that ended the supervisor, once it has exited (null: it exited, or it runs). */
  readonly signal: () => string | null
}

interface Spare {
  readonly process: Process_
  /** What it and its command write: read by the run it is taken for. */
  readonly stdout: ReadableStream<Uint8Array>
  readonly stderr: ReadableStream<Uint8Array>
  readonly reports: Array<Supervisor.Report>
  listener: ((report: Supervisor.Report) => void) | undefined
  /** Resolves once it is up (or gone). */
  readonly ready: Promise<void>
  /** The ports it keeps its command from (deniedPorts, joined). */
  ports: string
  /** The marker of the run it will supervise, its record written as it started. */
  readonly marker: string
  /** Whether it is the first process of a PID namespace of its own (`Supervisor.PID`). */
  readonly pid: boolean
  /** Whether it is readied for a sandboxed command (`Supervisor.SANDBOX`), and only takes such. */
  readonly sandboxed: boolean
}

const startOf = (pid: number): number | undefined => ProcessGroup.stat(pid)?.start

/** Records of running supervisors, so that a later core can end what a dead one left. */
export interface Records {
  readonly directory: string
}

interface Owner {
  readonly pid: number
  readonly start: number | undefined
}

/**
 * A supervisor that could not be recorded (a full disk, a read-only data directory): it is not used, and the
 * command does not start. Core's own failure, not the command's: the call fails operationally, in these words
 * alone (where in core it failed says nothing an operator can use). `code` is the system's (ENOSPC, EROFS, ...).
 */
export class RecordError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
    this.name = "RecordError"
    this.stack = `${this.name}: ${message}`
  }
}

const record = (records: Records, owner: Owner, marker: string, supervisor: number) => {
  const body = JSON.stringify({ owner, supervisor: { pid: supervisor, start: startOf(supervisor) } })
  const path = join(records.directory, `${marker}.json`)
  try {
    try {
      writeFileSync(path, body, { mode: 0o600 })
    } catch {
      mkdirSync(records.directory, { recursive: true, mode: 0o700 })
      writeFileSync(path, body, { mode: 0o600 })
    }
  } catch (cause) {
    // A record cut short (a disk that filled as it was written) goes, where it can.
    try {
      rmSync(path, { force: true })
    } catch {
      // nothing was made there
    }
    const code = (cause as NodeJS.ErrnoException | undefined)?.code ?? "EIO"
    const reason = cause instanceof Error ? cause.message : String(cause)
    throw new RecordError(
      code,
      `core could not record its supervisor in ${records.directory} (${reason}); core keeps that record to end the command's processes should it die, and starts nothing without it`,
    )
  }
}

const forget = (records: Records, marker: string) => rmSync(join(records.directory, `${marker}.json`), { force: true })

/** The live processes whose environment holds `MARKER=marker`. */
const marked = (marker: string): Array<number> => {
  const needle = Buffer.from(`\0${MARKER}=${marker}\0`)
  const found: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    const code = entry.charCodeAt(0)
    if (code < 48 || code > 57) continue
    let environ: Buffer
    try {
      environ = readFileSync(`/proc/${entry}/environ`)
    } catch {
      continue
    }
    const padded = Buffer.concat([Buffer.from([0]), environ])
    if (padded.includes(needle) && ProcessGroup.stat(Number(entry))?.state !== "Z") found.push(Number(entry))
  }
  return found
}

/** Whether a process still runs: present, and not a zombie. */
const running = (pid: number): boolean => {
  const state = ProcessGroup.stat(pid)?.state
  return state !== undefined && state !== "Z"
}

/**
 * SIGKILLs every live process carrying the marker, until none is left (bounded), and waits (up to a second) for
 * them to be gone: a process that is exiting no longer shows its environment, but runs until the kernel is done
 * with it. Answers those killed.
 */
export const killMarked = (marker: string): ReadonlyArray<number> => {
  const killed = new Set<number>()
  for (let round = 0; round < 20; round++) {
    const found = marked(marker)
    if (found.length === 0) break
    for (const pid of found) {
      killed.add(pid)
      try {
        process.kill(pid, "SIGKILL")
      } catch {
        // gone meanwhile
      }
    }
  }
  for (let waited = 0; waited < 100 && [...killed].some(running); waited++) Bun.sleepSync(10)
  return [...killed]
}

/**
 * Ends what dead cores left running: for each record whose owner is gone, tells its supervisor (if alive) to end
 * everything, kills every process still carrying its marker, and drops the record. Records of live cores stay.
 */
export const sweep = (records: Records): ReadonlyArray<number> => {
  let names: Array<string>
  try {
    names = readdirSync(records.directory).filter((name) => name.endsWith(".json"))
  } catch {
    return []
  }
  const killed: Array<number> = []
  for (const name of names) {
    const file = join(records.directory, name)
    let entry: { owner: { pid: number; start?: number }; supervisor: { pid: number; start?: number } }
    try {
      entry = JSON.parse(readFileSync(file, "utf8"))
    } catch {
      rmSync(file, { force: true })
      continue
    }
    if (startOf(entry.owner.pid) === entry.owner.start && entry.owner.start !== undefined) continue
    if (entry.supervisor.start !== undefined && startOf(entry.supervisor.pid) === entry.supervisor.start) {
      try {
        process.kill(entry.supervisor.pid, "SIGHUP")
      } catch {
        // ended meanwhile
      }
    }
    killed.push(...killMarked(name.slice(0, -".json".length)))
    rmSync(file, { force: true })
  }
  return killed
}

export interface Pool {
  /** Resolves once a spare supervisor is up for the next command (starting one if there is none). */
  readonly warm: () => Promise<void>
  /** Starts `order` in a supervisor (a warm spare when there is one) at once. */
  readonly launch: (order: Order) => Run
  /**
   * Starts `order` once its turn comes (at most MAX_STARTING supervisors start at once; a warm spare needs no turn):
   * the owners waiting (`owner`, a session) take turns one start each. Aborting `signal` while it waits rejects and
   * starts nothing; aborting it once started stops the run.
   */
  readonly start: (order: Order, signal?: AbortSignal, owner?: string) => Promise<Run>
}

type Order = Omit<Supervisor.Order, "kind" | "env"> & { readonly env: Readonly<Record<string, string>> }

/** `unshare` (util-linux 2.39 or later), when it can give a supervisor a user and mount namespace of its own. */
let userNamespace: ReadonlyArray<string> | null | undefined

const USER_NAMESPACE = ["--user", "--map-current-user", "--mount", "--keep-caps", "--"]

/**
 * How a supervisor that must mount paths read-only is started: as it is where core holds CAP_SYS_ADMIN (root);
 * otherwise inside a user namespace of its own, where the system allows one (probed once).
 */
const isolation = (): ReadonlyArray<string> => {
  if (Native.capable(Native.CAP_SYS_ADMIN)) return []
  if (userNamespace === undefined) {
    const unshare = SystemPrograms.find("unshare")
    const probed = SystemPrograms.find("true")
    const probe =
      unshare === null || probed === null
        ? undefined
        : Bun.spawnSync([unshare, ...USER_NAMESPACE, probed], { stdout: "ignore", stderr: "ignore" })
    userNamespace = probe?.exitCode === 0 ? [unshare!, ...USER_NAMESPACE] : null
  }
  return userNamespace ?? []
}

/** Whether supervisors readied to mount paths read-only (`isolate`) can do so here: as root, or in a user namespace. */
export const canMount = (): boolean => isolation().length > 0 || Native.capable(Native.CAP_SYS_ADMIN)

/**
 * Ends a supervisor that has no order: SIGHUP, or SIGKILL for the first process of a PID namespace, which
 * ignores a signal it has no handler for yet (and ends with nothing of its own left behind).
 */
const dismiss = (entry: Spare) => entry.process.kill(entry.pid ? "SIGKILL" : "SIGHUP")

/** A supervisor process, and what it and its command write to their stdout and stderr. */
interface Spawned {
  readonly process: Process_
  readonly stdout: ReadableStream<Uint8Array>
  readonly stderr: ReadableStream<Uint8Array>
  /** What core writes to the supervisor's stdin, when it has one from core. */
  readonly stdin?: PipeEnd.Sink
}

/** Both ends of a pipe, or undefined where none can be made (no libc). */
const pipe = (): readonly [read: number, write: number] | undefined => {
  const made = Native.pipe()
  return typeof made === "number" ? undefined : made
}

/**
 * A stdout and stderr for a supervisor and the command it runs (and a stdin from core, for a server): pipes, as a
 * shell gives, so that a program opens them again by name (`> /dev/stderr`, `tee /dev/stdout`, `open("/dev/stdout")`,
 * `< /dev/stdin`), which the sockets of Bun.spawn's "pipe" refuse (ENXIO); those where no pipe can be made (no libc).
 * `given` are the ends the supervisor gets, `kept` core's; core's copies of `given` are closed once it is spawned.
 */
const standard = (input: boolean) => {
  const ends: Array<readonly [number, number]> = []
  for (let count = input ? 3 : 2; count > 0; count--) {
    const made = pipe()
    if (made === undefined) {
      for (const [read, write] of ends) {
        Native.close(read)
        Native.close(write)
      }
      return { stdio: [input ? "pipe" : "ignore", "pipe", "pipe"] as const, given: [], kept: undefined }
    }
    ends.push(made)
  }
  const [out, err, into] = ends as [readonly [number, number], readonly [number, number], (readonly [number, number])?]
  return {
    stdio: [into === undefined ? "ignore" : into[0], out[1], err[1]] as const,
    given: [out[1], err[1], ...(into === undefined ? [] : [into[0]])],
    kept: { stdout: out[0], stderr: err[0], stdin: into?.[1] },
  }
}

/**
 * Starts a supervisor process on `argv` (`inNamespace`: as the first process of a PID namespace of its own; `extra`:
 * descriptors it gets from 3 on; `input`: with a stdin core writes to, for a server).
 */
const spawnSupervisor = (
  argv: ReadonlyArray<string>,
  inNamespace: boolean,
  ipc: (message: Supervisor.Report) => void,
  extra: ReadonlyArray<number> = [],
  input = false,
): Spawned => {
  const output = standard(input)
  const options = {
    // Not the workspace: from source, bun would read a bunfig.toml or .env found there.
    cwd: "/",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    // Core's ruleset for its ports as the supervisor's descriptor 3 (Supervisor.RULES), where there is one; then
    // core's executable, where unshare starts it.
    stdio: [...output.stdio, ...extra] as unknown as ["ignore", "pipe", "pipe", ...Array<number>],
    // Its own session: a terminal's Ctrl-C reaches core, which decides.
    detached: true,
    // JSON: an order (the whole environment) and its reports go both ways sooner than as a structured clone, which
    // costs more to write and to read (every field of an order is a string, a number or an array of them).
    serialization: "json" as const,
    ipc,
  }
  // In a PID namespace, the supervisor is its first process: the namespace ends with it, whatever it ran. The
  // arguments are made here, before the spawn: see Native.spawnInPidNamespace.
  let child: Process_
  try {
    child = inNamespace ? Native.spawnInPidNamespace([...argv], options).value : Bun.spawn([...argv], options)
  } catch (cause) {
    // Not started: nobody will read or write the pipes.
    if (output.kept !== undefined) {
      for (const fd of [output.kept.stdout, output.kept.stderr, output.kept.stdin]) if (fd !== undefined) Native.close(fd)
    }
    throw cause
  } finally {
    // The supervisor's ends are its own now (and its command's): core's copies would keep the pipes from ending.
    for (const fd of output.given) Native.close(fd)
  }
  const kept = output.kept
  if (kept === undefined) {
    const stdin = input ? (child.stdin as unknown as Bun.FileSink) : undefined
    return { process: child, stdout: child.stdout, stderr: child.stderr, ...(stdin === undefined ? {} : { stdin }) }
  }
  return {
    process: child,
    stdout: PipeEnd.stream(kept.stdout),
    stderr: PipeEnd.stream(kept.stderr),
    ...(kept.stdin === undefined ? {} : { stdin: PipeEnd.sink(kept.stdin) }),
  }
}

/**
 * Hands `order` to the supervisor `entry` and follows its reports: a supervisor that says nothing about the start
 * within `startTimeoutMs` is killed; `onRunEnded` runs when the run has ended (to ready the next spare).
 */
const runIn = (
  entry: Spare,
  order: Order,
  startTimeoutMs: number,
  onRunEnded: (report: Extract<Supervisor.Report, { kind: "ended" }>) => void,
): Run => {
  const child = entry.process
  child.ref()
  const marker = entry.marker
  let onStarted: (report: Awaited<Run["started"]>) => void
  let onEnded: (report: Awaited<Run["ended"]>) => void
  const started = new Promise<Awaited<Run["started"]>>((resolve) => (onStarted = resolve))
  const ended = new Promise<Awaited<Run["ended"]>>((resolve) => (onEnded = resolve))
  let stopping = false
  /** The report of a stopped run, which ends once its supervisor is gone too: a cancelled call leaves nothing. */
  let last: Awaited<Run["ended"]>
  const receive = (report: Supervisor.Report) => {
    if (report.kind === "ended") {
      if (stopping) last = report
      else onEnded(report)
      onRunEnded(report)
    } else if (report.kind !== "ready") onStarted(report)
  }
  let stuck = false
  const watchdog = setTimeout(() => {
    stuck = true
    child.kill("SIGKILL")
  }, startTimeoutMs)
  // The timer alone must not keep core running.
  watchdog.unref()
  void started.then(() => clearTimeout(watchdog))
  entry.listener = receive
  for (const report of entry.reports.splice(0)) receive(report)
  void child.exited.then(() => {
    onStarted({
      kind: "gone",
      message: stuck
        ? `The command's supervisor said nothing for ${startTimeoutMs} ms and was killed before starting it`
        : `The command's supervisor exited (${child.signalCode ?? child.exitCode}) before starting it`,
    })
    onEnded(last)
  })
  try {
    child.send({ ...order, kind: "run", env: { ...order.env, [MARKER]: marker } } satisfies Supervisor.Order)
  } catch {
    // Gone already: its exit says so (`gone`).
  }
  return {
    pid: child.pid,
    stdout: entry.stdout,
    stderr: entry.stderr,
    started,
    ended,
    marker,
    signal: () => (typeof child.signalCode === "string" ? child.signalCode : null),
    stop: () => {
      stopping = true
      try {
        child.kill("SIGTERM")
      } catch {
        // ended already
      }
    },
  }
}

/**
 * With `isolate`, supervisors are readied to mount paths read-only for their commands (`Order.readOnly`); with
 * `ports`, their commands cannot connect to core's own ports (`listening`); with `pids`, sandboxed commands get a
 * PID namespace of their own where core can make one.
 */
export const pool = (
  records: Records | undefined,
  isolate = false,
  ports = false,
  startTimeoutMs = START_TIMEOUT_MS,
  pids = true,
): Pool => {
  /**
   * The spare of each kind: where supervisors can mount (`isolate`), one readied for sandboxed commands (the first
   * process of a PID namespace of its own where core can make one, with what every sandbox mounts done ahead:
   * Supervisor.SANDBOX) and one for commands without a sandbox; elsewhere one for both. A call never waits for the
   * other kind's.
   */
  const spares = new Map<boolean, Spare>()
  /** The kinds commands were launched in so far, which `warm` readies spares of. */
  const kinds = new Set<boolean>()
  /** The last sandboxed order's grants: a sandboxed spare builds their rules while it waits (Supervisor.Expect). */
  let expected: Supervisor.Expect["grants"] | undefined
  let launched = 0
  let owner: Owner | undefined
  /**
   * Whether sandboxed commands get a PID namespace of their own, their supervisor its first process: where core
   * holds CAP_SYS_ADMIN itself (root; a supervisor in a user namespace is started through `unshare`, which would
   * stay between core and it). Commands without a sandbox keep the host's pids.
   */
  let pidCapable: boolean | undefined
  /** The kind of spare an order needs (true: one readied for a sandbox); without an order, a sandboxed one's. */
  const kindOf = (order: Order | undefined): boolean => isolate && (order === undefined || order.grants !== undefined)
  const pidOf = (sandboxed: boolean): boolean =>
    sandboxed && (pidCapable ??= pids && isolate && isolation().length === 0 && Native.capable(Native.CAP_SYS_ADMIN))

  /** Starts a supervisor of that kind: a spare, or (`cold`) one for the order at hand, which warms nothing up ahead. */
  const spawn = (sandboxed = kindOf(undefined), cold = false): Spare => {
    let up: () => void = () => {}
    const ready = new Promise<void>((resolve) => (up = resolve))
    const marker = crypto.randomUUID()
    const pid = pidOf(sandboxed)
    const entry: Spare = {
      process: undefined as never,
      stdout: undefined as never,
      stderr: undefined as never,
      reports: [],
      listener: undefined,
      ready,
      ports: "",
      marker,
      pid,
      sandboxed,
    }
    const deny = ports ? deniedPorts() : []
    entry.ports = deny.join(",")
    const rules = rulesFor(deny)
    // Started through unshare, the supervisor is core's executable handed over as a descriptor, after the ruleset.
    const through = isolate ? isolation() : []
    const executable = through.length > 0 ? OwnExecutable.descriptor() : undefined
    const extra = [...(rules === undefined ? [] : [rules]), ...(executable === undefined ? [] : [executable])]
    const at = executable === undefined ? undefined : 2 + extra.length
    const argv = [...through, ...launcher(isolate, deny, pid, sandboxed, cold, rules !== undefined, at, through.length > 0)]
    const spawned = spawnSupervisor(argv, pid, (message) => {
      if (message.kind === "ready") {
        // A spare's first message takes several tenths of a millisecond more to reach it than the next (the code
        // that reads one is cold): spent on this one, while it waits, not on the order.
        if (!cold) {
          try {
            child.send({ kind: "prime" } satisfies Supervisor.Prime)
          } catch {
            // Gone already: its exit says so.
          }
        }
        return up()
      }
      if (entry.listener !== undefined) entry.listener(message)
      else entry.reports.push(message)
    }, extra)
    const child = spawned.process
    Object.assign(entry, spawned)
    if (sandboxed && !cold && expected !== undefined) {
      try {
        child.send({ kind: "expect", grants: expected } satisfies Supervisor.Expect)
      } catch {
        // Gone already: it is not used.
      }
    }
    ProcessGroup.trackSupervisor(child.pid)
    // Recorded before any order can reach it, so that the record exists before its command runs anything, and
    // off the call's path when it starts as a spare. A supervisor that cannot be recorded is not used.
    if (records !== undefined) {
      try {
        record(records, (owner ??= { pid: process.pid, start: startOf(process.pid) }), marker, child.pid)
      } catch (cause) {
        dismiss(entry)
        throw cause
      }
    }
    // An idle spare must not keep core running.
    child.unref()
    void child.exited.then(() => {
      up()
      ProcessGroup.untrackSupervisor(child.pid)
      if (spares.get(entry.sandboxed) === entry) spares.delete(entry.sandboxed)
      if (records !== undefined) forget(records, marker)
    })
    return entry
  }

  /** A spare, or none when it cannot be recorded: the call that needs one then fails as it starts its own. */
  const spawnable = (sandboxed: boolean): Spare | undefined => {
    try {
      return spawn(sandboxed)
    } catch {
      return undefined
    }
  }

  /** The spare of a kind that is still usable (one that is not is ended), starting one when `make` says so. */
  const spareOf = (sandboxed: boolean, make: boolean): Spare | undefined => {
    const found = spares.get(sandboxed)
    if (found !== undefined && !usable(found)) {
      dismiss(found)
      spares.delete(sandboxed)
    }
    if (make && !spares.has(sandboxed)) {
      const made = spawnable(sandboxed)
      if (made !== undefined) spares.set(sandboxed, made)
    }
    return spares.get(sandboxed)
  }

  /** Whether a spare is still up, and keeps its command from every port core now listens on. */
  const usable = (entry: Spare | undefined): boolean =>
    entry !== undefined &&
    entry.process.exitCode === null &&
    entry.process.signalCode === null &&
    (!ports || entry.ports === deniedPorts().join(","))

  const take = (order: Order): Spare => {
    const sandboxed = kindOf(order)
    const found = spareOf(sandboxed, false)
    if (found !== undefined) spares.delete(sandboxed)
    kinds.add(sandboxed)
    launched++
    return found ?? spawn(sandboxed, true)
  }

  /**
   * Once commands repeat, the next one gets a supervisor that is already up: started once this one's run has
   * ended, so that starting it takes no processor time from the command.
   */
  const replenish = (sandboxed: boolean) => {
    if (launched > 1) setTimeout(() => spareOf(sandboxed, true), 0)
  }

  const launch: Pool["launch"] = (order) => {
    const entry = take(order)
    if (order.grants !== undefined) expected = order.grants
    return runIn(entry, order, startTimeoutMs, (report) => {
      // Nothing of the run is left (its supervisor exits now): its record goes at once, not once that exit is seen,
      // which a `core exec` ending with the call never waits for (the next core took the record for a dead one's).
      if (records !== undefined && report.survivors.length === 0) forget(records, entry.marker)
      replenish(entry.sandboxed)
    })
  }
  /** Readies a spare of every kind commands were launched in (before any, of the kind a sandboxed one needs). */
  const warm = () => {
    const wanted = kinds.size === 0 ? [kindOf(undefined)] : [...kinds]
    return Promise.all(wanted.map((sandboxed) => spareOf(sandboxed, true)?.ready)).then(() => {})
  }
  const start: Pool["start"] = async (order, signal, owner = "") => {
    const release = spareOf(kindOf(order), false) !== undefined ? () => {} : await startTurn(signal, owner)
    // Given up as its turn came (the turn, released with the abort): nothing is started that nobody would stop.
    if (signal?.aborted) {
      release()
      throw signal.reason
    }
    let run: Run
    try {
      run = launch(order)
    } catch (cause) {
      release()
      throw cause
    }
    void run.started.then(release)
    // Aborted after this resolved but before the caller took the run: nobody else would stop it.
    signal?.addEventListener("abort", () => run.stop(), { once: true })
    return run
  }
  return { warm, launch, start }
}

/** A long-lived command under a supervisor of its own (an MCP server): its stdin a pipe from core. */
export interface Server {
  /** The supervisor's pid. */
  readonly supervisor: number
  /** Ended by whoever is done writing; ended anyway once the supervisor is gone. */
  readonly stdin: PipeEnd.Sink
  readonly stdout: ReadableStream<Uint8Array>
  readonly stderr: ReadableStream<Uint8Array>
  /** How starting the command went. */
  readonly started: Promise<Extract<Supervisor.Report, { kind: "started" | "refused" | "failed" }>>
  /** The supervisor's last report, or undefined when it died without one. */
  readonly ended: Promise<Extract<Supervisor.Report, { kind: "ended" }> | undefined>
  /** Ends the command and every descendant (SIGTERM, then SIGKILL after the grace period); resolves when done. */
  readonly stop: () => Promise<void>
}

/**
 * Starts `order` under a new supervisor whose stdin stays a pipe from core, so the command reads what core writes
 * for as long as it runs; it dies with core, like every supervised command. Its stdin, stdout and stderr are pipes,
 * as a shell gives (a server started by a script that writes `> /dev/stderr` starts).
 */
export const server = (order: Omit<Supervisor.Order, "kind" | "stdin" | "stdinPipe">): Server => {
  let onStarted: (report: Awaited<Server["started"]>) => void = () => {}
  let onEnded: (report: Awaited<Server["ended"]>) => void = () => {}
  const started = new Promise<Awaited<Server["started"]>>((resolve) => (onStarted = resolve))
  const ended = new Promise<Awaited<Server["ended"]>>((resolve) => (onEnded = resolve))
  const spawned = spawnSupervisor(launcher(false, [], false, false, true), false, (report) => {
    if (report.kind === "ended") onEnded(report)
    else if (report.kind !== "ready") onStarted(report)
  }, [], true)
  const child = spawned.process
  const stdin = spawned.stdin!
  ProcessGroup.trackSupervisor(child.pid)
  void child.exited.then(() => {
    ProcessGroup.untrackSupervisor(child.pid)
    try {
      stdin.end()
    } catch {
      // Bun's own sink (where no pipe could be made), ended already
    }
    onStarted({ kind: "failed", message: `The server's supervisor exited (${child.signalCode ?? child.exitCode}) before starting it` })
    onEnded(undefined)
  })
  child.send({ ...order, kind: "run", stdinPipe: true } satisfies Supervisor.Order)
  return {
    supervisor: child.pid,
    stdin,
    stdout: spawned.stdout,
    stderr: spawned.stderr,
    started,
    ended,
    stop: async () => {
      try {
        child.kill("SIGTERM")
      } catch {
        // ended already
      }
      await child.exited
    },
  }
}
