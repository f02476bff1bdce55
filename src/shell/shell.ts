export * as Shell from "./shell"

// The process producer: the one place processes are spawned (Bun.spawn). Each process runs in its own process
// group with stdin closed unless given, its output captured within limits (./capture) and reported honestly, under
// a wall-clock and an optional inactivity timeout. However a run ends (exit, timeout, interruption, a closing
// scope), the whole group is ended and checked gone (./group). It never decides permissions or what a model sees.

import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Config } from "../config/config"
import { Preparing } from "./preparing"
import { Stopping } from "../settlement/stopping"
import { readFileSync } from "node:fs"
import { homedir, release } from "node:os"
import { join, resolve } from "node:path"
import { Capture } from "./capture"
import { ProcessGroup } from "./process-group"
import { Guard } from "./guard"
import { LoadGate } from "./load-gate"
import { Landlock } from "./landlock"
import { Native } from "./native"
import { Sandbox as Policies } from "./sandbox"
import { Covered } from "./covered"
import { Namespace } from "./namespace"
import { Sockets } from "./sockets"
import { Supervised } from "./supervised"

export const DEFAULT_TIMEOUT_MS = 120_000
export const DEFAULT_MAX_TIMEOUT_MS = 600_000
export const DEFAULT_MAX_CAPTURE_BYTES = 1_048_576
/**
 * Commands one session runs at once. Each holds a supervisor process and about 14 of core's descriptors until it
 * ends (up to its timeout): without a bound, one session's calls that never end (`sleep`) would take every
 * descriptor core has, and every other session's calls would fail.
 */
export const DEFAULT_MAX_RUNNING = 32
/** Live progress is reported at most this often. */
export const PROGRESS_INTERVAL_MS = 250
/** How much of the latest output a progress update carries. */
export const PROGRESS_TAIL_BYTES = 4096
/**
 * After the group has ended, how long output still in flight may take to arrive. Only a process that left the
 * group (setsid) can hold a pipe open longer, and it must not keep the run waiting: such a stream is reported as
 * left open, never as complete.
 */
const DRAIN_MS = 250
/**
 * How `Bun.spawn` reports that the system refused to start a process (a missing program or directory, no
 * permission, too many files or processes, an argument list too long): these are the caller's to handle. Any
 * other throw is a broken invariant, not an outcome.
 */
const SPAWN_ERRNO: ReadonlySet<string> = new Set([
  "ENOENT",
  "ENOTDIR",
  "EACCES",
  "EPERM",
  "ENOEXEC",
  "EISDIR",
  "ELOOP",
  "ENAMETOOLONG",
  "ETXTBSY",
  "E2BIG",
  "EMFILE",
  "ENFILE",
  "EAGAIN",
  "ENOMEM",
])

/** What a system short of descriptors, processes or memory refuses a spawn with. */
const SHORT_OF: ReadonlySet<string> = new Set(["EMFILE", "ENFILE", "EAGAIN", "ENOMEM"])

/**
 * The errno of `cause` where it says the system is short of descriptors, processes or memory (Bun's spawnSync says
 * so in words alone), else undefined.
 */
const shortOf = (cause: unknown): string | undefined => {
  const code = typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
  if (typeof code === "string") return SHORT_OF.has(code) ? code : undefined
  return cause instanceof Error && /resource exhaustion/.test(cause.message) ? "EAGAIN" : undefined
}

/** The limits every run starts from (`shell` in core.json). */
export interface Limits {
  readonly timeoutMs: number
  readonly maxTimeoutMs: number
  /** Per stream, and again for the merged view. */
  readonly maxCaptureBytes: number
  /** Off when undefined. */
  readonly inactivityTimeoutMs: number | undefined
  /** Commands one session runs at once (the bash tool holds the rest back). */
  readonly maxRunning: number
}

export const limits = (config: Config.Shell = {}): Limits => {
  const maxTimeoutMs = config.maxTimeoutMs ?? DEFAULT_MAX_TIMEOUT_MS
  return {
    // A default above the maximum would make every call without a timeout invalid.
    timeoutMs: Math.min(config.timeoutMs ?? DEFAULT_TIMEOUT_MS, maxTimeoutMs),
    maxTimeoutMs,
    maxCaptureBytes: config.maxCaptureBytes ?? DEFAULT_MAX_CAPTURE_BYTES,
    inactivityTimeoutMs: config.inactivityTimeoutMs,
    maxRunning: config.maxRunning ?? DEFAULT_MAX_RUNNING,
  }
}

/** The system refused to start the process. */
export class SpawnError extends Schema.TaggedError<SpawnError>()("Shell.SpawnError", {
  command: Schema.String,
  cwd: Schema.String,
  /** The errno name, e.g. ENOENT or E2BIG. */
  code: Schema.String,
  message: Schema.String,
}) {}

/** A live update while a process runs. */
export interface Progress {
  /** The latest output (stdout and stderr as they arrived), up to PROGRESS_TAIL_BYTES. */
  readonly tail: string
  /** Bytes of output so far, both streams. */
  readonly bytes: number
  readonly elapsedMs: number
}

