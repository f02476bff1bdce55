export * as Recorded from "./recorded"

// The recorded calls as operators read them (`core log`, `GET /v1/settlements`): one schema for both, the entry
// made from a store listing, and the `since` syntax both accept. No store access and no output formatting here.

import * as Schema from "effect/Schema"
import { Settlement } from "../contract/settlement"
import type { Store } from "../store/store"

/** How many calls a listing gives when not told, and at most. */
export const DEFAULT_LIMIT = 100
export const MAX_LIMIT = 10_000

export const Status = Schema.Literals(["success", "error", "declined", "cancelled", "running", "interrupted", "failed"]).annotate({
  description:
    "A settlement's status; or running (begun, not settled yet), interrupted (begun by a core that stopped before " +
    "settling it: settling it again answers interrupted), failed (core failed operationally while running it)",
})
export type Status = typeof Status.Type

export const Entry = Schema.Struct({
  sessionID: Schema.String,
  toolCallID: Schema.String,
  tool: Schema.String,
  status: Status,
  error: Schema.optionalKey(Schema.Struct({ kind: Settlement.ErrorKind, message: Schema.String })),
  reason: Schema.optionalKey(Schema.String.annotate({ description: "With failed: what failed (for operators)" })),
  agent: Schema.NullOr(Schema.String),
  location: Schema.String,
  messageID: Schema.NullOr(Schema.String).annotate({ description: "The assistant message (the model's turn) that made the call" }),
  input: Schema.Json.annotate({
    description:
      "The input as the model sent it; when it was over 8 KiB of JSON, the first 8 KiB of that JSON as a string " +
      "(inputTruncated); null for calls recorded before inputs were",
  }),
  inputTruncated: Schema.Boolean,
  inputBytes: Schema.NullOr(Schema.Finite).annotate({ description: "The whole input's JSON size in bytes" }),
  startedAt: Schema.NullOr(Schema.String).annotate({ description: "When core received the call (ISO 8601)" }),
  settledAt: Schema.NullOr(Schema.String).annotate({ description: "When it settled (ISO 8601); null while running" }),
  durationMs: Schema.NullOr(Schema.Finite),
  outputs: Schema.Array(Schema.Struct({ id: Schema.String, bytes: Schema.Finite })),
}).annotate({ identifier: "RecordedCall", description: "A recorded call: who made it, with what, and how it ended" })
export type Entry = typeof Entry.Type

const iso = (at: number | undefined) => (at === undefined ? null : new Date(at).toISOString())

const inputOf = (listed: Store.Listed): { input: Schema.Json; inputTruncated: boolean } => {
  if (listed.input === undefined) return { input: null, inputTruncated: false }
  const truncated = listed.inputBytes !== undefined && Buffer.byteLength(listed.input) < listed.inputBytes
  if (truncated) return { input: listed.input, inputTruncated: true }
  try {
    return { input: JSON.parse(listed.input) as Schema.Json, inputTruncated: false }
  } catch {
    return { input: listed.input, inputTruncated: true }
  }
}

/** A store listing as operators read it. */
export const entryOf = (listed: Store.Listed): Entry => {
  const { record } = listed
  const status: Status =
    record.state === "settled"
      ? record.settlement.status
      : record.state === "failed"
        ? "failed"
        : record.running
          ? "running"
          : "interrupted"
  const { startedAt, settledAt } = listed
  return {
    sessionID: listed.sessionID,
    toolCallID: listed.toolCallID,
    tool: listed.tool,
    status,
    ...(record.state === "settled" && record.settlement.error !== undefined ? { error: record.settlement.error } : {}),
    ...(record.state === "failed" ? { reason: record.reason } : {}),
    agent: listed.agent ?? null,
    location: listed.location,
    messageID: listed.messageID ?? null,
    ...inputOf(listed),
    inputBytes: listed.inputBytes ?? null,
    startedAt: iso(startedAt),
    settledAt: iso(settledAt),
    durationMs: startedAt === undefined || settledAt === undefined ? null : Math.max(0, settledAt - startedAt),
    outputs: record.state === "settled" ? record.settlement.outputs : [],
  }
}

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/**
 * `since` as epoch ms: an ISO 8601 time (a date, or a date and time; without an offset in UTC, as `core log` shows
 * times), or a duration back from `now` (`90s`, `10m`, `2h`, `7d`). Anything else, a day the month does not have
 * among it, is a problem, in words.
 */
export const parseSince = (text: string, now: number): { readonly at: number } | { readonly problem: string } => {
  const problem = `must be an ISO time (2026-01-31 or 2026-01-31T10:00:00Z; UTC unless it says otherwise) or a duration like 10m, 2h or 7d, not ${JSON.stringify(text)}`
  const trimmed = text.trim()
  const duration = /^(\d{1,9})([smhd])$/.exec(trimmed)
  if (duration !== null) return { at: now - Number(duration[1]) * UNIT_MS[duration[2] as keyof typeof UNIT_MS] }
  const time = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|([+-])(\d{2}):?(\d{2}))?)?$/.exec(trimmed)
  if (time === null) return { problem }
  const [, year, month, day, hour = "0", minute = "0", second = "0", fraction = "", , sign, offsetHours = "0", offsetMinutes = "0"] = time
  const fields = [Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second)] as const
  // Date.UTC reads the years 0 to 99 as 1900 to 1999: the year is set on its own.
  // Milliseconds are the fraction's first three digits: as a number, seventeen nines and more rounded up to a second.
  const ms = Number(fraction.slice(1, 4).padEnd(3, "0"))
  const made = new Date(Date.UTC(2000, fields[1], fields[2], fields[3], fields[4], fields[5], ms))
  made.setUTCFullYear(fields[0])
  const utc = made.getTime()
  // Date.UTC rolls an impossible day over (February 31 is March 3): such a time is refused, not moved.
  if (
    made.getUTCFullYear() !== fields[0] || made.getUTCMonth() !== fields[1] || made.getUTCDate() !== fields[2] ||
    made.getUTCHours() !== fields[3] || made.getUTCMinutes() !== fields[4] || made.getUTCSeconds() !== fields[5] ||
    Number(offsetHours) > 23 || Number(offsetMinutes) > 59
  ) {
    return { problem }
  }
  const offset = sign === undefined ? 0 : (sign === "-" ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000
  return { at: utc - offset }
}
