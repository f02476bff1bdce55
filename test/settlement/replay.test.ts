// What a call's record says a settle answers (Replay.of), read once for the settler and every edge that asks it
// (Settler.peek, Settler.interrupted): a record is only ever shown to the very call it was made for.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Effect, Layer, Schema } from "effect"
import { CallKey } from "../../src/contract/call-key"
import { Settlement } from "../../src/contract/settlement"
import { Kernel as HostKernel } from "../../src/host/kernel"
import { Registry } from "../../src/registry/registry"
import { Replay } from "../../src/settlement/replay"
import { Settler } from "../../src/settlement/settler"
import { Owner } from "../../src/store/owner"
import { Store } from "../../src/store/store"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"
import { tempDir } from "../support/temp"

const echo = Tool.make({
  description: "Echo",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(input.text),
})

describe("Replay.of", () => {
  const call = { sessionID: "ses", toolCallID: "call_1", agent: "build", name: "echo" }
  const settled = Settlement.error("echo", "call_1", "failure", "no")

  test("nothing recorded: the call runs; settled for this call: the record replays", () => {
    expect(Replay.of(undefined, call)._tag).toBe("Absent")
    expect(Replay.of({ state: "settled", agent: "build", settlement: settled }, call)).toEqual({ _tag: "Settled", settlement: settled })
  })

  test("recorded for another agent or tool: a conflict that never shows the record", () => {
    const other = Replay.of({ state: "settled", agent: "plan", settlement: settled }, call)
    expect(other._tag).toBe("Conflict")
    if (other._tag !== "Conflict") return
    expect(other.settlement.error?.kind).toBe("conflict")
    expect(other.settlement.error?.message).toContain("by another agent")
    expect(JSON.stringify(other.settlement)).not.toContain('"no"')
    const tool = Replay.of({ state: "started", agent: "build", tool: "write", owner: "o", running: true }, call)
    expect(tool._tag === "Conflict" && tool.settlement.error?.message).toContain("for another tool")
  })

  test("running elsewhere is waited for; begun and never settled replays as interrupted over what it saw", () => {
    expect(Replay.of({ state: "started", agent: "build", tool: "echo", owner: "o", running: true }, call)._tag).toBe("Running")
    const abandoned = Replay.of({ state: "started", agent: "build", tool: "echo", owner: "o", running: false }, call)
    expect(abandoned).toMatchObject({ _tag: "Interrupted", expected: { state: "abandoned", owner: "o" } })
    expect(abandoned._tag === "Interrupted" && abandoned.settlement.error?.kind).toBe("interrupted")
    const failed = Replay.of({ state: "failed", agent: "build", tool: "echo", reason: "disk" }, call)
    // A failed record stays as it is (its reason): the same interrupted answers every replay, recorded nowhere.
    expect(failed).toMatchObject({ _tag: "Interrupted", expected: undefined })
    expect(failed._tag === "Interrupted" && failed.settlement.error?.message).toContain("could not settle it")
  })

  test("settledAs answers the record only for the very call it was made for", () => {
    expect(Replay.settledAs({ state: "settled", agent: "build", settlement: settled }, call)).toEqual(settled)
    expect(Replay.settledAs({ state: "settled", agent: "plan", settlement: settled }, call)).toBeUndefined()
    expect(Replay.settledAs({ state: "settled", agent: "build", settlement: settled }, { ...call, name: "read" })).toBeUndefined()
    expect(Replay.settledAs({ state: "started", agent: "build", tool: "echo", owner: "o", running: false }, call)).toBeUndefined()
    expect(Replay.settledAs(undefined, call)).toBeUndefined()
  })

  // A core exec waiting for a call another process runs, stopped (SIGTERM), printed "cancelled … it may have done
  // part of its work" for a call it never ran, and that goes on elsewhere.
  test("settledAs of a call another live process runs says this one only stopped waiting; this process's own, nothing", () => {
    const waited = Replay.settledAs({ state: "started", agent: "build", tool: "echo", owner: "host:1:1:ab:m", running: true }, call)
    expect(waited).toMatchObject({ tool: "echo", callID: call.toolCallID, status: "cancelled", structured: null, outputs: [] })
    expect(waited?.content).toEqual([{ type: "text", text: expect.stringContaining("Stopped waiting for the echo call, which another core process is running") }])
    expect(Replay.settledAs({ state: "started", agent: "build", tool: "echo", owner: Owner.current, running: true }, call)).toBeUndefined()
    expect(Replay.settledAs({ state: "started", agent: "plan", tool: "echo", owner: "host:1:1:ab:m", running: true }, call)).toBeUndefined()
  })
})