export interface Request {
  /** The program and its arguments. */
  readonly argv: ReadonlyArray<string>
  readonly cwd: string
  /** The whole environment of the process; the current process's by default. */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Bytes for stdin; closed when absent. */
  readonly stdin?: Uint8Array
  /** Wall-clock limit; the configured default when absent, never more than the configured maximum. */
  readonly timeoutMs?: number
  /** Ends the run when no output arrives for this long; the configured value (if any) when absent. */
  readonly inactivityTimeoutMs?: number
  readonly maxCaptureBytes?: number
  readonly onProgress?: (update: Progress) => Effect.Effect<void>
  /** Where the process may read and write (the OS sandbox, when the kernel has one); unrestricted when absent. */
  readonly sandbox?: Policies.Policy
  /**
   * Whether a per-call supervisor runs it (the default): every descendant ends with it, however it detaches. A
   * program core runs itself (rg) may do without, in its own process group.
   */
  readonly supervise?: boolean
  /** Takes stdout chunk by chunk instead of capturing it (a chunk is valid only during the call). */
  readonly onStdout?: (chunk: Uint8Array) => void
  /**
   * Whose command it is (a session): commands waiting to run (Supervised.runTurn) and supervisors waiting to start
   * take turns by owner, one each, so one owner's burst does not hold another's first command behind it. Without
   * one, the command waits with the others that have none.
   */
  readonly owner?: string
  /**
   * Run once, when the command must wait for its turn among the commands this process runs at once (nothing is
   * started meanwhile): to say so (a call's progress), since nothing else shows it waiting.
   */
  readonly onWait?: Effect.Effect<void>
}

/** A process the run ended because it was still running when the run ended. */
export interface Killed {
  readonly pid: number
  /** Its name as the kernel knows it (up to 15 characters). */
  readonly name: string
}

/** How many processes the text of a result names, at most. */
const NAMED = 10

/** Killed processes as a person reads them: `sleep (123), bash (120)`, and how many more past the first ten. */
export const named = (killed: ReadonlyArray<Killed>): string => {
  const shown = killed.slice(0, NAMED).map(({ pid, name }) => `${name} (${pid})`)
  return `${shown.join(", ")}${killed.length > NAMED ? ` and ${killed.length - NAMED} more` : ""}`
}

export interface Timeout {
  readonly kind: "wall" | "inactivity"
  readonly ms: number
}

export interface Result {
  /** Null when a signal ended the process. */
  readonly exitCode: number | null
  /** The signal that ended the process (SIGKILL, SIGTERM ...), or null. */
  readonly signal: string | null
  /** Set when a timeout ended the run. */
  readonly timedOut: Timeout | undefined
  /**
   * Set when the kernel's OOM killer ended a process on this machine while the command ran (its own, a process it
   * started, or, rarely, another's): the system ran out of memory, most likely because of what the command used.
   */
  readonly outOfMemory?: true
  /**
   * The signal a crash of the command's supervisor ended it with (SIGILL, SIGABRT, SIGSEGV ...), where the command
   * had a PID namespace of its own: everything in it ended with the supervisor, the command reported killed.
   */
  readonly supervisorCrashed?: string
  readonly stdout: Capture.Captured
  readonly stderr: Capture.Captured
  /** Both streams interleaved in arrival order, bounded and reported like each stream. */
  readonly output: Capture.Captured
  /**
   * Streams still held open when the group was gone (by a process that left it with setsid): reading them
   * stopped there, so anything written to them later was not read and their capture is not complete.
   */
  readonly unread: ReadonlyArray<"stdout" | "stderr">
  readonly durationMs: number
  /** Processes still running when the run ended, which it ended (the command itself too, on a timeout or cancel). */
  readonly killed: ReadonlyArray<Killed>
  /** Processes that could not be killed (empty unless a process is stuck in the kernel). */
  readonly survivors: ReadonlyArray<number>
  /**
   * Core's configuration in the Location that the command changed where no mount kept it read-only (an entry it
   * created; core.json put back), undone once it had ended: absolute paths. Empty without a sandbox policy.
   */
  readonly undone: ReadonlyArray<string>
  /** Where what the command had left in those places was moved (in core's data directory), when any was undone. */
  readonly undoneKeptIn: string | undefined
  /**
   * Set when core could not search what the command left for the repositories it made (Guard.Undone): what that
   * means; the folders are refused to every core until a person has looked.
   */
  readonly unchecked?: string
  /** Paths the output says were refused that the OS sandbox keeps out of the command's reach (Sandbox.Prepared). */
  readonly refused?: ReadonlyArray<string>
  /** Of those, the ones the agent's read or edit rules keep from it (Sandbox.Prepared.ruled). */
  readonly ruled?: ReadonlyArray<string>
  /** Of those, the ones in a credential store (Sandbox.Prepared.stored). */
  readonly stores?: ReadonlyArray<string>
}

