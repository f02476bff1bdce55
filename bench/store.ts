// The durable store at 200,000 settlements: file size, lookup time (raw SQL and through the store service), the
// retention sweep (a due sweep with nothing expired, and working through an expired backlog in batches: the
// longest batch is how long the store and event loop are held), and `core exec` of the compiled binary in a data
// directory holding that store against an empty one. The old layout (settlements WITHOUT ROWID, no time index) is
// measured beside it, filled with the same rows.

import { Database } from "bun:sqlite"
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Retention } from "../src/host/retention"
import { ManagedOutputs } from "../src/output/managed-outputs"
import { SqliteStore } from "../src/store/sqlite-store"
import { Store } from "../src/store/store"
import { buildCore, cleanup, ECHO_TOOL, duration, main, megabytes, progress, ratio, type Report, summarize } from "./measure"

const ROWS = 200_000
/** The Location every benchmarked call belongs to. */
const LOCATION = "/bench/location"
const LOOKUPS = 20_000
const EXEC_RUNS = 15
const DAY_MS = 86_400_000
const TARGETS = { fileBytes: 300e6, lookupMs: 0.02, execRatio: 1.1 }

/** Ids as hosts make them (random, so inserts land all over a key-ordered tree), reproducible from the index. */
const sessionOf = (index: number): string => `ses_${Bun.hash(`session ${Math.floor(index / 50)}`).toString(16)}`
const callOf = (index: number): string => `call_${Bun.hash(`call ${index}`).toString(16)}`

/** A settlement of about 1 KB, as a bash call's would be. */
const settlementJson = (index: number): string =>
  JSON.stringify({
    tool: "bash",
    callID: `call_${index}`,
    status: "success",
    content: [{ type: "text", text: `${"total 48\ndrwxr-xr-x  6 user user 4096 src\n".repeat(9)}Exit code 0` }],
    structured: { exitCode: 0, signal: null, timedOut: false, stdout: "x".repeat(300), stderr: "", durationMs: 12 },
    outputs: [],
  })

const OLD_SCHEMA = `CREATE TABLE settlements (
  session_id TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('started', 'failed', 'settled')),
  owner TEXT, reason TEXT, settlement TEXT, started_at INTEGER, settled_at INTEGER,
  PRIMARY KEY (session_id, call_id)
) WITHOUT ROWID`

/** Fills `db` with ROWS settled calls over the last six days (`expiredShare` of them older than the retention). */
const fill = (db: Database, expiredShare = 0, located = true) => {
  const insert = db.query(
    located
      ? `INSERT INTO settlements (location, session_id, call_id, tool, state, settlement, started_at, settled_at) ` +
          `VALUES ('${LOCATION}', ?, ?, 'bash', 'settled', ?, ?, ?)`
      : "INSERT INTO settlements (session_id, call_id, tool, state, settlement, started_at, settled_at) " +
          "VALUES (?, ?, 'bash', 'settled', ?, ?, ?)",
  )
  const now = Date.now()
  const expired = Math.floor(ROWS * expiredShare)
  db.transaction(() => {
    for (let index = 0; index < ROWS; index++) {
      const at = index < expired ? now - 9 * DAY_MS + index : now - 6 * DAY_MS + Math.floor((index / ROWS) * 6 * DAY_MS)
      insert.run(sessionOf(index), callOf(index), settlementJson(index), at, at)
    }
  })()
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
}

const fileBytes = (path: string): number => {
  let bytes = statSync(path).size
  for (const suffix of ["-wal", "-shm"]) {
    try {
      bytes += statSync(path + suffix).size
    } catch {
      // no such file
    }
  }
  return bytes
}

/** Microbenchmark: median per-call time over `rounds` rounds of `count` calls. */
const perCall = (count: number, call: (index: number) => void, rounds = 5) => {
  const samples: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    const started = performance.now()
    for (let index = 0; index < count; index++) call((index * 7919 + round * 104_729) % ROWS)
    samples.push((performance.now() - started) / count)
  }
  return summarize(samples)
}

const rawLookup = (db: Database) => {
  const select = db.query<{ settlement: string }, [string, string]>(
    "SELECT state, tool, owner, reason, settlement FROM settlements WHERE session_id = ? AND call_id = ?",
  )
  return perCall(LOOKUPS, (index) => {
    if (select.get(sessionOf(index), callOf(index)) === null) throw new Error("missing row")
  })
}

