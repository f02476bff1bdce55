import { SQL } from "bun"
import { Database } from "bun:sqlite"
import { describe, expect, test } from "bun:test"
import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { Retention } from "../../src/host/retention"
import { ManagedOutputs } from "../../src/output/managed-outputs"
import { Settlement } from "../../src/contract/settlement"
import { Approvals } from "../../src/store/approvals"
import { SqliteStore } from "../../src/store/sqlite-store"
import { Owner } from "../../src/store/owner"
import { Reads } from "../../src/store/reads"
import { Todos } from "../../src/store/todos"
import { PostgresStore } from "../../src/store/postgres-store"
import { Nesting } from "../../src/contract/nesting"
import { Store } from "../../src/store/store"
import { freshDatabase } from "../support/postgres"
import { openOn } from "../support/descriptors"
import { tempDir } from "../support/temp"

const settlement = (callID: string): Settlement.Info => ({
  tool: "echo",
  callID,
  status: "success",
  content: [{ type: "text", text: "hi" }],
  structured: { nested: [1, "two", null] },
  outputs: [{ id: "out_abc12345_0123456789abcdef", bytes: 12 }],
})

const implementations: ReadonlyArray<[string, () => Layer.Layer<Store.Service, Store.StoreError>]> = [
  ["memory", () => Store.layerMemory],
  ["sqlite", () => SqliteStore.layer(join(tempDir(), "core.db"))],
  // Every record goes through the journal into SQLite at once: the same contract read back from the index.
  ["sqlite, journal compacted after every record", () => SqliteStore.layer(join(tempDir(), "core.db"), { compactBytes: 0 })],
  ["postgres", () => Layer.unwrap(Effect.promise(freshDatabase).pipe(Effect.map((urls) => PostgresStore.layer(urls.postgres))))],
  [
    "postgres through pgbouncer",
    () => Layer.unwrap(Effect.promise(freshDatabase).pipe(Effect.map((urls) => PostgresStore.layer(urls.pgbouncer)))),
  ],
]

const use = <A, E>(layer: Layer.Layer<Store.Service, Store.StoreError>, program: Effect.Effect<A, E, Store.Service>) =>
  Effect.runPromise(program.pipe(Effect.provide(layer)))