/** `result` with the paths its output says the sandbox refused, those the rules keep from it apart. */
const withRefused = <R extends { readonly output: { readonly text: string } }>(result: R, prepared: Policies.Prepared, cwd: string) => {
  const named = prepared.refused(result.output.text, cwd)
  const ruled = named.filter((name) => prepared.ruled(name, cwd))
  const stores = named.filter((name) => !ruled.includes(name) && prepared.stored(name, cwd))
  return {
    ...result,
    refused: named.filter((name) => !ruled.includes(name) && !stores.includes(name)),
    ...(ruled.length === 0 ? {} : { ruled }),
    ...(stores.length === 0 ? {} : { stores }),
  }
}

export interface Interface {
  readonly limits: Limits
  /** The shell commands run with: bash from PATH, or /bin/sh when there is none. */
  readonly shell: string
  /** Whether commands run in the OS sandbox. */
  readonly sandbox: Sandbox
  /**
   * Whether core's configuration in a Location is kept from the commands by the OS (a supervisor, with the sandbox
   * not off): read-only to them, what they leave there undone. When not, the bash checks alone keep it.
   */
  readonly guarded: boolean
  /** Completes once a supervisor is up for the next command, so that it starts without waiting for one. */
  readonly warm: Effect.Effect<void>
  /** Runs a process to its end; interrupting the effect ends the process group before it returns. */
  readonly run: (request: Request) => Effect.Effect<Result, SpawnError>
}

export class Service extends Context.Service<Service, Interface>()("core/Shell") {}

const sleep = (ms: number) => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms)
  })
  return { done, cancel: () => clearTimeout(timer) }
}

interface Running {
  /** Resolves once the process has exited, everything it started is gone and its output is read. */
  readonly result: Promise<Result>
  /** Ends the run (idempotent); resolves when `result` has. */
  readonly close: () => Promise<Result>
}

/** How a process ended, and what had to be ended with it. */
interface Ending {
  readonly exitCode: number | null
  readonly signal: string | null
  readonly supervisorCrashed?: string
  readonly killed: ReadonlyArray<Killed>
  readonly survivors: ReadonlyArray<number>
  readonly undone: Guard.Undone
}

const NOTHING_UNDONE: Guard.Undone = { paths: [], keptIn: undefined }

/** The signals a process ends with when it crashes, rather than when something ends it. */
const CRASHES = new Set(["SIGILL", "SIGABRT", "SIGSEGV", "SIGBUS", "SIGTRAP", "SIGFPE", "SIGSYS"])

/** A started process, however it is watched over (by a supervisor, or as a bare process group). */
interface Handle {
  readonly stdout: ReadableStream<Uint8Array>
  readonly stderr: ReadableStream<Uint8Array>
  /** Resolves once the process has exited and everything it started has been ended. */
  readonly ended: Promise<Ending>
  /** Ends the process and everything it started (idempotent); `ended` then resolves. */
  readonly stop: () => void
}

const spawnError = (request: Request, code: string, message: string) =>
  new SpawnError({
    command: request.argv.join(" "),
    cwd: request.cwd,
    code,
    message: `Could not start ${request.argv[0]} in ${request.cwd}: ${message}`,
  })

/** A bare process group: for programs core itself runs (rg), which get no supervisor. */
const spawnGroup = (request: Request): Effect.Effect<Handle, SpawnError> =>
  Effect.suspend(() => {
    let child: Bun.Subprocess<"ignore" | Uint8Array, "pipe", "pipe">
    try {
      child = Bun.spawn([...request.argv], {
        cwd: request.cwd,
        // Absent, Bun hands the child core's own environment without copying it here first.
        ...(request.env === undefined ? {} : { env: { ...request.env } }),
        stdin: request.stdin ?? "ignore",
        stdout: "pipe",
        stderr: "pipe",
        // Its own process group, so that one signal reaches every descendant.
        detached: true,
      })
    } catch (cause) {
      const code = typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
      if (typeof code !== "string" || !SPAWN_ERRNO.has(code)) return Effect.die(cause)
      return Effect.fail(spawnError(request, code, cause instanceof Error ? cause.message : String(cause)))
    }
    ProcessGroup.track(child.pid)
    let stopping: Promise<ReadonlyArray<number>> | undefined
    const stop = () => (stopping ??= ProcessGroup.terminate(child.pid))
    const ended = child.exited.then(
      async (): Promise<Ending> => ({
        survivors: await stop(),
        exitCode: child.exitCode,
        signal: child.signalCode === null ? null : String(child.signalCode),
        killed: [],
        undone: { paths: [], keptIn: undefined },
      }),
    )
    return Effect.succeed({ stdout: child.stdout, stderr: child.stderr, ended, stop: () => void stop() })
  })

/**
 * A supervised process: started by a per-call supervisor, in its sandbox when `grants` are given, with core's
 * configuration in its Location guarded when `guarded` is.
 */
