import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { Approvals } from "../../src/store/approvals"
import { SqliteStore } from "../../src/store/sqlite"
import type { Store } from "../../src/store/store"
import { tempDir } from "../support/temp"

const implementations: ReadonlyArray<[string, () => Layer.Layer<Approvals.Service, Store.StoreError>]> = [
  ["memory", () => Approvals.layerMemory],
  ["sqlite", () => SqliteStore.approvalsLayer(join(tempDir(), "core.db"))],
]

const use = <A, E>(layer: Layer.Layer<Approvals.Service, Store.StoreError>, program: Effect.Effect<A, E, Approvals.Service>) =>
  Effect.runPromise(program.pipe(Effect.provide(layer)))

const pairs = (approvals: ReadonlyArray<Approvals.Approval>) => approvals.map((approval) => [approval.action, approval.pattern])

for (const [name, make] of implementations) {
  describe(`Approvals contract (${name})`, () => {
    test("saves patterns per project and action, once each", () =>
      use(make(), Effect.gen(function* () {
        const approvals = yield* Approvals.Service
        yield* approvals.save("/a", "bash", ["git checkout *", "ls *"])
        yield* approvals.save("/a", "bash", ["ls *"])
        yield* approvals.save("/a", "edit", ["src/*"])
        yield* approvals.save("/b", "bash", ["rm *"])
        expect(pairs(yield* approvals.list("/a")).sort()).toEqual([["bash", "git checkout *"], ["bash", "ls *"], ["edit", "src/*"]])
        expect(pairs(yield* approvals.list("/b"))).toEqual([["bash", "rm *"]])
        expect(yield* approvals.list("/c")).toEqual([])
      })))

    test("reset clears one action or all of a project's approvals, and says how many", () =>
      use(make(), Effect.gen(function* () {
        const approvals = yield* Approvals.Service
        yield* approvals.save("/a", "bash", ["ls *", "cat *"])
        yield* approvals.save("/a", "edit", ["src/*"])
        yield* approvals.save("/b", "bash", ["ls *"])
        expect(yield* approvals.reset("/a", "bash")).toBe(2)
        expect(pairs(yield* approvals.list("/a"))).toEqual([["edit", "src/*"]])
        expect(yield* approvals.reset("/a")).toBe(1)
        expect(yield* approvals.list("/a")).toEqual([])
        expect(pairs(yield* approvals.list("/b"))).toEqual([["bash", "ls *"]])
      })))
  })
}

describe("SqliteStore approvals", () => {
  test("approvals survive reopening and live beside the settlements in one database", async () => {
    const path = join(tempDir(), "core.db")
    await use(SqliteStore.approvalsLayer(path), Effect.gen(function* () {
      yield* (yield* Approvals.Service).save("/a", "bash", ["ls *"])
    }))
    const both = Layer.merge(SqliteStore.approvalsLayer(path), SqliteStore.layer(path))
    const listed = await Effect.runPromise(
      Effect.gen(function* () {
        return yield* (yield* Approvals.Service).list("/a")
      }).pipe(Effect.provide(both)),
    )
    expect(pairs(listed)).toEqual([["bash", "ls *"]])
  })
})
