export * as OtlpRecord from "./otlp-record"

// Ended spans as compact records, written where they end (the thread that settles calls) and made into an OTLP
// request body elsewhere (./otlp-wire, on the sending thread): a record holds what a span says in numbers and strings
// as they are, with no protobuf, no lookups but a small table of the strings core's own spans say again and again,
// and no span id for a step (the reader draws it), so that ending a span costs its thread a few dozen byte writes. A
// settle (Spans.Own) is written as a header once per chunk (its ids and start), then its steps and its own end as
// records that name the header by its place in the chunk, a step's times as milliseconds after the settle's start:
// the reader makes them the spans they stand for. How a span that failed ended comes worked out (./otlp-outcome): its
// status, message and exception events are written as strings. Records are read back in the order they were
// written, so a body holds its spans in the order they ended. A chunk stands alone: nothing in it refers to another.
//
// Layout (little-endian; a string is its UTF-8 length in 4 bytes, then its bytes):
//   step:    1, settle (its header's place in the chunk, 4 bytes), name (a key), start and end (float64 ms after the
//            settle's start), outcome, attribute count (1 byte), attributes
//   span:    2, name, kind (1 byte), trace, span id (0 and 2 words, or 1 and hex), parent, start and end (high, low
//            words), attribute count (4 bytes), attributes, events (count; each name, time, 0 or 1 and entries), links
//            (count; each trace and span id in hex, entries), outcome
//   header:  3, trace, span id (2 words), parent, start (high, low words): a settle span, named Settler.settle; no
//            span of its own
//   settled: 4, settle (4 bytes), end (high, low words), attribute count (4 bytes), attributes, events, links,
//            outcome: the settle span, ended
//   trace: 0 and 4 words, or 1 and the id in hex; parent: 0 none, 1 as 2 words, 2 as hex
//   attribute: a key, then a value; key: a KNOWN string's place (1 byte), or OTHER and the string
//   outcome: 0 (it succeeded), or 1, status code, 0 or 1 and message, interrupted (0 or 1), error count, each error's
//          name, message and stack
//   value: 0 and a string, 1 true, 2 false, 3 a number (float64), 4 a bigint in decimal, 5 an array (count, values),
//          6 and a KNOWN string's place (1 byte); anything else as a string, as the encoder formats it

import { format } from "effect/Formatter"
import type * as Tracer from "effect/Tracer"
import { OtlpWire } from "./otlp-wire"
import { AGENT, CALL, ERROR_KIND, INPUT_BYTES, MESSAGE, OUTPUT_BYTES, REPLAYED, SESSION, SETTLE, STATUS, TOOL } from "../contract/trace-names"

export const STEP = 1
export const SPAN = 2
export const HEADER = 3
export const SETTLED = 4
export const CALL_SETTLED = 5

export const STRING = 0
export const TRUE = 1
export const FALSE = 2
export const NUMBER = 3
export const BIGINT = 4
export const ARRAY = 5
export const KNOWN_STRING = 6

/** What a settle span (a header's) is named, and its attributes, in the order Spans.begin and Spans.end say them. */
export { AGENT, CALL, ERROR_KIND, INPUT_BYTES, MESSAGE, OUTPUT_BYTES, REPLAYED, SESSION, SETTLE, STATUS, TOOL }

/**
 * Strings core's own spans say in every settle (names, keys, values), written as their place here: both threads read
 * the same table. Any other string is written out; at most 255 of them (a place is one byte, OTHER aside).
 */
export const KNOWN: ReadonlyArray<string> = [
  SETTLE,
  "Settler.decode",
  "Settler.permission",
  "Settler.execute",
  "Settler.bound",
  "Settler.record",
  TOOL,
  SESSION,
  CALL,
  AGENT,
  MESSAGE,
  INPUT_BYTES,
  STATUS,
  ERROR_KIND,
  REPLAYED,
  OUTPUT_BYTES,
  "core.input.valid",
  "core.permission.decision",
  "core.execute.outcome",
  "core.output.bounded",
  "core.output.managed_bytes",
  "core.record",
  "intent",
  "settlement",
  "allow",
  "deny",
  "reject",
  "decline",
  "by_tool",
  "success",
  "failure",
  "error",
  "interrupted",
  "declined",
  "cancelled",
  "unknown",
  "invalid_input",
  "invalid_output",
  "stale",
  "denied",
  "conflict",
]
/** A key that is not KNOWN: written out after it. */
export const OTHER = 255
/** KNOWN strings by length, and their places: a string is looked up among the few of its length (a Map costs more). */
const KNOWN_BY_LENGTH: Array<Array<string> | undefined> = []
const PLACE_BY_LENGTH: Array<Array<number> | undefined> = []
KNOWN.forEach((known, place) => {
  ;(KNOWN_BY_LENGTH[known.length] ??= []).push(known)
  ;(PLACE_BY_LENGTH[known.length] ??= []).push(place)
})

