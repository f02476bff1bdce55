export * as OtlpWire from "./otlp-wire"

// Ended spans as an OTLP/HTTP request body: protobuf (ExportTraceServiceRequest, written straight into one growing
// buffer, field by field, in the order and form Effect's own OTLP encoder writes them) or OTLP/JSON (the same data
// as objects), made on the thread that sends them (./otlp-worker) from the spans' records (./otlp-record). How a
// span that failed ended (its status, message and exception events) comes worked out from its Cause where it ended
// (./otlp-outcome): nothing here needs Effect's Cause.

import type * as Tracer from "effect/Tracer"
import { format } from "effect/Formatter"

/** What an ended span keeps until its batch is sent. */
export interface Ended {
  readonly name: string
  readonly kind: Tracer.SpanKind
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  /** The ids as 32-bit words, when the span has them so (written without going through hex). */
  readonly traceWords?: readonly [number, number, number, number] | undefined
  readonly spanWords?: readonly [number, number] | undefined
  readonly parentWords?: readonly [number, number] | undefined
  readonly startTime: bigint
  readonly endTime: bigint
  /** The times as their high and low 32 bits, when the span has them so (written without a 64-bit integer). */
  readonly startHigh?: number
  readonly startLow?: number
  readonly endHigh?: number
  readonly endLow?: number
  /** Attributes as key, value, key, value. */
  readonly pairs: ReadonlyArray<unknown>
  readonly events: ReadonlyArray<readonly [name: string, time: bigint, attributes: Record<string, unknown> | undefined]>
  readonly links: ReadonlyArray<Tracer.SpanLink>
  /** How the span ended when it did not succeed (undefined: it succeeded), worked out where it ended (./otlp-outcome). */
  readonly outcome: Outcome | undefined
}

/**
 * A step of a traced call, recorded without a span object: under `parent` (a span with its ids as words), in its
 * trace; times as the high and low 32 bits of nanoseconds since the epoch. Filled in afresh for each step.
 */
export interface Step {
  name: string
  parent: Pick<Ended, "traceId" | "spanId" | "traceWords"> & { readonly spanWords: readonly [number, number] }
  readonly spanWords: [number, number]
  startHigh: number
  startLow: number
  endHigh: number
  endLow: number
  /** How it ended when it did not succeed (undefined: it succeeded). */
  outcome: Outcome | undefined
  /** Attributes as key, value, key, value. */
  readonly pairs: Array<unknown>
}

const TWO_TO_32 = 2 ** 32
const NO_LINKS: Ended["links"] = []
const NO_EVENTS: Ended["events"] = []

export const hexOf = (words: ArrayLike<number>): string => {
  let hex = ""
  for (let index = 0; index < words.length; index++) hex += (words[index]! >>> 0).toString(16).padStart(8, "0")
  return hex
}

/** A step as an ended span (for the JSON body, which is made from spans). */
const endedOf = (step: Step): Ended => ({
  name: step.name,
  kind: "internal",
  traceId: step.parent.traceId,
  spanId: hexOf(step.spanWords),
  parentSpanId: step.parent.spanId,
  startTime: BigInt(step.startHigh) * BigInt(TWO_TO_32) + BigInt(step.startLow),
  endTime: BigInt(step.endHigh) * BigInt(TWO_TO_32) + BigInt(step.endLow),
  pairs: step.pairs.slice(),
  events: NO_EVENTS,
  links: NO_LINKS,
  outcome: step.outcome,
})

/** The `service.*` and other resource attributes, and the instrumentation scope, of every batch. */
export interface Source {
  readonly resource: Readonly<Record<string, unknown>>
  readonly scope: { readonly name: string; readonly version: string }
}

const SPAN_KIND: Record<Tracer.SpanKind, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 }
export const STATUS_UNSET = 0
const STATUS_OK = 1
export const STATUS_ERROR = 2
/** OTLP `intValue` is a signed 64-bit integer. */
const INT64_BOUND = 2 ** 63

// --- attribute values, as OTLP/JSON AnyValue (what Effect's exporter makes of them) ----------------------------

type AnyValue =
  | { readonly stringValue: string }
  | { readonly boolValue: boolean }
  | { readonly intValue: number | string }
  | { readonly doubleValue: number }
  | { readonly arrayValue: { readonly values: ReadonlyArray<AnyValue> } }

interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}

