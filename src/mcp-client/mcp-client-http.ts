export * as McpClientHttp from "./mcp-client-http"

// The fetch core's streamable-HTTP MCP client goes through: a server's answer is read in bounded messages, as a
// server's stdout lines are (./stdio.ts). A JSON answer larger than the limit, or one server-sent event that runs
// past it without ending, errors the body instead of growing core's memory without end; the call then fails
// naming the server (or times out), and core goes on. A malformed answer to a request in a stream of events is
// replaced by an error for that request, as ./mcp-client-stdio does with a line. And the client's GETs (the server's event stream, opened
// again whenever it ends) are paced: a server may ask for them again at once, without end.

import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js"
import { JsonRpc } from "./json-rpc"

/** The most one message from a server may take: a JSON answer, or one server-sent event. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024
/**
 * The least time between two GETs of a server's event stream: the client opens it again as soon as it ends, after
 * the `retry` the server sets, 0 included (a server ending each at once drew 750 a second from core, for as long as
 * the connection lasted). Short enough that a `retry` a server sets after a stream that lasted is kept to.
 */
export const MIN_STREAM_INTERVAL_MS = 250

const LF = 10
const CR = 13

/** Where the last event boundary (a blank line: LF LF, or LF CR LF) ends in `chunk`, given the bytes before it. */
const boundaryEnd = (chunk: Uint8Array, before: ReadonlyArray<number>): number => {
  for (let index = chunk.length - 1; index >= 0; index--) {
    if (chunk[index] !== LF) continue
    const previous = index >= 1 ? chunk[index - 1] : before[before.length - 1]
    const earlier = index >= 2 ? chunk[index - 2] : before[before.length - 2 + index]
    if (previous === LF || (previous === CR && earlier === LF)) return index + 1
  }
  return -1
}

export class TooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the server's answer ran past ${limit} bytes in one message; core stopped reading it`)
  }
}

/** The field a line of a server-sent event sets. */
const fieldOf = (line: string): string => {
  const colon = line.indexOf(":")
  return colon === -1 ? line : line.slice(0, colon)
}

/** One server-sent event's lines (its ending blank line not among them): its type and its data, joined. */
const eventOf = (lines: ReadonlyArray<string>): { readonly type: string; readonly data: string | undefined } => {
  let type = ""
  let data: Array<string> | undefined
  for (const line of lines) {
    const colon = line.indexOf(":")
    const field = fieldOf(line)
    const value = colon === -1 ? "" : line.slice(line[colon + 1] === " " ? colon + 2 : colon + 1)
    if (field === "data") (data ??= []).push(value)
    else if (field === "event") type = value
  }
  return { type, data: data?.join("\n") }
}

/**
 * `text` (whole server-sent events, each ended by a blank line) with each event that is a malformed answer to a
 * request (JsonRpc.stoodIn) carrying the error that stands in for it: the client would drop it, and its request
 * would wait out its timeout. Undefined when no event is such an answer (the bytes then go on as they came).
 */
const withStandIns = (text: string): string | undefined => {
  const events = text.split(/(?<=\n)\r?\n/)
  let changed = false
  const repaired = events.map((event) => {
    const lines = event.split(/\r?\n/)
    const { type, data } = eventOf(lines)
    if (data === undefined || (type !== "" && type !== "message")) return event
    let parsed: unknown
    try {
      parsed = JSON.parse(data)
    } catch {
      return event
    }
    if (JsonRpc.isMessage(parsed)) return event
    const standIn = JsonRpc.stoodIn(parsed)
    if (standIn === undefined) return event
    changed = true
    const kept = lines.filter((line) => line !== "" && fieldOf(line) !== "data")
    return `${[...kept, `data: ${JSON.stringify(standIn)}`].join("\n")}\n`
  })
  return changed ? repaired.join("\n") : undefined
}

const encoder = new TextEncoder()

/**
 * `base`, with every response body bounded per message (see above), and each malformed answer in a stream of events
 * replaced by the error that stands in for it (withStandIns). An event goes on once it has ended, as the client
 * reads it; a JSON answer is read whole by the client, which fails its request at once if it is malformed.
 */
export const bounded =
  (base: FetchLike = fetch, limit = MAX_MESSAGE_BYTES): FetchLike =>
  async (url, init) => {
    const response = await base(url, init)
    if (response.body === null) return response
    const events = (response.headers.get("content-type") ?? "").includes("text/event-stream")
    // Bytes of the message being read: the whole body for JSON, the current event for a stream of events (held
    // until it ends, in `held`).
    let pending = 0
    let held: Array<Uint8Array> = []
    let tail: Array<number> = []
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          if (!events) {
            pending += chunk.length
            if (pending > limit) return controller.error(new TooLarge(limit))
            return controller.enqueue(chunk)
          }
          const end = boundaryEnd(chunk, tail)
          tail = [...tail, ...chunk.subarray(Math.max(0, chunk.length - 2))].slice(-2)
          if (end === -1) {
            pending += chunk.length
            if (pending > limit) return controller.error(new TooLarge(limit))
            held.push(chunk)
            return
          }
          const ended = Buffer.concat([...held, chunk.subarray(0, end)])
          held = end === chunk.length ? [] : [chunk.subarray(end)]
          pending = chunk.length - end
          if (pending > limit) return controller.error(new TooLarge(limit))
          const repaired = withStandIns(ended.toString("utf8"))
          controller.enqueue(repaired === undefined ? ended : encoder.encode(repaired))
        },
        flush(controller) {
          // An event the stream ended without ending: the client drops it, as it would have.
          for (const chunk of held) controller.enqueue(chunk)
        },
      }),
    )
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
  }

/** Waits `ms`, or rejects as `signal` is aborted. Keeps no process alive: the stream it delays is a background one. */
const pause = (ms: number, signal: AbortSignal | null | undefined): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", aborted)
      resolve()
    }, ms)
    timer.unref?.()
    const aborted = () => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    signal?.addEventListener("abort", aborted, { once: true })
  })

/** `base`, with each GET started MIN_STREAM_INTERVAL_MS after the one before at the soonest (requests go at once). */
export const paced = (base: FetchLike, intervalMs = MIN_STREAM_INTERVAL_MS): FetchLike => {
  let next = 0
  return async (url, init) => {
    if ((init?.method ?? "GET").toUpperCase() !== "GET") return base(url, init)
    const now = Date.now()
    const wait = next - now
    next = Math.max(now, next) + intervalMs
    if (wait > 0) await pause(wait, init?.signal)
    return base(url, init)
  }
}
