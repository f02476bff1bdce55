export * as Otlp from "./otlp"

// Exports spans over OTLP/HTTP, configured by the standard OpenTelemetry variables (see ../cli/telemetry). Loaded
// only when an endpoint is set: without one, core installs no tracer and makes no spans.
//
// The tracer is Effect's tracer interface (what Effect.withSpan, the HTTP server's request spans and the settle
// span use) over light spans (./otlp-span), each written as a compact record into the batch being filled when it ends
// (./otlp-record); a settle's steps come without span objects (Spans.Own) and are written into it the same way.
// Batches are handed on after the call that filled them has returned: a full batch on the next turn of the event
// loop, the rest every export interval, and what is left when the layer's scope closes, within a bound, so an
// endpoint that is down never holds a call and delays an exit by at most that bound. The records are made into
// request bodies (./otlp-wire) and sent by ./otlp-sender: on a thread of its own, started with the first batch handed
// on while core runs; at exit with none started (a short command), on this thread. A failed request drops its batch
// and pauses sending for a while; spans queued beyond the queue's bound are dropped, so a slow endpoint costs memory
// within that bound and nothing else, and what was dropped is told on stderr.

import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Tracer from "effect/Tracer"
import packageJson from "../../package.json" with { type: "json" }
import { Spans } from "../settlement/spans"
import { OtlpRead } from "./otlp-read"
import { OtlpRecord } from "./otlp-record"
import { OtlpSender } from "./otlp-sender"
import { OtlpSpan } from "./otlp-span"
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

class Exporter implements OtlpSpan.Sink {
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
      // A request may take as long as the exit waits for the last spans, when that is longer than the default.
      timeoutMs: settings.flushMs,
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

/**
 * A tracer exporting to `settings.url`, and its exporter's figures; `close` flushes it within `settings.flushMs`.
 * Spans it could not export are told to `warn` (a line for stderr) at most once an export interval, and at close.
 */
export const make = (settings: Settings, warn?: (line: string) => void): Made => {
  const exporter = new Exporter(settings, warn)
  const tracer: Tracer.Tracer & { readonly [Spans.OWN]: Spans.Own } = {
    span: (options) => OtlpSpan.Span.of(options, exporter),
    [Spans.OWN]: OtlpSpan.own(exporter, new OtlpSpan.Timebase()),
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
