export * as OtlpSender from "./otlp-sender"

// Sends OTLP request bodies (made by ./otlp) to the endpoint: at most MAX_IN_FLIGHT requests at once, each within a
// timeout, gzipped when asked; a failed request drops its body and pauses sending for a while (a Retry-After up to a
// minute is honoured). It runs on a thread of its own once the exporter has a body to send while calls run, so that
// no request is made, compressed or answered on the thread that settles calls; at exit, when no thread was started
// (a short command), on the calling thread. The same code both ways: `make` is self-contained (the thread runs it
// from its own source text) and says what became of each body through `report`; the exporter keeps the counts.

/** What the sender is told once. */
export interface Options {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly gzip: boolean
}

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

/**
 * A sender to `options.url`. Self-contained (its text is a thread's code): nothing from outside but the platform's
 * globals, its constants inside.
 */
export function make(options: Options, report: (result: Result) => void): Sender {
  /** How long one request may take. */
  const REQUEST_TIMEOUT_MS = 10_000
  /** Requests in flight at once; further bodies wait. */
  const MAX_IN_FLIGHT = 2
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
        signal: AbortSignal.any([closing.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
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
          new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now())))),
        ])
        clearTimeout(timer)
      }
      closing.abort()
      for (const left of ready.splice(0)) report({ spans: left.spans, accepted: false, failed: false, pausedUntil: 0 })
      await Promise.allSettled(inFlight)
    },
  }
}

/** A message to the thread. */
type Order =
  | { readonly kind: "post"; readonly body: Uint8Array<ArrayBuffer> | string; readonly spans: number }
  | { readonly kind: "close"; readonly deadline: number }

/** A message from the thread: a body's result, or that it has closed. */
export type Told = ({ readonly kind: "result" } & Result) | { readonly kind: "closed" }

/** The thread's code: `make` run on the options it is started with, told bodies and when to close. */
const threadSource = (options: Options): string =>
  `const make = ${make.toString()};\n` +
  `const sender = make(${JSON.stringify(options)}, (result) => postMessage({ kind: "result", ...result }));\n` +
  `onmessage = async (event) => {\n` +
  `  const order = event.data;\n` +
  `  if (order.kind === "post") sender.post(order.body, order.spans);\n` +
  `  else if (order.kind === "close") { await sender.close(order.deadline); postMessage({ kind: "closed" }); }\n` +
  `};\n`

/** A sender on a thread of its own. */
export interface Thread {
  readonly post: (body: Uint8Array<ArrayBuffer> | string, spans: number) => void
  /** Closes the thread's sender by `deadline`; resolves when it has, or at `deadline` and `slackMs` at most. */
  readonly close: (deadline: number, slackMs: number) => Promise<void>
}

/**
 * `make` on a thread of its own, its results told through `report` (on this thread); `failed` when the thread
 * stops for any other reason than being closed. Throws when no thread can be started.
 */
export const thread = (options: Options, report: (result: Result) => void, failed: () => void): Thread => {
  const source = URL.createObjectURL(new Blob([threadSource(options)], { type: "application/javascript" }))
  let worker: Worker
  try {
    worker = new Worker(source)
  } catch (cause) {
    URL.revokeObjectURL(source)
    throw cause
  }
  let closed: (() => void) | undefined
  let ended = false
  const end = () => {
    if (ended) return
    ended = true
    worker.terminate()
    URL.revokeObjectURL(source)
  }
  worker.onmessage = (event: MessageEvent<Told>) => {
    const told = event.data
    if (told.kind === "result") report(told)
    else closed?.()
  }
  worker.onerror = () => {
    end()
    failed()
    closed?.()
  }
  // Sending never keeps the process alive: the exporter's close waits for it.
  worker.unref()
  return {
    post: (body, spans) => {
      const order: Order = { kind: "post", body, spans }
      if (typeof body === "string") worker.postMessage(order)
      else worker.postMessage(order, [body.buffer])
    },
    close: async (deadline, slackMs) => {
      if (ended) return
      let timer: ReturnType<typeof setTimeout> | undefined
      await new Promise<void>((resolve) => {
        closed = resolve
        timer = setTimeout(resolve, Math.max(0, deadline - Date.now()) + slackMs)
        worker.postMessage({ kind: "close", deadline } satisfies Order)
      })
      clearTimeout(timer)
      end()
    },
  }
}