const anyValue = (value: unknown): AnyValue => {
  if (Array.isArray(value)) return { arrayValue: { values: value.map(anyValue) } }
  switch (typeof value) {
    case "string":
      return { stringValue: value }
    case "bigint":
      return BigInt.asIntN(64, value) === value ? { intValue: String(value) } : { stringValue: String(value) }
    case "number":
      return Number.isInteger(value) && value >= -INT64_BOUND && value < INT64_BOUND
        ? { intValue: Number.isSafeInteger(value) ? value : String(BigInt(value)) }
        : { doubleValue: value }
    case "boolean":
      return { boolValue: value }
    default:
      return { stringValue: format(value) }
  }
}

const keyValues = (entries: Iterable<readonly [string, unknown]>): Array<KeyValue> => {
  const found: Array<KeyValue> = []
  for (const [key, value] of entries) found.push({ key, value: anyValue(value) })
  return found
}

const pairValues = (pairs: ReadonlyArray<unknown>): Array<KeyValue> => {
  const found: Array<KeyValue> = []
  for (let index = 0; index < pairs.length; index += 2) found.push({ key: pairs[index] as string, value: anyValue(pairs[index + 1]) })
  return found
}

/** How a span ended, as its status, attributes and exception events say it. */
export interface Outcome {
  readonly code: number
  readonly message: string | undefined
  /** `effect.fiber.interrupted`, as Effect's exporter says it. */
  readonly interrupted: boolean
  readonly errors: ReadonlyArray<{ readonly name: string; readonly message: string; readonly stack?: string | undefined }>
}

export const SUCCEEDED: Outcome = { code: STATUS_OK, message: undefined, interrupted: false, errors: [] }

const exceptionAttributes = (error: Outcome["errors"][number]): Array<KeyValue> => [
  { key: "exception.type", value: { stringValue: error.name } },
  { key: "exception.message", value: { stringValue: error.message } },
  { key: "exception.stacktrace", value: { stringValue: error.stack ?? "No stack trace available" } },
]

const resourceAttributes = (source: Source): Array<KeyValue> => keyValues(Object.entries(source.resource))

// --- OTLP/JSON ----------------------------------------------------------------------------------------------------

/** The batch as OTLP/JSON (`ExportTraceServiceRequest`), ids in hex and times as decimal strings. */
export const json = (spans: ReadonlyArray<Ended>, source: Source) => ({
  resourceSpans: [
    {
      resource: { attributes: resourceAttributes(source), droppedAttributesCount: 0 },
      scopeSpans: [{ scope: { name: source.scope.name, version: source.scope.version }, spans: spans.map(jsonSpan) }],
    },
  ],
})

const jsonSpan = (span: Ended) => {
  const outcome = span.outcome ?? SUCCEEDED
  const attributes = pairValues(span.pairs)
  if (outcome.interrupted) attributes.push({ key: "effect.fiber.interrupted", value: { boolValue: true } })
  const events = span.events.map(([name, time, eventAttributes]) => ({
    name,
    timeUnixNano: String(time),
    attributes: eventAttributes === undefined ? [] : keyValues(Object.entries(eventAttributes)),
    droppedAttributesCount: 0,
  }))
  for (const error of outcome.errors) {
    events.push({ name: "exception", timeUnixNano: String(span.endTime), droppedAttributesCount: 0, attributes: exceptionAttributes(error) })
  }
  return {
    traceId: span.traceId.padStart(32, "0"),
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    name: span.name,
    kind: SPAN_KIND[span.kind],
    startTimeUnixNano: String(span.startTime),
    endTimeUnixNano: String(span.endTime),
    attributes,
    droppedAttributesCount: 0,
    events,
    droppedEventsCount: 0,
    status: outcome.message === undefined ? { code: outcome.code } : { code: outcome.code, message: outcome.message },
    links: span.links.map((link) => ({
      traceId: link.span.traceId.padStart(32, "0"),
      spanId: link.span.spanId,
      attributes: keyValues(Object.entries(link.attributes)),
      droppedAttributesCount: 0,
    })),
    droppedLinksCount: 0,
  }
}

/** The OTLP/JSON body: non-finite numbers as the strings OTLP/JSON expects, not JSON's null. */
export const jsonBody = (spans: ReadonlyArray<Ended>, source: Source): string => {
  const one = jsonBatch(source)
  for (const span of spans) one.add(span)
  return one.take() as string
}

// --- protobuf -----------------------------------------------------------------------------------------------------

const VARINT = 0
const FIXED64 = 1
const LENGTH_DELIMITED = 2
const INITIAL_BYTES = 64 * 1024
/** Strings up to this many UTF-16 units take at most 127 bytes in UTF-8: their length is one byte. */
const SHORT_STRING = 42

