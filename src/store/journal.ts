export * as Journal from "./journal"

// The SQLite store's write-ahead journal: a call's intent and its settlement are each one line appended to
// `core.journal` beside `core.db` (in the OS's page cache when the append returns, so kill -9 safe as a WAL commit
// with synchronous=NORMAL is), and SQLite is the index, filled from the journal in batches. A commit costs tens of
// microseconds (a few B-tree pages into the WAL, its locks); an append, one or two.
//
// Every process sharing the data directory reads and appends the same journal under `flock` on it (shared to read,
// exclusive to append), catching up on what others appended before it decides anything; a decision (is this call
// still absent? still started by me?) and the line recording it are made under one exclusive lock, so two processes
// never both begin a call. Each process keeps the rows the journal changed in memory, over SQLite's.
//
// Compaction (`compact`), under the exclusive lock: the changed rows are written into SQLite in one transaction,
// with the journal's nonce and how far it was applied (`journal_applied`), then the journal is emptied (cut to
// nothing, so it has no header) and started again under a new nonce. Killed between the two, the next reader finds
// the nonce applied and skips what SQLite already has; killed after the cut, it finds no header and starts afresh.
//
// Layout: a header line naming the journal's nonce (`HEADER_PREFIX`, 16 hex digits, a line feed), the committed
// end (a 32-bit little-endian word at `END_AT`), then one JSON record per line (see `Entry`) from `RECORDS_AT` up to
// the committed end. The file is longer than its records (`CAPACITY`, grown when a record does not fit), so an
// append changes no file size: its record is copied past the end, then the end is moved over it. Where the journal
// is on a filesystem whose page cache every process shares (see `Generation`), the file is mapped into memory and an
// append is two stores, with no system call; elsewhere (NFS and the like) it is two `pwrite`s. Killed mid-append,
// the end has not moved: the partial record lies past it, unread, and the next append writes over it.
//
// Looking (a `fstat`, the header and the end, to see what others appended or compacted) was most of an operation's
// cost: it is skipped when nothing can have changed (see `Generation`). So is asking SQLite about a call of a session SQLite
// is known to hold nothing more of (see `known` in `open`): a new call is then one append under the lock.

import { dlopen, FFIType } from "bun:ffi"
import { closeSync, constants, fstatSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs"
import { platform } from "node:os"

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
  /** Whether SQLite holds no row of session `sessionID` in `location`. */
  readonly empty: (location: string, sessionID: string) => boolean
  /** How far the journal with `nonce` was applied to SQLite (bytes from its start), or undefined. */
  readonly applied: (nonce: string) => number | undefined
  /**
   * Writes `rows` into SQLite and records the journal `nonce` applied `through` bytes, in one transaction. A row
   * SQLite has already keeps what it keeps for operators; the rest is the row's.
   */
  readonly write: (rows: ReadonlyArray<Row>, nonce: string, through: number) => void
}

/** The journal of this size or more is compacted after the append that reaches it. */
export const COMPACT_BYTES = 256 * 1024

/** How a journal is kept (see `open`); each has its default. */
export interface Options {
  /** SQLite's rows kept as read, at most. */
  readonly rows?: number
  /** Call ids kept of the sessions whose every call id in SQLite is known, over all of them, at most. */
  readonly ids?: number
  /**
   * Whether the journal's filesystem may be taken to share one page cache between processes (a generation, a
   * mapped file), as it is found to; false treats it as NFS and the like are (every operation looks, records are
   * written with `pwrite`).
   */
  readonly shared?: boolean
  /**
   * Whether the journal and its generation may be written through their mappings where the filesystem allows it
   * (ALLOCATED_WRITES); false writes them with write(2), as on a copy-on-write filesystem.
   */
  readonly mappedWrites?: boolean
}

const HEADER_PREFIX = "core-journal 2 "
/**
 * The header of a journal written by a core before this layout: the file ended where its records ended, a torn
 * last line was cut. Read once, as a store opens, compacted into SQLite and replaced by this layout.
 */
