// The OTLP exporter (src/host/otlp.ts) against a real local receiver (Bun.serve): a settle's spans, named and
// nested as the operator reads them (a tool's own span under the settle), times in order; full batches sent without
// waiting for the interval; everything left flushed when the layer closes; gzip; a receiver that hangs or fails
// costs a bounded queue and a bounded wait, never the call.

import { afterAll, describe, expect, test } from "bun:test"
import { gunzipSync } from "node:zlib"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Clock, Context, Effect, Exit, Layer, ManagedRuntime, Option, Schema, Scope, Tracer } from "effect"
import { Kernel } from "../../src/host/kernel"
import { Otlp } from "../../src/host/otlp"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Spans } from "../../src/settlement/spans"
import { Store } from "../../src/store/store"
import { Tool } from "../../src/tool/tool"
import type { JsonSpan } from "../support/otlp"

interface Received {
  readonly headers: Headers
  readonly body: Uint8Array
}

const servers: Array<{ stop: (force?: boolean) => void }> = []
const dirs: Array<string> = []
afterAll(() => {
  for (const server of servers) server.stop(true)
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** A receiver answering `status`, or never answering when `hang`. */
const receiver = (options: { readonly status?: number; readonly hang?: boolean } = {}) => {
  const received: Array<Received> = []
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      received.push({ headers: request.headers, body: new Uint8Array(await request.arrayBuffer()) })
      if (options.hang) return new Promise<Response>(() => {})
      return new Response("{}", { status: options.status ?? 200 })
    },
  })
  servers.push(server)
  return { url: `http://127.0.0.1:${server.port}/v1/traces`, received }
}

const settings = (url: string, overrides: Partial<Otlp.Settings> = {}): Otlp.Settings => ({
  url,
  headers: { "x-team": "core" },
  protocol: "http/json",
  compression: "none",
  serviceName: "core-test",
  exportIntervalMs: 3_600_000,
  flushMs: 2_000,
  ...overrides,
})

const spansOf = (received: ReadonlyArray<Received>): Array<JsonSpan> =>
  received.flatMap((request) => {
    const data = JSON.parse(new TextDecoder().decode(request.body)) as {
      resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<JsonSpan> }> }>
    }
    return data.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans))
  })

const attribute = (span: JsonSpan, key: string): unknown => {
  const value = span.attributes.find((entry) => entry.key === key)?.value
  return value === undefined ? undefined : Object.values(value)[0]
}

/** Ends one span named `name` with one attribute through `made`'s tracer, as Effect would. */
const endSpan = (made: Otlp.Made, name: string, key: string, value: unknown) => {
  const span = made.tracer.span({
    name,
    parent: Option.none(),
    annotations: Context.empty(),
    links: [],
    startTime: 1n,
    kind: "internal",
    root: false,
    sampled: true,
  })
  span.attribute(key, value)
  span.end(2n, Exit.void)
}

/** Ends `count` spans named `name-<i>` through `made`'s tracer, as Effect would. */
const endSpans = (made: Otlp.Made, count: number, name = "span") => {
  for (let index = 0; index < count; index++) endSpan(made, `${name}-${index}`, "index", index)
}

const until = async (condition: () => boolean, ms = 5_000) => {
  const deadline = Date.now() + ms
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out waiting")
    await Bun.sleep(10)
  }
}

/**
 * A kernel exporting to `otlp` (its URL, or a tracer layer of the test's) with an echo tool registered (its execution
 * inside `inner`), and its first turn.
 */
const kernelWithEcho = async (
  otlp: { readonly url: string } | Layer.Layer<never>,
  inner: (effect: Effect.Effect<string>) => Effect.Effect<string> = (effect) => effect,
) => {
  const dir = mkdtempSync(join(tmpdir(), "core-otlp-"))
  dirs.push(dir)
  const echo = Tool.make({
    description: "Echo text back",
    input: Schema.Struct({ text: Schema.String }),
    output: Schema.String,
    execute: (input) => inner(Effect.succeed(input.text)),
  })
  const runtime = ManagedRuntime.make(
    Layer.merge(
      Kernel.layer({ store: Store.layerMemory, outputsDirectory: join(dir, "outputs") }),
      "url" in otlp ? Otlp.layer(settings(otlp.url)) : otlp,
    ),
  )
  const registration = Effect.runSync(Scope.make())
  const turn = await runtime.runPromise(
    Effect.gen(function* () {
      yield* (yield* Registry.Service).tools.register({ echo }).pipe(Scope.provide(registration))
      return yield* (yield* Settler.Service).materialize()
    }),
  )
  const close = async () => {
    await Effect.runPromise(Scope.close(registration, Exit.void))
    await runtime.dispose()
  }
  return { runtime, turn, close }
}