const encoder = new TextEncoder()
/** Encoded attribute keys and span names kept at most (each is a few bytes). */
const KNOWN_STRINGS = 1_024
const KEYS = new Map<string, Uint8Array>()
const NAMES = new Map<string, Uint8Array>()
/** A span attribute (field 9) as written, by key and value: the first KNOWN_STRINGS pairs seen. */
const PAIRS = new Map<string, Map<unknown, Uint8Array>>()
let pairCount = 0

const HEX = new Int8Array(128).fill(-1)
for (let digit = 0; digit < 16; digit++) {
  HEX["0123456789abcdef".charCodeAt(digit)] = digit
  HEX["0123456789ABCDEF".charCodeAt(digit)] = digit
}

/** Bytes written one after another into one buffer, which doubles whenever what comes next would not fit. */
export class Growing {
  bytes: Uint8Array<ArrayBuffer>
  view: DataView<ArrayBuffer>
  /** Where the next byte goes. */
  at = 0
  /** The buffer's length, kept as a number (read on every write). */
  capacity: number

  constructor(size = INITIAL_BYTES) {
    this.bytes = new Uint8Array(size)
    this.view = new DataView(this.bytes.buffer)
    this.capacity = size
  }

  /** Makes room for `count` more bytes at `at`. */
  room(count: number): void {
    if (this.at + count <= this.capacity) return
    let size = this.capacity * 2
    while (this.at + count > size) size *= 2
    const grown = new Uint8Array(size)
    grown.set(this.bytes.subarray(0, this.at))
    this.bytes = grown
    this.view = new DataView(grown.buffer)
    this.capacity = size
  }
}

/** A protobuf writer over one growing buffer; a message's length is written when it ends. */
class Writer extends Growing {

  /** A non-negative integer below 2^53. */
  varint(value: number): void {
    this.room(10)
    while (value > 127) {
      this.bytes[this.at++] = (value % 128) | 128
      value = Math.floor(value / 128)
    }
    this.bytes[this.at++] = value
  }

  /** Any 64-bit integer, as protobuf writes int64 (negative ones in ten bytes). */
  int64(value: bigint): void {
    let rest = BigInt.asUintN(64, value)
    this.room(10)
    while (rest > 127n) {
      this.bytes[this.at++] = Number(rest & 127n) | 128
      rest >>= 7n
    }
    this.bytes[this.at++] = Number(rest)
  }

  tag(field: number, wire: number): void {
    this.varint((field << 3) | wire)
  }

  varintField(field: number, value: number): void {
    this.tag(field, VARINT)
    this.varint(value)
  }

  fixed64Field(field: number, value: bigint): void {
    this.tag(field, FIXED64)
    this.room(8)
    this.view.setBigUint64(this.at, BigInt.asUintN(64, value), true)
    this.at += 8
  }

  doubleField(field: number, value: number): void {
    this.tag(field, FIXED64)
    this.room(8)
    this.view.setFloat64(this.at, value, true)
    this.at += 8
  }

  stringField(field: number, value: string): void {
    this.tag(field, LENGTH_DELIMITED)
    if (value.length <= SHORT_STRING) {
      this.room(1 + value.length * 3)
      const lengthAt = this.at++
      let ascii = true
      for (let index = 0; index < value.length; index++) {
        const code = value.charCodeAt(index)
        if (code >= 128) {
          ascii = false
          break
        }
        this.bytes[this.at + index] = code
      }
      const written = ascii ? value.length : encoder.encodeInto(value, this.bytes.subarray(this.at)).written
      this.bytes[lengthAt] = written
      this.at += written
      return
    }
    const length = Buffer.byteLength(value, "utf8")
    this.varint(length)
    this.room(length)
    encoder.encodeInto(value, this.bytes.subarray(this.at, this.at + length))
    this.at += length
  }

  /** Bytes given in hex (ids), as Effect's encoder reads them: two digits a byte, a bad digit as 0. */
  hexField(field: number, hex: string): void {
    const length = hex.length >>> 1
    this.tag(field, LENGTH_DELIMITED)
    this.varint(length)
    this.room(length)
    for (let index = 0; index < length; index++) {
      const high = HEX[hex.charCodeAt(index * 2)] ?? -1
      const low = HEX[hex.charCodeAt(index * 2 + 1)] ?? -1
      this.bytes[this.at++] = high < 0 ? 0 : low < 0 ? high : high * 16 + low
    }
  }

  /** Starts an embedded message: its length, one byte for now, is fixed by `end`. */
  begin(field: number): number {
    this.tag(field, LENGTH_DELIMITED)
    this.room(1)
    return this.at++
  }

