export * as SearchProcess from "./search-process"

// Starting rg and streaming what it prints, for ./ripgrep. Where the kernel has Landlock and the caller names the
// directory it checked (`root`), rg is spawned from a thread of core (a worker) that has restricted itself, with
// Landlock, to reading beneath that directory (and the few files rg needs besides): Landlock restricts the thread
// that applies it and every process it spawns afterwards, never the rest of core. The directory is held open by
// core and proved to be the one checked (device and inode, reached with no symlink: ../shell/confine), and the
// rules are made from that descriptor, so no path is looked up after the proof. A confined thread is kept for its
// directory and reused while the directory and every file it grants are the same ones (device and inode, which
// the held descriptors keep from being reused): a repeated search then costs little more than spawning rg. A
// thread that cannot confine itself runs nothing. Without Landlock, or without a root, rg is spawned directly.
// Either way rg is killed on cancel, on timeout and by core's forced exit. It starts nothing, so it needs no
// process group or session of its own; it stays in core's, so the scheduler counts it as core's work (a session
// of its own would be scheduled as one more user of the machine, and on a busy one take twice as long).

import { lstatSync, statSync } from "node:fs"
import { Confine } from "../shell/confine"
import { Landlock } from "../shell/landlock"
import { Native } from "../shell/native"
import { ProcessGroup } from "../shell/process-group"

/** How long a confined thread with nothing to run is kept for the next search in its directory. */
export const IDLE_MS = 60_000
/** Confined threads kept at most (for that many directories); one more retires the least recently used idle one. */
export const MAX_THREADS = 4
/** Bytes of rg's stderr kept; the rest is dropped. */
const MAX_STDERR_BYTES = 1 << 20

/** What a search runs. */
export interface Spawn {
  /** rg and its arguments. */
  readonly argv: ReadonlyArray<string>
  /** Where it runs: the directory the caller holds open (`Pinned.Directory.at("")`). */
  readonly cwd: string
  /** Written to rg's stdin (closed after); stdin is /dev/null when absent. */
  readonly stdin?: string
  /**
   * The real path of the directory at `cwd`: with Landlock, rg may read nothing outside it but `files` (and runs in
   * it, through core's own descriptor). Unconfined when absent.
   */
  readonly root?: string
  /** Regular files outside `root` that the confined rg may read (real paths; its executable among them). */
  readonly files?: ReadonlyArray<string>
  readonly onData: (chunk: Uint8Array) => void
  readonly timeoutMs: number
}

export type Ended =
  | {
      readonly kind: "ended"
      readonly exitCode: number | null
      readonly signal: string | null
      readonly stderr: string
      /** Set when the time limit stopped it. */
      readonly timedOutMs?: number
    }
  /** The directory at `cwd` is gone or no longer the one at `root`: nothing ran. */
  | { readonly kind: "moved"; readonly message: string }

/** A started search: `ended` resolves once rg has exited and its output has been handed on. */
export interface Running {
  readonly ended: Promise<Ended>
  /** Ends rg (idempotent); `ended` resolves after. */
  readonly stop: () => void
}

/** Whether searches given a root run confined here: Linux with Landlock. */
export const confining = (): boolean => process.platform === "linux" && Landlock.abi() > 0

/** What a confined rg may touch besides its directory and files: /dev/null (its closed stdin), nothing else. */
const CONFINED: Landlock.Grants = { read: [], write: [], devices: ["/dev/null"] }

