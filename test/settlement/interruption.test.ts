// The settler owns every record (DESIGN §2 law 12): a call interrupted before it began running, while it waits
// for a permission reply, is recorded cancelled by the settler itself, whoever called it; settling it again then
// replays that and runs nothing, and a duplicate that joined it gets the record rather than an interruption.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Deferred, Effect, Fiber, Layer, PubSub, Schema } from "effect"
import { Kernel as CoreKernel } from "../../src/host/kernel"
import { Permission } from "../../src/permission/permission"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Stopping } from "../../src/settlement/stopping"
import { Approvals } from "../../src/store/approvals"
import { Store } from "../../src/store/store"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"
import { tempDir } from "../support/temp"

/** A kernel whose rules ask before `guarded` runs; nobody answers unless the test does. */
const asking = () => {
  const directory = tempDir()
  const permission = Permission.layer({
    project: directory,
    configured: {
      rules: [{ action: "guarded", resource: "*", effect: "ask", source: { file: "test", path: "rules[0]" } }],
      agents: new Map(),
    },
  }).pipe(Layer.provide(Approvals.layerMemory))
  return CoreKernel.layer({ store: Store.layerMemory, outputsDirectory: join(directory, "outputs"), permission })
}

// Every law here holds on both settle paths: the immediate one (where it applies) and the fiber path alone.
for (const path of Kernel.PATHS) {
  describe(`on the ${path} path`, () => {
    Kernel.settleOn(path)

    describe("a call interrupted before it began running", () => {
      test("is recorded cancelled; the same call again replays it and runs nothing; a joiner gets the record", async () => {
        let runs = 0
        const guarded = Tool.make({
          description: "Runs only when approved",
          input: Schema.Struct({}),
          output: Schema.String,
          execute: () => Effect.sync(() => `run ${++runs}`),
        })
        const outcome = await Effect.runPromise(
          Effect.gen(function* () {
            yield* (yield* Registry.Service).tools.register({ guarded })
            const permission = yield* Permission.Service
            const events = yield* permission.subscribe
            const asked = yield* Deferred.make<void>()
            yield* Effect.forkScoped(
              Effect.forever(
                PubSub.take(events).pipe(Effect.flatMap((event) => (event.type === "asked" ? Deferred.succeed(asked, undefined) : Effect.void))),
              ),
            )
            const turn = yield* (yield* Settler.Service).materialize()
            const call = Kernel.call("guarded", {})
            const first = yield* Effect.forkChild(turn.settle(call))
            yield* Deferred.await(asked)
            const joiner = yield* Effect.forkChild(turn.settle(call))
            yield* Fiber.interrupt(first)
            const joined = yield* Fiber.join(joiner)
            const recorded = yield* (yield* Store.Service).lookup({ ...call, location: permission.project })
            // Nobody asks now: the replay answers from the record.
            const again = yield* turn.settle(call)
            return { joined, recorded, again }
          }).pipe(Effect.scoped, Kernel.onPath, Effect.provide(asking())),
        )
        expect(outcome.recorded).toMatchObject({ state: "settled", settlement: { status: "cancelled", tool: "guarded" } })
        // Nothing of it ran, and the model is told so (not that it may have done part of its work).
        expect(outcome.joined.settlement.content).toEqual([
          { type: "text", text: expect.stringContaining("The guarded call was cancelled by the user or the host before it ran") },
        ])
        expect(JSON.stringify(outcome.joined.settlement.content)).toContain("nothing of it ran")
        expect(outcome.joined.settlement.status).toBe("cancelled")
        expect(outcome.again).toMatchObject({ replayed: true, settlement: { status: "cancelled" } })
        expect(runs).toBe(0)
      })
    })
  })
}

// A tool that cannot be stopped part-way (a file change being committed) finishes what it does even when its call is
// interrupted meanwhile; the output it says it finished with (Stopping.finished) is then the call's settlement, not
// a cancellation: the change happened, and a host told "cancelled" would make it again. A tool that says nothing
// of the kind is cancelled as before.
for (const path of Kernel.PATHS) {
  describe(`on the ${path} path: a call interrupted while its tool cannot be`, () => {
    Kernel.settleOn(path)

    test("settles with what the tool did, recorded so; the same call again replays it and runs nothing", async () => {
      let runs = 0
      const committing = Tool.make({
        description: "Commits a change that cannot be stopped part-way",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: (_input, context) =>
          Effect.gen(function* () {
            yield* context.progress({ message: "committing" })
            yield* Effect.sleep("30 millis")
            runs++
            return yield* Stopping.finished("committed")
          }).pipe(Effect.uninterruptible),
      })
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          yield* (yield* Registry.Service).tools.register({ committing })
          const turn = yield* (yield* Settler.Service).materialize()
          const call = Kernel.call("committing", {})
          const started = yield* Deferred.make<void>()
          const settling = yield* Effect.forkChild(turn.settle(call, { onProgress: () => Deferred.succeed(started, undefined).pipe(Effect.asVoid) }))
          yield* Deferred.await(started)
          yield* Fiber.interrupt(settling)
          const again = yield* turn.settle(call)
          return { again }
        }).pipe(Effect.scoped, Kernel.onPath, Effect.provide(Kernel.layer())),
      )
      expect(outcome.again).toMatchObject({ replayed: true, settlement: { status: "success", content: [{ type: "text", text: "committed" }] } })
      expect(runs).toBe(1)
    })
  })
}

for (const path of Kernel.PATHS) {
  describe(`on the ${path} path: a call interrupted while its tool, which finished nothing, cannot be`, () => {
    Kernel.settleOn(path)

    test("is cancelled, as any interrupted call", async () => {
      const slow = Tool.make({
        description: "Works without saying it finished",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: (_input, context) =>
          Effect.gen(function* () {
            yield* context.progress({ message: "working" })
            yield* Effect.sleep("30 millis")
            return "done"
          }).pipe(Effect.uninterruptible),
      })
      const again = await Effect.runPromise(
        Effect.gen(function* () {
          yield* (yield* Registry.Service).tools.register({ slow })
          const turn = yield* (yield* Settler.Service).materialize()
          const call = Kernel.call("slow", {})
          const started = yield* Deferred.make<void>()
          const settling = yield* Effect.forkChild(turn.settle(call, { onProgress: () => Deferred.succeed(started, undefined).pipe(Effect.asVoid) }))
          yield* Deferred.await(started)
          yield* Fiber.interrupt(settling)
          return yield* turn.settle(call)
        }).pipe(Effect.scoped, Kernel.onPath, Effect.provide(Kernel.layer())),
      )
      expect(again).toMatchObject({ replayed: true, settlement: { status: "cancelled" } })
    })
  })
}
