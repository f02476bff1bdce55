export * as HtmlConverter from "./html-converter"

// HTML converted to markdown or text in a process of its own (./html-child), within a time budget. Turndown and the
// DOM take time quadratic in some markup (lists or quotes nested hundreds deep: a 40 KB page took 20 s to convert to
// markdown; a single regular expression of turndown's ran for minutes on a long run of spaces), and on the thread
// that settles calls they would stall every other call of a `core serve`: a page is the web's, not the user's. A
// process, unlike a thread, can be ended in the middle of a regular expression: a conversion past its budget, or of
// a call cancelled meanwhile, ends with its process (SIGKILL), and its memory with it; the next page gets a new one.
// A process that converted is kept for the next page while it idles, and never keeps core running.

import { readFileSync } from "node:fs"
import { join } from "node:path"
import type { HtmlConvert } from "./html-convert"
import { LAUNCH } from "./html-launch"
import type { WebPage } from "./web-page"

/** How long one page may take to convert, from its turn. */
export const BUDGET_MS = 10_000

/**
 * How many pages convert at once, each in a process of its own (which holds its page's DOM, tens of times the
 * page's size): more wait their turn, so calls fetching many large pages at once cannot exhaust memory.
 */
export const MAX_PROCESSES = 2

/**
 * The most memory a converter may take (resident, checked every CHECK_MS): past it, it is ended and the page fails
 * saying so, rather than the machine running short (a 4 MB page of headings took 1.6 GB; two convert at once).
 */
export const MAX_CONVERTER_BYTES = 2 * 1024 * 1024 * 1024
const CHECK_MS = 100

/** A process's resident memory in bytes, from /proc; undefined where it cannot be read. */
const residentOf = (pid: number): number | undefined => {
  try {
    const kib = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]
    return kib === undefined ? undefined : Number(kib) * 1024
  } catch {
    return undefined
  }
}

/** How many may wait for a turn; past them a page is refused at once. */
export const MAX_WAITING = 32

/**
 * How long a page may wait for its turn (as long as one conversion may take): a flood of slow pages is refused, not
 * waited out by every other call.
 */
export const WAIT_MS = 10_000

/** What converting a page came to. */
export type Outcome =
  | { readonly kind: "converted"; readonly converted: HtmlConvert.Converted }
  /** Markup nested too deeply for the converters' recursive walks (a stack overflow). */
  | { readonly kind: "deep" }
  /** Not converted within the budget. */
  | { readonly kind: "slow" }
  /** Not converted: other pages held every turn past WAIT_MS, or MAX_WAITING already waited. */
  | { readonly kind: "busy" }
  /** The converter failed otherwise: threw, ran out of memory, or its process ended without an answer. */
  | { readonly kind: "failed"; readonly message: string }

/** What the converter is given. */
export interface Order {
  readonly html: string
  readonly url: string
  readonly format: Exclude<WebPage.Format, "html">
}

const CANCELLED: Outcome = { kind: "failed", message: "cancelled" }

/** Whether this process is the compiled executable (its modules live in Bun's embedded file system). */
const compiled = (): boolean => import.meta.path.startsWith("/$bunfs/")

interface Converter {
  readonly process: Bun.Subprocess
  /** Takes the next answer the process sends. */
  answer: ((outcome: Outcome) => void) | undefined
}

/** The converter kept for the next page, while no page is converting in it. */
let idle: Converter | undefined
/** Conversions running, and those waiting for one to end. */
let running = 0
const waiting: Array<() => void> = []

const started = (): Converter => {
  const converter: Converter = { process: undefined as never, answer: undefined }
  const child = Bun.spawn(compiled() ? [process.execPath, LAUNCH] : [process.execPath, join(import.meta.dir, "html-launch.ts"), LAUNCH], {
    // Nothing of core's environment (its secrets) reaches it: it converts text.
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "ignore",
    serialization: "json",
    ipc: (outcome: Outcome) => converter.answer?.(outcome),
  })
  ;(converter as { process: Bun.Subprocess }).process = child
  void child.exited.then(() => {
    if (idle === converter) idle = undefined
    converter.answer?.({ kind: "failed", message: "the converter stopped (out of memory, or killed) before it answered" })
  })
  return converter
}

