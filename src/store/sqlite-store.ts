export * as SqliteStore from "./sqlite-store"

// The durable settlement store on bun:sqlite (WAL, synchronous=NORMAL), its records appended to a journal first and
// written into SQLite in batches (./journal): settlements are read from the journal over SQLite. The schema is versioned with
// `PRAGMA user_version` and forward-only migrations; a corrupt file or one written by a newer core is reported,
// never replaced. This module is the platform edge for SQLite and holds no settlement logic.
//
// Adding a table (or changing one): append one entry to MIGRATIONS, never edit a shipped one. It runs once, in
// the same write transaction as the version bump, on every database older than it; SCHEMA_VERSION follows.

import { Database } from "bun:sqlite"
import { chmodSync, closeSync, mkdirSync, openSync, statfsSync, statSync } from "node:fs"
import { dirname, resolve } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { CallKey } from "../contract/call-key"
import type { Settlement } from "../contract/settlement"
import { Checkpointer } from "./checkpointer"
import { Journal } from "./journal"
import { Lease } from "./lease"
import { Owner } from "./owner"
import { Approvals } from "./approvals"
import { Store } from "./store"

/** Each entry moves the schema from version `index` to `index + 1`. Never edit one that has shipped. */
export const MIGRATIONS: ReadonlyArray<string> = [
  `CREATE TABLE settlements (
     session_id TEXT NOT NULL,
     call_id TEXT NOT NULL,
     tool TEXT NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('started', 'failed', 'settled')),
     owner TEXT,
     reason TEXT,
     settlement TEXT,
     started_at INTEGER,
     settled_at INTEGER,
     PRIMARY KEY (session_id, call_id)
   ) WITHOUT ROWID`,
  `CREATE TABLE approvals (
     project TEXT NOT NULL,
     action TEXT NOT NULL,
     pattern TEXT NOT NULL,
     saved_at INTEGER NOT NULL,
     PRIMARY KEY (project, action, pattern)
   ) WITHOUT ROWID`,
  // A settlement (~1 KB of JSON) does not fit in a WITHOUT ROWID leaf and spilled into overflow pages: a rowid
  // table keeps it inline. The time index lets the retention sweep find expired records without a full scan;
  // `sweeps` records when a sweep last ran, so it runs at most hourly whatever else the data directory holds.
  `CREATE TABLE settlements_rowid (
     id INTEGER PRIMARY KEY,
     session_id TEXT NOT NULL,
     call_id TEXT NOT NULL,
     tool TEXT NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('started', 'failed', 'settled')),
     owner TEXT,
     reason TEXT,
     settlement TEXT,
     started_at INTEGER,
     settled_at INTEGER,
     UNIQUE (session_id, call_id)
   );
   INSERT INTO settlements_rowid (session_id, call_id, tool, state, owner, reason, settlement, started_at, settled_at)
     SELECT session_id, call_id, tool, state, owner, reason, settlement, started_at, settled_at FROM settlements
     ORDER BY COALESCE(settled_at, started_at);
   DROP TABLE settlements;
   ALTER TABLE settlements_rowid RENAME TO settlements;
   CREATE INDEX settlements_by_time ON settlements (COALESCE(settled_at, started_at));
   CREATE TABLE sweeps (name TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID`,
  // What each session read of each file (see ./reads).
  `CREATE TABLE reads (
     session_id TEXT NOT NULL,
     path TEXT NOT NULL,
     hash TEXT,
     size INTEGER NOT NULL,
     mtime_ns TEXT NOT NULL,
     ino TEXT NOT NULL,
     seen_at INTEGER NOT NULL,
     PRIMARY KEY (session_id, path)
   ) WITHOUT ROWID`,
  // A call belongs to its Location, and a record names the agent it was made for: the same ids in another
  // Location are another call, and a replay asked by another agent is refused. Records kept before this step
  // have no Location ('') and no agent (NULL): they still answer in every Location, so none runs again.
  `CREATE TABLE settlements_located (
     id INTEGER PRIMARY KEY,
     location TEXT NOT NULL,
     session_id TEXT NOT NULL,
     call_id TEXT NOT NULL,
     tool TEXT NOT NULL,
     agent TEXT,
     state TEXT NOT NULL CHECK (state IN ('started', 'failed', 'settled')),
     owner TEXT,
     reason TEXT,
     settlement TEXT,
     started_at INTEGER,
     settled_at INTEGER,
     UNIQUE (session_id, call_id, location)
   );
   INSERT INTO settlements_located
       (id, location, session_id, call_id, tool, state, owner, reason, settlement, started_at, settled_at)
     SELECT id, '', session_id, call_id, tool, state, owner, reason, settlement, started_at, settled_at
     FROM settlements ORDER BY id;
   DROP TABLE settlements;
   ALTER TABLE settlements_located RENAME TO settlements;
   CREATE INDEX settlements_by_time ON settlements (COALESCE(settled_at, started_at))`,
  // Each session's todo list in its Location (see ./todos).
  `CREATE TABLE todos (
     location TEXT NOT NULL,
     session_id TEXT NOT NULL,
     todos TEXT NOT NULL,
     updated_at INTEGER NOT NULL,
     PRIMARY KEY (location, session_id)
   ) WITHOUT ROWID`,
  // A begun call is running while its lease (epoch ms) is live, renewed by the process running it (see ./lease):
  // hosts sharing the data directory can read it, as they cannot check each other's processes. Records kept
  // before this step have none, and are checked by their owner's process as before. An approval records who
  // approved it.
  `ALTER TABLE settlements ADD COLUMN lease_until INTEGER;
   ALTER TABLE approvals ADD COLUMN approved_by TEXT`,
  // What operators list (`core log`): the turn that made each call and its input (JSON cut to
  // Store.INPUT_MAX_BYTES; input_bytes is the whole size). A call settled without beginning (unknown, denied)
  // now has a start time too. Records kept before this step have none of these: they list without them.
  `ALTER TABLE settlements ADD COLUMN message_id TEXT;
   ALTER TABLE settlements ADD COLUMN input TEXT;
   ALTER TABLE settlements ADD COLUMN input_bytes INTEGER;
   CREATE INDEX settlements_by_location ON settlements (location, COALESCE(started_at, settled_at))`,
  // Records are appended to a journal beside the database and compacted into it (see ./journal); the nonce of the
  // journal last compacted and how far. A core from before this step would not read the journal: the version
  // keeps it from opening the store.
  `CREATE TABLE journal_applied (nonce TEXT PRIMARY KEY, through INTEGER NOT NULL) WITHOUT ROWID`,
  // Every process moves the journal's generation (`core.db.journal-shm`, see ./journal) before it changes the
  // journal, and skips reading the journal while the generation stands where it last saw it: a core from before this
  // step changes the journal without moving it, so the version keeps such a core from opening the store. The
  // database itself does not change.
  `SELECT 1`,
  // The journal is written in place past a committed end kept in its header, mapped into memory where the page
  // cache is shared (see ./journal): a core from before this step would append past the file's end, where nothing is
  // read, so the version keeps it from opening the store. The journal it left is read once, in its layout, as a
  // newer core opens the store. The database itself does not change.
  `SELECT 1`,
  // A Location whose own core.json sets `output.retentionDays` keeps its records (and managed outputs) that long,
  // whatever the operator's retention is; the sweep prunes every other Location by the operator's.
  `CREATE TABLE retentions (location TEXT PRIMARY KEY, retention_ms INTEGER NOT NULL) WITHOUT ROWID`,
]

