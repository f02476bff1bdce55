// Server-sent events off a response body, as the WHATWG event-stream format defines them: `event:` and `data:`
// fields (several `data:` lines join with a newline), blank lines ending an event, `:` comments. core sends JSON in
// `data`; a comment tells the reader its subscription is in place. A line, or an event, longer than the bound
// fails the read instead of buffering without end; each chunk is scanned once, whatever the line's length.

import { CoreError } from "./error.js"

export interface Message {
  readonly event: string
  readonly data: string
}

/** The longest line (and event) read by default, in characters: 64 Mi. */
export const DEFAULT_MAX_LINE_LENGTH = 64 * 1024 * 1024

/**
 * A line or an event longer than the bound: the stream is not one core would send, and is not read further (a
 * CoreError of kind `line_too_long`, status 502, never retried).
 */
export class LineTooLong extends CoreError {
  constructor(readonly limit: number) {
    super(
      502,
      "line_too_long",
      `An event stream line or event exceeded ${limit} characters; the stream was abandoned. core never sends one ` +
        `this long: check what answers at this URL, or raise maxLineLength.`,
    )
  }
}

/**
 * Each event of `body` in order; `onComment` sees each comment line's text. Ends when the body ends; fails with
 * LineTooLong when a line or an event passes `maxLineLength` characters.
 */
export async function* read(
  body: ReadableStream<Uint8Array>,
  onComment?: (comment: string) => void,
  maxLineLength: number = DEFAULT_MAX_LINE_LENGTH,
): AsyncGenerator<Message, void, undefined> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  // The line not yet ended, in pieces (joined once it ends, so a long line is never copied chunk after chunk).
  let pending: Array<string> = []
  let pendingLength = 0
  // A \r last in a chunk may be the first half of \r\n: it waits for the next chunk.
  let carriedReturn = false
  let event = ""
  let data: Array<string> = []
  let dataLength = 0
  let finished = false
  try {
    for (;;) {
      const chunk = await reader.read()
      if (chunk.done) {
        finished = true
        return
      }
      let text = decoder.decode(chunk.value, { stream: true })
      if (carriedReturn) text = `\r${text}`
      carriedReturn = text.endsWith("\r")
      if (carriedReturn) text = text.slice(0, -1)
      // Lines end in \n, \r\n or a lone \r.
      if (text.includes("\r")) text = text.replace(/\r\n|\r/g, "\n")
      let start = 0
      for (let newline = text.indexOf("\n"); newline !== -1; newline = text.indexOf("\n", start)) {
        const piece = text.slice(start, newline)
        start = newline + 1
        if (pendingLength + piece.length > maxLineLength) throw new LineTooLong(maxLineLength)
        const line = pending.length === 0 ? piece : pending.join("") + piece
        pending = []
        pendingLength = 0
        if (line === "") {
          if (data.length > 0) yield { event: event === "" ? "message" : event, data: data.join("\n") }
          event = ""
          data = []
          dataLength = 0
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
        else if (field === "data") {
          // Data lines without a blank line between them are one event: bounded together.
          dataLength += value.length + 1
          if (dataLength > maxLineLength) throw new LineTooLong(maxLineLength)
          data.push(value)
        }
      }
      if (start < text.length) {
        pendingLength += text.length - start
        if (pendingLength > maxLineLength) throw new LineTooLong(maxLineLength)
        pending.push(text.slice(start))
      }
    }
  } finally {
    // A reader that stops early lets the body go; one that read to the end has nothing to let go.
    if (finished) reader.releaseLock()
    else await reader.cancel().catch(() => undefined)
  }
}
