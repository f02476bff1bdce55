// The durable store at 200,000 settlements: file size, lookup time (through the store service beside the same SQL
// run raw, in alternating rounds, per call: wall p50 and CPU per call; a lookup that reads only the state, one
// that reads the settlement decoded, and a replay that hands the recorded JSON on), the retention sweep (a due sweep with nothing expired, and working through an expired backlog in batches: the
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
/** Alternating rounds of LOOKUPS calls each way (raw SQL, the service ways). */
const LOOKUP_ROUNDS = 7
/** The store's mmap size (SqliteStore): the raw connection reads the file the way the store does. */
const MMAP_BYTES = 256 * 1024 * 1024
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

/** The row of the `index`th settlement. */
const keyOf = (index: number): Store.Key => ({ location: LOCATION, sessionID: sessionOf(index), toolCallID: callOf(index) })

/** The keys of a round of lookups, made before it is timed: the measure is the lookup, not making ids. */
const scattered = (round: number) => Array.from({ length: LOOKUPS }, (_, index) => keyOf((index * 7919 + round * 104_729) % ROWS))
/** A replay usually asks for a call made moments before: the most recent thousand, again and again. */
const recent = (round: number) => Array.from({ length: LOOKUPS }, (_, index) => keyOf(ROWS - 1 - ((index + round * 17) % 1000)))

interface PerCall {
  /** Wall time of each call (ms). */
  readonly wall: ReturnType<typeof summarize>
  /** The process's CPU time per call (ms), median over rounds. */
  readonly cpu: number
}

/**
 * Times each way per call over alternating rounds (the order rotates each round): every way meets the same keys
 * and the same load. A way throws if a lookup does not find what was filled.
 */
const perCall = (
  ways: ReadonlyArray<readonly [string, (key: Store.Key) => void]>,
  keysOf: (round: number) => ReadonlyArray<Store.Key>,
  rounds = LOOKUP_ROUNDS,
): Map<string, PerCall> => {
  const wall = ways.map(() => new Float64Array(rounds * LOOKUPS))
  const cpu = ways.map((): Array<number> => [])
  for (let round = 0; round < rounds; round++) {
    const keys = keysOf(round)
    for (let turn = 0; turn < ways.length; turn++) {
      const way = (turn + round) % ways.length
      const call = ways[way]![1]
      const samples = wall[way]!
      const used = process.cpuUsage()
      for (let index = 0; index < keys.length; index++) {
        const started = performance.now()
        call(keys[index]!)
        samples[round * LOOKUPS + index] = performance.now() - started
      }
      const spent = process.cpuUsage(used)
      cpu[way]!.push((spent.user + spent.system) / 1000 / keys.length)
    }
  }
  return new Map(ways.map(([name], way) => [name, { wall: summarize(Array.from(wall[way]!)), cpu: summarize(cpu[way]!).p50 }]))
}

/** The layouts compared: the same query by session and call id, on a connection with SQLite's defaults. */
const rawLookup = (db: Database) => {
  const select = db.query<{ settlement: string }, [string, string]>(
    "SELECT state, tool, owner, reason, settlement FROM settlements WHERE session_id = ? AND call_id = ?",
  )
  const found = perCall(
    [
      [
        "raw",
        (key) => {
          if (select.get(key.sessionID, key.toolCallID) === null) throw new Error("missing row")
        },
      ],
    ],
    scattered,
    5,
  )
  return found.get("raw")!.wall
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

    progress("store: lookups through the store service beside raw SQL, and the retention sweep")
    const outputs = ManagedOutputs.layer({ directory: join(fullData, "outputs") })
    // The statement the store's lookup runs, on a connection of its own reading the file as the store does.
    const raw = new Database(path, { readonly: true, strict: true })
    raw.exec(`PRAGMA mmap_size = ${MMAP_BYTES}`)
    const rawSelect = raw.query<{ settlement: string }, [string, string, string]>(
      "SELECT state, tool, agent, owner, reason, settlement, lease_until FROM settlements " +
        "WHERE session_id = ? AND call_id = ? AND location = ?",
    )
    const service = await Effect.runPromise(
      Effect.gen(function* () {
        const store = yield* Store.Service
        const managed = yield* ManagedOutputs.Service
        const settled = (key: Store.Key) => {
          const record = Effect.runSync(store.lookup(key))
          if (record?.state !== "settled") throw new Error("missing record")
          return record
        }
        const ways: ReadonlyArray<readonly [string, (key: Store.Key) => void]> = [
          [
            "raw",
            (key) => {
              if (rawSelect.get(key.sessionID, key.toolCallID, key.location) === null) throw new Error("missing row")
            },
          ],
          ["lookup", (key) => void settled(key)],
          [
            "decoded",
            (key) => {
              if (settled(key).settlement.status !== "success") throw new Error("not the settlement filled")
            },
          ],
          [
            "replay",
            (key) => {
              if (Store.jsonOf(settled(key)).length < 100) throw new Error("not the settlement filled")
            },
          ],
        ]
        const lookups = perCall(ways, scattered)
        const recentLookups = perCall(ways, recent)
        const sweeps: Array<number> = []
        for (let run = 0; run < 20; run++) {
          const started = performance.now()
          yield* Retention.sweep(store, managed)
          sweeps.push(performance.now() - started)
        }
        return { lookups, recent: recentLookups, sweep: summarize(sweeps) }
      }).pipe(Effect.scoped, Effect.provide(Layer.merge(SqliteStore.layer(path), outputs))),
    )
    raw.close()

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
    const lookupMs = service.lookups.get("lookup")!.wall.p50
    const rawMs = service.lookups.get("raw")!.wall.p50
    const WAYS = [
      ["raw", "raw SQL: the store's statement"],
      ["lookup", "store.lookup (Effect.runSync), state read"],
      ["decoded", "store.lookup, settlement read (decoded)"],
      ["replay", "store.lookup, JSON handed on (Store.jsonOf)"],
    ] as const
    const lookupRows = (at: string, measured: Map<string, PerCall>) =>
      WAYS.map(([way, label]) => {
        const { wall, cpu } = measured.get(way)!
        return [`${label}, ${at}`, duration(wall.p50), `${duration(wall.q1)} – ${duration(wall.q3)}`, duration(wall.p99), duration(cpu)]
      })
    return {
      name: "store: 200,000 settlements",
      about:
        `${ROWS.toLocaleString("en-US")} settled calls of ~${(settlementJson(0).length / 1000).toFixed(1)} KB JSON, 50 per ` +
        `session. Lookups: each call timed, ${LOOKUP_ROUNDS} alternating rounds of ${LOOKUPS.toLocaleString("en-US")} per way ` +
        `(layouts: 5 rounds); CPU per call is the process's, median over rounds; ` +
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
          title: "lookups, current layout (each call timed)",
          columns: ["way", "p50", "IQR", "p99", "CPU / call"],
          rows: [...lookupRows("scattered keys", service.lookups), ...lookupRows("recent calls", service.recent)],
        },
        {
          title: "current layout",
          columns: ["measure", "p50", "IQR / max"],
          rows: [
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
        {
          measure: "store.lookup p50 at scattered keys (raw SQL beside it)",
          value: `${duration(lookupMs)} (raw ${duration(rawMs)}, ${ratio(lookupMs / rawMs)})`,
          target: `≤ ${duration(TARGETS.lookupMs)}`,
          met: lookupMs <= TARGETS.lookupMs,
        },
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