/** The last version that rebuilt the settlements table: migrating from before it leaves free pages. */
const REBUILT_VERSION = 5

export const SCHEMA_VERSION = MIGRATIONS.length

const MMAP_BYTES = 256 * 1024 * 1024
/** How long a statement waits for another process's lock before SQLITE_BUSY. */
const BUSY_MS = 5_000
/** WAL pages between automatic checkpoints (SQLite's default is 1,000); 4 KiB pages, so 16 MiB. */
const CHECKPOINT_PAGES = 4_000
const WAL_LIMIT_BYTES = 16 * 1024 * 1024

const describe = Store.describe

/**
 * Makes an existing data directory the user's alone (an older core, or a umask, may have left it 0755): once it is
 * 0700, nothing below it (the store, managed outputs) can be reached by another user, whatever their own modes.
 * A directory the user does not own, or a shared sticky one such as /tmp, is left as it is.
 */
const makePrivate = (directory: string) => {
  const stat = statSync(directory)
  const shared = (stat.mode & 0o1000) !== 0
  if ((stat.mode & 0o077) === 0 || shared || stat.uid !== process.getuid?.()) return
  chmodSync(directory, stat.mode & 0o700)
}

const open = (path: string): Database => {
  // The data directory and the store are the user's alone; SQLite gives -wal and -shm the database file's mode.
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  makePrivate(dirname(path))
  closeSync(openSync(path, "a", 0o600))
  chmodSync(path, 0o600)
  const db = new Database(path, { create: true, strict: true })
  try {
    db.exec(`PRAGMA busy_timeout = ${BUSY_MS}`)
    toWal(db)
    db.exec("PRAGMA synchronous = NORMAL")
    // Calls are committed in batches from the journal, a few pages each; with NORMAL the only syncs are
    // at checkpoints, so checkpointing less often takes most of the syncing off the calls, and ./checkpointer runs
    // them while the writers pause (see acquire). The WAL file is cut back to the limit after each checkpoint.
    db.exec(`PRAGMA wal_autocheckpoint = ${CHECKPOINT_PAGES}`)
    db.exec(`PRAGMA journal_size_limit = ${WAL_LIMIT_BYTES}`)
    // Reads through the OS page cache without copying each page: a lookup at a scattered key in a large store
    // costs a page fault instead of a read call per page.
    db.exec(`PRAGMA mmap_size = ${MMAP_BYTES}`)
    migrate(db)
    return db
  } catch (cause) {
    db.close()
    throw cause
  }
}