const spawnSupervised = (
  supervisors: Supervised.Pool,
  request: Request,
  grants: Landlock.Grants | undefined,
  guarded: Guard.Guarded | undefined,
  cover: Namespace.Cover | undefined,
  sockets: ReadonlyArray<string> | undefined,
): Effect.Effect<Handle, SpawnError> =>
  Effect.flatMap(
    // Interruptible while it waits its turn to start (Supervised.MAX_STARTING): a cancelled call starts nothing.
    Effect.interruptible(Effect.promise((signal) =>
      supervisors.start({
        argv: request.argv,
        cwd: request.cwd,
        env: Object.fromEntries(
          Object.entries(request.env ?? process.env).filter((entry): entry is [string, string] => entry[1] !== undefined),
        ),
        ...(request.stdin === undefined ? {} : { stdin: Buffer.from(request.stdin).toString("base64") }),
        ...(grants === undefined ? {} : { grants }),
        ...(guarded === undefined
          ? {}
          : {
              readOnly: guarded.readOnly,
              ...(guarded.readOnlyIds === undefined ? {} : { readOnlyIds: guarded.readOnlyIds }),
              ...(guarded.pinned === undefined || guarded.pinned.length === 0 ? {} : { pinned: guarded.pinned }),
            }),
        ...(cover === undefined ? {} : { cover }),
        ...(sockets === undefined ? {} : { sockets }),
        graceMs: ProcessGroup.GRACE_MS,
      }, signal, request.owner).catch((cause: unknown) => {
        // A supervisor that could not be recorded (a full disk) starts no command: core's failure, in its words.
        if (cause instanceof Supervised.RecordError) return cause
        // Nor one the system had no descriptor, process or memory left to start (a host running a thousand commands
        // at once): the call fails saying so, as a command that could not be started does, rather than as a defect.
        const code = shortOf(cause)
        if (code !== undefined) return spawnError(request, code, cause instanceof Error ? cause.message : String(cause))
        throw cause
      }),
    )),
    (run) =>
      run instanceof Supervised.RecordError ? Effect.die(run) :
      run instanceof SpawnError ? Effect.fail(run) :
      Effect.flatMap(
        Effect.promise(() => run.started),
        (started): Effect.Effect<Handle, SpawnError> => {
          if (started.kind === "gone") {
            // Killed from outside before it said anything: whatever it may have started goes, by its marker.
            Supervised.killMarked(run.marker)
            return Effect.die(new Error(started.message))
          }
          if (started.kind === "refused") {
            run.stop()
            if (!SPAWN_ERRNO.has(started.code)) return Effect.die(new Error(started.message))
            return Effect.fail(spawnError(request, started.code, started.message))
          }
          if (started.kind === "failed") {
            run.stop()
            return Effect.die(new Error(started.message))
          }
          const undo = () => guarded?.finish(started.readOnly) ?? NOTHING_UNDONE
          const ended = run.ended.then((report): Ending => {
            if (report !== undefined) return { ...report, undone: undo() }
            // The supervisor died without reporting (killed from outside): end what it left, by marker and group.
            const killed = Supervised.killMarked(run.marker)
            // In a PID namespace of its own, everything ended with the supervisor, and the pid is not the host's.
            if (!started.pidNamespace) {
              try {
                process.kill(-started.pid, "SIGKILL")
              } catch {
                // the group is gone
              }
            }
            // Not killed from outside but crashed (a Bun supervisor aborts when it cannot start a thread it needs,
            // as in a namespace its command filled up to the bound of its processes): said, as the model can act on it.
            const crash = run.signal()
            return {
              exitCode: null,
              signal: "SIGKILL",
              ...(started.pidNamespace && crash !== null && CRASHES.has(crash) ? { supervisorCrashed: crash } : {}),
              killed: killed.map((pid) => ({ pid, name: "?" })),
              survivors: [],
              undone: undo(),
            }
          })
          return Effect.succeed({ stdout: run.stdout, stderr: run.stderr, ended, stop: run.stop })
        },
      ),
  )

/**
 * Frees a buffer's memory now (detaching it: every view of it reads as empty from then on). Garbage collection
 * would free it too, but lags: read at gigabytes per second, chunks no longer used pile up by tens of megabytes,
 * more the larger core's heap is.
 */
const free = (buffer: ArrayBufferLike): void => {
  const transferable = buffer as ArrayBufferLike & { readonly detached?: boolean; readonly transfer?: (length: number) => ArrayBuffer }
  if (transferable.detached === false) transferable.transfer?.(0)
}

/** How many processes the kernel's OOM killer has ended on this machine since it started (/proc/vmstat), if known. */
const oomKills = (): number | undefined => {
  try {
    const found = /^oom_kill (\d+)$/m.exec(readFileSync("/proc/vmstat", "latin1"))
    return found === null ? undefined : Number(found[1])
  } catch {
    return undefined
  }
}

