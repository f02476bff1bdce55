// Span records (src/host/otlp-record.ts, read back by src/host/otlp-read.ts): what the settling thread writes where a
// span or step ends, read back on the sending thread into the same OTLP body the span itself makes (protobuf byte for
// byte, JSON alike), whatever its attributes, ids, failure, events and links; a settle's steps and end, named by a
// header written once per chunk, read back as the spans they stand for, the strings core says often written as their
// place in a table and any other written out; chunks sealed and handed on in order, the records written after a seal
// kept for the next; a chunk that is not records, or names a settle it does not hold, is refused.

import { describe, expect, test } from "bun:test"
import { Cause } from "effect"
import { OtlpRead } from "../../src/host/otlp-read"
import { OtlpRecord } from "../../src/host/otlp-record"
import { OtlpOutcome } from "../../src/host/otlp-outcome"
import { OtlpWire } from "../../src/host/otlp-wire"
import { ended, external, UNDER, WORDS } from "../support/otlp"

const SOURCE: OtlpWire.Source = {
  resource: { "service.name": "core-test", "service.version": "1.2.3" },
  scope: { name: "core", version: "1.2.3" },
}

const SPANS: ReadonlyArray<OtlpWire.Ended> = [
  ended({
    name: "Settler.settle",
    ...WORDS,
    pairs: [
      "core.tool", "read",
      "core.session", "ses_ü",
      "core.input.bytes", 42,
      "negative", -7,
      "large", 2 ** 60,
      "unsafe", Number.MAX_SAFE_INTEGER + 2,
      "double", 1.5,
      "nan", Number.NaN,
      "infinite", Number.NEGATIVE_INFINITY,
      "true", true,
      "false", false,
      "bigint", 123456789012345678901234567890n,
      "small bigint", -5n,
      "array", ["a", 1, true, [2.5]],
      "object", { nested: { deep: 1 } },
      "null", null,
      "undefined", undefined,
      "emoji", "🙂".repeat(50),
      // Longer than the records' first buffer: it grows.
      "long", "ä".repeat(100_000),
    ],
  }),
  ended({ name: "echo.inner", kind: "client", ...WORDS, ...UNDER, pairs: ["echo.length", 5] }),
  // Ids in hex only (a span not core's own), a trace id shorter than 32 digits.
  ended({ name: "server", kind: "server", traceId: "abc", spanId: "0123456789abcdef", parentSpanId: "fedcba9876543210" }),
  ended({
    name: "Settler.record",
    kind: "producer",
    ...WORDS,
    outcome: OtlpOutcome.of(Cause.fail(new Error("disk full"))),
    events: [["retry", 1_764_000_000_000_000_500n, { attempt: 2, why: "ünïcode" }], ["plain", 1_764_000_000_000_000_600n, undefined]],
    links: [{ span: external("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"), attributes: { why: "follows" } }],
  }),
  ended({ name: "Settler.execute", kind: "consumer", ...WORDS, outcome: OtlpOutcome.of(Cause.interrupt(1)), pairs: ["core.execute.outcome", "interrupted"] }),
  ended({ name: "defect", ...WORDS, outcome: OtlpOutcome.of(Cause.die("boom")) }),
]

/** Each chunk `records` hands on, copied, with its count. */
const handed = (records: OtlpRecord.Records): Array<{ readonly chunk: Uint8Array; readonly spans: number }> => {
  const chunks: Array<{ readonly chunk: Uint8Array; readonly spans: number }> = []
  records.hand((chunk, spans) => chunks.push({ chunk: chunk.slice(), spans }))
  return chunks
}

/** The body `chunks` make, read back into a fresh batch. */
const bodyOf = (protocol: "http/protobuf" | "http/json", chunks: ReadonlyArray<{ readonly chunk: Uint8Array }>) => {
  const batch = OtlpWire.batch(protocol, SOURCE)
  for (const { chunk } of chunks) OtlpRead.addTo(chunk, batch)
  return batch.take()
}

const recorded = (spans: ReadonlyArray<OtlpWire.Ended>) => {
  const records = new OtlpRecord.Records()
  for (const span of spans) records.span(span)
  records.seal()
  return handed(records)
}

interface JsonBody {
  resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<Record<string, unknown>> }> }>
}

const jsonSpans = (body: string) => (JSON.parse(body) as JsonBody).resourceSpans[0]!.scopeSpans[0]!.spans

