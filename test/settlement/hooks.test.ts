// Plugin hooks (DESIGN §12) in the settler, on both settle paths alike: a before hook's replaced input checked again
// by the tool's schema, its denial, an after hook's replaced content, a hook's failure (operational, recorded as the
// fiber path records it), hooks that go async (awaited where they stand, interruptible only before the call begins;
// an after hook is given a grace once its call is cancelled, then stopped)
// and at most once with them (a duplicate joins, a replay runs no hook), also on a store that answers later. Which
// path a hooked call took is seen from the fiber its tool ran in.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Deferred, Effect, Exit, Fiber, Schema, type Scope } from "effect"
import { Plugin } from "../../src/author/plugin"
import { Kernel as CoreKernel } from "../../src/host/kernel"
import { Registry } from "../../src/registry/registry"
import { Hooks } from "../../src/settlement/hooks"
import { Settler } from "../../src/settlement/settler"
import { Steps } from "../../src/settlement/steps"
import { Store } from "../../src/store/store"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"
import { tempDir } from "../support/temp"

/** Adds `hooks` to the kernel's table as the plugin `plugin`, after those added before. */
const hook = (plugin: string, hooks: Plugin.Hooks) =>
  Effect.gen(function* () {
    ;(yield* Hooks.Current)!.add({ plugin, hooks })
  })

/** How often a tool ran, and the fiber it last ran in. */
interface Runs {
  count: number
  fiber?: Fiber.Fiber<unknown, unknown> | undefined
}

/** A tool doubling `n`, counting its runs in `runs` and noting the fiber it ran in. */
const doubling = (runs: Runs) =>
  Tool.make({
    description: "Doubles n",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.Struct({ doubled: Schema.Int }),
    execute: (input) =>
      Effect.sync(() => {
        runs.count++
        runs.fiber = Fiber.getCurrent()
        return { doubled: input.n * 2 }
      }),
  })

/** `body` given the settle of a turn made once `setup` has registered tools and added hooks, on a fresh kernel. */
const kernel = <A>(setup: Effect.Effect<void, unknown, Kernel.Services | Scope.Scope>, body: (settle: (call: Settler.Call) => Effect.Effect<Settler.Settled, Settler.OperationalError>) => Effect.Effect<A, unknown, Kernel.Services>) =>
  Kernel.run(
    Effect.gen(function* () {
      yield* setup
      const turn = yield* (yield* Settler.Service).materialize()
      return yield* body(turn.settle)
    }),
  )

const register = (tools: Record<string, Tool.Any>) =>
  Effect.gen(function* () {
    yield* (yield* Registry.Service).tools.register(tools)
  })

const recordOf = (call: Settler.Call) =>
  Effect.gen(function* () {
    return yield* (yield* Store.Service).lookup(yield* Kernel.keyOf(call))
  })

/** A hook's answer at once, or after an async boundary. */
const TIMINGS = {
  "at once": <A, E>(effect: Effect.Effect<A, E>) => effect,
  "after an async boundary": <A, E>(effect: Effect.Effect<A, E>) => Effect.andThen(Effect.sleep("1 millis"), effect),
} as const

describe("which path a hooked call takes", () => {
  test("a call meeting hooks that answer at once or go async settles on the immediate path: its tool runs in a fiber of its own", () => {
    const runs: Runs = { count: 0 }
    return kernel(
      Effect.gen(function* () {
        yield* register({ double: doubling(runs), later: doubling(runs) })
        yield* hook("now", { tools: ["double"], "tool.execute.before": () => Effect.succeed({ input: { n: 2 } }), "tool.execute.after": () => Effect.void })
        yield* hook("later", { tools: ["later"], "tool.execute.before": () => TIMINGS["after an async boundary"](Effect.void) })
      }),
      (settle) =>
        Effect.gen(function* () {
          const settling = yield* Effect.fiber
          for (const name of ["double", "later"]) {
            runs.fiber = undefined
            expect((yield* settle(Kernel.call(name, { n: 2 }))).settlement.structured).toEqual({ doubled: 4 })
            const ranIn: Fiber.Fiber<unknown, unknown> | undefined = runs.fiber
            expect(ranIn).toBeDefined()
            expect(ranIn).not.toBe(settling)
            // The same call with the immediate path turned off runs in the settling fiber.
            runs.fiber = undefined
            yield* settle(Kernel.call(name, { n: 2 })).pipe(Effect.provideService(Settler.Immediately, false))
            expect(runs.fiber as Fiber.Fiber<unknown, unknown> | undefined).toBe(settling)
          }
        }),
    )
  })
})

