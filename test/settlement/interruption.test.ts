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
