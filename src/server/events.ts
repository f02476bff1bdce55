export * as Events from "./events"

// The sidecar's server-sent events: a Location's event bus (what `GET /v1/events` streams) and the wire form of an
// event. Each event is one `event:` line and one `data:` line of JSON (shapes in ./api). A slow reader loses the
// oldest events rather than growing the server's memory without bound.

import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import type { Api } from "./api"

export type Server = typeof Api.ServerEvent.Type
export type Call = typeof Api.CallEvent.Type

/** Events buffered per reader before the oldest are dropped. */
export const BUFFER = 4096

/** Sent first, so a reader knows its subscription is in place before anything it triggers happens. */
export const CONNECTED = ": connected\n\n"

/** Sent on an idle stream now and then, so a reader that went away is noticed. */
export const KEEP_ALIVE = ": keep-alive\n\n"
export const KEEP_ALIVE_MS = 15_000

export const bus = <A>(): Effect.Effect<PubSub.PubSub<A>> => PubSub.sliding<A>(BUFFER)

/** One event in SSE wire form. */
export const encode = (event: { readonly event: string; readonly data: unknown }): string =>
  `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`

/**
 * Progress metadata as JSON: a tool may put anything in it, and what cannot be sent as JSON (a bigint, a cycle)
 * is left out rather than breaking the stream.
 */
export const progress = (update: {
  readonly message: string
  readonly metadata?: Readonly<Record<string, unknown>>
}): Api.Progress => {
  if (update.metadata === undefined) return { message: update.message }
  try {
    return { message: update.message, metadata: JSON.parse(JSON.stringify(update.metadata)) }
  } catch {
    return { message: update.message }
  }
}
