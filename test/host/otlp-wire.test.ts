// OTLP encoding (src/host/otlp-wire.ts): the protobuf core writes is byte for byte what Effect's own OTLP encoder
// makes of the same data (its JSON form), whatever the attributes, ids, failures, events, links and sizes; the JSON
// body is that data; batches taken one after another start afresh.

import { describe, expect, test } from "bun:test"
import { Cause, Effect } from "effect"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import { OtlpOutcome } from "../../src/host/otlp-outcome"
import { OtlpWire } from "../../src/host/otlp-wire"
import { ended, external, UNDER, WORDS } from "../support/otlp"

const SOURCE: OtlpWire.Source = {
  resource: { "service.name": "core-test", "service.version": "1.2.3", "deployment.environment": "ünïcode" },
  scope: { name: "core", version: "1.2.3" },
}

const effectProtobuf = (data: unknown): Uint8Array =>
  Effect.runSync(
    Effect.gen(function* () {
      const serialization = yield* OtlpSerialization.OtlpSerialization
      const body = serialization.traces(data as never)
      if (body._tag !== "Uint8Array") throw new Error(`unexpected body ${body._tag}`)
      return body.body
    }).pipe(Effect.provide(OtlpSerialization.layerProtobuf)),
  )

const spans: Array<OtlpWire.Ended> = [
  ended({
    name: "Settler.settle",
    pairs: [
      "core.tool", "read",
      "core.session", "ses_ü",
      "core.input.bytes", 42,
      "zero", 0,
      "negative", -7,
      "large", 2 ** 60,
      "unsafe", Number.MAX_SAFE_INTEGER + 2,
      "huge", 1e300,
      "double", 1.5,
      "nan", Number.NaN,
      "infinite", Number.POSITIVE_INFINITY,
      "true", true,
      "false", false,
      "bigint", 123456789012345678901234567890n,
      "small bigint", -5n,
      "array", ["a", 1, true, [2.5]],
      "object", { nested: { deep: 1 } },
      "null", null,
      "undefined", undefined,
      "long", "x".repeat(300),
      "emoji", "🙂".repeat(50),
    ],
  }),
  ended({
    name: "Settler.decode",
    spanId: "00f067aa0ba902b7",
    parentSpanId: "b7ad6b7169203331",
    traceWords: [0x0af76519, 0x16cd43dd, 0x8448eb21, 0x1c80319c],
    spanWords: [0x00f067aa, 0x0ba902b7],
    parentWords: [0xb7ad6b71, 0x69203331],
    pairs: ["core.input.valid", true],
  }),
  ended({ name: "server", kind: "server", traceId: "abc", spanId: "0123456789abcdef" }),
  ended({
    name: "Settler.record",
    kind: "client",
    outcome: OtlpOutcome.of(Cause.fail(new Error("disk full"))),
    events: [["retry", 1_764_000_000_000_000_500n, { attempt: 2 }], ["plain", 1_764_000_000_000_000_600n, undefined]],
    links: [{ span: external("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"), attributes: { why: "follows" } }],
  }),
  ended({ name: "Settler.execute", kind: "producer", outcome: OtlpOutcome.of(Cause.interrupt(1)), pairs: ["core.execute.outcome", "interrupted"] }),
  ended({ name: "defect", kind: "consumer", outcome: OtlpOutcome.of(Cause.die("boom")) }),
  ended({ name: "n".repeat(200), pairs: Array.from({ length: 400 }, (_, index) => [`key.${index}`, `value ${index}`]).flat() }),
  // Ids as words (core's own spans): a root that succeeded, one under a parent with a long message, and those that
  // failed, have events, or a parent known only in hex, which are written the long way.
  ended({ name: "Settler.settle", ...WORDS, pairs: ["core.tool", "read", "core.call", "call_1", "core.input.bytes", 42, "core.replayed", false, "huge", 1e300] }),
  ended({ name: "echo.inner", kind: "client", ...WORDS, ...UNDER, pairs: Array.from({ length: 400 }, (_, index) => [`key.${index}`, index]).flat() }),
  ended({ name: "Settler.settle", ...WORDS, outcome: OtlpOutcome.of(Cause.fail(new Error("disk full"))) }),
  ended({ name: "Settler.settle", ...WORDS, events: [["plain", 1_764_000_000_000_000_600n, undefined]] }),
  ended({ name: "echo.inner", ...WORDS, parentSpanId: "b7ad6b7169203331" }),
]

