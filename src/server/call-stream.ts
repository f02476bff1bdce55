export * as CallStream from "./call-stream"

// A call's event stream (`POST /v1/turns/{turnID}/calls` with `Accept: text/event-stream`, and `/calls/stream`): a
// web ReadableStream the call writes to as its events happen (Calls.Listener), read by the HTTP server as the client
// takes them. Its head waits for what the call's record says (the settler tells it; no lookup of its own), so a
// replayed call is marked `X-Core-Replayed`. A reader that falls behind loses the oldest events beyond
// Events.BUFFER, never the last one; a reader that goes away stops only its listening: the call goes on in the
// server and is recorded. It must not hold anything past its stream's end (the Location is let go then).

import * as Effect from "effect/Effect"
import type { Calls } from "../host/calls"
import { Events } from "../host/events"
import type { Served } from "../host/served"
import type { Settler } from "../settlement/settler"
import type { Api } from "./api"
import { Respond } from "./respond"
import { Sse } from "./sse"

/** The headers of a call's event stream (as Respond.events sends a stream's), and of a replayed one. */
const HEADERS = {
  ...Respond.COMMON_HEADERS,
  "cache-control": "no-cache, no-store",
  "x-accel-buffering": "no",
  "content-type": "text/event-stream",
} as const
const REPLAYED_HEADERS = { ...HEADERS, "x-core-replayed": "true" } as const
/** A call that was running already when this request came: it joined it (`core exec` forwarded leaves it be). */
const JOINED_HEADERS = { ...HEADERS, "x-core-joined": "true" } as const
const ENCODER = new TextEncoder()
/**
 * An SSE comment the stream opens with when the call has nothing to say yet (readers skip it): without a first
 * chunk, Bun holds the end of the response's head until the call's first event, and a client waits that long to
 * learn the call was taken (and a server gone meanwhile looks like a request refused before it was).
 */
const OPENED = ENCODER.encode(":\n\n")

export interface Options {
  readonly calls: Calls.Interface
  /** The Location the request acts on. */
  readonly served: Served.Interface
  readonly turn: Served.Turn
  readonly call: Settler.Call
  /** The settlement as this call's answer carries it (with the provider's result block, for a provider's turn). */
  readonly answer: (settlement: typeof Api.Settlement.Type) => Api.CallSettlement
  /** Called once when the stream is over (its last event taken, or its reader gone): lets go of the Location. */
  readonly release: () => void
  /** The request's signal: its abort ends the stream as a cancel does. */
  readonly signal?: AbortSignal
  /**
   * Runs the start of the call with the request's context (its tracer and span, so the call's spans sit in the
   * request's trace); without one, with none (the direct path, taken only when no tracer keeps spans).
   */
  readonly run?: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
}

/**
 * Past this many bytes waiting for the reader, a progress event replaces one waiting right before it: a progress is
 * the call's state now (a command's last lines, each up to some KiB of escapes), and a reader that did not read held
 * 4,096 of them, growing by 95 KB a second. A reader that keeps up gets every one.
 */
const MAX_WAITING_BYTES = 1024 * 1024

/**
 * The encoded events waiting for the reader, bounded: past MAX_WAITING_BYTES a progress replaces the one before it,
 * and past Events.BUFFER the oldest go. The final event is the newest when it comes, so it is never dropped.
 */
class Pending {
  private events: Array<string> = []
  private head = 0
  /** The characters of the events waiting (from `head` on). */
  private waiting = 0
  /** Whether the newest event waiting is a progress, which the next may replace. */
  private progress = false
  get size(): number {
    return this.events.length - this.head
  }
  push(text: string, progress = false): void {
    const replaces = progress && this.progress && this.size > 0 && this.waiting > MAX_WAITING_BYTES
    this.progress = progress
    if (replaces) {
      this.waiting += text.length - this.events[this.events.length - 1]!.length
      this.events[this.events.length - 1] = text
      return
    }
    this.events.push(text)
    this.waiting += text.length
    if (this.size > Events.BUFFER) this.waiting -= this.events[this.head++]!.length
    // Dropped places are reclaimed now and then, not on every event.
    if (this.head > Events.BUFFER) {
      this.events = this.events.slice(this.head)
      this.head = 0
    }
  }
  /** Everything waiting, as one chunk. */
  take(): string {
    const text = this.head === 0 && this.events.length === 1 ? this.events[0]! : this.events.slice(this.head).join("")
    this.events = []
    this.head = 0
    this.waiting = 0
    this.progress = false
    return text
  }
}

/** Answers the call of `options` as its event stream: the call started (or joined) and listened to from now on. */
export const open = async (options: Options): Promise<Response> => {
  const { calls, served, turn, call, answer } = options
  const pending = new Pending()
  /** The stream's controller while a read waits for an event. */
  let wake: (() => void) | undefined
  let ended = false
  let over = false
  let stop = () => {}
  const finish = () => {
    if (over) return
    over = true
    wake = undefined
    stop()
    options.signal?.removeEventListener("abort", finish)
    options.release()
  }

  let tellHead: (replays: boolean) => void = () => {}
  const head = new Promise<boolean>((resolve) => (tellHead = resolve))
  const listener: Calls.Listener = {
    asks: true,
    recorded: (replays) => tellHead(replays),
    event: (event) => {
      if (over || ended) return
      if (event.event === "settlement") {
        pending.push(Sse.encode({ event: "settlement", data: answer(event.data) }))
        ended = true
      } else {
        pending.push(Sse.encode(event), event.event === "progress")
        if (event.event === "error") ended = true
      }
      wake?.()
    },
  }
  if (options.signal !== undefined) {
    if (options.signal.aborted) finish()
    else options.signal.addEventListener("abort", finish, { once: true })
  }
  let joined = false
  try {
    const listening = await (options.run ?? Effect.runPromise)(calls.startListening(served, turn, call, listener))
    joined = listening.joined
    // A reader that went away meanwhile listens no more; the call goes on.
    if (over) listening.stop()
    else stop = listening.stop
  } catch (cause) {
    finish()
    throw cause
  }
  const replays = await head

  /** Whether the stream has sent anything yet (its head goes out with its first chunk). */
  let opened = false
  /** Hands everything waiting to the stream; closes it after the final event. */
  const flush = (controller: ReadableStreamDefaultController<Uint8Array>): boolean => {
    if (pending.size === 0) return false
    opened = true
    controller.enqueue(ENCODER.encode(pending.take()))
    if (ended) {
      controller.close()
      finish()
    }
    return true
  }
  const body = new ReadableStream<Uint8Array>(
    {
      pull: (controller) => {
        if (over) return controller.close()
        if (flush(controller)) return
        if (!opened) {
          opened = true
          return controller.enqueue(OPENED)
        }
        return new Promise<void>((resolve) => {
          wake = () => {
            wake = undefined
            if (!over) flush(controller)
            resolve()
          }
        })
      },
      cancel: finish,
    },
    { highWaterMark: 0 },
  )
  return new Response(body, { status: 200, headers: replays ? REPLAYED_HEADERS : joined ? JOINED_HEADERS : HEADERS })
}
