export * as OtlpSender from "./otlp-sender"

// Sends OTLP request bodies (made by ./otlp) to the endpoint: at most MAX_IN_FLIGHT requests at once, each within a
// timeout, gzipped when asked; a failed request drops its body and pauses sending for a while (a Retry-After up to a
// minute is honoured). A body's spans leave the queue when its request starts (or when it is dropped unsent): the
// queue's bound counts those waiting, as OpenTelemetry's batch processor does, and MAX_IN_FLIGHT bounds the rest. It runs on a thread of its own once the exporter has a body to send while calls run, so that
// no request is made, compressed or answered on the thread that settles calls; at exit, when no thread was started
// (a short command), on the calling thread. The same code both ways: `make` (the thread, ./otlp-worker, runs it on
// the bodies it makes) says what became of each body through `report`, and when its spans left the queue through `left`;
// the exporter keeps the counts.

import type { OtlpWire } from "./otlp-wire"

/** What the sender is told once. */
export interface Options {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly gzip: boolean
  /** How long one request may take (OTEL_EXPORTER_OTLP_TIMEOUT when it asks for more than REQUEST_TIMEOUT_MS). */
  readonly timeoutMs?: number
}

/** The longest wait a timer can take: more fires at once (and a wait loop spins). */
const MAX_TIMER_MS = 2_147_483_647

/** How long one request may take, unless the options say longer. */
export const REQUEST_TIMEOUT_MS = 10_000

/** What became of one body's spans (sent, or dropped), and until when sending pauses (0: it does not). */
export interface Result {
  readonly spans: number
  readonly accepted: boolean
  readonly failed: boolean
  readonly pausedUntil: number
}

export interface Sender {
  /** A request body holding `spans` spans, sent in turn. */
  readonly post: (body: Uint8Array<ArrayBuffer> | string, spans: number) => void
  /** Sends what is waiting and waits for every request until `deadline` (epoch ms); then gives up on the rest. */
  readonly close: (deadline: number) => Promise<void>
}

/** Requests in flight at once; further bodies wait in the queue. */
export const MAX_IN_FLIGHT = 2