describe("CallKey.of", () => {
  test("the same ids in another Location, or asked by another agent or tool, are another key", () => {
    const ids = { sessionID: "ses", toolCallID: "call" }
    const keys = new Set([
      CallKey.of("/a", ids),
      CallKey.of("/b", ids),
      CallKey.of("/a", ids, { agent: "build", name: "echo" }),
      CallKey.of("/a", ids, { agent: "plan", name: "echo" }),
      CallKey.of("/a", ids, { agent: "build", name: "read" }),
      // Parts are never run together: a separator in an id makes no other call's key.
      CallKey.of("/a", { sessionID: 'ses","call', toolCallID: "" }),
    ])
    expect(keys.size).toBe(6)
    expect(CallKey.of("/a", ids)).toBe(Store.keyOf({ location: "/a", ...ids }))
  })
})

describe("Settler.peek and Settler.interrupted", () => {
  test("answer from the call's record as the settler reads it, never another agent's record", () =>
    Kernel.run(
      Effect.gen(function* () {
        yield* (yield* Registry.Service).tools.register({ echo })
        const settler = yield* Settler.Service
        const turn = yield* settler.materialize()
        const call = Kernel.call("echo", { text: "hi" })
        expect((yield* settler.peek(call))._tag).toBe("Absent")

        const { settlement } = yield* turn.settle(call)
        expect(yield* settler.peek(call)).toEqual({ _tag: "Settled", settlement })
        expect(yield* settler.interrupted(call)).toEqual(settlement)

        const other = { ...call, agent: "plan" }
        expect((yield* settler.peek(other))._tag).toBe("Conflict")
        expect(yield* settler.interrupted(other)).toBeUndefined()

        // Interrupted before its settle began (waiting for its turn), a call is recorded cancelled: settled again,
        // it replays that and runs nothing (law 12).
        const never = Kernel.call("echo", { text: "never" })
        expect(yield* settler.interrupted(never)).toMatchObject({ status: "cancelled" })
        expect(yield* turn.settle(never)).toMatchObject({ replayed: true, settlement: { status: "cancelled" } })

        // Begun by an owner that is gone: what settling it again answers, before it does.
        const abandoned = Kernel.call("echo", { text: "lost" })
        const store = yield* Store.Service
        yield* store.begin(yield* Kernel.keyOf(abandoned), "echo", "build")
        // This process owns the record, so it is running; the settler would wait for it.
        expect((yield* settler.peek(abandoned))._tag).toBe("Running")
        yield* store.fail(yield* Kernel.keyOf(abandoned), "disk full")
        const peeked = yield* settler.peek(abandoned)
        expect(peeked._tag).toBe("Interrupted")
        const replayed = yield* turn.settle(abandoned)
        expect(replayed).toMatchObject({ replayed: true, settlement: { status: "error", error: { kind: "interrupted" } } })
        expect(peeked._tag === "Interrupted" && peeked.settlement).toEqual(replayed.settlement)
      }),
    ))
})

