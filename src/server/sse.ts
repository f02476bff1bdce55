export * as Sse from "./sse"

// The wire form of server-sent events: each event is one `event:` line and one `data:` line of JSON (shapes in
// ../host/events), with comment lines that tell a reader its subscription is in place and keep an idle stream
// alive.

/** Sent first, so a reader knows its subscription is in place before anything it triggers happens. */
export const CONNECTED = ": connected\n\n"

/** Sent on an idle stream now and then, so a reader that went away is noticed. */
export const KEEP_ALIVE = ": keep-alive\n\n"
export const KEEP_ALIVE_MS = 15_000

/** One event in SSE wire form. */
export const encode = (event: { readonly event: string; readonly data: unknown }): string =>
  `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`