/** A string's place in KNOWN, or -1. */
const placeOf = (value: string): number => {
  const candidates = KNOWN_BY_LENGTH[value.length]
  if (candidates === undefined) return -1
  for (let index = 0; index < candidates.length; index++) if (candidates[index] === value) return PLACE_BY_LENGTH[value.length]![index]!
  return -1
}

export const KINDS: ReadonlyArray<Tracer.SpanKind> = ["internal", "server", "client", "producer", "consumer"]
const KIND_CODE: Record<Tracer.SpanKind, number> = { internal: 0, server: 1, client: 2, producer: 3, consumer: 4 }

export const TWO_TO_32 = 2 ** 32
const NANOS_PER_MS = 1e6
/** Strings up to this many UTF-16 units are tried as ASCII, byte by byte, before the encoder is called. */
const SHORT_STRING = 256

const encoder = new TextEncoder()

/**
 * A settle span as its records name it: its ids (the trace as words when it has them), its parent's, its start as the
 * high and low words of nanoseconds since the epoch; and where its header was written last (kept by `Records`).
 */
export interface Settle {
  readonly traceId: string
  readonly traceWords: readonly [number, number, number, number] | undefined
  readonly spanWords: readonly [number, number]
  readonly parentWords: readonly [number, number] | undefined
  readonly parentSpanId: string | undefined
  readonly startHigh: number
  readonly startLow: number
  /** The chunk its header was last written in (Records' count of seals then; 0 before any), and its place there. */
  chunk: number
  header: number
}

/** What a settle span says of its call. */
export interface Call {
  readonly name: string
  readonly sessionID: string
  readonly toolCallID: string
  readonly agent: string
  readonly assistantMessageID: string
}

/** A time as the high and low 32 bits of nanoseconds since the epoch. */
export interface Words {
  high: number
  low: number
}

/**
 * The time `ms` milliseconds (a fraction, rounded to whole nanoseconds) after the one given as `high` and `low` words,
 * into `into`: what the settling thread and the sending thread both place times with, so that a step's times are the
 * same wherever they are worked out.
 */
