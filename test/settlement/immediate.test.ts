// The immediate path (src/settlement/immediate.ts) against the laws, on both paths where the outcome must be the
// same: which path a call took is seen from the fiber its tool ran in; a tool that throws, fails, goes async after
// a side effect, is interrupted there, or is killed (kill -9) mid-execute; a call whose key is already running; a
// store that answers on a later tick, as a remote one does.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, Schema, Scope } from "effect"
import { Kernel as CoreKernel } from "../../src/host/kernel"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Store } from "../../src/store/store"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"
import { tempDir } from "../support/temp"

const register = (record: Record<string, Tool.Any>) =>
  Effect.gen(function* () {
    yield* (yield* Registry.Service).tools.register(record)
  })

const turn = Effect.gen(function* () {
  return yield* (yield* Settler.Service).materialize()
})

const source = (path: string) => JSON.stringify(join(import.meta.dir, "../../src", path))

/**
 * Another process settling `call` of a tool that writes a line and then spins synchronously for ever, on the SQLite
 * store in `dataDir`, on the immediate path or not: killed while its tool runs, it never settles the call.
 */
const spinning = (dataDir: string, call: Settler.Call, immediate: boolean) =>
  Bun.spawn(
    [
      process.execPath,
      "-e",
      `
      import { writeSync } from "node:fs"
      import { Effect, Schema } from "effect"
      import { Kernel } from ${source("host/kernel.ts")}
      import { Registry } from ${source("registry/registry.ts")}
      import { Settler } from ${source("settlement/settler.ts")}
      import { SqliteStore } from ${source("store/sqlite-store.ts")}
      import { Tool } from ${source("tool/tool.ts")}
      const spin = Tool.make({
        description: "spins",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () => Effect.sync(() => {
          writeSync(1, "running\\n")
          for (;;) {}
        }),
      })
      await Effect.runPromise(Effect.gen(function* () {
        yield* (yield* Registry.Service).tools.register({ spin })
        yield* (yield* (yield* Settler.Service).materialize()).settle(${JSON.stringify(call)})
      }).pipe(
        Effect.scoped,
        Effect.provideService(Settler.Immediately, ${immediate}),
        Effect.provide(Kernel.layer({
          store: SqliteStore.layer(${JSON.stringify(join(dataDir, "core.db"))}),
          outputsDirectory: ${JSON.stringify(join(dataDir, "outputs"))},
        })),
      ))
      `,
    ],
    { stdout: "pipe", stderr: "inherit" },
  )

const tool = (execute: () => Effect.Effect<string, Tool.Failure>) =>
  Tool.make({ description: "t", input: Schema.Struct({}), output: Schema.String, execute })

describe("which path a call takes", () => {
  test("a synchronous, allowed call settles on the immediate path: its tool runs in a fiber of its own", () =>
    Kernel.run(
      Effect.gen(function* () {
        let ranIn: Fiber.Fiber<unknown, unknown> | undefined
        yield* register({ where: tool(() => Effect.sync(() => ((ranIn = Fiber.getCurrent()), "here"))) })
        const settling = yield* Effect.fiber
        const settled = yield* (yield* turn).settle(Kernel.call("where", {}))
        expect(settled).toMatchObject({ replayed: false, settlement: { status: "success", structured: "here" } })
        expect(ranIn).toBeDefined()
        expect(ranIn).not.toBe(settling)
      }),
    ))

  test("on the SQLite store such a call settles without an async boundary: Effect.runSyncExit has its settlement", () =>
    Kernel.run(
      Effect.gen(function* () {
        yield* register({ now: tool(() => Effect.succeed("now")) })
        const settle = (yield* turn).settle
        const call = Kernel.call("now", {})
        const exit = Effect.runSyncExit(settle(call))
        expect(exit).toEqual(Exit.succeed({ replayed: false, settlement: expect.objectContaining({ status: "success", structured: "now" }) }))
        // Recorded durably: the same call replays.
        expect((yield* settle(call)).replayed).toBe(true)
      }),
      { durable: true },
    ))

  test("with Settler.Immediately off, the same call settles on the fiber path: its tool runs in the settling fiber", () =>
    Kernel.run(
      Effect.gen(function* () {
        let ranIn: Fiber.Fiber<unknown, unknown> | undefined
        yield* register({ where: tool(() => Effect.sync(() => ((ranIn = Fiber.getCurrent()), "here"))) })
        const settling = yield* Effect.fiber
        const settled = yield* (yield* turn).settle(Kernel.call("where", {})).pipe(Effect.provideService(Settler.Immediately, false))
        expect(settled.settlement.structured).toBe("here")
        expect(ranIn).toBe(settling)
      }),
    ))
})