const start = (
  handle: Handle,
  started: number,
  request: Request,
  limits: Limits,
  progress: ((update: Progress) => Promise<void>) | undefined,
): Running => {
  const captureBytes = request.maxCaptureBytes ?? limits.maxCaptureBytes
  // Each chunk read goes to its stream's capture and to the merged one, which copy what they keep; its memory is
  // then freed at once, not at a later garbage collection: reading gigabytes takes no more memory than megabytes.
  const stdout = Capture.make(captureBytes)
  const stderr = Capture.make(captureBytes)
  const output = Capture.make(captureBytes)
  const oomBefore = oomKills()

  let timedOut: Timeout | undefined
  const stop = () => {
    handle.stop()
    return handle.ended
  }

  const timeoutMs = Math.min(request.timeoutMs ?? limits.timeoutMs, limits.maxTimeoutMs)
  const wall = setTimeout(() => {
    timedOut ??= { kind: "wall", ms: timeoutMs }
    void stop()
  }, timeoutMs)

  let lastOutput = performance.now()
  const idleMs = request.inactivityTimeoutMs ?? limits.inactivityTimeoutMs
  let idle: ReturnType<typeof setTimeout> | undefined
  if (idleMs !== undefined) {
    // Re-armed for the remaining time rather than reset on every chunk, which would cost a timer per chunk.
    const check = () => {
      const quiet = performance.now() - lastOutput
      if (quiet < idleMs) {
        idle = setTimeout(check, idleMs - quiet)
        return
      }
      timedOut ??= { kind: "inactivity", ms: idleMs }
      void stop()
    }
    idle = setTimeout(check, idleMs)
  }

  let lastProgress = Number.NEGATIVE_INFINITY
  let pendingProgress: ReturnType<typeof setTimeout> | undefined
  let progressed: Promise<void> = Promise.resolve()
  const emit = () => {
    pendingProgress = undefined
    lastProgress = performance.now()
    const update: Progress = { tail: output.recent(PROGRESS_TAIL_BYTES), bytes: output.seen(), elapsedMs: lastProgress - started }
    progressed = progressed.then(() => progress!(update))
  }

  const readers: Array<{ readonly cancel: () => Promise<void> }> = []
  const ended = { stdout: false, stderr: false }
  const pump = async (stream: ReadableStream<Uint8Array>, capture: Capture.Capture, name: keyof typeof ended) => {
    const reader = stream.getReader()
    readers.push(reader)
    const onData = name === "stdout" ? request.onStdout : undefined
    for (;;) {
      const { done, value } = await reader.read()
      if (done) {
        ended[name] = true
        return
      }
      lastOutput = performance.now()
      if (onData !== undefined) {
        onData(value)
        continue
      }
      capture.push(value)
      output.push(value)
      // A chunk that is its buffer's whole, as the streams hand them out, is nobody's once both captures have it.
      if (value.byteOffset === 0 && value.byteLength === value.buffer.byteLength) free(value.buffer)
      if (progress === undefined || pendingProgress !== undefined) continue
      // At most one update per interval; one that falls inside the interval is sent at its end.
      const wait = lastProgress + PROGRESS_INTERVAL_MS - lastOutput
      if (wait <= 0) emit()
      else pendingProgress = setTimeout(emit, wait)
    }
  }
  const reading = Promise.all([pump(handle.stdout, stdout, "stdout"), pump(handle.stderr, stderr, "stderr")])

  const result = (async (): Promise<Result> => {
    // The process has exited and what it left running (`sleep 1000 &`) has ended with it.
    const ending = await handle.ended
    clearTimeout(wall)
    clearTimeout(idle)
    const grace = sleep(DRAIN_MS)
    const drained = await Promise.race([reading.then(() => true), grace.done.then(() => false)])
    grace.cancel()
    // Decided before cancelling: a cancelled reader ends its stream too.
    const unread = (["stdout", "stderr"] as const).filter((name) => !ended[name])
    if (!drained) {
      await Promise.all(readers.map((reader) => reader.cancel()))
      await reading
    }
    clearTimeout(pendingProgress)
    await progressed
    const oomAfter = oomBefore === undefined ? undefined : oomKills()
    return {
      exitCode: ending.exitCode,
      signal: ending.signal,
      timedOut,
      ...(oomAfter !== undefined && oomAfter > oomBefore! ? { outOfMemory: true as const } : {}),
      ...(ending.supervisorCrashed === undefined ? {} : { supervisorCrashed: ending.supervisorCrashed }),
      stdout: stdout.finish(),
      stderr: stderr.finish(),
      output: output.finish(),
      unread,
      durationMs: performance.now() - started,
      killed: ending.killed,
      survivors: ending.survivors,
      undone: ending.undone.paths,
      undoneKeptIn: ending.undone.keptIn,
      ...(ending.undone.unchecked === undefined ? {} : { unchecked: ending.undone.unchecked }),
    }
  })()

  return { result, close: () => stop().then(() => result) }
}

export interface Options {
  /** Where runs are recorded, for a later core to end what a dead one left; `$CORE_DATA_DIR/runs` by default. */
  readonly records?: string
  /**
   * Whether supervisors may make a mount namespace to keep core's configuration read-only (default true); without
   * one, what a command changed there is undone after it ends, as far as it can be.
   */
  readonly namespaces?: boolean
  /** Where what a command left in core's configuration is moved; `$CORE_DATA_DIR/undone` by default. */
  readonly keeping?: string
  /** Where the guards of every core process note what they found; `$CORE_DATA_DIR/guards` by default. */
  readonly guards?: string
  /**
   * Whether sandboxed commands are kept off core's own TCP ports (default true). Building that rule set costs each
   * supervisor a fraction of a second of processor time: a producer for programs that open no connection (rg)
   * does without it.
   */
  readonly ports?: boolean
  /**
   * Whether each sandboxed command gets a PID namespace of its own, with a /proc of its own (default true; only
   * where core holds CAP_SYS_ADMIN itself).
   */
  readonly pids?: boolean
  /** The kernel's Landlock ABI version as core should see it; read from the kernel when absent. */
  readonly abi?: number
}