  end(lengthAt: number): void {
    const length = this.at - lengthAt - 1
    if (length < 128) {
      this.bytes[lengthAt] = length
      return
    }
    let extra = 0
    for (let rest = length; rest > 127; rest = Math.floor(rest / 128)) extra++
    this.room(extra)
    this.bytes.copyWithin(lengthAt + 1 + extra, lengthAt + 1, this.at)
    const after = this.at + extra
    this.at = lengthAt
    this.varint(length)
    this.at = after
  }

  anyValue(value: unknown): void {
    if (Array.isArray(value)) {
      const array = this.begin(5)
      for (const item of value) {
        const one = this.begin(1)
        this.anyValue(item)
        this.end(one)
      }
      this.end(array)
      return
    }
    switch (typeof value) {
      case "string":
        return this.stringField(1, value)
      case "boolean":
        return this.varintField(2, value ? 1 : 0)
      case "bigint":
        if (BigInt.asIntN(64, value) === value) {
          this.tag(3, VARINT)
          return this.int64(value)
        }
        return this.stringField(1, String(value))
      case "number":
        if (Number.isInteger(value) && value >= -INT64_BOUND && value < INT64_BOUND) {
          this.tag(3, VARINT)
          if (value >= 0 && value <= Number.MAX_SAFE_INTEGER) return this.varint(value)
          return this.int64(BigInt(value))
        }
        return this.doubleField(4, value)
      default:
        return this.stringField(1, format(value))
    }
  }

  copy(bytes: Uint8Array): void {
    const length = bytes.length
    this.room(length)
    // Byte by byte: the copies are a few dozen bytes, where a native set costs more than the loop.
    const target = this.bytes
    let at = this.at
    for (let index = 0; index < length; index++) target[at++] = bytes[index]!
    this.at = at
  }

  /** A string field whose bytes are kept once made (attribute keys and span names repeat in every batch). */
  knownString(field: number, value: string, cache: Map<string, Uint8Array>): void {
    let encoded = cache.get(value)
    if (encoded === undefined) {
      const start = this.at
      this.stringField(field, value)
      if (cache.size < KNOWN_STRINGS) cache.set(value, this.bytes.slice(start, this.at))
      return
    }
    this.copy(encoded)
  }

  keyValue(field: number, key: string, value: unknown): void {
    if (field === 9) {
      // A count, or a short ASCII string (an id), with a key written before: its lengths worked out, not patched
      // (cheaper than looking the string up: an id is seldom said twice).
      const keyField = typeof value === "boolean" ? undefined : KEYS.get(key)
      if (keyField !== undefined && (typeof value === "number" ? this.countAttribute(keyField, value) : typeof value === "string" && this.asciiAttribute(keyField, value))) return
      // An attribute said again and again (a flag, a name not in ASCII) is copied as it was first written.
      const known = typeof value === "string" || typeof value === "boolean" ? PAIRS.get(key)?.get(value) : undefined
      if (known !== undefined) {
        this.copy(known)
        return
      }
    }
    const start = this.at
    const pair = this.begin(field)
    this.knownString(1, key, KEYS)
    const inner = this.begin(2)
    this.anyValue(value)
    this.end(inner)
    this.end(pair)
    if (field === 9 && (typeof value === "boolean" || (typeof value === "string" && value.length <= SHORT_STRING)) && pairCount < KNOWN_STRINGS) {
      let values = PAIRS.get(key)
      if (values === undefined) PAIRS.set(key, (values = new Map()))
      values.set(value, this.bytes.slice(start, this.at))
      pairCount++
    }
  }

  /**
   * The start of a span attribute (field 9) whose AnyValue takes `inner` bytes: its tag and length, the key field,
   * the AnyValue's tag and length. Written past `at` without moving it; where the value goes, or -1 when a length
   * would take more than a byte.
   */
  attributeHead(keyField: Uint8Array, inner: number): number {
    const total = keyField.length + 2 + inner
    if (total >= 128) return -1
    this.room(2 + total)
    const bytes = this.bytes
    let at = this.at
    bytes[at++] = (9 << 3) | LENGTH_DELIMITED
    bytes[at++] = total
    for (let index = 0; index < keyField.length; index++) bytes[at++] = keyField[index]!
    bytes[at++] = (2 << 3) | LENGTH_DELIMITED
    bytes[at++] = inner
    return at
  }

  /** A span attribute whose value is a non-negative integer below 2^31; false when it is not. */
  countAttribute(keyField: Uint8Array, value: number): boolean {
    if (!(value >= 0 && value < 2 ** 31 && Number.isInteger(value))) return false
    const valueLength = value < 128 ? 1 : value < 16_384 ? 2 : value < 2_097_152 ? 3 : value < 268_435_456 ? 4 : 5
    // AnyValue: its tag, then the varint.
    let at = this.attributeHead(keyField, 1 + valueLength)
    if (at < 0) return false
    const bytes = this.bytes
    bytes[at++] = (3 << 3) | VARINT
    while (value > 127) {
      bytes[at++] = (value & 127) | 128
      value >>>= 7
    }
    bytes[at++] = value
    this.at = at
    return true
  }

