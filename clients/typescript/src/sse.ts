// Server-sent events off a response body, as the WHATWG event-stream format defines them: `event:` and `data:`
// fields (several `data:` lines join with a newline), blank lines ending an event, `:` comments. core sends JSON in
// `data`; a comment tells the reader its subscription is in place.

export interface Message {
  readonly event: string
  readonly data: string
}

/** Each event of `body` in order; `onComment` sees each comment line's text. Ends when the body ends. */
export async function* read(
  body: ReadableStream<Uint8Array>,
  onComment?: (comment: string) => void,
): AsyncGenerator<Message, void, undefined> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  let event = ""
  let data: Array<string> = []
  try {
    for (;;) {
      const chunk = await reader.read()
      if (chunk.done) return
      buffer += decoder.decode(chunk.value, { stream: true })
      let newline: number
      while ((newline = buffer.search(/\r\n|\r|\n/)) !== -1) {
        const line = buffer.slice(0, newline)
        // A lone \r at the end of the buffer may be the first half of \r\n: wait for the next chunk.
        if (buffer[newline] === "\r" && newline === buffer.length - 1) break
        buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1))
        if (line === "") {
          if (data.length > 0) yield { event: event === "" ? "message" : event, data: data.join("\n") }
          event = ""
          data = []
          continue
        }
        const colon = line.indexOf(":")
        if (colon === 0) {
          onComment?.(line.slice(1).trimStart())
          continue
        }
        const field = colon === -1 ? line : line.slice(0, colon)
        const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
        if (field === "event") event = value
        else if (field === "data") data.push(value)
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
}
