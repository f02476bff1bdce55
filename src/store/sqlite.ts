export * as SqliteStore from "./sqlite"

// The durable settlement store on bun:sqlite (WAL, synchronous=NORMAL). The schema is versioned with
// `PRAGMA user_version` and forward-only migrations; a corrupt file or one written by a newer core is reported,
// never replaced. This module is the platform edge for SQLite and holds no settlement logic.

import { Database } from "bun:sqlite"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { Settlement } from "../settlement/settlement"
import { Owner } from "./owner"
import { Store } from "./store"

/** Each entry moves the schema from version `index` to `index + 1`. Never edit one that has shipped. */
const MIGRATIONS: ReadonlyArray<string> = [
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
]

export const SCHEMA_VERSION = MIGRATIONS.length

const decodeSettlement = Schema.decodeUnknownSync(Schema.fromJsonString(Settlement.Info))

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const open = (path: string): Database => {
  mkdirSync(dirname(path), { recursive: true })
  const db = new Database(path, { create: true, strict: true })
  try {
    db.exec("PRAGMA busy_timeout = 5000")
    db.exec("PRAGMA journal_mode = WAL")
    db.exec("PRAGMA synchronous = NORMAL")
    migrate(db)
    return db
  } catch (cause) {
    db.close()
    throw cause
  }
}

class NewerVersion {
  constructor(readonly found: number) {}
}

const migrate = (db: Database) => {
  const { user_version: version } = db.query("PRAGMA user_version").get() as { user_version: number }
  if (version > SCHEMA_VERSION) throw new NewerVersion(version)
  if (version === SCHEMA_VERSION) return
  db.transaction(() => {
    for (let index = version; index < SCHEMA_VERSION; index++) db.exec(MIGRATIONS[index]!)
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`)
  })()
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
  if (/not a database|malformed|SQLITE_NOTADB|SQLITE_CORRUPT/i.test(message)) {
    return new Store.StoreError({
      reason: "corrupt",
      path,
      message: `The settlement store ${path} is corrupt (${message}). It was left untouched: move it aside to start afresh.`,
    })
  }
  return new Store.StoreError({ reason: "open", path, message: `Could not open the settlement store ${path}: ${message}` })
}

type Row = {
  state: "started" | "failed" | "settled"
  tool: string
  owner: string | null
  reason: string | null
  settlement: string | null
}

/** The statements the store runs, prepared once; preparing also checks the schema is the one expected. */
const prepare = (db: Database) => ({
  select: db.query<Row, [string, string]>(
    "SELECT state, tool, owner, reason, settlement FROM settlements WHERE session_id = ? AND call_id = ?",
  ),
  insert: db.query(
    "INSERT INTO settlements (session_id, call_id, tool, state, owner, started_at) " +
      "VALUES (?, ?, ?, 'started', ?, ?) ON CONFLICT DO NOTHING",
  ),
  // The first settlement of a call is final: a later one never overwrites it.
  upsert: db.query(
    "INSERT INTO settlements (session_id, call_id, tool, state, settlement, settled_at) " +
      "VALUES (?, ?, ?, 'settled', ?, ?) ON CONFLICT (session_id, call_id) DO UPDATE SET " +
      "state = 'settled', settlement = excluded.settlement, settled_at = excluded.settled_at " +
      "WHERE settlements.state != 'settled'",
  ),
  markFailed: db.query(
    "UPDATE settlements SET state = 'failed', reason = ?, settled_at = ? " +
      "WHERE session_id = ? AND call_id = ? AND state = 'started'",
  ),
})

/** The durable store at `path` (usually `<data dir>/core.db`). */
export const layer = (path: string): Layer.Layer<Store.Service, Store.StoreError> =>
  Layer.effect(
    Store.Service,
    Effect.gen(function* () {
      const db = yield* Effect.acquireRelease(
        Effect.try({ try: () => open(path), catch: (cause) => openError(path, cause) }),
        (db) => Effect.sync(() => db.close()),
      )
      const { select, insert, upsert, markFailed } = yield* Effect.try({
        try: () => prepare(db),
        catch: (cause) =>
          new Store.StoreError({
            reason: "corrupt",
            path,
            message: `The settlement store ${path} does not have the expected tables (${describe(cause)}). It was left untouched: move it aside to start afresh.`,
          }),
      })
      const io = (operation: string) => (cause: unknown) =>
        new Store.StoreError({ reason: "io", path, message: `Settlement store ${operation} failed: ${describe(cause)}` })

      return Store.Service.of({
        lookup: (key) =>
          Effect.try({
            try: (): Store.Record | undefined => {
              const row = select.get(key.sessionID, key.toolCallID)
              if (row === null) return undefined
              if (row.state === "settled" && row.settlement !== null) {
                return { state: "settled", settlement: decodeSettlement(row.settlement) }
              }
              if (row.state === "failed") return { state: "failed", tool: row.tool, reason: row.reason ?? "" }
              return { state: "started", tool: row.tool, owner: row.owner ?? "" }
            },
            catch: io("lookup"),
          }),
        begin: (key, tool) =>
          Effect.try({
            try: () => insert.run(key.sessionID, key.toolCallID, tool, Owner.current, Date.now()).changes === 1,
            catch: io("write"),
          }),
        complete: (key, settlement) =>
          Effect.try({
            try: () => {
              upsert.run(key.sessionID, key.toolCallID, settlement.tool, JSON.stringify(settlement), Date.now())
            },
            catch: io("write"),
          }),
        fail: (key, reason) =>
          Effect.try({
            try: () => {
              markFailed.run(reason, Date.now(), key.sessionID, key.toolCallID)
            },
            catch: io("write"),
          }),
      })
    }),
  )
