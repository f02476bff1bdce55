export * as Checkpointer from "./checkpointer"

// Checkpoints a SQLite store's write-ahead log from a thread of its own while its writers pause, so that the calls
// that come after do not. With synchronous=NORMAL a commit only writes the log; the syncs come at checkpoints, which
// SQLite runs inside whichever commit takes the log past `wal_autocheckpoint` pages: about half of what recording a
// call costs (bench/checkpoints.ts). An agent's calls come in bursts with pauses between (the model's turn): one
// thread per database file looks at the log every INTERVAL_MS and, once it was written but has stayed unchanged for
// a look, checkpoints it (PASSIVE: never waiting for, nor blocking, a reader or a writer), so the next commit starts
// the log again and no commit reaches SQLite's own checkpoint. Written without a pause, the log is checkpointed as
// before, by SQLite in the commit that crosses `wal_autocheckpoint` (left as it was: the backstop, and all there is
// should the thread fail). Nothing about durability changes: a commit is in the log when it returns, kill -9 or not.
//
// A short command (core exec of one call) never starts the thread: it starts START_DELAY_MS after the first
// connection opens, and closing the last connection checkpoints, as SQLite does.

/** How long after a store opens its checkpointing thread starts. */
const START_DELAY_MS = 500
/** How often the thread looks at the log: a log unchanged since the last look has paused that long. */
const INTERVAL_MS = 100

// The thread's code: self-contained (it runs from a blob in the compiled binary too).
const SOURCE = `
import { Database } from "bun:sqlite"
import { statSync } from "node:fs"
let db
let timer
let looked = ""
let checkpointed = ""
const stampOf = (path) => {
  try {
    const stat = statSync(path + "-wal")
    return stat.mtimeMs + ":" + stat.size
  } catch {
    return ""
  }
}
onmessage = (event) => {
  const message = event.data
  if (message.kind === "start") {
    let passive
    try {
      db = new Database(message.path, { readwrite: true, create: false, strict: true })
      passive = db.query("PRAGMA wal_checkpoint(PASSIVE)")
    } catch (cause) {
      postMessage({ kind: "failed", message: String((cause && cause.message) || cause) })
      return
    }
    timer = setInterval(() => {
      const stamp = stampOf(message.path)
      const quiet = stamp === looked
      looked = stamp
      // Still being written, or checkpointed since its last write: nothing to do now.
      if (stamp === "" || !quiet || stamp === checkpointed) return
      try {
        const done = passive.get()
        // Busy: a commit's own checkpoint ran, or another process's; look again next time.
        if (done && done.busy === 0) checkpointed = stamp
        postMessage({ kind: "checkpointed", busy: done ? done.busy : 1, log: done ? done.log : -1, copied: done ? done.checkpointed : -1 })
      } catch (cause) {
        const code = String((cause && cause.code) || "")
        if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return
        postMessage({ kind: "failed", message: String((cause && cause.message) || cause) })
      }
    }, message.intervalMs)
    postMessage({ kind: "started" })
  } else if (message.kind === "stop") {
    clearInterval(timer)
    try {
      if (db) db.close()
    } catch {}
    postMessage({ kind: "stopped" })
  }
}
`

type Report =
  | { readonly kind: "started" | "stopped" }
  | { readonly kind: "checkpointed"; readonly busy: number; readonly log: number; readonly copied: number }
  | { readonly kind: "failed"; readonly message: string }

/** One database file's users in this process, and the thread checkpointing it. */
interface Entry {
  users: number
  timer: ReturnType<typeof setTimeout> | undefined
  worker: Worker | undefined
  /** Checkpoints the thread made, and the last one's frames in the log and copied from it: for tests and benchmarks. */
  checkpoints: number
  last: { readonly log: number; readonly copied: number } | undefined
  /** Why the thread stopped, if it did: SQLite's own checkpoints then, for the rest of this entry's life. */
  failure: string | undefined
}

