export * as OtlpRead from "./otlp-read"

// Records (./otlp-record) read back on the sending thread into the spans they stand for, added to a request body in
// the order they were written (./otlp-wire): a settle's header kept for the records of the chunk that name it, its
// steps placed from its start and given a span id drawn here, its call's attributes said with their keys. A chunk that
// is not records, or is cut short, is refused whole.

import type * as Tracer from "effect/Tracer"
import { OtlpRecord } from "./otlp-record"
import { OtlpWire } from "./otlp-wire"

/** A settle's header, as read back: the parent of its steps. */
class Header {
  constructor(
    readonly traceWords: readonly [number, number, number, number] | undefined,
    readonly traceHex: string | undefined,
    readonly spanWords: readonly [number, number],
    readonly parentWords: readonly [number, number] | undefined,
    readonly parentHex: string | undefined,
    readonly startHigh: number,
    readonly startLow: number,
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
    return BigInt(this.startHigh) * BigInt(OtlpRecord.TWO_TO_32) + BigInt(this.startLow)
  }

  get endTime(): bigint {
    return BigInt(this.endHigh) * BigInt(OtlpRecord.TWO_TO_32) + BigInt(this.endLow)
  }
}

/** Reads records written by `Records` from one chunk. */
class Reader {
  private at = 0
  private readonly view: DataView
  /** The same bytes, whose strings are read without a view made of each (cheaper than a TextDecoder). */
  private readonly text: Buffer

  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    this.text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
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
    const value = this.text.toString("utf8", this.at, this.at + length)
    this.at += length
    return value
  }

  key(): string {
    const place = this.byte()
    if (place === OtlpRecord.OTHER) return this.string()
    const known = OtlpRecord.KNOWN[place]
    if (known === undefined) throw new RangeError(`no string is known as ${place}`)
    return known
  }

  /** A float64. */
  number(): number {
    const value = this.view.getFloat64(this.at, true)
    this.at += 8
    return value
  }

  value(): unknown {
    const tag = this.byte()
    switch (tag) {
      case OtlpRecord.STRING:
        return this.string()
      case OtlpRecord.KNOWN_STRING: {
        const known = OtlpRecord.KNOWN[this.byte()]
        if (known === undefined) throw new RangeError("no such string is known")
        return known
      }
      case OtlpRecord.TRUE:
        return true
      case OtlpRecord.FALSE:
        return false
      case OtlpRecord.NUMBER:
        return this.number()
      case OtlpRecord.BIGINT:
        return BigInt(this.string())
      case OtlpRecord.ARRAY: {
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

  parent(): { readonly words: readonly [number, number] | undefined; readonly hex: string | undefined } {
    const form = this.byte()
    return { words: form === 1 ? [this.word(), this.word()] : undefined, hex: form === 2 ? this.string() : undefined }
  }

  /** Attributes as key, value, key, value. */
  pairs(count: number): Array<unknown> {
    const pairs: Array<unknown> = []
    for (; count > 0; count--) pairs.push(this.key(), this.value())
    return pairs
  }

  events(): OtlpWire.Ended["events"] {
    const events: Array<[string, bigint, Record<string, unknown> | undefined]> = []
    for (let count = this.word(); count > 0; count--) {
      const eventName = this.string()
      const time = BigInt(this.word()) * BigInt(OtlpRecord.TWO_TO_32) + BigInt(this.word())
      events.push([eventName, time, this.byte() === 1 ? this.entries() : undefined])
    }
    return events
  }

  links(): Array<Tracer.SpanLink> {
    const links: Array<Tracer.SpanLink> = []
    for (let count = this.word(); count > 0; count--) {
      const traceId = this.string()
      const spanId = this.string()
      // Only its ids are written.
      const span = { _tag: "ExternalSpan", traceId, spanId, sampled: true } as Tracer.ExternalSpan
      links.push({ span, attributes: this.entries() })
    }
    return links
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

/** The settle span of `header`, ended. */
const settleOf = (
  header: Header,
  endHigh: number,
  endLow: number,
  pairs: ReadonlyArray<unknown>,
  events: OtlpWire.Ended["events"],
  links: ReadonlyArray<Tracer.SpanLink>,
  outcome: OtlpWire.Outcome | undefined,
): ReadSpan =>
  new ReadSpan(
    OtlpRecord.SETTLE,
    "internal",
    header.traceWords,
    header.traceHex,
    header.spanWords,
    undefined,
    header.parentWords,
    header.parentHex,
    header.startHigh,
    header.startLow,
    endHigh,
    endLow,
    pairs,
    events,
    links,
    outcome,
  )

/** Adds the records of `chunk` to `batch`, in order; how many were added. Throws on a chunk that is not records. */
export const addTo = (chunk: Uint8Array, batch: OtlpWire.Batch): number => {
  const reader = new Reader(chunk)
  const headers: Array<Header> = []
  const headerOf = (place: number): Header => {
    const header = headers[place]
    if (header === undefined) throw new RangeError(`no settle is at ${place} in the chunk`)
    return header
  }
  // A step filled in afresh for each step read (the batch encodes it at once).
  const step: OtlpWire.Step = {
    name: "",
    parent: new Header(undefined, "", [0, 0], undefined, undefined, 0, 0),
    spanWords: [0, 0],
    startHigh: 0,
    startLow: 0,
    endHigh: 0,
    endLow: 0,
    outcome: undefined,
    pairs: [],
  }
  const time: OtlpRecord.Words = { high: 0, low: 0 }
  let count = 0
  while (reader.more()) {
    const kind = reader.byte()
    if (kind === OtlpRecord.HEADER) {
      const trace = reader.trace()
      const spanWords: [number, number] = [reader.word(), reader.word()]
      const parent = reader.parent()
      headers.push(new Header(trace.words, trace.hex, spanWords, parent.words, parent.hex, reader.word(), reader.word()))
      continue
    }
    if (kind === OtlpRecord.STEP) {
      const header = headerOf(reader.word())
      step.parent = header
      step.spanWords[0] = OtlpRecord.randomWord()
      step.spanWords[1] = OtlpRecord.randomWord()
      step.name = reader.key()
      OtlpRecord.after(header.startHigh, header.startLow, reader.number(), time)
      step.startHigh = time.high
      step.startLow = time.low
      OtlpRecord.after(header.startHigh, header.startLow, reader.number(), time)
      step.endHigh = time.high
      step.endLow = time.low
      step.outcome = reader.outcome()
      const pairs = step.pairs
      pairs.length = 0
      for (let attributes = reader.byte(); attributes > 0; attributes--) pairs.push(reader.key(), reader.value())
      batch.addStep(step)
    } else if (kind === OtlpRecord.SETTLED) {
      const header = headerOf(reader.word())
      const endHigh = reader.word()
      const endLow = reader.word()
      const pairs = reader.pairs(reader.word())
      batch.add(settleOf(header, endHigh, endLow, pairs, reader.events(), reader.links(), reader.outcome()))
    } else if (kind === OtlpRecord.CALL_SETTLED) {
      const header = headerOf(reader.word())
      const endHigh = reader.word()
      const endLow = reader.word()
      const pairs: Array<unknown> = [OtlpRecord.TOOL, reader.string(), OtlpRecord.SESSION, reader.string(), OtlpRecord.CALL, reader.string(), OtlpRecord.AGENT, reader.string(), OtlpRecord.MESSAGE, reader.string()]
      pairs.push(OtlpRecord.INPUT_BYTES, reader.number())
      const settled = reader.byte()
      if (settled !== 0) {
        pairs.push(OtlpRecord.STATUS, reader.value())
        if (settled === 2) pairs.push(OtlpRecord.ERROR_KIND, reader.value())
        pairs.push(OtlpRecord.REPLAYED, reader.byte() === OtlpRecord.TRUE, OtlpRecord.OUTPUT_BYTES, reader.number())
      }
      batch.add(settleOf(header, endHigh, endLow, pairs, reader.events(), reader.links(), reader.outcome()))
    } else if (kind === OtlpRecord.SPAN) {
      const name = reader.string()
      const spanKind = OtlpRecord.KINDS[reader.byte()] ?? "internal"
      const trace = reader.trace()
      const spanForm = reader.byte()
      const spanWords: [number, number] | undefined = spanForm === 0 ? [reader.word(), reader.word()] : undefined
      const spanHex = spanForm === 1 ? reader.string() : undefined
      const parent = reader.parent()
      const startHigh = reader.word()
      const startLow = reader.word()
      const endHigh = reader.word()
      const endLow = reader.word()
      const pairs = reader.pairs(reader.word())
      const events = reader.events()
      const links = reader.links()
      const outcome = reader.outcome()
      batch.add(
        new ReadSpan(name, spanKind, trace.words, trace.hex, spanWords, spanHex, parent.words, parent.hex, startHigh, startLow, endHigh, endLow, pairs, events, links, outcome),
      )
    } else throw new RangeError(`no record is of kind ${kind}`)
    count++
  }
  return count
}
