export * as OtlpSpan from "./otlp-span"

// Core's light spans behind Effect's tracer interface (what Effect.withSpan, the HTTP server's request spans and a
// tool's own spans are made as): a span keeps its attributes as a short list, its ids as random words and its times as
// 32-bit words, and is written into its exporter's records (./otlp-record) as it ends, so nothing of it outlives the
// call. A settle's span (Spans.Own) keeps its call instead of attributes and its steps are written with no span object
// each. Times are placed on a clock of core's own, read from `performance.now()` and anchored on Effect's. Nothing
// here sends anything (./otlp).

import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Tracer from "effect/Tracer"
import { Spans } from "../settlement/spans"
import { OtlpOutcome } from "./otlp-outcome"
import { OtlpRecord } from "./otlp-record"
import { OtlpWire } from "./otlp-wire"

/** Where spans go as they end: the exporter's records, and its queue's count. */
export interface Sink {
  readonly records: OtlpRecord.Records
  /** Whether the queue is full: the span about to be recorded is dropped (counted), and the caller records nothing. */
  readonly full: () => boolean
  /** A span was recorded. */
  readonly added: () => void
  /** A span ended: recorded, unless the queue is full. */
  readonly push: (span: OtlpWire.Ended) => void
}

const NO_EVENTS: OtlpWire.Ended["events"] = []

type Options = Parameters<Tracer.Tracer["span"]>[0]

const NANOS_PER_MS = 1e6

/** The high 32 bits of a time in nanoseconds (below 2^64). */
const highOf = (nanos: bigint): number => Number(nanos >> 32n)
/** The low 32 bits. */
const lowOf = (nanos: bigint): number => Number(BigInt.asUintN(32, nanos))

/**
 * Epoch nanoseconds at `performance.now()` readings, as high and low 32-bit words, without a 64-bit integer per
 * reading: anchored on Effect's clock (what its own spans read) and anchored again each second, as that clock
 * anchors itself again when the system clock moves. Read just after Effect's clock, so a time placed here is never
 * later than Effect's for the same instant (a span a tool starts inside a settle starts inside it).
 */
export class Timebase {
  private readonly clock = Context.get(Context.empty(), Clock.Clock)
  private anchoredAt = Number.NEGATIVE_INFINITY
  private anchorHigh = 0
  private anchorLow = 0
  /** The last time placed. */
  high = 0
  low = 0

  /** Places `ms` (a `performance.now()` reading): its time in `high` and `low`. */
  place(ms: number): void {
    if (ms - this.anchoredAt > ANCHOR_MS || ms < this.anchoredAt) this.anchor()
    this.add(this.anchorHigh, this.anchorLow, ms)
  }

  /**
   * Anchors on Effect's clock from the reading taken closest to a `performance.now()` reading just after it: a
   * thread preempted between the two (a loaded machine) placed every time of the next second that much early, and
   * a tool's span inside a settle ended after its settle span.
   */
  private anchor(): void {
    let gap = Number.POSITIVE_INFINITY
    for (let tries = 0; tries < ANCHOR_TRIES && gap > CLOSE_MS; tries++) {
      const before = performance.now()
      const epoch = this.clock.currentTimeNanosUnsafe()
      const at = performance.now()
      if (at - before >= gap) continue
      gap = at - before
      const anchor = epoch - BigInt(Math.round(at * NANOS_PER_MS))
      this.anchorHigh = highOf(anchor)
      this.anchorLow = lowOf(anchor)
      this.anchoredAt = at
    }
  }

  /** `high` and `low` of `ms` milliseconds after the time given as `high` and `low` (both below 2^64). */
  add(high: number, low: number, ms: number): void {
    OtlpRecord.after(high, low, ms, this)
  }
}

/** How often the time base is anchored again on Effect's clock. */
const ANCHOR_MS = 1_000
/** An anchoring whose two readings are this close (ms) is taken; else the closest of ANCHOR_TRIES. */
const CLOSE_MS = 0.02
const ANCHOR_TRIES = 5

/** A span that keeps what it is told; ended, it waits in the exporter's queue as it is. */
export class Span implements Tracer.Span, OtlpWire.Ended {
  readonly _tag = "Span"
  readonly name: string
  readonly parent: Option.Option<Tracer.AnySpan>
  readonly annotations: Context.Context<never>
  readonly links: Array<Tracer.SpanLink>
  readonly kind: Tracer.SpanKind
  readonly sampled: boolean
  /** Its times in nanoseconds since the epoch, as high and low 32-bit words (no 64-bit integer kept). */
  startHigh = 0
  startLow = 0
  endHigh = 0
  endLow = 0
  private exit: Exit.Exit<unknown, unknown> | undefined = undefined
  /** The trace's id as four words, shared with the parent when the parent is one of these; else in `traceHex`. */
  readonly traceWords: OtlpWire.Ended["traceWords"]
  readonly spanWords: readonly [number, number]
  readonly pairs: Array<unknown> = []
  private readonly exporter: Sink
  private traceHex: string | undefined = undefined
  private spanHex: string | undefined = undefined
  private noted: Array<[name: string, time: bigint, attributes: Record<string, unknown> | undefined]> | undefined = undefined