for (const path of Kernel.PATHS) {
  describe(`on the ${path} path`, () => {
    Kernel.settleOn(path)

    test("a synchronous tool that throws is a defect: operational, recorded failed, replayed as interrupted, never run again", () =>
      Kernel.run(
        Effect.gen(function* () {
          let runs = 0
          yield* register({
            thrower: tool(() =>
              Effect.sync(() => {
                runs++
                throw new Error("thrown inside Effect.sync")
              }),
            ),
          })
          const settle = (yield* turn).settle
          const call = Kernel.call("thrower", {})
          const exit = yield* Effect.exit(settle(call))
          expect(Exit.isFailure(exit) && String(exit.cause)).toContain("thrown inside Effect.sync")
          expect(yield* (yield* Store.Service).lookup(yield* Kernel.keyOf(call))).toMatchObject({ state: "failed", tool: "thrower" })
          const replay = yield* settle(call)
          expect(replay).toMatchObject({ replayed: true, settlement: { status: "error", error: { kind: "interrupted" } } })
          expect(JSON.stringify(replay.settlement)).not.toContain("thrown inside")
          expect(runs).toBe(1)
        }),
      ))

    test("a toModelOutput that throws is a defect after the tool ran: recorded failed, replayed as interrupted", () =>
      Kernel.run(
        Effect.gen(function* () {
          let runs = 0
          yield* register({
            shown: Tool.make({
              description: "s",
              input: Schema.Struct({}),
              output: Schema.String,
              execute: () => Effect.sync(() => `run ${++runs}`),
              toModelOutput: () => {
                throw new Error("projection broke")
              },
            }),
          })
          const settle = (yield* turn).settle
          const call = Kernel.call("shown", {})
          const exit = yield* Effect.exit(settle(call))
          expect(Exit.isFailure(exit) && String(exit.cause)).toContain("projection broke")
          expect(yield* (yield* Store.Service).lookup(yield* Kernel.keyOf(call))).toMatchObject({ state: "failed", tool: "shown" })
          expect((yield* settle(call)).settlement.error?.kind).toBe("interrupted")
          expect(runs).toBe(1)
        }),
      ))

    test("a synchronous Tool.Failure settles model-visible, is recorded, and replays without running again", () =>
      Kernel.run(
        Effect.gen(function* () {
          let runs = 0
          yield* register({ refuse: tool(() => Effect.suspend(() => (runs++, Effect.fail(new Tool.Failure({ message: "No." }))))) })
          const settle = (yield* turn).settle
          const call = Kernel.call("refuse", {})
          expect(yield* settle(call)).toMatchObject({ replayed: false, settlement: { status: "error", error: { kind: "failure", message: "No." } } })
          expect(yield* settle(call)).toMatchObject({ replayed: true, settlement: { error: { kind: "failure", message: "No." } } })
          expect(runs).toBe(1)
        }),
      ))

    test("a tool that starts synchronously and then goes async runs exactly once, and settles with its result", () =>
      Kernel.run(
        Effect.gen(function* () {
          let runs = 0
          let budget = 0
          yield* register({
            // A side effect at once, then a real async boundary.
            later: tool(() => Effect.sync(() => runs++).pipe(Effect.andThen(Effect.sleep("5 millis")), Effect.as("later"))),
            // Enough steps to exhaust a fiber's budget: it yields to the scheduler part way through.
            long: tool(() =>
              Effect.gen(function* () {
                for (let i = 0; i < 10_000; i++) yield* Effect.sync(() => budget++)
                return "long"
              }),
            ),
          })
          const settle = (yield* turn).settle
          const call = Kernel.call("later", {})
          expect(yield* settle(call)).toMatchObject({ replayed: false, settlement: { status: "success", structured: "later" } })
          expect(yield* settle(call)).toMatchObject({ replayed: true, settlement: { structured: "later" } })
          expect(runs).toBe(1)
          expect((yield* settle(Kernel.call("long", {}))).settlement.structured).toBe("long")
          expect(budget).toBe(10_000)
        }),
      ))

    test("interrupted after it went async, such a tool is stopped (its finalizer runs once) and the call is recorded cancelled", () =>
      Kernel.run(
        Effect.gen(function* () {
          let runs = 0
          let released = 0
          const waiting = yield* Deferred.make<void>()
          yield* register({
            stuck: tool(() =>
              Effect.acquireRelease(
                Effect.sync(() => runs++),
                () => Effect.sync(() => released++),
              ).pipe(Effect.andThen(Deferred.succeed(waiting, undefined)), Effect.andThen(Effect.never), Effect.scoped),
            ),
          })
          const settle = (yield* turn).settle
          const call = Kernel.call("stuck", {})
          const settling = yield* Effect.forkChild(settle(call))
          yield* Deferred.await(waiting)
          yield* Fiber.interrupt(settling)
          expect(released).toBe(1)
          const recorded = yield* (yield* Store.Service).lookup(yield* Kernel.keyOf(call))
          expect(recorded?.state === "settled" && recorded.settlement.status).toBe("cancelled")
          expect(yield* settle(call)).toMatchObject({ replayed: true, settlement: { status: "cancelled" } })
          expect(runs).toBe(1)
        }),
      ))

    test("a call whose key is already running joins it: a tool that would answer at once is not run again", () =>
      Kernel.run(
        Effect.gen(function* () {
          let runs = 0
          const gate = yield* Deferred.make<void>()
          const started = yield* Deferred.make<void>()
          yield* register({
            // The first run waits at the gate; any later run would answer at once.
            once: tool(() =>
              Effect.suspend(() =>
                runs++ === 0
                  ? Deferred.succeed(started, undefined).pipe(Effect.andThen(Deferred.await(gate)), Effect.as("first"))
                  : Effect.succeed("again"),
              ),
            ),
          })
          const settle = (yield* turn).settle
          const call = Kernel.call("once", {})
          const first = yield* Effect.forkChild(settle(call))
          yield* Deferred.await(started)
          const duplicate = yield* Effect.forkChild(settle(call))
          yield* Deferred.succeed(gate, undefined)
          expect((yield* Fiber.join(first)).settlement.structured).toBe("first")
          expect((yield* Fiber.join(duplicate)).settlement.structured).toBe("first")
          expect(runs).toBe(1)
        }),
      ))

    test("kill -9 while a synchronous tool runs leaves its intent: the call replays as interrupted and never runs again", async () => {
      const dataDir = tempDir()
      const call = Kernel.call("spin", {})
      const killed = spinning(dataDir, call, path === "immediate")
      const reader = killed.stdout.getReader()
      let printed = ""
      while (!printed.includes("running\n")) {
        const { value, done } = await reader.read()
        if (done) break
        printed += new TextDecoder().decode(value)
      }
      expect(printed).toBe("running\n")
      killed.kill(9)
      expect(await killed.exited).not.toBe(0)
      let runs = 0
      const { settlement, replayed } = await Kernel.run(
        Effect.gen(function* () {
          yield* register({ spin: tool(() => Effect.sync(() => `run ${++runs}`)) })
          return yield* (yield* turn).settle(call)
        }),
        { dataDir, durable: true },
      )
      expect(runs).toBe(0)
      expect(replayed).toBe(true)
      expect(settlement.error?.kind).toBe("interrupted")
    })

    test("on a store that answers on a later tick (as a remote one does) calls settle, replay and fail as on any store", async () => {
      let runs = 0
      const later = Kernel.laterStore
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          yield* register({
            echo: tool(() => Effect.sync(() => `run ${++runs}`)),
            boom: tool(() => Effect.die(new Error("boom"))),
          })
          const settle = (yield* turn).settle
          const call = Kernel.call("echo", {})
          const first = yield* settle(call)
          const again = yield* settle(call)
          const other = yield* settle(Kernel.call("echo", {}))
          const broken = Kernel.call("boom", {})
          const failed = yield* Effect.exit(settle(broken))
          const replayed = yield* settle(broken)
          return { first, again, other, failed, replayed }
        }).pipe(
          Effect.scoped,
          Kernel.onPath,
          Effect.provide(CoreKernel.layer({ store: later, outputsDirectory: join(tempDir(), "outputs") })),
        ),
      )
      expect(outcome.first).toMatchObject({ replayed: false, settlement: { structured: "run 1" } })
      expect(outcome.again).toMatchObject({ replayed: true, settlement: { structured: "run 1" } })
      expect(outcome.other.settlement.structured).toBe("run 2")
      expect(Exit.isFailure(outcome.failed)).toBe(true)
      expect(outcome.replayed.settlement.error?.kind).toBe("interrupted")
      expect(runs).toBe(2)
    })
  })
}

