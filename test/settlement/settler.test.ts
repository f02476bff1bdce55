import { describe, expect, test } from "bun:test"
import { Deferred, Effect, Fiber, Layer, Schema } from "effect"
import { Output } from "../../src/output/output"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { SqliteStore } from "../../src/store/sqlite-store"
import { Store } from "../../src/store/store"
import { Tool } from "../../src/tool/tool"
import { Database } from "bun:sqlite"
import { hostname } from "node:os"
import { join } from "node:path"
import { Kernel as CoreKernel } from "../../src/host/kernel"
import * as Kernel from "../support/kernel"
import { png as realPng } from "../support/image"
import { tempDir } from "../support/temp"

const settleOnce = (name: string, input: unknown, overrides: Partial<Settler.Call> = {}) =>
  Effect.gen(function* () {
    const turn = yield* (yield* Settler.Service).materialize()
    return (yield* turn.settle(Kernel.call(name, input, overrides))).settlement
  })

const register = (record: Record<string, Tool.Any>) =>
  Effect.gen(function* () {
    yield* (yield* Registry.Service).tools.register(record)
  })

// Every law here holds on both settle paths: the immediate one (where it applies) and the fiber path alone.
for (const path of Kernel.PATHS) {
  describe(`on the ${path} path`, () => {
    Kernel.settleOn(path)

    describe("Settler: codec boundary", () => {
      test("execute sees the decoded input; structured and toModelOutput see the encoded output", () =>
        Kernel.run(
          Effect.gen(function* () {
            const seen: Array<unknown> = []
            const projected: Array<unknown> = []
            yield* register({
              shift: Tool.make({
                description: "adds a day",
                input: Schema.Struct({ when: Schema.Date, count: Schema.NumberFromString }),
                output: Schema.Struct({ next: Schema.Date, days: Schema.NumberFromString }),
                execute: (input) =>
                  Effect.sync(() => {
                    seen.push(input)
                    return { next: new Date(input.when.getTime() + 86_400_000 * input.count), days: input.count }
                  }),
                // Typed with the output schema's own encoding: `next` stays a Date, `days` is encoded to a string.
                toModelOutput: ({ output }) => {
                  projected.push(output)
                  return `next: ${output.next.toISOString()} after ${output.days} days`
                },
              }),
            })
            const settlement = yield* settleOnce("shift", { when: "2026-01-01T00:00:00.000Z", count: "2" })
            expect(seen[0]).toEqual({ when: new Date("2026-01-01T00:00:00.000Z"), count: 2 })
            expect(projected[0]).toEqual({ next: new Date("2026-01-03T00:00:00.000Z"), days: "2" })
            // The structured output is the JSON encoding, which the output JSON Schema describes.
            expect(settlement).toEqual({
              tool: "shift",
              callID: expect.any(String),
              status: "success",
              content: [{ type: "text", text: "next: 2026-01-03T00:00:00.000Z after 2 days" }],
              structured: { next: "2026-01-03T00:00:00.000Z", days: "2" },
              outputs: [],
            })
          }),
        ))

      test("invalid input never invokes the tool and names each path, the expectation and what came", () =>
        Kernel.run(
          Effect.gen(function* () {
            let ran = false
            yield* register({
              weather: Tool.make({
                description: "w",
                input: Schema.Struct({ city: Schema.String, days: Schema.optionalKey(Schema.Finite) }),
                output: Schema.String,
                execute: () => Effect.sync(() => ((ran = true), "sunny")),
              }),
            })
            const settlement = yield* settleOnce("weather", { city: 42, days: "three" })
            expect(ran).toBe(false)
            expect(settlement.status).toBe("error")
            expect(settlement.error?.kind).toBe("invalid_input")
            expect(settlement.error?.message).toContain("city: Expected string, got 42")
            expect(settlement.error?.message).toContain('days: Expected number, got "three"')
            expect(settlement.content).toEqual([{ type: "text", text: settlement.error!.message }])
            const missing = yield* settleOnce("weather", {})
            expect(missing.error?.message).toContain("city: Missing key")
          }),
        ))

      test("keys the input schema does not know are refused, not silently dropped", () =>
        Kernel.run(
          Effect.gen(function* () {
            let ran = false
            yield* register({
              search: Tool.make({
                description: "s",
                input: Schema.Struct({ query: Schema.String, limit: Schema.optionalKey(Schema.Finite) }),
                output: Schema.String,
                execute: () => Effect.sync(() => ((ran = true), "")),
              }),
            })
            const settlement = yield* settleOnce("search", { query: "x", limt: 5 })
            expect(ran).toBe(false)
            expect(settlement.error?.kind).toBe("invalid_input")
            expect(settlement.error?.message).toContain("limt")
            // A key no slip away from any the tool takes is named with the keys it does take.
            const far = yield* settleOnce("search", { query: "x", size: 5 }, { toolCallID: "call_far" })
            expect(far.error?.message).toContain("- size: unknown key (its keys are query, limit)")
          }),
        ))

      // Effect passes any object through a struct of no keys: the boundary refuses them all the same, and the
      // definition the model reads is left as it was.
      test("a tool of no input keys refuses any key, and takes the empty object", () =>
        Kernel.run(
          Effect.gen(function* () {
            const ran: Array<unknown> = []
            const none = Tool.make({
              description: "takes nothing",
              input: Schema.Struct({}),
              output: Schema.String,
              execute: (input) => Effect.sync(() => (ran.push(input), "done")),
            })
            yield* register({ none })
            const refused = yield* settleOnce("none", { x: 1, path: "/etc/passwd" })
            expect(refused.error?.kind).toBe("invalid_input")
            // Named as unknown, with what the tool takes, not with the value quoted back.
            expect(refused.error?.message).toContain("- x: unknown key (it takes none)")
            expect(refused.error?.message).toContain("- path: unknown key (it takes none)")
            expect(refused.error?.message).not.toContain("/etc/passwd")
            expect(ran).toEqual([])
            const settled = yield* settleOnce("none", {}, { toolCallID: "call_none_2" })
            expect(settled.status).toBe("success")
            expect(ran).toEqual([{}])
            const turn = yield* (yield* Settler.Service).materialize()
            const definition = turn.definitions.find((each) => each.name === "none")
            expect(definition?.inputSchema).toEqual({ type: "object", properties: {}, additionalProperties: false })
          }),
        ))

      // An MCP client's arguments come parsed, however deep: JSON.stringify of them (the record) and a schema's
      // decoding overflowed the stack, an operational failure where the model's input was at fault.
      test("an input nested deeper than 128 levels is refused as invalid input, recorded, and the tool never runs", () =>
        Kernel.run(
          Effect.gen(function* () {
            const ran: Array<unknown> = []
            yield* register({
              anything: Tool.make({
                description: "takes anything",
                input: Schema.Struct({ value: Schema.Unknown }),
                output: Schema.String,
                execute: (input) => Effect.sync(() => (ran.push(input), "done")),
              }),
            })
            let deep: unknown = "bottom"
            for (let level = 0; level < 50_000; level++) deep = { inner: deep }
            const refused = yield* settleOnce("anything", { value: deep })
            expect(refused.error?.kind).toBe("invalid_input")
            expect(refused.error?.message).toContain("the input holds arrays and objects nested deeper than 128 levels")
            expect(ran).toEqual([])
            // Called again the same, it answers the record: nothing runs.
            expect((yield* settleOnce("anything", { value: deep })).error?.kind).toBe("invalid_input")
            // 128 levels are taken.
            let allowed: unknown = "bottom"
            for (let level = 0; level < 127; level++) allowed = [allowed]
            expect((yield* settleOnce("anything", { value: allowed }, { toolCallID: "call_deep_ok" })).status).toBe("success")
            expect(ran).toHaveLength(1)
          }),
        ))

      test("invalid output never produces a success", () =>
        Kernel.run(
          Effect.gen(function* () {
            yield* register({
              liar: Tool.make({
                description: "returns the wrong shape",
                input: Schema.Struct({}),
                output: Schema.Struct({ count: Schema.Finite }),
                execute: () => Effect.succeed({ count: "many" } as never),
              }),
            })
            const settlement = yield* settleOnce("liar", {})
            expect(settlement.status).toBe("error")
            expect(settlement.error?.kind).toBe("invalid_output")
            expect(settlement.error?.message).toContain("count")
            expect(settlement.structured).toBeNull()
          }),
        ))

      test("toModelOutput returning something that is not content is an invalid output", () =>
        Kernel.run(
          Effect.gen(function* () {
            yield* register({
              odd: Tool.make({
                description: "bad projection",
                input: Schema.Struct({}),
                output: Schema.String,
                execute: () => Effect.succeed("x"),
                toModelOutput: () => [{ type: "video" }] as never,
              }),
            })
            expect((yield* settleOnce("odd", {})).error?.kind).toBe("invalid_output")
          }),
        ))

      test("non-string output without toModelOutput stays structured only, with no content", () =>
        Kernel.run(
          Effect.gen(function* () {
            yield* register({
              pair: Tool.make({
                description: "p",
                input: Schema.Struct({}),
                output: Schema.Struct({ a: Schema.Finite }),
                execute: () => Effect.succeed({ a: 1 }),
              }),
            })
            const settlement = yield* settleOnce("pair", {})
            expect(settlement.content).toEqual([])
            expect(settlement.structured).toEqual({ a: 1 })
          }),
        ))

      test("file content goes out as a data URI", () =>
        Kernel.run(
          Effect.gen(function* () {
            const png = realPng(2, 2).toString("base64")
            yield* register({
              image: Tool.make({
                description: "i",
                input: Schema.Struct({}),
                output: Schema.String,
                execute: () => Effect.succeed(png),
                toModelOutput: ({ output: data }) => [
                  { type: "text", text: "an image" },
                  { type: "file", data, mime: "image/png", name: "dot.png" },
                ],
              }),
            })
            const settlement = yield* settleOnce("image", {})
            expect(settlement.content).toEqual([
              { type: "text", text: "an image" },
              { type: "file", mime: "image/png", uri: `data:image/png;base64,${png}`, name: "dot.png" },
            ])
          }),
        ))
    })

    describe("Settler: context", () => {
      test("every call gets the runner's ids exactly and a working progress reporter, nothing else", () =>
        Kernel.run(
          Effect.gen(function* () {
            let context: Tool.Context | undefined
            yield* register({
              probe: Tool.make({
                description: "p",
                input: Schema.Struct({}),
                output: Schema.String,
                execute: (_, ctx) =>
                  Effect.gen(function* () {
                    context = ctx
                    yield* ctx.progress({ message: "half way", metadata: { done: 1 } })
                    return "ok"
                  }),
              }),
            })
            const updates: Array<Tool.Progress> = []
            const turn = yield* (yield* Settler.Service).materialize()
            yield* turn.settle(
              { sessionID: "ses_1", agent: "plan", assistantMessageID: "msg_1", toolCallID: "call_1", name: "probe", input: {} },
              { onProgress: (update) => Effect.sync(() => updates.push(update)) },
            )
            expect(Object.keys(context!).sort()).toEqual(["agent", "assistantMessageID", "progress", "sessionID", "toolCallID"])
            expect(context).toMatchObject({ sessionID: "ses_1", agent: "plan", assistantMessageID: "msg_1", toolCallID: "call_1" })
            expect(updates).toEqual([{ message: "half way", metadata: { done: 1 } }])
          }),
        ))
    })

    // A tool file is JavaScript: `ctx.progress({ title: "x" } as any)` ended `core exec` (exit 3) with a TypeError in
    // its progress line, and a BigInt in metadata would break a host's event stream.
    test("a progress update of the wrong shape is dropped, unserialisable or large metadata left out, a long message cut, and the call goes on", () =>
      Kernel.run(
        Effect.gen(function* () {
          yield* register({
            sloppy: Tool.make({
              description: "s",
              input: Schema.Struct({}),
              output: Schema.String,
              execute: (_, ctx) =>
                Effect.gen(function* () {
                  const cyclic: Record<string, unknown> = { a: 1 }
                  cyclic.self = cyclic
                  const kept = { step: 1 }
                  for (const update of [
                    { title: "no message" },
                    null,
                    "text",
                    { message: 42 },
                    { message: "big", metadata: { n: 10n } },
                    { message: "cycle", metadata: cyclic },
                    { message: "list", metadata: [1, 2] },
                    { message: "fine", metadata: kept },
                    // An MCP server's 10 MB messages were kept whole for every slow event reader.
                    { message: "x".repeat(10_000_000), metadata: { blob: "y".repeat(100_000) } },
                  ]) {
                    yield* ctx.progress(update as never)
                  }
                  kept.step = 2
                  return "done"
                }),
            }),
          })
          const updates: Array<Tool.Progress> = []
          const turn = yield* (yield* Settler.Service).materialize()
          const { settlement } = yield* turn.settle(
            { sessionID: "ses_1", agent: "build", assistantMessageID: "msg_1", toolCallID: "call_p", name: "sloppy", input: {} },
            { onProgress: (update) => Effect.sync(() => updates.push(update)) },
          )
          expect(settlement.status).toBe("success")
          expect(updates).toEqual([
            { message: "big" },
            { message: "cycle" },
            { message: "list" },
            { message: "fine", metadata: { step: 1 } },
            { message: `${"x".repeat(4_000)}…` },
          ])
        }),
      ))

    describe("Settler: failure semantics", () => {
      test("Tool.Failure becomes a model-visible failure", () =>
        Kernel.run(
          Effect.gen(function* () {
            yield* register({
              nope: Tool.make({
                description: "n",
                input: Schema.Struct({}),
                output: Schema.String,
                execute: () => Effect.fail(new Tool.Failure({ message: "No such city: Atlantis" })),
              }),
            })
            const settlement = yield* settleOnce("nope", {})
            expect(settlement.status).toBe("error")
            expect(settlement.error).toEqual({ kind: "failure", message: "No such city: Atlantis" })
          }),
        ))

      test("a defect is an operational failure, never a result, and the call replays as interrupted", () =>
        Kernel.run(
          Effect.gen(function* () {
            yield* register({
              boom: Tool.make({
                description: "b",
                input: Schema.Struct({}),
                output: Schema.String,
                execute: () => Effect.die(new Error("kaboom")),
              }),
              thrower: Tool.make({
                description: "t",
                input: Schema.Struct({}),
                output: Schema.String,
                execute: () => {
                  throw new Error("thrown synchronously")
                },
              }),
            })
            const store = yield* Store.Service
            for (const name of ["boom", "thrower"]) {
              const call = Kernel.call(name, {})
              const turn = yield* (yield* Settler.Service).materialize()
              const exit = yield* Effect.exit(turn.settle(call))
              expect(exit._tag).toBe("Failure")
              expect(String(exit._tag === "Failure" && exit.cause)).toMatch(/kaboom|thrown synchronously/)
              // Recorded as failed, so a retry replays it honestly instead of running the tool again.
              expect(yield* store.lookup(yield* Kernel.keyOf(call))).toEqual({ state: "failed", agent: "build", tool: name, reason: expect.stringMatching(/kaboom|thrown synchronously/) })
              const replay = yield* turn.settle(call)
              expect(replay.replayed).toBe(true)
              expect(replay.settlement.error?.kind).toBe("interrupted")
              expect(replay.settlement.error?.message).toContain("ran but core could not settle it")
              // The defect's own text stays operational: it never reaches the model.
              expect(JSON.stringify(replay.settlement)).not.toMatch(/kaboom|thrown synchronously/)
              // The replay runs nothing and records nothing: the record keeps its reason for operators (it was
              // replaced by the interrupted settlement, its reason lost), and every replay answers the same.
              expect(yield* store.lookup(yield* Kernel.keyOf(call))).toMatchObject({ state: "failed", reason: expect.stringMatching(/kaboom|thrown synchronously/) })
              expect((yield* turn.settle(call)).settlement).toEqual(replay.settlement)
            }
          }),
        ))

      test("an error other than Tool.Failure is operational, not model-visible", () =>
        Kernel.run(
          Effect.gen(function* () {
            yield* register({
              sloppy: Tool.make({
                description: "s",
                input: Schema.Struct({}),
                output: Schema.String,
                execute: () => Effect.fail(new Error("raw error") as never),
              }),
            })
            const turn = yield* (yield* Settler.Service).materialize()
            const error = yield* turn.settle(Kernel.call("sloppy", {})).pipe(Effect.flip)
            expect(error).toBeInstanceOf(Settler.OperationalError)
            expect(error.message).toContain("unexpected error")
          }),
        ))

      test("interrupting a running call cancels it, is not a tool result, and is recorded as cancelled", () =>
        Kernel.run(
          Effect.gen(function* () {
            const started = yield* Deferred.make<void>()
            yield* register({
              slow: Tool.make({
                description: "s",
                input: Schema.Struct({}),
                output: Schema.String,
                execute: () => Deferred.succeed(started, undefined).pipe(Effect.andThen(Effect.never)),
              }),
            })
            const call = Kernel.call("slow", {})
            const turn = yield* (yield* Settler.Service).materialize()
            const fiber = yield* Effect.forkChild(turn.settle(call))
            yield* Deferred.await(started)
            yield* Fiber.interrupt(fiber)
            const exit = yield* Fiber.await(fiber)
            expect(exit._tag).toBe("Failure")
            const recorded = yield* (yield* Store.Service).lookup(yield* Kernel.keyOf(call))
            expect(recorded?.state === "settled" && recorded.settlement.status).toBe("cancelled")
            // A retry replays the cancellation; the tool does not run again.
            const replay = yield* turn.settle(call)
            expect(replay).toMatchObject({ replayed: true, settlement: { status: "cancelled" } })
          }),
        ))

      test("a tool that interrupts itself settles as cancelled", () =>
        Kernel.run(
          Effect.gen(function* () {
            yield* register({
              quit: Tool.make({ description: "q", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.interrupt }),
            })
            expect((yield* settleOnce("quit", {})).status).toBe("cancelled")
          }),
        ))
    })

    describe("Settler: stale, unknown and captured execution", () => {
      test("a call whose registration was replaced is rejected as stale without running anything", () =>
        Kernel.run(
          Effect.gen(function* () {
            let runs = 0
            const tool = Tool.make({
              description: "t",
              input: Schema.Struct({}),
              output: Schema.String,
              execute: () => Effect.sync(() => String(++runs)),
            })
            yield* register({ t: tool })
            const turn = yield* (yield* Settler.Service).materialize()
            yield* register({ t: tool })
            const { settlement } = yield* turn.settle(Kernel.call("t", {}))
            expect(settlement.error?.kind).toBe("stale")
            expect(runs).toBe(0)
          }),
        ))

      test("materializing again with nothing changed answers the same turn; after a registration, a new one, and the kept one goes stale", () =>
        Kernel.run(
          Effect.gen(function* () {
            const settler = yield* Settler.Service
            const tool = Tool.make({ description: "t", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("ran") })
            yield* register({ t: tool })
            const first = yield* settler.materialize()
            expect(yield* settler.materialize()).toBe(first)
            yield* register({ t: tool })
            const second = yield* settler.materialize()
            expect(second).not.toBe(first)
            expect((yield* first.settle(Kernel.call("t", {}, { toolCallID: "call_old" }))).settlement.error?.kind).toBe("stale")
            expect((yield* second.settle(Kernel.call("t", {}, { toolCallID: "call_new" }))).settlement.status).toBe("success")
          }),
        ))

      test("an unknown name lists the nearest advertised names", () =>
        Kernel.run(
          Effect.gen(function* () {
            yield* register({
              weather: Tool.make({ description: "w", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("") }),
            })
            const settlement = yield* settleOnce("wether", {})
            expect(settlement.error).toEqual({ kind: "unknown", message: 'Unknown tool "wether"; nothing ran. Did you mean "weather"?' })
          }),
        ))

      // A model's 9 MB name went back whole, after seconds of comparing it with every name.
      test("an unknown name of megabytes is quoted back cut, and compared with no name character by character", () =>
        Kernel.run(
          Effect.gen(function* () {
            yield* register({
              weather: Tool.make({ description: "w", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("") }),
            })
            const settlement = yield* settleOnce("q".repeat(9_000_000), {})
            const digest = new Bun.CryptoHasher("sha256").update("q".repeat(9_000_000)).digest("hex")
            const kept = `${"q".repeat(192)}…(9000000 characters, sha256 ${digest})`
            expect(settlement.tool).toBe(kept)
            expect(settlement.error).toEqual({
              kind: "unknown",
              message: `Unknown tool "${kept}"; nothing ran. Use one of the tools you were offered.`,
            })
          }),
        ))

      test("a running call is unaffected by re-registration of its name", () =>
        Kernel.run(
          Effect.gen(function* () {
            const started = yield* Deferred.make<void>()
            const proceed = yield* Deferred.make<void>()
            const first = Tool.make({
              description: "v1",
              input: Schema.Struct({}),
              output: Schema.String,
              execute: () =>
                Deferred.succeed(started, undefined).pipe(Effect.andThen(Deferred.await(proceed)), Effect.as("from v1")),
            })
            yield* register({ t: first })
            const turn = yield* (yield* Settler.Service).materialize()
            const fiber = yield* Effect.forkChild(turn.settle(Kernel.call("t", {})))
            yield* Deferred.await(started)
            yield* register({
              t: Tool.make({ description: "v2", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("from v2") }),
            })
            yield* Deferred.succeed(proceed, undefined)
            const { settlement } = yield* Fiber.join(fiber)
            expect(settlement).toMatchObject({ status: "success", structured: "from v1" })
          }),
        ))
    })

    describe("Settler: at most once", () => {
      test("settling a recorded call replays the record and runs nothing", () =>
        Kernel.run(
          Effect.gen(function* () {
            let runs = 0
            yield* register({
              once: Tool.make({ description: "o", input: Schema.Struct({}), output: Schema.Finite, execute: () => Effect.sync(() => ++runs) }),
            })
            const turn = yield* (yield* Settler.Service).materialize()
            const call = Kernel.call("once", {})
            const first = yield* turn.settle(call)
            const second = yield* turn.settle(call)
            expect(runs).toBe(1)
            expect(first.replayed).toBe(false)
            expect(second).toEqual({ settlement: first.settlement, replayed: true })
            // Even from a later turn, and with different input, the record is what comes back.
            const later = yield* (yield* Settler.Service).materialize()
            expect((yield* later.settle({ ...call, input: { other: true } })).settlement).toEqual(first.settlement)
            expect(runs).toBe(1)
          }),
        ))

      test("error settlements are recorded too", () =>
        Kernel.run(
          Effect.gen(function* () {
            const turn = yield* (yield* Settler.Service).materialize()
            const call = Kernel.call("missing", {})
            yield* turn.settle(call)
            const recorded = yield* (yield* Store.Service).lookup(yield* Kernel.keyOf(call))
            expect(recorded?.state === "settled" && recorded.settlement.error?.kind).toBe("unknown")
          }),
        ))

      test("a call begun by a process that died replays as interrupted and never runs again", async () => {
        const dataDir = tempDir()
        let runs = 0
        const tool = Tool.make({ description: "e", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.sync(() => String(++runs)) })
        const call = Kernel.call("effectful", {})
        // As if another core began this call and died mid-call (an owner that no longer exists).
        await Kernel.run(Effect.void, { dataDir, durable: true })
        const db = new Database(join(dataDir, "core.db"))
        db.run(
          "INSERT INTO settlements (location, session_id, call_id, tool, agent, state, owner, started_at) " +
            "VALUES (?, ?, ?, 'effectful', 'build', 'started', ?, 0)",
          // The kernel's Location is its permission project, the outputs directory.
          [join(dataDir, "outputs"), call.sessionID, call.toolCallID, `${hostname()}:999999999:1`],
        )
        db.close()
        const { settlement, replayed } = await Kernel.run(
          Effect.gen(function* () {
            yield* register({ effectful: tool })
            return yield* (yield* (yield* Settler.Service).materialize()).settle(call)
          }),
          { dataDir, durable: true },
        )
        expect(runs).toBe(0)
        expect(replayed).toBe(true)
        expect(settlement.error?.kind).toBe("interrupted")
        expect(settlement.error?.message).toContain("may or may not have taken effect")
      })

      test("a call still running in another live process is waited for, not run again", () =>
        Kernel.run(
          Effect.gen(function* () {
            let runs = 0
            yield* register({
              once: Tool.make({ description: "o", input: Schema.Struct({}), output: Schema.Finite, execute: () => Effect.sync(() => ++runs) }),
            })
            const store = yield* Store.Service
            const call = Kernel.call("once", {})
            // Begun through the store directly: to this settler it is a call some other live settler is running.
            yield* store.begin(yield* Kernel.keyOf(call), "once", "build")
            const turn = yield* (yield* Settler.Service).materialize()
            const waiting = yield* Effect.forkChild(turn.settle(call))
            yield* Effect.yieldNow
            const elsewhere = { tool: "once", callID: call.toolCallID, status: "success" as const, content: [], structured: 41, outputs: [] }
            yield* store.settle(yield* Kernel.keyOf(call), elsewhere, { state: "owned" })
            const settled = yield* Fiber.join(waiting)
            expect(runs).toBe(0)
            expect(settled).toEqual({ settlement: elsewhere, replayed: true })
          }),
          { durable: true },
        ))

      test("interrupting a caller that waits on another process's call leaves that call's record alone", () =>
        Kernel.run(
          Effect.gen(function* () {
            const store = yield* Store.Service
            const call = Kernel.call("elsewhere", {})
            yield* store.begin(yield* Kernel.keyOf(call), "elsewhere", "build")
            const turn = yield* (yield* Settler.Service).materialize()
            const waiting = yield* Effect.forkChild(turn.settle(call))
            yield* Effect.yieldNow
            yield* Fiber.interrupt(waiting)
            // The owner is still running it: the waiter must not record it cancelled.
            expect(yield* store.lookup(yield* Kernel.keyOf(call))).toEqual({ state: "started", agent: "build", tool: "elsewhere", owner: expect.any(String), running: true })
          }),
        ))

      test("a call another settler began after this one looked it up (or before its first write) is never overwritten with this one's rejection", async () => {
        // A store that lets "another settler" begin and settle the call right after this settler's first lookup
        // (the fiber path reads the record first), or right before its first write (the immediate path reads none).
        const racing = Layer.effect(
          Store.Service,
          Effect.gen(function* () {
            const real = yield* Store.Service
            let raced = false
            const race = (key: Store.Key) => {
              if (raced) return Effect.void
              raced = true
              return real.begin(key, "elsewhere", "build").pipe(
                Effect.andThen(
                  real.settle(key, { tool: "elsewhere", callID: key.toolCallID, status: "success", content: [], structured: 1, outputs: [] }, { state: "owned" }),
                ),
              )
            }
            return Store.Service.of({
              ...real,
              lookup: (key) => real.lookup(key).pipe(Effect.tap(() => race(key))),
              begin: (key, tool, agent, details) => race(key).pipe(Effect.andThen(real.begin(key, tool, agent, details))),
              settle: (key, settlement, expected) => race(key).pipe(Effect.andThen(real.settle(key, settlement, expected))),
            })
          }),
        ).pipe(Layer.provide(Store.layerMemory))
        const settled = await Effect.runPromise(
          Effect.gen(function* () {
            const turn = yield* (yield* Settler.Service).materialize()
            // This settler does not know the tool: its "unknown" must not replace the other's settlement.
            return yield* turn.settle(Kernel.call("elsewhere", {}))
          }).pipe(Kernel.onPath, Effect.provide(CoreKernel.layer({ store: racing, outputsDirectory: join(tempDir(), "outputs") }))),
        )
        expect(settled).toMatchObject({ replayed: true, settlement: { tool: "elsewhere", status: "success", structured: 1 } })
      })

      test("a call whose tool returned is settled with its result even if interrupted while it is being recorded", () =>
        Kernel.run(
          Effect.gen(function* () {
            let fiber: Fiber.Fiber<unknown, unknown> | undefined
            yield* register({
              quick: Tool.make({
                description: "returns at once",
                input: Schema.Struct({}),
                output: Schema.String,
                execute: () => Effect.succeed("done"),
                // Runs after execute returned: the interruption arrives while the result is projected and recorded.
                toModelOutput: ({ output }) => {
                  Effect.runFork(Fiber.interrupt(fiber!))
                  return output
                },
              }),
            })
            const call = Kernel.call("quick", {})
            const turn = yield* (yield* Settler.Service).materialize()
            fiber = yield* Effect.forkChild(turn.settle(call))
            yield* Fiber.await(fiber)
            const recorded = yield* (yield* Store.Service).lookup(yield* Kernel.keyOf(call))
            expect(recorded).toMatchObject({ state: "settled", settlement: { status: "success", structured: "done" } })
          }),
        ))

      test("a concurrent duplicate joins the running call instead of running again", () =>
        Kernel.run(
          Effect.gen(function* () {
            let runs = 0
            const proceed = yield* Deferred.make<void>()
            yield* register({
              slow: Tool.make({
                description: "s",
                input: Schema.Struct({}),
                output: Schema.Finite,
                execute: () => Effect.sync(() => ++runs).pipe(Effect.tap(() => Deferred.await(proceed))),
              }),
            })
            const turn = yield* (yield* Settler.Service).materialize()
            const call = Kernel.call("slow", {})
            const a = yield* Effect.forkChild(turn.settle(call))
            yield* Effect.yieldNow
            const b = yield* Effect.forkChild(turn.settle(call))
            yield* Effect.yieldNow
            yield* Deferred.succeed(proceed, undefined)
            const [first, second] = [yield* Fiber.join(a), yield* Fiber.join(b)]
            expect(runs).toBe(1)
            expect(second.settlement).toEqual(first.settlement)
          }),
        ))

      test("recording is durable across restarts with the SQLite store", async () => {
        const dataDir = tempDir()
        let runs = 0
        const tool = Tool.make({ description: "d", input: Schema.Struct({}), output: Schema.Finite, execute: () => Effect.sync(() => ++runs) })
        const call = Kernel.call("durable", {})
        const once = Effect.gen(function* () {
          yield* register({ durable: tool })
          return yield* (yield* (yield* Settler.Service).materialize()).settle(call)
        })
        const first = await Kernel.run(once, { dataDir, durable: true })
        const second = await Kernel.run(once, { dataDir, durable: true })
        expect(runs).toBe(1)
        expect(second).toEqual({ settlement: first.settlement, replayed: true })
      })
    })

    describe("Settler: a recorded call belongs to its Location, agent and tool", () => {
      const secretReader = (runs: Array<string>) => ({
        read: Tool.make({
          description: "r",
          input: Schema.Struct({}),
          output: Schema.String,
          execute: (_, context) => Effect.sync(() => (runs.push(`read by ${context.agent}`), "the secret")),
        }),
        list: Tool.make({
          description: "l",
          input: Schema.Struct({}),
          output: Schema.String,
          execute: () => Effect.sync(() => (runs.push("list"), "a listing")),
        }),
      })

      test("a replay asked by another agent is a conflict that shows nothing of the record and runs nothing", () =>
        Kernel.run(
          Effect.gen(function* () {
            const runs: Array<string> = []
            yield* register(secretReader(runs))
            const call = Kernel.call("read", {})
            expect((yield* settleOnce("read", {}, { toolCallID: call.toolCallID })).structured).toBe("the secret")
            const other = yield* settleOnce("read", {}, { toolCallID: call.toolCallID, agent: "plan" })
            expect(other.status).toBe("error")
            expect(other.error?.kind).toBe("conflict")
            expect(other.error?.message).toContain("another agent")
            expect(JSON.stringify(other)).not.toContain("the secret")
            expect(runs).toEqual(["read by build"])
            // The record is still the first agent's, replayed to it alone.
            expect((yield* settleOnce("read", {}, { toolCallID: call.toolCallID })).structured).toBe("the secret")
          }),
          { durable: true },
        ))

      test("a replay under another tool name is a conflict, never the other tool's record", () =>
        Kernel.run(
          Effect.gen(function* () {
            const runs: Array<string> = []
            yield* register(secretReader(runs))
            const call = Kernel.call("read", {})
            yield* settleOnce("read", {}, { toolCallID: call.toolCallID })
            const listed = yield* settleOnce("list", {}, { toolCallID: call.toolCallID })
            expect(listed).toMatchObject({ tool: "list", status: "error", error: { kind: "conflict" } })
            expect(listed.error?.message).toContain("another tool")
            expect(JSON.stringify(listed)).not.toContain("the secret")
            expect(runs).toEqual(["read by build"])
          }),
        ))

      test("a call still running is not joined by another agent: it meets the conflict at once", () =>
        Kernel.run(
          Effect.gen(function* () {
            const gate = yield* Deferred.make<void>()
            const started = yield* Deferred.make<void>()
            yield* register({
              slow: Tool.make({
                description: "s",
                input: Schema.Struct({}),
                output: Schema.String,
                execute: () => Deferred.succeed(started, undefined).pipe(Effect.andThen(Deferred.await(gate)), Effect.as("done")),
              }),
            })
            const turn = yield* (yield* Settler.Service).materialize()
            const call = Kernel.call("slow", {})
            const first = yield* Effect.forkChild(turn.settle(call))
            yield* Deferred.await(started)
            const other = yield* turn.settle({ ...call, agent: "plan" })
            expect(other.settlement.error?.kind).toBe("conflict")
            yield* Deferred.succeed(gate, undefined)
            expect((yield* Fiber.join(first)).settlement.structured).toBe("done")
          }),
        ))

      test("Locations sharing one store each run their own call under the same ids", async () => {
        const data = tempDir()
        const store = join(data, "core.db")
        const settleIn = (outputs: string) =>
          Effect.runPromise(
            Effect.gen(function* () {
              yield* register({
                where: Tool.make({ description: "w", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed(outputs) }),
              })
              const turn = yield* (yield* Settler.Service).materialize()
              return yield* turn.settle(Kernel.call("where", {}, { sessionID: "ses_shared", toolCallID: "call_0" }))
            }).pipe(
              Effect.scoped,
              Kernel.onPath,
              Effect.provide(CoreKernel.layer({ store: SqliteStore.layer(store), outputsDirectory: join(data, outputs) })),
            ),
          )
        const first = await settleIn("one")
        const second = await settleIn("two")
        expect(first).toMatchObject({ replayed: false, settlement: { structured: "one" } })
        expect(second).toMatchObject({ replayed: false, settlement: { structured: "two" } })
        // Each replays its own.
        expect(await settleIn("two")).toMatchObject({ replayed: true, settlement: { structured: "two" } })
      })
    })

    describe("Settler: bounding", () => {
      test("an oversized output is kept in full and replaced by a bounded preview with its reference", () =>
        Kernel.run(
          Effect.gen(function* () {
            const lines = Array.from({ length: 10_000 }, (_, index) => `line ${index + 1}`)
            yield* register({
              big: Tool.make({ description: "b", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed(lines.join("\n")) }),
            })
            const settlement = yield* settleOnce("big", {})
            const output = yield* Output.Service
            expect(settlement.status).toBe("success")
            expect(settlement.outputs).toHaveLength(1)
            const [reference] = settlement.outputs
            const full = lines.join("\n")
            // The string output's structured value is the text kept: stored once.
            expect(reference!.bytes).toBe(Buffer.byteLength(full))
            const text = (settlement.content[0] as { text: string }).text
            expect(text.split("\n").length).toBeLessThanOrEqual(output.limits.maxLines)
            expect(text.split("\n")[1]).toBe("line 1")
            expect(text).toEndWith("line 10000")
            expect(text).toContain(reference!.id)
            // The structured output is that text, too large to return: null, never a preview.
            expect(settlement.structured).toBeNull()
          }),
          { limits: { maxLines: 100, maxBytes: 4_096 } },
        ))
    })
  })
}