for (const path of Kernel.PATHS) {
  describe(`on the ${path} path`, () => {
    Kernel.settleOn(path)

    for (const [timing, answer] of Object.entries(TIMINGS)) {
      describe(`with hooks answering ${timing}`, () => {
        test("before hooks run in installation order, each seeing the input the one before left; the tool gets the last", () => {
          const runs = { count: 0 }
          const seen: Array<unknown> = []
          return kernel(
            Effect.gen(function* () {
              yield* register({ double: doubling(runs) })
              for (const plugin of ["a", "b"]) {
                yield* hook(plugin, {
                  "tool.execute.before": (call) => {
                    seen.push([plugin, call])
                    return answer(Effect.succeed({ input: { n: (call.input as { n: number }).n + 1 } }))
                  },
                })
              }
            }),
            (settle) =>
              Effect.gen(function* () {
                const settled = yield* settle(Kernel.call("double", { n: 1 }))
                expect(settled).toMatchObject({ replayed: false, settlement: { status: "success", structured: { doubled: 6 } } })
                expect(seen).toEqual([
                  ["a", { tool: "double", input: { n: 1 } }],
                  ["b", { tool: "double", input: { n: 2 } }],
                ])
                expect(runs.count).toBe(1)
              }),
          )
        })

        test("an input a before hook replaced that the tool's schema refuses is operational: the tool never runs, nothing is recorded", () => {
          const runs = { count: 0 }
          let hooked = 0
          return kernel(
            Effect.gen(function* () {
              yield* register({ double: doubling(runs) })
              yield* hook("swap", { "tool.execute.before": () => answer(Effect.sync(() => (hooked++, { input: { n: "not a number" } }))) })
            }),
            (settle) =>
              Effect.gen(function* () {
                const call = Kernel.call("double", { n: 1 })
                const exit = yield* Effect.exit(settle(call))
                expect(Exit.isFailure(exit)).toBe(true)
                const message = Exit.isFailure(exit) ? String(exit.cause) : ""
                expect(message).toContain("Settler.OperationalError")
                expect(message).toContain("replaced the input of double with a value its input schema refuses")
                expect(runs.count).toBe(0)
                // Nothing began: as on the fiber path, no record (a retry meets the hook again).
                expect(yield* recordOf(call)).toBeUndefined()
                expect(Exit.isFailure(yield* Effect.exit(settle(call)))).toBe(true)
                expect(hooked).toBe(2)
                expect(runs.count).toBe(0)
              }),
          )
        })

        test("a before hook's denial settles as denied and is recorded; the tool never runs; the replay runs no hook", () => {
          const runs = { count: 0 }
          let hooked = 0
          return kernel(
            Effect.gen(function* () {
              yield* register({ double: doubling(runs) })
              yield* hook("gate", {
                "tool.execute.before": () => answer(Effect.suspend(() => (hooked++, Effect.fail(new Plugin.Denied({ message: "Not on Fridays." }))))),
              })
              // A later hook is not met once an earlier one denied.
              yield* hook("after-gate", { "tool.execute.before": () => Effect.sync(() => void (hooked += 100)) })
            }),
            (settle) =>
              Effect.gen(function* () {
                const call = Kernel.call("double", { n: 1 })
                expect(yield* settle(call)).toMatchObject({
                  replayed: false,
                  settlement: { status: "error", error: { kind: "denied", message: "Not on Fridays." } },
                })
                const recorded = yield* recordOf(call)
                expect(recorded?.state === "settled" && recorded.settlement.error?.kind).toBe("denied")
                expect(yield* settle(call)).toMatchObject({ replayed: true, settlement: { error: { kind: "denied" } } })
                expect(hooked).toBe(1)
                expect(runs.count).toBe(0)
              }),
          )
        })

        test("after hooks replace what the model reads in order; the structured output goes; the replay runs no hook", () => {
          const runs = { count: 0 }
          const seen: Array<unknown> = []
          return kernel(
            Effect.gen(function* () {
              yield* register({ double: doubling(runs), plain: doubling(runs) })
              yield* hook("first", {
                tools: ["double"],
                "tool.execute.after": (result) => {
                  seen.push(result)
                  return answer(Effect.succeed({ content: `doubled to ${(result.output as { doubled: number }).doubled}` }))
                },
              })
              yield* hook("second", {
                tools: ["double"],
                "tool.execute.after": (result) => {
                  seen.push(result.content)
                  return answer(Effect.succeed({ content: [...result.content, { type: "text" as const, text: "!" }] }))
                },
              })
            }),
            (settle) =>
              Effect.gen(function* () {
                const call = Kernel.call("double", { n: 2 })
                const { settlement } = yield* settle(call)
                expect(settlement.status).toBe("success")
                expect(settlement.content).toEqual([
                  { type: "text", text: "doubled to 4" },
                  { type: "text", text: "!" },
                ])
                expect(settlement.structured).toBeNull()
                expect(seen).toEqual([
                  // A structured output is projected as no parts: the hook sees the encoded output.
                  { tool: "double", input: { n: 2 }, output: { doubled: 4 }, content: [] },
                  [{ type: "text", text: "doubled to 4" }],
                ])
                expect(yield* settle(call)).toMatchObject({ replayed: true, settlement: { content: settlement.content } })
                expect(seen).toHaveLength(2)
                // A tool no hook applies to keeps its structured output.
                expect((yield* settle(Kernel.call("plain", { n: 2 }))).settlement.structured).toEqual({ doubled: 4 })
                expect(runs.count).toBe(2)
              }),
          )
        })

        test("a before hook that fails or dies is operational, never a skip: the tool never runs, nothing is recorded", () => {
          const runs = { count: 0 }
          return kernel(
            Effect.gen(function* () {
              yield* register({ dies: doubling(runs), fails: doubling(runs), throws: doubling(runs) })
              yield* hook("broken", { tools: ["dies"], "tool.execute.before": () => answer(Effect.die(new Error("broken before"))) })
              yield* hook("failing", {
                tools: ["fails"],
                "tool.execute.before": () => answer(Effect.fail(new Error("not a denial")) as unknown as Effect.Effect<void, Plugin.Denied>),
              })
              yield* hook("throwing", {
                tools: ["throws"],
                "tool.execute.before": () => {
                  throw new Error("thrown before")
                },
              })
            }),
            (settle) =>
              Effect.gen(function* () {
                for (const [name, message] of [
                  ["dies", "tool.execute.before hook of broken failed: broken before"],
                  ["fails", "tool.execute.before hook of failing failed: not a denial"],
                  ["throws", "tool.execute.before hook of throwing failed: thrown before"],
                ] as const) {
                  const call = Kernel.call(name, { n: 1 })
                  const exit = yield* Effect.exit(settle(call))
                  expect(Exit.isFailure(exit) && String(exit.cause)).toContain(message)
                  expect(yield* recordOf(call)).toBeUndefined()
                }
                expect(runs.count).toBe(0)
              }),
          )
        })

        test("an after hook that fails is operational after the tool ran: recorded failed, replayed as interrupted, never run again", () => {
          const runs = { count: 0 }
          let hooked = 0
          return kernel(
            Effect.gen(function* () {
              yield* register({ double: doubling(runs) })
              yield* hook("broken", { "tool.execute.after": () => answer(Effect.suspend(() => (hooked++, Effect.die(new Error("broken after"))))) })
            }),
            (settle) =>
              Effect.gen(function* () {
                const call = Kernel.call("double", { n: 1 })
                const exit = yield* Effect.exit(settle(call))
                expect(Exit.isFailure(exit) && String(exit.cause)).toContain("tool.execute.after hook of broken failed: broken after")
                expect(yield* recordOf(call)).toMatchObject({ state: "failed", tool: "double" })
                const replay = yield* settle(call)
                expect(replay).toMatchObject({ replayed: true, settlement: { status: "error", error: { kind: "interrupted" } } })
                expect(JSON.stringify(replay.settlement)).not.toContain("broken after")
                expect(runs.count).toBe(1)
                expect(hooked).toBe(1)
              }),
          )
        })
      })
    }

    test("on a store that answers on a later tick (as a remote one does) hooked calls settle and replay as on any store", async () => {
      const runs = { count: 0 }
      const hooked = { before: 0, after: 0 }
      const later = Kernel.laterStore
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          yield* register({ double: doubling(runs) })
          yield* hook("both", {
            "tool.execute.before": () => Effect.sync(() => (hooked.before++, { input: { n: 3 } })),
            "tool.execute.after": () => Effect.sync(() => (hooked.after++, { content: "hooked" })),
          })
          const settle = (yield* (yield* Settler.Service).materialize()).settle
          const call = Kernel.call("double", { n: 1 })
          const first = yield* settle(call)
          const again = yield* settle(call)
          const other = yield* settle(Kernel.call("double", { n: 1 }))
          return { first, again, other }
        }).pipe(Effect.scoped, Kernel.onPath, Effect.provide(CoreKernel.layer({ store: later, outputsDirectory: join(tempDir(), "outputs") }))),
      )
      expect(outcome.first).toMatchObject({ replayed: false, settlement: { content: [{ type: "text", text: "hooked" }], structured: null } })
      expect(outcome.again).toMatchObject({ replayed: true, settlement: { content: [{ type: "text", text: "hooked" }] } })
      expect(outcome.other.replayed).toBe(false)
      expect(hooked).toEqual({ before: 2, after: 2 })
      expect(runs.count).toBe(2)
    })

    test("a recorded call runs no hook: settled, it replays; recorded for another agent, it conflicts", () => {
      const runs = { count: 0 }
      let hooked = 0
      return kernel(
        Effect.gen(function* () {
          yield* register({ double: doubling(runs) })
          yield* hook("counting", { "tool.execute.before": () => Effect.sync(() => void hooked++), "tool.execute.after": () => Effect.sync(() => void hooked++) })
        }),
        (settle) =>
          Effect.gen(function* () {
            const call = Kernel.call("double", { n: 1 })
            yield* settle(call)
            expect(hooked).toBe(2)
            expect(yield* settle(call)).toMatchObject({ replayed: true, settlement: { structured: { doubled: 2 } } })
            // Begun elsewhere by another agent: a conflict, answered before any hook.
            const other = Kernel.call("double", { n: 1 })
            expect(yield* (yield* Store.Service).begin(yield* Kernel.keyOf(other), "double", "plan")).toBe(true)
            expect((yield* settle(other)).settlement.error?.kind).toBe("conflict")
            expect(hooked).toBe(2)
            expect(runs.count).toBe(1)
          }),
      )
    })

    test("with hooks that go async, a call runs its hooks and its tool once: a duplicate joins it, the replay runs nothing", () => {
      const runs = { count: 0 }
      const hooked = { before: 0, after: 0 }
      return Kernel.run(
        Effect.gen(function* () {
          const entered = yield* Deferred.make<void>()
          const gate = yield* Deferred.make<void>()
          yield* register({ double: doubling(runs) })
          yield* hook("slow", {
            // A side effect at once, then a wait: a path that ran it again from the start would count it twice.
            "tool.execute.before": () =>
              Effect.sync(() => hooked.before++).pipe(
                Effect.andThen(Deferred.succeed(entered, undefined)),
                Effect.andThen(Deferred.await(gate)),
                Effect.as({ input: { n: 5 } }),
              ),
            "tool.execute.after": () =>
              Effect.sync(() => hooked.after++).pipe(Effect.andThen(Effect.yieldNow), Effect.as({ content: "after" })),
          })
          const settle = (yield* (yield* Settler.Service).materialize()).settle
          const call = Kernel.call("double", { n: 1 })
          const first = yield* Effect.forkChild(settle(call))
          yield* Deferred.await(entered)
          const duplicate = yield* Effect.forkChild(settle(call))
          yield* Deferred.succeed(gate, undefined)
          const settled = yield* Fiber.join(first)
          expect(settled).toMatchObject({ replayed: false, settlement: { status: "success", content: [{ type: "text", text: "after" }] } })
          expect((yield* Fiber.join(duplicate)).settlement).toEqual(settled.settlement)
          expect(yield* settle(call)).toMatchObject({ replayed: true, settlement: { content: [{ type: "text", text: "after" }] } })
          const recorded = yield* recordOf(call)
          expect(recorded?.state).toBe("settled")
          expect(hooked).toEqual({ before: 1, after: 1 })
          expect(runs.count).toBe(1)
        }),
      )
    })

    test("a call whose before hook waits is told it goes on (not a replay) once its record is read, before the hook ends", () => {
      const runs = { count: 0 }
      return Kernel.run(
        Effect.gen(function* () {
          const entered = yield* Deferred.make<void>()
          const gate = yield* Deferred.make<void>()
          yield* register({ double: doubling(runs) })
          yield* hook("slow", {
            "tool.execute.before": () => Deferred.succeed(entered, undefined).pipe(Effect.andThen(Deferred.await(gate))),
          })
          const settle = (yield* (yield* Settler.Service).materialize()).settle
          const told: Array<boolean> = []
          const call = Kernel.call("double", { n: 1 })
          const settling = yield* Effect.forkChild(settle(call, { onRecord: (replays) => void told.push(replays) }))
          yield* Deferred.await(entered)
          expect(told[0]).toBe(false)
          yield* Deferred.succeed(gate, undefined)
          expect((yield* Fiber.join(settling)).replayed).toBe(false)
          // Settled again, the call is told it replays, before any hook could run.
          const again: Array<boolean> = []
          expect((yield* settle(call, { onRecord: (replays) => void again.push(replays) })).replayed).toBe(true)
          expect(again[0]).toBe(true)
          expect(runs.count).toBe(1)
        }),
      )
    })

    test("interrupted while a before hook waits, the hook is stopped (its finalizer runs once) and the call, which never began, is recorded cancelled", () => {
      const runs = { count: 0 }
      let released = 0
      let hooked = 0
      return Kernel.run(
        Effect.gen(function* () {
          const waiting = yield* Deferred.make<void>()
          yield* register({ double: doubling(runs) })
          yield* hook("stuck", {
            "tool.execute.before": () =>
              Effect.acquireRelease(
                Effect.sync(() => hooked++),
                () => Effect.sync(() => released++),
              ).pipe(Effect.andThen(Deferred.succeed(waiting, undefined)), Effect.andThen(Effect.never), Effect.scoped),
          })
          const settle = (yield* (yield* Settler.Service).materialize()).settle
          const call = Kernel.call("double", { n: 1 })
          const settling = yield* Effect.forkChild(settle(call))
          yield* Deferred.await(waiting)
          const joining = yield* Effect.forkChild(settle(call))
          yield* Fiber.interrupt(settling)
          expect(released).toBe(1)
          const recorded = yield* recordOf(call)
          expect(recorded?.state === "settled" && recorded.settlement.status).toBe("cancelled")
          // A duplicate that joined gets the record, not an interruption.
          expect((yield* Fiber.join(joining)).settlement.status).toBe("cancelled")
          expect(yield* settle(call)).toMatchObject({ replayed: true, settlement: { status: "cancelled" } })
          expect(hooked).toBe(1)
          expect(runs.count).toBe(0)
        }),
      )
    })

    test("an after hook that goes async is not interrupted: the call interrupted meanwhile settles with what the hook answered", () => {
      const runs = { count: 0 }
      return Kernel.run(
        Effect.gen(function* () {
          const entered = yield* Deferred.make<void>()
          const gate = yield* Deferred.make<void>()
          yield* register({ double: doubling(runs) })
          yield* hook("slow", {
            "tool.execute.after": () =>
              Deferred.succeed(entered, undefined).pipe(Effect.andThen(Deferred.await(gate)), Effect.as({ content: "kept" })),
          })
          const settle = (yield* (yield* Settler.Service).materialize()).settle
          const call = Kernel.call("double", { n: 1 })
          const settling = yield* Effect.forkChild(settle(call))
          yield* Deferred.await(entered)
          const interrupting = yield* Effect.forkChild(Fiber.interrupt(settling))
          yield* Effect.yieldNow
          yield* Deferred.succeed(gate, undefined)
          yield* Fiber.join(interrupting)
          const recorded = yield* recordOf(call)
          expect(recorded?.state === "settled" && recorded.settlement.content).toEqual([{ type: "text", text: "kept" }])
          expect(yield* settle(call)).toMatchObject({ replayed: true, settlement: { status: "success" } })
          expect(runs.count).toBe(1)
        }),
      )
    })

    // One that never ends (a request nobody answers) left the call, and a sidecar shutting down, waiting for good.
    test("an after hook still running AFTER_HOOK_GRACE_MS after its call was cancelled is stopped: the call is recorded cancelled", () => {
      const runs = { count: 0 }
      let released = 0
      return Kernel.run(
        Effect.gen(function* () {
          const entered = yield* Deferred.make<void>()
          yield* register({ double: doubling(runs) })
          yield* hook("stuck", {
            "tool.execute.after": () =>
              Effect.acquireRelease(Effect.void, () => Effect.sync(() => released++)).pipe(
                Effect.andThen(Deferred.succeed(entered, undefined)),
                Effect.andThen(Effect.never),
                Effect.scoped,
              ),
          })
          const settle = (yield* (yield* Settler.Service).materialize()).settle
          const call = Kernel.call("double", { n: 1 })
          const settling = yield* Effect.forkChild(settle(call))
          yield* Deferred.await(entered)
          const started = Date.now()
          yield* Fiber.interrupt(settling)
          const waited = Date.now() - started
          expect(waited).toBeGreaterThanOrEqual(Steps.AFTER_HOOK_GRACE_MS - 50)
          expect(waited).toBeLessThan(Steps.AFTER_HOOK_GRACE_MS + 2_000)
          expect(released).toBe(1)
          const recorded = yield* recordOf(call)
          expect(recorded?.state === "settled" && recorded.settlement.status).toBe("cancelled")
          expect(yield* settle(call)).toMatchObject({ replayed: true, settlement: { status: "cancelled" } })
          expect(runs.count).toBe(1)
        }),
      )
    }, 15_000)
  })
}