for (const [name, make] of implementations) {
  describe(`Store contract (${name})`, () => {
    test("an unknown call has no record", () =>
      use(make(), Effect.gen(function* () {
        expect(yield* (yield* Store.Service).lookup({ location: "/p", sessionID: "s", toolCallID: "c" })).toBeUndefined()
      })))

    test("begin records the intent once; a second begin for the same call is refused", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const key = { location: "/p", sessionID: "s", toolCallID: "c" }
        expect(yield* store.begin(key, "echo", "build")).toBe(true)
        expect(yield* store.begin(key, "other", "build")).toBe(false)
        expect(yield* store.lookup(key)).toEqual({ state: "started", agent: "build", tool: "echo", owner: Owner.current, running: true })
      })))

    test("a call that never began is settled only if nothing is recorded for it", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const fresh = { location: "/p", sessionID: "s", toolCallID: "fresh" }
        const begun = { location: "/p", sessionID: "s", toolCallID: "begun" }
        expect(yield* store.settle(fresh, settlement("fresh"), { state: "absent", agent: "build" })).toBe(true)
        expect(yield* store.lookup(fresh)).toEqual({ state: "settled", agent: "build", settlement: settlement("fresh") })
        expect(yield* store.begin(fresh, "echo", "build")).toBe(false)
        // A call another settler began is never overwritten by an "absent" settlement.
        yield* store.begin(begun, "echo", "build")
        expect(yield* store.settle(begun, settlement("unknown tool"), { state: "absent", agent: "build" })).toBe(false)
        expect(yield* store.lookup(begun)).toMatchObject({ state: "started" })
      })))

    test("the owner settles a begun call, and a settlement is final", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const key = { location: "/p", sessionID: "s", toolCallID: "c" }
        yield* store.begin(key, "echo", "build")
        expect(yield* store.settle(key, settlement("first"), { state: "owned" })).toBe(true)
        expect(yield* store.settle(key, settlement("second"), { state: "owned" })).toBe(false)
        expect(yield* store.settle(key, settlement("third"), { state: "absent", agent: "build" })).toBe(false)
        expect(yield* store.lookup(key)).toEqual({ state: "settled", agent: "build", settlement: settlement("first") })
      })))

    test("fail marks a begun call failed with its reason, which stays: nothing settles over it", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const begun = { location: "/p", sessionID: "s", toolCallID: "begun" }
        yield* store.begin(begun, "echo", "build")
        yield* store.fail(begun, "disk full")
        const failed: Store.Record = { state: "failed", agent: "build", tool: "echo", reason: "disk full" }
        expect(yield* store.lookup(begun)).toEqual(failed)
        expect(yield* store.settle(begun, settlement("owned"), { state: "owned" })).toBe(false)
        expect(yield* store.settle(begun, settlement("abandoned"), { state: "abandoned", owner: Owner.current })).toBe(false)
        expect(yield* store.settle(begun, settlement("absent"), { state: "absent", agent: "build" })).toBe(false)
        yield* store.fail(begun, "late")
        expect(yield* store.lookup(begun)).toEqual(failed)
      })))

    test("what a caller does to a returned settlement never changes the record", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const key = { location: "/p", sessionID: "s", toolCallID: "c" }
        const original = settlement("c")
        yield* store.settle(key, original, { state: "absent", agent: "build" })
        ;(original.content as Array<unknown>).push("mutated")
        const first = yield* store.lookup(key)
        if (first?.state === "settled") (first.settlement as { status: string }).status = "error"
        expect(yield* store.lookup(key)).toEqual({ state: "settled", agent: "build", settlement: settlement("c") })
      })))

    test("prune forgets calls recorded before the cutoff", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const key = { location: "/p", sessionID: "s", toolCallID: "c" }
        yield* store.settle(key, settlement("c"), { state: "absent", agent: "build" })
        expect(yield* store.prune(Date.now() - 60_000, 100)).toBe(0)
        expect(yield* store.prune(Date.now() + 1, 100)).toBe(1)
        expect(yield* store.lookup(key)).toBeUndefined()
      })))

    test("prune removes at most the batch it is given, so a sweep can work through a backlog in steps", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        for (let index = 0; index < 7; index++) {
          yield* store.settle({ location: "/p", sessionID: "s", toolCallID: `c${index}` }, settlement(`c${index}`), { state: "absent", agent: "build" })
        }
        const cutoff = Date.now() + 1
        expect(yield* store.prune(cutoff, 3)).toBe(3)
        expect(yield* store.prune(cutoff, 3)).toBe(3)
        expect(yield* store.prune(cutoff, 3)).toBe(1)
        expect(yield* store.prune(cutoff, 3)).toBe(0)
      })))

    test("a Location keeping a retention of its own is pruned by its own alone, every other by the operator's", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const at = (location: string, toolCallID: string) => ({ location, sessionID: "s", toolCallID })
        const record = (location: string, toolCallID: string) =>
          store.settle(at(location, toolCallID), settlement(toolCallID), { state: "absent", agent: "build" })
        const MONTH = 30 * 86_400_000
        yield* record("/own", "a")
        yield* record("/other", "a")
        yield* store.retain("/own", MONTH)
        expect([...(yield* store.retentions)]).toEqual([["/own", MONTH]])
        const cutoff = Date.now() + 1
        // The operator's prune passes over the Location that keeps its own.
        expect(yield* store.prune(cutoff, 100)).toBe(1)
        expect(yield* store.lookup(at("/other", "a"))).toBeUndefined()
        expect(yield* store.lookup(at("/own", "a"))).toMatchObject({ state: "settled" })
        // Its own prune takes its records, and no other Location's.
        yield* record("/other", "b")
        expect(yield* store.prune(cutoff + 1_000, 100, "/own")).toBe(1)
        expect(yield* store.lookup(at("/own", "a"))).toBeUndefined()
        expect(yield* store.lookup(at("/other", "b"))).toMatchObject({ state: "settled" })
        // Set again alike it stays; set to none, the operator's prune takes the Location's records again.
        yield* store.retain("/own", MONTH)
        yield* record("/own", "c")
        yield* store.retain("/own", undefined)
        expect((yield* store.retentions).size).toBe(0)
        expect(yield* store.prune(Date.now() + 1_000, 100)).toBe(2)
      })))

    // Forgotten, a call still running would run a second time when retried (a retention shorter than the call).
    test("prune never forgets a call still running, however old its start", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const running = { location: "/p", sessionID: "s", toolCallID: "running" }
        const done = { location: "/p", sessionID: "s", toolCallID: "done" }
        yield* store.begin(running, "echo", "build")
        yield* store.settle(done, settlement("done"), { state: "absent", agent: "build" })
        expect(yield* store.prune(Date.now() + 1, 100)).toBe(1)
        expect(yield* store.lookup(done)).toBeUndefined()
        expect(yield* store.lookup(running)).toMatchObject({ state: "started", running: true })
        expect(yield* store.begin(running, "echo", "build")).toBe(false)
        // Settled, it goes with the rest.
        expect(yield* store.settle(running, settlement("running"), { state: "owned" })).toBe(true)
        expect(yield* store.prune(Date.now() + 1, 100)).toBe(1)
        expect(yield* store.lookup(running)).toBeUndefined()
      })))

    // Times are taken on the store's clock (the database's, for Postgres) and read against the host's Date.now(),
    // which rounds down: a time rounded to the nearest millisecond was, half the time, after a Date.now() read once
    // the record was made, and a prune up to that moment missed it.
    test("a record's time is never after a Date.now() read once it was made", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const late: Array<unknown> = []
        for (let index = 0; index < 40; index++) {
          yield* store.settle({ location: "/t", sessionID: "s", toolCallID: `c${index}` }, settlement(`c${index}`), { state: "absent", agent: "build" })
          const now = Date.now()
          const [listed] = (yield* store.list({ location: "/t", limit: 100 })).filter((call) => call.toolCallID === `c${index}`)
          if (listed === undefined || (listed.settledAt ?? Infinity) > now) late.push({ index, now, settledAt: listed?.settledAt })
        }
        expect(late).toEqual([])
      })))

    test("a sweep is claimed once per interval, and again once the interval has passed", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const hour = 3_600_000
        expect(yield* store.claimSweep(10 * hour, hour)).toBe(true)
        expect(yield* store.claimSweep(10.5 * hour, hour)).toBe(false)
        expect(yield* store.claimSweep(11 * hour, hour)).toBe(true)
        // Forced (an interval of 0), and after the clock went back: claimed, never stuck.
        expect(yield* store.claimSweep(11 * hour, 0)).toBe(true)
        expect(yield* store.claimSweep(5 * hour, hour)).toBe(true)
      })))

    test("the same ids in another Location are another call, which begins and settles on its own", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const here = { location: "/a", sessionID: "s", toolCallID: "call_0" }
        const there = { location: "/b", sessionID: "s", toolCallID: "call_0" }
        yield* store.settle(here, settlement("call_0"), { state: "absent", agent: "build" })
        expect(yield* store.lookup(there)).toBeUndefined()
        expect(yield* store.begin(there, "list", "plan")).toBe(true)
        expect(yield* store.lookup(there)).toMatchObject({ state: "started", agent: "plan", tool: "list" })
        expect(yield* store.settle(there, { ...settlement("call_0"), tool: "list" }, { state: "owned" })).toBe(true)
        expect(yield* store.lookup(here)).toEqual({ state: "settled", agent: "build", settlement: settlement("call_0") })
        expect(yield* store.lookup(there)).toMatchObject({ state: "settled", agent: "plan", settlement: { tool: "list" } })
      })))

    test("a record says whether it was made for another tool or another agent", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const key = { location: "/a", sessionID: "s", toolCallID: "c" }
        yield* store.begin(key, "read", "build")
        const record = (yield* store.lookup(key))!
        expect(Store.otherThan(record, { name: "read", agent: "build" })).toBeUndefined()
        expect(Store.otherThan(record, { name: "list", agent: "build" })).toBe("tool")
        expect(Store.otherThan(record, { name: "read", agent: "plan" })).toBe("agent")
        yield* store.settle(key, { ...settlement("c"), tool: "read" }, { state: "owned" })
        const settled = (yield* store.lookup(key))!
        expect(Store.otherThan(settled, { name: "list", agent: "build" })).toBe("tool")
        expect(Store.otherThan(settled, { name: "read", agent: "plan" })).toBe("agent")
      })))

    test("a settled record hands its settlement on as the JSON recorded, and answers for its settlement's tool", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const key = { location: "/p", sessionID: "s", toolCallID: "c" }
        yield* store.begin(key, "read", "build")
        const recorded = { ...settlement("c"), tool: "list" }
        yield* store.settle(key, recorded, { state: "owned" })
        const record = (yield* store.lookup(key))!
        if (record.state !== "settled") throw new Error(`expected a settled record, got ${record.state}`)
        expect(Store.jsonOf(record)).toBe(JSON.stringify(recorded))
        expect(Store.otherThan(record, { name: "list", agent: "build" })).toBeUndefined()
        expect(Store.otherThan(record, { name: "read", agent: "build" })).toBe("tool")
        // Spread or serialized, a record is its state, agent and settlement, decoded.
        expect(JSON.parse(JSON.stringify(record))).toEqual({ state: "settled", agent: "build", settlement: recorded })
        expect({ ...record }).toEqual({ state: "settled", agent: "build", settlement: recorded })
      })))

    test("calls are keyed by session and call id together", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        yield* store.settle({ location: "/p", sessionID: "a", toolCallID: "c" }, settlement("c"), { state: "absent", agent: "build" })
        expect(yield* store.lookup({ location: "/p", sessionID: "b", toolCallID: "c" })).toBeUndefined()
        expect(yield* store.begin({ location: "/p", sessionID: "b", toolCallID: "c" }, "echo", "build")).toBe(true)
      })))

    test("list gives each call's details and outcome, oldest first, in its own Location only", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const at = (location: string, sessionID: string, toolCallID: string) => ({ location, sessionID, toolCallID })
        const details = (startedAt: number, input: unknown): Store.Details => ({
          messageID: `msg_${startedAt}`,
          startedAt,
          ...Store.recordInput(input),
        })
        yield* store.begin(at("/p", "s1", "ran"), "echo", "build", details(1_000, { text: "hi" }))
        yield* store.settle(at("/p", "s1", "ran"), settlement("ran"), { state: "owned" })
        const unknown = Settlement.error("nope", "unknown", "unknown", "Unknown tool")
        yield* store.settle(at("/p", "s2", "unknown"), unknown, { state: "absent", agent: "plan", details: details(2_000, {}) })
        yield* store.begin(at("/p", "s1", "running"), "echo", "build", details(3_000, { text: "slow" }))
        yield* store.begin(at("/p", "s1", "broke"), "echo", "build", details(4_000, { text: "x" }))
        yield* store.fail(at("/p", "s1", "broke"), "disk full")
        // Another Location's call with the same ids is never listed here.
        yield* store.begin(at("/q", "s1", "ran"), "secret", "build", details(1_500, { token: "theirs" }))

        const listed = yield* store.list({ location: "/p", limit: 100 })
        expect(listed.map((call) => call.toolCallID)).toEqual(["ran", "unknown", "running", "broke"])
        expect(listed[0]).toMatchObject({
          location: "/p",
          sessionID: "s1",
          toolCallID: "ran",
          tool: "echo",
          agent: "build",
          messageID: "msg_1000",
          input: '{"text":"hi"}',
          inputBytes: 13,
          startedAt: 1_000,
          record: { state: "settled", settlement: settlement("ran") },
        })
        expect(listed[0]!.settledAt).toBeGreaterThanOrEqual(1_000)
        expect(listed[1]).toMatchObject({ tool: "nope", agent: "plan", startedAt: 2_000, record: { state: "settled", settlement: unknown } })
        expect(listed[2]).toMatchObject({ record: { state: "started", running: true }, settledAt: undefined })
        expect(listed[3]).toMatchObject({ record: { state: "failed", reason: "disk full" } })
        expect(JSON.stringify(listed)).not.toContain("theirs")

        const ids = (filter: Omit<Store.Filter, "location">) =>
          Effect.map(store.list({ location: "/p", ...filter }), (calls) => calls.map((call) => call.toolCallID))
        expect(yield* ids({ sessionID: "s2", limit: 100 })).toEqual(["unknown"])
        expect(yield* ids({ since: 3_000, limit: 100 })).toEqual(["running", "broke"])
        // The newest `limit`, still oldest first.
        expect(yield* ids({ limit: 2 })).toEqual(["running", "broke"])
        expect(yield* ids({ sessionID: "none", limit: 100 })).toEqual([])
        expect((yield* store.list({ location: "/q", limit: 100 })).map((call) => call.tool)).toEqual(["secret"])
      })))

    test("a call recorded without details lists with what is known", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        yield* store.settle({ location: "/p", sessionID: "s", toolCallID: "c" }, settlement("c"), { state: "absent", agent: "build" })
        const [listed] = yield* store.list({ location: "/p", limit: 10 })
        expect(listed).toMatchObject({ toolCallID: "c", tool: "echo", agent: "build", messageID: undefined, input: undefined })
      })))
  })
}

