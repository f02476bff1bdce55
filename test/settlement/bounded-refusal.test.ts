// DESIGN §2 law 10 for what a call fails with: one generic boundary bounds what goes back to the model, a failure's
// words as much as an output. A tool's message quoting a whole file (an edit's near match, a patch of a thousand
// hunks) came back whole; past the bound it is now a preview, the whole message kept as a managed output, on both
// settle paths; a short message is left as it is.

import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { ManagedOutputs } from "../../src/output/managed-outputs"
import { Bound } from "../../src/output/bound"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"

const LONG = Array.from({ length: 5_000 }, (_, index) => `line ${index + 1} of the failure`).join("\n")

const failing = (message: string) =>
  Tool.make({
    description: "Fails with the message it is given",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => Effect.fail(new Tool.Failure({ message })),
  })

for (const path of Kernel.PATHS) {
  describe(`on the ${path} path`, () => {
    Kernel.settleOn(path)

    test("a failure's message past the bound is a preview; the whole message is kept as a managed output", async () => {
      const outcome = await Kernel.run(
        Effect.gen(function* () {
          yield* (yield* Registry.Service).tools.register({ long: failing(LONG), short: failing("it broke; fix the input") })
          const turn = yield* (yield* Settler.Service).materialize()
          const long = yield* turn.settle(Kernel.call("long", {}))
          const short = yield* turn.settle(Kernel.call("short", {}))
          const kept = yield* (yield* ManagedOutputs.Service).open(long.settlement.outputs[0]!.id)
          return { long: long.settlement, short: short.settlement, kept: yield* Effect.promise(() => kept.content.text()) }
        }),
      )
      expect(outcome.long.status).toBe("error")
      expect(outcome.long.error?.kind).toBe("failure")
      const message = outcome.long.error!.message
      expect(Bound.exceeds(message, { maxBytes: Bound.DEFAULT_MAX_BYTES, maxLines: Bound.DEFAULT_MAX_LINES })).toBe(false)
      expect(message).toStartWith("[Output too large to show whole: 5000 lines")
      expect(message).toContain("\nline 1 of the failure\n")
      expect(message).toEndWith("\nline 5000 of the failure")
      expect(outcome.long.content).toEqual([{ type: "text", text: message }])
      expect(outcome.long.outputs).toHaveLength(1)
      expect(outcome.kept).toBe(LONG)
      expect(outcome.short).toMatchObject({ status: "error", error: { kind: "failure", message: "it broke; fix the input" }, outputs: [] })
    })
  })
}
