export * as McpStdio from "./mcp-stdio"

// The stdio transport of `core mcp`: newline-delimited JSON-RPC on a readable and a writable stream, with memory
// bounded per line and every malformed message answered as JSON-RPC says (a parse error with id null, an invalid
// request with its id when it can be read), so a client never waits forever and one bad line never ends the server.
// It knows nothing of tools or sessions; the MCP server on top dispatches what it passes on.

import type { Readable } from "node:stream"
import type { Transport as McpTransport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { JsonRpcId } from "../contract/json-rpc-id"

/** A line longer than this is not read: it is answered with an error (carrying its id when it can be read). */
export const MAX_LINE_BYTES = 8 * 1024 * 1024

/** What answers JSON that is no JSON-RPC 2.0 message (over stdio, and over HTTP at /mcp). */
export const NOT_JSON_RPC = "Invalid request: not a JSON-RPC 2.0 request or notification."

type Id = string | number

/** The id an error answers with: the message's own, a number as written where that is known, or null. */
export type AnswerId = Id | JsonRpcId.Written | null

const UTF8 = new TextDecoder("utf-8", { fatal: true })

/** A JSON text's value, undefined where it is not valid JSON. */
const parsedOrUndefined = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The id of a message that is no valid JSON-RPC one, where it has one of the kinds an id is: its answer's id. */
export const idOf = (value: unknown): Id | null => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null
  const id = (value as { id?: unknown }).id
  return typeof id === "string" || (typeof id === "number" && Number.isFinite(id)) ? id : null
}

/**
 * The id an error answers a message with, read from `line` (its text) and `parsed` (that text parsed): `idOf`'s, and
 * where that is a number JavaScript does not hold exactly (past 2^53, or beyond JSON's range), the number as the line
 * wrote it. Found where clients put it, in the line's beginning (`scanId`); else, in a line short enough to parse again
 * at no cost worth an attacker's while, by parsing it again; else (an id after 64 KB of params) as read.
 */
export const answerIdOf = (line: string, parsed: unknown): AnswerId => {
  const id = idOf(parsed)
  const given = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as { id?: unknown }).id : undefined
  if (typeof given !== "number" || Number.isSafeInteger(given)) return id
  const scanned = JsonRpcId.scanId(line.length > JsonRpcId.HEAD_CHARS ? line.slice(0, JsonRpcId.HEAD_CHARS) : line)
  // The same number (a key given twice is read as its last: the first one found may be another).
  if (typeof scanned === "object" && Number(JSON.stringify(scanned)) === given) return scanned
  if (line.length > JsonRpcId.HEAD_CHARS) return id
  /** Each object's `id` as written, where it is a number: the message's own is the one its root holds. */
  const sources = new Map<unknown, string>()
  let root: unknown
  try {
    root = JSON.parse(line, function (this: unknown, key: string, value: unknown, context?: { readonly source?: string }) {
      if (key === "id" && typeof value === "number" && context?.source !== undefined) sources.set(this, context.source)
      return value
    })
  } catch {
    return id
  }
  const source = sources.get(root)
  return source === undefined ? id : JsonRpcId.written(source)
}

const isResponse = (value: unknown): boolean =>
  typeof value === "object" && value !== null && !("method" in value) && ("result" in value || "error" in value)

/**
 * Where messages are written: a stream's `write` (false when it would rather not be written to until `drain`), as
 * `process.stdout` has it; nothing in between, so a message is one write of one string.
 */
export interface Output {
  readonly write: (chunk: string) => boolean
  readonly once: (event: "drain", listener: () => void) => unknown
}

/** The last JsonRpcId.TAIL_CHARS bytes of `kept` followed by `piece`. */
const suffixOf = (kept: Buffer, piece: Buffer): Buffer =>
  piece.length >= JsonRpcId.TAIL_CHARS
    ? Buffer.from(piece.subarray(piece.length - JsonRpcId.TAIL_CHARS))
    : Buffer.concat([kept, piece]).subarray(-JsonRpcId.TAIL_CHARS)

