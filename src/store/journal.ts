export * as Journal from "./journal"

// The SQLite store's write-ahead journal: a call's intent and its settlement are each one line appended to
// `core.journal` beside `core.db` (one write, in the OS's hands when it returns, so kill -9 safe as a WAL commit with
// synchronous=NORMAL is), and SQLite is the index, filled from the journal in batches. A commit costs tens of
// microseconds (a few B-tree pages into the WAL, its locks); an append, a few.
//
// Every process sharing the data directory reads and appends the same journal under `flock` on it (shared to read,
// exclusive to append), catching up on what others appended before it decides anything; a decision (is this call
// still absent? still started by me?) and the line recording it are made under one exclusive lock, so two processes
// never both begin a call. Each process keeps the rows the journal changed in memory, over SQLite's.
//
// Compaction (`compact`), under the exclusive lock: the changed rows are written into SQLite in one transaction,
// with the journal's nonce and how far it was applied (`journal_applied`), then the journal is emptied under a new
// nonce. Killed between the two, the next reader finds the nonce applied and skips what SQLite already has; killed
// mid-append, the torn line at the end is cut by the next append (a complete line is always a whole record).
//
// The first line is a header naming the journal's nonce; every later line is one JSON record (see `Entry`).

import { dlopen, FFIType } from "bun:ffi"
import { closeSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs"
import { randomBytes } from "node:crypto"

/** A settlement row as the journal and SQLite keep it (SQLite's column names). */
export interface Row {
  readonly location: string
  readonly session_id: string
  readonly call_id: string
  readonly tool: string
  readonly agent: string | null
  readonly state: "started" | "failed" | "settled"
  readonly owner: string | null
  readonly reason: string | null
  readonly settlement: string | null
  readonly lease_until: number | null
  readonly started_at: number | null
  readonly settled_at: number | null
  readonly message_id: string | null
  readonly input: string | null
  readonly input_bytes: number | null
}

/** A row's key: its Location, session and call id. */
export type Key = readonly [location: string, sessionID: string, toolCallID: string]

/**
 * One journal record. `new`: a row made (a call begun, or settled without beginning); `settled` and `failed`: the
 * row at `k` settled or failed; `renewed`: the leases of `owner` on `keys` extended to `until` (rows still started
 * by `owner` only, decided when read, so every reader decides alike).
 */
export type Entry =
  | { readonly e: "new"; readonly row: Row }
  | { readonly e: "settled"; readonly k: Key; readonly tool: string; readonly settlement: string; readonly at: number }
  | { readonly e: "failed"; readonly k: Key; readonly reason: string; readonly at: number }
  | { readonly e: "renewed"; readonly keys: ReadonlyArray<Key>; readonly owner: string; readonly until: number }

/** Where a store keeps what the journal does not: its SQLite index, read and filled under the journal's lock. */
export interface Index {
  /**
   * The row SQLite holds for `key`, or undefined. What a row keeps for operators (`started_at`, `message_id`,
   * `input`, `input_bytes`) may be left null: no record changes it once the row is made, and `write` keeps it.
   */
  readonly row: (key: Key) => Row | undefined
  /** How far the journal with `nonce` was applied to SQLite (bytes from its start), or undefined. */
  readonly applied: (nonce: string) => number | undefined
  /**
   * Writes `rows` into SQLite and records the journal `nonce` applied `through` bytes, in one transaction. A row
   * SQLite has already keeps what it keeps for operators; the rest is the row's.
   */
  readonly write: (rows: Iterable<Row>, nonce: string, through: number) => void
}

/** The journal of this size or more is compacted after the append that reaches it. */
export const COMPACT_BYTES = 256 * 1024

/** How many of SQLite's rows a journal keeps as read, at most. */
const INDEXED_MAX = 10_000

const HEADER_PREFIX = "core-journal 1 "
/** The header line: the prefix, a 16-hex-digit nonce, a line feed. */
const HEADER_BYTES = HEADER_PREFIX.length + 16 + 1

const LOCK_SH = 1
const LOCK_EX = 2
const LOCK_UN = 8

type Flock = (fd: number, operation: number) => number

let flockFn: Flock | null | undefined

/** libc's flock, opened on first use; null where no libc can be opened. */
const flock = (): Flock | null => {
  if (flockFn !== undefined) return flockFn
  flockFn = null
  for (const name of ["libc.so.6", "libc.so", "libSystem.B.dylib"]) {
    try {
      const { symbols } = dlopen(name, { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } })
      flockFn = (fd, operation) => symbols.flock(fd, operation)
      break
    } catch {
      // the next name: glibc, musl and macOS name it differently
    }
  }
  return flockFn
}