  /** A span attribute whose value is an ASCII string short enough for one-byte lengths; false when it is not. */
  asciiAttribute(keyField: Uint8Array, value: string): boolean {
    const length = value.length
    let at = this.attributeHead(keyField, 2 + length)
    if (at < 0) return false
    const bytes = this.bytes
    bytes[at++] = (1 << 3) | LENGTH_DELIMITED
    bytes[at++] = length
    for (let index = 0; index < length; index++) {
      const code = value.charCodeAt(index)
      // Not ASCII: written the long way, over what was begun here.
      if (code >= 128) return false
      bytes[at++] = code
    }
    this.at = at
    return true
  }

  keyValues(field: number, entries: Iterable<readonly [string, unknown]>): void {
    for (const [key, value] of entries) this.keyValue(field, key, value)
  }

  /** An id given as 32-bit words, each written high byte first (as its hex reads). */
  wordsField(field: number, words: ArrayLike<number>): void {
    this.tag(field, LENGTH_DELIMITED)
    this.room(1 + words.length * 4)
    const bytes = this.bytes
    let at = this.at
    bytes[at++] = words.length * 4
    for (let index = 0; index < words.length; index++) {
      const word = words[index]!
      bytes[at++] = word >>> 24
      bytes[at++] = (word >>> 16) & 255
      bytes[at++] = (word >>> 8) & 255
      bytes[at++] = word & 255
    }
    this.at = at
  }

  /** A fixed64 field given as its high and low 32 bits. */
  fixed64Parts(field: number, high: number, low: number): void {
    this.tag(field, FIXED64)
    this.room(8)
    this.view.setUint32(this.at, low, true)
    this.view.setUint32(this.at + 4, high, true)
    this.at += 8
  }

  /** A span's start and end (fields 7 and 8), as words when it has them. */
  times(span: Ended): void {
    const { startHigh, startLow, endHigh, endLow } = span
    if (startHigh !== undefined && startLow !== undefined && endHigh !== undefined && endLow !== undefined) {
      this.fixed64Parts(7, startHigh, startLow)
      this.fixed64Parts(8, endHigh, endLow)
    } else {
      this.fixed64Field(7, span.startTime)
      this.fixed64Field(8, span.endTime)
    }
  }

  /** A trace id, as words when it has them. */
  traceField(span: Pick<Ended, "traceId" | "traceWords">): void {
    if (span.traceWords !== undefined) this.wordsField(1, span.traceWords)
    else {
      const traceId = span.traceId
      this.hexField(1, traceId.length < 32 ? traceId.padStart(32, "0") : traceId)
    }
  }

  /**
   * A step, written as `span` writes the span it stands for (no events, no links). A step that succeeded with one
   * attribute of a string or boolean (all but bound's) is its ids and times between bytes written once: its name
   * and kind before, its attribute and status after.
   */
  step(step: Step): void {
    const pairs = step.pairs
    const parent = step.parent
    const traceWords = parent.traceWords
    if (step.outcome !== undefined || traceWords === undefined) return this.anyStep(step)
    const tail = pairs.length === 2 ? tailOf(step.name, pairs[0] as string, pairs[1]) : undefined
    const head = headOf(step.name)
    if (tail === undefined) return head.length > MAX_STEP_PARTS ? this.anyStep(step) : this.succeededStep(step, head, traceWords)
    // Written whole below only when its length fits in two bytes (names and keys are the settler's own, short).
    if (head.length + tail.length > MAX_STEP_PARTS) return this.anyStep(step)
    // Trace id, span id and parent id fields (18 + 10 + 10 bytes), the head, two times (9 bytes each), the tail.
    const length = 38 + head.length + 18 + tail.length
    this.room(length + 3)
    const bytes = this.bytes
    let at = this.at
    bytes[at++] = (2 << 3) | LENGTH_DELIMITED
    if (length < 128) bytes[at++] = length
    else {
      bytes[at++] = (length & 127) | 128
      bytes[at++] = length >>> 7
    }
    at = this.stepHead(at, step, head, traceWords)
    for (let index = 0; index < tail.length; index++) bytes[at++] = tail[index]!
    this.at = at
  }