describe("a store that answers at once (Store.Now)", () => {
  /** The memory store's operations answered through `now` (possibly changed), its Effects counted as they run. */
  const answering = (change: (now: Store.Now) => Partial<Store.Now>, ran: Array<string>) =>
    Layer.effect(
      Store.Service,
      Effect.gen(function* () {
        const real = yield* Store.Service
        const counted = <A, E>(name: string, effect: Effect.Effect<A, E>) => Effect.suspend(() => (ran.push(name), effect))
        return Store.answering(
          Store.Service.of({
            ...real,
            lookup: (key) => counted("lookup", real.lookup(key)),
            begin: (key, tool, agent, details) => counted("begin", real.begin(key, tool, agent, details)),
            settle: (key, settlement, expected) => counted("settle", real.settle(key, settlement, expected)),
            fail: (key, reason) => counted("fail", real.fail(key, reason)),
          }),
          { ...real.now!, ...change(real.now!) },
        )
      }),
    ).pipe(Layer.provide(Store.layerMemory))

  const settleWith = <A>(store: Layer.Layer<Store.Service>, body: Effect.Effect<A, unknown, Registry.Service | Settler.Service | Store.Service | Scope.Scope>) =>
    Effect.runPromise(
      body.pipe(Effect.scoped, Effect.provide(CoreKernel.layer({ store, outputsDirectory: join(tempDir(), "outputs") }))),
    )

  test("the memory and SQLite stores answer at once, and a copy of either ({ ...store }) does not", () =>
    Promise.all(
      [false, true].map((durable) =>
        Kernel.run(
          Effect.gen(function* () {
            const store = yield* Store.Service
            expect(store.now).toBeDefined()
            expect({ ...store }.now).toBeUndefined()
          }),
          { durable },
        ),
      ),
    ))

  test("on the immediate path a call is recorded through it, with no store Effect run; on the fiber path through the Effects", async () => {
    const ran: Array<string> = []
    const outcome = await settleWith(
      answering(() => ({}), ran),
      Effect.gen(function* () {
        yield* register({ echo: tool(() => Effect.succeed("hi")) })
        const settle = (yield* turn).settle
        const immediate = yield* settle(Kernel.call("echo", {}))
        const recorded = ran.splice(0)
        const fibers = yield* settle(Kernel.call("echo", {})).pipe(Effect.provideService(Settler.Immediately, false))
        return { immediate, recorded, fibers, fiberRan: ran.splice(0) }
      }),
    )
    expect(outcome.immediate).toMatchObject({ replayed: false, settlement: { status: "success", structured: "hi" } })
    expect(outcome.recorded).toEqual([])
    expect(outcome.fibers.settlement.structured).toBe("hi")
    expect(outcome.fiberRan).toEqual(["lookup", "begin", "settle"])
  })

  test("an intent it fails to record (a StoreError thrown) fails the call operationally, and the tool never runs", async () => {
    let runs = 0
    const exit = await settleWith(
      answering(() => ({ begin: () => { throw Store.failed("/data/core.db", "write", new Error("disk full")) } }), []),
      Effect.gen(function* () {
        yield* register({ echo: tool(() => Effect.sync(() => `run ${++runs}`)) })
        return yield* Effect.exit((yield* turn).settle(Kernel.call("echo", {})))
      }),
    )
    expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toBeInstanceOf(Settler.OperationalError)
    expect(String(Exit.isFailure(exit) && Cause.squash(exit.cause))).toContain("Could not record the call")
    expect(runs).toBe(0)
  })

  test("a settlement it fails to record fails the call operationally; anything else it throws is a defect", async () => {
    for (const [thrown, operational] of [
      [Store.failed("/data/core.db", "write", new Error("disk full")), true],
      [new TypeError("a bug in the store"), false],
    ] as const) {
      let runs = 0
      const exit = await settleWith(
        answering(() => ({ settle: () => { throw thrown } }), []),
        Effect.gen(function* () {
          yield* register({ echo: tool(() => Effect.sync(() => `run ${++runs}`)) })
          return yield* Effect.exit((yield* turn).settle(Kernel.call("echo", {})))
        }),
      )
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        expect(Cause.hasDies(exit.cause)).toBe(!operational)
        if (operational) expect(Cause.squash(exit.cause)).toBeInstanceOf(Settler.OperationalError)
        else expect(String(Cause.squash(exit.cause))).toContain("a bug in the store")
      }
      expect(runs).toBe(1)
    }
  })
})