export class Transport implements McpTransport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void
  /**
   * Offered each message as parsed, before it is checked as JSON-RPC: true when it was taken (the session's plain
   * `tools/call`, which it checks at least as strictly), and then it is not checked again nor passed on.
   */
  takes?: (message: unknown) => boolean
  /**
   * Offered a JSON-RPC 2.0 message the SDK's schema refuses: the answer when it is a request whose params its method
   * refuses (invalid params, naming each problem's place), as `/mcp` answers it; else it is an invalid request.
   */
  invalid?: (message: unknown) => JSONRPCMessage | undefined

  private chunks: Array<Buffer> = []
  private size = 0
  /** While an over-long line is skipped: its beginning and its end so far (to find its id), and how many bytes it has had. */
  private skipping: { prefix: Buffer; suffix: Buffer; bytes: number } | undefined
  private closed = false

  constructor(
    private readonly input: Readable,
    private readonly output: Output,
    private readonly maxLineBytes: number = MAX_LINE_BYTES,
  ) {}

  private readonly onData = (chunk: Buffer | string) => this.take(typeof chunk === "string" ? Buffer.from(chunk) : chunk)
  private readonly onEnd = () => void this.close()
  private readonly onError = (error: Error) => this.onerror?.(error)

  async start(): Promise<void> {
    this.input.on("data", this.onData)
    this.input.once("end", this.onEnd)
    this.input.on("error", this.onError)
  }

  private take(chunk: Buffer): void {
    let start = 0
    for (;;) {
      const newline = chunk.indexOf(10, start)
      const piece = newline === -1 ? chunk.subarray(start) : chunk.subarray(start, newline)
      this.append(piece)
      if (newline === -1) return
      this.endLine()
      start = newline + 1
    }
  }

  private append(piece: Buffer): void {
    if (piece.length === 0) return
    const skipping = this.skipping
    if (skipping !== undefined) {
      if (skipping.prefix.length < JsonRpcId.HEAD_CHARS) {
        skipping.prefix = Buffer.concat([skipping.prefix, piece.subarray(0, JsonRpcId.HEAD_CHARS - skipping.prefix.length)])
      }
      skipping.suffix = suffixOf(skipping.suffix, piece)
      skipping.bytes += piece.length
      return
    }
    if (this.size + piece.length <= this.maxLineBytes) {
      this.chunks.push(piece)
      this.size += piece.length
      return
    }
    // Too long to read: only its beginning and its end are kept, to answer with its id.
    const prefix = Buffer.concat([...this.chunks, piece.subarray(0, JsonRpcId.HEAD_CHARS)]).subarray(0, JsonRpcId.HEAD_CHARS)
    const suffix = suffixOf(Buffer.concat(this.chunks.slice(-1)), piece)
    this.skipping = { prefix: Buffer.from(prefix), suffix, bytes: this.size + piece.length }
    this.chunks = []
    this.size = 0
  }

  private endLine(): void {
    const skipped = this.skipping
    if (skipped !== undefined) {
      this.skipping = undefined
      const { id, kind } = JsonRpcId.glimpse(skipped.prefix.toString("utf8"), skipped.suffix.toString("utf8"))
      // JSON-RPC never answers a response (a client's answer to an elicitation, say), however large.
      if (kind === "answer") return this.onerror?.(new Error(`a JSON-RPC response of ${skipped.bytes} bytes was skipped unread`))
      this.answer(
        id ?? null,
        ErrorCode.InvalidRequest,
        `Message too large: ${skipped.bytes} bytes, over the limit of ${this.maxLineBytes} bytes per message; it was not read. Send less in one call (for example, write a large file in parts).`,
      )
      return
    }
    const bytes = Buffer.concat(this.chunks)
    this.chunks = []
    this.size = 0
    let line: string
    try {
      line = UTF8.decode(bytes)
    } catch {
      // Read as text, its other bytes would be U+FFFD each: two different call ids would be one call.
      const lossy = bytes.toString("utf8")
      // JSON-RPC never answers a response, well formed or not.
      if (isResponse(parsedOrUndefined(lossy))) return this.onerror?.(new Error("a JSON-RPC response that is not UTF-8 was skipped"))
      const id = JsonRpcId.scanId(lossy)
      return this.answer(
        typeof id === "string" && id.includes("\uFFFD") ? null : (id ?? null),
        ErrorCode.InvalidRequest,
        "Invalid request: the message is not valid UTF-8; send JSON text encoded as UTF-8 (bytes that are not would be read as U+FFFD, making different ids and inputs the same).",
      )
    }
    this.line(line.endsWith("\r") ? line.slice(0, -1) : line)
  }

  private line(line: string): void {
    if (line.trim() === "") return
    let parsed: unknown
    try {
      parsed = JSON.parse(line)
    } catch {
      return this.answer(null, ErrorCode.ParseError, "Parse error: the message is not JSON.")
    }
    if (Array.isArray(parsed)) {
      return this.answer(null, ErrorCode.InvalidRequest, "Invalid request: batches are not supported; send one message per line.")
    }
    if (this.takes?.(parsed) === true) return
    let checked: ReturnType<typeof JSONRPCMessageSchema.safeParse> | undefined
    try {
      checked = JSONRPCMessageSchema.safeParse(parsed)
    } catch {
      // Nested too deeply to check: invalid like any other malformed message.
    }
    if (checked?.success === true) return this.onmessage?.(checked.data)
    const refused = (parsed as { jsonrpc?: unknown } | null)?.jsonrpc === "2.0" ? this.invalid?.(parsed) : undefined
    if (refused !== undefined) {
      void this.send({ ...refused, id: answerIdOf(line, parsed) } as JSONRPCMessage).catch(() => undefined)
      return
    }
    // A malformed response answers nothing of ours: JSON-RPC never answers a response.
    if (isResponse(parsed)) return this.onerror?.(new Error("a malformed JSON-RPC response was skipped"))
    this.answer(answerIdOf(line, parsed), ErrorCode.InvalidRequest, NOT_JSON_RPC)
  }

  private answer(id: AnswerId, code: number, message: string): void {
    this.onerror?.(new Error(message))
    // The SDK's message types have no id null; JSON-RPC answers a message whose id cannot be read with one.
    void this.send({ jsonrpc: "2.0", id, error: { code, message } } as unknown as JSONRPCMessage).catch(() => undefined)
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return Promise.reject(new Error("the transport is closed"))
    return new Promise((resolve) => {
      if (this.output.write(`${JSON.stringify(message)}\n`)) resolve()
      else this.output.once("drain", resolve)
    })
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.input.off("data", this.onData)
    this.input.off("end", this.onEnd)
    this.input.off("error", this.onError)
    this.input.pause()
    this.chunks = []
    this.skipping = undefined
    this.onclose?.()
  }
}
