export * as Otlp from "./otlp"

// Exports spans over OTLP/HTTP, configured by the standard OpenTelemetry variables (see ../cli/telemetry). Loaded
// only when an endpoint is set: without one, core installs no tracer and makes no spans.
//
// The tracer is Effect's tracer interface (what Effect.withSpan, the HTTP server's request spans and the settle
// span use) over light spans, each written as a compact record into the batch being filled when it ends
// (./otlp-record); a settle's steps come without span objects (Spans.Own) and are written into it the same way.
// Batches are handed on after the call that filled them has returned: a full batch on the next turn of the event
// loop, the rest every export interval, and what is left when the layer's scope closes, within a bound, so an
// endpoint that is down never holds a call and delays an exit by at most that bound. The records are made into
// request bodies (./otlp-wire) and sent by ./otlp-sender: on a thread of its own, started with the first batch handed
// on while core runs; at exit with none started (a short command), on this thread. A
// failed request drops its batch and pauses sending for a while; spans queued beyond the queue's bound are dropped,
// so a slow endpoint costs memory within that bound and nothing else.

import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import packageJson from "../../package.json" with { type: "json" }
import { Spans } from "../settlement/spans"
import { OtlpOutcome } from "./otlp-outcome"
import { OtlpRead } from "./otlp-read"
import { OtlpRecord } from "./otlp-record"
import { OtlpSender } from "./otlp-sender"
import { OtlpWire } from "./otlp-wire"

/** How long spans wait to be sent together (OTEL_BSP_SCHEDULE_DELAY overrides). */
export const EXPORT_INTERVAL_MS = 5_000
/** How long core waits at exit for its last spans to be sent (OTEL_EXPORTER_OTLP_TIMEOUT overrides). */
export const EXIT_FLUSH_MS = 1_000
/** Spans in one request at most (OTEL_BSP_MAX_EXPORT_BATCH_SIZE overrides). */
export const MAX_BATCH_SPANS = 512
/**
 * Spans waiting to be sent at most; more are dropped while the endpoint is behind (OTEL_BSP_MAX_QUEUE_SIZE overrides).
 * OpenTelemetry's SDKs wait with 2,048; a call makes 7 spans, so that is under 300 calls, 6 ms of a sidecar settling
 * 50,000 a second, and a third of its spans were dropped whenever the sending thread or the collector paused for
 * longer. This holds about 2,300 calls (50 ms), in a few MiB.
 */
export const MAX_QUEUED_SPANS = 16_384
/** How long past the flush bound the sending thread may take to say it has closed, before it is stopped. */
const THREAD_SLACK_MS = 50
/** The shared ring of bodies waiting for the sending thread: room per span queued, within these bounds. */
const RING_BYTES_PER_SPAN = 256
const MIN_RING_BYTES = 256 * 1_024
const MAX_RING_BYTES = 16 * 1_024 * 1_024
const NO_COUNTS: OtlpSender.Counts = { done: 0, left: 0, sent: 0, dropped: 0, requests: 0, failures: 0, pausedUntil: 0 }

export interface Settings {
  /** Where spans are POSTed: `<endpoint>/v1/traces`, or the traces endpoint as given. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly protocol: "http/protobuf" | "http/json"
  readonly compression: "gzip" | "none"
  readonly serviceName: string
  /** OTEL_RESOURCE_ATTRIBUTES (service.name and service.version are set apart). */
  readonly resource?: Readonly<Record<string, string>>
  readonly exportIntervalMs: number
  readonly flushMs: number
  readonly maxBatchSpans?: number
  readonly maxQueuedSpans?: number
}

// --- spans ----------------------------------------------------------------------------------------------------------

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
class Timebase {
  private readonly clock = Context.get(Context.empty(), Clock.Clock)
  private anchoredAt = Number.NEGATIVE_INFINITY
  private anchorHigh = 0
  private anchorLow = 0
  /** The last time placed. */
  high = 0
  low = 0

  /** Places `ms` (a `performance.now()` reading): its time in `high` and `low`. */
  place(ms: number): void {
    if (ms - this.anchoredAt > ANCHOR_MS || ms < this.anchoredAt) {
      const epoch = this.clock.currentTimeNanosUnsafe()
      const at = performance.now()
      const anchor = epoch - BigInt(Math.round(at * NANOS_PER_MS))
      this.anchorHigh = highOf(anchor)
      this.anchorLow = lowOf(anchor)
      this.anchoredAt = at
    }
    this.add(this.anchorHigh, this.anchorLow, ms)
  }