/**
 * Puts a store in WAL mode. A new file starts in rollback mode, and processes opening it at the same moment each
 * convert it: SQLite answers SQLITE_BUSY at once to all but one of them, without waiting through busy_timeout (two
 * readers each waiting to write would wait for each other). Tried again until converted, within the same 5 s.
 */
const toWal = (db: Database) => {
  const until = performance.now() + BUSY_MS
  for (let pause = 1; ; pause = Math.min(pause * 2, 50)) {
    try {
      db.exec("PRAGMA journal_mode = WAL")
      return
    } catch (cause) {
      // SQLITE_BUSY, or one of its extended codes (SQLITE_BUSY_RECOVERY while another process recovers the file).
      const code = (cause as { code?: unknown } | undefined)?.code
      if (typeof code !== "string" || !code.startsWith("SQLITE_BUSY") || performance.now() >= until) throw cause
      Bun.sleepSync(pause)
    }
  }
}

class NewerVersion {
  constructor(readonly found: number) {}
}

const readVersion = (db: Database): number =>
  (db.query("PRAGMA user_version").get() as { user_version: number }).user_version

const migrate = (db: Database) => {
  if (readVersion(db) === SCHEMA_VERSION) return
  // Under a write lock, and reading the version again inside it: processes starting together migrate once.
  const from = db.transaction(() => {
    const version = readVersion(db)
    if (version > SCHEMA_VERSION) throw new NewerVersion(version)
    for (let index = version; index < SCHEMA_VERSION; index++) db.exec(MIGRATIONS[index]!)
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`)
    return version
  }).immediate()
  // Rebuilding the settlements table freed the old one's pages: give them back once, outside the transaction.
  if (from > 0 && from < REBUILT_VERSION) {
    try {
      db.exec("VACUUM")
    } catch {
      // Another process holds the database: the free pages are reused by later writes instead.
    }
  }
}

const openError = (path: string, cause: unknown): Store.StoreError => {
  if (cause instanceof NewerVersion) {
    return new Store.StoreError({
      reason: "newer_version",
      path,
      message:
        `The settlement store ${path} has schema version ${cause.found}, newer than this core understands ` +
        `(${SCHEMA_VERSION}). Upgrade core, or point CORE_DATA_DIR elsewhere; the file was left untouched.`,
    })
  }
  const message = describe(cause)
  const code = (cause as { code?: unknown } | undefined)?.code
  if (code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT") {
    return new Store.StoreError({
      reason: "corrupt",
      path,
      message: `The settlement store ${path} is corrupt (${message}). It was left untouched: move it aside to start afresh.`,
    })
  }
  // SQLite says "disk I/O error" where the disk is full (it cannot make its log): say what the person can fix.
  const full = !/disk is full/.test(message) && diskFull(dirname(path)) ? " (the disk holding it is full: free some space)" : ""
  return new Store.StoreError({ reason: "open", path, message: `Could not open the settlement store ${path}: ${message}${full}` })
}

/** Whether the filesystem holding `directory` has no space left for this user. */
const diskFull = (directory: string): boolean => {
  try {
    return statfsSync(directory).bavail === 0
  } catch {
    return false
  }
}

type ListedRow = Journal.Row & Store.ListedRow

/** Whose rows of `table` a prune takes: ?3's where it is given, else those of Locations keeping no retention of their own. */
const WHOSE = (table: string) =>
  `(CASE WHEN ?3 IS NULL THEN NOT EXISTS (SELECT 1 FROM retentions WHERE retentions.location = ${table}.location) ` +
  `ELSE ${table}.location = ?3 END)`

/** A row's columns, in the order the statements below name them. */
const COLUMNS =
  "location, session_id, call_id, tool, agent, state, owner, reason, settlement, lease_until, started_at, settled_at, " +
  "message_id, input, input_bytes"

/**
 * The statements the store runs, prepared once; preparing also checks the schema is the one expected. The
 * settlements table is the journal's index (see ./journal): rows are read from it, and written to it only by
 * compaction, a batch at a time.
 */
const prepare = (db: Database) => ({
  // One probe of the unique index.
  // One probe of the unique index, for what a record says: not what it keeps for operators (its input and turn),
  // which the journal never changes once the row is made.
  row: db.query<Pick<Journal.Row, "tool" | "agent" | "state" | "owner" | "reason" | "settlement" | "lease_until" | "settled_at">, [string, string, string]>(
    "SELECT tool, agent, state, owner, reason, settlement, lease_until, settled_at FROM settlements " +
      "WHERE session_id = ? AND call_id = ? AND location = ?",
  ),
  // Whether any record kept without a Location is left: none are made any more, so once gone they stay gone.
  unlocated: db.query<{ found: number }, []>("SELECT 1 AS found FROM settlements WHERE location = '' LIMIT 1"),
  // Whether a session has any row in a Location, through the unique index's leading column.
  session: db.query<{ found: number }, [string, string]>(
    "SELECT 1 AS found FROM settlements WHERE session_id = ? AND location = ? LIMIT 1",
  ),
  // A row as the journal left it: made, or replaced whole.
  upsert: db.query<unknown, Array<string | number | null>>(upsertOf(1)),
  // UPSERT_ROWS at once, prepared by the first compaction that has as many (a short command never needs it).
  upsertMany: () => db.query<unknown, Array<string | number | null>>((upsertManySql ??= upsertOf(UPSERT_ROWS))),
  applied: db.query<{ through: number }, [string]>("SELECT through FROM journal_applied WHERE nonce = ?"),
  forgetApplied: db.query<unknown, []>("DELETE FROM journal_applied"),
  recordApplied: db.query<unknown, [string, number]>("INSERT INTO journal_applied (nonce, through) VALUES (?, ?)"),
  transaction: <A extends Array<unknown>>(run: (...args: A) => void) => db.transaction(run).immediate,
  // The newest of a Location's calls through its time index; ?2 NULL means every session, ?3 the earliest start.
  list: db.query<ListedRow, [string, string | null, number, number]>(
    `SELECT ${COLUMNS} FROM settlements ` +
      "WHERE location = ?1 AND (?2 IS NULL OR session_id = ?2) AND COALESCE(started_at, settled_at) >= ?3 " +
      "ORDER BY COALESCE(started_at, settled_at) DESC, id DESC LIMIT ?4",
  ),
  // Through the time index, at most `limit` rows at a time: a sweep never holds the write lock for long. A call
  // still running (its lease renewed past the cutoff, or its owner, ?4's, still running on this machine though its
  // lease lapsed) is never forgotten: a retry would run it a second time.
  // ?3 NULL: the Locations that keep no retention of their own; else that Location's alone.
  prune: db.query<unknown, [number, number, string | null, string]>(
    "DELETE FROM settlements WHERE id IN " +
      "(SELECT id FROM settlements WHERE COALESCE(settled_at, started_at) < ?1 " +
      "AND (state <> 'started' OR (COALESCE(lease_until, 0) < ?1 AND (owner IS NULL OR owner NOT IN (SELECT value FROM json_each(?4))))) AND " +
      `${WHOSE("settlements")} LIMIT ?2)`,
  ),
  /**
   * The owners of calls begun before ?1 and never settled whose leases lapsed before it: a prune's candidates.
   * Through the time index (a started call's time is its start), never a scan of every record.
   */
  lapsedOwners: db.query<{ owner: string }, [number]>(
    "SELECT DISTINCT owner FROM settlements WHERE COALESCE(settled_at, started_at) < ?1 AND state = 'started' " +
      "AND COALESCE(lease_until, 0) < ?1 AND owner IS NOT NULL",
  ),
  // Todo lists not written since the cutoff go with the calls of their time, also in batches.
  pruneTodos: db.query<unknown, [number, number, string | null]>(
    "DELETE FROM todos WHERE (location, session_id) IN " +
      `(SELECT location, session_id FROM todos WHERE updated_at < ?1 AND ${WHOSE("todos")} LIMIT ?2)`,
  ),
  retention: db.query<{ retention_ms: number }, [string]>("SELECT retention_ms FROM retentions WHERE location = ?"),
  retentions: db.query<{ location: string; retention_ms: number }, []>("SELECT location, retention_ms FROM retentions"),
  retain: db.query<unknown, [string, number]>(
    "INSERT INTO retentions (location, retention_ms) VALUES (?, ?) " +
      "ON CONFLICT (location) DO UPDATE SET retention_ms = excluded.retention_ms",
  ),
  release: db.query<unknown, [string]>("DELETE FROM retentions WHERE location = ?"),
  // Claims the sweep unless one ran within the interval (a time in the future means the clock went back).
  claimSweep: db.query<unknown, [number, number, number]>(
    "INSERT INTO sweeps (name, at) VALUES ('retention', ?) " +
      "ON CONFLICT (name) DO UPDATE SET at = excluded.at WHERE sweeps.at <= ? OR sweeps.at > ?",
  ),
})

type Statements = ReturnType<typeof prepare>

/** When a row was received, as a listing orders them (newest first). */
const receivedAt = (row: Journal.Row) => row.started_at ?? row.settled_at ?? 0

/**
 * SQLite's `limit` newest rows of a listing (newest first) with the journal's `changed` rows laid over them: each
 * call once, as the journal has it where it has it, newest first, at most `limit`.
 */
const overlaid = (
  listed: ReadonlyArray<ListedRow>,
  changed: Iterable<Journal.Row>,
  location: string,
  sessionID: string | undefined,
  since: number,
  limit: number,
): Array<ListedRow> => {
  const byKey = new Map<string, ListedRow>()
  const keyOf = (row: Journal.Row) => CallKey.of(row.location, { sessionID: row.session_id, toolCallID: row.call_id })
  for (const row of listed) byKey.set(keyOf(row), row)
  for (const row of changed) {
    if (row.location !== location || (sessionID !== undefined && row.session_id !== sessionID) || receivedAt(row) < since) continue
    byKey.set(keyOf(row), row)
  }
  return [...byKey.values()].sort((a, b) => receivedAt(b) - receivedAt(a)).slice(0, limit)
}

/** Rows an upsert statement takes at once when a compaction writes many: each statement's own cost is shared. */
const UPSERT_ROWS = 32
/** Its statement's text, made once. */
let upsertManySql: string | undefined

/**
 * An upsert of `rows` rows, as the journal left them: made, or (made already: read from here, or by a compaction
 * killed before it emptied the journal) changed in what a record changes after the row is made.
 */
const upsertOf = (rows: number): string =>
  `INSERT INTO settlements (${COLUMNS}) VALUES ` +
  Array.from({ length: rows }, (_, row) => `(${Array.from({ length: 15 }, (_, column) => `?${row * 15 + column + 1}`).join(", ")})`).join(", ") +
  " ON CONFLICT (session_id, call_id, location) DO UPDATE SET tool = excluded.tool, state = excluded.state, " +
  "reason = excluded.reason, settlement = excluded.settlement, lease_until = excluded.lease_until, settled_at = excluded.settled_at"

/** A row's values in COLUMNS' order, added to `values`. */
const valuesOf = (row: Journal.Row, values: Array<string | number | null>) => {
  values.push(
    row.location,
    row.session_id,
    row.call_id,
    row.tool,
    row.agent,
    row.state,
    row.owner,
    row.reason,
    row.settlement,
    row.lease_until,
    row.started_at,
    row.settled_at,
    row.message_id,
    row.input,
    row.input_bytes,
  )
  return values
}

/** The settlements table as the journal's index. */
const indexOf = (statements: Statements): Journal.Index => {
  const values: Array<string | number | null> = []
  const write = statements.transaction((rows: ReadonlyArray<Journal.Row>, nonce: string, through: number) => {
    let index = 0
    // UPSERT_ROWS rows a statement while they last (a statement's own cost, shared), then one at a time.
    for (; index + UPSERT_ROWS <= rows.length; index += UPSERT_ROWS) {
      values.length = 0
      for (let row = index; row < index + UPSERT_ROWS; row++) valuesOf(rows[row]!, values)
      statements.upsertMany().run(...values)
    }
    for (; index < rows.length; index++) {
      values.length = 0
      statements.upsert.run(...valuesOf(rows[index]!, values))
    }
    values.length = 0
    statements.forgetApplied.run()
    statements.recordApplied.run(nonce, through)
  })
  return {
    row: ([location, sessionID, toolCallID]) => {
      const found = statements.row.get(sessionID, toolCallID, location)
      if (found === null) return undefined
      // What the row keeps for operators is left out: an upsert of it never changes those columns.
      return {
        ...found,
        location,
        session_id: sessionID,
        call_id: toolCallID,
        started_at: null,
        message_id: null,
        input: null,
        input_bytes: null,
      }
    },
    empty: (location, sessionID) => statements.session.get(sessionID, location) === null,
    applied: (nonce) => statements.applied.get(nonce)?.through,
    write,
  }
}

/** The journal beside the store at `path`. */
export const journalPath = (path: string) => `${path}.journal`

/**
 * The journal's size from which a process closing the store compacts it; a smaller one is left for the next process
 * (which reads it as it opens: a few records cost it far less than a compaction cost the one that closed).
 */
export const CLOSE_COMPACT_BYTES = 16 * 1024
/** How long the journal is left unwritten before what it holds is compacted into SQLite (Options.compactIdleMs). */
const COMPACT_IDLE_MS = 250
/** How long after a failed compaction the journal's size does not call for another. */
const COMPACT_RETRY_MS = 1_000

/** How an operation on the store at `path` runs: a failure is a StoreError naming the store and the operation. */
const attemptAt =
  (path: string) =>
  <A>(operation: string, run: () => A) =>
    Effect.try({ try: run, catch: (cause) => Store.failed(path, operation, cause) })

/** A database this process has open, shared by every service on it (the store, reads, todos, approvals). */
interface Connection {
  readonly db: Database
  readonly detach: () => Promise<void> | undefined
  users: number
}

/**
 * The connection to each database file this process has open. One is enough: its users run their statements on this
 * one thread, each to its end (a transaction included), so none sees another's half done; a connection of each cost
 * `core exec` four openings (the file, its pragmas, its schema) and four closings.
 */
const connections = new Map<string, Connection>()

/**
 * Opens the database at `path` for the life of the scope (or joins this process's connection to it), checking its
 * schema: the statements `statementsOf` prepares, and how an operation on them runs.
 */
export const acquire = <A>(path: string, statementsOf: (db: Database) => A) =>
  Effect.gen(function* () {
    const key = resolve(path)
    const { db } = yield* Effect.acquireRelease(
      Effect.try({
        try: (): Connection => {
          const joined = connections.get(key)
          if (joined !== undefined) {
            joined.users++
            return joined
          }
          const made: Connection = { db: open(path), detach: Checkpointer.attach(path), users: 1 }
          connections.set(key, made)
          return made
        },
        catch: (cause) => openError(path, cause),
      }),
      (connection) =>
        Effect.suspend(() => {
          if (--connection.users > 0) return Effect.void
          connections.delete(key)
          const close = Effect.sync(() => connection.db.close())
          // The checkpoint thread's connection closes first, so this one, the last, checkpoints and removes the log.
          const stopping = connection.detach()
          return stopping === undefined ? close : Effect.andThen(Effect.promise(() => stopping), close)
        }),
    )
    const statements = yield* Effect.try({
      try: () => statementsOf(db),
      catch: (cause) =>
        new Store.StoreError({
          reason: "corrupt",
          path,
          message:
            `The settlement store ${path} does not have the expected tables (${describe(cause)}). ` +
            `It was left untouched: move it aside to start afresh.`,
        }),
    })
    return { statements, attempt: attemptAt(path) }
  })

export interface Options {
  /** How long a call's lease lasts unless renewed; by default `CORE_LEASE_MS` or ./lease's default. */
  readonly leaseMs?: number
  /** The journal's size at which it is compacted (Journal.COMPACT_BYTES); 0 compacts after every record. */
  readonly compactBytes?: number
  /**
   * How long the journal is left unwritten before this process compacts what it holds (COMPACT_IDLE_MS);
   * `Infinity`: only by size and on close.
   */
  readonly compactIdleMs?: number
}

/**
 * The durable store at `path` (usually `<data dir>/core.db`), its records appended to the journal beside it
 * (`journalPath`) and compacted into it (see ./journal).
 */
export const layer = (path: string, options: Options = {}): Layer.Layer<Store.Service, Store.StoreError> =>
  Layer.effect(
    Store.Service,
    Effect.gen(function* () {
      const leaseMs = yield* Effect.try({
        try: () => options.leaseMs ?? Lease.durationMs(),
        catch: (cause) => new Store.StoreError({ reason: "open", path, message: describe(cause) }),
      })
      const compactBytes = options.compactBytes ?? Journal.COMPACT_BYTES
      const closeBytes = Math.min(compactBytes, CLOSE_COMPACT_BYTES)
      const idleMs = options.compactIdleMs ?? COMPACT_IDLE_MS
      const { statements, attempt } = yield* acquire(path, prepare)
      const journal = yield* Effect.acquireRelease(
        Effect.try({
          try: () => Journal.open(journalPath(path), indexOf(statements)),
          catch: (cause) =>
            new Store.StoreError({ reason: "open", path, message: `Could not open the journal of ${path}: ${describe(cause)}` }),
        }),
        (journal) =>
          Effect.sync(() => {
            // A journal of a few records is left as it is, for the next process to read and compact with its own:
            // compacting one call's records as `core exec` closed cost a SQLite transaction, the log it makes and
            // the checkpoint that ends it, with their syncs (2-3 ms of a 40 ms command). A longer one goes into
            // SQLite as the store closes; should that fail, the journal keeps it.
            try {
              journal.writing(() => {
                if (journal.pending() && journal.size() >= closeBytes) journal.compact()
              })
            } catch {
              // left in the journal, for the next process to compact
            }
            journal.close()
          }),
      )
      const keyOf = Store.keyOf
      /** Calls this store began and has not yet settled or failed, whose leases it renews. */
      const running = yield* Effect.acquireRelease(
        Effect.sync(() =>
          Lease.renewer<Store.Key>(leaseMs, (keys) =>
            journal.writing(() =>
              journal.append({
                e: "renewed",
                keys: keys.map((key): Journal.Key => [key.location, key.sessionID, key.toolCallID]),
                owner: Owner.current,
                until: Date.now() + leaseMs,
              }),
            ),
          ),
        ),
        (renewer) => Effect.sync(() => renewer.close()),
      )

      // Whether records kept without a Location may still answer: read once, then true only until the last is
      // pruned (none are made any more, by any core that opens this schema). Without them a lookup is one probe.
      let unlocated = statements.unlocated.get() !== null

      /** The row for `key` now: the Location's own, or (while any may be left) one kept without a Location. */
      const current = (key: Store.Key): Journal.Row | undefined =>
        journal.row([key.location, key.sessionID, key.toolCallID]) ??
        (unlocated ? journal.row(["", key.sessionID, key.toolCallID]) : undefined)

      const recordOf = (row: Journal.Row, key: Store.Key): Store.Record =>
        Store.recordOf(
          row,
          // Running here, under a lease still renewed (by another process, or another store in this one), or by a
          // process of this machine that still runs though its lease lapsed (stopped, or its event loop held up).
          (owner) =>
            running.has(keyOf(key)) ||
            (row.lease_until === null
              ? owner !== Owner.current && Owner.isAlive(owner)
              : (row.lease_until > Date.now() && !Owner.isGone(owner)) || Owner.runsHere(owner)),
          path,
        )

      // Compaction: once the journal reaches its size, and once it was left alone for a moment.
      let appended = 0
      let looked = 0
      let idle: ReturnType<typeof setTimeout> | undefined
      const compactIdle = () => {
        idle = undefined
        if (appended !== looked) {
          looked = appended
          idle = setTimeout(compactIdle, idleMs)
          idle.unref?.()
          return
        }
        try {
          journal.writing(() => {
            if (journal.pending()) journal.compact()
          })
        } catch {
          // the journal keeps its records: compacted by the next append past its size, or on close
        }
      }
      yield* Effect.addFinalizer(() => Effect.sync(() => idle !== undefined && clearTimeout(idle)))

      /** When a compaction last failed (epoch ms): the journal keeps its records, and grows until one succeeds. */
      let failedAt = 0
      /**
       * Appends `entry` (inside `journal.writing`), compacting when the journal has grown to its size. The record is
       * kept once appended: a compaction that fails (SQLite busy past its timeout, a full disk) does not fail the
       * operation, and is tried again after COMPACT_RETRY_MS.
       */
      const append = (entry: Journal.Entry) => {
        journal.append(entry)
        appended++
        const now = Date.now()
        if (journal.size() >= compactBytes && now - failedAt >= COMPACT_RETRY_MS) {
          try {
            journal.compact()
          } catch {
            failedAt = now
          }
        } else if (idle === undefined && idleMs !== Number.POSITIVE_INFINITY) {
          looked = appended
          idle = setTimeout(compactIdle, idleMs)
          idle.unref?.()
        }
      }

      /** A new row for `key` (begun, or settled at once), unless one is recorded for it; answers whether it was made. */
      const insert = (
        key: Store.Key,
        details: Store.Details | undefined,
        now: number,
        record: Pick<Journal.Row, "tool" | "agent" | "state" | "owner" | "lease_until" | "settlement" | "settled_at">,
      ): boolean => {
        if (current(key) !== undefined) return false
        if (key.location === "") unlocated = true
        append({
          e: "new",
          row: {
            location: key.location,
            session_id: key.sessionID,
            call_id: key.toolCallID,
            reason: null,
            started_at: details?.startedAt ?? now,
            message_id: details?.messageID ?? null,
            input: details?.input ?? null,
            input_bytes: details?.inputBytes ?? null,
            ...record,
          },
        })
        return true
      }

      /** Settles `row` with `settlement`. */
      const settleRow = (row: Journal.Row, settlement: Settlement.Info) => {
        append({
          e: "settled",
          k: [row.location, row.session_id, row.call_id],
          tool: settlement.tool,
          settlement: JSON.stringify(settlement),
          at: Date.now(),
        })
        return true
      }

      /** `run`, its throw a StoreError naming the store and `operation`. */
      const guarded = <A>(operation: string, run: () => A): A => {
        try {
          return run()
        } catch (cause) {
          throw Store.failed(path, operation, cause)
        }
      }
      const now: Store.Now = {
        lookup: (key) =>
          guarded("lookup", () =>
            journal.reading(() => {
              const row = current(key)
              return row === undefined ? undefined : recordOf(row, key)
            }),
          ),
        begin: (key, tool, agent, details) =>
          guarded("write", () =>
            journal.writing(() => {
              const at = Date.now()
              const begun = insert(key, details, at, {
                tool,
                agent,
                state: "started",
                owner: Owner.current,
                lease_until: at + leaseMs,
                settlement: null,
                settled_at: null,
              })
              if (begun) running.add(keyOf(key), key)
              return begun
            }),
          ),
        settle: (key, settlement, expected) =>
          guarded("write", () =>
            journal.writing(() => {
              if (expected.state === "absent") {
                const at = Date.now()
                return insert(key, expected.details, at, {
                  tool: settlement.tool,
                  agent: expected.agent,
                  state: "settled",
                  owner: null,
                  lease_until: null,
                  settlement: JSON.stringify(settlement),
                  settled_at: at,
                })
              }
              if (expected.state === "owned") running.remove(keyOf(key))
              const row = current(key)
              switch (expected.state) {
                case "owned":
                  return row?.state === "started" && row.owner === Owner.current && settleRow(row, settlement)
                case "abandoned":
                  // Never a call whose lease is still renewed, unless its owner is known gone; nor one whose owner
                  // still runs on this machine, lapsed lease or not.
                  return (
                    row?.state === "started" &&
                    row.owner === expected.owner &&
                    (row.lease_until === null || row.lease_until <= Date.now() || Owner.isGone(expected.owner)) &&
                    !Owner.runsHere(expected.owner) &&
                    settleRow(row, settlement)
                  )
              }
            }),
          ),
        fail: (key, reason) =>
          guarded("write", () =>
            journal.writing(() => {
              running.remove(keyOf(key))
              const row = journal.row([key.location, key.sessionID, key.toolCallID])
              if (row?.state === "started" && row.owner === Owner.current) {
                append({ e: "failed", k: [key.location, key.sessionID, key.toolCallID], reason, at: Date.now() })
              }
            }),
          ),
      }

      return Store.answering(
        Store.Service.of({
            ...Store.effectsOf(now),
          prune: (before, limit, location) =>
            attempt("prune", () =>
              journal.writing(() => {
                // Pruned in SQLite, with everything the journal holds in it first, under a new nonce: every
                // process reads SQLite's rows afresh.
                journal.compact()
                const whose = location ?? null
                // A call whose owner still runs on this machine is waited for, lapsed lease or not: kept too.
                const live = statements.lapsedOwners.all(before).map((row) => row.owner).filter(Owner.stillRuns)
                const removed = statements.prune.run(before, limit, whose, JSON.stringify(live)).changes
                journal.forget()
                if (unlocated && removed > 0) unlocated = statements.unlocated.get() !== null
                return removed < limit ? removed + statements.pruneTodos.run(before, limit - removed, whose).changes : removed
              }),
            ),
          retain: (location, retentionMs) =>
            attempt("write", () => {
              // Read first: a Location opened again with the same setting writes nothing.
              if (statements.retention.get(location)?.retention_ms === retentionMs) return
              if (retentionMs === undefined) statements.release.run(location)
              else statements.retain.run(location, retentionMs)
            }),
          retentions: attempt("lookup", () =>
            new Map(statements.retentions.all().map((row) => [row.location, row.retention_ms] as const)),
          ),
          claimSweep: (now, intervalMs) =>
            attempt("write", () => statements.claimSweep.run(now, now - intervalMs, now).changes === 1),
          list: (filter) =>
            attempt("lookup", () =>
              journal.writing(() => {
                // Listed from SQLite, with everything the journal holds in it first; where that cannot be written
                // (a full disk), with the journal's rows laid over SQLite's instead.
                let merged = false
                if (journal.pending()) {
                  try {
                    journal.compact()
                  } catch {
                    merged = true
                  }
                }
                const since = filter.since ?? 0
                let rows = statements.list.all(filter.location, filter.sessionID ?? null, since, filter.limit)
                if (merged) rows = overlaid(rows, journal.changed(), filter.location, filter.sessionID, since, filter.limit)
                return rows.reverse().map((row) => Store.listedOf(row, (key) => recordOf(row, key)))
              }),
            ),
        }),
        now,
      )
    }),
  )

/** Saved approvals in the same database as the settlements. */
export const approvalsLayer = (
  path: string,
  approvedBy?: string,
): Layer.Layer<Approvals.Service, Store.StoreError> =>
  Layer.effect(
    Approvals.Service,
    Effect.gen(function* () {
      const { statements, attempt } = yield* acquire(path, (db) => ({
        list: db.query<
          { project: string; action: string; pattern: string; saved_at: number; approved_by: string | null },
          [string]
        >(
          "SELECT project, action, pattern, saved_at, approved_by FROM approvals WHERE project = ? " +
            "ORDER BY saved_at, action, pattern",
        ),
        save: db.query<unknown, [string, string, string, number, string]>(
          "INSERT INTO approvals (project, action, pattern, saved_at, approved_by) VALUES (?, ?, ?, ?, ?) " +
            "ON CONFLICT DO NOTHING",
        ),
        resetAll: db.query<unknown, [string]>("DELETE FROM approvals WHERE project = ?"),
        resetAction: db.query<unknown, [string, string]>("DELETE FROM approvals WHERE project = ? AND action = ?"),
        transaction: (run: () => void) => db.transaction(run)(),
      }))
      return Approvals.Service.of({
        list: (project) =>
          attempt("lookup", () =>
            statements.list
              .all(project)
              .map((row) => ({
                project: row.project,
                action: row.action,
                pattern: row.pattern,
                savedAt: row.saved_at,
                ...(row.approved_by === null ? {} : { approvedBy: row.approved_by }),
              })),
          ),
        save: (project, action, patterns) =>
          attempt("write", () =>
            statements.transaction(() => {
              // Who approves is asked of the system only when something is saved: a call needs it rarely.
              approvedBy ??= Approvals.approver()
              for (const pattern of patterns) statements.save.run(project, action, pattern, Date.now(), approvedBy)
            }),
          ),
        reset: (project, action) =>
          attempt("write", () =>
            action === undefined
              ? statements.resetAll.run(project).changes
              : statements.resetAction.run(project, action).changes,
          ),
      })
    }),
  )
