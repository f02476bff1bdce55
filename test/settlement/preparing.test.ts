import { expect, test } from "bun:test"
import { join } from "node:path"
import { Deferred, Effect, Fiber, Layer, PubSub, Schema } from "effect"
import { Kernel as CoreKernel } from "../../src/host/kernel"
import { Permission } from "../../src/permission/permission"
import { Approvals } from "../../src/store/approvals"
import { Store } from "../../src/store/store"
import { tempDir } from "../support/temp"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Turn } from "../../src/settlement/turn"
import { Preparing } from "../../src/shell/preparing"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"

/** A call that records while it holds its turn and ends it with `done` once `release` completes. */
const call = (log: Array<string>, name: string, release: Deferred.Deferred<void>, end: "done" | "return" | "hold") =>
  Preparing.gated(
    Effect.gen(function* () {
      log.push(`${name} in`)
      yield* Deferred.await(release)
      if (end === "done") yield* Preparing.done
      log.push(`${name} out`)
      if (end === "hold") yield* Effect.never
    }),
  )

/**
 * Waits until `log` holds `count` entries, then one macrotask more: turns are granted on macrotasks of their own, so
 * a call let in alongside the awaited ones would show by then.
 */
const logged = (log: ReadonlyArray<string>, count: number) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 5_000
    while (log.length < count && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve))
    await new Promise((resolve) => setImmediate(resolve))
  })

test("at most AT_ONCE calls are prepared at once; `done` or the end of a call lets the next in", async () => {
  const log: Array<string> = []
  await Effect.runPromise(
    Effect.gen(function* () {
      const releases = yield* Effect.forEach([0, 1, 2, 3], () => Deferred.make<void>())
      const fibers = yield* Effect.forEach(["a", "b", "c", "d"], (name, index) =>
        Effect.forkDetach(call(log, name, releases[index]!, index === 0 ? "done" : "return"), { startImmediately: true }),
      )
      yield* logged(log, 2)
      expect(log).toEqual(["a in", "b in"])
      // `a` is prepared and then waits on the world: it no longer holds a turn.
      yield* Deferred.succeed(releases[0]!, undefined)
      yield* logged(log, 4)
      expect(log).toEqual(["a in", "b in", "a out", "c in"])
      yield* Deferred.succeed(releases[1]!, undefined)
      yield* logged(log, 6)
      expect(log.slice(4)).toEqual(["b out", "d in"])
      for (const release of releases) yield* Deferred.succeed(release, undefined)
      yield* Fiber.joinAll(fibers)
    }),
  )
})

test("a call that holds its turn past BUDGET_MS lets the next in, and a cancelled waiting call never runs", async () => {
  const log: Array<string> = []
  await Effect.runPromise(
    Effect.gen(function* () {
      const open = yield* Deferred.make<void>()
      const never = yield* Deferred.make<void>()
      // Two holders that never signal (a call waiting on a person), then a call cancelled while it waits, then one more.
      const holders = yield* Effect.forEach(["a", "b"], (name) =>
        Effect.forkDetach(call(log, name, open, "hold"), { startImmediately: true }),
      )
      const cancelled = yield* Effect.forkDetach(call(log, "c", never, "return"), { startImmediately: true })
      const last = yield* Effect.forkDetach(call(log, "d", open, "return"), { startImmediately: true })
      // The holders are in; the other two wait for a turn.
      yield* logged(log, 2)
      yield* Fiber.interrupt(cancelled)
      const started = performance.now()
      yield* Deferred.succeed(open, undefined)
      yield* Fiber.join(last)
      expect(performance.now() - started).toBeGreaterThanOrEqual(Preparing.BUDGET_MS - 20)
      expect(log).toEqual(["a in", "b in", "a out", "b out", "d in", "d out"])
      yield* Fiber.interruptAll(holders)
    }),
  )
})

test("the event loop runs between two turns: a timer due meanwhile fires before the next call is prepared", async () => {
  const log: Array<string> = []
  await Effect.runPromise(
    Effect.gen(function* () {
      const open = yield* Deferred.make<void>()
      yield* Deferred.succeed(open, undefined)
      const fibers = yield* Effect.forEach(["a", "b", "c", "d", "e", "f"], (name) =>
        Effect.forkDetach(
          call(log, name, open, "return").pipe(
            // Each call's preparation is processor work that lets nothing else run.
            Effect.tap(() => Effect.sync(() => Bun.sleepSync(5))),
          ),
          { startImmediately: true },
        ),
      )
      setTimeout(() => log.push("timer"), 0)
      yield* Fiber.joinAll(fibers)
      const timer = log.indexOf("timer")
      expect(timer).toBeGreaterThan(0)
      expect(timer).toBeLessThan(log.length - 1)
    }),
  )
})