const LEGACY_PREFIX = "core-journal 1 "
/** The header line: the prefix, a 16-hex-digit nonce, a line feed (the same length in both layouts). */
const HEADER_LINE = HEADER_PREFIX.length + 16 + 1
/** Where the committed end is: a 32-bit little-endian word, 4-byte aligned, so one store moves it whole. */
const END_AT = HEADER_LINE
/** Where the first record starts. */
const RECORDS_AT = END_AT + 8
/** The journal file's size as a compaction leaves it: room for what is appended before the next compaction. */
const CAPACITY = 2 * COMPACT_BYTES
/** A journal grown for a record past its end is grown in steps of this many bytes. */
const GROWTH = 64 * 1024

const LOCK_SH = 1
const LOCK_EX = 2
const LOCK_UN = 8

type Flock = (fd: number, operation: number) => number

interface Libc {
  readonly flock: Flock
  /** The type of the filesystem holding `fd` (`f_type` of `fstatfs`, Linux), or undefined where unknown. */
  readonly filesystem: (fd: number) => number | undefined
  /**
   * Gives `length` bytes of `fd` from `offset` their blocks (growing the file where it is shorter): 0, or the
   * error's number (`posix_fallocate`). Undefined where libc has no such function.
   */
  readonly allocate: ((fd: number, offset: number, length: number) => number) | undefined
}

/** libc's posix_fallocate from `name`, or undefined (macOS has none). */
const allocateIn = (name: string): Libc["allocate"] => {
  try {
    const { symbols } = dlopen(name, { posix_fallocate: { args: [FFIType.i32, FFIType.i64, FFIType.i64], returns: FFIType.i32 } })
    return (fd, offset, length) => symbols.posix_fallocate(fd, offset, length)
  } catch {
    return undefined
  }
}

let libcFns: Libc | null | undefined

/** libc's flock and fstatfs, opened on first use; null where no libc can be opened. */
const libc = (): Libc | null => {
  if (libcFns !== undefined) return libcFns
  libcFns = null
  for (const name of ["libc.so.6", "libc.so", "libSystem.B.dylib"]) {
    try {
      const { symbols } = dlopen(name, {
        flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
        fstatfs: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
      })
      libcFns = {
        flock: (fd, operation) => symbols.flock(fd, operation),
        allocate: allocateIn(name),
        filesystem: (fd) => {
          // Linux's struct statfs (120 bytes on 64-bit) starts with f_type; other systems lay it out otherwise.
          if (platform() !== "linux") return undefined
          const buffer = new BigInt64Array(32)
          return symbols.fstatfs(fd, buffer) === 0 ? Number(BigInt.asUintN(32, buffer[0]!)) : undefined
        },
      }
      break
    } catch {
      // the next name: glibc, musl and macOS name it differently
    }
  }
  return libcFns
}

/**
 * Filesystems (Linux `f_type`) where every process sharing a file sees one page cache, so a store into a shared
 * mapping of it is seen by every other process at once (the journal's generation, and the journal itself): ext2/3/4, XFS, Btrfs, tmpfs, ramfs, F2FS, ZFS, and overlayfs
 * (which maps the upper layer's file). Not NFS, SMB, FUSE, 9p or cluster filesystems, where hosts sharing the data
 * directory each keep their own pages: there, every operation looks.
 */
const COHERENT_FILESYSTEMS: ReadonlySet<number> = new Set([
  0xef53, 0x58465342, 0x9123683e, 0x01021994, 0x858458f6, 0xf2f52010, 0x2fc12fc1, 0x794c7630,
])

/**
 * Of those, the filesystems where a page whose blocks were allocated beforehand (`posix_fallocate`) can be written
 * through a shared mapping without needing more space: ext2/3/4, XFS, tmpfs, ramfs and overlayfs (over one of
 * those). A store into a page that needs space the disk no longer has is a bus error, which ends core, where a
 * write(2) would fail with ENOSPC: so the journal and its generation are written through their mappings only here,
 * and only once allocated. Copy-on-write filesystems (Btrfs, ZFS, F2FS) need new space for every write: there the
 * files are written with write(2), and read through their mappings still.
 */
