export * as OtlpRecord from "./otlp-record"

// Ended spans and steps as compact records, written where they end (the thread that settles calls) and made into an
// OTLP request body elsewhere (./otlp-wire, on the sending thread): a record holds what a span says in numbers and
// strings as they are, with no protobuf, no lookups and no span id for a step (the reader draws it), so that ending a
// span costs its thread a few dozen byte writes. How a span that failed ended comes worked out (./otlp-outcome): its
// status, message and exception events are written as strings. Records are read back in the
// order they were written, so a body holds its spans in the order they ended.
//
// Layout (little-endian; a string is its UTF-8 length in 4 bytes, then its bytes):
//   step:  1, trace, parent span id (2 words), name, start and end (high, low words), outcome, attribute count (1
//          byte), attributes
//   span:  2, name, kind (1 byte), trace, span id (0 and 2 words, or 1 and hex), parent (0 none, 1 as 2 words, 2 as hex), start and end,
//          attribute count (4 bytes), attributes, events (count; each name, time, 0 or 1 and attributes), links
//          (count; each trace and span id in hex, attributes), outcome
//   trace: 0 and 4 words, or 1 and the id in hex
//   outcome: 0 (it succeeded), or 1, status code, 0 or 1 and message, interrupted (0 or 1), error count, each error's
//          name, message and stack
//   value: 0 and a string, 1 true, 2 false, 3 a number (float64), 4 a bigint in decimal, 5 an array (count, values);
//          anything else as a string, as the encoder formats it

import { format } from "effect/Formatter"
import type * as Tracer from "effect/Tracer"
import { OtlpWire } from "./otlp-wire"

const STEP = 1
const SPAN = 2

const STRING = 0
const TRUE = 1
const FALSE = 2
const NUMBER = 3
const BIGINT = 4
const ARRAY = 5

const KINDS: ReadonlyArray<Tracer.SpanKind> = ["internal", "server", "client", "producer", "consumer"]
const KIND_CODE: Record<Tracer.SpanKind, number> = { internal: 0, server: 1, client: 2, producer: 3, consumer: 4 }

const TWO_TO_32 = 2 ** 32
/** Strings up to this many UTF-16 units are tried as ASCII, byte by byte, before the encoder is called. */
const SHORT_STRING = 256

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** A span a step sits under: its trace (as words when it has them) and its id as words. */
export interface Parent {
  readonly traceId: string
  readonly traceWords: readonly [number, number, number, number] | undefined
  readonly spanWords: readonly [number, number]
}

// --- random ids ---------------------------------------------------------------------------------------------------

const POOL_WORDS = 1_024
const pool = new Uint32Array(POOL_WORDS)
let pooled = POOL_WORDS

/** A random 32-bit word, drawn from a pool refilled by the system's random source. */
export const randomWord = (): number => {
  if (pooled === POOL_WORDS) {
    crypto.getRandomValues(pool)
    pooled = 0
  }
  return pool[pooled++]!
}

// --- writing --------------------------------------------------------------------------------------------------------

/**
 * Records written one after another into one growing buffer, sealed into chunks (a request body each) and handed on
 * from the buffer itself, with no copy made here.
 */
export class Records extends OtlpWire.Growing {
  private spans = 0
  /** The chunks sealed, as where each ends and how many records it holds. */
  private readonly sealed: Array<number> = []

  /** Records written since the last chunk was sealed. */
  count(): number {
    return this.spans
  }

  /** Chunks sealed and not handed on. */
  chunks(): number {
    return this.sealed.length >>> 1
  }

  /** Seals the records written since the last chunk into one, if any. */
  seal(): void {
    if (this.spans === 0) return
    this.sealed.push(this.at, this.spans)
    this.spans = 0
  }

  /**
   * Hands each chunk sealed to `each`, in order, as a view of the buffer valid only during the call; then forgets
   * them (the records written since stay).
   */
  hand(each: (chunk: Uint8Array, spans: number) => void): void {
    const sealed = this.sealed
    if (sealed.length === 0) return
    let from = 0
    for (let index = 0; index < sealed.length; index += 2) {
      const end = sealed[index]!
      each(this.bytes.subarray(from, end), sealed[index + 1]!)
      from = end
    }
    sealed.length = 0
    this.bytes.copyWithin(0, from, this.at)
    this.at -= from
  }

  private word(value: number): void {
    this.room(4)
    this.view.setUint32(this.at, value, true)
    this.at += 4
  }

  private byte(value: number): void {
    this.room(1)
    this.bytes[this.at++] = value
  }