const entries = new Map<string, Entry>()
let source: string | undefined

const stop = (entry: Entry, failure: string) => {
  entry.failure ??= failure
  entry.worker?.terminate()
  entry.worker = undefined
}

const start = (path: string, entry: Entry) => {
  entry.timer = undefined
  if (entry.users === 0 || entry.failure !== undefined) return
  let worker: Worker
  try {
    source ??= URL.createObjectURL(new Blob([SOURCE], { type: "application/javascript" }))
    worker = new Worker(source)
  } catch (cause) {
    return stop(entry, `the checkpoint thread could not start: ${String(cause)}`)
  }
  entry.worker = worker
  worker.onmessage = (event: MessageEvent<Report>) => {
    const report = event.data
    if (report.kind === "checkpointed") {
      entry.checkpoints++
      entry.last = { log: report.log, copied: report.copied }
    } else if (report.kind === "failed") stop(entry, report.message)
  }
  worker.onerror = (event) => stop(entry, `the checkpoint thread failed: ${event.message}`)
  worker.addEventListener("close", () => {
    if (entry.worker === worker) stop(entry, "the checkpoint thread ended")
  })
  worker.postMessage({ kind: "start", path, intervalMs: INTERVAL_MS })
  worker.unref()
}

/** How long closing the last connection waits for the thread's own to close first. */
const STOP_WAIT_MS = 1_000

/**
 * Checkpoints the store at `path` (in WAL mode) from its thread while one of this process's connections to it is
 * open: call when a connection opens; the returned function, before it closes, and close it once what that answers
 * has resolved (undefined: at once). `delayMs`: when the thread starts, for tests.
 */
export const attach = (path: string, delayMs: number = START_DELAY_MS): (() => Promise<void> | undefined) => {
  let entry = entries.get(path)
  if (entry === undefined) {
    entry = { users: 0, timer: undefined, worker: undefined, checkpoints: 0, last: undefined, failure: undefined }
    entries.set(path, entry)
  }
  const joined = entry
  joined.users++
  if (joined.worker === undefined && joined.timer === undefined && joined.failure === undefined) {
    joined.timer = setTimeout(() => start(path, joined), delayMs)
    joined.timer.unref?.()
  }
  let detached = false
  return () => {
    if (detached) return undefined
    detached = true
    if (--joined.users > 0) return undefined
    entries.delete(path)
    if (joined.timer !== undefined) clearTimeout(joined.timer)
    const worker = joined.worker
    joined.worker = undefined
    if (worker === undefined) return undefined
    // Its own connection closes first, so that the caller's, the last of this process's, checkpoints and removes
    // the log as it closes (were it not the last, a process that exits next would leave the log for the next start
    // to read through).
    return new Promise<void>((resolve) => {
      let done = false
      const stopped = () => {
        if (done) return
        done = true
        clearTimeout(waiting)
        worker.terminate()
        resolve()
      }
      const waiting = setTimeout(stopped, STOP_WAIT_MS)
      worker.onmessage = (event: MessageEvent<Report>) => {
        if (event.data.kind === "stopped") stopped()
      }
      worker.onerror = stopped
      worker.addEventListener("close", stopped)
      worker.postMessage({ kind: "stop" })
    })
  }
}

/** What checkpoints the store at `path` in this process now: for tests and benchmarks. */
export const status = (
  path: string,
):
  | {
      readonly thread: boolean
      readonly checkpoints: number
      readonly last?: { readonly log: number; readonly copied: number }
      readonly failure?: string
    }
  | undefined => {
  const entry = entries.get(path)
  if (entry === undefined) return undefined
  return {
    thread: entry.worker !== undefined,
    checkpoints: entry.checkpoints,
    ...(entry.last === undefined ? {} : { last: entry.last }),
    ...(entry.failure === undefined ? {} : { failure: entry.failure }),
  }
}
