import { Database } from "bun:sqlite"
import { describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { Settlement } from "../../src/settlement/settlement"
import { SqliteStore } from "../../src/store/sqlite"
import { Owner } from "../../src/store/owner"
import { Store } from "../../src/store/store"
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
]

const use = <A, E>(layer: Layer.Layer<Store.Service, Store.StoreError>, program: Effect.Effect<A, E, Store.Service>) =>
  Effect.runPromise(program.pipe(Effect.provide(layer)))

for (const [name, make] of implementations) {
  describe(`Store contract (${name})`, () => {
    test("an unknown call has no record", () =>
      use(make(), Effect.gen(function* () {
        expect(yield* (yield* Store.Service).lookup({ sessionID: "s", toolCallID: "c" })).toBeUndefined()
      })))

    test("begin records the intent once; a second begin for the same call is refused", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const key = { sessionID: "s", toolCallID: "c" }
        expect(yield* store.begin(key, "echo")).toBe(true)
        expect(yield* store.begin(key, "other")).toBe(false)
        expect(yield* store.lookup(key)).toEqual({ state: "started", tool: "echo", owner: Owner.current, running: true })
      })))

    test("a call that never began is settled only if nothing is recorded for it", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const fresh = { sessionID: "s", toolCallID: "fresh" }
        const begun = { sessionID: "s", toolCallID: "begun" }
        expect(yield* store.settle(fresh, settlement("fresh"), { state: "absent" })).toBe(true)
        expect(yield* store.lookup(fresh)).toEqual({ state: "settled", settlement: settlement("fresh") })
        expect(yield* store.begin(fresh, "echo")).toBe(false)
        // A call another settler began is never overwritten by an "absent" settlement.
        yield* store.begin(begun, "echo")
        expect(yield* store.settle(begun, settlement("unknown tool"), { state: "absent" })).toBe(false)
        expect(yield* store.lookup(begun)).toMatchObject({ state: "started" })
      })))

    test("the owner settles a begun call, and a settlement is final", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const key = { sessionID: "s", toolCallID: "c" }
        yield* store.begin(key, "echo")
        expect(yield* store.settle(key, settlement("first"), { state: "owned" })).toBe(true)
        expect(yield* store.settle(key, settlement("second"), { state: "owned" })).toBe(false)
        expect(yield* store.settle(key, settlement("third"), { state: "absent" })).toBe(false)
        expect(yield* store.lookup(key)).toEqual({ state: "settled", settlement: settlement("first") })
      })))

    test("fail marks a begun call failed with its reason, which can then be settled once", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const begun = { sessionID: "s", toolCallID: "begun" }
        yield* store.begin(begun, "echo")
        yield* store.fail(begun, "disk full")
        expect(yield* store.lookup(begun)).toEqual({ state: "failed", tool: "echo", reason: "disk full" })
        expect(yield* store.settle(begun, settlement("replay"), { state: "failed" })).toBe(true)
        expect(yield* store.settle(begun, settlement("again"), { state: "failed" })).toBe(false)
        yield* store.fail(begun, "late")
        expect(yield* store.lookup(begun)).toEqual({ state: "settled", settlement: settlement("replay") })
      })))

    test("what a caller does to a returned settlement never changes the record", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const key = { sessionID: "s", toolCallID: "c" }
        const original = settlement("c")
        yield* store.settle(key, original, { state: "absent" })
        ;(original.content as Array<unknown>).push("mutated")
        const first = yield* store.lookup(key)
        if (first?.state === "settled") (first.settlement as { status: string }).status = "error"
        expect(yield* store.lookup(key)).toEqual({ state: "settled", settlement: settlement("c") })
      })))

    test("prune forgets calls recorded before the cutoff", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        const key = { sessionID: "s", toolCallID: "c" }
        yield* store.settle(key, settlement("c"), { state: "absent" })
        expect(yield* store.prune(Date.now() - 60_000)).toBe(0)
        expect(yield* store.prune(Date.now() + 1)).toBe(1)
        expect(yield* store.lookup(key)).toBeUndefined()
      })))

    test("calls are keyed by session and call id together", () =>
      use(make(), Effect.gen(function* () {
        const store = yield* Store.Service
        yield* store.settle({ sessionID: "a", toolCallID: "c" }, settlement("c"), { state: "absent" })
        expect(yield* store.lookup({ sessionID: "b", toolCallID: "c" })).toBeUndefined()
        expect(yield* store.begin({ sessionID: "b", toolCallID: "c" }, "echo")).toBe(true)
      })))
  })
}

describe("SqliteStore", () => {
  test("records survive closing and reopening the database", async () => {
    const path = join(tempDir(), "core.db")
    const key = { sessionID: "s", toolCallID: "c" }
    await use(SqliteStore.layer(path), Effect.gen(function* () {
      yield* (yield* Store.Service).settle(key, settlement("c"), { state: "absent" })
    }))
    const recorded = await use(SqliteStore.layer(path), Effect.gen(function* () {
      return yield* (yield* Store.Service).lookup(key)
    }))
    expect(recorded).toEqual({ state: "settled", settlement: settlement("c") })
  })

  test("processes opening a new store at the same moment all succeed: it is created and migrated once", async () => {
    const path = join(tempDir(), "core.db")
    const script = `
      import { Effect, Layer } from "effect"
      import { SqliteStore } from ${JSON.stringify(join(import.meta.dir, "../../src/store/sqlite.ts"))}
      await Effect.runPromise(Effect.scoped(Layer.build(SqliteStore.layer(${JSON.stringify(path)}))))
    `
    const children = Array.from({ length: 8 }, () =>
      Bun.spawn([process.execPath, "-e", script], { cwd: join(import.meta.dir, "../.."), stderr: "pipe" }),
    )
    const results = await Promise.all(
      children.map(async (child) => ({ code: await child.exited, stderr: await new Response(child.stderr).text() })),
    )
    expect(results).toEqual(Array.from({ length: 8 }, () => ({ code: 0, stderr: "" })))
    const db = new Database(path, { readonly: true })
    expect((db.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(SqliteStore.SCHEMA_VERSION)
    db.close()
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