test("a burst of calls that end at once is let in a slice at a time: one macrotask each SLICE_MS, not one per call", async () => {
  // The event loop's turns, counted by a macrotask that schedules itself again.
  let loops = 0
  let counting = true
  const count = () => {
    loops++
    if (counting) setImmediate(count)
  }
  /** A burst of `calls` calls, each taking `ms` of processor work in its turn: the loop's turn each was let in on. */
  const burst = (calls: number, ms: number) =>
    Effect.gen(function* () {
      const open = yield* Deferred.make<void>()
      yield* Deferred.succeed(open, undefined)
      const on: Array<number> = []
      const fibers = yield* Effect.forEach(Array.from({ length: calls }, (_, index) => index), () =>
        Effect.forkDetach(
          Preparing.gated(
            Effect.sync(() => {
              on.push(loops)
              for (const until = performance.now() + ms; performance.now() < until; );
            }),
          ),
          { startImmediately: true },
        ),
      )
      yield* Fiber.joinAll(fibers)
      return new Set(on).size
    })
  setImmediate(count)
  const [quick, slow] = await Effect.runPromise(Effect.all([burst(60, 0), burst(20, Preparing.SLICE_MS / 2)]))
  counting = false
  // 60 quick calls: the one alone at once, the rest in a slice or two (each took a loop's turn of its own before:
  // about 30 turns, two calls a turn); a few more where a loaded machine makes them slower.
  expect(quick).toBeLessThanOrEqual(6)
  // 20 calls of half a slice each: each turn of the loop runs at most AT_ONCE slices, each of at most three such
  // calls (two within SLICE_MS, and the one that crosses it), the event loop running in between.
  expect(slow).toBeGreaterThanOrEqual(Math.ceil(20 / (Preparing.AT_ONCE * 3)))
})

/** One macrotask: a turn may be granted at once again after it. */
const macrotask = Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))

test("a call alone is prepared at once, without waiting for a macrotask; the next in the same macrotask waits for one", async () => {
  const log: Array<string> = []
  await Effect.runPromise(
    Effect.gen(function* () {
      const open = yield* Deferred.make<void>()
      yield* Deferred.succeed(open, undefined)
      yield* macrotask
      const a = yield* Effect.forkDetach(call(log, "a", open, "return"), { startImmediately: true })
      // Prepared and ended before forking returned: nothing else ran meanwhile.
      expect(log).toEqual(["a in", "a out"])
      const b = yield* Effect.forkDetach(call(log, "b", open, "return"), { startImmediately: true })
      expect(log).toEqual(["a in", "a out"])
      yield* Fiber.joinAll([a, b])
      expect(log).toEqual(["a in", "a out", "b in", "b out"])
      // A macrotask later, a call alone is prepared at once again.
      yield* macrotask
      const c = yield* Effect.forkDetach(call(log, "c", open, "return"), { startImmediately: true })
      expect(log.slice(4)).toEqual(["c in", "c out"])
      yield* Fiber.join(c)
    }),
  )
})

test("a call prepared at once that holds its turn past BUDGET_MS lets the next in, as one granted later does", async () => {
  const log: Array<string> = []
  const entered = new Map<string, number>()
  await Effect.runPromise(
    Effect.gen(function* () {
      const open = yield* Deferred.make<void>()
      yield* Deferred.succeed(open, undefined)
      yield* macrotask
      const started = performance.now()
      const timed = (name: string) =>
        Preparing.gated(
          Effect.gen(function* () {
            entered.set(name, performance.now())
            log.push(`${name} in`)
            if (name !== "d") yield* Effect.never
          }),
        )
      // `a` is prepared at once, `b` on a macrotask; both hold their turns (a call waiting on a person). The budgets
      // of both let `c` and `d` in together: were `a`'s never counted, `d` would wait for `c`'s budget as well.
      const holders = yield* Effect.forEach(["a", "b", "c"], (name) => Effect.forkDetach(timed(name), { startImmediately: true }))
      expect(log).toEqual(["a in"])
      yield* Effect.forkDetach(timed("d"), { startImmediately: true }).pipe(Effect.flatMap(Fiber.join))
      expect(log).toEqual(["a in", "b in", "c in", "d in"])
      expect(entered.get("c")! - started).toBeGreaterThanOrEqual(Preparing.BUDGET_MS - 20)
      expect(entered.get("d")! - entered.get("c")!).toBeLessThan(Preparing.BUDGET_MS / 2)
      yield* Fiber.interruptAll(holders)
    }),
  )
})