const ALLOCATED_WRITES: ReadonlySet<number> = new Set([0xef53, 0x58465342, 0x01021994, 0x858458f6, 0x794c7630])

/** Bytes of the generation file that hold the generation: two 32-bit words, high then low. */
const GENERATION_BYTES = 8

/**
 * The journal's generation: a 64-bit counter in `<journal>-shm`, mapped shared by every process using the journal,
 * moved on by every process before it changes the journal file (an append, a growth, a compaction), under the
 * exclusive lock. A process that saw generation g when it last held the lock, and sees g again when it takes the lock
 * now, knows the file is as it left it, so it skips the `fstat` and the header read:
 *
 * - every change to the file is made under the exclusive lock, after the counter moved (a process killed between
 *   the two leaves a moved counter over an unchanged file, which only costs the next process a look; never the
 *   other way round, a changed file under an unmoved counter);
 * - the counter's 2^64 values never repeat (the high word is written first when the low one wraps, so a process
 *   killed between the two leaves a value never seen before);
 * - taking and releasing the lock are system calls that order memory, so the counter read under the lock is the
 *   last one written under it;
 * - a process that failed while holding the lock (an error reading or writing) forgets what it saw and looks.
 *
 * What the counter is worth does not matter (after a reboot it is whatever reached the disk; a fresh process looks
 * once in any case), only that it moves. Like SQLite's `-shm`, the file must not be removed or truncated while a
 * core uses the data directory: a process mapping a removed file would see the others' counter no more.
 */
interface Generation {
  /** The generation's high and low words now. */
  readonly high: () => number
  readonly low: () => number
  /** Moves the generation on. Under the exclusive lock only. */
  readonly bump: () => void
  /** Lets go of what it holds open. */
  readonly close: () => void
}

/**
 * Moves the generation beside the journal at `path` without mapping it, for a process that cannot trust it (a
 * filesystem not known to share its pages, or told so): it still moves it before every change it makes, so that a
 * process that does trust it, should one see the same file as shared (another mount of it), looks. It writes a value
 * of 64 random bits, never the one another process saw, whatever it read or was told; a process killed between the
 * two words leaves one never seen either.
 */
const mover = (path: string): Pick<Generation, "bump" | "close"> => {
  const file = openSync(`${path}-shm`, constants.O_RDWR | constants.O_CREAT, 0o600)
  try {
    if (fstatSync(file).size < GENERATION_BYTES) ftruncateSync(file, GENERATION_BYTES)
  } catch (cause) {
    closeSync(file)
    throw cause
  }
  const words = new Uint32Array(2)
  return {
    bump: () => {
      crypto.getRandomValues(words)
      if (writeSync(file, words, 0, GENERATION_BYTES, 0) !== GENERATION_BYTES) {
        throw new JournalError(`the generation of the journal ${path} could not be written`)
      }
    },
    close: () => closeSync(file),
  }
}

/**
 * The generation beside the journal at `path`, on a filesystem of `type`, or undefined where it cannot be shared
 * safely (a filesystem not known to share pages between processes): then every operation looks. With `mappedWrites`
 * it is written through its mapping once its blocks are allocated. Where it can be shared, it must be: a process
 * that could not open or map it would change the journal without moving it, under others who trust it, so the
 * journal is not opened (a JournalError). Created, 0600 and zero, by the first process; made under the exclusive
 * lock, so never cut by another's creation.
 */
