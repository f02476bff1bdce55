// A call's ids are kept as UTF-8 (SQLite, Postgres, the journal): a lone surrogate would be kept as U+FFFD, so two
// calls would share one record and the second answer the first's settlement (law 12). The settler refuses such ids
// itself, on both paths and on the durable store, whatever edge let them through: nothing runs, nothing is recorded.

import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Store } from "../../src/store/store"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"

for (const path of Kernel.PATHS) {
  describe(`on the ${path} path`, () => {
    Kernel.settleOn(path)

    test("a session, call or message id with a lone surrogate is an operational failure; nothing runs or is recorded", async () => {
      let runs = 0
      const counted = Tool.make({
        description: "Counts its runs",
        input: Schema.Struct({}),
        output: Schema.Number,
        execute: () => Effect.sync(() => ++runs),
      })
      const outcome = await Kernel.run(
        Effect.gen(function* () {
          yield* (yield* Registry.Service).tools.register({ counted })
          const turn = yield* (yield* Settler.Service).materialize()
          const refused = []
          for (const overrides of [{ sessionID: "s\ud800" }, { toolCallID: "c\udfff" }, { assistantMessageID: "\udc00m" }]) {
            refused.push(yield* Effect.flip(turn.settle(Kernel.call("counted", {}, overrides))))
          }
          const whole = yield* turn.settle(Kernel.call("counted", {}, { sessionID: "s\ufffd" }))
          const kept = yield* (yield* Store.Service).lookup(yield* Kernel.keyOf(Kernel.call("counted", {}, { toolCallID: "c\ufffd" })))
          return { refused: refused.map((error) => error.message), whole: whole.settlement, kept }
        }),
        { durable: true },
      )
      expect(outcome.refused).toHaveLength(3)
      expect(outcome.refused[0]).toStartWith('The sessionID "s\\ud800" is not well-formed Unicode')
      expect(outcome.refused[1]).toStartWith('The toolCallID "c\\udfff" is not well-formed Unicode')
      expect(outcome.refused[2]).toStartWith('The assistantMessageID "\\udc00m" is not well-formed Unicode')
      expect(outcome.whole).toMatchObject({ status: "success", structured: 1 })
      expect(outcome.kept).toBeUndefined()
      expect(runs).toBe(1)
    })

    test("a session, call or message id holding a NUL is an operational failure; nothing runs or is recorded", async () => {
      let runs = 0
      const counted = Tool.make({
        description: "Counts its runs",
        input: Schema.Struct({}),
        output: Schema.Number,
        execute: () => Effect.sync(() => ++runs),
      })
      const outcome = await Kernel.run(
        Effect.gen(function* () {
          yield* (yield* Registry.Service).tools.register({ counted })
          const turn = yield* (yield* Settler.Service).materialize()
          const refused = []
          for (const overrides of [{ sessionID: "s\u0000x" }, { toolCallID: "x\u0000y" }, { assistantMessageID: "m\u0000" }]) {
            refused.push(yield* Effect.flip(turn.settle(Kernel.call("counted", {}, overrides))))
          }
          const kept = yield* (yield* Store.Service).lookup(yield* Kernel.keyOf(Kernel.call("counted", {}, { sessionID: "s\u0000x" })))
          return { refused: refused.map((error) => error.message), kept }
        }),
        { durable: true },
      )
      expect(outcome.refused).toEqual([
        'The sessionID "s\\u0000x" holds a NUL character (U+0000), which the settlement stores cannot keep. Send ids without it.',
        'The toolCallID "x\\u0000y" holds a NUL character (U+0000), which the settlement stores cannot keep. Send ids without it.',
        'The assistantMessageID "m\\u0000" holds a NUL character (U+0000), which the settlement stores cannot keep. Send ids without it.',
      ])
      expect(outcome.kept).toBeUndefined()
      expect(runs).toBe(0)
    })
  })
}
