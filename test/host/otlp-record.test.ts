// Span records (src/host/otlp-record.ts): what the settling thread writes where a span or step ends, read back on the
// sending thread into the same OTLP body the span itself makes (protobuf byte for byte, JSON alike), whatever its
// attributes, ids, failure, events and links; chunks sealed and handed on in order, the records written after a seal
// kept for the next; a chunk that is not records is refused.

import { describe, expect, test } from "bun:test"
import { Cause } from "effect"
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
  for (const { chunk } of chunks) OtlpRecord.addTo(chunk, batch)
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

describe("a step recorded and read back", () => {
  const parent: OtlpRecord.Parent = { traceId: "0af7651916cd43dd8448eb211c80319c", traceWords: WORDS.traceWords, spanWords: UNDER.parentWords }
  const foreign: OtlpRecord.Parent = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", traceWords: undefined, spanWords: UNDER.parentWords }

  test("is the span it stands for, under its parent, with an id of its own; a failure as its status and event", () => {
    const records = new OtlpRecord.Records()
    records.step(parent, "Settler.decode", 410_000_000, 1, 410_000_000, 2, undefined, "core.input.valid", true, undefined, undefined, undefined, undefined)
    records.step(parent, "Settler.bound", 410_000_000, 3, 410_000_001, 0, undefined, "core.output.bounded", false, "core.output.kind", "text", "core.output.bytes", 5)
    records.step(foreign, "Settler.record", 410_000_000, 5, 410_000_000, 6, OtlpOutcome.of(Cause.fail(new Error("disk full"))), "core.record", "intent", undefined, undefined, undefined, undefined)
    records.step(parent, "Settler.execute", 410_000_000, 7, 410_000_000, 8, OtlpOutcome.of(Cause.interrupt(1)), "core.execute.outcome", "interrupted", undefined, undefined, undefined, undefined)
    expect(records.count()).toBe(4)
    records.seal()
    const chunks = handed(records)
    const spans = jsonSpans(bodyOf("http/json", chunks) as string)
    const ids = spans.map((span) => span.spanId as string)
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{16}$/)
    expect(new Set(ids).size).toBe(4)
    // What the exporter wrote for the same steps before records existed: each as a span of its own.
    const expected = jsonSpans(
      OtlpWire.jsonBody(
        [
          ended({ name: "Settler.decode", spanId: ids[0]!, parentSpanId: UNDER.parentSpanId, startTime: (410_000_000n << 32n) + 1n, endTime: (410_000_000n << 32n) + 2n, pairs: ["core.input.valid", true] }),
          ended({
            name: "Settler.bound",
            spanId: ids[1]!,
            parentSpanId: UNDER.parentSpanId,
            startTime: (410_000_000n << 32n) + 3n,
            endTime: 410_000_001n << 32n,
            pairs: ["core.output.bounded", false, "core.output.kind", "text", "core.output.bytes", 5],
          }),
          ended({
            name: "Settler.record",
            traceId: foreign.traceId,
            spanId: ids[2]!,
            parentSpanId: UNDER.parentSpanId,
            startTime: (410_000_000n << 32n) + 5n,
            endTime: (410_000_000n << 32n) + 6n,
            pairs: ["core.record", "intent"],
            outcome: OtlpOutcome.of(Cause.fail(new Error("disk full"))),
          }),
          ended({
            name: "Settler.execute",
            spanId: ids[3]!,
            parentSpanId: UNDER.parentSpanId,
            startTime: (410_000_000n << 32n) + 7n,
            endTime: (410_000_000n << 32n) + 8n,
            pairs: ["core.execute.outcome", "interrupted"],
            outcome: OtlpOutcome.of(Cause.interrupt(1)),
          }),
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
    expect(() => OtlpRecord.addTo(new Uint8Array([9, 1, 2, 3]), batch)).toThrow()
    const [whole] = recorded([named("a")])
    expect(() => OtlpRecord.addTo(whole!.chunk.subarray(0, whole!.chunk.length - 3), batch)).toThrow()
    expect(() => OtlpRecord.addTo(whole!.chunk.subarray(0, 10), batch)).toThrow()
  })
})
