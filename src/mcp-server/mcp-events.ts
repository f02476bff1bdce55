export * as McpEvents from "./mcp-events"

// The server-sent event streams `/mcp` answers with, bounded for a client that does not read them. The MCP SDK's
// transport writes each event into its stream as it comes, and that stream keeps whatever the client has not read
// yet: a call reporting progress for hours to a client that never reads would grow it without end. Here the events
// wait in a queue instead, and an event that only says "now it is this" replaces the one of its kind still waiting:
// a call's progress (per progress token), `notifications/tools/list_changed`, the transport's keep-alive comment.
// Every other event (results, errors, requests to the client) is kept, in order, and their number is bounded by
// the calls a session runs. A client that keeps up sees every event.

/** What an event waiting in the queue may be replaced by: a later event of the same kind. */
type Kind = string | undefined

interface Waiting {
  readonly kind: Kind
  bytes: Uint8Array
}

const decoder = new TextDecoder()

/** McpEvents larger than this are never replaced, and not parsed to find out. */
const REPLACEABLE_BYTES = 64 * 1024

/**
 * The kind of one SSE event (a chunk the transport wrote whole), or undefined for an event that must be kept: a
 * chunk that is not exactly one event, or not one of the replaceable kinds.
 */
export const kindOf = (chunk: Uint8Array): Kind => {
  // The replaceable events are small (a progress message carries at most a few KiB of output): a large one is kept.
  if (chunk.length > REPLACEABLE_BYTES) return undefined
  const text = decoder.decode(chunk)
  if (!text.endsWith("\n\n") || text.indexOf("\n\n") !== text.length - 2) return undefined
  if (text.startsWith(":")) return "comment"
  const data = text.split("\n").filter((line) => line.startsWith("data: "))
  if (data.length !== 1) return undefined
  let message: unknown
  try {
    message = JSON.parse(data[0]!.slice("data: ".length))
  } catch {
    return undefined
  }
  if (typeof message !== "object" || message === null || "id" in message) return undefined
  const { method, params } = message as { method?: unknown; params?: { progressToken?: unknown } }
  if (method === "notifications/tools/list_changed") return "list_changed"
  if (method === "notifications/progress" && params?.progressToken !== undefined) {
    return `progress ${JSON.stringify(params.progressToken)}`
  }
  return undefined
}

/** For each stream `bounded` made, when its source ended: then every event it will hand on waits in its queue. */
const sourceEnds = new WeakMap<ReadableStream<Uint8Array>, Promise<void>>()

/**
 * Resolves once every event of a stream `bounded` made has been written into it, whether the client read them or
 * not (at once for any other stream): what a check of the queue waits on before it reads.
 */
export const written = (stream: ReadableStream<Uint8Array>): Promise<void> => sourceEnds.get(stream) ?? Promise.resolve()

/**
 * `source` as the client reads it: read from as fast as it writes, its events handed on only as the client asks
 * for them, with the replaceable ones coalesced meanwhile. Cancelling the result cancels `source`.
 */
export const bounded = (source: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> => {
  const sourceEnded = Promise.withResolvers<void>()
  const queue: Array<Waiting> = []
  const reader = source.getReader()
  let ended = false
  let failure: { readonly cause: unknown } | undefined
  let wake: (() => void) | undefined
  const add = (bytes: Uint8Array) => {
    const kind = kindOf(bytes)
    const earlier = kind === undefined ? undefined : queue.find((waiting) => waiting.kind === kind)
    // In the earlier one's place: a call's progress then still comes before the call's result.
    if (earlier !== undefined) earlier.bytes = bytes
    else queue.push({ kind, bytes })
  }
  void (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        add(value)
        wake?.()
      }
    } catch (cause) {
      failure = { cause }
    } finally {
      ended = true
      wake?.()
      sourceEnded.resolve()
    }
  })()
  const stream = new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        while (queue.length === 0 && !ended) await new Promise<void>((resolve) => (wake = resolve))
        wake = undefined
        const next = queue.shift()
        try {
          if (next !== undefined) controller.enqueue(next.bytes)
          else if (failure !== undefined) controller.error(failure.cause)
          else controller.close()
        } catch {
          // The client cancelled the stream meanwhile: nothing is left to hand on.
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    // Nothing is pulled ahead of the client: what it has not asked for waits in the queue, where it can be replaced.
    { highWaterMark: 0 },
  )
  sourceEnds.set(stream, sourceEnded.promise)
  return stream
}

/** `answer` with its body bounded, when it is an event stream; any other answer as it is. */
export const answer = (response: Response): Response =>
  response.body !== null && response.headers.get("content-type")?.startsWith("text/event-stream") === true
    ? new Response(bounded(response.body), { status: response.status, statusText: response.statusText, headers: response.headers })
    : response