describe("a span recorded and read back", () => {
  test("makes the protobuf body the span itself makes, byte for byte", () => {
    const chunks = recorded(SPANS)
    expect(chunks.map((one) => one.spans)).toEqual([SPANS.length])
    expect(bodyOf("http/protobuf", chunks)).toEqual(OtlpWire.protobuf(SPANS, SOURCE))
  })

  test("makes the JSON body the span itself makes", () => {
    expect(bodyOf("http/json", recorded(SPANS))).toBe(OtlpWire.jsonBody(SPANS, SOURCE))
  })
})

/** A settle span as its records name it, with fixed ids: under `UNDER`'s parent, or a root, or under a span in hex. */
const settleOf = (parent: "words" | "root" | "hex" = "words"): OtlpRecord.Settle => ({
  traceId: WORDS.traceWords.map((word) => word.toString(16).padStart(8, "0")).join(""),
  traceWords: parent === "hex" ? undefined : WORDS.traceWords,
  spanWords: WORDS.spanWords,
  parentWords: parent === "words" ? UNDER.parentWords : undefined,
  parentSpanId: parent === "root" ? undefined : UNDER.parentSpanId,
  startHigh: 410_000_000,
  startLow: 4_294_000_000,
  chunk: 0,
  header: 0,
})

const CALL: OtlpRecord.Call = { name: "read", sessionID: "ses_ü", toolCallID: "call_1", agent: "build", assistantMessageID: "msg_1" }

/** A time `ms` after the settle's start, as Timebase places it: whole nanoseconds, carried into the high word. */
const at = (ms: number) => ((410_000_000n << 32n) + 4_294_000_000n + BigInt(Math.round(ms * 1e6)))