// The worker's code: self-contained (it runs from a blob in the compiled binary too), so it imports only bun:ffi.
// It restricts its own thread with the ruleset core made (no_new_privs, then landlock_restrict_self) and refuses
// to run anything unless that succeeded; then it spawns what it is told and streams back what it prints.
export const SOURCE = `
import { dlopen } from "bun:ffi"
const SYMBOLS = {
  prctl: { args: ["i32", "u64", "u64", "u64", "u64"], returns: "i32" },
  syscall: { args: ["i64", "i64", "i64", "i64", "i64"], returns: "i64" },
}
const libc = () => {
  for (const name of ["libc.so.6", "libc.so"]) {
    try { return dlopen(name, SYMBOLS).symbols } catch {}
  }
  return undefined
}
let confined = false
const children = new Map()
// What rg prints is handed on in batches of up to BATCH_BYTES, one message each rather than one per read of the
// pipe (a file's matches each), which costs the receiving thread more than the bytes themselves; a batch is handed
// on at the first read that finds it BATCH_MS old, so core reads it (and stats the files it names) while rg is
// still searching.
const BATCH_BYTES = 1 << 18
const BATCH_MS = 20
const confine = (ruleset) => {
  const lib = libc()
  if (lib === undefined) return "libc could not be opened"
  if (lib.prctl(38, 1, 0, 0, 0) !== 0) return "prctl(PR_SET_NO_NEW_PRIVS) failed"
  if (Number(lib.syscall(446, ruleset, 0, 0, 0)) !== 0) return "landlock_restrict_self failed"
  confined = true
  return undefined
}
const run = async ({ id, argv, cwd, stdin, stderrBytes }) => {
  if (!confined) return postMessage({ kind: "failed", id, message: "the search thread is not confined" })
  let child
  try {
    child = Bun.spawn(argv, { cwd, stdin: stdin === undefined ? "ignore" : Buffer.from(stdin), stdout: "pipe", stderr: "pipe" })
  } catch (cause) {
    return postMessage({ kind: "failed", id, message: String(cause && cause.message || cause) })
  }
  children.set(id, child)
  postMessage({ kind: "started", id, pid: child.pid })
  const errors = (async () => {
    const kept = []
    let size = 0
    for await (const chunk of child.stderr) {
      if (size < stderrBytes) kept.push(chunk.subarray(0, stderrBytes - size))
      size += chunk.length
    }
    return Buffer.concat(kept).toString()
  })()
  let batch
  let filled = 0
  let posted = performance.now()
  const flush = () => {
    if (filled === 0) return
    // A small batch is copied out and its buffer kept for the next (a fresh large buffer costs more than the copy).
    if (filled <= BATCH_BYTES / 4) {
      const own = batch.slice(0, filled)
      postMessage({ kind: "data", id, chunk: own }, [own.buffer])
    } else {
      postMessage({ kind: "data", id, chunk: batch.subarray(0, filled) }, [batch.buffer])
      batch = undefined
    }
    filled = 0
    posted = performance.now()
  }
  for await (const chunk of child.stdout) {
    if (filled + chunk.length > BATCH_BYTES) flush()
    if (chunk.length >= BATCH_BYTES) {
      const own = chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength ? chunk : chunk.slice()
      postMessage({ kind: "data", id, chunk: own }, [own.buffer])
      continue
    }
    batch ??= new Uint8Array(BATCH_BYTES)
    batch.set(chunk, filled)
    filled += chunk.length
    if (performance.now() - posted >= BATCH_MS) flush()
  }
  flush()
  await child.exited
  children.delete(id)
  postMessage({ kind: "ended", id, exitCode: child.exitCode, signal: child.signalCode, stderr: await errors })
}
onmessage = (event) => {
  const order = event.data
  if (order.kind === "confine") postMessage({ kind: "confined", failed: confine(order.ruleset) })
  else if (order.kind === "run") void run(order)
  else if (order.kind === "stop") children.get(order.id)?.kill("SIGKILL")
}
`

type Report =
  | { readonly kind: "confined"; readonly failed: string | undefined }
  | { readonly kind: "started"; readonly id: number; readonly pid: number }
  | { readonly kind: "data"; readonly id: number; readonly chunk: Uint8Array }
  | { readonly kind: "failed"; readonly id: number; readonly message: string }
  | {
      readonly kind: "ended"
      readonly id: number
      readonly exitCode: number | null
      readonly signal: string | null
      readonly stderr: string
    }

interface Listener {
  readonly report: (report: Exclude<Report, { kind: "confined" }>) => void
  /** The thread died before the run ended. */
  readonly lost: (message: string) => void
}

interface Thread {
  readonly worker: Worker
  readonly root: string
  /** The directory's device and inode (decimal), as the thread's rules hold it. */
  readonly directory: string
  /** Each granted file's device and inode, by path. */
  readonly files: ReadonlyMap<string, string>
  readonly held: Confine.Held
  readonly runs: Map<number, Listener>
  idle: ReturnType<typeof setTimeout> | undefined
  used: number
  gone: boolean
}

