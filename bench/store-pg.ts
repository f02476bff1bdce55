// The store of record on Postgres against SQLite: what one call's intent and settlement (store.begin +
// store.settle, through the store service) cost on each, Postgres directly and through pgbouncer in transaction
// mode; and calls per second with 1, 4 and 16 writer processes sharing one store. Postgres and pgbouncer come from
// scripts/services.sh (Debian's packages); without them this prints a note and measures nothing. `--base REV`
// measures SQLite only, this tree's store against that revision's (from a worktree of it), in alternating rounds.

import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SQL } from "bun"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import { PostgresStore } from "../src/store/postgres-store"
import { SqliteStore } from "../src/store/sqlite-store"
import { Store } from "../src/store/store"
import * as BaseTree from "./base-tree"
import { cleanup, duration, main, progress, type Report, summarize } from "./measure"

const CALLS = 400
const WRITERS = [1, 4, 16] as const
const WINDOW_MS = 3_000
const LOCATION = "/bench/location"

type Kind = "sqlite" | "postgres" | "pgbouncer"

const layerOf = (kind: Kind, target: string): Layer.Layer<Store.Service, Store.StoreError> =>
  kind === "sqlite" ? SqliteStore.layer(target) : PostgresStore.layer(target)

const SETTLEMENT = {
  tool: "bash",
  callID: "c",
  status: "success" as const,
  content: [{ type: "text" as const, text: `${"total 48\ndrwxr-xr-x  6 user user 4096 src\n".repeat(9)}Exit code 0` }],
  structured: { exitCode: 0, stdout: "x".repeat(200) },
  outputs: [],
}

/** One call's intent and settlement. */
const call = (store: Store.Interface, session: string, index: number) =>
  Effect.gen(function* () {
    const key = { location: LOCATION, sessionID: session, toolCallID: `call_${index}` }
    yield* store.begin(key, "bash", "build")
    yield* store.settle(key, { ...SETTLEMENT, callID: key.toolCallID }, { state: "owned" })
  })

/** Milliseconds per call, one call at a time, on the store `layer` makes (this tree's by default). */
const perCall = (kind: Kind, target: string, layer: (target: string) => Layer.Layer<Store.Service, Store.StoreError> = (at) => layerOf(kind, at)) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const store = yield* Store.Service
      const session = `ses_${kind}_${Date.now()}`
      for (let index = 0; index < 20; index++) yield* call(store, `${session}_warm`, index)
      const samples: Array<number> = []
      for (let index = 0; index < CALLS; index++) {
        const started = performance.now()
        yield* call(store, session, index)
        samples.push(performance.now() - started)
      }
      return summarize(samples)
    }).pipe(Effect.provide(layer(target))),
  )

/** As a writer process: calls one after another for `ms`, then prints how many. */
const writer = async (kind: Kind, target: string, ms: number) => {
  const count = await Effect.runPromise(
    Effect.gen(function* () {
      const store = yield* Store.Service
      const session = `ses_${process.pid}_${Date.now()}`
      const until = Date.now() + ms
      let done = 0
      while (Date.now() < until) yield* call(store, session, done++)
      return done
    }).pipe(Effect.provide(layerOf(kind, target))),
  )
  process.stdout.write(`${count}\n`)
}

/** Calls per second of `writers` processes together (this file's, or the same file in another tree's `root`). */
const throughput = async (kind: Kind, target: string, writers: number, root = join(import.meta.dir, "..")) => {
  const children = Array.from({ length: writers }, () =>
    Bun.spawn([process.execPath, join(root, "bench/store-pg.ts"), "--writer", kind, target, String(WINDOW_MS)], { stdout: "pipe", stderr: "inherit" }),
  )
  const counts = await Promise.all(children.map((child) => new Response(child.stdout).text().then(Number)))
  return counts.reduce((sum, count) => sum + count, 0) / (WINDOW_MS / 1000)
}

const services = (): { postgres: string; pgbouncer: string } | string => {
  const given = { postgres: process.env.CORE_TEST_POSTGRES_URL, pgbouncer: process.env.CORE_TEST_PGBOUNCER_URL }
  if (given.postgres && given.pgbouncer) return { postgres: given.postgres, pgbouncer: given.pgbouncer }
  const started = spawnSync(join(import.meta.dir, "../scripts/services.sh"), ["start"], { encoding: "utf8" })
  if (started.status !== 0) return started.stderr.trim()
  const variables = Object.fromEntries(
    readFileSync(started.stdout.trim(), "utf8")
      .split("\n")
      .filter((line) => line.includes("="))
      .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
  )
  return { postgres: variables.CORE_TEST_POSTGRES_URL!, pgbouncer: variables.CORE_TEST_PGBOUNCER_URL! }
}

const database = async (url: string, name: string) => {
  const admin = new SQL(url, { max: 1 })
  await admin.unsafe(`DROP DATABASE IF EXISTS ${name}`)
  await admin.unsafe(`CREATE DATABASE ${name}`)
  await admin.close()
  const parsed = new URL(url)
  parsed.pathname = `/${name}`
  return parsed.toString()
}

/** Rounds of the SQLite measures with `--base`, each tree's in turn. */
const BASE_ROUNDS = 3