describe("a settle recorded and read back", () => {
  test("its steps are the spans they stand for, under it, with ids of their own, times placed from its start", () => {
    const records = new OtlpRecord.Records()
    const settle = settleOf()
    records.step(settle, "Settler.decode", 0, 0.0015, undefined, "core.input.valid", true, undefined, undefined, undefined, undefined)
    records.step(settle, "Settler.bound", 0.0015, 2.5, undefined, "core.output.bytes", 5, "core.output.bounded", false, "core.output.managed_bytes", 0)
    records.step(settle, "Settler.record", 2.5, 3, OtlpOutcome.of(Cause.fail(new Error("disk full"))), "core.record", "intent", undefined, undefined, undefined, undefined)
    records.step(settle, "Settler.execute", 3, 7.25, OtlpOutcome.of(Cause.interrupt(1)), "core.execute.outcome", "interrupted", undefined, undefined, undefined, undefined)
    // A name, a key and a value the table does not know: written out.
    records.step(settle, "Settler.custom", 7.25, 8, undefined, "custom.ü", "not known", undefined, undefined, undefined, undefined)
    expect(records.count()).toBe(5)
    records.seal()
    const spans = jsonSpans(bodyOf("http/json", handed(records)) as string)
    const ids = spans.map((span) => span.spanId as string)
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{16}$/)
    expect(new Set(ids).size).toBe(5)
    const under = { traceId: settleOf().traceId, parentSpanId: WORDS.spanId }
    // What the exporter wrote for the same steps when each was a span of its own.
    const expected = jsonSpans(
      OtlpWire.jsonBody(
        [
          ended({ name: "Settler.decode", ...under, spanId: ids[0]!, startTime: at(0), endTime: at(0.0015), pairs: ["core.input.valid", true] }),
          ended({
            name: "Settler.bound",
            ...under,
            spanId: ids[1]!,
            startTime: at(0.0015),
            endTime: at(2.5),
            pairs: ["core.output.bytes", 5, "core.output.bounded", false, "core.output.managed_bytes", 0],
          }),
          ended({
            name: "Settler.record",
            ...under,
            spanId: ids[2]!,
            startTime: at(2.5),
            endTime: at(3),
            pairs: ["core.record", "intent"],
            outcome: OtlpOutcome.of(Cause.fail(new Error("disk full"))),
          }),
          ended({
            name: "Settler.execute",
            ...under,
            spanId: ids[3]!,
            startTime: at(3),
            endTime: at(7.25),
            pairs: ["core.execute.outcome", "interrupted"],
            outcome: OtlpOutcome.of(Cause.interrupt(1)),
          }),
          ended({ name: "Settler.custom", ...under, spanId: ids[4]!, startTime: at(7.25), endTime: at(8), pairs: ["custom.ü", "not known"] }),
        ],
        SOURCE,
      ),
    )
    // The stack trace is where the error was made: the same error here and there, bar its frames.
    const unstacked = (list: Array<Record<string, unknown>>) => JSON.stringify(list).replace(/"Error: disk full\\n[^"]*"/g, '"Error: disk full"')
    expect(unstacked(spans)).toBe(unstacked(expected))
    expect(JSON.stringify(spans[2])).toContain('"status":{"code":2,"message":"disk full"}')
    expect(JSON.stringify(spans[3])).toContain('"effect.fiber.interrupted"')
  })

  test("its end is the settle span with its call's attributes, the same body as the span written whole", () => {
    for (const parent of ["words", "root", "hex"] as const) {
      const settle = settleOf(parent)
      const records = new OtlpRecord.Records()
      const events: OtlpWire.Ended["events"] = [["log", 1_764_000_000_000_000_500n, { level: "info" }]]
      records.callSettled(settle, 410_000_001, 7, CALL, 42, "error", "denied", true, 1_234, events, [], undefined)
      records.callSettled(settleOf(parent), 410_000_001, 8, CALL, 7, undefined, undefined, false, 0, [], [], OtlpOutcome.of(Cause.die("boom")))
      // One said besides its own: all of them as pairs, in order.
      records.settled(settleOf(parent), 410_000_001, 9, 2)
      records.pair("core.tool", "read")
      records.pair("extra", 1.5)
      records.ended([], [], undefined)
      records.seal()
      const whole = (endLow: number, pairs: ReadonlyArray<unknown>, rest: Partial<OtlpWire.Ended> = {}) =>
        ended({
          name: "Settler.settle",
          traceId: settle.traceId,
          traceWords: settle.traceWords,
          spanId: WORDS.spanId,
          spanWords: WORDS.spanWords,
          parentSpanId: settle.parentSpanId,
          parentWords: settle.parentWords,
          startTime: (410_000_000n << 32n) + 4_294_000_000n,
          endTime: (410_000_001n << 32n) + BigInt(endLow),
          pairs,
          ...rest,
        })
      const called = ["core.tool", "read", "core.session", "ses_ü", "core.call", "call_1", "core.agent", "build", "core.message", "msg_1"]
      const expected = [
        whole(7, [...called, "core.input.bytes", 42, "core.status", "error", "core.error.kind", "denied", "core.replayed", true, "core.output.bytes", 1_234], { events }),
        whole(8, [...called, "core.input.bytes", 7], { outcome: OtlpOutcome.of(Cause.die("boom")) }),
        whole(9, ["core.tool", "read", "extra", 1.5]),
      ]
      const chunks = handed(records)
      // One header for the three (the same ids): written once in the chunk.
      expect(chunks.map((one) => one.spans)).toEqual([3])
      expect({ parent, body: bodyOf("http/protobuf", chunks) }).toEqual({ parent, body: OtlpWire.protobuf(expected, SOURCE) })
    }
  })

  test("its header is written again in each chunk that names it: a chunk stands alone", () => {
    const records = new OtlpRecord.Records()
    const settle = settleOf()
    records.step(settle, "Settler.decode", 0, 1, undefined, "core.input.valid", true, undefined, undefined, undefined, undefined)
    records.step(settle, "Settler.permission", 1, 2, undefined, "core.permission.decision", "allow", undefined, undefined, undefined, undefined)
    records.seal()
    const other = { ...settleOf("root"), spanWords: [1, 2] as const }
    records.step(other, "Settler.decode", 0, 1, undefined, "core.input.valid", false, undefined, undefined, undefined, undefined)
    records.callSettled(settle, 410_000_001, 0, CALL, 1, "success", undefined, false, 2, [], [], undefined)
    records.seal()
    const chunks = handed(records)
    expect(chunks.map((one) => one.spans)).toEqual([2, 2])
    // Each chunk read on its own, as the sending thread reads them.
    const [first, second] = chunks.map((one) => jsonSpans(bodyOf("http/json", [one]) as string))
    expect(first!.map((span) => [span.name, span.parentSpanId])).toEqual([
      ["Settler.decode", WORDS.spanId],
      ["Settler.permission", WORDS.spanId],
    ])
    expect(second!.map((span) => [span.name, span.spanId, span.parentSpanId])).toEqual([
      ["Settler.decode", expect.any(String), "0000000100000002"],
      ["Settler.settle", WORDS.spanId, UNDER.parentSpanId],
    ])
    // The settle's end, read alone from a chunk of its own, is the same span.
    const alone = new OtlpRecord.Records()
    alone.callSettled(settleOf(), 410_000_001, 0, CALL, 1, "success", undefined, false, 2, [], [], undefined)
    alone.seal()
    expect(jsonSpans(bodyOf("http/json", handed(alone)) as string)).toEqual([second![1]!])
  })

  test("the strings core says often are written as their place in a table: a step is a few dozen bytes", () => {
    const records = new OtlpRecord.Records()
    const settle = settleOf()
    records.step(settle, "Settler.decode", 0, 1, undefined, "core.input.valid", true, undefined, undefined, undefined, undefined)
    records.seal()
    const [withHeader] = handed(records)
    records.step(settle, "Settler.permission", 1, 2, undefined, "core.permission.decision", "allow", undefined, undefined, undefined, undefined)
    records.step(settle, "Settler.permission", 1, 2, undefined, "core.permission.decision", "allow", undefined, undefined, undefined, undefined)
    records.seal()
    const [twice] = handed(records)
    // Kind (1), header's place (4), name (1), two times (16), outcome (1), count (1), key (1), value (1 for a flag, 2
    // for a known string); the header once per chunk: kind (1), trace (17), span id (8), parent (9), start (8).
    const HEADER = 1 + 17 + 8 + 9 + 8
    expect(withHeader!.chunk.length).toBe(HEADER + 26)
    expect(twice!.chunk.length).toBe(HEADER + 2 * 27)
  })

  test("a record naming a settle its chunk does not hold is refused", () => {
    const records = new OtlpRecord.Records()
    const settle = settleOf()
    records.step(settle, "Settler.decode", 0, 1, undefined, "core.input.valid", true, undefined, undefined, undefined, undefined)
    records.step(settle, "Settler.permission", 1, 2, undefined, "core.permission.decision", "allow", undefined, undefined, undefined, undefined)
    records.seal()
    const [chunk] = handed(records)
    const batch = OtlpWire.batch("http/protobuf", SOURCE)
    // The chunk without its header (written first, 43 bytes).
    expect(() => OtlpRead.addTo(chunk!.chunk.subarray(43), batch)).toThrow()
    expect(OtlpRead.addTo(chunk!.chunk, OtlpWire.batch("http/protobuf", SOURCE))).toBe(2)
  })
})

