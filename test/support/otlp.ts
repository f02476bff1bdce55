// A span as an OTLP/HTTP JSON body carries it, for the tests that read what a local receiver got.

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