// A hook is handed read-only views: one that changed the input or the output in place (`input.n = "3"`, not an
// answer) got past the schemas, so the tool ran on input its schema refuses and a success carried structured output
// its schema refuses (law 2). Only what a hook answers changes the call, and is checked; a change in place fails the
// hook, operationally, saying so.
for (const path of Kernel.PATHS) {
  describe(`on the ${path} path: hooks that change what they are handed in place`, () => {
    Kernel.settleOn(path)

    test("fail the call operationally: the tool never runs on what the hook wrote, and no success carries it", async () => {
      const seen: Array<unknown> = []
      const tool = () =>
        Tool.make({
          description: "Doubles n",
          input: Schema.Struct({ n: Schema.Int }),
          output: Schema.Struct({ doubled: Schema.Int }),
          execute: (input) => Effect.sync(() => (seen.push(input.n), { doubled: input.n * 2 })),
          toModelOutput: ({ output }) => `doubled to ${output.doubled}`,
        })
      const outcome = await kernel(
        Effect.gen(function* () {
          yield* register({ before: tool(), after: tool(), reader: tool() })
          yield* hook("careless", {
            tools: ["before"],
            "tool.execute.before": (call) => Effect.sync(() => void ((call.input as { n: unknown }).n = "3")),
          })
          yield* hook("careless-after", {
            tools: ["after"],
            "tool.execute.after": (call) => Effect.sync(() => void ((call.output as { doubled: unknown }).doubled = "[redacted]")),
          })
          // Reading what it is handed, nested values and array methods included, is as before.
          yield* hook("reader", {
            tools: ["reader"],
            "tool.execute.before": (call) => Effect.succeed({ input: { n: (call.input as { n: number }).n + 1 } }),
            "tool.execute.after": (call) => Effect.succeed({ content: call.content.map((part) => (part.type === "text" ? `${part.text}!` : "?")).join("") }),
          })
        }),
        (settle) =>
          Effect.gen(function* () {
            return {
              before: yield* Effect.flip(settle(Kernel.call("before", { n: 4 }))),
              after: yield* Effect.flip(settle(Kernel.call("after", { n: 5 }))),
              reader: yield* settle(Kernel.call("reader", { n: 1 })),
            }
          }),
      )
      expect(outcome.before.message).toContain("read-only")
      expect(outcome.after.message).toContain("read-only")
      // The after hook's tool ran (on its own input); the before hook's never did.
      expect(seen).toEqual([5, 2])
      expect(outcome.reader.settlement).toMatchObject({ status: "success", content: [{ type: "text", text: "doubled to 4!" }] })
    })

    // A Date or a Schema.Class instance is handed as it is (its methods work only on the object itself): changed in
    // place, the tool ran on an input its schema refuses (a string for an Int under 10), or on another date.
    test("a change in place to a class instance or a Date in the input fails the call too; reading them is as before", async () => {
      class Counted extends Schema.Class<Counted>("Counted")({ n: Schema.Int.check(Schema.isLessThan(10)) }) {}
      const seen: Array<unknown> = []
      const read: Array<unknown> = []
      const counted = Tool.make({
        description: "Counts",
        input: Counted,
        output: Schema.String,
        execute: (input) => Effect.sync(() => (seen.push(input.n), String(input.n))),
      })
      const dated = Tool.make({
        description: "Dates",
        input: Schema.Struct({ at: Schema.Date }),
        output: Schema.String,
        execute: (input) => Effect.sync(() => (seen.push(input.at.toISOString()), input.at.toISOString())),
      })
      const outcome = await kernel(
        Effect.gen(function* () {
          yield* register({ counted, dated, read: counted })
          yield* hook("careless", {
            tools: ["counted", "dated"],
            "tool.execute.before": (call) =>
              Effect.sync(() => {
                if (call.tool === "counted") (call.input as { n: unknown }).n = "a string"
                else (call.input as { at: Date }).at.setTime(0)
              }),
          })
          yield* hook("reader", {
            tools: ["read"],
            "tool.execute.before": (call) => Effect.sync(() => void read.push((call.input as Counted).n)),
          })
        }),
        (settle) =>
          Effect.gen(function* () {
            return {
              counted: yield* Effect.flip(settle(Kernel.call("counted", { n: 3 }))),
              dated: yield* Effect.flip(settle(Kernel.call("dated", { at: "2030-05-05T00:00:00.000Z" }))),
              read: yield* settle(Kernel.call("read", { n: 3 })),
            }
          }),
      )
      expect(outcome.counted.message).toContain("changed the input of counted in place")
      expect(outcome.dated.message).toContain("changed the input of dated in place")
      expect(outcome.read.settlement).toMatchObject({ status: "success", structured: "3" })
      expect({ read, seen }).toEqual({ read: [3], seen: [3] })
    })

    // A shallowly frozen output: its members had to be handed as they are (a proxy's rule for a frozen member), so
    // reading one threw, and one reached through its descriptor was changed in place into the success. And a hook
    // answering with the input it was handed gave the tool the view, whose own change in place then blamed a hook.
    test("stay read-only over a frozen value, readable through it; a tool gets its own input back from a hook", async () => {
      const frozenTool = Tool.make({
        description: "Answers a frozen object",
        input: Schema.Struct({}),
        output: Schema.Unknown,
        execute: () => Effect.succeed(Object.freeze({ inner: { x: 1 }, list: [1, 2] })),
      })
      const changer = Tool.make({
        description: "Changes its own input",
        input: Schema.Struct({ n: Schema.Int, nested: Schema.Struct({ m: Schema.Int }) }),
        output: Schema.Int,
        execute: (input) => Effect.sync(() => ((input.nested as { m: number }).m = input.n * 10)),
      })
      const read: Array<unknown> = []
      const outcome = await kernel(
        Effect.gen(function* () {
          yield* register({ frozen: frozenTool, frozenSly: frozenTool, changer })
          yield* hook("frozen-reader", {
            tools: ["frozen"],
            "tool.execute.after": (call) => Effect.sync(() => void read.push(JSON.parse(JSON.stringify(call.output)), (call.output as { inner: { x: number } }).inner.x)),
          })
          yield* hook("frozen-sly", {
            tools: ["frozenSly"],
            "tool.execute.after": (call) =>
              Effect.sync(() => {
                ;(Object.getOwnPropertyDescriptor(call.output, "inner")!.value as { x: unknown }).x = 99
              }),
          })
          yield* hook("passes-it-on", { tools: ["changer"], "tool.execute.before": (call) => Effect.succeed({ input: call.input }) })
        }),
        (settle) =>
          Effect.gen(function* () {
            return {
              frozen: yield* settle(Kernel.call("frozen", {})),
              sly: yield* Effect.flip(settle(Kernel.call("frozenSly", {}))),
              changer: yield* settle(Kernel.call("changer", { n: 3, nested: { m: 1 } })),
            }
          }),
      )
      expect(read).toEqual([{ inner: { x: 1 }, list: [1, 2] }, 1])
      expect(outcome.frozen.settlement).toMatchObject({ status: "success", structured: { inner: { x: 1 }, list: [1, 2] } })
      expect(outcome.sly.message).toContain("read-only")
      expect(outcome.changer.settlement).toMatchObject({ status: "success", structured: 30 })
    })

    test("stay read-only through a property's descriptor, and show every member when spread or written as JSON", async () => {
      const seen: Array<unknown> = []
      const logged: Array<unknown> = []
      const tool = () =>
        Tool.make({
          description: "Doubles n",
          input: Schema.Struct({ n: Schema.Int, nested: Schema.Struct({ m: Schema.Int }) }),
          output: Schema.Struct({ doubled: Schema.Int }),
          execute: (input) => Effect.sync(() => (seen.push(input.n), { doubled: input.n * 2 })),
        })
      const outcome = await kernel(
        Effect.gen(function* () {
          yield* register({ sly: tool(), slyNested: tool(), logged: tool() })
          // The descriptor's value was the object itself, not a view: a way to change it in place.
          yield* hook("sly", {
            tools: ["sly"],
            "tool.execute.before": (call) =>
              Effect.sync(() => {
                ;(Object.getOwnPropertyDescriptor(call, "input")!.value as { n: unknown }).n = "3"
              }),
          })
          yield* hook("sly-nested", {
            tools: ["slyNested"],
            "tool.execute.before": (call) =>
              Effect.sync(() => {
                ;(Object.getOwnPropertyDescriptor(call.input, "nested")!.value as { m: unknown }).m = "x"
              }),
          })
          // A hook that logs what it is handed, as an audit hook would.
          yield* hook("logger", {
            tools: ["logged"],
            "tool.execute.before": (call) => Effect.sync(() => void logged.push(Object.keys({ ...call }), JSON.parse(JSON.stringify(call)))),
            "tool.execute.after": (call) => Effect.sync(() => void logged.push(JSON.parse(JSON.stringify({ ...call })))),
          })
        }),
        (settle) =>
          Effect.gen(function* () {
            return {
              sly: yield* Effect.flip(settle(Kernel.call("sly", { n: 4, nested: { m: 1 } }))),
              slyNested: yield* Effect.flip(settle(Kernel.call("slyNested", { n: 6, nested: { m: 1 } }))),
              logged: yield* settle(Kernel.call("logged", { n: 7, nested: { m: 2 } })),
            }
          }),
      )
      expect(outcome.sly.message).toContain("read-only")
      expect(outcome.slyNested.message).toContain("read-only")
      expect(seen).toEqual([7])
      expect(outcome.logged.settlement).toMatchObject({ status: "success" })
      expect(logged).toEqual([
        ["tool", "input"],
        { tool: "logged", input: { n: 7, nested: { m: 2 } } },
        { tool: "logged", input: { n: 7, nested: { m: 2 } }, output: { doubled: 14 }, content: [] },
      ])
    })

    // A model's input holding `__proto__` and `constructor` keys: a hook copying it with Object.assign made the view
    // the copy's prototype, and each later key assigned to the copy was refused as a change in place: the call failed
    // operationally, whenever a model wanted, though the hook changed nothing it was handed.
    test("a hook copying an input that holds __proto__ and constructor keys changes its copy, not what it was handed", async () => {
      const copies: Array<unknown> = []
      const seen: Array<unknown> = []
      const outcome = await kernel(
        Effect.gen(function* () {
          yield* register({
            env: Tool.make({
              description: "Counts variables",
              input: Schema.Struct({ env: Schema.Record(Schema.String, Schema.Unknown) }),
              output: Schema.Int,
              execute: (input) => Effect.sync(() => (seen.push(JSON.stringify(input.env)), Object.keys(input.env).length)),
            }),
          })
          yield* hook("copier", {
            tools: ["env"],
            "tool.execute.before": (call) =>
              Effect.sync(() => {
                const copy = Object.assign({}, (call.input as { env: object }).env) as Record<string, unknown>
                copy.extra = 1
                copies.push(Object.keys(copy))
              }),
          })
        }),
        (settle) => settle(Kernel.call("env", JSON.parse('{ "env": { "__proto__": { "a": 1 }, "constructor": { "b": 2 }, "PATH": "/bin" } }'))),
      )
      expect(outcome.settlement).toMatchObject({ status: "success", structured: 3 })
      expect(copies).toEqual([["constructor", "PATH", "extra"]])
      expect(seen).toEqual(['{"__proto__":{"a":1},"constructor":{"b":2},"PATH":"/bin"}'])
      // Nothing leaked onto every object's prototype.
      expect(({} as Record<string, unknown>).a).toBeUndefined()
    })
  })
}