export class JournalError extends Error {}

const keyString = (location: string, sessionID: string, toolCallID: string) =>
  `${location}\u0000${sessionID}\u0000${toolCallID}`

const rowKey = (row: Row) => keyString(row.location, row.session_id, row.call_id)

const encoder = new TextEncoder()
const decoder = new TextDecoder()

export interface Journal {
  /** Runs `f` with the journal read through to its end, under the shared lock (`f` only reads). */
  readonly reading: <A>(f: () => A) => A
  /** Runs `f` with the journal read through to its end, under the exclusive lock (`f` may append). */
  readonly writing: <A>(f: () => A) => A
  /** The row for `key` now: the journal's, else SQLite's. Inside `reading` or `writing` only. */
  readonly row: (key: Key) => Row | undefined
  /** Appends `entry` and applies it. Inside `writing` only. */
  readonly append: (entry: Entry) => void
  /** Writes every row the journal changed into SQLite and empties the journal. Inside `writing` only. */
  readonly compact: () => void
  /** Whether the journal holds records not yet in SQLite. */
  readonly pending: () => boolean
  /** The journal's size in bytes as this process last read it. */
  readonly size: () => number
  readonly close: () => void
}

/** Opens (creating, 0600) the journal at `path` over `index`. */
export const open = (path: string, index: Index): Journal => {
  const lock = flock()
  if (lock === null) throw new JournalError("libc's flock could not be opened")
  const fd = openSync(path, "a+", 0o600)
  /** The nonce of the journal as last read; "" before a header was read. */
  let nonce = ""
  /** Where the next unread record starts. */
  let offset = 0
  /** Bytes past `offset` that are not a whole record (a torn append): cut before the next append. */
  let torn = false
  /** Rows changed by the records read, by key. */
  const rows = new Map<string, Row>()
  /**
   * SQLite's rows as read under this nonce (null: none): SQLite changes only by compaction, which starts a new
   * nonce, so what was read holds until then.
   */
  const indexed = new Map<string, Row | null>()
  let held = 0

  const readAt = (position: number, length: number): Uint8Array => {
    const buffer = new Uint8Array(length)
    let done = 0
    while (done < length) {
      const read = readSync(fd, buffer, done, length - done, position + done)
      if (read === 0) break
      done += read
    }
    return done === length ? buffer : buffer.subarray(0, done)
  }

  const base = (location: string, sessionID: string, toolCallID: string): Row | undefined => {
    const key = keyString(location, sessionID, toolCallID)
    const row = rows.get(key)
    if (row !== undefined) return row
    let found = indexed.get(key)
    if (found === undefined) {
      found = index.row([location, sessionID, toolCallID]) ?? null
      if (indexed.size >= INDEXED_MAX) indexed.clear()
      indexed.set(key, found)
    }
    return found ?? undefined
  }

  const apply = (entry: Entry) => {
    switch (entry.e) {
      case "new":
        rows.set(rowKey(entry.row), entry.row)
        return
      case "settled":
      case "failed": {
        const [location, sessionID, toolCallID] = entry.k
        const row = base(location, sessionID, toolCallID)
        if (row === undefined) return
        rows.set(
          rowKey(row),
          entry.e === "settled"
            ? { ...row, state: "settled", tool: entry.tool, settlement: entry.settlement, settled_at: entry.at }
            : { ...row, state: "failed", reason: entry.reason, settled_at: entry.at },
        )
        return
      }
      case "renewed":
        for (const [location, sessionID, toolCallID] of entry.keys) {
          const row = base(location, sessionID, toolCallID)
          if (row?.state === "started" && row.owner === entry.owner) rows.set(rowKey(row), { ...row, lease_until: entry.until })
        }
    }
  }

  /** Starts over on the journal with `found` (its header read): SQLite holds what it applied of it. */
  const restart = (found: string) => {
    rows.clear()
    indexed.clear()
    nonce = found
    offset = found === "" ? 0 : Math.max(HEADER_BYTES, index.applied(found) ?? HEADER_BYTES)
    torn = false
  }

  /** Reads what was appended since the last read (after a compaction, the new journal from its start). */
  const catchUp = () => {
    const size = fstatSync(fd).size
    const header = size >= HEADER_BYTES ? decoder.decode(readAt(0, HEADER_BYTES)) : ""
    const found = header.startsWith(HEADER_PREFIX) && header.endsWith("\n") ? header.slice(HEADER_PREFIX.length, -1) : ""
    // Shorter than a header: one torn as it was written (nothing follows it), cut by the next append. As long
    // and not one: not a journal this core wrote, never cut.
    if (found === "" && size >= HEADER_BYTES) {
      throw new JournalError(`${path} does not start as a journal of this core: move it aside only once no core uses it`)
    }
    if (found !== nonce || size < offset) restart(found)
    if (found === "" || size <= offset) {
      torn = found === "" && size > 0
      return
    }
    const bytes = readAt(offset, size - offset)
    const end = bytes.lastIndexOf(10)
    torn = end !== bytes.length - 1
    if (end < 0) return
    let at = 0
    while (at < end) {
      const next = bytes.indexOf(10, at)
      let entry: Entry
      try {
        entry = JSON.parse(decoder.decode(bytes.subarray(at, next))) as Entry
      } catch {
        throw new JournalError(`the journal ${path} has a record that is not JSON at byte ${offset + at}`)
      }
      apply(entry)
      at = next + 1
    }
    offset += end + 1
  }

  const locked = <A>(operation: number, f: () => A): A => {
    if (held !== 0) {
      // Re-entered: a read inside a read or a write, or a write inside a write, under the lock already held.
      if (operation === LOCK_EX && held !== LOCK_EX) throw new JournalError("a journal write inside a read")
      return f()
    }
    // flock returns -1 when a signal interrupts the wait: wait again.
    let tries = 0
    while (lock(fd, operation) !== 0) {
      if (++tries === 5) throw new JournalError(`could not lock the journal ${path}`)
    }
    held = operation
    try {
      catchUp()
      return f()
    } finally {
      held = 0
      lock(fd, LOCK_UN)
    }
  }

  const writeAll = (bytes: Uint8Array) => {
    let done = 0
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done)
  }

  /** Starts a journal with a fresh nonce (the file is empty). */
  const begin = () => {
    const fresh = randomBytes(8).toString("hex")
    writeAll(encoder.encode(`${HEADER_PREFIX}${fresh}\n`))
    restart(fresh)
    offset = HEADER_BYTES
  }

  /** Makes the file end where the records read end: no header yet, or a torn append cut. */
  const ready = () => {
    if (nonce === "") {
      ftruncateSync(fd, 0)
      begin()
    } else if (torn) {
      ftruncateSync(fd, offset)
      torn = false
    }
  }

  return {
    reading: (f) => locked(LOCK_SH, f),
    writing: (f) => locked(LOCK_EX, f),
    row: (key) => base(key[0], key[1], key[2]),
    append: (entry) => {
      if (held !== LOCK_EX) throw new JournalError("a journal append outside a write")
      ready()
      // One write: kill -9 leaves the record whole, or a torn tail the next append cuts.
      const bytes = encoder.encode(`${JSON.stringify(entry)}\n`)
      writeAll(bytes)
      apply(entry)
      offset += bytes.length
    },
    compact: () => {
      if (held !== LOCK_EX) throw new JournalError("a journal compaction outside a write")
      if (rows.size > 0) index.write(rows.values(), nonce, offset)
      ftruncateSync(fd, 0)
      begin()
    },
    pending: () => rows.size > 0 || offset > HEADER_BYTES,
    size: () => offset,
    close: () => closeSync(fd),
  }
}
