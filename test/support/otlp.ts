// A span as an OTLP/HTTP JSON body carries it, for the tests that read what a local receiver got; and ended spans as
// the encoder takes them, for the tests of the encoding and of the records it is made from.

import type * as Tracer from "effect/Tracer"
import type { OtlpWire } from "../../src/host/otlp-wire"

export interface JsonSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
  readonly events?: ReadonlyArray<{ readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }> }>
}

/** An ended span with fixed ids and times, `overrides` aside. */
export const ended = (overrides: Partial<OtlpWire.Ended> & Pick<OtlpWire.Ended, "name">): OtlpWire.Ended => ({
  kind: "internal",
  traceId: "0af7651916cd43dd8448eb211c80319c",
  spanId: "b7ad6b7169203331",
  parentSpanId: undefined,
  startTime: 1_764_000_000_000_000_000n,
  endTime: 1_764_000_000_000_123_456n,
  pairs: [],
  events: [],
  links: [],
  outcome: undefined,
  ...overrides,
})

/** A span of another process (a link's target, a remote parent). */
export const external = (traceId: string, spanId: string): Tracer.ExternalSpan =>
  ({ _tag: "ExternalSpan", traceId, spanId, sampled: true, annotations: undefined as never }) as Tracer.ExternalSpan

/** The ids of `ended`'s trace and of a span in it, with the 32-bit words the records keep them as. */
export const WORDS = { traceWords: [0x0af76519, 0x16cd43dd, 0x8448eb21, 0x1c80319c], spanId: "00f067aa0ba902b7", spanWords: [0x00f067aa, 0x0ba902b7] } as const
/** A parent span's id, with its words. */
export const UNDER = { parentSpanId: "b7ad6b7169203331", parentWords: [0xb7ad6b71, 0x69203331] } as const