// Host A ran a call while stopped past its lease; host B answered it interrupted and recorded that; A, resumed,
// found B's record standing and answered it, marked replayed: exec said "nothing ran now" for a tool that ran.
describe("a call whose record another settler made while this one ran it", () => {
  for (const immediately of [true, false]) {
    test(`answers that record, marked as run here and superseded, not replayed (${immediately ? "immediate" : "fiber"} path)`, () =>
      Kernel.run(
        Effect.gen(function* () {
          const store = yield* Store.Service
          const interrupted = Settlement.error("ran", "call_x", "interrupted", "another core answered it")
          let key: Store.Key | undefined
          let ran = 0
          const ranHere = Tool.make({
            description: "Runs, while another core records the call",
            input: Schema.Struct({}),
            output: Schema.String,
            execute: () =>
              Effect.suspend(() => {
                ran++
                return Effect.as(Effect.orDie(store.settle(key!, interrupted, { state: "owned" })), "done")
              }),
          })
          yield* (yield* Registry.Service).tools.register({ ran: ranHere })
          const turn = yield* (yield* Settler.Service).materialize()
          const call = Kernel.call("ran", {})
          key = yield* Kernel.keyOf(call)
          const settled = yield* turn.settle(call)
          expect(ran).toBe(1)
          expect(settled).toEqual({ settlement: interrupted, replayed: false, superseded: true })
          // Settled again, it is a replay of that record, and nothing runs.
          expect(yield* turn.settle(call)).toEqual({ settlement: interrupted, replayed: true })
          expect(ran).toBe(1)
        }).pipe(Effect.provideService(Settler.Immediately, immediately)),
      ))
  }
})

/** Settles `call` twice through `tools` on a kernel of its own over `store`, on the immediate path or the fiber path. */
const settleTwice = (
  tools: Record<string, Tool.Any>,
  call: Settler.Call,
  store: Layer.Layer<Store.Service>,
  immediately: boolean,
) =>
  Effect.runPromise(
    Effect.gen(function* () {
      yield* (yield* Registry.Service).tools.register(tools)
      const turn = yield* (yield* Settler.Service).materialize()
      const first = yield* turn.settle(call)
      const again = yield* turn.settle(call)
      return { first, again }
    }).pipe(
      Effect.scoped,
      Effect.provideService(Settler.Immediately, immediately),
      Effect.provide(HostKernel.layer({ store, outputsDirectory: join(tempDir(), "outputs") })),
    ),
  )

// A retention sweep took a call's record while its owner, held up past its lease, still ran it: the settler waiting
// for that owner found nothing recorded and ran the call itself, a second time.
describe("a call whose record is removed while another core runs it", () => {
  for (const immediately of [true, false]) {
    test(`is not run by the settler waiting for it: recorded interrupted, and replayed so (${immediately ? "immediate" : "fiber"} path)`, async () => {
      let ran = 0
      const counted = Tool.make({
        description: "Counts its runs",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () => Effect.sync(() => `run ${++ran}`),
      })
      const call = Kernel.call("counted", {})
      // The memory store, but holding the call begun by another core, still running, until it has been looked at
      // twice: then its record is gone.
      let looks = 0
      const held = (key: Store.Key) => key.toolCallID === call.toolCallID && looks < 2
      const sweptWhileRunning = Layer.effect(
        Store.Service,
        Effect.gen(function* () {
          const real = yield* Store.Service
          const { now: _, ...effects } = real
          return Store.Service.of({
            ...effects,
            lookup: (key) =>
              held(key)
                ? Effect.sync(() => {
                    looks++
                    return { state: "started", agent: "build", tool: "counted", owner: "other-host:1:1:0:m", running: true } as const
                  })
                : real.lookup(key),
            begin: (key, tool, agent, details) => (held(key) ? Effect.succeed(false) : real.begin(key, tool, agent, details)),
          })
        }),
      ).pipe(Layer.provide(Store.layerMemory))
      const outcome = await settleTwice({ counted }, call, sweptWhileRunning, immediately)
      expect(looks).toBe(2)
      expect(ran).toBe(0)
      expect(outcome.first).toMatchObject({ replayed: true, settlement: { status: "error", error: { kind: "interrupted" } } })
      expect(outcome.first.settlement.error?.message).toContain("its record was removed before it settled")
      expect(outcome.again).toEqual({ replayed: true, settlement: outcome.first.settlement })
    })
  }
})