describe("a settle's spans", () => {
  test("reach the receiver when the layer closes: settle over its steps, a tool's own span under the settle", async () => {
    const otlp = receiver()
    const { runtime, turn, close } = await kernelWithEcho(otlp, (effect) => effect.pipe(Effect.withSpan("echo.inner")))
    const settled = await runtime.runPromise(
      turn.settle({
        sessionID: "ses_otlp",
        agent: "build",
        assistantMessageID: "msg_otlp",
        toolCallID: "call_otlp",
        name: "echo",
        input: { text: "SECRET_INPUT" },
      }),
    )
    expect(settled.settlement.status).toBe("success")
    // Nothing is sent before the interval or a full batch: the spans wait for the layer to close.
    expect(otlp.received).toEqual([])
    await close()

    expect(otlp.received.length).toBe(1)
    expect(otlp.received[0]!.headers.get("content-type")).toBe("application/json")
    expect(otlp.received[0]!.headers.get("x-team")).toBe("core")
    expect(otlp.received[0]!.headers.get("user-agent")).toStartWith("core/")
    const all = spansOf(otlp.received)
    const settle = all.find((span) => span.name === "Settler.settle")!
    // The call's trace (registering the tool is a trace of its own: Registry.register).
    const spans = all.filter((span) => span.traceId === settle.traceId)
    expect(settle.parentSpanId).toBeUndefined()
    for (const [key, value] of Object.entries({
      "core.tool": "echo",
      "core.session": "ses_otlp",
      "core.call": "call_otlp",
      "core.agent": "build",
      "core.status": "success",
      "core.output.bytes": 12,
      "core.replayed": false,
    })) {
      expect({ key, value: attribute(settle, key) }).toEqual({ key, value })
    }
    const names = spans.map((span) => span.name).sort()
    expect(names).toEqual(
      ["Settler.bound", "Settler.decode", "Settler.execute", "Settler.permission", "Settler.record", "Settler.record", "Settler.settle", "echo.inner"].sort(),
    )
    const start = BigInt(settle.startTimeUnixNano)
    const end = BigInt(settle.endTimeUnixNano)
    expect(end >= start).toBe(true)
    for (const span of spans.filter((one) => one !== settle)) {
      expect({ name: span.name, parent: span.parentSpanId, trace: span.traceId }).toEqual({ name: span.name, parent: settle.spanId, trace: settle.traceId })
      // Each step lies within the settle, its end after its start.
      expect({ name: span.name, inside: BigInt(span.startTimeUnixNano) >= start && BigInt(span.endTimeUnixNano) <= end + 1_000_000n }).toEqual({ name: span.name, inside: true })
      expect(BigInt(span.endTimeUnixNano) >= BigInt(span.startTimeUnixNano)).toBe(true)
    }
    expect(attribute(spans.find((span) => span.name === "Settler.permission")!, "core.permission.decision")).toBe("allow")
    expect(attribute(spans.find((span) => span.name === "Settler.execute")!, "core.execute.outcome")).toBe("success")
    // Ids are hex of their length, never all zeros.
    expect(settle.traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(settle.spanId).toMatch(/^[0-9a-f]{16}$/)
    expect(settle.traceId).not.toBe("0".repeat(32))
    expect(new TextDecoder().decode(otlp.received[0]!.body)).not.toContain("SECRET_INPUT")
  })
})

describe("a settle's attributes", () => {
  /** Settles `calls` on a kernel exporting through `tracer`, the echo tool annotating the settle span when asked. */
  const settleWith = async (tracer: Layer.Layer<never>, calls: ReadonlyArray<Settler.Call>) => {
    const annotating = (effect: Effect.Effect<string>) =>
      Effect.flatMap(effect, (text) => (text === "annotate" ? Effect.as(Effect.annotateCurrentSpan("tool.note", "ü"), text) : Effect.succeed(text)))
    const { runtime, turn, close } = await kernelWithEcho(tracer, annotating)
    for (const call of calls) await runtime.runPromise(turn.settle(call))
    await close()
  }

  test("are what any other tracer's settle span says, in the same order: of the call, how it settled, a tool's own", async () => {
    const call = (toolCallID: string, name: string, text: string): Settler.Call => ({
      sessionID: "ses_ü",
      agent: "build",
      assistantMessageID: "msg_attributes",
      toolCallID,
      name,
      input: { text },
    })
    const calls = [call("call_echo", "echo", "hello"), call("call_unknown", "nothing", "x"), call("call_annotated", "echo", "annotate")]
    const otlp = receiver()
    await settleWith(Otlp.layer(settings(otlp.url)), calls)
    const made: Array<Tracer.NativeSpan> = []
    await settleWith(
      Layer.succeed(
        Tracer.Tracer,
        Tracer.make({
          span: (options) => {
            const span = new Tracer.NativeSpan(options)
            made.push(span)
            return span
          },
        }),
      ),
      calls,
    )
    const exported = spansOf(otlp.received).filter((span) => span.name === "Settler.settle")
    const ownPairs = exported.map((span) => span.attributes.map((entry) => [entry.key, Object.values(entry.value)[0]]))
    const otherPairs = made
      .filter((span) => span.name === "Settler.settle")
      .map((span) => [...span.attributes])
    expect(ownPairs).toEqual(otherPairs)
    expect(ownPairs.map((pairs) => pairs.map(([key]) => key))).toEqual([
      ["core.tool", "core.session", "core.call", "core.agent", "core.message", "core.input.bytes", "core.status", "core.replayed", "core.output.bytes"],
      ["core.tool", "core.session", "core.call", "core.agent", "core.message", "core.input.bytes", "core.status", "core.error.kind", "core.replayed", "core.output.bytes"],
      ["core.tool", "core.session", "core.call", "core.agent", "core.message", "core.input.bytes", "tool.note", "core.status", "core.replayed", "core.output.bytes"],
    ])
  })
})

describe("a settle's times", () => {
  test("are Effect's clock's: the clock a fiber is given (a test's), or the system's, its steps placed from its start", async () => {
    const otlp = receiver()
    const { runtime, turn, close } = await kernelWithEcho(otlp, (effect) => effect.pipe(Effect.withSpan("echo.inner")))
    const system = Context.get(Context.empty(), Clock.Clock)
    // 2001-09-09T01:46:40Z, in nanoseconds.
    const at = 1_000_000_000_000_000_000n
    const fixed: Clock.Clock = {
      currentTimeMillisUnsafe: () => Number(at / 1_000_000n),
      currentTimeMillis: Effect.sync(() => Number(at / 1_000_000n)),
      currentTimeNanosUnsafe: () => at,
      currentTimeNanos: Effect.sync(() => at),
      monotonicTimeNanosUnsafe: () => system.monotonicTimeNanosUnsafe(),
      monotonicTimeNanos: system.monotonicTimeNanos,
      sleep: (duration) => system.sleep(duration),
    }
    const call = (toolCallID: string) =>
      turn.settle({ sessionID: "ses_clock", agent: "build", assistantMessageID: "msg", toolCallID, name: "echo", input: { text: "hi" } })
    // Effect's own clock (the wall clock as it last anchored on it: in a long-running process it may stand up to a
    // second from Date.now(), by Effect's design), read as a settle without a clock of its own reads it.
    const effectNow = () => Effect.runSync(Clock.currentTimeNanos)
    const before = effectNow()
    await runtime.runPromise(call("call_fixed").pipe(Effect.provideService(Clock.Clock, fixed)))
    await runtime.runPromise(call("call_system"))
    const after = effectNow()
    await close()
    const all = spansOf(otlp.received)
    const settleOf = (id: string) => all.find((span) => span.name === "Settler.settle" && attribute(span, "core.call") === id)!
    const fixedSettle = settleOf("call_fixed")
    const systemSettle = settleOf("call_system")
    expect(BigInt(fixedSettle.startTimeUnixNano)).toBe(at)
    // Core's own clock, in step with Effect's: within the test's two readings of it (1 ms each).
    expect(BigInt(systemSettle.startTimeUnixNano) >= before - 1_000_000n).toBe(true)
    expect(BigInt(systemSettle.endTimeUnixNano) <= after + 1_000_000n).toBe(true)
    for (const settle of [fixedSettle, systemSettle]) {
      const start = BigInt(settle.startTimeUnixNano)
      const inside = all.filter((span) => span.parentSpanId === settle.spanId)
      expect(inside.map((span) => span.name).sort()).toEqual(
        ["Settler.bound", "Settler.decode", "Settler.execute", "Settler.permission", "Settler.record", "Settler.record", "echo.inner"].sort(),
      )
      for (const span of inside) {
        expect({ name: span.name, start: BigInt(span.startTimeUnixNano) >= start }).toEqual({ name: span.name, start: true })
        expect({ name: span.name, within: BigInt(span.endTimeUnixNano) <= BigInt(settle.endTimeUnixNano) + 1_000_000n }).toEqual({ name: span.name, within: true })
      }
    }
  })
})

describe("a settle where tracing is turned off", () => {
  test("makes no span (Effect.withTracerEnabled(false)), and settles as ever", async () => {
    const otlp = receiver()
    const { runtime, turn, close } = await kernelWithEcho(otlp)
    const call = (toolCallID: string) =>
      turn.settle({ sessionID: "ses_off", agent: "build", assistantMessageID: "msg", toolCallID, name: "echo", input: { text: "hi" } })
    const quiet = await runtime.runPromise(call("call_quiet").pipe(Effect.withTracerEnabled(false)))
    const traced = await runtime.runPromise(call("call_traced"))
    expect([quiet.settlement.status, traced.settlement.status]).toEqual(["success", "success"])
    await close()
    const calls = spansOf(otlp.received)
      .filter((span) => span.name === "Settler.settle")
      .map((span) => attribute(span, "core.call"))
    expect(calls).toEqual(["call_traced"])
  })
})

describe("the exporter", () => {
  test("sends each full batch without waiting for the interval, and the rest when it closes", async () => {
    const otlp = receiver()
    const made = Otlp.make(settings(otlp.url, { protocol: "http/protobuf", maxBatchSpans: 10 }))
    endSpans(made, 25)
    // Sent as each batch filled, long before the hour-long interval, by the sending thread.
    await until(() => made.stats.sent === 20)
    expect(made.threaded).toBe(true)
    expect(otlp.received.length).toBe(2)
    await made.close()
    expect(otlp.received.length).toBe(3)
    expect(made.stats).toEqual({ sent: 25, dropped: 0, requests: 3, failures: 0 })
    expect(otlp.received[0]!.headers.get("content-type")).toBe("application/x-protobuf")
    const text = otlp.received.map((request) => Buffer.from(request.body).toString("latin1")).join("")
    // Each name once, as a protobuf string: its length, then its bytes.
    for (let index = 0; index < 25; index++) {
      const name = `span-${index}`
      expect(text.split(`${String.fromCharCode(name.length)}${name}`).length - 1).toBe(1)
    }
  })

  test("sends what is waiting every interval", async () => {
    const otlp = receiver()
    const made = Otlp.make(settings(otlp.url, { exportIntervalMs: 50 }))
    endSpans(made, 3)
    await until(() => otlp.received.length === 1)
    expect(spansOf(otlp.received).map((span) => span.name)).toEqual(["span-0", "span-1", "span-2"])
    await made.close()
    expect(otlp.received.length).toBe(1)
  })

  test("gzips a body of a kilobyte or more when asked", async () => {
    const otlp = receiver()
    const made = Otlp.make(settings(otlp.url, { compression: "gzip" }))
    endSpans(made, 20)
    await made.close()
    expect(otlp.received[0]!.headers.get("content-encoding")).toBe("gzip")
    const data = JSON.parse(gunzipSync(otlp.received[0]!.body).toString("utf8")) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<JsonSpan> }> }> }
    expect(data.resourceSpans[0]!.scopeSpans[0]!.spans.length).toBe(20)
  })

  test("a receiver that never answers costs a bounded queue and a bounded wait at close", async () => {
    const otlp = receiver({ hang: true })
    const made = Otlp.make(settings(otlp.url, { maxBatchSpans: 10, maxQueuedSpans: 30, flushMs: 300 }))
    endSpans(made, 100)
    await until(() => otlp.received.length === 2)
    expect(made.threaded).toBe(true)
    // Ended at once: a queue's worth kept (30), the rest dropped, not kept.
    expect(made.stats.dropped).toBe(70)
    // Two requests in flight left the queue (as in OpenTelemetry's batch processor; at most two are): 10 spans wait,
    // room for 20 more. Ended while the receiver still hangs: those are kept, the rest dropped at once.
    endSpans(made, 50, "more")
    expect(made.stats.dropped).toBe(100)
    const started = performance.now()
    await made.close()
    expect(performance.now() - started).toBeLessThan(2_000)
    expect(made.stats.sent).toBe(0)
    expect(made.stats.dropped).toBe(150)
  })

  test("a failing receiver pauses sending; spans made meanwhile wait, within the bound", async () => {
    const otlp = receiver({ status: 503 })
    const made = Otlp.make(settings(otlp.url, { maxBatchSpans: 5, maxQueuedSpans: 20, exportIntervalMs: 20 }))
    endSpans(made, 5)
    await until(() => made.stats.failures === 1)
    endSpans(made, 12, "later")
    await Bun.sleep(200)
    // Paused after the failure: no second request within the pause.
    expect(otlp.received.length).toBe(1)
    expect(made.stats.dropped).toBe(5)
    endSpans(made, 30, "over")
    // 12 waiting, room for 8 more (the bound is 20 spans not yet sent).
    expect(made.stats.dropped).toBe(5 + 22)
    await made.close()
  })

  test("a redirect is not followed: the headers and the spans go to no other origin", async () => {
    const elsewhere = receiver()
    const redirecting = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () => new Response(null, { status: 307, headers: { location: elsewhere.url.replace("127.0.0.1", "localhost") } }),
    })
    servers.push(redirecting)
    const made = Otlp.make(settings(`http://127.0.0.1:${redirecting.port}/v1/traces`))
    endSpans(made, 3)
    await made.close()
    expect(elsewhere.received).toEqual([])
    expect(made.stats).toMatchObject({ sent: 0, dropped: 3, failures: 1 })
  })

  test("an endpoint nothing listens on: the spans are dropped and close returns at once", async () => {
    const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() })
    const url = `http://127.0.0.1:${probe.port}/v1/traces`
    probe.stop(true)
    const made = Otlp.make(settings(url))
    endSpans(made, 3)
    const started = performance.now()
    await made.close()
    expect(performance.now() - started).toBeLessThan(1_500)
    // Nothing was sent while it ran: the last spans went from the closing thread, no sending thread was started.
    expect(made.threaded).toBe(false)
    expect(made.stats).toMatchObject({ sent: 0, dropped: 3, failures: 1 })
  })

  test("the sending thread, the endpoint down: full batches are dropped with a count and close returns within the bound", async () => {
    const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() })
    const url = `http://127.0.0.1:${probe.port}/v1/traces`
    probe.stop(true)
    const made = Otlp.make(settings(url, { maxBatchSpans: 5, maxQueuedSpans: 20, flushMs: 300 }))
    endSpans(made, 5)
    await until(() => made.stats.failures === 1)
    expect(made.threaded).toBe(true)
    expect(made.stats).toMatchObject({ sent: 0, dropped: 5 })
    // Paused after the failure: what ends meanwhile waits, within the bound, and the rest is dropped.
    endSpans(made, 100, "later")
    expect(made.stats.dropped).toBe(5 + 80)
    const started = performance.now()
    await made.close()
    expect(performance.now() - started).toBeLessThan(1_500)
    expect(made.stats.sent).toBe(0)
    expect(made.stats.dropped).toBe(105)
  })

  test("the sending thread, asleep after 200 ms without batches, is woken by the next one", async () => {
    const otlp = receiver()
    const made = Otlp.make(settings(otlp.url, { maxBatchSpans: 1 }))
    endSpans(made, 1, "before")
    await until(() => made.stats.sent === 1)
    expect(made.threaded).toBe(true)
    // The thread looks for batches every millisecond and sleeps after 200 looks found none: nothing to wait on from
    // here but the time.
    await Bun.sleep(400)
    endSpans(made, 2, "after")
    await until(() => made.stats.sent === 3, 1_000)
    await made.close()
    expect(spansOf(otlp.received).map((span) => span.name)).toEqual(["before-0", "after-0", "after-1"])
  })

  test("the sending thread's ring, wrapped around many times, hands on every chunk whole and in order", async () => {
    const otlp = receiver()
    // A queue of 4 spans: the ring's least size (a quarter of a MiB), a dozen chunks of one 20 kB span each.
    const made = Otlp.make(settings(otlp.url, { maxBatchSpans: 1, maxQueuedSpans: 4 }))
    const count = 60
    const blob = (index: number) => `${index}:${"ü".repeat(10_000)}`
    for (let index = 0; index < count; index++) {
      endSpan(made, `wrap-${index}`, "blob", blob(index))
      await until(() => made.stats.sent === index + 1)
    }
    expect(made.threaded).toBe(true)
    await made.close()
    const spans = spansOf(otlp.received)
    expect(spans.map((span) => span.name)).toEqual(Array.from({ length: count }, (_, index) => `wrap-${index}`))
    expect(spans.every((span, index) => attribute(span, "blob") === blob(index))).toBe(true)
    expect(made.stats).toEqual({ sent: count, dropped: 0, requests: count, failures: 0 })
  })

  test("a settle's records, wrapped around the sending thread's ring many times, are its spans whole and in order", async () => {
    const otlp = receiver()
    // 10 settles of 7 spans a chunk, each settle's records over 2 kB (its call's id): the ring's least size (a quarter
    // of a MiB) holds about ten chunks.
    const made = Otlp.make(settings(otlp.url, { maxBatchSpans: 70, maxQueuedSpans: 700 }))
    const settlement = { tool: "echo", callID: "", status: "success", content: [{ type: "text", text: "hi" }], structured: "hi", outputs: [] } as const
    const count = 400
    const idOf = (index: number) => `call_${index}_${"ü".repeat(1_000)}`
    for (let index = 0; index < count; index++) {
      const call = { name: "echo", sessionID: "ses_ring", toolCallID: idOf(index), agent: "build", assistantMessageID: "msg_ring" }
      const trace = Spans.begin(call, 16, made.tracer)
      let at = trace.originMs
      for (const name of ["Settler.decode", "Settler.permission", "Settler.record", "Settler.execute", "Settler.bound", "Settler.record"]) {
        trace.step(name, at, (at = performance.now()), undefined, "step.index", index)
      }
      Spans.end(trace, Exit.succeed({ settlement: { ...settlement, callID: call.toolCallID }, replayed: false }))
      if (index % 10 === 9) await until(() => made.stats.sent === (index + 1) * 7)
    }
    await made.close()
    expect(made.stats).toMatchObject({ sent: count * 7, dropped: 0 })
    const spans = spansOf(otlp.received)
    const settles = spans.filter((span) => span.name === "Settler.settle")
    expect(settles.map((span) => attribute(span, "core.call"))).toEqual(Array.from({ length: count }, (_, index) => idOf(index)))
    for (const [index, settle] of settles.entries()) {
      const steps = spans.filter((span) => span.parentSpanId === settle.spanId)
      expect({ index, steps: steps.map((span) => [span.name, attribute(span, "step.index"), span.traceId]) }).toEqual({
        index,
        steps: ["Settler.decode", "Settler.permission", "Settler.record", "Settler.execute", "Settler.bound", "Settler.record"].map((name) => [name, index, settle.traceId]),
      })
    }
  })

  test("spans it could not export are told to the operator: how many, and why", async () => {
    const otlp = receiver({ hang: true })
    const lines: Array<string> = []
    const made = Otlp.make(settings(otlp.url, { maxBatchSpans: 10, maxQueuedSpans: 30, flushMs: 300, exportIntervalMs: 50 }), (line) => lines.push(line))
    endSpans(made, 100)
    // Told at the next interval, once.
    await until(() => lines.length === 1)
    expect(lines).toEqual(["core: warning: 70 spans were not exported: 70 as 30 were waiting already (OTEL_BSP_MAX_QUEUE_SIZE)"])
    await made.close()
    // At close: the two requests that never got an answer, and the batch still waiting.
    expect(lines.slice(1)).toEqual(["core: warning: 30 spans were not exported: 30 in requests that failed, or were not answered or sent by exit"])
    expect(made.stats.dropped).toBe(100)
  })

  test("a chunk too large for the sending thread's ring is dropped with a count; the next ones are sent", async () => {
    const otlp = receiver()
    const made = Otlp.make(settings(otlp.url, { maxBatchSpans: 1, maxQueuedSpans: 4 }))
    endSpans(made, 1, "first")
    await until(() => made.stats.sent === 1)
    expect(made.threaded).toBe(true)
    // Over the ring's least size (a quarter of a MiB) for a queue of 4 spans.
    endSpan(made, "huge", "blob", "x".repeat(400 * 1024))
    endSpans(made, 2, "after")
    await until(() => made.stats.sent === 3)
    expect(made.stats.dropped).toBe(1)
    await made.close()
    expect(spansOf(otlp.received).map((span) => span.name)).toEqual(["first-0", "after-0", "after-1"])
  })
})