/** The sandbox setting in effect. */
export interface Sandbox {
  readonly mode: "auto" | "required" | "off"
  /** The kernel's Landlock ABI version; 0 when it has none (or the sandbox is off). */
  readonly abi: number
  /** Whether commands given a policy run sandboxed. */
  readonly active: boolean
  /** What core says once where it starts when commands run without the sandbox; undefined when they do not. */
  readonly notice: string | undefined
}

export const sandboxOf = (mode: "auto" | "required" | "off" = "auto", kernel: number = Landlock.abi()): Sandbox => {
  const abi = mode === "off" ? 0 : kernel
  const notice =
    mode === "off"
      ? "The shell sandbox is off (shell.sandbox in core.json): commands run on per-command permission alone."
      : abi > 0
        ? undefined
        : mode === "required"
          ? "The shell sandbox is required (shell.sandbox in core.json) but this kernel has no Landlock: commands are refused."
          : "This kernel has no Landlock: commands run without the OS sandbox, on per-command permission alone."
  return { mode, abi, active: abi > 0, notice }
}

/**
 * What core says once where it starts when commands cannot get a mount namespace (core is not root, and no user
 * namespace can be made): core's configuration in a Location is then guarded by taking out what a command changed
 * once it has ended, not by being read-only to it. Undefined where it is read-only, or nothing is guarded.
 */
export const guardNotice = (mode: "auto" | "required" | "off" = "auto"): string | undefined =>
  mode === "off" || process.platform !== "linux" || !Native.available() || !Supervised.launchable() || Supervised.canMount()
    ? undefined
    : "Commands get no mount namespace here (core is not root and cannot make a user namespace): what a command " +
      "changes in core.json, tools/, plugins/ or .core/ is taken out once it has ended, instead of being read-only to it."

/** What decides whether commands run by root are bounded in processes and threads (see `processesNotice`). */
export interface ProcessesBound {
  readonly root: boolean
  /** Whether commands run sandboxed (their supervisor gives them a PID namespace where it can). */
  readonly sandboxed: boolean
  /** The kernel's release (os.release()). */
  readonly release: string
  /** Whether core can make a PID namespace (CAP_SYS_ADMIN). */
  readonly pidNamespaces: boolean
}

/**
 * Why commands run by root are not bounded in processes and threads here, said once where core starts: a non-root
 * core's are (RLIMIT_NPROC, Starter `apply`), and a root core's only by the `kernel.pid_max` of a PID namespace of
 * their own (Namespace.boundProcesses), which needs the sandbox, a kernel that keeps one per namespace (Linux 6.14 and
 * later) and a core that can make one. Undefined where they are bounded, or core is not root.
 */
export const processesNoticeOf = (bound: ProcessesBound): string | undefined => {
  if (!bound.root) return undefined
  const why = !bound.sandboxed
    ? "they run without the sandbox"
    : !Namespace.pidMaxPerNamespace(bound.release)
      ? `this kernel (${bound.release}) keeps one kernel.pid_max for the whole machine (Linux 6.14 and later keep one for each PID namespace)`
      : !bound.pidNamespaces
        ? "core cannot make a PID namespace here (it lacks CAP_SYS_ADMIN, as in a container by default)"
        : undefined
  return why === undefined
    ? undefined
    : `Commands run by root are not bounded in processes and threads here: ${why}. One that forks without end can ` +
        "fill the machine's process table; bound core's from outside (a container's --pids-limit, systemd's TasksMax)."
}

/** `processesNoticeOf` this process and kernel, for commands run with the sandbox setting `mode`. */
export const processesNotice = (mode: "auto" | "required" | "off" = "auto"): string | undefined =>
  process.platform !== "linux" || !Native.available()
    ? undefined
    : processesNoticeOf({
        root: process.getuid?.() === 0,
        sandboxed: sandboxOf(mode).active && Supervised.launchable(),
        release: release(),
        pidNamespaces: Native.capable(Native.CAP_SYS_ADMIN),
      })

/**
 * Variables of core's own environment (`env`) that no process core starts may read, in its own environment or
 * from /proc/<core>/environ: core's token, and the credentials of what core itself uses. With a store of record,
 * its URL (user and password in it) and PGPASSWORD (which Postgres clients fill a URL's missing password from):
 * with them a command could save approvals of its own or make a recorded call run again. With outputs in object
 * storage, its URL and the keys (AWS_* as core reads them, S3_* as Bun's client does): every host's outputs. While
 * traces are exported, the exporter's headers (an API key, as a vendor's endpoint asks), and an endpoint that holds
 * a login. The same names where core does not use them are the user's own, and pass.
 */
