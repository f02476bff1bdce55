export * as JsonRpc from "./json-rpc"

// Whether a parsed line from a server is a JSON-RPC message as MCP defines one (the SDK's JSONRPCMessageSchema: a
// request, a notification, a result or an error, each with no other members), checked by hand: every message a
// server sends passes here, and the SDK's schema union tries each shape in turn and copies the message. What the
// message carries (a result's content, a request's params) is checked where it is read, by the request's own schema.
// Pure: it reads the value and never changes it. A malformed answer to a request becomes an error for that request
// (`stoodIn`), which the transports hand on in its place: each transport reads its server's messages itself.

import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"

const VERSION = "2.0"
/** The key of `_meta` naming the task a message belongs to. */
const RELATED_TASK = "io.modelcontextprotocol/related-task"

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A request id or progress token: a string or a safe integer. */
const isId = (value: unknown): boolean => typeof value === "string" || Number.isSafeInteger(value)

/** `_meta` as requests, notifications and results may carry it: any members, two of them typed. */
const isMeta = (value: unknown): boolean => {
  if (!isRecord(value)) return false
  if (value.progressToken !== undefined && !isId(value.progressToken)) return false
  const task = value[RELATED_TASK]
  return task === undefined || (isRecord(task) && typeof task.taskId === "string")
}

/** An object whose `_meta`, if any, is one (a request's or notification's params, a result). */
const isCarrier = (value: unknown): boolean => isRecord(value) && (value._meta === undefined || isMeta(value._meta))

/** Whether every key of `message` is one of `allowed`. */
const only = (message: Record<string, unknown>, allowed: ReadonlySet<string>): boolean => {
  for (const key in message) if (!allowed.has(key)) return false
  return true
}

const REQUEST: ReadonlySet<string> = new Set(["jsonrpc", "id", "method", "params"])
const NOTIFICATION: ReadonlySet<string> = new Set(["jsonrpc", "method", "params"])
const RESULT: ReadonlySet<string> = new Set(["jsonrpc", "id", "result"])
const ERROR: ReadonlySet<string> = new Set(["jsonrpc", "id", "error"])

const isError = (value: unknown): boolean =>
  isRecord(value) && Number.isSafeInteger(value.code) && typeof value.message === "string"

/** Whether `value` (a parsed line) is a JSON-RPC message: exactly one of the four shapes, nothing more. */
export const isMessage = (value: unknown): value is JSONRPCMessage => {
  if (!isRecord(value) || value.jsonrpc !== VERSION) return false
  if ("method" in value) {
    if (typeof value.method !== "string" || (value.params !== undefined && !isCarrier(value.params))) return false
    return "id" in value ? isId(value.id) && only(value, REQUEST) : only(value, NOTIFICATION)
  }
  if ("result" in value) return isId(value.id) && isCarrier(value.result) && only(value, RESULT)
  if ("error" in value) return (value.id === undefined || isId(value.id)) && isError(value.error) && only(value, ERROR)
  return false
}

/** What a JSON value is, in a word: a hostile one is described, never shown (it may be huge, or nested past any stack). */
const typeOf = (value: unknown): string =>
  value === undefined ? "missing" : value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`

/** Members a flawed answer names at most, each cut to this many characters. */
const MAX_NAMED = 3
const MAX_NAME_CHARS = 40

/**
 * What is wrong with `value` (a parsed line that is no message: see `isMessage`) when it is still plainly the answer
 * to a request (an id, a `result` or an `error`, no `method`): a result that is no object, an error without its code
 * or message, members JSON-RPC does not have (`"error": null` beside a result). Undefined for anything else. The
 * request it answers is then failed at once, saying so, rather than left to wait out its timeout. Never throws, and
 * says little of what the server sent.
 */
export const answerFlaw = (value: unknown): { readonly id: string | number; readonly why: string } | undefined => {
  if (!isRecord(value) || "method" in value || !isId(value.id) || !("result" in value || "error" in value)) return undefined
  const id = value.id as string | number
  if (value.jsonrpc !== VERSION) return { id, why: `its "jsonrpc" is ${typeOf(value.jsonrpc)}, not "2.0"` }
  if ("result" in value && "error" in value) return { id, why: 'it holds both a "result" and an "error"' }
  const allowed = "result" in value ? RESULT : ERROR
  const extra = Object.keys(value).filter((key) => !allowed.has(key))
  if (extra.length > 0) {
    const named = extra.slice(0, MAX_NAMED).map((key) => JSON.stringify(key.slice(0, MAX_NAME_CHARS)))
    return { id, why: `it holds members JSON-RPC does not have: ${named.join(", ")}${extra.length > MAX_NAMED ? ` and ${extra.length - MAX_NAMED} more` : ""}` }
  }
  if ("result" in value) return { id, why: `its result is ${isRecord(value.result) ? "an object whose _meta is malformed" : `${typeOf(value.result)}, not an object`}` }
  return { id, why: "its error has no integer code and message" }
}

/** JSON-RPC's "internal error": what a malformed answer is reported to its request as. */
const INTERNAL_ERROR = -32603
/**
 * What marks the error core makes of a malformed answer (in its `data`, with what is wrong in `why`): a token of this
 * process, which no server can send, so that ../connection words only core's own as such.
 */
const MALFORMED = crypto.randomUUID()

/**
 * What a transport hands on in place of `value` (a parsed message that is not one: see `isMessage`) when it is
 * plainly a malformed answer to a request (`answerFlaw`): an error for that request, saying what is wrong, so that
 * it fails now rather than wait out its timeout and blame the server's silence. Undefined for anything else.
 */
export const stoodIn = (value: unknown): JSONRPCMessage | undefined => {
  const flaw = answerFlaw(value)
  if (flaw === undefined) return undefined
  return {
    jsonrpc: VERSION,
    id: flaw.id,
    error: {
      code: INTERNAL_ERROR,
      message: `the server's answer to this request is not valid JSON-RPC: ${flaw.why}`,
      data: { malformed: MALFORMED, why: flaw.why },
    },
  }
}

/**
 * What a transport hands on in place of an answer to request `id` that it dropped unread for its `length` (in
 * characters), over the `limit` it reads: an error for that request, so that it fails now rather than wait out its
 * timeout.
 */
export const tooLong = (id: string | number, length: number, limit: number): JSONRPCMessage => ({
  jsonrpc: VERSION,
  id,
  error: {
    code: INTERNAL_ERROR,
    message: `the server's answer to this request is a message of ${length} characters, over the ${limit} core reads`,
    data: { malformed: MALFORMED, length, limit },
  },
})

/** The length and limit of an answer dropped unread, when `cause` (an error a request failed with) is core's `tooLong`. */
export const tooLongOf = (cause: { readonly data?: unknown }): { readonly length: number; readonly limit: number } | undefined => {
  const data = cause.data as { readonly malformed?: unknown; readonly length?: unknown; readonly limit?: unknown } | undefined
  return typeof data === "object" && data !== null && data.malformed === MALFORMED && typeof data.length === "number" && typeof data.limit === "number"
    ? { length: data.length, limit: data.limit }
    : undefined
}

/** What is wrong with a malformed answer, when `cause` (an error a request failed with) is core's own saying so. */
export const malformedWhy = (cause: { readonly data?: unknown }): string | undefined => {
  const data = cause.data as { readonly malformed?: unknown; readonly why?: unknown } | undefined
  return typeof data === "object" && data !== null && data.malformed === MALFORMED && typeof data.why === "string" ? data.why : undefined
}
