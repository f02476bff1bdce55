// The todo lists' store: one contract for the in-memory, SQLite and Postgres layers (per Location and session, replaced
// whole), lists that outlive the process, and the table added to a database of the previous schema version.

import { Database } from "bun:sqlite"
import { SQL } from "bun"
import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { Settlement } from "../../src/contract/settlement"
import { PostgresStore } from "../../src/store/postgres-store"
import { SqliteStore } from "../../src/store/sqlite-store"
import { Store } from "../../src/store/store"
import { Todos } from "../../src/store/todos"
import { freshDatabase } from "../support/postgres"
import { tempDir } from "../support/temp"

const implementations: ReadonlyArray<[string, () => Layer.Layer<Todos.Service, Store.StoreError>]> = [
  ["memory", () => Todos.layerMemory],
  ["sqlite", () => Todos.layer(join(tempDir(), "core.db"))],
  ["postgres", () => Layer.unwrap(Effect.promise(freshDatabase).pipe(Effect.map((urls) => PostgresStore.todosLayer(urls.postgres))))],
  [
    "postgres through pgbouncer",
    () => Layer.unwrap(Effect.promise(freshDatabase).pipe(Effect.map((urls) => PostgresStore.todosLayer(urls.pgbouncer)))),
  ],
]

const use = <A, E>(layer: Layer.Layer<Todos.Service, Store.StoreError>, program: Effect.Effect<A, E, Todos.Service>) =>
  Effect.runPromise(program.pipe(Effect.provide(layer)))

const item = (content: string, status: Todos.Status = "pending"): Todos.Item => ({ content, status, priority: "medium" })

for (const [name, make] of implementations) {
  describe(`Todos contract (${name})`, () => {
    test("a session that wrote nothing has an empty list", () =>
      use(make(), Effect.gen(function* () {
        expect(yield* (yield* Todos.Service).read({ location: "/p", sessionID: "s" })).toEqual([])
      })))

    test("a write replaces the whole list, in order", () =>
      use(make(), Effect.gen(function* () {
        const todos = yield* Todos.Service
        const key = { location: "/p", sessionID: "s" }
        yield* todos.write(key, [item("a"), item("b", "in_progress")])
        expect(yield* todos.read(key)).toEqual([item("a"), item("b", "in_progress")])
        yield* todos.write(key, [item("c", "completed")])
        expect(yield* todos.read(key)).toEqual([item("c", "completed")])
        yield* todos.write(key, [])
        expect(yield* todos.read(key)).toEqual([])
      })))

    test("lists are kept per Location and per session", () =>
      use(make(), Effect.gen(function* () {
        const todos = yield* Todos.Service
        yield* todos.write({ location: "/p", sessionID: "s" }, [item("mine")])
        expect(yield* todos.read({ location: "/q", sessionID: "s" })).toEqual([])
        expect(yield* todos.read({ location: "/p", sessionID: "t" })).toEqual([])
        yield* todos.write({ location: "/q", sessionID: "s" }, [item("theirs")])
        expect(yield* todos.read({ location: "/p", sessionID: "s" })).toEqual([item("mine")])
      })))

    test("changing what was read or written changes nothing stored", () =>
      use(make(), Effect.gen(function* () {
        const todos = yield* Todos.Service
        const key = { location: "/p", sessionID: "s" }
        const list = [item("a")]
        yield* todos.write(key, list)
        ;(list[0] as { content: string }).content = "changed"
        const read = yield* todos.read(key)
        ;(read[0] as { content: string }).content = "changed again"
        expect(yield* todos.read(key)).toEqual([item("a")])
      })))
  })
}