  constructor(options: Omit<Options, "startTime" | "root">, exporter: Sink) {
    this.name = options.name
    this.parent = options.parent
    this.annotations = options.annotations
    this.links = options.links
    this.kind = options.kind
    this.sampled = options.sampled
    this.exporter = exporter
    this.spanWords = [OtlpRecord.randomWord(), OtlpRecord.randomWord()]
    const above = Option.isSome(options.parent) ? options.parent.value : undefined
    if (above === undefined) this.traceWords = [OtlpRecord.randomWord(), OtlpRecord.randomWord(), OtlpRecord.randomWord(), OtlpRecord.randomWord()]
    else if ((above instanceof Span || above instanceof Settle) && above.traceWords !== undefined) this.traceWords = above.traceWords
    else {
      this.traceWords = undefined
      this.traceHex = above.traceId
    }
  }

  /** A span through the tracer interface, its start given. */
  static of(options: Options, exporter: Sink): Span {
    const span = new Span(options, exporter)
    span.startHigh = highOf(options.startTime)
    span.startLow = lowOf(options.startTime)
    return span
  }

  get traceId(): string {
    return (this.traceHex ??= OtlpWire.hexOf(this.traceWords!))
  }

  get spanId(): string {
    return (this.spanHex ??= OtlpWire.hexOf(this.spanWords))
  }

  get parentSpanId(): string | undefined {
    return Option.isSome(this.parent) ? this.parent.value.spanId : undefined
  }

  get parentWords(): readonly [number, number] | undefined {
    return Option.isSome(this.parent) ? wordsOf(this.parent.value) : undefined
  }

  get attributes(): ReadonlyMap<string, unknown> {
    const found = new Map<string, unknown>()
    for (let index = 0; index < this.pairs.length; index += 2) found.set(this.pairs[index] as string, this.pairs[index + 1])
    return found
  }

  get events(): OtlpWire.Ended["events"] {
    return this.noted ?? NO_EVENTS
  }

  get status(): Tracer.SpanStatus {
    return this.exit === undefined
      ? { _tag: "Started", startTime: this.startTime }
      : { _tag: "Ended", startTime: this.startTime, endTime: this.endTime, exit: this.exit }
  }

  get startTime(): bigint {
    return (BigInt(this.startHigh) << 32n) + BigInt(this.startLow)
  }

  get endTime(): bigint {
    return this.exit === undefined ? this.startTime : (BigInt(this.endHigh) << 32n) + BigInt(this.endLow)
  }

  get outcome(): OtlpWire.Outcome | undefined {
    return this.exit !== undefined && Exit.isFailure(this.exit) ? OtlpOutcome.of(this.exit.cause) : undefined
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.exit !== undefined) return
    this.ended(highOf(endTime), lowOf(endTime), exit)
  }

  /** Ends it at the time given as high and low words. */
  ended(endHigh: number, endLow: number, exit: Exit.Exit<unknown, unknown>): void {
    if (this.exit !== undefined) return
    this.endHigh = endHigh
    this.endLow = endLow
    // A success's value is not kept: only how the span ended is exported.
    this.exit = Exit.isSuccess(exit) ? Exit.void : exit
    if (this.sampled) this.exporter.push(this)
  }

  attribute(key: string, value: unknown): void {
    if (this.exit !== undefined) return
    // Kept as key, value, key, value: a handful per span, cheaper than a Map; a key said again is replaced.
    for (let index = 0; index < this.pairs.length; index += 2) {
      if (this.pairs[index] === key) {
        this.pairs[index + 1] = value
        return
      }
    }
    this.pairs.push(key, value)
  }

  event(name: string, startTime: bigint, attributes?: Record<string, unknown>): void {
    if (this.exit !== undefined) return
    ;(this.noted ??= []).push([name, startTime, attributes])
  }

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    if (this.exit !== undefined) return
    for (const link of links) this.links.push(link)
  }
}

/** A span's id as words, when it is one of core's. */
const wordsOf = (span: Tracer.AnySpan): readonly [number, number] | undefined =>
  span instanceof Span || span instanceof Settle ? span.spanWords : undefined