export const after = (high: number, low: number, ms: number, into: Words): void => {
  const at = low + Math.round(ms * NANOS_PER_MS)
  const carry = Math.floor(at / TWO_TO_32)
  into.high = high + carry
  into.low = at - carry * TWO_TO_32
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
  /** Seals made: the chunk being written is known by it. */
  private seals = 1
  /** Settle headers written in the chunk being written. */
  private headers = 0

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
    this.seals++
    this.headers = 0
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

  /** A key (a name, an attribute's key): its place when KNOWN, else written out. */
  private key(key: string): void {
    const place = placeOf(key)
    if (place >= 0) return this.byte(place)
    this.byte(OTHER)
    this.string(key)
  }

  private value(value: unknown): void {
    switch (typeof value) {
      case "string": {
        const place = placeOf(value)
        if (place >= 0) {
          this.room(2)
          this.bytes[this.at] = KNOWN_STRING
          this.bytes[this.at + 1] = place
          this.at += 2
          return
        }
        this.byte(STRING)
        return this.string(value)
      }
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

  /** An attribute of the span or settle being written (after its count). */
  pair(key: string, value: unknown): void {
    this.key(key)
    this.value(value)
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

  private parent(span: { readonly parentWords?: readonly [number, number] | undefined; readonly parentSpanId: string | undefined }): void {
    const parentWords = span.parentWords
    if (parentWords !== undefined) {
      this.byte(1)
      this.word(parentWords[0])
      this.word(parentWords[1])
    } else if (span.parentSpanId !== undefined) {
      this.byte(2)
      this.string(span.parentSpanId)
    } else this.byte(0)
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

  /** A span's events, links and how it ended: what every span record ends with. */
  private tail(events: OtlpWire.Ended["events"], links: ReadonlyArray<Tracer.SpanLink>, outcome: OtlpWire.Outcome | undefined): void {
    this.word(events.length)
    for (const [name, time, attributes] of events) {
      this.string(name)
      this.word(highOf(time))
      this.word(lowOf(time))
      if (attributes === undefined) this.byte(0)
      else {
        this.byte(1)
        this.entries(attributes)
      }
    }
    this.word(links.length)
    for (const link of links) {
      this.string(link.span.traceId)
      this.string(link.span.spanId)
      this.entries(link.attributes)
    }
    this.outcome(outcome)
  }

  /** `settle`'s place among the chunk's headers, its header written first when the chunk has none of it yet. */
  private header(settle: Settle): number {
    if (settle.chunk === this.seals) return settle.header
    this.byte(HEADER)
    this.trace(settle)
    this.word(settle.spanWords[0])
    this.word(settle.spanWords[1])
    this.parent(settle)
    this.word(settle.startHigh)
    this.word(settle.startLow)
    settle.chunk = this.seals
    return (settle.header = this.headers++)
  }

  /**
   * A step of `settle`, from `startMs` to `endMs` after the settle's start, how it ended if it failed, up to three
   * attributes.
   */
  step(
    settle: Settle,
    name: string,
    startMs: number,
    endMs: number,
    outcome: OtlpWire.Outcome | undefined,
    key1: string | undefined,
    value1: unknown,
    key2: string | undefined,
    value2: unknown,
    key3: string | undefined,
    value3: unknown,
  ): void {
    const header = this.header(settle)
    const place = placeOf(name)
    // The step's head at most: its kind, settle, name's place, times, a success and the attribute count.
    this.room(25)
    const bytes = this.bytes
    const view = this.view
    let at = this.at
    bytes[at] = STEP
    view.setUint32(at + 1, header, true)
    at += 5
    if (place >= 0) bytes[at++] = place
    else {
      bytes[at++] = OTHER
      this.at = at
      this.string(name)
      this.room(18)
      at = this.at
    }
    this.view.setFloat64(at, startMs, true)
    this.view.setFloat64(at + 8, endMs, true)
    at += 16
    if (outcome === undefined) this.bytes[at++] = 0
    else {
      this.at = at
      this.outcome(outcome)
      this.room(1)
      at = this.at
    }
    this.bytes[at] = key1 === undefined ? 0 : key2 === undefined ? 1 : key3 === undefined ? 2 : 3
    this.at = at + 1
    if (key1 !== undefined) this.pair(key1, value1)
    if (key2 !== undefined) this.pair(key2, value2)
    if (key3 !== undefined) this.pair(key3, value3)
    this.spans++
  }

  /**
   * `settle`, ended at the time given as high and low words, with `attributes` attributes: the caller writes them next
   * (`pair`), then `ended`.
   */
  settled(settle: Settle, endHigh: number, endLow: number, attributes: number): void {
    const header = this.header(settle)
    this.room(17)
    const at = this.at
    this.bytes[at] = SETTLED
    this.view.setUint32(at + 1, header, true)
    this.view.setUint32(at + 5, endHigh, true)
    this.view.setUint32(at + 9, endLow, true)
    this.view.setUint32(at + 13, attributes, true)
    this.at = at + 17
  }

  /**
   * `settle`, ended at the time given as high and low words, with the attributes of its `call` and, when it settled,
   * of how (`status` undefined: it did not), in Spans' order, written without their keys; its events, links and how
   * it ended.
   */
  callSettled(
    settle: Settle,
    endHigh: number,
    endLow: number,
    call: Call,
    inputBytes: number,
    status: string | undefined,
    errorKind: string | undefined,
    replayed: boolean,
    outputBytes: number,
    events: OtlpWire.Ended["events"],
    links: ReadonlyArray<Tracer.SpanLink>,
    outcome: OtlpWire.Outcome | undefined,
  ): void {
    const header = this.header(settle)
    this.room(13)
    const at = this.at
    this.bytes[at] = CALL_SETTLED
    this.view.setUint32(at + 1, header, true)
    this.view.setUint32(at + 5, endHigh, true)
    this.view.setUint32(at + 9, endLow, true)
    this.at = at + 13
    this.string(call.name)
    this.string(call.sessionID)
    this.string(call.toolCallID)
    this.string(call.agent)
    this.string(call.assistantMessageID)
    this.room(10)
    this.view.setFloat64(this.at, inputBytes, true)
    this.bytes[this.at + 8] = status === undefined ? 0 : errorKind === undefined ? 1 : 2
    this.at += 9
    if (status !== undefined) {
      this.value(status)
      if (errorKind !== undefined) this.value(errorKind)
      this.room(9)
      this.bytes[this.at] = replayed ? TRUE : FALSE
      this.view.setFloat64(this.at + 1, outputBytes, true)
      this.at += 9
    }
    this.tail(events, links, outcome)
    this.spans++
  }

  /** The end of a settle begun with `settled`: its events, links and how it ended. */
  ended(events: OtlpWire.Ended["events"], links: ReadonlyArray<Tracer.SpanLink>, outcome: OtlpWire.Outcome | undefined): void {
    this.tail(events, links, outcome)
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
    this.parent(span)
    const { startHigh, startLow, endHigh, endLow } = span
    if (startHigh !== undefined && startLow !== undefined && endHigh !== undefined && endLow !== undefined) this.times(startHigh, startLow, endHigh, endLow)
    else this.times(highOf(span.startTime), lowOf(span.startTime), highOf(span.endTime), lowOf(span.endTime))
    const pairs = span.pairs
    this.word(pairs.length >>> 1)
    for (let index = 0; index < pairs.length; index += 2) this.pair(pairs[index] as string, pairs[index + 1])
    this.tail(span.events, span.links, span.outcome)
    this.spans++
  }
}

const highOf = (nanos: bigint): number => Number(BigInt.asUintN(64, nanos) >> 32n)
const lowOf = (nanos: bigint): number => Number(BigInt.asUintN(32, nanos))
