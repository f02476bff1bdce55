export * as Checkpointer from "./checkpointer"

// Checkpoints a SQLite store's write-ahead log from a thread of its own, so that no call waits for one. With
// synchronous=NORMAL a commit only writes the log; the syncs come at checkpoints, which SQLite otherwise runs
// inside whichever commit crosses `wal_autocheckpoint` pages: about half of what recording a call costs
// (bench/settle.ts). Here each connection this process opens to a store leaves checkpoints to one thread per
// database file, which checkpoints (PASSIVE: never waiting for, nor blocking, a reader or a writer) whenever the
// log was written since its last look. Nothing about durability changes: a commit is in the log when it returns,
// kill -9 or not, as before.
//
// A short command (core exec of one call) never starts the thread: it starts START_DELAY_MS after the first
// connection opens, and closing the last connection checkpoints, as SQLite does. If the thread cannot start or
// stops, every connection goes back to SQLite's own checkpoints.

import type { Database } from "bun:sqlite"

/** How long after a store opens its checkpointing thread starts. */
const START_DELAY_MS = 500
/** How often the thread looks whether the log was written since its last checkpoint. */
const INTERVAL_MS = 200
/** A log larger than this is emptied by a checkpoint that waits for the writers, at most BUSY_MS. */
const TRUNCATE_BYTES = 32 * 1024 * 1024
const BUSY_MS = 200
/** SQLite's own checkpoints when no thread runs: after the commit that takes the log past 4,000 4 KiB pages. */
export const FALLBACK_PAGES = 4_000

// The thread's code: self-contained (it runs from a blob in the compiled binary too).
const SOURCE = `
import { Database } from "bun:sqlite"
import { statSync } from "node:fs"
let db
let timer
let seen = ""
const walOf = (path) => {
  try {
    return statSync(path + "-wal")
  } catch {
    return undefined
  }
}
onmessage = (event) => {
  const message = event.data
  if (message.kind === "start") {
    let passive
    let truncate
    try {
      db = new Database(message.path, { readwrite: true, create: false, strict: true })
      db.exec("PRAGMA busy_timeout = " + message.busyMs)
      passive = db.query("PRAGMA wal_checkpoint(PASSIVE)")
      truncate = db.query("PRAGMA wal_checkpoint(TRUNCATE)")
    } catch (cause) {
      postMessage({ kind: "failed", message: String((cause && cause.message) || cause) })
      return
    }
    timer = setInterval(() => {
      const wal = walOf(message.path)
      if (wal === undefined) return
      const now = wal.mtimeMs + ":" + wal.size
      if (now === seen) return
      try {
        // A log written without pause is never wholly checkpointed at a moment a writer could start it again, so
        // it grows: past the limit, a checkpoint that waits (at most busyMs) for the writers and empties it.
        const done = (wal.size > message.truncateBytes ? truncate : passive).get()
        // Busy: another checkpoint ran (another process), or the writers did not pause; look again next time.
        if (done && done.busy === 0) seen = now
        postMessage({ kind: "checkpointed", busy: done ? done.busy : 1, log: done ? done.log : -1, copied: done ? done.checkpointed : -1 })
      } catch (cause) {
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

/** One database file's connections in this process, and the thread checkpointing it. */
interface Entry {
  readonly connections: Set<Database>
  timer: ReturnType<typeof setTimeout> | undefined
  worker: Worker | undefined
  /** The thread could not start or stopped: SQLite's own checkpoints, for the rest of this entry's life. */
  fallback: boolean
  /** Checkpoints the thread made, and the last one's frames in the log and copied from it: for tests and benchmarks. */
  checkpoints: number
  last: { readonly log: number; readonly copied: number } | undefined
  failure: string | undefined
}

const entries = new Map<string, Entry>()
let source: string | undefined

const setAutomatic = (db: Database, pages: number) => {
  try {
    db.exec(`PRAGMA wal_autocheckpoint = ${pages}`)
  } catch {
    // A closed connection: nothing to checkpoint through it.
  }
}

const fallBack = (entry: Entry, failure: string) => {
  if (entry.fallback) return
  entry.fallback = true
  entry.failure = failure
  entry.worker?.terminate()
  entry.worker = undefined
  for (const db of entry.connections) setAutomatic(db, FALLBACK_PAGES)
}

const start = (path: string, entry: Entry) => {
  entry.timer = undefined
  if (entry.connections.size === 0 || entry.fallback) return
  let worker: Worker
  try {
    source ??= URL.createObjectURL(new Blob([SOURCE], { type: "application/javascript" }))
    worker = new Worker(source)
  } catch (cause) {
    return fallBack(entry, `the checkpoint thread could not start: ${String(cause)}`)
  }
  entry.worker = worker
  worker.onmessage = (event: MessageEvent<Report>) => {
    const report = event.data
    if (report.kind === "checkpointed") {
      entry.checkpoints++
      entry.last = { log: report.log, copied: report.copied }
    }
    else if (report.kind === "failed") fallBack(entry, report.message)
    else if (report.kind === "stopped") worker.terminate()
  }
  worker.onerror = (event) => fallBack(entry, `the checkpoint thread failed: ${event.message}`)
  worker.addEventListener("close", () => {
    if (entry.worker === worker) fallBack(entry, "the checkpoint thread ended")
  })
  worker.postMessage({ kind: "start", path, intervalMs: INTERVAL_MS, busyMs: BUSY_MS, truncateBytes: TRUNCATE_BYTES })
  worker.unref()
}

/**
 * Hands `db`'s checkpoints (a connection to the store at `path`, in WAL mode) to the store's checkpointing thread;
 * the returned function gives the connection back before it closes. `delayMs`: when the thread starts, for tests.
 */
export const attach = (path: string, db: Database, delayMs: number = START_DELAY_MS): (() => void) => {
  let entry = entries.get(path)
  if (entry === undefined) {
    entry = { connections: new Set(), timer: undefined, worker: undefined, fallback: false, checkpoints: 0, last: undefined, failure: undefined }
    entries.set(path, entry)
  }
  const joined = entry
  joined.connections.add(db)
  setAutomatic(db, joined.fallback ? FALLBACK_PAGES : 0)
  if (joined.worker === undefined && joined.timer === undefined && !joined.fallback) {
    joined.timer = setTimeout(() => start(path, joined), delayMs)
    joined.timer.unref?.()
  }
  return () => {
    joined.connections.delete(db)
    if (joined.connections.size > 0) return
    entries.delete(path)
    if (joined.timer !== undefined) clearTimeout(joined.timer)
    const worker = joined.worker
    joined.worker = undefined
    // Its own connection closes first, so the last of this process's closes can checkpoint and remove the log.
    worker?.postMessage({ kind: "stop" })
  }
}

/** What checkpoints the store at `path` in this process now: for tests and benchmarks. */
export const status = (
  path: string,
):
  | {
      readonly thread: boolean
      readonly fallback: boolean
      readonly checkpoints: number
      readonly last?: { readonly log: number; readonly copied: number }
      readonly failure?: string
    }
  | undefined => {
  const entry = entries.get(path)
  if (entry === undefined) return undefined
  return {
    thread: entry.worker !== undefined,
    fallback: entry.fallback,
    checkpoints: entry.checkpoints,
    ...(entry.last === undefined ? {} : { last: entry.last }),
    ...(entry.failure === undefined ? {} : { failure: entry.failure }),
  }
}
