export * as HtmlThread from "./html-thread"

// HTML converted to markdown or text on a thread of its own (./html-worker), within a time budget. Turndown and the
// DOM take time quadratic in some markup (lists or quotes nested hundreds deep: a 40 KB page took 20 s to convert to
// markdown), and on the thread that settles calls they would stall every other call of a `core serve` for as long:
// a page is the web's, not the user's. A conversion past the budget, or of a call cancelled meanwhile, ends its
// thread (the next page gets a new one); a thread that converted is kept for the next page while it idles, and never
// keeps core running.

import type { HtmlConvert } from "./html-convert"
import type { WebPage } from "./web-page"

/** How long one page may take to convert. */
export const BUDGET_MS = 10_000

/** What converting a page came to. */
export type Outcome =
  | { readonly kind: "converted"; readonly converted: HtmlConvert.Converted }
  /** Markup nested too deeply for the converters' recursive walks (a stack overflow). */
  | { readonly kind: "deep" }
  /** Not converted within the budget. */
  | { readonly kind: "slow" }
  /** The converter threw otherwise, or its thread failed. */
  | { readonly kind: "failed"; readonly message: string }

/** What the thread is given. */
export interface Order {
  readonly html: string
  readonly url: string
  readonly format: Exclude<WebPage.Format, "html">
}

/**
 * How many pages convert at once, each on a thread of its own (a thread holds its page's DOM, tens of times the
 * page's size): more wait their turn, so calls fetching many large pages at once cannot exhaust memory.
 */
export const MAX_THREADS = 2

/** The thread kept for the next page, while no page is converting on it. */
let idle: Worker | undefined
/** Conversions running, and those waiting for one to end. */
let running = 0
const waiting: Array<() => void> = []

/** Resolves once a conversion may start (at once while fewer than MAX_THREADS run); false when `signal` ended the wait. */
const turn = (signal: AbortSignal | undefined): Promise<boolean> => {
  if (signal?.aborted === true) return Promise.resolve(false)
  if (running < MAX_THREADS) {
    running++
    return Promise.resolve(true)
  }
  return new Promise((resolve) => {
    const start = () => {
      signal?.removeEventListener("abort", gone)
      running++
      resolve(true)
    }
    const gone = () => {
      waiting.splice(waiting.indexOf(start), 1)
      resolve(false)
    }
    waiting.push(start)
    signal?.addEventListener("abort", gone, { once: true })
  })
}

/** A conversion ended: the next one waiting starts. */
const ended = () => {
  running--
  waiting.shift()?.()
}

const started = (): Worker => {
  // A module of its own, an entry point of the built executable too (named as the bundler finds it: in the call).
  const worker = new Worker(new URL("./html-worker.ts", import.meta.url).href)
  worker.unref()
  return worker
}

/**
 * Converts `order` on a thread, within `budgetMs` from when its turn comes (see MAX_THREADS); `signal` (the call's
 * cancellation) ends it at once, or its wait.
 */
export const convert = async (order: Order, signal?: AbortSignal, budgetMs: number = BUDGET_MS): Promise<Outcome> => {
  if (!(await turn(signal))) return { kind: "failed", message: "cancelled" }
  try {
    return await converted(order, signal, budgetMs)
  } finally {
    ended()
  }
}

const converted = (order: Order, signal: AbortSignal | undefined, budgetMs: number): Promise<Outcome> =>
  new Promise((resolve) => {
    const worker = idle ?? started()
    idle = undefined
    let done = false
    const finish = (outcome: Outcome, reusable: boolean) => {
      if (done) return
      done = true
      clearTimeout(timer)
      signal?.removeEventListener("abort", cancelled)
      worker.onmessage = null
      worker.onerror = null
      if (reusable && idle === undefined) idle = worker
      else void worker.terminate()
      resolve(outcome)
    }
    const cancelled = () => finish({ kind: "failed", message: "cancelled" }, false)
    // The timer keeps core running while the page converts (the thread does not).
    const timer = setTimeout(() => finish({ kind: "slow" }, false), budgetMs)
    worker.onmessage = (event: MessageEvent<Outcome>) => finish(event.data, true)
    worker.onerror = (event) => finish({ kind: "failed", message: event.message }, false)
    signal?.addEventListener("abort", cancelled, { once: true })
    worker.postMessage(order)
  })
