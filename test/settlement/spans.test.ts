// A settle's spans through any tracer other than core's exporter (src/settlement/spans.ts): made through Effect's
// tracer interface, one per step under the settle span, with the step's attributes and how it ended; a tool's own
// span under the settle too; and a store that fails while recording is a failed record span.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Cause, Context, Effect, Exit, Layer, Option, Schema, Tracer } from "effect"
import { Kernel as CoreKernel } from "../../src/host/kernel"
import { Store } from "../../src/store/store"
import { Tool } from "../../src/tool/tool"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Spans } from "../../src/settlement/spans"
import type { Settlement } from "../../src/contract/settlement"
import * as Kernel from "../support/kernel"
import { tempDir } from "../support/temp"

/** A tracer keeping every span it makes (Effect's own spans): what a tracer other than core's exporter sees. */
const recording = () => {
  const made: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span: (options) => {
      const span = new Tracer.NativeSpan(options)
      made.push(span)
      return span
    },
  })
  return { made, layer: Layer.succeed(Tracer.Tracer, tracer) }
}

const echo = Tool.make({
  description: "Echo text back",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(input.text).pipe(Effect.withSpan("echo.inner")),
})

const settle = (input: unknown) =>
  Effect.gen(function* () {
    yield* (yield* Registry.Service).tools.register({ echo })
    const turn = yield* (yield* Settler.Service).materialize()
    return yield* turn.settle(Kernel.call("echo", input))
  })

const ended = (span: Tracer.NativeSpan) => {
  if (span.status._tag !== "Ended") throw new Error(`${span.name} did not end`)
  return span.status
}

describe("a settle traced by another tracer", () => {
  test("makes the settle span, a span per step under it with its attributes, and the tool's own span under it", async () => {
    const { made, layer } = recording()
    const settled = await Kernel.run(settle({ text: "SECRET_INPUT" }).pipe(Effect.provide(layer)))
    expect(settled.settlement.status).toBe("success")
    const settleSpan = made.find((span) => span.name === "Settler.settle")!
    const under = made.filter((span) => span.parent._tag === "Some" && span.parent.value === settleSpan)
    expect(under.map((span) => span.name).sort()).toEqual(
      ["Settler.bound", "Settler.decode", "Settler.execute", "Settler.permission", "Settler.record", "Settler.record", "echo.inner"].sort(),
    )
    const byName = (name: string) => under.find((span) => span.name === name)!
    expect(Object.fromEntries(byName("Settler.decode").attributes)).toEqual({ "core.input.valid": true })
    expect(Object.fromEntries(byName("Settler.permission").attributes)).toEqual({ "core.permission.decision": "allow" })
    expect(Object.fromEntries(byName("Settler.execute").attributes)).toEqual({ "core.execute.outcome": "success" })
    expect(Object.fromEntries(byName("Settler.bound").attributes)).toEqual({
      "core.output.bytes": 12,
      "core.output.bounded": false,
      "core.output.managed_bytes": 0,
    })
    expect(under.filter((span) => span.name === "Settler.record").map((span) => span.attributes.get("core.record")).sort()).toEqual([
      "intent",
      "settlement",
    ])
    expect(Object.fromEntries(settleSpan.attributes)).toMatchObject({ "core.tool": "echo", "core.status": "success", "core.replayed": false })
    // Times in order: each step inside the settle, its end after its start; each step ended as a success.
    const outer = ended(settleSpan)
    for (const span of under) {
      const status = ended(span)
      expect({ name: span.name, ordered: outer.startTime <= status.startTime && status.startTime <= status.endTime && status.endTime <= outer.endTime }).toEqual({
        name: span.name,
        ordered: true,
      })
      expect({ name: span.name, success: Exit.isSuccess(status.exit) }).toEqual({ name: span.name, success: true })
    }
    for (const span of made) expect(JSON.stringify([...span.attributes])).not.toContain("SECRET_INPUT")
  })

  test("a store that fails while recording the intent is a failed record span carrying the error; the call fails operationally", async () => {
    const { made, layer } = recording()
    // The memory store, but for recording an intent, which fails as a full disk would.
    const failing = Layer.effect(
      Store.Service,
      Effect.map(Effect.service(Store.Service), (store) =>
        Store.Service.of({ ...store, begin: () => Effect.fail(Store.failed("/data/core.db", "begin", new Error("disk full"))) }),
      ),
    ).pipe(Layer.provide(Store.layerMemory))
    const exit = await Effect.runPromise(
      settle({ text: "hi" }).pipe(
        Effect.exit,
        Effect.scoped,
        Effect.provide(CoreKernel.layer({ store: failing, outputsDirectory: join(tempDir(), "outputs") })),
        Effect.provide(layer),
      ),
    )
    expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toBeInstanceOf(Settler.OperationalError)
    const settleSpan = made.find((span) => span.name === "Settler.settle")!
    const records = made.filter((span) => span.name === "Settler.record")
    expect(records.map((span) => span.attributes.get("core.record"))).toEqual(["intent"])
    expect(records[0]!.parent).toEqual(Option.some(settleSpan))
    const status = ended(records[0]!)
    expect(Exit.isFailure(status.exit) && Cause.squash(status.exit.cause)).toBeInstanceOf(Store.StoreError)
    // The steps before it succeeded; the tool never ran.
    expect(made.filter((span) => span.name === "Settler.execute")).toEqual([])
    expect(Exit.isSuccess(ended(made.find((span) => span.name === "Settler.permission")!).exit)).toBe(true)
    expect(Exit.isFailure(ended(settleSpan).exit)).toBe(true)
  })
})

describe("a settle's spans recorded outside a fiber (a synchronous settle)", () => {
  test("the settle span sits under the span it is given, its steps under it, timed from the system clock", () => {
    const made: Array<Tracer.NativeSpan> = []
    const tracer = Tracer.make({
      span: (options) => {
        const span = new Tracer.NativeSpan(options)
        made.push(span)
        return span
      },
    })
    const request = tracer.span({
      name: "POST",
      parent: Option.none(),
      annotations: Context.empty(),
      links: [],
      startTime: 1n,
      kind: "server",
      root: true,
      sampled: true,
    })
    const before = BigInt(Date.now()) * 1_000_000n
    const call = { name: "echo", sessionID: "ses_sync", toolCallID: "call_sync", agent: "build", assistantMessageID: "msg_sync" }
    const trace = Spans.begin(call, 16, tracer, request)
    const started = Spans.now(trace)
    trace.step("Settler.decode", started, performance.now(), undefined, "core.input.valid", true)
    const settlement: Settlement.Info = { tool: "echo", callID: "call_sync", status: "success", content: [{ type: "text", text: "hi" }], structured: "hi", outputs: [] }
    Spans.end(trace, Exit.succeed({ settlement, replayed: false }))
    const settleSpan = made.find((span) => span.name === "Settler.settle")!
    expect(settleSpan.parent).toEqual(Option.some(request))
    expect(settleSpan.traceId).toBe(request.traceId)
    expect(Object.fromEntries(settleSpan.attributes)).toMatchObject({ "core.call": "call_sync", "core.status": "success", "core.output.bytes": 2 })
    expect(ended(settleSpan).startTime).toBeGreaterThanOrEqual(before)
    const [decode] = made.filter((span) => span.name === "Settler.decode")
    expect(decode!.parent).toEqual(Option.some(settleSpan))
    expect(ended(decode!).startTime).toBeGreaterThanOrEqual(ended(settleSpan).startTime)
    expect(ended(decode!).endTime).toBeLessThanOrEqual(ended(settleSpan).endTime)
  })
})