  private string(value: string): void {
    const length = value.length
    if (length <= SHORT_STRING) {
      this.room(4 + length)
      const bytes = this.bytes
      let at = this.at + 4
      let index = 0
      for (; index < length; index++) {
        const code = value.charCodeAt(index)
        if (code >= 128) break
        bytes[at++] = code
      }
      if (index === length) {
        this.view.setUint32(this.at, length, true)
        this.at = at
        return
      }
    }
    // Not ASCII, or long: at most 3 bytes per UTF-16 unit.
    this.room(4 + length * 3)
    const written = encoder.encodeInto(value, this.bytes.subarray(this.at + 4)).written
    this.view.setUint32(this.at, written, true)
    this.at += 4 + written
  }

  private value(value: unknown): void {
    switch (typeof value) {
      case "string":
        this.byte(STRING)
        return this.string(value)
      case "boolean":
        return this.byte(value ? TRUE : FALSE)
      case "number":
        this.room(9)
        this.bytes[this.at] = NUMBER
        this.view.setFloat64(this.at + 1, value, true)
        this.at += 9
        return
      case "bigint":
        this.byte(BIGINT)
        return this.string(value.toString())
      default:
        if (Array.isArray(value)) {
          this.byte(ARRAY)
          this.word(value.length)
          for (const item of value) this.value(item)
          return
        }
        this.byte(STRING)
        return this.string(format(value))
    }
  }

  private trace(parent: { readonly traceId: string; readonly traceWords?: readonly [number, number, number, number] | undefined }): void {
    const words = parent.traceWords
    if (words === undefined) {
      this.byte(1)
      return this.string(parent.traceId)
    }
    this.room(17)
    const view = this.view
    const at = this.at
    this.bytes[at] = 0
    view.setUint32(at + 1, words[0], true)
    view.setUint32(at + 5, words[1], true)
    view.setUint32(at + 9, words[2], true)
    view.setUint32(at + 13, words[3], true)
    this.at = at + 17
  }

  private times(startHigh: number, startLow: number, endHigh: number, endLow: number): void {
    this.room(16)
    const view = this.view
    const at = this.at
    view.setUint32(at, startHigh, true)
    view.setUint32(at + 4, startLow, true)
    view.setUint32(at + 8, endHigh, true)
    view.setUint32(at + 12, endLow, true)
    this.at = at + 16
  }

  private outcome(outcome: OtlpWire.Outcome | undefined): void {
    if (outcome === undefined || outcome === OtlpWire.SUCCEEDED) return this.byte(0)
    this.byte(1)
    this.byte(outcome.code)
    if (outcome.message === undefined) this.byte(0)
    else {
      this.byte(1)
      this.string(outcome.message)
    }
    this.byte(outcome.interrupted ? 1 : 0)
    this.word(outcome.errors.length)
    for (const error of outcome.errors) {
      this.string(error.name)
      this.string(error.message)
      this.string(error.stack ?? "No stack trace available")
    }
  }

  private entries(attributes: Record<string, unknown>): void {
    const entries = Object.entries(attributes)
    this.word(entries.length)
    for (const [key, value] of entries) {
      this.string(key)
      this.value(value)
    }
  }

  /** A step under `parent`, its times as high and low words, how it ended if it failed, up to three attributes. */
  step(
    parent: Parent,
    name: string,
    startHigh: number,
    startLow: number,
    endHigh: number,
    endLow: number,
    outcome: OtlpWire.Outcome | undefined,
    key1: string | undefined,
    value1: unknown,
    key2: string | undefined,
    value2: unknown,
    key3: string | undefined,
    value3: unknown,
  ): void {
    this.byte(STEP)
    this.trace(parent)
    this.room(8)
    this.view.setUint32(this.at, parent.spanWords[0], true)
    this.view.setUint32(this.at + 4, parent.spanWords[1], true)
    this.at += 8
    this.string(name)
    this.times(startHigh, startLow, endHigh, endLow)
    this.outcome(outcome)
    const count = key1 === undefined ? 0 : key2 === undefined ? 1 : key3 === undefined ? 2 : 3
    this.byte(count)
    if (key1 !== undefined) {
      this.string(key1)
      this.value(value1)
    }
    if (key2 !== undefined) {
      this.string(key2)
      this.value(value2)
    }
    if (key3 !== undefined) {
      this.string(key3)
      this.value(value3)
    }
    this.spans++
  }