describe("A settlement the store cannot decode", () => {
  const key = { location: "/p", sessionID: "s", toolCallID: "c" }
  const unreadable = '{"tool":"echo","callID":"c","status":"exploded"}'

  /** Settles `key` through the store, then has `corrupt` replace its JSON behind the store's back. */
  const check = async (layer: () => Layer.Layer<Store.Service, Store.StoreError>, corrupt: () => Promise<void>, path: string) => {
    await use(layer(), Effect.gen(function* () {
      yield* (yield* Store.Service).settle(key, settlement("c"), { state: "absent", agent: "build" })
    }))
    await corrupt()
    await use(layer(), Effect.gen(function* () {
      const store = yield* Store.Service
      // The lookup and what is read beside the settlement do not decode it.
      const record = (yield* store.lookup(key))!
      expect(record).toMatchObject({ state: "settled", agent: "build" })
      if (record.state !== "settled") return
      expect(Store.otherThan(record, { name: "echo", agent: "build" })).toBeUndefined()
      expect(Store.jsonOf(record)).toBe(unreadable)
      // Reading the settlement says it cannot be read, and where, every time.
      for (let attempt = 0; attempt < 2; attempt++) {
        let thrown: unknown
        try {
          void record.settlement
        } catch (error) {
          thrown = error
        }
        expect(thrown).toBeInstanceOf(Store.StoreError)
        expect(thrown).toMatchObject({ reason: "corrupt", path })
        expect((thrown as Store.StoreError).message).toContain("is not one core can read")
      }
    }))
  }

  test("sqlite: the lookup answers; reading the settlement fails with a StoreError naming the store", async () => {
    const path = join(tempDir(), "core.db")
    await check(
      // Compacted after every record, so that SQLite holds the row to spoil.
      () => SqliteStore.layer(path, { compactBytes: 0 }),
      async () => {
        const db = new Database(path)
        db.query("UPDATE settlements SET settlement = ?").run(unreadable)
        db.close()
      },
      path,
    )
  })

  test("postgres: the lookup answers; reading the settlement fails with a StoreError naming the store", async () => {
    const urls = await freshDatabase()
    await check(
      () => PostgresStore.layer(urls.postgres),
      async () => {
        const sql = new SQL(urls.postgres, { max: 1 })
        await sql`UPDATE core.settlements SET settlement = ${unreadable}`
        await sql.close()
      },
      PostgresStore.redact(urls.postgres),
    )
  })
})

