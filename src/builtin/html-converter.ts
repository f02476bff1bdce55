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
import { OwnExecutable } from "../shell/own-executable"
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
 * How long a page may wait for its turn: a flood of slow pages is refused, not waited out by every other call. A
 * little longer than one conversion may take, so that a page whose session has none converting is given the first
 * turn that comes (see `next`), however many pages of another session wait.
 */
export const WAIT_MS = BUDGET_MS + 1_000

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

interface Converter {
  readonly process: Bun.Subprocess
  /** Takes the next answer the process sends. */
  answer: ((outcome: Outcome) => void) | undefined
}

/** The converter kept for the next page, while no page is converting in it. */
let idle: Converter | undefined
/** A page waiting for its turn: whose it is (a session), and how it starts or gives up. */
interface Waiting {
  readonly party: string
  readonly start: () => void
  readonly refuse: () => void
}

/** Conversions running, by party, and those waiting for one to end, in the order they came. */
let running = 0
const runningBy = new Map<string, number>()
const waiting: Array<Waiting> = []

const count = (party: string): number => runningBy.get(party) ?? 0

const run = (party: string) => {
  running++
  runningBy.set(party, count(party) + 1)
}

const waitingOf = (party: string): number => {
  let found = 0
  for (const one of waiting) if (one.party === party) found++
  return found
}

/**
 * Who takes a turn that came free: the page waiting longest of the parties with the fewest conversions running, so
 * one session's flood of pages takes turns with the others' pages instead of ahead of them.
 */
const next = (): Waiting | undefined => {
  let chosen = -1
  for (let index = 0; index < waiting.length; index++) {
    if (chosen === -1 || count(waiting[index]!.party) < count(waiting[chosen]!.party)) chosen = index
  }
  return chosen === -1 ? undefined : waiting.splice(chosen, 1)[0]
}

/**
 * Room for a page of `party` to wait when MAX_WAITING already do: the newest page of the party with the most pages
 * waiting gives its place up (it fails as busy) when that party has more waiting than `party` would; else none.
 */
const makeRoom = (party: string): boolean => {
  let crowded: string | undefined
  let most = 0
  for (const one of waiting) {
    const many = waitingOf(one.party)
    if (many > most) [crowded, most] = [one.party, many]
  }
  if (crowded === undefined || crowded === party || most <= waitingOf(party) + 1) return false
  for (let index = waiting.length - 1; index >= 0; index--) {
    if (waiting[index]!.party === crowded) {
      waiting.splice(index, 1)[0]!.refuse()
      return true
    }
  }
  return false
}

const started = (): Converter => {
  const converter: Converter = { process: undefined as never, answer: undefined }
  const child = Bun.spawn([...OwnExecutable.argv(join(import.meta.dir, "html-launch.ts")), LAUNCH], {
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

/**
 * Resolves once a conversion of `party`'s may start; "cancelled" when `signal` ended the wait, "busy" when it waited
 * past WAIT_MS or had no room to wait.
 */
const turn = (signal: AbortSignal | undefined, party: string): Promise<"go" | "cancelled" | "busy"> => {
  if (signal?.aborted === true) return Promise.resolve("cancelled")
  if (running < MAX_PROCESSES) {
    run(party)
    return Promise.resolve("go")
  }
  if (waiting.length >= MAX_WAITING && !makeRoom(party)) return Promise.resolve("busy")
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener("abort", cancelled)
    }
    const leave = (why: "cancelled" | "busy") => () => {
      done()
      const at = waiting.indexOf(one)
      if (at !== -1) waiting.splice(at, 1)
      resolve(why)
    }
    const cancelled = leave("cancelled")
    const timer = setTimeout(leave("busy"), WAIT_MS)
    const one: Waiting = {
      party,
      start: () => {
        done()
        run(party)
        resolve("go")
      },
      refuse: () => {
        done()
        resolve("busy")
      },
    }
    waiting.push(one)
    signal?.addEventListener("abort", cancelled, { once: true })
  })
}

/** A conversion of `party`'s ended (its process answered, or has exited): the next one waiting starts. */
const ended = (party: string) => {
  running--
  const left = count(party) - 1
  if (left > 0) runningBy.set(party, left)
  else runningBy.delete(party)
  next()?.start()
}

/** How a conversion is run: whose page it is (turns are shared fairly between parties), and its bounds. */
export interface Options {
  /** The call's cancellation: ends the conversion at once, or its wait. */
  readonly signal?: AbortSignal
  /** Whose page it is (a session): while pages wait, turns go first to the parties with the fewest converting. */
  readonly party?: string
  /** How long it may take from when its turn comes. */
  readonly budgetMs?: number
  /** The most memory its process may take. */
  readonly maxBytes?: number
}

/** Converts `order` in a process of its own, within its budget from when its turn comes (see MAX_PROCESSES). */
export const convert = async (order: Order, options: Options = {}): Promise<Outcome> => {
  const { signal, party = "" } = options
  const given = await turn(signal, party)
  if (given === "cancelled") return CANCELLED
  if (given === "busy") return { kind: "busy" }
  try {
    return await converted(order, signal, options.budgetMs ?? BUDGET_MS, options.maxBytes ?? MAX_CONVERTER_BYTES)
  } finally {
    ended(party)
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