describe("Todos (sqlite)", () => {
  test("a list outlives closing and reopening the database, beside the settlements", async () => {
    const path = join(tempDir(), "core.db")
    const key = { location: "/p", sessionID: "s" }
    await use(Todos.layer(path), Effect.flatMap(Todos.Service, (todos) => todos.write(key, [item("kept")])))
    const layer = Layer.merge(Todos.layer(path), SqliteStore.layer(path))
    const found = await Effect.runPromise(
      Effect.gen(function* () {
        const settlements = yield* Store.Service
        expect(yield* settlements.begin({ ...key, toolCallID: "c" }, "todowrite", "build")).toBe(true)
        return yield* (yield* Todos.Service).read(key)
      }).pipe(Effect.provide(layer)),
    )
    expect(found).toEqual([item("kept")])
  })

  test("a database of the previous version gains the todos table, keeping its records", async () => {
    const path = join(tempDir(), "core.db")
    // A store as a core before the todos step left it (whatever steps come after it now), with a record in it.
    const step = SqliteStore.MIGRATIONS.findIndex((migration) => migration.includes("CREATE TABLE todos"))
    expect(step).toBeGreaterThan(0)
    const old = new Database(path, { create: true })
    for (const migration of SqliteStore.MIGRATIONS.slice(0, step)) old.exec(migration)
    old
      .query(
        "INSERT INTO settlements (location, session_id, call_id, tool, agent, state, owner, started_at) " +
          "VALUES ('/p', 's', 'c', 'echo', 'build', 'started', 'gone-host:1:1', 1)",
      )
      .run()
    old.exec(`PRAGMA user_version = ${step}`)
    old.close()
    const found = await Effect.runPromise(
      Effect.gen(function* () {
        const todos = yield* Todos.Service
        yield* todos.write({ location: "/p", sessionID: "s" }, [item("new")])
        return {
          record: yield* (yield* Store.Service).lookup({ location: "/p", sessionID: "s", toolCallID: "c" }),
          todos: yield* todos.read({ location: "/p", sessionID: "s" }),
        }
      }).pipe(Effect.provide(Layer.merge(Todos.layer(path), SqliteStore.layer(path)))),
    )
    expect(found.record).toMatchObject({ state: "started", tool: "echo" })
    expect(found.todos).toEqual([item("new")])
    const check = new Database(path, { readonly: true })
    expect((check.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(SqliteStore.SCHEMA_VERSION)
    check.close()
  })

  test("a list the table holds that is not a list is reported as a store error, not returned", async () => {
    const path = join(tempDir(), "core.db")
    await use(Todos.layer(path), Effect.void)
    const db = new Database(path)
    db.query("INSERT INTO todos (location, session_id, todos, updated_at) VALUES ('/p', 's', '{\"not\":\"a list\"}', 0)").run()
    db.close()
    const outcome = await Effect.runPromise(
      Effect.flip(Effect.flatMap(Todos.Service, (todos) => todos.read({ location: "/p", sessionID: "s" }))).pipe(
        Effect.provide(Todos.layer(path)),
      ),
    )
    expect(outcome).toBeInstanceOf(Store.StoreError)
    expect(outcome.reason).toBe("io")
  })
})

describe("Todos and retention", () => {
  const durable: ReadonlyArray<[string, () => Promise<Layer.Layer<Todos.Service | Store.Service, Store.StoreError>>]> = [
    ["sqlite", async () => {
      const path = join(tempDir(), "core.db")
      return Layer.merge(Todos.layer(path), SqliteStore.layer(path))
    }],
    ["postgres", async () => {
      const urls = await freshDatabase()
      return Layer.merge(PostgresStore.todosLayer(urls.postgres), PostgresStore.layer(urls.postgres))
    }],
  ]
  for (const [name, make] of durable) {
    test(`a prune forgets the lists not written since its cutoff, after the calls, in its batch (${name})`, async () => {
      const layer = await make()
      const found = await Effect.runPromise(
        Effect.gen(function* () {
          const todos = yield* Todos.Service
          const store = yield* Store.Service
          for (const sessionID of ["old1", "old2", "old3"]) yield* todos.write({ location: "/p", sessionID }, [item(sessionID)])
          // A settled call (one still running is never pruned).
          yield* store.settle({ location: "/p", sessionID: "old1", toolCallID: "c" }, Settlement.error("todowrite", "c", "unknown", "gone"), {
            state: "absent",
            agent: "build",
          })
          const cutoff = Date.now() + 1
          // On Postgres a time is listed back (and pruned) on this host's clock by a difference measured as the store
          // opened, true to within that round trip: the later list is written well past the cutoff.
          yield* Effect.promise(() => Bun.sleep(50))
          yield* todos.write({ location: "/p", sessionID: "new" }, [item("new")])
          // The list written after the cutoff stays. One call, then one list fit a batch of two; the rest go in the next.
          const first = yield* store.prune(cutoff, 2)
          const second = yield* store.prune(cutoff, 2)
          const third = yield* store.prune(cutoff, 2)
          const read = (sessionID: string) => todos.read({ location: "/p", sessionID })
          return { first, second, third, old: [yield* read("old1"), yield* read("old2"), yield* read("old3")], kept: yield* read("new") }
        }).pipe(Effect.provide(layer)),
      )
      expect(found).toEqual({ first: 2, second: 2, third: 0, old: [[], [], []], kept: [item("new")] })
    })

    test(`a Location keeping a retention of its own keeps its lists from the operator's prune, and its own takes them (${name})`, async () => {
      const layer = await make()
      const found = await Effect.runPromise(
        Effect.gen(function* () {
          const todos = yield* Todos.Service
          const store = yield* Store.Service
          yield* todos.write({ location: "/own", sessionID: "s" }, [item("own")])
          yield* todos.write({ location: "/other", sessionID: "s" }, [item("other")])
          yield* store.retain("/own", 30 * 86_400_000)
          const cutoff = Date.now() + 1
          const operators = yield* store.prune(cutoff, 10)
          const afterOperators = [yield* todos.read({ location: "/own", sessionID: "s" }), yield* todos.read({ location: "/other", sessionID: "s" })]
          const own = yield* store.prune(cutoff, 10, "/own")
          return { operators, afterOperators, own, left: yield* todos.read({ location: "/own", sessionID: "s" }) }
        }).pipe(Effect.provide(layer)),
      )
      expect(found).toEqual({ operators: 1, afterOperators: [[item("own")], []], own: 1, left: [] })
    })
  }

  test("a prune on Postgres kept waiting by a lock still takes its cutoff as given, not as late as it runs", async () => {
    const urls = await freshDatabase()
    const held = new SQL(urls.postgres, { max: 1 })
    try {
      const found = await Effect.runPromise(
        Effect.gen(function* () {
          const todos = yield* Todos.Service
          const store = yield* Store.Service
          yield* todos.write({ location: "/p", sessionID: "old" }, [item("old")])
          yield* Effect.promise(() => Bun.sleep(50))
          const cutoff = Date.now()
          yield* Effect.promise(() => Bun.sleep(50))
          yield* todos.write({ location: "/p", sessionID: "new" }, [item("new")])
          // Another connection holds the table: the prune's statement runs that much later.
          const release = yield* Effect.promise(
            () =>
              new Promise<() => void>((locked) => {
                void held.begin(async (tx) => {
                  await tx`LOCK TABLE core.todos IN ACCESS EXCLUSIVE MODE`
                  await new Promise<void>((done) => locked(done))
                })
              }),
          )
          // Released 400 ms after the prune is seen waiting for it, however long the prune took to get there.
          const watcher = new SQL(urls.postgres, { max: 1 })
          const waiting = (async () => {
            try {
              for (;;) {
                const rows = await watcher`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE '%todos%' AND query NOT ILIKE '%pg_stat_activity%'`
                if (rows.length > 0) break
                await Bun.sleep(10)
              }
              await Bun.sleep(400)
            } finally {
              release()
              await watcher.close()
            }
          })()
          const pruned = yield* store.prune(cutoff, 10)
          yield* Effect.promise(() => waiting)
          const read = (sessionID: string) => todos.read({ location: "/p", sessionID })
          return { pruned, old: yield* read("old"), kept: yield* read("new") }
        }).pipe(Effect.provide(Layer.merge(PostgresStore.todosLayer(urls.postgres), PostgresStore.layer(urls.postgres)))),
      )
      expect(found).toEqual({ pruned: 1, old: [], kept: [item("new")] })
    } finally {
      await held.close()
    }
  })
})
