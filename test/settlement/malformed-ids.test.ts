// A call's ids are kept as UTF-8 (SQLite, Postgres, the journal): a lone surrogate would be kept as U+FFFD, so two
// calls would share one record and the second answer the first's settlement (law 12); a NUL cannot be kept by every
// store (Postgres refuses it in text). The settler refuses such ids itself, on both paths and on the durable store,
// whatever edge let them through: nothing runs, nothing is recorded. The same holds for the tool name a call asks
// for, which is kept with its record; and a name longer than any tool's is kept bounded (CallKey.named), so that a
// model's megabytes of name grow no record, log line or span.

import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Store } from "../../src/store/store"
import { Tool } from "../../src/tool/tool"
import { CallKey } from "../../src/contract/call-key"
import type { Settlement } from "../../src/contract/settlement"
import * as Kernel from "../support/kernel"

type Ids = Partial<Record<"sessionID" | "toolCallID" | "assistantMessageID", string>>

/**
 * Settles a counting tool once with each of `refused`'s ids (each expected to be refused), then once with `whole`,
 * on the durable store; answers the refusals' messages, the whole call's settlement, what the store kept under
 * `kept`'s ids, and how many times the tool ran.
 */
const settleWith = async (refused: ReadonlyArray<Ids>, whole: Ids, kept: Ids) => {
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
      const messages = []
      for (const overrides of refused) messages.push((yield* Effect.flip(turn.settle(Kernel.call("counted", {}, overrides)))).message)
      const settled = yield* turn.settle(Kernel.call("counted", {}, whole))
      const record = yield* (yield* Store.Service).lookup(yield* Kernel.keyOf(Kernel.call("counted", {}, kept)))
      return { messages, whole: settled.settlement, kept: record }
    }),
    { durable: true },
  )
  return { ...outcome, runs }
}