/** Resolves once a conversion may start; false when `signal` ended the wait, or it waited past WAIT_MS. */
const turn = (signal: AbortSignal | undefined): Promise<"go" | "cancelled" | "busy"> => {
  if (signal?.aborted === true) return Promise.resolve("cancelled")
  if (running < MAX_PROCESSES) {
    running++
    return Promise.resolve("go")
  }
  if (waiting.length >= MAX_WAITING) return Promise.resolve("busy")
  return new Promise((resolve) => {
    const leave = (why: "cancelled" | "busy") => () => {
      clearTimeout(timer)
      signal?.removeEventListener("abort", cancelled)
      const at = waiting.indexOf(start)
      if (at !== -1) waiting.splice(at, 1)
      resolve(why)
    }
    const cancelled = leave("cancelled")
    const timer = setTimeout(leave("busy"), WAIT_MS)
    const start = () => {
      clearTimeout(timer)
      signal?.removeEventListener("abort", cancelled)
      running++
      resolve("go")
    }
    waiting.push(start)
    signal?.addEventListener("abort", cancelled, { once: true })
  })
}

/** A conversion ended (its process answered, or has exited): the next one waiting starts. */
const ended = () => {
  running--
  waiting.shift()?.()
}

/**
 * Converts `order` in a process of its own, within `budgetMs` from when its turn comes (see MAX_PROCESSES);
 * `signal` (the call's cancellation) ends it at once, or its wait.
 */
export const convert = async (
  order: Order,
  signal?: AbortSignal,
  budgetMs: number = BUDGET_MS,
  maxBytes: number = MAX_CONVERTER_BYTES,
): Promise<Outcome> => {
  const given = await turn(signal)
  if (given === "cancelled") return CANCELLED
  if (given === "busy") return { kind: "busy" }
  try {
    return await converted(order, signal, budgetMs, maxBytes)
  } finally {
    ended()
  }
}

const converted = (order: Order, signal: AbortSignal | undefined, budgetMs: number, maxBytes: number): Promise<Outcome> =>
  new Promise((resolve) => {
    const converter = idle ?? started()
    idle = undefined
    converter.process.ref()
    let done = false
    const finish = async (outcome: Outcome, reusable: boolean) => {
      if (done) return
      done = true
      clearTimeout(timer)
      clearInterval(watch)
      signal?.removeEventListener("abort", cancelled)
      converter.answer = undefined
      if (reusable && idle === undefined && converter.process.exitCode === null) {
        converter.process.unref()
        idle = converter
      } else {
        // Ended whatever it is doing (a regular expression a thread could not be stopped in): its turn is free, and
        // its memory, once it has gone.
        converter.process.kill("SIGKILL")
        await converter.process.exited
      }
      resolve(outcome)
    }
    const cancelled = () => void finish(CANCELLED, false)
    const timer = setTimeout(() => void finish({ kind: "slow" }, false), budgetMs)
    const watch = setInterval(() => {
      const resident = residentOf(converter.process.pid)
      if (resident !== undefined && resident > maxBytes) {
        void finish({ kind: "failed", message: `converting it took more than ${Math.round(maxBytes / 1024 ** 2)} MiB of memory` }, false)
      }
    }, CHECK_MS)
    converter.answer = (outcome) => void finish(outcome, outcome.kind === "converted")
    signal?.addEventListener("abort", cancelled, { once: true })
    try {
      converter.process.send(order)
    } catch {
      void finish({ kind: "failed", message: "the converter could not be given the page" }, false)
    }
  })