/** SQLite only, this tree's store against `rev`'s, alternating rounds in fresh data directories. */
const againstBase = async (rev: string): Promise<Report> => {
  const tree = BaseTree.checkout(rev)
  const root = mkdtempSync(join(tmpdir(), "core-bench-pg-"))
  try {
    const base: typeof SqliteStore = (await import(join(tree.root, "src/store/sqlite-store.ts"))).SqliteStore
    const sides = [
      { label: "SQLite, this tree", layer: (at: string) => SqliteStore.layer(at), root: join(import.meta.dir, "..") },
      { label: `SQLite, ${rev}`, layer: (at: string) => base.layer(at), root: tree.root },
    ]
    const per = sides.map((): Array<number> => [])
    const rates = sides.map(() => WRITERS.map((): Array<number> => []))
    for (let round = 0; round < BASE_ROUNDS; round++) {
      for (const at of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const side = sides[at]!
        progress(`round ${round + 1}/${BASE_ROUNDS}: ${side.label}`)
        per[at]!.push((await perCall("sqlite", join(root, `per-${round}-${at}.db`), side.layer)).p50)
        for (const [w, writers] of WRITERS.entries()) {
          rates[at]![w]!.push(await throughput("sqlite", join(root, `w-${round}-${at}-${writers}.db`), writers, side.root))
        }
      }
    }
    const p50 = per.map((samples) => summarize(samples).p50)
    const rate = rates.map((byWriters) => byWriters.map((samples) => summarize(samples).p50))
    return {
      name: "store: SQLite, this tree against a base revision",
      about:
        `store.begin + store.settle(owned) of a ~0.5 KB settlement, ${CALLS} calls one at a time after 20 warm-up calls ` +
        `(p50 of each round, median of ${BASE_ROUNDS} rounds); then writer processes each making calls one after another ` +
        `for ${WINDOW_MS / 1000} s against one store (median of the rounds). Rounds alternate the trees.`,
      tables: [
        {
          title: "per call (intent + settlement), p50",
          columns: ["store", "p50", "rounds"],
          rows: sides.map((side, index) => [side.label, duration(p50[index]!), per[index]!.map(duration).join(" / ")]),
        },
        {
          title: "calls/s, all writers together",
          columns: ["store", ...WRITERS.map((count) => `${count} writer${count === 1 ? "" : "s"}`)],
          rows: sides.map((side, index) => [side.label, ...rate[index]!.map((value) => Math.round(value).toLocaleString("en-US"))]),
        },
      ],
      targets: [],
      notes: [
        `this tree / ${rev}: per call ${(p50[0]! / p50[1]!).toFixed(2)}x; calls/s ` +
          WRITERS.map((count, w) => `${count}: ${(rate[0]![w]! / rate[1]![w]!).toFixed(2)}x`).join(", "),
      ],
    }
  } finally {
    tree.remove()
    cleanup([root])
  }
}

const measure = async (): Promise<Report> => {
  const rev = BaseTree.revision()
  if (rev !== undefined) return againstBase(rev)
  const found = services()
  const name = "store of record: Postgres against SQLite"
  if (typeof found === "string") {
    process.stderr.write(`store-pg: skipped, no Postgres: ${found}\n`)
    return { name, about: "not measured", tables: [], targets: [], notes: [`skipped: no Postgres (${found})`] }
  }
  const root = mkdtempSync(join(tmpdir(), "core-bench-pg-"))
  try {
    const direct = await database(found.postgres, "core_bench")
    const pooledUrl = new URL(found.pgbouncer)
    pooledUrl.pathname = "/core_bench"
    const pooled = `${pooledUrl.toString()}?pgbouncer=true`
    const targets: ReadonlyArray<[string, Kind, string]> = [
      ["SQLite (data directory)", "sqlite", join(root, "core.db")],
      ["Postgres, direct", "postgres", direct],
      ["Postgres, through pgbouncer (transaction mode)", "pgbouncer", pooled],
    ]
    const single: Array<Array<string>> = []
    const parallel: Array<Array<string>> = []
    for (const [label, kind, target] of targets) {
      progress(`per call: ${label}`)
      const per = await perCall(kind, target)
      single.push([label, duration(per.p50), `${duration(per.q1)} – ${duration(per.q3)}`, duration(per.max)])
      const row = [label]
      for (const writers of WRITERS) {
        progress(`${writers} writers: ${label}`)
        row.push(Math.round(await throughput(kind, target, writers)).toLocaleString("en-US"))
      }
      parallel.push(row)
    }
    return {
      name,
      about:
        `store.begin + store.settle(owned) of a ~0.5 KB settlement through the store service, ${CALLS} calls one at a ` +
        `time after 20 warm-up calls; then writer processes each making calls one after another for ${WINDOW_MS / 1000} s ` +
        `against one store. Postgres on 127.0.0.1 with its default fsync and synchronous_commit.`,
      tables: [
        { title: "per call (intent + settlement)", columns: ["store", "p50", "IQR", "max"], rows: single },
        { title: "calls/s, all writers together", columns: ["store", ...WRITERS.map((count) => `${count} writer${count === 1 ? "" : "s"}`)], rows: parallel },
      ],
      targets: [],
      notes: [
        "Postgres's per-call cost is its commit's disk flush (two per call); SQLite's, two lines appended to its journal, compacted into SQLite in batches (WAL, synchronous=NORMAL: flushed at checkpoints only)",
        "Postgres is for fleets sharing one store, not the default: one host with its own data directory keeps SQLite",
      ],
    }
  } finally {
    cleanup([root])
  }
}

if (process.argv[2] === "--writer") await writer(process.argv[3] as Kind, process.argv[4]!, Number(process.argv[5]))
else if (import.meta.main) await main(measure)