for (const path of Kernel.PATHS) {
  describe(`on the ${path} path`, () => {
    Kernel.settleOn(path)

    test("a session, call or message id with a lone surrogate is an operational failure; nothing runs or is recorded", async () => {
      const outcome = await settleWith(
        [{ sessionID: "s\ud800" }, { toolCallID: "c\udfff" }, { assistantMessageID: "\udc00m" }],
        { sessionID: "s\ufffd" },
        { toolCallID: "c\ufffd" },
      )
      expect(outcome.messages).toHaveLength(3)
      expect(outcome.messages[0]).toStartWith('The sessionID "s\\ud800" is not well-formed Unicode')
      expect(outcome.messages[1]).toStartWith('The toolCallID "c\\udfff" is not well-formed Unicode')
      expect(outcome.messages[2]).toStartWith('The assistantMessageID "\\udc00m" is not well-formed Unicode')
      expect(outcome.whole).toMatchObject({ status: "success", structured: 1 })
      expect(outcome.kept).toBeUndefined()
      expect(outcome.runs).toBe(1)
    })

    test("a session, call or message id holding a NUL is an operational failure; nothing runs or is recorded", async () => {
      const outcome = await settleWith(
        [{ sessionID: "s\u0000x" }, { toolCallID: "x\u0000y" }, { assistantMessageID: "m\u0000" }],
        { sessionID: "s x" },
        { sessionID: "s\u0000x" },
      )
      expect(outcome.messages).toEqual([
        'The sessionID "s\\u0000x" holds a NUL character (U+0000), which the settlement stores cannot keep. Send ids without it.',
        'The toolCallID "x\\u0000y" holds a NUL character (U+0000), which the settlement stores cannot keep. Send ids without it.',
        'The assistantMessageID "m\\u0000" holds a NUL character (U+0000), which the settlement stores cannot keep. Send ids without it.',
      ])
      expect(outcome.whole).toMatchObject({ status: "success", structured: 1 })
      expect(outcome.kept).toBeUndefined()
      expect(outcome.runs).toBe(1)
    })

    test("a tool name holding a NUL or a lone surrogate is an operational failure; nothing is recorded", async () => {
      const outcome = await Kernel.run(
        Effect.gen(function* () {
          const turn = yield* (yield* Settler.Service).materialize()
          const store = yield* Store.Service
          const asked = [Kernel.call("to\u0000ol", {}), Kernel.call("to\ud800ol", {}), Kernel.call("\udfff", {})]
          const messages = []
          for (const call of asked) messages.push((yield* Effect.flip(turn.settle(call))).message)
          const kept = []
          for (const call of asked) kept.push(yield* store.lookup(yield* Kernel.keyOf(call)))
          return { messages, kept }
        }),
        { durable: true },
      )
      expect(outcome.messages).toEqual([
        'The tool name "to\\u0000ol" holds a NUL character (U+0000), which no tool\'s name has and the settlement stores cannot keep. Call a tool by its name.',
        'The tool name "to\\ud800ol" is not well-formed Unicode (it holds a lone surrogate), which no tool\'s name is. Call a tool by its name.',
        'The tool name "\\udfff" is not well-formed Unicode (it holds a lone surrogate), which no tool\'s name is. Call a tool by its name.',
      ])
      expect(outcome.kept).toEqual([undefined, undefined, undefined])
    })

    test("a name longer than any tool's is recorded bounded; a retry replays it, another long name is a conflict", async () => {
      const long = "X".repeat(5_000_000)
      // The same first 192 characters and length as `long`: told apart by its digest alone.
      const other = `${"X".repeat(4_999_999)}Y`
      const outcome = await Kernel.run(
        Effect.gen(function* () {
          const turn = yield* (yield* Settler.Service).materialize()
          const first = yield* turn.settle(Kernel.call(long, {}, { toolCallID: "call_long" }))
          const again = yield* turn.settle(Kernel.call(long, {}, { toolCallID: "call_long" }))
          const otherName = yield* turn.settle(Kernel.call(other, {}, { toolCallID: "call_long" }))
          const keptForm = yield* turn.settle(Kernel.call(first.settlement.tool, {}, { toolCallID: "call_long" }))
          const interrupted = yield* (yield* Settler.Service).interrupted(Kernel.call(long, {}, { toolCallID: "call_long" }))
          const kept = yield* (yield* Store.Service).lookup(yield* Kernel.keyOf(Kernel.call(long, {}, { toolCallID: "call_long" })))
          return { first, again, otherName, keptForm, interrupted, kept }
        }),
        { durable: true },
      )
      const tool = outcome.first.settlement.tool
      expect(tool).toStartWith(`${"X".repeat(192)}…(5000000 characters, sha256 `)
      // Longer than any name kept as it is: no name sent can be another's kept form.
      expect(tool).toMatch(/^X{192}…\(5000000 characters, sha256 [0-9a-f]{64}\)$/)
      expect(tool.length).toBeGreaterThan(CallKey.MAX_NAME)
      expect(outcome.first).toMatchObject({ replayed: false, settlement: { status: "error", error: { kind: "unknown" } } })
      expect(outcome.first.settlement.error?.message).toBe(`Unknown tool "${tool}"; nothing ran. Use one of the tools you were offered.`)
      expect(outcome.again).toEqual({ settlement: outcome.first.settlement, replayed: true })
      expect(outcome.otherName.settlement.error?.kind).toBe("conflict")
      expect(outcome.otherName.settlement.tool).not.toBe(tool)
      // The kept form itself, sent as a name, is another name: a conflict, never the long name's record.
      expect(outcome.keptForm.settlement.error?.kind).toBe("conflict")
      expect(outcome.keptForm.replayed).toBe(false)
      // Read back as an interrupted call would be (the host's path), the long name finds its record.
      expect(outcome.interrupted).toEqual(outcome.first.settlement)
      // The record holds the bounded name, not its megabytes.
      const kept = outcome.kept as { readonly state: string; readonly settlement: Settlement.Info }
      expect(kept.state).toBe("settled")
      expect(kept.settlement).toEqual(outcome.first.settlement)
      expect(JSON.stringify(kept.settlement).length).toBeLessThan(2_000)
    })
  })
}
