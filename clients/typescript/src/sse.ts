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
 * Reads events off chunks of an event stream: `push` each chunk as it comes, and each event it completes goes to
 * `onMessage` at once (each comment line's text to `onComment`). Fails with LineTooLong when a line or an event
 * passes `maxLineLength` characters.
 */
export class Parser {
  private readonly decoder = new TextDecoder()
  // The line not yet ended, in pieces (joined once it ends, so a long line is never copied chunk after chunk).
  private pending: Array<string> = []
  private pendingLength = 0
  // A \r last in a chunk may be the first half of \r\n: it waits for the next chunk.
  private carriedReturn = false
  private event = ""
  private data: Array<string> = []
  private dataLength = 0

  constructor(
    private readonly onMessage: (message: Message) => void,
    private readonly onComment: ((comment: string) => void) | undefined,
    private readonly maxLineLength: number = DEFAULT_MAX_LINE_LENGTH,
  ) {}

  push(chunk: Uint8Array): void {
    const maxLineLength = this.maxLineLength
    let text = this.decoder.decode(chunk, { stream: true })
    if (this.carriedReturn) text = `\r${text}`
    this.carriedReturn = text.endsWith("\r")
    if (this.carriedReturn) text = text.slice(0, -1)
    // Lines end in \n, \r\n or a lone \r.
    if (text.includes("\r")) text = text.replace(/\r\n|\r/g, "\n")
    let start = 0
    for (let newline = text.indexOf("\n"); newline !== -1; newline = text.indexOf("\n", start)) {
      const piece = text.slice(start, newline)
      start = newline + 1
      if (this.pendingLength + piece.length > maxLineLength) throw new LineTooLong(maxLineLength)
      const line = this.pending.length === 0 ? piece : this.pending.join("") + piece
      if (this.pending.length > 0) {
        this.pending = []
        this.pendingLength = 0
      }
      if (line === "") {
        if (this.data.length > 0) {
          const message = { event: this.event === "" ? "message" : this.event, data: this.data.length === 1 ? this.data[0]! : this.data.join("\n") }
          this.data = []
          this.dataLength = 0
          this.event = ""
          this.onMessage(message)
        } else this.event = ""
        continue
      }
      const colon = line.indexOf(":")
      if (colon === 0) {
        this.onComment?.(line.slice(1).trimStart())
        continue
      }
      const field = colon === -1 ? line : line.slice(0, colon)
      const value = colon === -1 ? "" : line.charCodeAt(colon + 1) === 32 ? line.slice(colon + 2) : line.slice(colon + 1)
      if (field === "event") this.event = value
      else if (field === "data") {
        // Data lines without a blank line between them are one event: bounded together.
        this.dataLength += value.length + 1
        if (this.dataLength > maxLineLength) throw new LineTooLong(maxLineLength)
        this.data.push(value)
      }
    }
    if (start < text.length) {
      this.pendingLength += text.length - start
      if (this.pendingLength > maxLineLength) throw new LineTooLong(maxLineLength)
      this.pending.push(text.slice(start))
    }
  }
}

/**
 * Hands each event of `body` to `onMessage` as it arrives, in order; `onComment` sees each comment line's text.
 * Resolves when the body ends (an event left unfinished is dropped); fails with LineTooLong when a line or an event
 * passes `maxLineLength` characters, or with what `onMessage` throws, and then lets the body go.
 */
export async function each(
  body: ReadableStream<Uint8Array>,
  onMessage: (message: Message) => void,
  onComment?: (comment: string) => void,
  maxLineLength: number = DEFAULT_MAX_LINE_LENGTH,
): Promise<void> {
  const reader = body.getReader()
  const parser = new Parser(onMessage, onComment, maxLineLength)
  let finished = false
  try {
    for (;;) {
      const chunk = await reader.read()
      if (chunk.done) {
        finished = true
        return
      }
      parser.push(chunk.value)
    }
  } finally {
    // A reader that stops early lets the body go; one that read to the end has nothing to let go.
    if (!finished) await reader.cancel().catch(() => undefined)
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
  let messages: Array<Message> = []
  const parser = new Parser((message) => messages.push(message), onComment, maxLineLength)
  let finished = false
  try {
    for (;;) {
      const chunk = await reader.read()
      if (chunk.done) {
        finished = true
        return
      }
      let failure: { error: unknown } | undefined
      try {
        parser.push(chunk.value)
      } catch (error) {
        failure = { error }
      }
      // The events the chunk completed before a line too long are still handed on, in order.
      const taken = messages
      messages = []
      for (const message of taken) yield message
      if (failure !== undefined) throw failure.error
    }
  } finally {
    // A reader that stops early lets the body go; one that read to the end has nothing to let go.
    if (!finished) await reader.cancel().catch(() => undefined)
  }
}