  /**
   * Writes at `at` (room made) what every step written whole starts with: its trace, span and parent ids, `head`
   * (its name and kind), its two times; answers where it ends.
   */
  stepHead(at: number, step: Step, head: Uint8Array, traceWords: readonly [number, number, number, number]): number {
    const bytes = this.bytes
    bytes[at++] = (1 << 3) | LENGTH_DELIMITED
    bytes[at++] = 16
    at = putWord(bytes, at, traceWords[0])
    at = putWord(bytes, at, traceWords[1])
    at = putWord(bytes, at, traceWords[2])
    at = putWord(bytes, at, traceWords[3])
    bytes[at++] = (2 << 3) | LENGTH_DELIMITED
    bytes[at++] = 8
    at = putWord(bytes, at, step.spanWords[0])
    at = putWord(bytes, at, step.spanWords[1])
    bytes[at++] = (4 << 3) | LENGTH_DELIMITED
    bytes[at++] = 8
    at = putWord(bytes, at, step.parent.spanWords[0])
    at = putWord(bytes, at, step.parent.spanWords[1])
    for (let index = 0; index < head.length; index++) bytes[at++] = head[index]!
    bytes[at++] = (7 << 3) | FIXED64
    this.view.setUint32(at, step.startLow, true)
    this.view.setUint32(at + 4, step.startHigh, true)
    at += 8
    bytes[at++] = (8 << 3) | FIXED64
    this.view.setUint32(at, step.endLow, true)
    this.view.setUint32(at + 4, step.endHigh, true)
    at += 8
    return at
  }

  /**
   * A step that succeeded with any attributes (bound's three): its ids, name and times as a step written whole
   * writes them, its attributes one by one, its status as every success's.
   */
  succeededStep(step: Step, head: Uint8Array, traceWords: readonly [number, number, number, number]): void {
    const message = this.begin(2)
    this.room(38 + head.length + 18)
    this.at = this.stepHead(this.at, step, head, traceWords)
    const pairs = step.pairs
    for (let index = 0; index < pairs.length; index += 2) this.keyValue(9, pairs[index] as string, pairs[index + 1])
    this.copy(SUCCEEDED_STATUS)
    this.end(message)
  }

  /**
   * A span that succeeded with no events or links, its ids as words (a settle span, a tool's own): what `span`
   * writes, without working out how it ended.
   */
  succeededSpan(
    span: Ended,
    traceWords: readonly [number, number, number, number],
    spanWords: readonly [number, number],
    parentWords: readonly [number, number] | undefined,
  ): void {
    const message = this.begin(2)
    this.room(38)
    const bytes = this.bytes
    let at = this.at
    bytes[at++] = (1 << 3) | LENGTH_DELIMITED
    bytes[at++] = 16
    at = putWord(bytes, at, traceWords[0])
    at = putWord(bytes, at, traceWords[1])
    at = putWord(bytes, at, traceWords[2])
    at = putWord(bytes, at, traceWords[3])
    bytes[at++] = (2 << 3) | LENGTH_DELIMITED
    bytes[at++] = 8
    at = putWord(bytes, at, spanWords[0])
    at = putWord(bytes, at, spanWords[1])
    if (parentWords !== undefined) {
      bytes[at++] = (4 << 3) | LENGTH_DELIMITED
      bytes[at++] = 8
      at = putWord(bytes, at, parentWords[0])
      at = putWord(bytes, at, parentWords[1])
    }
    this.at = at
    this.knownString(5, span.name, NAMES)
    this.varintField(6, SPAN_KIND[span.kind])
    this.times(span)
    const pairs = span.pairs
    for (let index = 0; index < pairs.length; index += 2) this.keyValue(9, pairs[index] as string, pairs[index + 1])
    this.copy(SUCCEEDED_STATUS)
    this.end(message)
  }

  /** Any step, field by field. */
  anyStep(step: Step): void {
    const outcome = step.outcome ?? SUCCEEDED
    const message = this.begin(2)
    this.traceField(step.parent)
    this.wordsField(2, step.spanWords)
    this.wordsField(4, step.parent.spanWords)
    this.knownString(5, step.name, NAMES)
    this.varintField(6, SPAN_KIND.internal)
    this.fixed64Parts(7, step.startHigh, step.startLow)
    this.fixed64Parts(8, step.endHigh, step.endLow)
    const pairs = step.pairs
    for (let index = 0; index < pairs.length; index += 2) this.keyValue(9, pairs[index] as string, pairs[index + 1])
    if (outcome.interrupted) this.keyValue(9, "effect.fiber.interrupted", true)
    for (const error of outcome.errors) {
      const event = this.begin(11)
      this.fixed64Parts(1, step.endHigh, step.endLow)
      this.exception(error)
      this.end(event)
    }
    this.status(outcome)
    this.end(message)
  }