/** A sender to `options.url`: `left` is told of spans leaving the queue, `report` of what became of them. */
export function make(options: Options, report: (result: Result) => void, left: (spans: number) => void): Sender {
  const timeoutMs = Math.max(REQUEST_TIMEOUT_MS, options.timeoutMs ?? 0)
  /** How long sending pauses after a failed request (a Retry-After up to a minute is honoured instead). */
  const PAUSE_MS = 5_000
  const MAX_RETRY_AFTER_MS = 60_000
  /** Bodies at least this large are gzipped when compression is asked for. */
  const GZIP_MIN_BYTES = 1_024
  const ready: Array<{ readonly body: Uint8Array<ArrayBuffer> | string; readonly spans: number }> = []
  const inFlight = new Set<Promise<void>>()
  const closing = new AbortController()
  let pausedUntil = 0
  let resume: ReturnType<typeof setTimeout> | undefined
  let closed = false

  const pause = (retryAfter: string | null) => {
    const seconds = retryAfter === null ? Number.NaN : Number(retryAfter)
    const wait = Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds * 1000, MAX_RETRY_AFTER_MS) : PAUSE_MS
    pausedUntil = Date.now() + wait
    if (resume !== undefined) clearTimeout(resume)
    resume = setTimeout(() => {
      resume = undefined
      pump()
    }, wait)
  }

  /** One POST of `encoded`: whether the endpoint accepted it. */
  const request = async (encoded: Uint8Array<ArrayBuffer> | string): Promise<boolean> => {
    let body: Uint8Array<ArrayBuffer> | string = encoded
    let headers = options.headers
    if (options.gzip && encoded.length >= GZIP_MIN_BYTES) {
      body = Bun.gzipSync(encoded)
      headers = { ...headers, "content-encoding": "gzip" }
    }
    try {
      const response = await fetch(options.url, {
        method: "POST",
        headers,
        body,
        // Never followed: a redirect would carry the headers (an API key) and the spans to another origin.
        redirect: "manual",
        signal: AbortSignal.any([closing.signal, AbortSignal.timeout(timeoutMs)]),
      })
      await response.arrayBuffer().catch(() => undefined)
      if (response.ok) return true
      pause(response.headers.get("retry-after"))
      return false
    } catch {
      pause(null)
      return false
    }
  }

  const send = (one: { readonly body: Uint8Array<ArrayBuffer> | string; readonly spans: number }) => {
    left(one.spans)
    const tracked: Promise<void> = request(one.body)
      .then((accepted) => {
        inFlight.delete(tracked)
        report({ spans: one.spans, accepted, failed: !accepted, pausedUntil: Date.now() < pausedUntil ? pausedUntil : 0 })
        if (!closed) pump()
      })
    inFlight.add(tracked)
  }

  const pump = () => {
    if (Date.now() < pausedUntil) return
    while (ready.length > 0 && inFlight.size < MAX_IN_FLIGHT) send(ready.shift()!)
  }

  return {
    post: (body, spans) => {
      ready.push({ body, spans })
      if (!closed) pump()
    },
    close: async (deadline) => {
      if (closed) return
      closed = true
      if (resume !== undefined) clearTimeout(resume)
      pausedUntil = 0
      while ((ready.length > 0 || inFlight.size > 0) && Date.now() < deadline) {
        pump()
        if (inFlight.size === 0) break
        let timer: ReturnType<typeof setTimeout> | undefined
        await Promise.race([
          Promise.race(inFlight),
          new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.min(MAX_TIMER_MS, Math.max(0, deadline - Date.now()))))),
        ])
        clearTimeout(timer)
      }
      closing.abort()
      for (const unsent of ready.splice(0)) {
        left(unsent.spans)
        report({ spans: unsent.spans, accepted: false, failed: false, pausedUntil: 0 })
      }
      await Promise.allSettled(inFlight)
    },
  }
}

// --- the sending thread -------------------------------------------------------------------------------------------
//
// Chunks of span records (./otlp-record) reach the thread through memory both share, not as messages (a message costs
// the sending thread a tenth of a millisecond and more while the other one is busy): a ring of bytes that this thread
// writes, each chunk behind its length and span count, and the thread (./otlp-worker) reads, makes into a request
// body and sends. What became of them comes back as counters in the same memory. The thread sleeps on the ring
// whenever it finds it empty and is woken by the next chunk (a notify, only when it said it sleeps). Messages are
// only for starting and closing it.

/** The shared header's 32-bit slots. */
export const TAIL = 0
export const HEAD = 1
export const SLEEPING = 2
export const DONE = 3
export const SENT = 4
export const DROPPED = 5
export const REQUESTS = 6
export const FAILURES = 7
/** Until when sending pauses, in ms from the thread's start (0: it does not). */
export const PAUSED = 8
/** Spans that left the queue: their request started, or they were dropped unsent. */
export const LEFT = 9
export const HEADER_BYTES = 64
/** A chunk's own header in the ring: its length and its span count. */
export const ENTRY_BYTES = 8
/** Written where the ring's end had no room for a chunk: the next one is at its start. */
export const WRAPPED = 0xffff_ffff

/** How the thread makes request bodies of the records it is given. */
export interface Encoding {
  readonly protocol: "http/protobuf" | "http/json"
  readonly source: OtlpWire.Source
}

/** A message to the thread. */
export type Order =
  | {
      readonly kind: "start"
      readonly shared: SharedArrayBuffer
      readonly startedAt: number
      readonly options: Options
      readonly encoding: Encoding
    }
  | { readonly kind: "close"; readonly deadline: number }

/** What the thread did with the bodies it was given. */
export interface Counts {
  /** Spans sent or dropped. */
  readonly done: number
  /** Spans that left the queue (in a request, or dropped unsent). */
  readonly left: number
  readonly sent: number
  readonly dropped: number
  readonly requests: number
  readonly failures: number
  /** Until when sending pauses (epoch ms; 0: it does not). */
  readonly pausedUntil: number
}

