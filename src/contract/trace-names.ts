export * as TraceNames from "./trace-names"

// The names a settle's spans carry (DESIGN §15, docs/operating.md "Traces"), as operators query them: the settle
// span's name and its attributes, shared by the settler that says them (settlement/spans.ts) and the exporter that
// writes them compactly and reads them back (host/otlp-record.ts, otlp-read.ts).

/** What a settle span is named. */
export const SETTLE = "Settler.settle"
/** A settle span's attributes: of its call, from its start (in this order). */
export const TOOL = "core.tool"
export const SESSION = "core.session"
export const CALL = "core.call"
export const AGENT = "core.agent"
export const MESSAGE = "core.message"
export const INPUT_BYTES = "core.input.bytes"
/** And of how it settled, at its end (`core.error.kind` only for an error), when it settled. */
export const STATUS = "core.status"
export const ERROR_KIND = "core.error.kind"
export const REPLAYED = "core.replayed"
export const OUTPUT_BYTES = "core.output.bytes"