export const secrets = (env: Readonly<Record<string, string | undefined>>): ReadonlyArray<string> => [
  "CORE_TOKEN",
  ...(env.CORE_STORE_URL ? ["CORE_STORE_URL", "PGPASSWORD"] : []),
  ...(env.CORE_OUTPUTS_URL
    ? ["CORE_OUTPUTS_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "S3_SESSION_TOKEN"]
    : []),
  ...(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
    ? ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"]
    : []),
  // An endpoint with a login in it (`https://user:key@collector`) is as much a credential as the headers.
  ...["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].filter((name) => hasLogin(env[name])),
]

/** Whether `url` names a user or password (`scheme://user:password@host`). */
const hasLogin = (url: string | undefined): boolean => {
  if (url === undefined || url === "") return false
  try {
    const parsed = new URL(url)
    return parsed.username !== "" || parsed.password !== ""
  } catch {
    return /\/\/[^/?#]*@/.test(url)
  }
}

/** `env` less core's secrets (`secrets`): what a process core starts for a tool or a plugin gets. */
export const withoutSecrets = (env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> => {
  const kept: Record<string, string | undefined> = { ...env }
  for (const name of secrets(env)) delete kept[name]
  return kept
}

/** Where core keeps its data (DESIGN §9). */
const dataDirectory = (): string => resolve(process.env.CORE_DATA_DIR || join(homedir(), ".local/share/core"))

export const make = (config: Config.Shell = {}, options: Options = {}): Interface => {
  const resolved = limits(config)
  const shell = Bun.which("bash") ?? "/bin/sh"
  const supervise = process.platform === "linux" && Native.available() && Supervised.launchable()
  // The sandbox is applied by a supervisor: without one, there is none.
  const sandbox = supervise
    ? sandboxOf(config.sandbox, options.abi)
    : { ...sandboxOf("off"), mode: config.sandbox ?? "auto", notice: "Commands run without a supervisor here: no OS sandbox." }
  const records: Supervised.Records = { directory: options.records ?? join(dataDirectory(), "runs") }
  /** Where what a command left in core's configuration is kept for a person (commands cannot reach the data dir). */
  const keeping = options.keeping ?? join(dataDirectory(), "undone")
  /** Where the guards of every core process sharing the data directory note what they found (Guard.begin). */
  const guardRecords = options.guards ?? LoadGate.directoryOf()
  if (supervise) {
    // Core itself: no command may read its memory or environment (its secrets) through /proc. Non-dumpable is not
    // enough on every kernel, so their values are also overwritten where /proc/<pid>/environ reads them.
    Native.prctl(Native.PR_SET_DUMPABLE, 0)
    Native.scrubEnvironment(secrets(process.env))
    // What a dead core left running ends before anything of this one runs (or replays as interrupted).
    Supervised.sweep(records)
  }
  // Core's configuration in a Location is guarded from the commands given a sandbox policy, unless the sandbox is off.
  const guards = supervise && sandbox.mode !== "off"
  const supervisors = supervise
    ? Supervised.pool(
        records,
        guards && options.namespaces !== false,
        sandbox.active && options.ports !== false,
        undefined,
        options.pids !== false,
      )
    : undefined
  let empty: string | null | undefined
  /**
   * The empty file what the rules deny is covered with (Namespace.cover): in core's data directory, which no
   * command reaches, made once; undefined when it cannot be had (then denied paths are carved out of the grants).
   */
  const emptyFile = (): string | undefined => (empty ??= Covered.emptyIn(dataDirectory())) ?? undefined
  let mountable: boolean | undefined
  /** Whether supervisors keep the guarded entries read-only with mounts (probed on first use). */
  const mounts = () => (mountable ??= options.namespaces !== false && Supervised.canMount())
  /**
   * Runs `request` once it has its turn among the supervised commands of this process (Supervised.runTurn: at most
   * half the open-file limit's worth at once, sessions taking turns), before anything of it is prepared or guarded.
   * One that must wait first lets the next call be prepared (Preparing.done); it is interruptible while it waits,
   * when it starts nothing.
   */
  const run = (request: Request): Effect.Effect<Result, SpawnError> =>
    supervisors === undefined || request.supervise === false
      ? runNow(request)
      : Effect.acquireUseRelease(
          Effect.suspend(() => {
            const now = Supervised.runTurn.now()
            if (now !== undefined) return Effect.succeed(now)
            return Preparing.done.pipe(
              Effect.andThen(request.onWait ?? Effect.void),
              Effect.andThen(Effect.interruptible(Effect.promise((signal) => Supervised.runTurn.take(signal, request.owner ?? "")))),
            )
          }),
          () => runNow(request),
          (release) => Effect.sync(release),
        )
  // Untraced on purpose: a span's captured stack costs more than everything else spawning `true` adds to Bun.spawn.
  const runNow = Effect.fnUntraced(function* (request: Request) {
    if (request.sandbox !== undefined && sandbox.mode === "required" && !sandbox.active) {
      return yield* spawnError(request, "ENOSANDBOX", sandbox.notice!)
    }
    const context = yield* Effect.context<never>()
    const onProgress = request.onProgress
    const progress =
      onProgress === undefined ? undefined : (update: Progress) => Effect.runPromiseWith(context)(onProgress(update))
    const started = performance.now()
    const supervised = supervisors !== undefined && request.supervise !== false
    let prepared: Policies.Prepared | undefined
    try {
      prepared =
        supervised && request.sandbox !== undefined && sandbox.active
          ? Policies.prepare(request.sandbox, request.env ?? process.env, config, mounts() && emptyFile() !== undefined)
          : undefined
    } catch (cause) {
      // Preparing looks at the disk and may start a probe: a system out of descriptors fails it too.
      const code = shortOf(cause)
      if (code === undefined) throw cause
      return yield* spawnError(request, code, cause instanceof Error ? cause.message : String(cause))
    }
    // Too much to look through for what the read rules deny: not started (the rules fail closed).
    if (prepared?.uncovered !== undefined) {
      prepared.cleanup()
      return yield* spawnError(request, "EUNCOVERED", prepared.uncovered)
    }
    const guarding = supervised && guards && request.sandbox !== undefined && request.sandbox.configuration !== true
    // No core process loads the Locations' configuration from before the guard looks until it has undone what the
    // command left (LoadGate); a load under way is waited for. The Locations served are read again once the locks
    // are held, until none was first served meanwhile: the guard begins (at once after the last reading) with them all.
    const servedNow = () => request.sandbox!.servedNow?.() ?? request.sandbox!.others ?? []
    let others: ReadonlyArray<string> = guarding ? servedNow() : []
    const held: Array<() => void> = []
    let locking = guarding ? [request.sandbox!.location, ...others] : []
    while (locking.length > 0) {
      const keys = locking.map(Landlock.real)
      // Interrupted while it waits for more, what it holds already is let go (each wait lets go of its own).
      held.push(
        yield* Effect.promise((signal) => LoadGate.command(keys, guardRecords, signal)).pipe(
          Effect.onInterrupt(() => Effect.sync(() => held.splice(0).forEach((release) => release()))),
        ),
      )
      const now = servedNow()
      locking = now.filter((location) => !others.includes(location))
      others = now
    }
    const letGo = guarding ? () => held.splice(0).forEach((release) => release()) : undefined
    const guarded = guarding
      ? Guard.begin(request.sandbox!.location, keeping, others, !mounts(), prepared?.grants?.write, undefined, guardRecords, prepared?.granted)
      : undefined
    // Another command still running swapped what this one's guard would take for the Location's: not started.
    if (guarded?.refused !== undefined) {
      letGo?.()
      prepared?.cleanup()
      return yield* spawnError(request, guarded.refusedBy === "unsearched" ? "EUNSEARCHED" : "EMOVED", guarded.refused)
    }
    const spawn = supervised
      ? spawnSupervised(
          supervisors,
          prepared === undefined ? request : { ...request, env: { ...(request.env ?? process.env), ...prepared.env } },
          prepared?.grants,
          guarded,
          prepared?.cover !== undefined ? { ...prepared.cover, empty: emptyFile()! } : undefined,
          request.sandbox !== undefined
            ? Sockets.reachable(config.sockets, [request.sandbox.location, ...request.sandbox.approved])
            : undefined,
        )
      : spawnGroup(request)
    // Prepared: the next call's preparation may run while this one's process starts and runs.
    yield* Preparing.done
    return yield* Effect.acquireUseRelease(
      Effect.flatMap(spawn, (handle) =>
        Effect.sync(() => start(handle, started, request, resolved, progress)).pipe(
          // A defect while setting up the run must not leave the process it already started behind.
          Effect.onError(() => Effect.promise(() => (handle.stop(), handle.ended))),
        ),
      ),
      (running) =>
        Effect.map(Effect.promise(() => running.result), (result) =>
          prepared === undefined ? result : withRefused(result, prepared, request.cwd),
        ),
      // Runs however the use ends: on interruption this is what ends the process before the run returns, and what
      // it ended is what a cancelled call's settlement names.
      (running, exit) =>
        Effect.flatMap(Effect.promise(() => running.close()), (result) =>
          Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) && result.killed.length > 0
            ? Stopping.note(
                `Ended ${result.killed.length} process${result.killed.length === 1 ? "" : "es"} it had started: ${named(result.killed)}.`,
              )
            : Effect.void,
        ),
    ).pipe(
      Effect.ensuring(
        Effect.sync(() => {
          prepared?.cleanup()
          // Normally done as the run ended; here for a run that never started.
          guarded?.finish(false)
          letGo?.()
        }),
      ),
    )
  })
  const warm = Effect.promise(() => supervisors?.warm() ?? Promise.resolve())
  return Service.of({ limits: resolved, shell, sandbox, guarded: guards, warm, run })
}

export const layer = (config: Config.Shell = {}, options: Options = {}): Layer.Layer<Service> =>
  Layer.sync(Service, () => make(config, options))
