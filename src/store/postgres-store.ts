export * as PostgresStore from "./postgres-store"

// The store of record for a fleet: settlements, intents and saved approvals in one Postgres that every host
// serving the same projects shares (`CORE_STORE_URL=postgres://…`), behind the same interfaces as ./sqlite (the
// same contract tests). The intent is an `INSERT … ON CONFLICT DO NOTHING RETURNING`, so exactly one host begins
// a call; whether a begun call still runs is its lease (./lease), renewed on the database's clock. Through Bun's
// built-in client; `?pgbouncer=true` on the URL turns named prepared statements off, as pgbouncer's transaction
// mode needs. Every statement is one transaction on its own, so a transaction pooler may serve each from any
// server connection: no session state, no session advisory lock, no LISTEN.
//
// The schema lives in the `core` schema, versioned in `core.schema_version` and migrated on start, once, under a
// transaction-scoped advisory lock (which pgbouncer's transaction mode keeps): hosts starting together migrate
// once. Adding a column or table: append one entry to MIGRATIONS, never edit a shipped one.

import type { SQL } from "bun"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Settlement } from "../contract/settlement"
import { Approvals } from "./approvals"
import { Lease } from "./lease"
import { Owner } from "./owner"
import { Project } from "./project"
import { Store } from "./store"
import { Todos } from "./todos"

/** Each entry moves the schema from version `index` to `index + 1`. Never edit one that has shipped. */
const MIGRATIONS: ReadonlyArray<string> = [
  // Times are epoch milliseconds on the database's clock. A settlement is kept as the JSON text core wrote, so a
  // replay is byte for byte what was recorded. Records are never partitioned by time: the unique key must hold
  // across the whole table.
  `CREATE TABLE core.settlements (
     id BIGSERIAL PRIMARY KEY,
     location TEXT NOT NULL,
     session_id TEXT NOT NULL,
     call_id TEXT NOT NULL,
     tool TEXT NOT NULL,
     agent TEXT,
     state TEXT NOT NULL CHECK (state IN ('started', 'failed', 'settled')),
     owner TEXT,
     lease_until BIGINT,
     reason TEXT,
     settlement TEXT,
     started_at BIGINT,
     settled_at BIGINT,
     UNIQUE (session_id, call_id, location)
   );
   CREATE INDEX settlements_by_time ON core.settlements (COALESCE(settled_at, started_at));
   CREATE TABLE core.approvals (
     project TEXT NOT NULL,
     action TEXT NOT NULL,
     pattern TEXT NOT NULL,
     saved_at BIGINT NOT NULL,
     approved_by TEXT,
     PRIMARY KEY (project, action, pattern)
   );
   CREATE TABLE core.sweeps (name TEXT PRIMARY KEY, at BIGINT NOT NULL)`,
  // What operators list (`core log`): the turn that made each call and its input (JSON cut to
  // Store.INPUT_MAX_BYTES; input_bytes is the whole size), listed per Location by time. And each session's todo
  // list in its Location (see ./todos), shared by the hosts serving it.
  `ALTER TABLE core.settlements ADD COLUMN message_id TEXT, ADD COLUMN input TEXT, ADD COLUMN input_bytes BIGINT;
   CREATE INDEX settlements_by_location ON core.settlements (location, (COALESCE(started_at, settled_at)));
   CREATE TABLE core.todos (
     location TEXT NOT NULL,
     session_id TEXT NOT NULL,
     todos TEXT NOT NULL,
     updated_at BIGINT NOT NULL,
     PRIMARY KEY (location, session_id)
   )`,
  // A Location whose own core.json sets `output.retentionDays` keeps its records (and managed outputs) that long,
  // whatever the operator's retention is; the sweep prunes every other Location by the operator's.
  `CREATE TABLE core.retentions (location TEXT PRIMARY KEY, retention_ms BIGINT NOT NULL)`,
]

export const SCHEMA_VERSION = MIGRATIONS.length

/** The advisory lock migrations run under (any constant no other application uses: "core" in ASCII). */
export const MIGRATION_LOCK = 0x636f7265
/** Connections each process keeps at most: a sidecar's calls are short statements, and a fleet's are many. */
const POOL_MAX = 4
const IDLE_TIMEOUT_S = 30
const CONNECT_TIMEOUT_S = 10

