export * as JsonRpc from "./json-rpc"

// Whether a parsed line from a server is a JSON-RPC message as MCP defines one (the SDK's JSONRPCMessageSchema: a
// request, a notification, a result or an error, each with no other members), checked by hand: every message a
// server sends passes here, and the SDK's schema union tries each shape in turn and copies the message. What the
// message carries (a result's content, a request's params) is checked where it is read, by the request's own schema.
// Pure: it reads the value and never changes it.

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