// The other side of the same sweep: the owner, resumed, finished the call while its record was gone. It answered its
// result without recording it, and a waiter's next look recorded interrupted: two answers for one call.
describe("a call whose record is removed while this process runs it", () => {
  for (const immediately of [true, false]) {
    test(`records its result as new, which every later settle answers (${immediately ? "immediate" : "fiber"} path)`, async () => {
      let ran = 0
      let gone = false
      const call = Kernel.call("swept", {})
      const swept = Tool.make({
        description: "Runs while a retention sweep takes its record",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () =>
          Effect.sync(() => {
            gone = true
            return `run ${++ran}`
          }),
      })
      // The memory store, but for the call's record, taken away while the tool runs: looked up, it is not there,
      // and only a settlement recorded as new brings it back.
      const sweeping = Layer.effect(
        Store.Service,
        Effect.gen(function* () {
          const real = yield* Store.Service
          const { now: _, ...effects } = real
          const ours = (key: Store.Key) => gone && key.toolCallID === call.toolCallID
          return Store.Service.of({
            ...effects,
            lookup: (key) => (ours(key) ? Effect.succeed(undefined) : real.lookup(key)),
            settle: (key, settlement, expected) => {
              if (!ours(key)) return real.settle(key, settlement, expected)
              if (expected.state !== "absent") return Effect.succeed(false)
              gone = false
              return real.settle(key, settlement, { state: "owned" })
            },
          })
        }),
      ).pipe(Layer.provide(Store.layerMemory))
      const outcome = await settleTwice({ swept }, call, sweeping, immediately)
      expect(ran).toBe(1)
      expect(outcome.first).toMatchObject({ replayed: false, settlement: { status: "success", content: [{ type: "text", text: "run 1" }] } })
      expect(outcome.again).toEqual({ replayed: true, settlement: outcome.first.settlement })
    })
  }
})

describe("Steps.Options.onRecord", () => {
  const settleTelling = (turn: Settler.Materialization, call: Settler.Call) =>
    Effect.gen(function* () {
      const told: Array<boolean> = []
      const settled = yield* turn.settle(call, { onRecord: (replays) => told.push(replays) })
      return { told, settled }
    })

  for (const immediately of [true, false]) {
    test(`tells what the call's record says before the call goes on, as its Settled says (${immediately ? "immediate" : "fiber"} path)`, () =>
      Kernel.run(
        Effect.gen(function* () {
          yield* (yield* Registry.Service).tools.register({ echo })
          const settler = yield* Settler.Service
          const turn = yield* settler.materialize()
          const call = Kernel.call("echo", { text: "hi" })
          // Nothing recorded: the call goes on.
          const fresh = yield* settleTelling(turn, call)
          expect(fresh.settled.replayed).toBe(false)
          expect(fresh.told[0]).toBe(false)
          // Settled: the record replays.
          const again = yield* settleTelling(turn, call)
          expect(again).toMatchObject({ told: [true], settled: { replayed: true } })
          // Another agent's record: a conflict, which is not a replay.
          const other = yield* settleTelling(turn, { ...call, agent: "plan" })
          expect(other.told[0]).toBe(false)
          expect(other.settled.settlement.error?.kind).toBe("conflict")
          // Begun and never settled: replays as interrupted.
          const abandoned = Kernel.call("echo", { text: "lost" })
          const store = yield* Store.Service
          yield* store.begin(yield* Kernel.keyOf(abandoned), "echo", "build")
          yield* store.fail(yield* Kernel.keyOf(abandoned), "disk full")
          const interrupted = yield* settleTelling(turn, abandoned)
          expect(interrupted.told[0]).toBe(true)
          expect(interrupted.settled).toMatchObject({ replayed: true, settlement: { error: { kind: "interrupted" } } })
        }).pipe(Effect.provideService(Settler.Immediately, immediately)),
      ))
  }
})