  /** `high` and `low` of `ms` milliseconds after the time given as `high` and `low` (both below 2^64). */
  add(high: number, low: number, ms: number): void {
    OtlpRecord.after(high, low, ms, this)
  }
}

/** How often the time base is anchored again on Effect's clock. */
const ANCHOR_MS = 1_000

/** A span that keeps what it is told; ended, it waits in the exporter's queue as it is. */
class Span implements Tracer.Span, OtlpWire.Ended {
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
  private readonly exporter: Exporter
  private traceHex: string | undefined = undefined
  private spanHex: string | undefined = undefined
  private noted: Array<[name: string, time: bigint, attributes: Record<string, unknown> | undefined]> | undefined = undefined

  constructor(options: Omit<Options, "startTime" | "root">, exporter: Exporter) {
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
  static of(options: Options, exporter: Exporter): Span {
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
  private status_: string | undefined = undefined
  private errorKind: string | undefined = undefined
  private replayed = false
  private outputBytes = 0

  constructor(
    readonly exporter: Exporter,
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
    if (this.status_ === undefined) return pairs
    pairs.push(Spans.STATUS, this.status_)
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
        this.status_ = settlement.status
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
        this.status_,
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

// --- the exporter ---------------------------------------------------------------------------------------------------

/** What the exporter did, for tests and benchmarks. */
export interface Stats {
  /** Spans in requests the endpoint accepted. */
  sent: number
  /** Spans dropped: the queue was full, or their request failed. */
  dropped: number
  requests: number
  failures: number
}

class Exporter {
  readonly stats: Stats = { sent: 0, dropped: 0, requests: 0, failures: 0 }
  /** Spans dropped as the queue was full, of `stats.dropped` (the rest were in requests that failed, or left at exit). */
  private overflowed = 0
  /** What `stats.dropped` and `overflowed` were when last told to the operator. */
  private toldDropped = 0
  private toldOverflowed = 0
  /** Spans recorded as they ended, not yet handed on. */
  readonly records = new OtlpRecord.Records()
  /** How request bodies are made of the records (on the sending thread, or here when none runs). */
  private readonly encoding: OtlpSender.Encoding
  /** Spans ended and not yet sent or dropped: being filled in, ready, or with the sender. */
  private waiting = 0
  private readonly timer: ReturnType<typeof setInterval>
  private readonly options: OtlpSender.Options
  private readonly maxBatch: number
  private readonly maxQueued: number
  /** The sending thread, started with the first body sent while calls run; undefined before, or when it failed. */
  private thread: OtlpSender.Thread | undefined = undefined
  private threadFailed = false
  /** The thread's counts when last read. */
  private counted: OtlpSender.Counts = NO_COUNTS
  /** Spans handed to the thread and not yet reported back. */
  private withThread = 0
  /** Spans handed to the thread still in its queue (no request of theirs started). */
  private queuedWithThread = 0
  /** The ring's size: room for a full queue of spans of RING_BYTES_PER_SPAN each. */
  private readonly ringBytes: number
  /** Where bodies go when no thread runs (none could start, or at exit before one was needed). */
  private local: OtlpSender.Sender | undefined = undefined
  private localBatch: OtlpWire.Batch | undefined = undefined
  private scheduled = false
  private pausedUntil = 0
  private closed = false

  constructor(
    settings: Settings,
    private readonly warn: ((line: string) => void) | undefined,
  ) {
    const { "service.name": _name, "service.version": _version, ...resource } = settings.resource ?? {}
    this.encoding = {
      protocol: settings.protocol,
      source: {
        resource: {
        "telemetry.sdk.name": "core",
        "telemetry.sdk.language": "nodejs",
        "telemetry.sdk.version": packageJson.version,
        ...resource,
        "service.name": settings.serviceName,
          "service.version": packageJson.version,
        },
        scope: { name: "core", version: packageJson.version },
      },
    }
    const userAgent = Object.entries(settings.headers).find(([name]) => name.toLowerCase() === "user-agent")?.[1]
    this.options = {
      url: settings.url,
      headers: {
        ...Object.fromEntries(Object.entries(settings.headers).filter(([name]) => name.toLowerCase() !== "user-agent")),
        "user-agent": userAgent === undefined ? `core/${packageJson.version}` : `${userAgent} core/${packageJson.version}`,
        "content-type": settings.protocol === "http/json" ? "application/json" : "application/x-protobuf",
      },
      gzip: settings.compression === "gzip",
    }
    this.maxBatch = Math.max(1, settings.maxBatchSpans ?? MAX_BATCH_SPANS)
    this.maxQueued = Math.max(this.maxBatch, settings.maxQueuedSpans ?? MAX_QUEUED_SPANS)
    this.ringBytes = Math.min(MAX_RING_BYTES, Math.max(MIN_RING_BYTES, this.maxQueued * RING_BYTES_PER_SPAN))
    this.timer = setInterval(() => this.send(), Math.max(1, settings.exportIntervalMs))
    this.timer.unref?.()
  }

  /**
   * An ended span, recorded at once so that nothing of it is kept (spans kept until their batch is sent outlive
   * the young generation and cost the collector more than their records).
   */
  push(span: OtlpWire.Ended): void {
    if (this.full()) return
    this.records.span(span)
    this.added()
  }

  /** Whether the queue is full: the span about to be recorded is dropped (the caller records it otherwise). */
  full(): boolean {
    if (this.waiting < this.maxQueued) return false
    this.sync()
    if (this.waiting < this.maxQueued) return false
    this.stats.dropped++
    this.overflowed++
    return true
  }

  /** A span or step was recorded. */
  added(): void {
    this.waiting++
    if (this.records.count() >= this.maxBatch) {
      this.seal()
      if (!this.scheduled && !this.closed) {
        // Handed on after the call that ended this span has gone on its way, not inside it.
        this.scheduled = true
        setImmediate(() => {
          this.scheduled = false
          this.sync()
          if (Date.now() >= this.pausedUntil) this.hand()
        })
      }
    }
  }

  /** The records written, as a chunk ready to hand on. */
  private seal(): void {
    this.records.seal()
  }

  /** Spans that left the queue (their request started, or they were dropped unsent), told by the sender on this thread. */
  private readonly left = (spans: number): void => {
    this.waiting -= spans
  }

  /** What became of a body's spans, told by the sender on this thread. */
  private readonly result = (result: OtlpSender.Result): void => {
    if (result.accepted || result.failed) this.stats.requests++
    if (result.accepted) this.stats.sent += result.spans
    else this.stats.dropped += result.spans
    if (result.failed) this.stats.failures++
    this.pausedUntil = result.pausedUntil
  }

  /** The thread's counts as of now, added to the stats since they were last read (counters wrap at 2^31). */
  sync(): void {
    if (this.thread === undefined) return
    const counts = this.thread.counts()
    const last = this.counted
    const left = (counts.left - last.left) | 0
    this.waiting -= left
    this.queuedWithThread -= left
    this.withThread -= (counts.done - last.done) | 0
    this.stats.sent += (counts.sent - last.sent) | 0
    this.stats.dropped += (counts.dropped - last.dropped) | 0
    this.stats.requests += (counts.requests - last.requests) | 0
    this.stats.failures += (counts.failures - last.failures) | 0
    this.pausedUntil = counts.pausedUntil
    this.counted = counts
  }

  /** The thread stopped on its own, or was stopped: what it still held is dropped. */
  private readonly threadEnded = (): void => {
    this.sync()
    this.thread = undefined
    this.waiting -= this.queuedWithThread
    this.stats.dropped += this.withThread
    this.withThread = 0
    this.queuedWithThread = 0
  }

  /** The sending thread, started if need be; undefined when none can start, or at exit before one was needed. */
  private sendingThread(): OtlpSender.Thread | undefined {
    if (this.thread !== undefined || this.threadFailed || this.closed) return this.thread
    try {
      this.thread = OtlpSender.thread(this.options, this.encoding, this.ringBytes, () => {
        this.threadFailed = true
        this.threadEnded()
      })
      this.counted = NO_COUNTS
    } catch {
      // No thread: sent from here.
      this.threadFailed = true
    }
    return this.thread
  }

  threaded(): boolean {
    return this.thread !== undefined
  }

  /** Hands the chunks ready to the sender: the thread's, or (none running) this thread's, made into bodies here. */
  private hand(): void {
    if (this.records.chunks() === 0) return
    const thread = this.sendingThread()
    this.records.hand((chunk, spans) => {
      if (thread !== undefined) {
        if (thread.post(chunk, spans)) {
          this.withThread += spans
          this.queuedWithThread += spans
        }
        else {
          // No room left in the ring: the thread is that far behind.
          this.waiting -= spans
          this.stats.dropped += spans
          this.overflowed += spans
        }
      } else {
        const batch = (this.localBatch ??= OtlpWire.batch(this.encoding.protocol, this.encoding.source))
        OtlpRead.addTo(chunk, batch)
        ;(this.local ??= OtlpSender.make(this.options, this.result, this.left)).post(batch.take(), spans)
      }
    })
  }

  /** Hands on the batch being filled, full or not, with the bodies ready, unless sending is paused. */
  private send(): void {
    this.sync()
    this.tell()
    if (Date.now() < this.pausedUntil) return
    this.seal()
    this.hand()
  }

  /**
   * Sends everything waiting and waits for it, for at most `boundMs`; then gives up on the rest. With a thread, the
   * thread is given the same deadline and `slackMs` more to say it has closed, then stopped.
   */
  async close(boundMs: number): Promise<void> {
    if (this.closed) return
    this.closed = true
    clearInterval(this.timer)
    const deadline = Date.now() + boundMs
    this.seal()
    this.hand()
    const thread = this.thread
    if (thread !== undefined) {
      await thread.close(deadline, THREAD_SLACK_MS)
      // Whatever the thread did not report in time is dropped.
      this.threadEnded()
    }
    await this.local?.close(deadline)
    this.tell()
  }

  /** Tells the operator of spans dropped since it was last told (at most once an export interval, and at exit). */
  private tell(): void {
    const dropped = this.stats.dropped - this.toldDropped
    if (dropped === 0 || this.warn === undefined) return
    const overflowed = this.overflowed - this.toldOverflowed
    const failed = dropped - overflowed
    this.toldDropped = this.stats.dropped
    this.toldOverflowed = this.overflowed
    const why = [
      ...(overflowed > 0 ? [`${overflowed} as ${this.maxQueued} were waiting already (OTEL_BSP_MAX_QUEUE_SIZE)`] : []),
      ...(failed > 0 ? [`${failed} in requests that failed, or were not answered or sent by exit`] : []),
    ]
    this.warn(`core: warning: ${dropped} spans were not exported: ${why.join("; ")}`)
  }
}

export interface Made {
  readonly tracer: Tracer.Tracer
  /** What the exporter did so far (the sending thread's part as of now). */
  readonly stats: Readonly<Stats>
  /** Whether bodies go to the sending thread (started once a body is sent while calls run). */
  readonly threaded: boolean
  readonly close: () => Promise<void>
}

/** Settle spans of the exporter's own (Spans.Own), started and ended on `time`. */
const own = (exporter: Exporter, time: Timebase): Spans.Own => ({
  begin: (call, inputBytes, above, originMs) => new Traced(new Settle(exporter, call, inputBytes, above, time, originMs), originMs, time),
})

/**
 * A tracer exporting to `settings.url`, and its exporter's figures; `close` flushes it within `settings.flushMs`.
 * Spans it could not export are told to `warn` (a line for stderr) at most once an export interval, and at close.
 */
export const make = (settings: Settings, warn?: (line: string) => void): Made => {
  const exporter = new Exporter(settings, warn)
  const tracer: Tracer.Tracer & { readonly [Spans.OWN]: Spans.Own } = {
    span: (options) => Span.of(options, exporter),
    [Spans.OWN]: own(exporter, new Timebase()),
  }
  return {
    tracer,
    get stats(): Readonly<Stats> {
      exporter.sync()
      return exporter.stats
    },
    get threaded() {
      return exporter.threaded()
    },
    close: () => exporter.close(settings.flushMs),
  }
}

/** `make` for the life of the scope, flushed (within the bound) when it closes. */
export const scoped = (settings: Settings, warn?: (line: string) => void) =>
  Effect.acquireRelease(
    Effect.sync(() => make(settings, warn)),
    (made) => Effect.promise(made.close),
  )

/** A tracer exporting to `settings.url` for the life of the layer, flushed (within the bound) when it ends. */
export const layer = (settings: Settings, warn?: (line: string) => void): Layer.Layer<never> =>
  Layer.effect(
    Tracer.Tracer,
    Effect.map(scoped(settings, warn), (made) => made.tracer),
  )