const generation = (lib: Libc, path: string, type: number | undefined, mappedWrites: boolean): Generation | undefined => {
  if (type === undefined || !COHERENT_FILESYSTEMS.has(type)) return undefined
  let file: number | undefined
  try {
    // Not O_APPEND: the words are written in place where they are not written through the mapping.
    file = openSync(`${path}-shm`, constants.O_RDWR | constants.O_CREAT, 0o600)
    if (fstatSync(file).size < GENERATION_BYTES) ftruncateSync(file, GENERATION_BYTES)
    const throughMapping = mappedWrites && lib.allocate?.(file, 0, GENERATION_BYTES) === 0
    const mapped = Bun.mmap(`${path}-shm`, { shared: true, size: GENERATION_BYTES })
    if (mapped.byteLength < GENERATION_BYTES) throw new JournalError(`the generation of the journal ${path} is shorter than its ${GENERATION_BYTES} bytes`)
    const words = new Uint32Array(mapped.buffer, mapped.byteOffset, 2)
    // Elsewhere written in place with pwrite (a full disk fails the write instead of ending core), and read through
    // the mapping, which shows what was written at once (one page cache); the file is then kept open for the life of
    // the process, as the mapping is.
    const written = file
    const word = new Uint32Array(1)
    const put = throughMapping
      ? (index: number, value: number) => void (words[index] = value)
      : (index: number, value: number) => {
          word[0] = value
          if (writeSync(written, word, 0, 4, index * 4) !== 4) throw new JournalError(`the generation of the journal ${path} could not be written`)
        }
    if (throughMapping) closeSync(file)
    return {
      high: () => words[0]!,
      low: () => words[1]!,
      bump: () => {
        const low = words[1]!
        if (low === 0xffff_ffff) put(0, (words[0]! + 1) >>> 0)
        put(1, (low + 1) >>> 0)
      },
      close: throughMapping ? () => {} : () => closeSync(written),
    }
  } catch (cause) {
    if (file !== undefined) closeSync(file)
    throw new JournalError(
      `the generation of the journal ${path} (${path}-shm) could not be opened and mapped, which every core using it needs: ${cause instanceof Error ? cause.message : String(cause)}`,
    )
  }
}

export class JournalError extends Error {}

/**
 * One string per row: apart for every two keys, whatever their ids hold (a NUL too, which ids kept before it was
 * refused may): the Location (a path, which holds none), the session's length, the session, then the call id.
 */
const keyString = (location: string, sessionID: string, toolCallID: string) =>
  `${location}\u0000${sessionID.length}\u0000${sessionID}${toolCallID}`

const rowKey = (row: Row) => keyString(row.location, row.session_id, row.call_id)

/** One string per session: the Location (which holds no NUL), then the session. */
const sessionString = (location: string, sessionID: string) => `${location}\u0000${sessionID}`

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
  /**
   * Forgets what was read of SQLite: its rows changed other than by compaction (a prune). Inside `writing` only,
   * after a `compact` in the same write (which makes every other process read SQLite afresh).
   */
  readonly forget: () => void
  /** Whether the journal holds records not yet in SQLite. */
  readonly pending: () => boolean
  /** The rows the journal changed that SQLite does not have yet. Inside `reading` or `writing` only. */
  readonly changed: () => Iterable<Row>
  /** The journal's size in bytes as this process last read it. */
  readonly size: () => number
  readonly close: () => void
}