let source: string | undefined
const threads = new Map<string, Thread>()
let nextId = 0

/** A file's device and inode when it is a regular file (not a symlink), else undefined. */
const identity = (path: string): string | undefined => {
  const stat = lstatSync(path, { bigint: true, throwIfNoEntry: false })
  return stat?.isFile() === true ? `${stat.dev}:${stat.ino}` : undefined
}

const retire = (thread: Thread) => {
  if (thread.gone) return
  thread.gone = true
  clearTimeout(thread.idle)
  if (threads.get(thread.root) === thread) threads.delete(thread.root)
  thread.worker.terminate()
  thread.held.close()
  for (const listener of thread.runs.values()) listener.lost("the search thread ended")
  thread.runs.clear()
}

/** Once a thread has nothing to run: it stops keeping core alive, and retires after IDLE_MS (or when replaced). */
const rest = (thread: Thread) => {
  if (thread.runs.size > 0) return
  if (thread.gone || threads.get(thread.root) !== thread) return retire(thread)
  thread.worker.unref()
  thread.idle = setTimeout(() => retire(thread), IDLE_MS)
  thread.idle.unref()
}

/**
 * A confined thread for `root` (held open at `cwd`) granting `files`: the one kept when it holds the very same
 * directory and files, else a new one. Answers why not when the directory is not the one at `root` any more.
 */
const threadFor = async (root: string, cwd: string, files: ReadonlyArray<string>): Promise<Thread | { moved: string }> => {
  const stat = statSync(cwd, { bigint: true, throwIfNoEntry: false })
  if (stat === undefined) return { moved: `${root} is gone` }
  const directory = `${stat.dev}:${stat.ino}`
  const wanted = new Map<string, string>()
  for (const file of files) {
    const id = identity(file)
    if (id !== undefined) wanted.set(file, id)
  }
  const kept = threads.get(root)
  if (
    kept !== undefined &&
    !kept.gone &&
    kept.directory === directory &&
    kept.files.size === wanted.size &&
    [...wanted].every(([file, id]) => kept.files.get(file) === id)
  ) {
    return kept
  }
  const held = Confine.hold({ directory: { path: root, dev: String(stat.dev), ino: String(stat.ino) }, files: [...wanted.keys()] })
  if ("moved" in held) return held
  const made = Landlock.ruleset(CONFINED, Landlock.abi(), held.grants)
  if ("failed" in made) {
    held.close()
    throw new Error(`Could not confine the search: ${made.failed}`)
  }
  source ??= URL.createObjectURL(new Blob([SOURCE], { type: "application/javascript" }))
  const worker = new Worker(source)
  const thread: Thread = { worker, root, directory, files: wanted, held, runs: new Map(), idle: undefined, used: 0, gone: false }
  let confined: (failed: string | undefined) => void = () => {}
  const ready = new Promise<string | undefined>((resolve) => (confined = resolve))
  worker.onmessage = (event: MessageEvent<Report>) => {
    const report = event.data
    if (report.kind === "confined") return confined(report.failed)
    thread.runs.get(report.id)?.report(report)
  }
  const lose = (message: string) => {
    confined(message)
    retire(thread)
  }
  worker.onerror = (event) => lose(`the search thread failed: ${event.message}`)
  worker.addEventListener("close", () => lose("the search thread ended"))
  worker.postMessage({ kind: "confine", ruleset: made.fd })
  let failed: string | undefined
  try {
    failed = await ready
  } finally {
    Native.close(made.fd)
  }
  if (failed !== undefined) {
    retire(thread)
    throw new Error(`Could not confine the search: ${failed}`)
  }
  const replaced = threads.get(root)
  threads.set(root, thread)
  if (replaced !== undefined) rest(replaced)
  if (threads.size > MAX_THREADS) {
    const idle = [...threads.values()].filter((other) => other.runs.size === 0 && other !== thread)
    const oldest = idle.sort((a, b) => a.used - b.used)[0]
    if (oldest !== undefined) retire(oldest)
  }
  return thread
}