const time = async (argv: ReadonlyArray<string>, env: Record<string, string | undefined>): Promise<number> => {
  const started = performance.now()
  const child = Bun.spawn([...argv], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" })
  const code = await child.exited
  const elapsed = performance.now() - started
  if (code !== 0) throw new Error(`${argv.join(" ")}: exit ${code}\n${await new Response(child.stderr).text()}`)
  return elapsed
}

export const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-store-"))
  try {
    progress(`store: filling the current layout with ${ROWS.toLocaleString("en-US")} settlements`)
    const fullData = join(root, "full")
    const path = join(fullData, "core.db")
    await Effect.runPromise(Effect.scoped(Layer.build(SqliteStore.layer(path))))
    const db = new Database(path)
    fill(db)
    const newBytes = fileBytes(path)
    const newRaw = rawLookup(db)
    db.close()

    progress("store: filling the old layout (WITHOUT ROWID) with the same rows")
    const oldPath = join(root, "old.db")
    const old = new Database(oldPath, { create: true })
    old.exec("PRAGMA journal_mode = WAL")
    old.exec("PRAGMA synchronous = NORMAL")
    old.exec(OLD_SCHEMA)
    fill(old, 0, false)
    const oldBytes = fileBytes(oldPath)
    const oldRaw = rawLookup(old)
    const oldPruneStarted = performance.now()
    old.query("DELETE FROM settlements WHERE COALESCE(settled_at, started_at) < ?").run(Date.now() - 7 * DAY_MS)
    const oldPrune = performance.now() - oldPruneStarted
    old.close()

    progress("store: lookups through the store service, and the retention sweep")
    const outputs = ManagedOutputs.layer({ directory: join(fullData, "outputs") })
    const service = await Effect.runPromise(
      Effect.gen(function* () {
        const store = yield* Store.Service
        const managed = yield* ManagedOutputs.Service
        const lookup = perCall(LOOKUPS, (index) => {
          const record = Effect.runSync(store.lookup({ location: LOCATION, sessionID: sessionOf(index), toolCallID: callOf(index) }))
          if (record?.state !== "settled") throw new Error("missing record")
        })
        // A replay usually asks for a call made moments before: the most recent thousand, again and again.
        const recent = perCall(LOOKUPS, (index) => {
          const call = ROWS - 1 - (index % 1000)
          const key = { location: LOCATION, sessionID: sessionOf(call), toolCallID: callOf(call) }
          if (Effect.runSync(store.lookup(key))?.state !== "settled") throw new Error("missing record")
        })
        const sweeps: Array<number> = []
        for (let run = 0; run < 20; run++) {
          const started = performance.now()
          yield* Retention.sweep(store, managed)
          sweeps.push(performance.now() - started)
        }
        return { lookup, recent, sweep: summarize(sweeps) }
      }).pipe(Effect.scoped, Effect.provide(Layer.merge(SqliteStore.layer(path), outputs))),
    )

    progress("store: a sweep through an expired backlog (10% of the rows), batch by batch")
    const backlogData = join(root, "backlog")
    const backlogPath = join(backlogData, "core.db")
    await Effect.runPromise(Effect.scoped(Layer.build(SqliteStore.layer(backlogPath))))
    const backlogDb = new Database(backlogPath)
    fill(backlogDb, 0.1)
    backlogDb.close()
    const backlog = await Effect.runPromise(
      Effect.gen(function* () {
        const store = yield* Store.Service
        const batches: Array<number> = []
        const before = Date.now() - 7 * DAY_MS
        const started = performance.now()
        let removed = 0
        while (true) {
          const batchStarted = performance.now()
          const batch = yield* store.prune(before, Retention.BATCH)
          batches.push(performance.now() - batchStarted)
          removed += batch
          if (batch < Retention.BATCH) break
        }
        return { removed, total: performance.now() - started, batches: summarize(batches) }
      }).pipe(Effect.scoped, Effect.provide(SqliteStore.layer(backlogPath))),
    )

    progress("store: building the binary for core exec")
    const binary = await buildCore(join(root, "core"))
    const location = join(root, "location")
    mkdirSync(join(location, "tools"), { recursive: true })
    writeFileSync(join(location, "tools", "echo.ts"), ECHO_TOOL)
    const emptyData = join(root, "empty")
    mkdirSync(emptyData)
    const execIn = (data: string) => {
      const env = { ...process.env, CORE_DATA_DIR: data, CORE_HOME: join(root, "home") }
      return () => time([binary, "exec", "echo", "--input", '{"text":"hi"}', "--location", location], env)
    }
    const runs = [execIn(emptyData), execIn(fullData)]
    const samples: Array<Array<number>> = [[], []]
    for (let run = -3; run < EXEC_RUNS; run++) {
      for (let offset = 0; offset < runs.length; offset++) {
        const index = (Math.abs(run) + offset) % runs.length
        const elapsed = await runs[index]!()
        if (run >= 0) samples[index]!.push(elapsed)
      }
    }
    const [emptyExec, fullExec] = samples.map(summarize) as [ReturnType<typeof summarize>, ReturnType<typeof summarize>]

    const execRatio = fullExec.p50 / emptyExec.p50
    const lookupMs = service.lookup.p50
    return {
      name: "store: 200,000 settlements",
      about:
        `${ROWS.toLocaleString("en-US")} settled calls of ~${(settlementJson(0).length / 1000).toFixed(1)} KB JSON, 50 per ` +
        `session. Lookups at scattered keys, median per call over 5 rounds of ${LOOKUPS.toLocaleString("en-US")}; ` +
        `core exec: ${EXEC_RUNS} alternating runs per data directory after 3 warm-up runs.`,
      tables: [
        {
          title: "layout",
          columns: ["layout", "file", "raw lookup p50", "prune nothing-expired"],
          rows: [
            ["rowid + UNIQUE + time index (current)", megabytes(newBytes), duration(newRaw.p50), duration(service.sweep.p50)],
            ["WITHOUT ROWID (before)", megabytes(oldBytes), duration(oldRaw.p50), duration(oldPrune)],
          ],
        },
        {
          title: "current layout",
          columns: ["measure", "p50", "IQR / max"],
          rows: [
            ["store.lookup at scattered keys (Effect, decoded)", duration(service.lookup.p50), `${duration(service.lookup.q1)} – ${duration(service.lookup.q3)}`],
            ["store.lookup of recent calls", duration(service.recent.p50), `${duration(service.recent.q1)} – ${duration(service.recent.q3)}`],
            ["due sweep, nothing expired", duration(service.sweep.p50), `max ${duration(service.sweep.max)}`],
            [
              `backlog sweep: ${backlog.removed.toLocaleString("en-US")} expired rows, per batch of ${Retention.BATCH}`,
              duration(backlog.batches.p50),
              `max ${duration(backlog.batches.max)}; ${duration(backlog.total)} in all`,
            ],
            ["core exec, empty data dir", duration(emptyExec.p50), `${duration(emptyExec.q1)} – ${duration(emptyExec.q3)}`],
            ["core exec, 200k-settlement store", duration(fullExec.p50), `${duration(fullExec.q1)} – ${duration(fullExec.q3)}`],
          ],
        },
      ],
      targets: [
        { measure: "file at 200k settlements", value: megabytes(newBytes), target: `≤ ${megabytes(TARGETS.fileBytes)}`, met: newBytes <= TARGETS.fileBytes },
        { measure: "store.lookup p50", value: duration(lookupMs), target: `≤ ${duration(TARGETS.lookupMs)}`, met: lookupMs <= TARGETS.lookupMs },
        { measure: "core exec p50, 200k store / empty", value: ratio(execRatio), target: `≤ ${ratio(TARGETS.execRatio)}`, met: execRatio <= TARGETS.execRatio },
      ],
      notes: [
        `the old layout's prune is one full-scan DELETE of nothing (${duration(oldPrune)}), run by every core exec in a ` +
          `data directory without outputs/ before the sweep recorded itself in the store`,
        `file ratio current / before: ${ratio(newBytes / oldBytes)}; raw lookup ratio: ${ratio(newRaw.p50 / oldRaw.p50)}`,
      ],
    }
  } finally {
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
