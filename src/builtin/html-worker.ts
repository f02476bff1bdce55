export * as HtmlWorker from "./html-worker"

// The thread webfetch converts HTML on (started by ./html-thread): one page at a time, answered with what it came
// to. The converters walk the document recursively: markup nested thousands deep overflows the stack, a RangeError.

import { HtmlConvert } from "./html-convert"
import type { HtmlThread } from "./html-thread"

/** This thread as a worker sees itself: its messages, and how it answers. */
const port = globalThis as unknown as {
  onmessage: (event: MessageEvent<HtmlThread.Order>) => void
  postMessage: (message: HtmlThread.Outcome) => void
}

port.onmessage = ({ data: { html, url, format } }) => {
  let outcome: HtmlThread.Outcome
  try {
    outcome = { kind: "converted", converted: HtmlConvert.convert(html, url, format) }
  } catch (error) {
    outcome = error instanceof RangeError ? { kind: "deep" } : { kind: "failed", message: error instanceof Error ? error.message : String(error) }
  }
  port.postMessage(outcome)
}