const NO_LINKS: ReadonlyArray<Tracer.SpanLink> = []
const NO_ANNOTATIONS = Context.empty()
const NO_PARENT = Option.none<Tracer.AnySpan>()

/**
 * A settle span of core's own (Spans.Own), the fiber's parent span while its call settles: it keeps its call and what
 * the call settled as rather than attributes, and is written at its end as one record naming its call's header
 * (./otlp-record), read back as the span it stands for. An attribute said besides its own (a tool's annotation) makes
 * it keep them all, in order, as any span does.
 */
class Settle implements Tracer.Span, OtlpRecord.Settle {
  readonly _tag = "Span"
  readonly name = OtlpRecord.SETTLE
  readonly kind = "internal"
  readonly annotations = NO_ANNOTATIONS
  readonly sampled: boolean
  readonly traceWords: readonly [number, number, number, number] | undefined
  readonly spanWords: readonly [number, number]
  startHigh: number
  startLow: number
  endHigh = 0
  endLow = 0
  chunk = 0
  header = 0
  private exit: Exit.Exit<unknown, unknown> | undefined = undefined
  private traceHex: string | undefined = undefined
  private spanHex: string | undefined = undefined
  private above: Option.Option<Tracer.AnySpan> | undefined = undefined
  /** All its attributes as key, value, once one besides its own was said; else none kept. */
  private pairs: Array<unknown> | undefined = undefined
  private noted: Array<[name: string, time: bigint, attributes: Record<string, unknown> | undefined]> | undefined = undefined
  private linked: Array<Tracer.SpanLink> | undefined = undefined
  /** What its call settled as, said at its end (no status: it did not settle). */
  private settledAs: string | undefined = undefined
  private errorKind: string | undefined = undefined
  private replayed = false
  private outputBytes = 0

  constructor(
    readonly exporter: Sink,
    private readonly call: Spans.Called,
    private readonly inputBytes: number,
    private readonly parentSpan: Tracer.AnySpan | undefined,
    time: Timebase,
    originMs: number,
  ) {
    this.spanWords = [OtlpRecord.randomWord(), OtlpRecord.randomWord()]
    if (parentSpan === undefined) {
      this.traceWords = [OtlpRecord.randomWord(), OtlpRecord.randomWord(), OtlpRecord.randomWord(), OtlpRecord.randomWord()]
      this.sampled = true
    } else {
      this.sampled = parentSpan.sampled
      this.traceWords = parentSpan instanceof Span || parentSpan instanceof Settle ? parentSpan.traceWords : undefined
      if (this.traceWords === undefined) this.traceHex = parentSpan.traceId
    }
    time.place(originMs)
    this.startHigh = time.high
    this.startLow = time.low
  }

  get parent(): Option.Option<Tracer.AnySpan> {
    return (this.above ??= this.parentSpan === undefined ? NO_PARENT : Option.some(this.parentSpan))
  }

  get traceId(): string {
    return (this.traceHex ??= OtlpWire.hexOf(this.traceWords!))
  }

  get spanId(): string {
    return (this.spanHex ??= OtlpWire.hexOf(this.spanWords))
  }

  get parentSpanId(): string | undefined {
    return this.parentSpan?.spanId
  }

  get parentWords(): readonly [number, number] | undefined {
    return this.parentSpan === undefined ? undefined : wordsOf(this.parentSpan)
  }

  get links(): ReadonlyArray<Tracer.SpanLink> {
    return this.linked ?? NO_LINKS
  }

  get attributes(): ReadonlyMap<string, unknown> {
    const pairs = this.pairs ?? this.own()
    const found = new Map<string, unknown>()
    for (let index = 0; index < pairs.length; index += 2) found.set(pairs[index] as string, pairs[index + 1])
    return found
  }

  get status(): Tracer.SpanStatus {
    const startTime = (BigInt(this.startHigh) << 32n) + BigInt(this.startLow)
    return this.exit === undefined
      ? { _tag: "Started", startTime }
      : { _tag: "Ended", startTime, endTime: (BigInt(this.endHigh) << 32n) + BigInt(this.endLow), exit: this.exit }
  }

  /** Its own attributes, in the order Spans.begin and Spans.end say them on any other tracer's settle span. */
  private own(): Array<unknown> {
    const call = this.call
    const pairs: Array<unknown> = [
      Spans.TOOL, call.name,
      Spans.SESSION, call.sessionID,
      Spans.CALL, call.toolCallID,
      Spans.AGENT, call.agent,
      Spans.MESSAGE, call.assistantMessageID,
      Spans.INPUT_BYTES, this.inputBytes,
    ]
    if (this.settledAs === undefined) return pairs
    pairs.push(Spans.STATUS, this.settledAs)
    if (this.errorKind !== undefined) pairs.push(Spans.ERROR_KIND, this.errorKind)
    pairs.push(Spans.REPLAYED, this.replayed, Spans.OUTPUT_BYTES, this.outputBytes)
    return pairs
  }

