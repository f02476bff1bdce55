export * as SearchProcess from "./search-process"

// Starting rg and streaming what it prints, for ./ripgrep. Where the kernel has Landlock and the caller names the
// directory it checked (`root`), rg is spawned from a thread of core (a worker) that has restricted itself, with
// Landlock, to reading beneath that directory (and the few files rg needs besides): Landlock restricts the thread
// that applies it and every thread and process it starts afterwards, never the rest of core (so that thread starts
// no thread that works for core: see the worker's code below). The directory is held open by
// core and proved to be the one checked (device and inode, reached with no symlink: ../shell/confine), and the
// rules are made from that descriptor, so no path is looked up after the proof. A confined thread is kept for its
// directory and reused while the directory and every file it grants are the same ones (device and inode, which
// the held descriptors keep from being reused): a repeated search then costs little more than spawning rg. It
// runs one search at a time; a search asked for while it is busy gets a thread of its own, which is kept instead. A
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
//
// A confined thread must start no thread that works for the rest of core: a thread inherits the Landlock domain
// of the thread that starts it, and the runtime starts the threads of its shared I/O pool from whichever thread
// first needs one. A subprocess whose output is read through the runtime's pipes needs one (measured: a piped
// spawn from a fresh confined thread starts two), after which core's own asynchronous file operations (keeping a
// managed output, say) ran confined and failed with EACCES. So the worker hands rg pipes it made itself and reads
// them with poll and read through bun:ffi, on its own thread, which it may block: it runs one search at a time (a
// search asked for while one runs gets another thread) and checks between polls whether core asked it to stop.
// It hands on at most IN_FLIGHT batches core has not taken in (core counts them in memory they share, after a turn
// of its event loop): rg's output waits in its pipe meanwhile, and rg with it.
export const SOURCE = `
import { dlopen, ptr } from "bun:ffi"
const SYMBOLS = {
  prctl: { args: ["i32", "u64", "u64", "u64", "u64"], returns: "i32" },
  syscall: { args: ["i64", "i64", "i64", "i64", "i64"], returns: "i64" },
  pipe2: { args: ["ptr", "i32"], returns: "i32" },
  poll: { args: ["ptr", "u64", "i32"], returns: "i32" },
  read: { args: ["i32", "ptr", "u64"], returns: "i64" },
  write: { args: ["i32", "ptr", "u64"], returns: "i64" },
  close: { args: ["i32"], returns: "i32" },
  fcntl: { args: ["i32", "i32", "i32"], returns: "i32" },
}
const libc = () => {
  for (const name of ["libc.so.6", "libc.so"]) {
    try { return dlopen(name, SYMBOLS).symbols } catch {}
  }
  return undefined
}
const lib = libc()
let confined = false
// Shared with core: [STOP] a run's id when core asks it to stop (checked between polls, at least every BATCH_MS);
// [USED] how many batches core has taken in (it adds one after handing each on, and wakes this thread).
let shared
const STOP = 0
const USED = 1
// What rg prints is handed on in batches of up to BATCH_BYTES, one message each rather than one per read of the
// pipe (a file's matches each), which costs the receiving thread more than the bytes themselves; a batch is handed
// on at the first poll that finds it BATCH_MS old, so core reads it (and stats the files it names) while rg is
// still searching.
const BATCH_BYTES = 1 << 18
const BATCH_MS = 20
// Batches handed on that core has not taken in yet, at most: past that rg's output is left in its pipe, so rg waits
// for core (memory stays bounded by this, not by what rg prints) and core's thread gets turns between batches (its
// timers, other calls, a cancel) rather than a queue of them all at once.
const IN_FLIGHT = 2
const O_CLOEXEC = 0o2000000
const O_NONBLOCK = 0o4000
const F_SETFL = 4
const POLLIN = 1
const POLLOUT = 4
const confine = (ruleset, memory) => {
  if (lib === undefined) return "libc could not be opened"
  if (lib.prctl(38, 1, 0, 0, 0) !== 0) return "prctl(PR_SET_NO_NEW_PRIVS) failed"
  if (Number(lib.syscall(446, ruleset, 0, 0, 0)) !== 0) return "landlock_restrict_self failed"
  shared = new Int32Array(memory)
  confined = true
  return undefined
}
/** A pipe of descriptors closed at exec (the child gets its end as 0, 1 or 2, which stays open), or undefined. */
const pipe = () => {
  const ends = new Int32Array(2)
  return lib.pipe2(ptr(ends), O_CLOEXEC) === 0 ? [ends[0], ends[1]] : undefined
}
const closeAll = (fds) => {
  for (const fd of fds) if (fd !== undefined && fd >= 0) lib.close(fd)
}
const run = async ({ id, argv, cwd, stdin, stderrBytes }) => {
  if (!confined) return postMessage({ kind: "failed", id, message: "the search thread is not confined" })
  const out = pipe()
  const err = pipe()
  const input = stdin === undefined ? undefined : pipe()
  if (out === undefined || err === undefined || (stdin !== undefined && input === undefined)) {
    closeAll([...(out ?? []), ...(err ?? []), ...(input ?? [])])
    return postMessage({ kind: "failed", id, message: "pipe2 failed" })
  }
  let child
  try {
    child = Bun.spawn(argv, { cwd, stdin: input === undefined ? "ignore" : input[0], stdout: out[1], stderr: err[1] })
  } catch (cause) {
    closeAll([...out, ...err, ...(input ?? [])])
    return postMessage({ kind: "failed", id, message: String(cause && cause.message || cause) })
  }
  // rg holds its own copies now: its ends are closed here, so the pipes end when rg does.
  closeAll([out[1], err[1], input === undefined ? undefined : input[0]])
  postMessage({ kind: "started", id, pid: child.pid })
  // The rules are written as rg takes them (its end of the pipe stays blocking, this one does not).
  const data = input === undefined ? undefined : Buffer.from(stdin)
  let written = 0
  let inFd = input === undefined ? -1 : input[1]
  if (inFd >= 0 && data.length === 0) {
    lib.close(inFd)
    inFd = -1
  } else if (inFd >= 0 && lib.fcntl(inFd, F_SETFL, O_NONBLOCK) !== 0) {
    // rg must not run without the rules it was given.
    child.kill("SIGKILL")
    closeAll([inFd, out[0], err[0]])
    await child.exited
    return postMessage({ kind: "failed", id, message: "fcntl(O_NONBLOCK) failed" })
  }
  let outFd = out[0]
  let errFd = err[0]
  const kept = []
  let keptBytes = 0
  const scratch = new Uint8Array(1 << 16)
  let batch
  let filled = 0
  let posted = performance.now()
  // Batches handed on, and core's count of those it took in when this run began.
  let handed = 0
  const taken = Atomics.load(shared, USED)
  const flush = () => {
    if (filled === 0) return
    handed++
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
  const polled = new ArrayBuffer(24)
  const fds = new Int32Array(polled)
  const events = new Int16Array(polled)
  let killed = false
  while (outFd >= 0 || errFd >= 0) {
    if (!killed && Atomics.load(shared, STOP) === id) {
      killed = true
      child.kill("SIGKILL")
    }
    // Core behind (and not stopping it): rg's output waits in its pipe until core takes a batch in, or BATCH_MS.
    const used = Atomics.load(shared, USED)
    const behind = !killed && ((handed - (used - taken)) | 0) >= IN_FLIGHT
    if (behind) Atomics.wait(shared, USED, used, BATCH_MS)
    const watched = []
    for (const [fd, wanted] of [[outFd, POLLIN], [errFd, POLLIN], [inFd, POLLOUT]]) {
      if (fd < 0 || (behind && fd === outFd)) continue
      const at = watched.length
      fds[at * 2] = fd
      events[at * 4 + 2] = wanted
      events[at * 4 + 3] = 0
      watched.push(fd)
    }
    // A signal ends a poll early (-1): the loop polls again. Behind, the wait above was the pause.
    lib.poll(ptr(polled), watched.length, behind ? 0 : BATCH_MS)
    for (let at = 0; at < watched.length; at++) {
      const fd = watched[at]
      if (events[at * 4 + 3] === 0) continue
      if (fd === outFd) {
        batch ??= new Uint8Array(BATCH_BYTES)
        const count = Number(lib.read(fd, ptr(batch, filled), BATCH_BYTES - filled))
        if (count <= 0) {
          lib.close(fd)
          outFd = -1
        } else {
          filled += count
          if (filled === BATCH_BYTES) flush()
        }
      } else if (fd === errFd) {
        const count = Number(lib.read(fd, ptr(scratch), scratch.length))
        if (count <= 0) {
          lib.close(fd)
          errFd = -1
        } else if (keptBytes < stderrBytes) {
          const piece = scratch.slice(0, Math.min(count, stderrBytes - keptBytes))
          kept.push(piece)
          keptBytes += piece.length
        }
      } else {
        // Ready to take more, or rg closed its end (it will not read the rest): written, or given up.
        const count = Number(lib.write(fd, ptr(data, written), data.length - written))
        if (count > 0) written += count
        if (count <= 0 || written === data.length) {
          lib.close(fd)
          inFd = -1
        }
      }
    }
    if (!behind && performance.now() - posted >= BATCH_MS) flush()
  }
  if (inFd >= 0) lib.close(inFd)
  flush()
  await child.exited
  postMessage({ kind: "ended", id, exitCode: child.exitCode, signal: child.signalCode, stderr: Buffer.concat(kept).toString() })
}
onmessage = (event) => {
  const order = event.data
  if (order.kind === "confine") postMessage({ kind: "confined", failed: confine(order.ruleset, order.shared) })
  else if (order.kind === "run") void run(order)
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
  /**
   * Memory shared with the thread: [STOP] a run's id, written to stop it (the thread reads it between polls);
   * [USED] how many batches of output this side has taken in (the thread lets at most a few wait).
   */
  readonly shared: Int32Array
  /** Given to a search (running it, or about to): a thread runs one search at a time. */
  busy: boolean
  idle: ReturnType<typeof setTimeout> | undefined
  used: number
  gone: boolean
}

/** The places in the memory shared with a thread (as the thread's code names them). */
const STOP = 0
const USED = 1

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
    !kept.busy &&
    kept.directory === directory &&
    kept.files.size === wanted.size &&
    [...wanted].every(([file, id]) => kept.files.get(file) === id)
  ) {
    kept.busy = true
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
  const shared = new Int32Array(new SharedArrayBuffer(8))
  shared[STOP] = -1
  const thread: Thread = {
    worker,
    root,
    directory,
    files: wanted,
    held,
    runs: new Map(),
    shared,
    busy: true,
    idle: undefined,
    used: 0,
    gone: false,
  }
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
  worker.postMessage({ kind: "confine", ruleset: made.fd, shared: shared.buffer })
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
  let finish: (ended: Ended) => void = () => {}
  let fail: (cause: Error) => void = () => {}
  const ended = new Promise<Ended>((resolve, reject) => {
    finish = resolve
    fail = reject
  })
  const done = () => {
    thread.runs.delete(id)
    thread.busy = false
    rest(thread)
  }
  thread.runs.set(id, {
    report: (report) => {
      if (report.kind === "started") {
        pid = report.pid
        ProcessGroup.trackProcess(pid)
      } else if (report.kind === "data") {
        spawn.onData(report.chunk)
        // Taken in: the thread may hand on the next once this thread has had its turn of the event loop (timers,
        // other calls, a cancel), which messages arriving one after another would otherwise keep waiting.
        setImmediate(() => {
          Atomics.add(thread.shared, USED, 1)
          Atomics.notify(thread.shared, USED)
        })
      } else if (report.kind === "failed") {
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
    // The thread kills it (at once if it has not started it yet): it alone knows whether rg has been reaped (and
    // its pid could be another's).
    stop: () => Atomics.store(thread.shared, STOP, id),
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
  // Over its time only when the stop ended it: rg that finished on its own meanwhile printed everything.
  const ended = running.ended.then((ended) =>
    ended.kind === "ended" && timedOut && ended.signal !== null ? { ...ended, timedOutMs: spawn.timeoutMs } : ended,
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