describe("Store.recordInput", () => {
  test("keeps a small input whole, with its size", () => {
    expect(Store.recordInput({ a: "é" })).toEqual({ input: '{"a":"é"}', inputBytes: 10 })
  })

  // Kept whole, an input is read back as JSON and printed indented (core log --json): 8 KiB of brackets nested 4,000
  // deep printed as 32 MB, and 70 such calls ran core log out of memory.
  test("does not keep an input nested deeper than the decode step takes; keeps one at that depth", () => {
    const nest = (depth: number): unknown => (depth === 0 ? "x" : [nest(depth - 1)])
    const deep = Store.recordInput({ filePath: nest(4_000) })
    expect(deep).toEqual({ input: JSON.stringify(`(not kept: ${Nesting.TOO_DEEP})`), inputBytes: 0 })
    expect(Store.recordInput({ filePath: nest(Nesting.MAX_DEPTH + 1) }).inputBytes).toBe(0)
    const kept = Store.recordInput({ filePath: nest(Nesting.MAX_DEPTH - 1) })
    expect(JSON.parse(kept.input)).toEqual({ filePath: nest(Nesting.MAX_DEPTH - 1) })
  })

  test("cuts a large input to the bound at a character boundary and keeps its whole size", () => {
    const input = { content: "é".repeat(10_000) }
    const kept = Store.recordInput(input, 1_001)
    expect(Buffer.byteLength(kept.input)).toBeLessThanOrEqual(1_001)
    expect(kept.input.endsWith("é")).toBe(true)
    expect(kept.input.startsWith('{"content":"éé')).toBe(true)
    expect(kept.inputBytes).toBe(Buffer.byteLength(JSON.stringify(input)))
    expect(Store.recordInput(input).input.length).toBeLessThan(Store.INPUT_MAX_BYTES)
  })
})

