export * as Shell from "./producer"

// The process producer: the one place processes are spawned (Bun.spawn). Each process runs in its own process
// group with stdin closed unless given, its output captured within limits (./capture) and reported honestly, under
// a wall-clock and an optional inactivity timeout. However a run ends (exit, timeout, interruption, a closing
// scope), the whole group is ended and checked gone (./group). It never decides permissions or what a model sees.

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Config } from "../config/config"
import { Capture } from "./capture"
import { ProcessGroup } from "./group"

export const DEFAULT_TIMEOUT_MS = 120_000
export const DEFAULT_MAX_TIMEOUT_MS = 600_000
export const DEFAULT_MAX_CAPTURE_BYTES = 1_048_576
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

/** The limits every run starts from (`shell` in core.json). */
export interface Limits {
  readonly timeoutMs: number
  readonly maxTimeoutMs: number
  /** Per stream, and again for the merged view. */
  readonly maxCaptureBytes: number
  /** Off when undefined. */
  readonly inactivityTimeoutMs: number | undefined
}

export const limits = (config: Config.Shell = {}): Limits => {
  const maxTimeoutMs = config.maxTimeoutMs ?? DEFAULT_MAX_TIMEOUT_MS
  return {
    // A default above the maximum would make every call without a timeout invalid.
    timeoutMs: Math.min(config.timeoutMs ?? DEFAULT_TIMEOUT_MS, maxTimeoutMs),
    maxTimeoutMs,
    maxCaptureBytes: config.maxCaptureBytes ?? DEFAULT_MAX_CAPTURE_BYTES,
    inactivityTimeoutMs: config.inactivityTimeoutMs,
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
  /** Members of the group that could not be killed (empty unless a process is stuck in the kernel). */
  readonly survivors: ReadonlyArray<number>
}

export interface Interface {
  readonly limits: Limits
  /** The shell commands run with: bash from PATH, or /bin/sh when there is none. */
  readonly shell: string
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
  /** Resolves once the process has exited, its group is gone and its output is read. */
  readonly result: Promise<Result>
  /** Ends the group (idempotent); resolves when `result` has. */
  readonly close: () => Promise<unknown>
}

type Child = Bun.Subprocess<"ignore" | Uint8Array, "pipe", "pipe">

/** Spawns the process: the system refusing is a SpawnError, anything else thrown is a defect. */
const spawn = (request: Request): Effect.Effect<{ readonly child: Child; readonly started: number }, SpawnError> =>
  Effect.suspend(() => {
    const started = performance.now()
    try {
      const child = Bun.spawn([...request.argv], {
        cwd: request.cwd,
        // Absent, Bun hands the child core's own environment without copying it here first.
        ...(request.env === undefined ? {} : { env: { ...request.env } }),
        stdin: request.stdin ?? "ignore",
        stdout: "pipe",
        stderr: "pipe",
        // Its own process group, so that one signal reaches every descendant.
        detached: true,
      })
      ProcessGroup.track(child.pid)
      return Effect.succeed({ child, started })
    } catch (cause) {
      const code = typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
      if (typeof code !== "string" || !SPAWN_ERRNO.has(code)) return Effect.die(cause)
      return Effect.fail(
        new SpawnError({
          command: request.argv.join(" "),
          cwd: request.cwd,
          code,
          message: `Could not start ${request.argv[0]} in ${request.cwd}: ${cause instanceof Error ? cause.message : String(cause)}`,
        }),
      )
    }
  })

const start = (
  child: Child,
  started: number,
  request: Request,
  limits: Limits,
  progress: ((update: Progress) => Promise<void>) | undefined,
): Running => {
  const pgid = child.pid
  const captureBytes = request.maxCaptureBytes ?? limits.maxCaptureBytes
  const stdout = Capture.make(captureBytes)
  const stderr = Capture.make(captureBytes)
  const output = Capture.make(captureBytes)

  let timedOut: Timeout | undefined
  let stopping: Promise<ReadonlyArray<number>> | undefined
  const stop = () => (stopping ??= ProcessGroup.terminate(pgid))

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
    for (;;) {
      const { done, value } = await reader.read()
      if (done) {
        ended[name] = true
        return
      }
      capture.push(value)
      output.push(value)
      lastOutput = performance.now()
      if (progress === undefined || pendingProgress !== undefined) continue
      // At most one update per interval; one that falls inside the interval is sent at its end.
      const wait = lastProgress + PROGRESS_INTERVAL_MS - lastOutput
      if (wait <= 0) emit()
      else pendingProgress = setTimeout(emit, wait)
    }
  }
  const reading = Promise.all([pump(child.stdout, stdout, "stdout"), pump(child.stderr, stderr, "stderr")])

  const result = (async (): Promise<Result> => {
    await child.exited
    clearTimeout(wall)
    clearTimeout(idle)
    // The process is gone; what it left running in its group (`sleep 1000 &`) ends with the call.
    const survivors = await stop()
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
    return {
      exitCode: child.exitCode,
      signal: child.signalCode === null ? null : String(child.signalCode),
      timedOut,
      stdout: stdout.finish(),
      stderr: stderr.finish(),
      output: output.finish(),
      unread,
      durationMs: performance.now() - started,
      survivors,
    }
  })()

  return { result, close: () => stop().then(() => result) }
}

export const make = (config: Config.Shell = {}): Interface => {
  const resolved = limits(config)
  const shell = Bun.which("bash") ?? "/bin/sh"
  // Untraced on purpose: a span's captured stack costs more than everything else spawning `true` adds to Bun.spawn.
  const run = Effect.fnUntraced(function* (request: Request) {
    const context = yield* Effect.context<never>()
    const onProgress = request.onProgress
    const progress =
      onProgress === undefined ? undefined : (update: Progress) => Effect.runPromiseWith(context)(onProgress(update))
    return yield* Effect.acquireUseRelease(
      Effect.flatMap(spawn(request), ({ child, started }) =>
        Effect.sync(() => start(child, started, request, resolved, progress)).pipe(
          // A defect while setting up the run must not leave the process it already started behind.
          Effect.onError(() => Effect.promise(() => ProcessGroup.terminate(child.pid))),
        ),
      ),
      (running) => Effect.promise(() => running.result),
      // Runs however the use ends: on interruption this is what ends the group before the run returns.
      (running) => Effect.promise(() => running.close()),
    )
  })
  return Service.of({ limits: resolved, shell, run })
}

export const layer = (config: Config.Shell = {}): Layer.Layer<Service> => Layer.sync(Service, () => make(config))