  /** Ends it now (`elapsedMs` after its start, on `time`), with what its call settled as. */
  settled(exit: Spans.Settled, elapsedMs: number, time: Timebase): void {
    if (this.exit !== undefined) return
    if (Exit.isSuccess(exit)) {
      const { settlement, replayed } = exit.value
      const pairs = this.pairs
      // Said after any other, replacing one said with the same key, as on any span.
      if (pairs !== undefined) {
        this.attribute(Spans.STATUS, settlement.status)
        if (settlement.error !== undefined) this.attribute(Spans.ERROR_KIND, settlement.error.kind)
        this.attribute(Spans.REPLAYED, replayed)
        this.attribute(Spans.OUTPUT_BYTES, Spans.contentBytes(settlement.content))
      } else {
        this.settledAs = settlement.status
        this.errorKind = settlement.error?.kind
        this.replayed = replayed
        this.outputBytes = Spans.contentBytes(settlement.content)
      }
    }
    time.add(this.startHigh, this.startLow, elapsedMs)
    this.ended(time.high, time.low, exit)
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.exit !== undefined) return
    this.ended(highOf(endTime), lowOf(endTime), exit)
  }

  private ended(endHigh: number, endLow: number, exit: Exit.Exit<unknown, unknown>): void {
    this.endHigh = endHigh
    this.endLow = endLow
    this.exit = Exit.isSuccess(exit) ? Exit.void : exit
    const exporter = this.exporter
    if (!this.sampled || exporter.full()) return
    const records = exporter.records
    const outcome = Exit.isSuccess(exit) ? undefined : OtlpOutcome.of(exit.cause)
    const pairs = this.pairs
    if (pairs !== undefined) {
      records.settled(this, endHigh, endLow, pairs.length >>> 1)
      for (let index = 0; index < pairs.length; index += 2) records.pair(pairs[index] as string, pairs[index + 1])
      records.ended(this.noted ?? NO_EVENTS, this.linked ?? NO_LINKS, outcome)
    } else {
      records.callSettled(
        this,
        endHigh,
        endLow,
        this.call,
        this.inputBytes,
        this.settledAs,
        this.errorKind,
        this.replayed,
        this.outputBytes,
        this.noted ?? NO_EVENTS,
        this.linked ?? NO_LINKS,
        outcome,
      )
    }
    exporter.added()
  }

  attribute(key: string, value: unknown): void {
    if (this.exit !== undefined) return
    const pairs = (this.pairs ??= this.own())
    for (let index = 0; index < pairs.length; index += 2) {
      if (pairs[index] === key) {
        pairs[index + 1] = value
        return
      }
    }
    pairs.push(key, value)
  }

  event(name: string, startTime: bigint, attributes?: Record<string, unknown>): void {
    if (this.exit !== undefined) return
    ;(this.noted ??= []).push([name, startTime, attributes])
  }

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    if (this.exit !== undefined) return
    for (const link of links) (this.linked ??= []).push(link)
  }
}

/**
 * A call traced by core's exporter: its settle span, its steps written straight into the exporter's records with no
 * span object each, as milliseconds after the settle's start (the sending thread places them).
 */
class Traced implements Spans.Trace {
  constructor(
    readonly parent: Settle,
    readonly originMs: number,
    private readonly time: Timebase,
  ) {}

  step(
    name: string,
    started: number,
    ended: number,
    failure: Cause.Cause<unknown> | undefined,
    key1?: string,
    value1?: unknown,
    key2?: string,
    value2?: unknown,
    key3?: string,
    value3?: unknown,
  ): void {
    const settle = this.parent
    const exporter = settle.exporter
    // Spans not sampled are not exported: neither are their steps.
    if (!settle.sampled || exporter.full()) return
    const originMs = this.originMs
    const outcome = failure === undefined ? undefined : OtlpOutcome.of(failure)
    exporter.records.step(settle, name, started - originMs, ended - originMs, outcome, key1, value1, key2, value2, key3, value3)
    exporter.added()
  }

  settled(exit: Spans.Settled): void {
    this.parent.settled(exit, performance.now() - this.originMs, this.time)
  }
}

/** Settle spans of the exporter's own (Spans.Own), started and ended on `time`. */
export const own = (exporter: Sink, time: Timebase): Spans.Own => ({
  begin: (call, inputBytes, above, originMs) => new Traced(new Settle(exporter, call, inputBytes, above, time, originMs), originMs, time),
})