/** A sender on a thread of its own. */
export interface Thread {
  /** Gives the thread a chunk of `spans` records: false, and nothing given, when the ring has no room for it. */
  readonly post: (chunk: Uint8Array, spans: number) => boolean
  readonly counts: () => Counts
  /** Closes the thread's sender by `deadline`; resolves when it has, or at `deadline` and `slackMs` at most. */
  readonly close: (deadline: number, slackMs: number) => Promise<void>
}

/**
 * `make` on a thread of its own, given chunks of records through a ring of `ringBytes` and making request bodies of
 * them as `encoding` says; `failed` when the thread stops for any other reason than being closed. Throws when no
 * thread can be started.
 */
export const thread = (options: Options, encoding: Encoding, ringBytes: number, failed: () => void): Thread => {
  // The thread's code: a module of its own, an entry point of the built executable too (named here as the bundler
  // finds it: in the call).
  const worker = new Worker(new URL("./otlp-worker.ts", import.meta.url).href)
  const shared = new SharedArrayBuffer(HEADER_BYTES + ringBytes)
  const header = new Int32Array(shared, 0, HEADER_BYTES / 4)
  const ring = new Uint8Array(shared, HEADER_BYTES)
  const view = new DataView(shared, HEADER_BYTES)
  const startedAt = Date.now()
  let tail = 0
  let closed: (() => void) | undefined
  let ended = false
  const end = () => {
    if (ended) return
    ended = true
    worker.terminate()
  }
  worker.onmessage = () => closed?.()
  worker.onerror = () => {
    end()
    failed()
    closed?.()
  }
  // Sending never keeps the process alive: the exporter's close waits for it.
  worker.unref()
  worker.postMessage({ kind: "start", shared, startedAt, options, encoding } satisfies Order)

  /** Where `need` bytes go in the ring, or -1 when they do not fit; a wrap is marked. */
  const place = (need: number): number => {
    const head = Atomics.load(header, HEAD)
    const capacity = ring.length
    if (tail < head) return head - tail - 1 >= need ? tail : -1
    // From the tail to the end, never filling it up to an empty ring's head at 0.
    if (capacity - tail > need || (capacity - tail === need && head !== 0)) return tail
    if (head - 1 < need) return -1
    if (capacity - tail >= ENTRY_BYTES) view.setUint32(tail, WRAPPED, true)
    return 0
  }

  return {
    post: (chunk, spans) => {
      if (ended) return false
      const length = chunk.length
      const at = place(ENTRY_BYTES + length)
      if (at < 0) return false
      view.setUint32(at, length, true)
      view.setUint32(at + 4, spans, true)
      ring.set(chunk, at + ENTRY_BYTES)
      tail = at + ENTRY_BYTES + length
      if (tail === ring.length) tail = 0
      Atomics.store(header, TAIL, tail)
      if (Atomics.load(header, SLEEPING) === 1) Atomics.notify(header, TAIL)
      return true
    },
    counts: () => {
      const paused = Atomics.load(header, PAUSED)
      return {
        done: Atomics.load(header, DONE),
        left: Atomics.load(header, LEFT),
        sent: Atomics.load(header, SENT),
        dropped: Atomics.load(header, DROPPED),
        requests: Atomics.load(header, REQUESTS),
        failures: Atomics.load(header, FAILURES),
        pausedUntil: paused === 0 ? 0 : startedAt + paused,
      }
    },
    close: async (deadline, slackMs) => {
      if (ended) return
      let timer: ReturnType<typeof setTimeout> | undefined
      await new Promise<void>((resolve) => {
        closed = resolve
        timer = setTimeout(resolve, Math.min(MAX_TIMER_MS, Math.max(0, deadline - Date.now()) + slackMs))
        worker.postMessage({ kind: "close", deadline } satisfies Order)
      })
      clearTimeout(timer)
      end()
    },
  }
}