  /** An ended span. */
  span(span: OtlpWire.Ended): void {
    this.byte(SPAN)
    this.string(span.name)
    this.byte(KIND_CODE[span.kind])
    this.trace(span)
    const spanWords = span.spanWords
    if (spanWords !== undefined) {
      this.byte(0)
      this.word(spanWords[0])
      this.word(spanWords[1])
    } else {
      // An id given in hex only (not one of core's spans).
      this.byte(1)
      this.string(span.spanId)
    }
    const parentWords = span.parentWords
    if (parentWords !== undefined) {
      this.byte(1)
      this.word(parentWords[0])
      this.word(parentWords[1])
    } else if (span.parentSpanId !== undefined) {
      this.byte(2)
      this.string(span.parentSpanId)
    } else this.byte(0)
    const { startHigh, startLow, endHigh, endLow } = span
    if (startHigh !== undefined && startLow !== undefined && endHigh !== undefined && endLow !== undefined) this.times(startHigh, startLow, endHigh, endLow)
    else this.times(highOf(span.startTime), lowOf(span.startTime), highOf(span.endTime), lowOf(span.endTime))
    const pairs = span.pairs
    this.word(pairs.length >>> 1)
    for (let index = 0; index < pairs.length; index += 2) {
      this.string(pairs[index] as string)
      this.value(pairs[index + 1])
    }
    this.word(span.events.length)
    for (const [name, time, attributes] of span.events) {
      this.string(name)
      this.word(highOf(time))
      this.word(lowOf(time))
      if (attributes === undefined) this.byte(0)
      else {
        this.byte(1)
        this.entries(attributes)
      }
    }
    this.word(span.links.length)
    for (const link of span.links) {
      this.string(link.span.traceId)
      this.string(link.span.spanId)
      this.entries(link.attributes)
    }
    this.outcome(span.outcome)
    this.spans++
  }
}

const highOf = (nanos: bigint): number => Number(BigInt.asUintN(64, nanos) >> 32n)
const lowOf = (nanos: bigint): number => Number(BigInt.asUintN(32, nanos))

// --- reading ------------------------------------------------------------------------------------------------------

/** A step's parent, as read back. */
class ReadParent {
  constructor(
    readonly traceWords: readonly [number, number, number, number] | undefined,
    private readonly traceHex: string | undefined,
    readonly spanWords: readonly [number, number],
  ) {}

  get traceId(): string {
    return this.traceHex ?? OtlpWire.hexOf(this.traceWords!)
  }

  get spanId(): string {
    return OtlpWire.hexOf(this.spanWords)
  }
}

/** A span as read back. */
class ReadSpan implements OtlpWire.Ended {
  constructor(
    readonly name: string,
    readonly kind: Tracer.SpanKind,
    readonly traceWords: readonly [number, number, number, number] | undefined,
    private readonly traceHex: string | undefined,
    readonly spanWords: readonly [number, number] | undefined,
    private readonly spanHex: string | undefined,
    readonly parentWords: readonly [number, number] | undefined,
    private readonly parentHex: string | undefined,
    readonly startHigh: number,
    readonly startLow: number,
    readonly endHigh: number,
    readonly endLow: number,
    readonly pairs: ReadonlyArray<unknown>,
    readonly events: OtlpWire.Ended["events"],
    readonly links: ReadonlyArray<Tracer.SpanLink>,
    readonly outcome: OtlpWire.Outcome | undefined,
  ) {}

  get traceId(): string {
    return this.traceHex ?? OtlpWire.hexOf(this.traceWords!)
  }

  get spanId(): string {
    return this.spanHex ?? OtlpWire.hexOf(this.spanWords!)
  }

  get parentSpanId(): string | undefined {
    return this.parentWords !== undefined ? OtlpWire.hexOf(this.parentWords) : this.parentHex
  }

  get startTime(): bigint {
    return BigInt(this.startHigh) * BigInt(TWO_TO_32) + BigInt(this.startLow)
  }

  get endTime(): bigint {
    return BigInt(this.endHigh) * BigInt(TWO_TO_32) + BigInt(this.endLow)
  }
}