describe("records", () => {
  const named = (name: string) => ended({ name, ...WORDS })
  const names = (chunks: ReadonlyArray<{ readonly chunk: Uint8Array }>) => jsonSpans(bodyOf("http/json", chunks) as string).map((span) => span.name)

  test("are handed on as the chunks sealed, in order; those written after the last seal wait for the next", () => {
    const records = new OtlpRecord.Records()
    for (const name of ["a", "b", "c"]) records.span(named(name))
    records.seal()
    for (const name of ["d", "e"]) records.span(named(name))
    records.seal()
    records.span(named("f"))
    expect(records.chunks()).toBe(2)
    const first = handed(records)
    expect(first.map((one) => one.spans)).toEqual([3, 2])
    expect(first.map((one) => names([one]))).toEqual([["a", "b", "c"], ["d", "e"]])
    expect(records.chunks()).toBe(0)
    expect(records.count()).toBe(1)
    // Nothing sealed: nothing handed on; a seal with nothing written makes no chunk.
    expect(handed(records)).toEqual([])
    records.span(named("g"))
    records.seal()
    records.seal()
    const second = handed(records)
    expect(second.map((one) => one.spans)).toEqual([2])
    expect(names(second)).toEqual(["f", "g"])
  })

  test("a chunk that is not records, or is cut short, is refused", () => {
    const batch = OtlpWire.batch("http/protobuf", SOURCE)
    expect(() => OtlpRead.addTo(new Uint8Array([9, 1, 2, 3]), batch)).toThrow()
    const [whole] = recorded([named("a")])
    expect(() => OtlpRead.addTo(whole!.chunk.subarray(0, whole!.chunk.length - 3), batch)).toThrow()
    expect(() => OtlpRead.addTo(whole!.chunk.subarray(0, 10), batch)).toThrow()
  })
})