/** The schema core wrote before settlements became a rowid table (versions 1 and 2). */
const VERSION_2 = [
  `CREATE TABLE settlements (
     session_id TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('started', 'failed', 'settled')),
     owner TEXT, reason TEXT, settlement TEXT, started_at INTEGER, settled_at INTEGER,
     PRIMARY KEY (session_id, call_id)
   ) WITHOUT ROWID`,
  `CREATE TABLE approvals (
     project TEXT NOT NULL, action TEXT NOT NULL, pattern TEXT NOT NULL, saved_at INTEGER NOT NULL,
     PRIMARY KEY (project, action, pattern)
   ) WITHOUT ROWID`,
  "PRAGMA user_version = 2",
]

describe("SqliteStore migration", () => {
  test("a version 2 database is migrated in place: every record and approval kept, rowid table, time index", async () => {
    const path = join(tempDir(), "core.db")
    const old = new Database(path, { create: true })
    old.exec("PRAGMA journal_mode = WAL")
    for (const statement of VERSION_2) old.exec(statement)
    const insert = old.query(
      "INSERT INTO settlements (session_id, call_id, tool, state, owner, reason, settlement, started_at, settled_at) " +
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    insert.run("s", "settled", "echo", "settled", null, null, JSON.stringify(settlement("settled")), 10_000, 20_000)
    insert.run("s", "failed", "echo", "failed", Owner.current, "it broke", null, 30_000, 40_000)
    insert.run("s", "old", "echo", "settled", null, null, JSON.stringify(settlement("old")), null, 1_000)
    old.query("INSERT INTO approvals VALUES ('/p', 'bash', 'git *', 5)").run()
    old.close()

    const found = await use(SqliteStore.layer(path), Effect.gen(function* () {
      const store = yield* Store.Service
      return {
        settled: yield* store.lookup({ location: "/p", sessionID: "s", toolCallID: "settled" }),
        failed: yield* store.lookup({ location: "/p", sessionID: "s", toolCallID: "failed" }),
        begun: yield* store.begin({ location: "/p", sessionID: "s", toolCallID: "settled" }, "echo", "build"),
        pruned: yield* store.prune(1_500, 10),
        gone: yield* store.lookup({ location: "/p", sessionID: "s", toolCallID: "old" }),
      }
    }))
    expect(found).toEqual({
      settled: { state: "settled", agent: undefined, settlement: settlement("settled") },
      failed: { state: "failed", agent: undefined, tool: "echo", reason: "it broke" },
      begun: false,
      pruned: 1,
      gone: undefined,
    })
    const approvals = await Effect.runPromise(
      Effect.gen(function* () {
        return yield* (yield* Approvals.Service).list("/p")
      }).pipe(Effect.provide(SqliteStore.approvalsLayer(path))),
    )
    expect(approvals).toEqual([{ project: "/p", action: "bash", pattern: "git *", savedAt: 5 }])

    const db = new Database(path, { readonly: true })
    expect((db.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(SqliteStore.SCHEMA_VERSION)
    const table = db.query("SELECT sql FROM sqlite_master WHERE name = 'settlements'").get() as { sql: string }
    expect(table.sql).not.toContain("WITHOUT ROWID")
    expect(table.sql).toContain("UNIQUE (session_id, call_id, location)")
    // Pruning finds expired records through the time index, not by reading every row.
    const plan = db
      .query("EXPLAIN QUERY PLAN SELECT id FROM settlements WHERE COALESCE(settled_at, started_at) < 5 LIMIT 10")
      .all() as Array<{ detail: string }>
    expect(plan.map((step) => step.detail).join("\n")).toMatch(/USING (COVERING )?INDEX settlements_by_time/)
    db.close()
  })
})

describe("Retention", () => {
  test("a sweep is recorded in the store when there is no outputs directory, so the next one waits an hour", async () => {
    const data = tempDir()
    const outputs = ManagedOutputs.layer({ directory: join(data, "outputs") })
    const sweeps = await Effect.runPromise(
      Effect.gen(function* () {
        const store = yield* Store.Service
        const managed = yield* ManagedOutputs.Service
        yield* store.settle({ location: "/p", sessionID: "s", toolCallID: "c" }, settlement("c"), { state: "absent", agent: "build" })
        return [yield* Retention.sweepIfDue(store, managed), yield* Retention.sweepIfDue(store, managed)]
      }).pipe(Effect.provide(Layer.merge(SqliteStore.layer(join(data, "core.db")), outputs))),
    )
    expect(sweeps).toEqual([0, undefined])
    expect(existsSync(join(data, "outputs"))).toBe(false)
  })

  test("a sweep works through more expired records than one batch, and keeps the rest", async () => {
    const data = tempDir()
    const outputs = ManagedOutputs.layer({ directory: join(data, "outputs"), retentionDays: 1 })
    const path = join(data, "core.db")
    await use(SqliteStore.layer(path), Effect.void)
    const db = new Database(path)
    const insert = db.query(
      "INSERT INTO settlements (location, session_id, call_id, tool, agent, state, settlement, settled_at) " +
        "VALUES ('/p', 's', ?, 'echo', 'build', 'settled', ?, ?)",
    )
    const expired = Date.now() - 2 * 86_400_000
    db.transaction(() => {
      for (let index = 0; index < 2 * Retention.BATCH + 7; index++) insert.run(`old${index}`, "{}", expired)
      insert.run("fresh", JSON.stringify(settlement("fresh")), Date.now())
    })()
    db.close()
    const [removed, fresh] = await Effect.runPromise(
      Effect.gen(function* () {
        const store = yield* Store.Service
        const removed = yield* Retention.sweep(store, yield* ManagedOutputs.Service)
        return [removed, yield* store.lookup({ location: "/p", sessionID: "s", toolCallID: "fresh" })] as const
      }).pipe(Effect.provide(Layer.merge(SqliteStore.layer(path), outputs))),
    )
    expect(removed).toBe(2 * Retention.BATCH + 7)
    expect(fresh).toEqual({ state: "settled", agent: "build", settlement: settlement("fresh") })
  })
})

/** The schema of versions 3 and 4: a rowid settlements table without Locations or agents. */
const VERSION_4_SETTLEMENTS = `CREATE TABLE settlements (
     id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('started', 'failed', 'settled')),
     owner TEXT, reason TEXT, settlement TEXT, started_at INTEGER, settled_at INTEGER,
     UNIQUE (session_id, call_id)
   )`

describe("SqliteStore migration to records that belong to a Location", () => {
  test("a record kept before Locations still answers in every Location, so it never runs again; new ones are the Location's", async () => {
    const path = join(tempDir(), "core.db")
    await use(SqliteStore.layer(path), Effect.void)
    // Back to version 4 as an older core left it, with one settled and one abandoned call.
    const old = new Database(path)
    old.exec("DROP TABLE settlements")
    old.exec("DROP TABLE todos")
    old.exec("DROP TABLE journal_applied")
    old.exec("DROP TABLE retentions")
    old.exec(VERSION_4_SETTLEMENTS)
    old.exec("DROP TABLE approvals")
    old.exec(VERSION_2[1]!)
    old.exec("CREATE INDEX settlements_by_time ON settlements (COALESCE(settled_at, started_at))")
    const insert = old.query(
      "INSERT INTO settlements (session_id, call_id, tool, state, owner, settlement, started_at, settled_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    insert.run("s", "done", "echo", "settled", null, JSON.stringify(settlement("done")), 10, 20)
    insert.run("s", "begun", "echo", "started", "gone-host:1:1", null, 30, null)
    old.exec("PRAGMA user_version = 4")
    old.close()

    const found = await use(SqliteStore.layer(path), Effect.gen(function* () {
      const store = yield* Store.Service
      const at = (location: string, toolCallID: string) => ({ location, sessionID: "s", toolCallID })
      return {
        a: yield* store.lookup(at("/a", "done")),
        b: yield* store.lookup(at("/b", "done")),
        begin: yield* store.begin(at("/b", "done"), "echo", "build"),
        absent: yield* store.settle(at("/b", "done"), settlement("x"), { state: "absent", agent: "build" }),
        abandoned: yield* store.settle(at("/a", "begun"), settlement("begun"), { state: "abandoned", owner: "gone-host:1:1" }),
        replayed: yield* store.lookup(at("/c", "begun")),
        fresh: yield* store.begin(at("/a", "new"), "echo", "build"),
        elsewhere: yield* store.lookup(at("/b", "new")),
      }
    }))
    expect(found).toEqual({
      a: { state: "settled", agent: undefined, settlement: settlement("done") },
      b: { state: "settled", agent: undefined, settlement: settlement("done") },
      begin: false,
      absent: false,
      abandoned: true,
      replayed: { state: "settled", agent: undefined, settlement: settlement("begun") },
      fresh: true,
      elsewhere: undefined,
    })
    const db = new Database(path, { readonly: true })
    expect((db.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(SqliteStore.SCHEMA_VERSION)
    expect(db.query("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'settlements_by_time'").get()).toEqual({ n: 1 })
    db.close()
  })
})

describe("SqliteStore", () => {
  test("records survive closing and reopening the database", async () => {
    const path = join(tempDir(), "core.db")
    const key = { location: "/p", sessionID: "s", toolCallID: "c" }
    await use(SqliteStore.layer(path), Effect.gen(function* () {
      yield* (yield* Store.Service).settle(key, settlement("c"), { state: "absent", agent: "build" })
    }))
    const recorded = await use(SqliteStore.layer(path), Effect.gen(function* () {
      return yield* (yield* Store.Service).lookup(key)
    }))
    expect(recorded).toEqual({ state: "settled", agent: "build", settlement: settlement("c") })
  })

  test("records kept without a Location answer in every Location until the last of them is pruned", async () => {
    const path = join(tempDir(), "core.db")
    await use(SqliteStore.layer(path), Effect.void)
    const db = new Database(path)
    const insert = db.query(
      "INSERT INTO settlements (location, session_id, call_id, tool, state, settlement, settled_at) VALUES ('', 's', ?, 'echo', 'settled', ?, ?)",
    )
    insert.run("old", JSON.stringify(settlement("old")), 1_000)
    insert.run("kept", JSON.stringify(settlement("kept")), Date.now())
    db.close()
    const at = (location: string, toolCallID: string) => ({ location, sessionID: "s", toolCallID })
    const found = await use(SqliteStore.layer(path), Effect.gen(function* () {
      const store = yield* Store.Service
      const old = yield* store.lookup(at("/a", "old"))
      const pruned = yield* store.prune(5_000, 10)
      // One is left: it still answers, and still keeps the same call from beginning in a Location.
      const kept = yield* store.lookup(at("/b", "kept"))
      const begunKept = yield* store.begin(at("/b", "kept"), "echo", "build")
      const prunedLast = yield* store.prune(Date.now() + 1, 10)
      return {
        old,
        pruned,
        kept,
        begunKept,
        prunedLast,
        gone: yield* store.lookup(at("/b", "kept")),
        begun: yield* store.begin(at("/b", "kept"), "echo", "build"),
      }
    }))
    expect(found).toMatchObject({
      old: { state: "settled", settlement: settlement("old") },
      pruned: 1,
      kept: { state: "settled", settlement: settlement("kept") },
      begunKept: false,
      prunedLast: 1,
      gone: undefined,
      begun: true,
    })
  })

  test("a record made without a Location after the store opened answers in every Location too", async () => {
    const path = join(tempDir(), "core.db")
    const found = await use(SqliteStore.layer(path), Effect.gen(function* () {
      const store = yield* Store.Service
      const before = yield* store.lookup({ location: "/p", sessionID: "s", toolCallID: "c" })
      yield* store.settle({ location: "", sessionID: "s", toolCallID: "c" }, settlement("c"), { state: "absent", agent: "build" })
      return { before, after: yield* store.lookup({ location: "/p", sessionID: "s", toolCallID: "c" }) }
    }))
    expect(found).toEqual({ before: undefined, after: { state: "settled", agent: "build", settlement: settlement("c") } })
  })

  test("processes opening a new store at the same moment all succeed: it is created and migrated once", async () => {
    // Eight processes open each of 30 new stores together, at a shared moment per store: converting a new file to
    // WAL in one of them answered the others SQLITE_BUSY at once (about 2 in 100 opens here), whatever busy_timeout.
    const directory = tempDir()
    const rounds = 30
    const start = Date.now() + 1_500
    const script = `
      import { Effect, Layer } from "effect"
      import { SqliteStore } from ${JSON.stringify(join(import.meta.dir, "../../src/store/sqlite-store.ts"))}
      for (let round = 0; round < ${rounds}; round++) {
        while (Date.now() < ${start} + round * 60) {}
        await Effect.runPromise(Effect.scoped(Layer.build(SqliteStore.layer(${JSON.stringify(directory)} + "/" + round + ".db"))))
      }
    `
    const children = Array.from({ length: 8 }, () =>
      Bun.spawn([process.execPath, "-e", script], { cwd: join(import.meta.dir, "../.."), stderr: "pipe" }),
    )
    const results = await Promise.all(
      children.map(async (child) => ({ code: await child.exited, stderr: await new Response(child.stderr).text() })),
    )
    expect(results).toEqual(Array.from({ length: 8 }, () => ({ code: 0, stderr: "" })))
    const versions = Array.from({ length: rounds }, (_, round) => {
      const db = new Database(join(directory, `${round}.db`), { readonly: true })
      const found = db.query("PRAGMA user_version").get() as { user_version: number }
      db.close()
      return found.user_version
    })
    expect(versions).toEqual(Array.from({ length: rounds }, () => SqliteStore.SCHEMA_VERSION))
  })

  test("the store, reads, todos and approvals of one data directory share one connection, closed with the last", async () => {
    const path = join(tempDir(), "core.db")
    /** This process's descriptors open on the database file itself (each connection holds one). */
    const open = () => openOn(path)
    const all = Layer.mergeAll(SqliteStore.layer(path), Reads.layer(path), Todos.layer(path), SqliteStore.approvalsLayer(path))
    const during = await Effect.runPromise(
      Effect.gen(function* () {
        const store = yield* Store.Service
        const approvals = yield* Approvals.Service
        yield* store.begin({ location: "/p", sessionID: "s", toolCallID: "c" }, "echo", "build")
        yield* approvals.save("project", "bash", ["git *"])
        return { open: open(), approved: (yield* approvals.list("project")).map((saved) => saved.pattern) }
      }).pipe(Effect.provide(all)),
    )
    expect(during).toEqual({ open: 1, approved: ["git *"] })
    // Closed with the last of them: the log is checkpointed and removed, as SQLite does for its last connection.
    expect(open()).toBe(0)
    expect(existsSync(`${path}-wal`)).toBe(false)
  })

  test("creates its directory and uses WAL journaling at the current schema version", async () => {
    const path = join(tempDir(), "nested", "dir", "core.db")
    await use(SqliteStore.layer(path), Effect.void)
    const db = new Database(path, { readonly: true })
    expect((db.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal")
    expect((db.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(SqliteStore.SCHEMA_VERSION)
    db.close()
  })

  test("a corrupt file is reported clearly and left untouched", async () => {
    const path = join(tempDir(), "core.db")
    const garbage = "this is not a database ".repeat(200)
    writeFileSync(path, garbage)
    const error = await Effect.runPromise(Effect.flip(Layer.build(SqliteStore.layer(path)).pipe(Effect.scoped)))
    expect(error).toBeInstanceOf(Store.StoreError)
    expect(error.reason).toBe("corrupt")
    expect(error.message).toContain(path)
    expect(await Bun.file(path).text()).toBe(garbage)
  })

  test("a database claiming the current version without the expected tables is reported, not altered", async () => {
    const path = join(tempDir(), "core.db")
    const db = new Database(path, { create: true })
    db.exec(`PRAGMA user_version = ${SqliteStore.SCHEMA_VERSION}`)
    db.exec("CREATE TABLE settlements (session_id TEXT)")
    db.close()
    const error = await Effect.runPromise(Effect.flip(Layer.build(SqliteStore.layer(path)).pipe(Effect.scoped)))
    expect(error.reason).toBe("corrupt")
    expect(error.message).toContain("expected tables")
    expect(error.message).toContain(path)
  })

  test("a database written by a newer core is refused, not migrated or replaced", async () => {
    const path = join(tempDir(), "core.db")
    const db = new Database(path, { create: true })
    db.exec(`PRAGMA user_version = ${SqliteStore.SCHEMA_VERSION + 1}`)
    db.exec("CREATE TABLE future (x)")
    db.close()
    const error = await Effect.runPromise(Effect.flip(Layer.build(SqliteStore.layer(path)).pipe(Effect.scoped)))
    expect(error.reason).toBe("newer_version")
    expect(error.message).toContain(String(SqliteStore.SCHEMA_VERSION + 1))
    const after = new Database(path, { readonly: true })
    expect((after.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(SqliteStore.SCHEMA_VERSION + 1)
    after.close()
  })

  test("a path that cannot hold a database fails to open with the path named", async () => {
    const root = tempDir()
    writeFileSync(join(root, "file"), "")
    const path = join(root, "file", "core.db")
    const error = await Effect.runPromise(Effect.flip(Layer.build(SqliteStore.layer(path)).pipe(Effect.scoped)))
    expect(error.reason).toBe("open")
    expect(error.message).toContain(path)
  })
})

describe("SqliteStore migration to records with details", () => {
  test("records kept at version 5 (no message, input or start of a call settled at once) still load and list", async () => {
    const path = join(tempDir(), "core.db")
    // A store as a core at version 5 left it: the first five steps, whatever steps come after them now.
    const old = new Database(path, { create: true })
    for (const step of SqliteStore.MIGRATIONS.slice(0, 5)) old.exec(step)
    const insert = old.query(
      "INSERT INTO settlements (location, session_id, call_id, tool, agent, state, owner, settlement, started_at, settled_at) " +
        "VALUES ('/p', 's', ?, 'echo', 'build', ?, ?, ?, ?, ?)",
    )
    insert.run("settled", "settled", null, JSON.stringify(settlement("settled")), null, 20_000)
    insert.run("begun", "started", "gone-host:1:1", null, 10_000, null)
    old.exec("PRAGMA user_version = 5")
    old.close()

    const listed = await use(SqliteStore.layer(path), Effect.gen(function* () {
      const store = yield* Store.Service
      expect(yield* store.lookup({ location: "/p", sessionID: "s", toolCallID: "settled" })).toEqual({
        state: "settled",
        agent: "build",
        settlement: settlement("settled"),
      })
      return yield* store.list({ location: "/p", limit: 10 })
    }))
    expect(listed).toEqual([
      {
        location: "/p",
        sessionID: "s",
        toolCallID: "begun",
        tool: "echo",
        agent: "build",
        messageID: undefined,
        input: undefined,
        inputBytes: undefined,
        startedAt: 10_000,
        settledAt: undefined,
        record: { state: "started", agent: "build", tool: "echo", owner: "gone-host:1:1", running: false },
      },
      {
        location: "/p",
        sessionID: "s",
        toolCallID: "settled",
        tool: "echo",
        agent: "build",
        messageID: undefined,
        input: undefined,
        inputBytes: undefined,
        startedAt: undefined,
        settledAt: 20_000,
        record: { state: "settled", agent: "build", settlement: settlement("settled") },
      },
    ])
    const db = new Database(path, { readonly: true })
    expect((db.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(SqliteStore.SCHEMA_VERSION)
    const plan = db
      .query(
        "EXPLAIN QUERY PLAN SELECT id FROM settlements WHERE location = '/p' AND COALESCE(started_at, settled_at) >= 5 " +
          "ORDER BY COALESCE(started_at, settled_at) DESC LIMIT 10",
      )
      .all() as Array<{ detail: string }>
    expect(plan.map((step) => step.detail).join("\n")).toMatch(/INDEX settlements_by_location/)
    db.close()
  })
})

describe("Store.keyOf", () => {
  test("answers each key's own string, however keys alternate, and the same for equal keys made apart", () => {
    const a: Store.Key = { location: "/l", sessionID: "s", toolCallID: "c1" }
    const b: Store.Key = { location: "/l", sessionID: "s", toolCallID: "c2" }
    const elsewhere: Store.Key = { location: "/m", sessionID: "s", toolCallID: "c1" }
    const ofA = Store.keyOf(a)
    expect(Store.keyOf(a)).toBe(ofA)
    expect(Store.keyOf(b)).not.toBe(ofA)
    expect(Store.keyOf(a)).toBe(ofA)
    expect(Store.keyOf(elsewhere)).not.toBe(ofA)
    expect(Store.keyOf({ ...a })).toBe(ofA)
    expect(new Set([a, b, elsewhere, a, b].map(Store.keyOf)).size).toBe(3)
  })
})