// A call's turn ends as its tool's execute starts: a tool waiting on the world (an MCP server, a request, a timer)
// held it for the whole budget, so a burst of such calls was let in two per BUDGET_MS, and another session's call
// waited behind them for seconds. A tool that prepares inside its execute (bash) keeps the turn until `done`.
test("a tool waiting in its execute lets the next call in at once; one that keeps its turn holds it until done", async () => {
  const CALLS = 12
  const outcome = await Effect.runPromise(
    Effect.gen(function* () {
      const release = yield* Deferred.make<void>()
      let started = 0
      const waits = Tool.make({
        description: "Waits on the world",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () => Effect.sync(() => ++started).pipe(Effect.andThen(Deferred.await(release)), Effect.as("ok")),
      })
      let keptStarted = 0
      const keeps = Turn.keeps(
        Tool.make({
          description: "Prepares inside its execute",
          input: Schema.Struct({}),
          output: Schema.String,
          execute: () => Effect.sync(() => ++keptStarted).pipe(Effect.andThen(Deferred.await(release)), Effect.as("kept")),
        }),
      )
      yield* (yield* Registry.Service).tools.register({ waits, keeps })
      const turn = yield* (yield* Settler.Service).materialize()
      const settle = (name: string) => Preparing.gated(turn.settle(Kernel.call(name, {})))
      const at = performance.now()
      const fibers = yield* Effect.forEach(Array.from({ length: CALLS }, () => "waits"), (name) => Effect.forkChild(settle(name)))
      while (started < CALLS && performance.now() - at < 5_000) yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      const allIn = performance.now() - at
      // Those holding their turns: two in, the rest wait for a turn to end (or the budget).
      const kept = yield* Effect.forEach([1, 2, 3, 4], () => Effect.forkChild(settle("keeps")))
      // Half a budget: the two let in have started; the others still wait for a turn.
      yield* Effect.sleep(Preparing.BUDGET_MS / 2)
      const keptIn = keptStarted
      yield* Deferred.succeed(release, undefined)
      const settled = yield* Effect.forEach([...fibers, ...kept], Fiber.join)
      return { started, allIn, keptIn, statuses: new Set(settled.map((each) => each.settlement.status)) }
    }).pipe(Effect.scoped, Effect.provide(Kernel.layer())),
  )
  expect(outcome.started).toBe(CALLS)
  // Let in on macrotasks of their own, not a budget apart: well under one budget for all twelve.
  expect(outcome.allIn).toBeLessThan(Preparing.BUDGET_MS)
  expect(outcome.keptIn).toBe(Preparing.AT_ONCE)
  expect([...outcome.statuses]).toEqual(["success"])
})

// A call waiting on a person held its turn for the whole budget: a burst of calls that each asked was let in two per
// BUDGET_MS, and another session's call waited behind them (3,000 asking calls held an `echo` for 110 s).
test("a call that asks a person gives up its turn: a burst of asking calls is let in at once", async () => {
  const CALLS = 12
  const outcome = await Effect.runPromise(
    Effect.gen(function* () {
      const asked = Tool.make({
        description: "Asked of a person first (no rule allows it)",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () => Effect.succeed("ran"),
      })
      yield* (yield* Registry.Service).tools.register({ asked })
      const permission = yield* Permission.Service
      const requests = yield* permission.subscribe
      const turn = yield* (yield* Settler.Service).materialize()
      const at = performance.now()
      const fibers = yield* Effect.forEach(Array.from({ length: CALLS }), () =>
        Effect.forkChild(Preparing.gated(turn.settle(Kernel.call("asked", {})))),
      )
      const ids: Array<string> = []
      while (ids.length < CALLS) {
        const event = yield* PubSub.take(requests)
        if (event.type === "asked") ids.push(event.request.id)
      }
      const allAsked = performance.now() - at
      for (const id of ids) yield* permission.reply(id, { reply: "once" })
      const settled = yield* Effect.forEach(fibers, Fiber.join)
      return { allAsked, statuses: new Set(settled.map((each) => each.settlement.status)) }
    }).pipe(
      Effect.scoped,
      Effect.provide(
        CoreKernel.layer({
          store: Store.layerMemory,
          outputsDirectory: join(tempDir(), "outputs"),
          permission: Permission.layer({
            project: tempDir(),
            configured: { rules: [{ action: "asked", resource: "*", effect: "ask", source: { file: "test", path: "asked" } }], agents: new Map() },
          }).pipe(Layer.provide(Approvals.layerMemory)),
        }),
      ),
    ),
  )
  expect(outcome.allAsked).toBeLessThan(Preparing.BUDGET_MS)
  expect([...outcome.statuses]).toEqual(["success"])
})