  /** An exception event's name and attributes. */
  exception(error: Outcome["errors"][number]): void {
    this.stringField(2, "exception")
    this.keyValue(3, "exception.type", error.name)
    this.keyValue(3, "exception.message", error.message)
    this.keyValue(3, "exception.stacktrace", error.stack ?? "No stack trace available")
  }

  status(outcome: Outcome): void {
    const status = this.begin(15)
    if (outcome.message !== undefined) this.stringField(2, outcome.message)
    this.varintField(3, outcome.code)
    this.end(status)
  }

  span(span: Ended): void {
    const traceWords = span.traceWords
    const spanWords = span.spanWords
    const parentWords = span.parentWords
    if (
      span.outcome === undefined &&
      traceWords !== undefined &&
      spanWords !== undefined &&
      (parentWords !== undefined || span.parentSpanId === undefined) &&
      span.events.length === 0 &&
      span.links.length === 0
    ) {
      return this.succeededSpan(span, traceWords, spanWords, parentWords)
    }
    const outcome = span.outcome ?? SUCCEEDED
    const message = this.begin(2)
    this.traceField(span)
    if (span.spanWords !== undefined) this.wordsField(2, span.spanWords)
    else this.hexField(2, span.spanId)
    if (parentWords !== undefined) this.wordsField(4, parentWords)
    else {
      const parentSpanId = span.parentSpanId
      if (parentSpanId !== undefined) this.hexField(4, parentSpanId)
    }
    this.knownString(5, span.name, NAMES)
    this.varintField(6, SPAN_KIND[span.kind])
    this.times(span)
    const pairs = span.pairs
    for (let index = 0; index < pairs.length; index += 2) this.keyValue(9, pairs[index] as string, pairs[index + 1])
    if (outcome.interrupted) this.keyValue(9, "effect.fiber.interrupted", true)
    for (const [name, time, attributes] of span.events) {
      const event = this.begin(11)
      this.fixed64Field(1, time)
      this.stringField(2, name)
      if (attributes !== undefined) this.keyValues(3, Object.entries(attributes))
      this.end(event)
    }
    for (const error of outcome.errors) {
      const event = this.begin(11)
      this.fixed64Field(1, span.endTime)
      this.exception(error)
      this.end(event)
    }
    for (const link of span.links) {
      const linked = this.begin(13)
      this.hexField(1, link.span.traceId.padStart(32, "0"))
      this.hexField(2, link.span.spanId)
      this.keyValues(4, Object.entries(link.attributes))
      this.end(linked)
    }
    this.status(outcome)
    this.end(message)
  }
}

/** A word (4 bytes, high byte first, as its hex reads) at `at`; where the next byte goes. */
const putWord = (bytes: Uint8Array, at: number, word: number): number => {
  bytes[at] = word >>> 24
  bytes[at + 1] = (word >>> 16) & 255
  bytes[at + 2] = (word >>> 8) & 255
  bytes[at + 3] = word & 255
  return at + 4
}

/** The status of a span that succeeded, as `Writer.status` writes it. */
const SUCCEEDED_STATUS = (() => {
  const writer = new Writer(16)
  writer.status(SUCCEEDED)
  return writer.bytes.slice(0, writer.at)
})()

/** A step's head and tail at most, in bytes, for it to be written whole (its length then fits in two bytes). */
const MAX_STEP_PARTS = 8_192

/** A step's name and kind fields, by name. */
const HEADS = new Map<string, Uint8Array>()
/** A step's attribute and status fields, by name, key and value, for steps that succeeded with one attribute. */
const TAILS = new Map<string, Map<string, Map<unknown, Uint8Array>>>()
let tailCount = 0

const headOf = (name: string): Uint8Array => {
  let head = HEADS.get(name)
  if (head === undefined) {
    const writer = new Writer(64 + name.length * 3)
    writer.stringField(5, name)
    writer.varintField(6, SPAN_KIND.internal)
    head = writer.bytes.slice(0, writer.at)
    if (HEADS.size < KNOWN_STRINGS) HEADS.set(name, head)
  }
  return head
}

/** The tail of a step that succeeded with the one attribute `key`: `value`; undefined for other values. */
const tailOf = (name: string, key: string, value: unknown): Uint8Array | undefined => {
  if (typeof value !== "boolean" && (typeof value !== "string" || value.length > SHORT_STRING)) return undefined
  let byKey = TAILS.get(name)
  if (byKey === undefined) {
    if (TAILS.size >= KNOWN_STRINGS) return undefined
    TAILS.set(name, (byKey = new Map()))
  }
  let byValue = byKey.get(key)
  if (byValue === undefined) byKey.set(key, (byValue = new Map()))
  let tail = byValue.get(value)
  if (tail === undefined) {
    if (tailCount >= KNOWN_STRINGS) return undefined
    const writer = new Writer(256)
    writer.keyValue(9, key, value)
    writer.status(SUCCEEDED)
    tail = writer.bytes.slice(0, writer.at)
    byValue.set(value, tail)
    tailCount++
  }
  return tail
}