/** Starts rg in a confined thread: `moved` when the directory is not the one checked. */
const inThread = async (spawn: Spawn, root: string): Promise<Running> => {
  const thread = await threadFor(root, spawn.cwd, spawn.files ?? [])
  if ("moved" in thread) return { ended: Promise.resolve({ kind: "moved", message: thread.moved }), stop: () => {} }
  clearTimeout(thread.idle)
  thread.idle = undefined
  thread.used = performance.now()
  thread.worker.ref()
  const id = nextId++
  let pid: number | undefined
  let stopping = false
  let finish: (ended: Ended) => void = () => {}
  let fail: (cause: Error) => void = () => {}
  const ended = new Promise<Ended>((resolve, reject) => {
    finish = resolve
    fail = reject
  })
  const done = () => {
    thread.runs.delete(id)
    rest(thread)
  }
  thread.runs.set(id, {
    report: (report) => {
      if (report.kind === "started") {
        pid = report.pid
        ProcessGroup.trackProcess(pid)
        if (stopping) thread.worker.postMessage({ kind: "stop", id })
      } else if (report.kind === "data") spawn.onData(report.chunk)
      else if (report.kind === "failed") {
        done()
        fail(new Error(`Could not start ${spawn.argv[0]}: ${report.message}`))
      } else if (report.kind === "ended") {
        done()
        if (pid !== undefined) ProcessGroup.untrackProcess(pid)
        finish({ kind: "ended", exitCode: report.exitCode, signal: report.signal, stderr: report.stderr })
      }
    },
    lost: (message) => {
      // With its thread gone nobody reaps rg, so its pid stays its own: killed by it.
      if (pid !== undefined) {
        try {
          process.kill(pid, "SIGKILL")
        } catch {
          // ended already
        }
        ProcessGroup.untrackProcess(pid)
      }
      fail(new Error(message))
    },
  })
  thread.worker.postMessage({
    kind: "run",
    id,
    argv: spawn.argv,
    cwd: thread.held.cwd,
    ...(spawn.stdin === undefined ? {} : { stdin: spawn.stdin }),
    stderrBytes: MAX_STDERR_BYTES,
  })
  return {
    ended,
    stop: () => {
      if (stopping) return
      stopping = true
      // The thread kills it: it alone knows whether rg has been reaped (and its pid could be another's).
      if (pid !== undefined) thread.worker.postMessage({ kind: "stop", id })
    },
  }
}

/** Starts rg directly. */
const direct = (spawn: Spawn): Running => {
  const child = Bun.spawn([...spawn.argv], {
    cwd: spawn.cwd,
    stdin: spawn.stdin === undefined ? "ignore" : Buffer.from(spawn.stdin),
    stdout: "pipe",
    stderr: "pipe",
  })
  ProcessGroup.trackProcess(child.pid)
  const errors = (async () => {
    const kept: Array<Uint8Array> = []
    let size = 0
    for await (const chunk of child.stderr) {
      if (size < MAX_STDERR_BYTES) kept.push(chunk.subarray(0, MAX_STDERR_BYTES - size))
      size += chunk.length
    }
    return Buffer.concat(kept).toString()
  })()
  const ended = (async (): Promise<Ended> => {
    for await (const chunk of child.stdout) spawn.onData(chunk)
    await child.exited
    ProcessGroup.untrackProcess(child.pid)
    return { kind: "ended", exitCode: child.exitCode, signal: child.signalCode === null ? null : String(child.signalCode), stderr: await errors }
  })()
  return { ended, stop: () => child.kill("SIGKILL") }
}

/**
 * Starts a search (confined where it can be: see the top of this file) under its time limit. A failure to start
 * rg, or to confine it, rejects: core's fault, not the search's.
 */
export const start = async (spawn: Spawn): Promise<Running> => {
  const running = spawn.root !== undefined && confining() ? await inThread(spawn, spawn.root) : direct(spawn)
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    running.stop()
  }, spawn.timeoutMs)
  let over = false
  const ended = running.ended.then(
    (ended) => (ended.kind === "ended" && timedOut ? { ...ended, timedOutMs: spawn.timeoutMs } : ended),
  )
  void ended
    .finally(() => {
      over = true
      clearTimeout(timer)
    })
    .catch(() => {})
  // Once rg has ended (and been reaped) its pid may be another process's: nothing is signalled after.
  return {
    ended,
    stop: () => {
      if (!over) running.stop()
    },
  }
}