/** Reads records written by `Records` from one chunk. */
class Reader {
  private at = 0
  private readonly view: DataView

  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }

  more(): boolean {
    return this.at < this.bytes.length
  }

  byte(): number {
    if (this.at >= this.bytes.length) throw new RangeError("a record ends early")
    return this.bytes[this.at++]!
  }

  word(): number {
    const value = this.view.getUint32(this.at, true)
    this.at += 4
    return value
  }

  string(): string {
    const length = this.word()
    if (this.at + length > this.bytes.length) throw new RangeError("a record ends early")
    const value = decoder.decode(this.bytes.subarray(this.at, this.at + length))
    this.at += length
    return value
  }

  value(): unknown {
    const tag = this.byte()
    switch (tag) {
      case STRING:
        return this.string()
      case TRUE:
        return true
      case FALSE:
        return false
      case NUMBER: {
        const value = this.view.getFloat64(this.at, true)
        this.at += 8
        return value
      }
      case BIGINT:
        return BigInt(this.string())
      case ARRAY: {
        const count = this.word()
        const items: Array<unknown> = []
        for (let index = 0; index < count; index++) items.push(this.value())
        return items
      }
      default:
        throw new RangeError(`no value is tagged ${tag}`)
    }
  }

  trace(): { readonly words: readonly [number, number, number, number] | undefined; readonly hex: string | undefined } {
    if (this.byte() === 1) return { words: undefined, hex: this.string() }
    return { words: [this.word(), this.word(), this.word(), this.word()], hex: undefined }
  }

  outcome(): OtlpWire.Outcome | undefined {
    if (this.byte() === 0) return undefined
    const code = this.byte()
    const message = this.byte() === 1 ? this.string() : undefined
    const interrupted = this.byte() === 1
    const errors: Array<OtlpWire.Outcome["errors"][number]> = []
    for (let count = this.word(); count > 0; count--) errors.push({ name: this.string(), message: this.string(), stack: this.string() })
    return { code, message, interrupted, errors }
  }

  entries(): Record<string, unknown> {
    const found: Record<string, unknown> = {}
    for (let count = this.word(); count > 0; count--) {
      const key = this.string()
      found[key] = this.value()
    }
    return found
  }
}

/** A step filled in afresh for each step read (the batch encodes it at once). */
const readStep = (): OtlpWire.Step => ({
  name: "",
  parent: new ReadParent(undefined, "", [0, 0]),
  spanWords: [0, 0],
  startHigh: 0,
  startLow: 0,
  endHigh: 0,
  endLow: 0,
  outcome: undefined,
  pairs: [],
})

/** Adds the records of `chunk` to `batch`, in order; how many were added. Throws on a chunk that is not records. */
export const addTo = (chunk: Uint8Array, batch: OtlpWire.Batch): number => {
  const reader = new Reader(chunk)
  const step = readStep()
  let count = 0
  while (reader.more()) {
    const kind = reader.byte()
    if (kind === STEP) {
      const trace = reader.trace()
      step.parent = new ReadParent(trace.words, trace.hex, [reader.word(), reader.word()])
      step.spanWords[0] = randomWord()
      step.spanWords[1] = randomWord()
      step.name = reader.string()
      step.startHigh = reader.word()
      step.startLow = reader.word()
      step.endHigh = reader.word()
      step.endLow = reader.word()
      step.outcome = reader.outcome()
      const pairs = step.pairs
      pairs.length = 0
      for (let attributes = reader.byte(); attributes > 0; attributes--) pairs.push(reader.string(), reader.value())
      batch.addStep(step)
    } else if (kind === SPAN) {
      const name = reader.string()
      const spanKind = KINDS[reader.byte()] ?? "internal"
      const trace = reader.trace()
      const spanForm = reader.byte()
      const spanWords: [number, number] | undefined = spanForm === 0 ? [reader.word(), reader.word()] : undefined
      const spanHex = spanForm === 1 ? reader.string() : undefined
      const parentForm = reader.byte()
      const parentWords: [number, number] | undefined = parentForm === 1 ? [reader.word(), reader.word()] : undefined
      const parentHex = parentForm === 2 ? reader.string() : undefined
      const startHigh = reader.word()
      const startLow = reader.word()
      const endHigh = reader.word()
      const endLow = reader.word()
      const pairs: Array<unknown> = []
      for (let attributes = reader.word(); attributes > 0; attributes--) pairs.push(reader.string(), reader.value())
      const events: Array<[string, bigint, Record<string, unknown> | undefined]> = []
      for (let count = reader.word(); count > 0; count--) {
        const eventName = reader.string()
        const time = BigInt(reader.word()) * BigInt(TWO_TO_32) + BigInt(reader.word())
        events.push([eventName, time, reader.byte() === 1 ? reader.entries() : undefined])
      }
      const links: Array<Tracer.SpanLink> = []
      for (let count = reader.word(); count > 0; count--) {
        const traceId = reader.string()
        const spanId = reader.string()
        // Only its ids are written.
        const span = { _tag: "ExternalSpan", traceId, spanId, sampled: true } as Tracer.ExternalSpan
        links.push({ span, attributes: reader.entries() })
      }
      const outcome = reader.outcome()
      batch.add(
        new ReadSpan(name, spanKind, trace.words, trace.hex, spanWords, spanHex, parentWords, parentHex, startHigh, startLow, endHigh, endLow, pairs, events, links, outcome),
      )
    } else throw new RangeError(`no record is of kind ${kind}`)
    count++
  }
  return count
}