/** Opens (creating, 0600) the journal at `path` over `index`. */
export const open = (path: string, index: Index, options: Options = {}): Journal => {
  const limits = { rows: options.rows ?? 10_000, ids: options.ids ?? 100_000 }
  const lib = libc()
  if (lib === null) throw new JournalError("libc's flock could not be opened")
  const lock = lib.flock
  // Not O_APPEND: records are written at the committed end, inside the file.
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600)
  /** The nonce of the journal as last read; "" before a header was read. */
  let nonce = ""
  /** Where the next unread record starts: the committed end, once read through. */
  let offset = 0
  /** The file's size as this process last knew it (its own changes included). */
  let size = 0
  /** The whole file mapped shared, where the generation is shared (so is the page cache); else undefined. */
  let mapped: Uint8Array | undefined
  /** The committed end's word in `mapped`. */
  let endWord: Uint32Array | undefined
  /** Rows changed by the records read, by key. */
  const rows = new Map<string, Row>()
  /**
   * SQLite's rows as read under this nonce (null: none): SQLite changes only by compaction, which starts a new
   * nonce, so what was read holds until then. A cache: emptied when full.
   */
  const indexed = new Map<string, Row | null>()
  /**
   * Sessions (by `sessionString`) whose every call id in SQLite is listed here, so a call of theirs not listed is
   * missing from SQLite: a fresh call is begun without asking SQLite. A session is known so when SQLite was found to
   * hold none of its rows (`Index.empty`), and stays so while SQLite changes only by this process's compactions,
   * each of which lists what it wrote (see `compact`). Forgotten on a new nonce (another process compacted) and on
   * `forget` (a prune); past `limits.ids` call ids in all, the sessions used least recently are forgotten (first in
   * the map's order: a session used is moved to its end), and asked about again when next used.
   */
  const known = new Map<string, Set<string>>()
  /** How many call ids `known` lists, over all its sessions. */
  let knownIds = 0
  /** Sessions found to have rows in SQLite under this nonce: not asked again whether they are empty. */
  const partial = new Set<string>()
  let held = 0
  /** The generation beside the journal, made below under the exclusive lock; undefined: look every time. */
  let shared: Generation | undefined
  /** Where the generation is not trusted here (`shared` undefined): how this process still moves it (see `mover`). */
  let moving: Pick<Generation, "bump" | "close"> | undefined
  /**
   * Whether a change to the file failed part way since this process last read it (a cut, a growth or a record that
   * could not all be written, say on a full disk), even where the caller went on: the file may then be other than
   * this process believes, so it is read again before anything else is done with it, whatever the generation says.
   */
  let unsure = false
  /**
   * The generation when this process last held the lock and knew the file as it left it (its own changes
   * included); -1: unknown, look first.
   */
  let seenHigh = -1
  let seenLow = -1
  /** Whether this hold of the exclusive lock moved the generation yet. */
  let moved = false
  /** Whether the journal may be written through a mapping here (ALLOCATED_WRITES), once its pages are allocated. */
  let mappable = false
  /** Whether every page of the file (`size` bytes) has its blocks now, so a store into the mapping needs no space. */
  const allocated = () => lib.allocate !== undefined && lib.allocate(fd, 0, size) === 0
  /** Lets go of the mapping: the file is read and written with system calls until it is mapped again. */
  const unmap = () => {
    mapped = undefined
    endWord = undefined
  }

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

  /** `length` bytes at `position`, a view of the mapping where there is one (valid until the next change). */
  const bytesAt = (position: number, length: number): Uint8Array =>
    mapped !== undefined ? mapped.subarray(position, position + length) : readAt(position, length)

  const writeAt = (bytes: Uint8Array, position: number) => {
    if (mapped !== undefined) {
      mapped.set(bytes, position)
      return
    }
    let done = 0
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done, position + done)
  }

  /** The committed end as the file says; 0 where none was written yet. */
  const endOf = (): number => {
    if (endWord !== undefined) return endWord[0]!
    const word = readAt(END_AT, 4)
    return word.length === 4 ? new DataView(word.buffer, word.byteOffset, 4).getUint32(0, true) : 0
  }

  /** Moves the committed end to `end`: one aligned 32-bit store, or one `pwrite` of it. */
  const commit = (end: number) => {
    if (endWord !== undefined) {
      endWord[0] = end
      return
    }
    const word = new Uint8Array(4)
    new DataView(word.buffer).setUint32(0, end, true)
    writeAt(word, END_AT)
  }

  /**
   * Maps the file as it is now (`size` bytes), where its page cache is shared: through `/proc/self/fd`, so it is the
   * file open here whatever its path names by then. A file too short to hold a header is not mapped.
   */
  const map = () => {
    unmap()
    if (shared === undefined || !mappable || size < RECORDS_AT) return
    // Every page given its blocks first (a hole written through the mapping on a full disk is a bus error); where
    // they cannot be had, the file is read and written with system calls, which fail with ENOSPC instead.
    if (!allocated()) return
    const whole = Bun.mmap(`/proc/self/fd/${fd}`, { shared: true })
    if (whole.byteLength !== size) throw new JournalError(`the journal ${path} changed size as it was mapped`)
    mapped = whole
    endWord = new Uint32Array(whole.buffer, whole.byteOffset + END_AT, 1)
  }

  /** Makes the file `to` bytes long (zeros past its old end), mapped anew. Under the exclusive lock only. */
  const resize = (to: number) => {
    changing()
    unmap()
    ftruncateSync(fd, to)
    size = to
    map()
  }

  const base = (location: string, sessionID: string, toolCallID: string): Row | undefined => {
    const key = keyString(location, sessionID, toolCallID)
    const row = rows.get(key)
    if (row !== undefined) return row
    let found = indexed.get(key)
    if (found === undefined) {
      const session = sessionString(location, sessionID)
      const ids = known.get(session)
      if (ids !== undefined) {
        known.delete(session)
        known.set(session, ids)
        if (!ids.has(toolCallID)) return undefined
      } else if (!partial.has(session)) {
        // One question per session under a nonce: a new session's calls are then never looked up in SQLite.
        if (index.empty(location, sessionID)) {
          known.set(session, new Set())
          return undefined
        }
        if (partial.size >= limits.rows) partial.clear()
        partial.add(session)
      }
      found = index.row([location, sessionID, toolCallID]) ?? null
      cache(key, found)
    }
    return found ?? undefined
  }

  /** Keeps `row` as SQLite's for `key`, emptying the cache first when it is full. */
  const cache = (key: string, row: Row | null) => {
    if (indexed.size >= limits.rows) indexed.clear()
    indexed.set(key, row)
  }

  /** Lists `row`'s call id as in SQLite, where every call id of its session is known. */
  const list = (row: Row) => {
    const ids = known.get(sessionString(row.location, row.session_id))
    if (ids === undefined || ids.has(row.call_id)) return
    ids.add(row.call_id)
    knownIds++
  }

  /** Forgets the sessions used least recently until `known` lists at most `limits.ids` call ids. */
  const trim = () => {
    for (const [session, ids] of known) {
      if (knownIds <= limits.ids) return
      known.delete(session)
      knownIds -= ids.size
    }
  }

  const forgetIndexed = () => {
    indexed.clear()
    known.clear()
    knownIds = 0
    partial.clear()
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
  const restart = (found: string, keep = false) => {
    rows.clear()
    if (!keep) forgetIndexed()
    nonce = found
    offset = found === "" ? 0 : Math.max(RECORDS_AT, index.applied(found) ?? RECORDS_AT)
  }

  const corrupt = (what: string) => new JournalError(`the journal ${path} ${what}: move it aside only once no core uses it`)

  /** Applies the records in `bytes` (whole lines), the first at `position` of the file. */
  const applyAll = (bytes: Uint8Array, position: number) => {
    let at = 0
    while (at < bytes.length) {
      const next = bytes.indexOf(10, at)
      let entry: Entry
      try {
        entry = JSON.parse(decoder.decode(bytes.subarray(at, next))) as Entry
      } catch {
        throw new JournalError(`the journal ${path} has a record that is not JSON at byte ${position + at}`)
      }
      apply(entry)
      at = next + 1
    }
  }

  /**
   * The nonce in the file's header; "" where it has none: shorter than a header (never written, or cut by a
   * compaction killed before it wrote the next one) or starting with a zero byte (cut and grown, then killed before
   * the header was written). Anything else that is not a header is not a journal this core wrote: reported, never
   * cut. A journal in the layout before this one is reported too, but while the store opens (`legacy`).
   */
  const headerNonce = (legacy: boolean): string => {
    if (size < HEADER_LINE) return ""
    const head = bytesAt(0, HEADER_LINE)
    if (head[0] === 0) return ""
    const header = decoder.decode(head)
    if (header.startsWith(HEADER_PREFIX) && header.endsWith("\n")) return header.slice(HEADER_PREFIX.length, -1)
    if (legacy && header.startsWith(LEGACY_PREFIX) && header.endsWith("\n")) return header
    throw corrupt("does not start as a journal of this core")
  }

  /** Reads what was appended since the last read (after a compaction, the new journal from its start). */
  const catchUp = () => {
    // Another process may have grown, emptied or cut the file: never touch the mapping before this.
    const now = fstatSync(fd).size
    if (now !== size) {
      size = now
      map()
    }
    const found = headerNonce(false)
    // No header: never written, or emptied by a compaction killed before it wrote the next one, which may have
    // changed SQLite since this process last read it under no header too: what was read of SQLite is forgotten.
    if (found !== nonce || found === "") {
      restart(found)
      // Cut and grown again by another process since this one mapped it: its pages may have no blocks now.
      if (mapped !== undefined && !allocated()) unmap()
    }
    if (found === "") return
    // The end is written before the header, so a header comes with one; 0 (a file not written by `reset`) is empty.
    const written = endOf()
    const end = written === 0 ? RECORDS_AT : written
    if (end < RECORDS_AT || end > size) throw corrupt(`ends at byte ${end}, outside its ${size} bytes`)
    // SQLite applied more of this journal than it holds: never appended to at its end, as a reader would skip it.
    if (offset > end) throw corrupt(`holds ${end} bytes, of which SQLite applied ${offset}`)
    if (end === offset) return
    const bytes = bytesAt(offset, end - offset)
    if (bytes[bytes.length - 1] !== 10) throw corrupt(`has a record cut short at byte ${end}`)
    applyAll(bytes, offset)
    offset = end
  }

  /** Moves the generation on before the first change to the file under this hold of the exclusive lock. */
  const changing = () => {
    if (moved) return
    ;(shared ?? moving)?.bump()
    moved = true
  }

  /** `change`, after which the file is known as this process left it only if it did all of it (see `unsure`). */
  const changed = <A>(change: () => A): A => {
    // A change failed before under this hold (and its caller went on): the file is read again first.
    if (unsure) {
      catchUp()
      unsure = false
    }
    try {
      return change()
    } catch (cause) {
      unsure = true
      throw cause
    }
  }

  /** Flocks the journal with `operation`; flock returns -1 when a signal interrupts the wait: wait again. */
  const take = (operation: number) => {
    let tries = 0
    while (lock(fd, operation) !== 0) {
      if (++tries === 5) throw new JournalError(`could not lock the journal ${path}`)
    }
  }

  const locked = <A>(operation: number, f: () => A): A => {
    if (held !== 0) {
      // Re-entered: a read inside a read or a write, or a write inside a write, under the lock already held.
      if (operation === LOCK_EX && held !== LOCK_EX) throw new JournalError("a journal write inside a read")
      return f()
    }
    take(operation)
    held = operation
    moved = false
    let known = false
    try {
      // The file is as this process left it when the generation has not moved since (see `Generation`).
      if (unsure || shared === undefined || shared.high() !== seenHigh || shared.low() !== seenLow) {
        catchUp()
        unsure = false
      }
      const result = f()
      known = true
      return result
    } finally {
      // Known as left only when everything under the lock succeeded: a failed read or write may leave the file
      // other than this process believes (a partial append), so the next operation looks; so does a change that
      // failed under the lock, though the caller went on (a compaction that could not start the journal again).
      known &&= !unsure
      seenHigh = known && shared !== undefined ? shared.high() : -1
      seenLow = known && shared !== undefined ? shared.low() : -1
      held = 0
      lock(fd, LOCK_UN)
    }
  }

  /**
   * Starts a journal with a fresh nonce, empty: cut to nothing first (no header: a process killed from here until
   * the header's first byte is written leaves a journal every reader starts afresh on, never old records under a new
   * nonce), grown to `CAPACITY` (zeros), its end written, then its header, the first byte last. A mapping of the file
   * at that size stays valid through the cut (its pages read as zeros again), so it is kept. `keep`: what was read
   * of SQLite still holds.
   */
  const reset = (keep: boolean) => {
    changing()
    ftruncateSync(fd, 0)
    ftruncateSync(fd, CAPACITY)
    if (size !== CAPACITY || mapped === undefined) {
      size = CAPACITY
      map()
    } else if (!allocated()) {
      // The cut took the pages' blocks: the mapping is kept only while they can be had again.
      unmap()
    }
    commit(RECORDS_AT)
    const fresh = Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString("hex")
    const header = encoder.encode(`${HEADER_PREFIX}${fresh}\n`)
    writeAt(header.subarray(1), 1)
    writeAt(header.subarray(0, 1), 0)
    restart(fresh, keep)
    offset = RECORDS_AT
  }

  /**
   * A journal in the layout before this one (`header`, read as the store opens, under the exclusive lock): its
   * records past what SQLite applied, through its last whole line (a torn last line was never a record), compacted
   * into SQLite, and the journal started again in this layout.
   */
  const upgrade = (header: string) => {
    const legacyNonce = header.slice(LEGACY_PREFIX.length, -1)
    restart(legacyNonce)
    offset = Math.max(HEADER_LINE, index.applied(legacyNonce) ?? HEADER_LINE)
    const bytes = size > offset ? readAt(offset, size - offset) : new Uint8Array(0)
    const through = bytes.lastIndexOf(10) + 1
    applyAll(bytes.subarray(0, through), offset)
    offset += through
    compact()
  }

  /** Writes every row the journal changed into SQLite and starts the journal again, empty. */
  const compact = () => {
    // Moved first: what SQLite holds changes too.
    changing()
    const written = [...rows.values()]
    if (written.length > 0) index.write(written, nonce, offset)
    reset(true)
    // SQLite holds what it held, and what was written (see `known`).
    for (const row of written) {
      cache(rowKey(row), row)
      list(row)
    }
    trim()
  }

  const fail = (cause: unknown) => {
    unmap()
    shared?.close()
    moving?.close()
    lock(fd, LOCK_UN)
    closeSync(fd)
    throw cause
  }

  try {
    take(LOCK_EX)
  } catch (cause) {
    closeSync(fd)
    throw cause
  }
  try {
    const type = lib.filesystem(fd)
    // Written through their mappings only where the filesystem allows it (ALLOCATED_WRITES), once allocated.
    const mappedWrites = options.mappedWrites !== false && type !== undefined && ALLOCATED_WRITES.has(type) && lib.allocate !== undefined
    shared = options.shared === false ? undefined : generation(lib, path, type, mappedWrites)
    if (shared === undefined) moving = mover(path)
    mappable = shared !== undefined && mappedWrites
    size = fstatSync(fd).size
    map()
    // A journal an older core left: read in its layout, once, into SQLite.
    held = LOCK_EX
    const header = headerNonce(true)
    if (header.startsWith(LEGACY_PREFIX)) upgrade(header)
  } catch (cause) {
    fail(cause)
  } finally {
    held = 0
  }
  lock(fd, LOCK_UN)

  return {
    reading: (f) => locked(LOCK_SH, f),
    writing: (f) => locked(LOCK_EX, f),
    row: (key) => base(key[0], key[1], key[2]),
    append: (entry) => {
      if (held !== LOCK_EX) throw new JournalError("a journal append outside a write")
      changed(() => {
        // No header yet: the journal started (what was read of SQLite was read under this hold: see `catchUp`).
        if (nonce === "") reset(true)
        const bytes = encoder.encode(`${JSON.stringify(entry)}\n`)
        const end = offset + bytes.length
        changing()
        // A record past the file's end grows the file, with room for the records after it.
        if (end > size) resize(Math.ceil((end + COMPACT_BYTES) / GROWTH) * GROWTH)
        // The record past the end, then the end over it: killed in between, the record was never appended.
        writeAt(bytes, offset)
        commit(end)
        apply(entry)
        offset = end
      })
    },
    compact: () => {
      if (held !== LOCK_EX) throw new JournalError("a journal compaction outside a write")
      changed(compact)
    },
    forget: () => {
      if (held !== LOCK_EX) throw new JournalError("forgetting SQLite's rows outside a write")
      forgetIndexed()
    },
    pending: () => rows.size > 0 || offset > RECORDS_AT,
    changed: () => {
      if (held === 0) throw new JournalError("reading the journal's rows outside a read or a write")
      return rows.values()
    },
    size: () => offset,
    close: () => {
      unmap()
      shared?.close()
      moving?.close()
      closeSync(fd)
    },
  }
}
