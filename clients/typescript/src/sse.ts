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
  let finished = false
  try {
    for (;;) {
      const chunk = await reader.read()
      if (chunk.done) {
        finished = true
        return
      }
      buffer += decoder.decode(chunk.value, { stream: true })
      // Lines end in \n, \r\n or a lone \r; a \r last in the buffer may be the first half of \r\n, so it waits.
      if (buffer.includes("\r")) buffer = buffer.replace(/\r\n|\r(?!$)/g, "\n")
      let start = 0
      for (let newline = buffer.indexOf("\n"); newline !== -1; newline = buffer.indexOf("\n", start)) {
        const line = buffer.slice(start, newline)
        start = newline + 1
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
        const value = colon === -1 ? "" : line.charCodeAt(colon + 1) === 32 ? line.slice(colon + 2) : line.slice(colon + 1)
        if (field === "event") event = value
        else if (field === "data") data.push(value)
      }
      buffer = buffer.slice(start)
    }
  } finally {
    // A reader that stops early lets the body go; one that read to the end has nothing to let go.
    if (finished) reader.releaseLock()
    else await reader.cancel().catch(() => undefined)
  }
}