/**
 * Now on the database's clock, in epoch milliseconds, rounded down as `Date.now()` is (a cast alone rounds to the
 * nearest: a record made at 1000.6 ms said 1001, after a `Date.now()` of 1000 read once it was made).
 */
const NOW_MS = "floor(extract(epoch from clock_timestamp()) * 1000)::bigint"

/** How far this host's wall clock must move against its monotonic one to be taken for stepped. */
const CLOCK_STEP_MS = 1_000

/**
 * What went wrong, in words: the cause's own, and for a prepared statement a pooler could not keep (SQLSTATE
 * 42P05: pgbouncer in transaction mode hands each statement another server connection) what to put on the URL.
 */
const describe = (cause: unknown): string => {
  const words = Store.describe(cause)
  const { errno } = (cause ?? {}) as { readonly errno?: unknown }
  return errno === "42P05"
    ? `${words} (a pooler in transaction mode, such as pgbouncer, cannot keep prepared statements: add ?pgbouncer=true to the store URL)`
    : words
}

/** Query parameters of a store URL that carry a secret (the client reads a password from the query too). */
const SECRET_PARAMETERS: ReadonlySet<string> = new Set(["password", "sslpassword", "sslkey", "sslcert", "passfile"])

/** The URL without its password (in its user part or its query), for messages. */
export const redact = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    for (const name of [...parsed.searchParams.keys()]) {
      if (SECRET_PARAMETERS.has(name.toLowerCase())) parsed.searchParams.set(name, "***")
    }
    return parsed.toString()
  } catch {
    return "(an unreadable URL)"
  }
}

/**
 * How long one operation on the store may go unanswered before it fails: a pooler, a network path or a database
 * that stops answering (a half-open connection) must not hold a call, or `core exec`, forever.
 */
export const OPERATION_TIMEOUT_MS = 30_000

export interface Options {
  /** How long a call's lease lasts unless renewed; by default `CORE_LEASE_MS` or ./lease's default. */
  readonly leaseMs?: number
  /** How long one operation may go unanswered (OPERATION_TIMEOUT_MS). */
  readonly operationTimeoutMs?: number
  /** Who saves approvals through this store (see Approvals.approver). */
  readonly approvedBy?: string
}

/** The client for a store URL: `pgbouncer=true` (removed from the URL) turns named prepared statements off. */
const clientOf = (url: string) => {
  const parsed = new URL(url)
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new Error(`a store URL starts with postgres:// (got ${parsed.protocol}//)`)
  }
  const pgbouncer = parsed.searchParams.get("pgbouncer")
  // Anything else was taken for false (and removed), and the pooler then refused the prepared statements.
  if (pgbouncer !== null && pgbouncer !== "true" && pgbouncer !== "false") {
    throw new Error(`?pgbouncer=${JSON.stringify(pgbouncer).slice(1, -1).slice(0, 40)} is neither true nor false (true: the URL is a pooler's in transaction mode)`)
  }
  const pooled = pgbouncer === "true"
  parsed.searchParams.delete("pgbouncer")
  // Bun.SQL read when a store is opened: importing it from "bun" would load the Postgres client at every start.
  return new Bun.SQL(parsed.toString(), {
    prepare: !pooled,
    max: POOL_MAX,
    idleTimeout: IDLE_TIMEOUT_S,
    connectionTimeout: CONNECT_TIMEOUT_S,
  })
}

class NewerVersion {
  constructor(readonly found: number) {}
}

/** Opening the store (connecting, and taking the migration lock) took longer than an operation may. */
class OpenTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(
      `it did not answer within ${timeoutMs / 1000} s (another host may hold its schema migration, or a pooler be ` +
        "waiting for a server it cannot reach)",
    )
  }
}

/** Postgres's lock_not_available: a wait for a lock ended by `lock_timeout`. */
const LOCK_NOT_AVAILABLE = "55P03"
/** The first Postgres (14) that can look for a client gone mid-statement, and how often it is asked to look. */
const CONNECTION_CHECK_VERSION = 140_000
const CONNECTION_CHECK_MS = 1_000