/** Spans encoded as they end, waiting to be sent as one request body; the spans themselves are not kept. */
export interface Batch {
  readonly add: (span: Ended) => void
  readonly addStep: (step: Step) => void
  /** Spans added since the last `take`. */
  readonly count: () => number
  /** The request body of the spans added since the last `take`, and a fresh start. */
  readonly take: () => Uint8Array<ArrayBuffer> | string
}

const jsonReplacer = (_key: string, value: unknown) => (typeof value === "number" && !Number.isFinite(value) ? String(value) : value)

/** Bytes a length takes as a varint. */
const varintBytes = (value: number): number => {
  let count = 1
  for (let rest = value; rest > 127; rest = Math.floor(rest / 128)) count++
  return count
}

/**
 * A batch of spans in OTLP protobuf: each span's message written when it is added, after room left for the envelope;
 * the envelope written into that room when taken, so the body is the one buffer's bytes, copied once.
 */
const protobufBatch = (source: Source): Batch => {
  // ResourceSpans' resource (field 1) and ScopeSpans' scope (field 1), the same in every batch.
  const fixed = new Writer(1_024)
  const resource = fixed.begin(1)
  fixed.keyValues(1, Object.entries(source.resource))
  fixed.end(resource)
  const resourceEnd = fixed.at
  const scope = fixed.begin(1)
  fixed.stringField(1, source.scope.name)
  fixed.stringField(2, source.scope.version)
  fixed.end(scope)
  const resourcePart = fixed.bytes.slice(0, resourceEnd)
  const scopePart = fixed.bytes.slice(resourceEnd, fixed.at)
  // Two tags and two lengths (at most 5 bytes each) before the resource, and the same before the scope.
  const reserved = resourcePart.length + scopePart.length + 2 * (1 + 5)
  const spans = new Writer()
  spans.at = reserved
  let count = 0
  return {
    add: (span) => {
      spans.span(span)
      count++
    },
    addStep: (step) => {
      spans.step(step)
      count++
    },
    count: () => count,
    take: () => {
      const spansBytes = spans.at - reserved
      const scopeSpans = scopePart.length + spansBytes
      const resourceSpans = resourcePart.length + 1 + varintBytes(scopeSpans) + scopeSpans
      const start = reserved - (1 + varintBytes(resourceSpans) + resourcePart.length + 1 + varintBytes(scopeSpans) + scopePart.length)
      const end = spans.at
      spans.at = start
      spans.tag(1, LENGTH_DELIMITED)
      spans.varint(resourceSpans)
      spans.bytes.set(resourcePart, spans.at)
      spans.at += resourcePart.length
      spans.tag(2, LENGTH_DELIMITED)
      spans.varint(scopeSpans)
      spans.bytes.set(scopePart, spans.at)
      spans.at = reserved
      count = 0
      // The buffer is kept for the next batch: the body is a copy.
      return spans.bytes.slice(start, end)
    },
  }
}

/** A batch of spans in OTLP/JSON: each span's JSON made when it is added, the envelope when taken. */
const jsonBatch = (source: Source): Batch => {
  let spans: Array<string> = []
  const head = JSON.stringify(json([], source), jsonReplacer)
  // The envelope with its empty span list, split where the spans go.
  const at = head.indexOf('"spans":[]') + '"spans":['.length
  return {
    add: (span) => {
      spans.push(JSON.stringify(jsonSpan(span), jsonReplacer))
    },
    addStep: (step) => {
      spans.push(JSON.stringify(jsonSpan(endedOf(step)), jsonReplacer))
    },
    count: () => spans.length,
    take: () => {
      const body = `${head.slice(0, at)}${spans.join(",")}${head.slice(at)}`
      spans = []
      return body
    },
  }
}

export const batch = (protocol: "http/protobuf" | "http/json", source: Source): Batch =>
  protocol === "http/json" ? jsonBatch(source) : protobufBatch(source)

/** The batch as an OTLP protobuf `ExportTraceServiceRequest`. */
export const protobuf = (spans: ReadonlyArray<Ended>, source: Source): Uint8Array<ArrayBuffer> => {
  const one = protobufBatch(source)
  for (const span of spans) one.add(span)
  return one.take() as Uint8Array<ArrayBuffer>
}