describe("OtlpWire.protobuf", () => {
  test("is what Effect's OTLP encoder writes for the same data, span for span", () => {
    for (const span of spans) {
      expect({ name: span.name.slice(0, 20), bytes: Buffer.from(OtlpWire.protobuf([span], SOURCE)).toString("hex") }).toEqual({
        name: span.name.slice(0, 20),
        bytes: Buffer.from(effectProtobuf(OtlpWire.json([span], SOURCE))).toString("hex"),
      })
    }
  })

  test("a batch of many spans (lengths over 16 KB) is the same too", () => {
    const many = Array.from({ length: 300 }, (_, index) => spans[index % spans.length]!)
    const mine = OtlpWire.protobuf(many, SOURCE)
    expect(mine.length).toBeGreaterThan(16_384 * 8)
    expect(Buffer.from(mine).equals(Buffer.from(effectProtobuf(OtlpWire.json(many, SOURCE))))).toBe(true)
  })

  test("no spans is an empty batch under the resource and scope", () => {
    expect(Buffer.from(OtlpWire.protobuf([], SOURCE)).equals(Buffer.from(effectProtobuf(OtlpWire.json([], SOURCE))))).toBe(true)
  })
})

describe("OtlpWire.json", () => {
  test("says how each span ended: ok, an error with its exception event, or interrupted", () => {
    const data = JSON.parse(OtlpWire.jsonBody(spans, SOURCE)) as ReturnType<typeof OtlpWire.json>
    const [resource] = data.resourceSpans
    const found = resource!.scopeSpans[0]!.spans
    expect(resource!.resource.attributes).toContainEqual({ key: "service.name", value: { stringValue: "core-test" } })
    expect(found.map((span) => span.status.code)).toEqual([1, 1, 1, 2, 0, 2, 1, 1, 1, 2, 1, 1])
    const failed = found[3]!
    expect(failed.status.message).toBe("disk full")
    expect(failed.events.map((event) => event.name)).toEqual(["retry", "plain", "exception"])
    expect(failed.events[2]!.attributes.find((entry) => entry.key === "exception.message")?.value).toEqual({ stringValue: "disk full" })
    expect(failed.links).toEqual([
      { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", attributes: [{ key: "why", value: { stringValue: "follows" } }], droppedAttributesCount: 0 },
    ])
    expect(found[4]!.attributes).toContainEqual({ key: "effect.fiber.interrupted", value: { boolValue: true } })
    const settle = found[0]!
    expect(settle.parentSpanId).toBeUndefined()
    expect(found[1]!.parentSpanId).toBe("b7ad6b7169203331")
    expect(found[2]!.traceId).toBe("abc".padStart(32, "0"))
    expect(settle.startTimeUnixNano).toBe("1764000000000000000")
    const value = (key: string) => settle.attributes.find((entry) => entry.key === key)?.value
    expect(value("core.input.bytes")).toEqual({ intValue: 42 })
    expect(value("unsafe")).toEqual({ intValue: String(BigInt(Number.MAX_SAFE_INTEGER + 2)) })
    expect(value("nan")).toEqual({ doubleValue: "NaN" as never })
    expect(value("infinite")).toEqual({ doubleValue: "Infinity" as never })
    expect(value("bigint")).toEqual({ stringValue: "123456789012345678901234567890" })
    expect(value("array")).toEqual({ arrayValue: { values: [{ stringValue: "a" }, { intValue: 1 }, { boolValue: true }, { arrayValue: { values: [{ doubleValue: 2.5 }] } }] } })
  })

  test("a batch taken starts afresh: the next holds only what came after", () => {
    for (const protocol of ["http/json", "http/protobuf"] as const) {
      const batch = OtlpWire.batch(protocol, SOURCE)
      batch.add(spans[0]!)
      batch.add(spans[1]!)
      expect(batch.count()).toBe(2)
      const first = batch.take()
      expect(batch.count()).toBe(0)
      batch.add(spans[2]!)
      const second = batch.take()
      if (protocol === "http/json") {
        expect(first).toBe(OtlpWire.jsonBody(spans.slice(0, 2), SOURCE))
        expect(second).toBe(OtlpWire.jsonBody([spans[2]!], SOURCE))
      } else {
        expect(Buffer.from(first).equals(Buffer.from(OtlpWire.protobuf(spans.slice(0, 2), SOURCE)))).toBe(true)
        expect(Buffer.from(second).equals(Buffer.from(OtlpWire.protobuf([spans[2]!], SOURCE)))).toBe(true)
      }
    }
  })
})

/** A step under `parent`, as the settler records one without a span object. */
const step = (
  parent: OtlpWire.Step["parent"],
  name: string,
  start: bigint,
  end: bigint,
  outcome: OtlpWire.Step["outcome"],
  pairs: Array<unknown>,
): OtlpWire.Step => ({
  name,
  parent,
  spanWords: [0x00f067aa, 0x0ba902b7],
  startHigh: Number(start >> 32n),
  startLow: Number(BigInt.asUintN(32, start)),
  endHigh: Number(end >> 32n),
  endLow: Number(BigInt.asUintN(32, end)),
  outcome,
  pairs,
})

/** The span a step stands for. */
const spanOf = (one: OtlpWire.Step, start: bigint, end: bigint): OtlpWire.Ended =>
  ended({
    name: one.name,
    traceId: one.parent.traceId,
    traceWords: one.parent.traceWords,
    spanId: "00f067aa0ba902b7",
    spanWords: [0x00f067aa, 0x0ba902b7],
    parentSpanId: one.parent.spanId,
    parentWords: one.parent.spanWords,
    startTime: start,
    endTime: end,
    outcome: one.outcome,
    pairs: one.pairs,
  })

describe("a step recorded without a span object", () => {
  const withWords: OtlpWire.Step["parent"] = {
    traceId: "0af7651916cd43dd8448eb211c80319c",
    traceWords: [0x0af76519, 0x16cd43dd, 0x8448eb21, 0x1c80319c],
    spanId: "b7ad6b7169203331",
    spanWords: [0xb7ad6b71, 0x69203331],
  }
  // A parent in a trace begun elsewhere (a request's, given in hex): the step is in that trace.
  const inHex: OtlpWire.Step["parent"] = { traceId: "abc", traceWords: undefined, spanId: "b7ad6b7169203331", spanWords: [0xb7ad6b71, 0x69203331] }
  // Just below a 32-bit boundary of nanoseconds, and just past it.
  const start = 1_764_000_000_000_000_000n | 0xffff_fff0n
  const end = start + 0x20n
  const cases = [
    step(withWords, "Settler.bound", start, end, undefined, ["core.output.bytes", 7, "core.output.bounded", false, "core.output.managed_bytes", 0]),
    step(inHex, "Settler.decode", start, end, undefined, ["core.input.valid", true]),
    step(withWords, "Settler.record", start, end, OtlpOutcome.of(Cause.fail(new Error("disk full"))), ["core.record", "settlement"]),
    step(withWords, "Settler.record", start, end, OtlpOutcome.of(Cause.interrupt(1)), ["core.record", "intent"]),
    step(withWords, "Settler.bound", start, end, OtlpOutcome.of(Cause.die("boom")), []),
    // Written whole: a success with one attribute, a string or a boolean; a long one takes two bytes of length.
    step(withWords, "Settler.permission", start, end, undefined, ["core.permission.decision", "allow"]),
    step(withWords, "Settler.decode", start, end, undefined, ["core.input.valid", false]),
    step(withWords, "Settler.record", start, end, undefined, ["core.record", "intent"]),
    step(withWords, "s".repeat(300), start, end, undefined, ["k".repeat(200), "v".repeat(40)]),
    // A string too long to be kept, and a name too long to be written whole: field by field.
    step(withWords, "Settler.execute", start, end, undefined, ["core.execute.outcome", "x".repeat(100)]),
    step(withWords, "n".repeat(9_000), start, end, undefined, ["core.record", "intent"]),
    // Any other success: ids, name and times as written whole, then its attributes one by one (none, counts of
    // every size, a long value, a message over 127 bytes); a name too long to be written whole, field by field.
    step(withWords, "Settler.bound", start, end, undefined, []),
    step(withWords, "Settler.bound", start, end, undefined, ["core.output.bytes", 2 ** 40, "core.output.bounded", true, "core.output.managed_bytes", 300]),
    step(withWords, "Settler.execute", start, end, undefined, ["core.execute.outcome", 1.5]),
    step(withWords, "s".repeat(300), start, end, undefined, ["k".repeat(200), 1, "k2", "v".repeat(100), "ünï", "çödé"]),
    step(withWords, "n".repeat(9_000), start, end, undefined, ["core.output.bytes", 1, "core.output.bounded", false]),
  ]

  test("is written as the span it stands for, in protobuf and in JSON", () => {
    for (const protocol of ["http/protobuf", "http/json"] as const) {
      for (const one of cases) {
        const batch = OtlpWire.batch(protocol, SOURCE)
        batch.addStep(one)
        const written = batch.take()
        const expected = protocol === "http/json" ? OtlpWire.jsonBody([spanOf(one, start, end)], SOURCE) : OtlpWire.protobuf([spanOf(one, start, end)], SOURCE)
        const text = (body: Uint8Array | string) => (typeof body === "string" ? body : Buffer.from(body).toString("hex"))
        expect({ protocol, name: one.name, body: text(written) }).toEqual({ protocol, name: one.name, body: text(expected) })
      }
    }
  })

  test("steps and spans in one batch, taken after the buffer grew, then again afresh", () => {
    const batch = OtlpWire.batch("http/protobuf", SOURCE)
    const many: Array<OtlpWire.Ended> = []
    for (let index = 0; index < 2_000; index++) {
      const one = cases[index % cases.length]!
      batch.addStep(one)
      many.push(spanOf(one, start, end))
      batch.add(spans[index % spans.length]!)
      many.push(spans[index % spans.length]!)
    }
    const first = batch.take()
    expect(first.length).toBeGreaterThan(128 * 1024)
    expect(Buffer.from(first).equals(Buffer.from(effectProtobuf(OtlpWire.json(many, SOURCE))))).toBe(true)
    batch.addStep(cases[1]!)
    expect(Buffer.from(batch.take()).equals(Buffer.from(OtlpWire.protobuf([spanOf(cases[1]!, start, end)], SOURCE)))).toBe(true)
  })
})

describe("attributes of a key written before", () => {
  test("counts of every length, ids, non-ASCII and long strings are the same bytes as Effect's encoder writes", () => {
    const values: Array<unknown> = [0, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152, 268_435_456, 2 ** 31 - 1, 2 ** 31, -1, 1.5]
    values.push("call_1", "call_2", "", "ü", "ascii then ü", "x".repeat(100), "y".repeat(140), true, false)
    // The first span makes the key known; each later one writes one value of it.
    const many = [ended({ name: "first", pairs: ["core.attribute", "first"] })]
    for (const value of values) many.push(ended({ name: "later", pairs: ["core.attribute", value, "k".repeat(120), value] }))
    for (const span of many) {
      expect({ value: span.pairs[1], bytes: Buffer.from(OtlpWire.protobuf([span], SOURCE)).toString("hex") }).toEqual({
        value: span.pairs[1],
        bytes: Buffer.from(effectProtobuf(OtlpWire.json([span], SOURCE))).toString("hex"),
      })
    }
  })
})