/**
 * Brings the schema to SCHEMA_VERSION in one transaction under the migration lock; hosts starting together wait,
 * each at most `waitMs` (on the server too, `lock_timeout`: a connection left waiting on the lock after core gave up
 * held a server slot until the lock was let go). `locked` is told once the lock is held: the migration itself takes
 * what it takes (an index built on a large store).
 */
const migrate = (sql: SQL, waitMs: number, locked: () => void) =>
  sql.begin(async (tx) => {
    await tx.unsafe(`SET LOCAL lock_timeout = ${Math.max(1, Math.ceil(waitMs))}`)
    // A core that stops waiting (a signal) closes its connection, which a server waiting on a lock does not notice
    // until it looks: from Postgres 14 on, it looks every second.
    const [server] = await tx`SELECT current_setting('server_version_num')::int AS version`
    if (Number(server.version) >= CONNECTION_CHECK_VERSION) await tx.unsafe(`SET LOCAL client_connection_check_interval = ${CONNECTION_CHECK_MS}`)
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`
    locked()
    await tx.unsafe(
      "CREATE SCHEMA IF NOT EXISTS core; " +
        "CREATE TABLE IF NOT EXISTS core.schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    const [row] = await tx`SELECT COALESCE(max(version), 0)::int AS version FROM core.schema_version`
    const version = Number(row.version)
    if (version > SCHEMA_VERSION) throw new NewerVersion(version)
    for (let index = version; index < SCHEMA_VERSION; index++) {
      await tx.unsafe(MIGRATIONS[index]!)
      await tx`INSERT INTO core.schema_version (version) VALUES (${index + 1})`
    }
  })

/** An operation on the store: `gaveUp` says, once its statement answers, whether its caller had stopped waiting. */
type Attempt = <A>(operation: string, run: (gaveUp: () => boolean) => Promise<A>) => Effect.Effect<A, Store.StoreError>

/**
 * How long a write the connection failed waits before it is sent again: each entry once, then the last, again and
 * again for as long as its caller waits (the operation's timeout). A server restarting takes seconds; pgbouncer
 * refuses logins for its `server_login_retry` (15 s by default) after losing the server: three tries within 1.3 s
 * lost the settlement of every call that ended meanwhile.
 */
const RETRY_DELAYS_MS = [50, 250, 1_000]

/**
 * Whether `cause` is the connection's rather than the statement's: the connection closed or reset, or the pooler or
 * server refusing it for a moment (SQLSTATE class 08, as pgbouncer's `server_login_retry`; 57P01-03, a server
 * shutting down or starting).
 */
const transient = (cause: unknown): boolean => {
  const { code, errno } = (cause ?? {}) as { readonly code?: unknown; readonly errno?: unknown }
  if (typeof code === "string" && code.startsWith("ERR_POSTGRES_CONNECTION")) return true
  return typeof errno === "string" && (errno.startsWith("08") || errno === "57P01" || errno === "57P02" || errno === "57P03")
}

/**
 * `write` sent again after a failure of its connection (RETRY_DELAYS_MS), until its caller gives up: for a write
 * that changes a row only as it expects to find it (a call's end, by its owner), so that sent twice it changes it
 * once. A call that ran then has its end recorded despite a blip of the pooler or a restart of the server, rather
 * than being replayed `interrupted`.
 */
const resent = async <A>(write: () => Promise<A>, gaveUp: () => boolean): Promise<A> => {
  for (let tries = 0; ; tries++) {
    try {
      return await write()
    } catch (cause) {
      if (!transient(cause) || gaveUp()) throw cause
      await Bun.sleep(RETRY_DELAYS_MS[Math.min(tries, RETRY_DELAYS_MS.length - 1)]!)
      if (gaveUp()) throw cause
    }
  }
}

/**
 * Opens the store at `url` for the life of the scope, migrating its schema: its client, and how an operation runs.
 * An operation fails as a StoreError naming the store and the operation, and so does one without an answer within
 * `timeoutMs`: then the client is replaced by a new one and the old one closed, whose connections a statement that
 * never answers (a stopped pooler, a half-open connection) would otherwise hold for good, until none was left. The
 * statement may still take effect (a retry then finds what it did); `gaveUp` tells it so. `sql` is always the
 * client of the moment.
 */
const acquire = (url: string, timeoutMs: number) =>
  Effect.map(
    Effect.acquireRelease(
      // Interruptible, and within `timeoutMs`: a store held by another host's migration (its lock), or a pooler
      // waiting for a server, held every core opening it, and a signal waited with them.
      Effect.interruptible(
        Effect.tryPromise({
          try: async (signal) => {
            const sql = clientOf(url)
            const close = () => void sql.close({ timeout: 0 }).catch(() => undefined)
            signal.addEventListener("abort", close, { once: true })
            let timer: ReturnType<typeof setTimeout> | undefined
            let locked = false
            try {
              // Connecting and the migration lock within `timeoutMs`; the migration, once it holds the lock, as long
              // as it takes.
              await Promise.race([
                migrate(sql, timeoutMs, () => {
                  locked = true
                  clearTimeout(timer)
                }),
                new Promise<never>((_, reject) => {
                  timer = setTimeout(() => {
                    if (!locked) reject(new OpenTimeout(timeoutMs))
                  }, timeoutMs)
                }),
              ])
              return { current: sql }
            } catch (cause) {
              close()
              throw (cause as { readonly errno?: unknown } | undefined)?.errno === LOCK_NOT_AVAILABLE ? new OpenTimeout(timeoutMs) : cause
            } finally {
              clearTimeout(timer)
              signal.removeEventListener("abort", close)
            }
          },
          catch: (cause) =>
            cause instanceof NewerVersion
              ? new Store.StoreError({
                  reason: "newer_version",
                  path: redact(url),
                  message:
                    `The store at ${redact(url)} has schema version ${cause.found}, newer than this core understands ` +
                    `(${SCHEMA_VERSION}). Upgrade core on this host; the database was left untouched.`,
                })
              : new Store.StoreError({
                  reason: "open",
                  path: redact(url),
                  message: `Could not open the store at ${redact(url)}: ${describe(cause)}`,
                }),
        }),
      ),
      (client) => Effect.promise(() => client.current.close({ timeout: 5 }).catch(() => undefined)),
    ),
    (client) => {
      /**
       * Replaces a client whose connections may be held by statements that will never answer: new statements go to a
       * new one. The statements already sent on the old one keep their time (an operation's timeout) to answer, as
       * they would have: a pooler or database held up for a while answers them once it is back, and a call's
       * settlement is then recorded rather than cut off (and the call recorded failed, replayed `interrupted`).
       */
      const recycle = (stale: SQL) => {
        if (client.current !== stale) return
        client.current = clientOf(url)
        void stale.close({ timeout: Math.ceil(timeoutMs / 1000) }).catch(() => undefined)
      }
      // The client of the moment, as a tagged template and with its members (`sql.unsafe`, `sql.begin`).
      const sql = new Proxy(client.current, {
        apply: (_target, self, args) => Reflect.apply(client.current, self, args),
        get: (_target, name) => {
          const member = Reflect.get(client.current, name) as unknown
          return typeof member === "function" ? member.bind(client.current) : member
        },
      }) as SQL
      const attempt: Attempt = (operation, run) =>
        Effect.suspend(() => {
          const using = client.current
          let waiting = true
          return Effect.tryPromise({ try: () => run(() => !waiting), catch: (cause) => Store.failed(redact(url), operation, describe(cause)) }).pipe(
            Effect.timeoutOrElse({
              duration: timeoutMs,
              orElse: () =>
                Effect.suspend(() => {
                  waiting = false
                  recycle(using)
                  return Effect.fail(Store.failed(redact(url), operation, new Error(`no answer within ${timeoutMs / 1000} s`)))
                }),
            }),
          )
        })
      return { sql, attempt, recycle: () => recycle(client.current) }
    },
  )

type Row = Store.RecordRow & { live: boolean | null }

type ListedRow = Row & Store.ListedRow

/** The store of record at `url` (`CORE_STORE_URL`). */
export const layer = (url: string, options: Options = {}): Layer.Layer<Store.Service, Store.StoreError> =>
  Layer.effect(
    Store.Service,
    Effect.gen(function* () {
      const leaseMs = yield* Effect.try({
        try: () => options.leaseMs ?? Lease.durationMs(),
        catch: (cause) => new Store.StoreError({ reason: "open", path: redact(url), message: describe(cause) }),
      })
      const timeoutMs = options.operationTimeoutMs ?? OPERATION_TIMEOUT_MS
      const { sql, attempt, recycle } = yield* acquire(url, timeoutMs)
      /**
       * The database's clock less this host's (ms), read as the store opens: when a call started (a time this host
       * gave) is kept on the database's clock, and listed back on this host's, so hosts' clocks never order or
       * filter the calls the fleet lists, nor make a call's duration. Kept true when this host's clock is stepped
       * later (NTP, a resumed VM), as its wall clock moves against its monotonic one. Read against this host's clock
       * before the database's: never less than the true difference, so a time the database gave is never listed
       * after this host's clock has passed it (a prune up to Date.now() takes it).
       */
      let ahead = yield* attempt("open", async () => {
        const before = Date.now()
        const rows: Array<{ now: string }> = await sql`SELECT ${sql.unsafe(NOW_MS)} AS now`
        return Number(rows[0]!.now) - before
      })
      let wallOverMonotonic = Date.now() - performance.now()
      const offset = () => {
        const now = Date.now() - performance.now()
        // A millisecond clock read against a finer one wobbles: only a step (a second or more) is taken for one.
        if (Math.abs(now - wallOverMonotonic) >= CLOCK_STEP_MS) {
          ahead -= now - wallOverMonotonic
          wallOverMonotonic = now
        }
        return ahead
      }
      /** A time of this host's clock on the database's; undefined stays so. */
      const onDatabase = (at: number | undefined) => (at === undefined ? null : at + offset())
      /** A time of the database's clock (a column) on this host's. */
      const onHost = (at: string | number | null) => (at === null ? null : Number(at) - offset())
      const keyOf = Store.keyOf
      /**
       * Calls whose intent this process failed to record, by key: the statement may have taken effect after all
       * (it answered too late, or its connection was closed under it), leaving a call started by this process that
       * it does not run. Such a call is running only while that intent's lease lasts, then abandoned.
       */
      const unbegun = new Set<string>()
      /** The records (by id) of calls this process began and has not settled: their leases are renewed together. */
      const running = yield* Effect.acquireRelease(
        Effect.sync(() =>
          Lease.renewer<string>(
            leaseMs,
            (ids) =>
              sql`UPDATE core.settlements SET lease_until = ${sql.unsafe(NOW_MS)} + ${leaseMs}
                  WHERE id = ANY(${`{${ids.join(",")}}`}::bigint[]) AND state = 'started' AND owner = ${Owner.current}`,
            // A renewal that never answered holds a connection: the client is replaced.
            (cause) => {
              if (cause instanceof Lease.RenewalTimeout) recycle()
            },
          ),
        ),
        (renewer) => Effect.sync(() => renewer.close()),
      )
      const changed = (result: { count: number }) => result.count === 1
      const recordOf = (row: Row, key: Store.Key): Store.Record =>
        Store.recordOf(
          row,
          // Running here, under a lease still renewed (by another process, or another store in this one), or by a
          // process of this machine that still runs though its lease lapsed (stopped, or its event loop held up).
          (owner) =>
            running.has(keyOf(key)) ||
            (unbegun.has(keyOf(key)) && owner === Owner.current
              ? row.live === true
              : (row.live === true && !Owner.isGone(owner)) || Owner.runsHere(owner)),
          redact(url),
        )

      /**
       * Settles the recorded call `key` if it is still started by `owner`, unless its lease is still renewed
       * (`anyLease`: whatever its lease). A settled record's tool is its settlement's.
       */
      const settleRecorded = async (
        key: Store.Key,
        settlement: Settlement.Info,
        owner: string,
        anyLease: boolean,
      ) =>
        changed(
          await sql`
            UPDATE core.settlements
            SET state = 'settled', tool = ${settlement.tool}, settlement = ${JSON.stringify(settlement)},
                settled_at = ${sql.unsafe(NOW_MS)}, lease_until = NULL
            WHERE session_id = ${key.sessionID} AND call_id = ${key.toolCallID} AND location = ${key.location}
              AND state = 'started' AND owner = ${owner}
              AND (${anyLease} OR lease_until <= ${sql.unsafe(NOW_MS)})`,
        )

      return Store.Service.of({
        // Read again after a failure of its connection, as a write's end is sent again: a host waiting for a call
        // another runs looks it up until it ends, and a restart of the server ended that wait (`core exec` exit 3).
        lookup: (key) =>
          attempt("lookup", (gaveUp) =>
            resent(async (): Promise<Store.Record | undefined> => {
              const rows: Array<Row> = await sql`
                SELECT state, tool, agent, owner, reason, settlement, lease_until > ${sql.unsafe(NOW_MS)} AS live
                FROM core.settlements WHERE session_id = ${key.sessionID} AND call_id = ${key.toolCallID} AND location = ${key.location}`
              const row = rows[0]
              return row === undefined ? undefined : recordOf(row, key)
            }, gaveUp),
          ),
        begin: (key, tool, agent, details) =>
          attempt("write", async (gaveUp) => {
            const rows = await sql`
              INSERT INTO core.settlements
                (location, session_id, call_id, tool, agent, state, owner, started_at, lease_until, message_id, input, input_bytes)
              VALUES (${key.location}, ${key.sessionID}, ${key.toolCallID}, ${tool}, ${agent}, 'started', ${Owner.current},
                      COALESCE(${onDatabase(details?.startedAt)}::bigint, ${sql.unsafe(NOW_MS)}), ${sql.unsafe(NOW_MS)} + ${leaseMs},
                      ${details?.messageID ?? null},
                      ${details?.input ?? null}, ${details?.inputBytes ?? null})
              ON CONFLICT DO NOTHING RETURNING id`
            // Too late: its caller was told it failed, and runs nothing. Recorded so at once: a waiter on this machine
            // would otherwise wait for as long as this process lives (it runs here), whatever its lease says.
            if (gaveUp()) {
              if (rows.length === 1) {
                await sql`
                  UPDATE core.settlements
                  SET state = 'failed', reason = 'its intent was recorded after core had given up on it: nothing ran',
                      settled_at = ${sql.unsafe(NOW_MS)}, lease_until = NULL
                  WHERE id = ${rows[0].id} AND state = 'started' AND owner = ${Owner.current}`.catch(() => undefined)
              }
              return false
            }
            if (rows.length !== 1) return false
            running.add(keyOf(key), String(rows[0].id))
            unbegun.delete(keyOf(key))
            return true
          }).pipe(Effect.tapError(() => Effect.sync(() => unbegun.add(keyOf(key))))),
        settle: (key, settlement, expected) =>
          attempt("write", async (gaveUp) => {
            const { location, sessionID, toolCallID } = key
            switch (expected.state) {
              case "absent": {
                const details = expected.details
                const json = JSON.stringify(settlement)
                return changed(
                  await sql`
                    INSERT INTO core.settlements
                      (location, session_id, call_id, tool, agent, state, settlement, settled_at, started_at, message_id, input, input_bytes)
                    VALUES (${location}, ${sessionID}, ${toolCallID}, ${settlement.tool}, ${expected.agent}, 'settled', ${json},
                            ${sql.unsafe(NOW_MS)}, COALESCE(${onDatabase(details?.startedAt)}::bigint, ${sql.unsafe(NOW_MS)}),
                            ${details?.messageID ?? null},
                            ${details?.input ?? null}, ${details?.inputBytes ?? null})
                    ON CONFLICT DO NOTHING`,
                )
              }
              case "owned":
                running.remove(keyOf(key))
                return resent(() => settleRecorded(key, settlement, Owner.current, true), gaveUp)
              case "abandoned":
                // Never a call whose lease is still renewed: its owner is running it (unless it is known gone:
                // on this kernel and PID namespace, its process no longer runs). Nor one whose owner still runs on
                // this machine, lapsed lease or not.
                if (Owner.runsHere(expected.owner) && !(expected.owner === Owner.current && unbegun.has(keyOf(key)))) return false
                return settleRecorded(key, settlement, expected.owner, Owner.isGone(expected.owner))
            }
          }),
        fail: (key, reason) =>
          attempt("write", async (gaveUp) => {
            running.remove(keyOf(key))
            await resent(
              () => sql`
                UPDATE core.settlements SET state = 'failed', reason = ${reason}, settled_at = ${sql.unsafe(NOW_MS)}, lease_until = NULL
                WHERE session_id = ${key.sessionID} AND call_id = ${key.toolCallID} AND location = ${key.location}
                  AND state = 'started' AND owner = ${Owner.current}`,
              gaveUp,
            )
          }),
        prune: (before, limit, location) =>
          attempt("prune", async () => {
            // The cutoff is this host's (its clock less the retention): moved onto the database's clock, which stamps
            // every row, by the difference times are listed back by, so a host whose clock runs ahead removes no record
            // still within the retention, and a prune removes exactly the records listed before its cutoff, however
            // long the statement waits. A call still running (its lease live on that clock) is never forgotten: a
            // retry would run it a second time.
            const cutoff = Math.trunc(onDatabase(before)!)
            // One Location's rows, or (none given) those of every Location keeping no retention of its own.
            const given = location ?? null
            // A call whose owner still runs on this machine is waited for here, lapsed lease or not: kept too (an
            // owner on another machine only its lease tells of).
            const lapsed: Array<{ owner: string }> = await sql`
              SELECT DISTINCT owner FROM core.settlements WHERE COALESCE(settled_at, started_at) < ${cutoff} AND state = 'started'
                AND COALESCE(lease_until, 0) < LEAST(${cutoff}, ${sql.unsafe(NOW_MS)}) AND owner IS NOT NULL`
            const live = lapsed.map((row) => row.owner).filter(Owner.stillRuns)
            const result = await sql`
              DELETE FROM core.settlements WHERE id IN
                (SELECT id FROM core.settlements WHERE COALESCE(settled_at, started_at) < ${cutoff}
                   AND (state <> 'started' OR (COALESCE(lease_until, 0) < LEAST(${cutoff}, ${sql.unsafe(NOW_MS)})
                     AND (owner IS NULL OR owner NOT IN (SELECT jsonb_array_elements_text(${JSON.stringify(live)}::text::jsonb)))))
                   AND CASE WHEN ${given}::text IS NULL
                     THEN NOT EXISTS (SELECT 1 FROM core.retentions r WHERE r.location = core.settlements.location)
                     ELSE core.settlements.location = ${given}::text END
                 LIMIT ${limit})`
            if (result.count >= limit) return result.count
            // Todo lists not written since the cutoff go with the calls of their time, also in batches.
            const todos = await sql`
              DELETE FROM core.todos WHERE (location, session_id) IN
                (SELECT location, session_id FROM core.todos WHERE updated_at < ${cutoff}
                   AND CASE WHEN ${given}::text IS NULL
                     THEN NOT EXISTS (SELECT 1 FROM core.retentions r WHERE r.location = core.todos.location)
                     ELSE core.todos.location = ${given}::text END
                 LIMIT ${limit - result.count})`
            return result.count + todos.count
          }),
        retain: (location, retentionMs) =>
          attempt("write", async () => {
            // Read first: a Location opened again with the same setting writes nothing.
            const [row]: Array<{ retention_ms: string }> =
              await sql`SELECT retention_ms FROM core.retentions WHERE location = ${location}`
            if ((row === undefined ? undefined : Number(row.retention_ms)) === retentionMs) return
            if (retentionMs === undefined) await sql`DELETE FROM core.retentions WHERE location = ${location}`
            else {
              await sql`
                INSERT INTO core.retentions (location, retention_ms) VALUES (${location}, ${retentionMs})
                ON CONFLICT (location) DO UPDATE SET retention_ms = excluded.retention_ms`
            }
          }),
        retentions: attempt("lookup", async () => {
          const rows: Array<{ location: string; retention_ms: string }> =
            await sql`SELECT location, retention_ms FROM core.retentions`
          return new Map(rows.map((row) => [row.location, Number(row.retention_ms)] as const))
        }),
        claimSweep: (now, intervalMs) =>
          attempt("write", async () =>
            changed(
              await sql`
                INSERT INTO core.sweeps (name, at) VALUES ('retention', ${now})
                ON CONFLICT (name) DO UPDATE SET at = excluded.at
                WHERE core.sweeps.at <= ${now - intervalMs} OR core.sweeps.at > ${now}`,
            ),
          ),
        list: (filter) =>
          attempt("lookup", async () => {
            // The newest of the Location's calls through its time index, returned oldest first.
            const rows: Array<ListedRow> = await sql`
              SELECT location, session_id, call_id, tool, agent, state, owner, reason, settlement,
                     lease_until > ${sql.unsafe(NOW_MS)} AS live, message_id, input, input_bytes, started_at, settled_at
              FROM core.settlements
              WHERE location = ${filter.location} AND location <> ''
                AND (${filter.sessionID ?? null}::text IS NULL OR session_id = ${filter.sessionID ?? null})
                AND COALESCE(started_at, settled_at) >= ${onDatabase(filter.since ?? 0)}
              ORDER BY COALESCE(started_at, settled_at) DESC, id DESC LIMIT ${filter.limit}`
            return rows
              .reverse()
              .map((row) =>
                Store.listedOf({ ...row, started_at: onHost(row.started_at), settled_at: onHost(row.settled_at) }, (key) => recordOf(row, key)),
              )
          }),
      })
    }),
  )

/** Saved approvals in the same database: shared by every host serving the project (see Approvals.projectOf). */
export const approvalsLayer = (url: string, options: Options = {}): Layer.Layer<Approvals.Service, Store.StoreError> =>
  Layer.effect(
    Approvals.Service,
    Effect.gen(function* () {
      const timeoutMs = options.operationTimeoutMs ?? OPERATION_TIMEOUT_MS
      const { sql, attempt } = yield* acquire(url, timeoutMs)
      const approvedBy = options.approvedBy ?? Approvals.approver()
      // A project is asked for by its Location's real path and kept under its identity across machines.
      const identities = new Map<string, string>()
      const identityOf = (directory: string) => {
        let identity = identities.get(directory)
        if (identity === undefined) identities.set(directory, (identity = Project.identityOf(directory)))
        return identity
      }
      return Approvals.Service.of({
        list: (directory) =>
          attempt("lookup", async () => {
            const project = identityOf(directory)
            const rows: Array<{ project: string; action: string; pattern: string; saved_at: string; approved_by: string | null }> =
              await sql`SELECT project, action, pattern, saved_at, approved_by FROM core.approvals
                        WHERE project = ${project} ORDER BY saved_at, action, pattern`
            return rows.map((row) => ({
              project: row.project,
              action: row.action,
              pattern: row.pattern,
              savedAt: Number(row.saved_at),
              ...(row.approved_by === null ? {} : { approvedBy: row.approved_by }),
            }))
          }),
        save: (directory, action, patterns) =>
          attempt("write", async () => {
            const project = identityOf(directory)
            if (patterns.length === 0) return
            // One statement: a pooler may serve it from any connection.
            await sql`
              INSERT INTO core.approvals (project, action, pattern, saved_at, approved_by)
              SELECT ${project}, ${action}, pattern, ${sql.unsafe(NOW_MS)}, ${approvedBy}
              FROM jsonb_array_elements_text(CAST(${JSON.stringify(patterns)}::text AS jsonb)) AS pattern
              ON CONFLICT DO NOTHING`
          }),
        reset: (directory, action) =>
          attempt("write", async () => {
            const project = identityOf(directory)
            const result =
              action === undefined
                ? await sql`DELETE FROM core.approvals WHERE project = ${project}`
                : await sql`DELETE FROM core.approvals WHERE project = ${project} AND action = ${action}`
            return result.count
          }),
      })
    }),
  )

/** Each session's todo list in the same database, shared by every host serving its Location (see ./todos). */
export const todosLayer = (url: string): Layer.Layer<Todos.Service, Store.StoreError> =>
  Layer.effect(
    Todos.Service,
    Effect.gen(function* () {
      const { sql, attempt } = yield* acquire(url, OPERATION_TIMEOUT_MS)
      return Todos.Service.of({
        read: (key) =>
          attempt("lookup", async () => {
            const rows: Array<{ todos: string }> = await sql`
              SELECT todos FROM core.todos WHERE location = ${key.location} AND session_id = ${key.sessionID}`
            return rows[0] === undefined ? [] : Todos.decodeItems(rows[0].todos)
          }),
        write: (key, items) =>
          attempt("write", async () => {
            await sql`
              INSERT INTO core.todos (location, session_id, todos, updated_at)
              VALUES (${key.location}, ${key.sessionID}, ${JSON.stringify(items)}, ${sql.unsafe(NOW_MS)})
              ON CONFLICT (location, session_id) DO UPDATE SET todos = excluded.todos, updated_at = excluded.updated_at`
          }),
      })
    }),
  )
