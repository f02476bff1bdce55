export * as Activity from "./activity"

// What a long-running host tells its operator, one line per event on stderr: each settled call, each permission
// ask and reply. Lines are `core: EVENT key=value ...` with a fixed key order; a value that is not a plain word is
// JSON-quoted, so a line never breaks (ids and names come from clients). Inputs and ask resources may hold secrets:
// they are written at debug only, the input cut to DEBUG_INPUT_CHARS.

import { CallKey } from "../contract/call-key"
import type { Settlement } from "../contract/settlement"
import { Terminal } from "../contract/terminal"

export const LEVELS = ["error", "warn", "info", "debug"] as const
export type Level = (typeof LEVELS)[number]

export const isLevel = (text: string): text is Level => (LEVELS as ReadonlyArray<string>).includes(text)

/** How much of a call's input a debug line shows. */
export const DEBUG_INPUT_CHARS = 512

export interface Log {
  readonly level: Level
  readonly write: (line: string) => void
}

const rank = (level: Level) => LEVELS.indexOf(level)

/** Whether `log` writes lines of `level`. */
export const enabled = (log: Log | undefined, level: Level): log is Log => log !== undefined && rank(level) <= rank(log.level)

const PLAIN = /^[A-Za-z0-9_.:/@+-]+$/

/** A value of a line: a plain word as it is, anything else quoted (ids and names come from clients). */
export const value = (raw: string | number | boolean): string =>
  typeof raw !== "string" ? String(raw) : PLAIN.test(raw) ? raw : Terminal.quoted(raw)


/** `core: EVENT k=v ...`, leaving out undefined values. */
export const line = (event: string, fields: ReadonlyArray<readonly [string, string | number | boolean | undefined]>) =>
  `core: ${event}${fields.flatMap(([key, raw]) => (raw === undefined ? [] : [` ${key}=${value(raw)}`])).join("")}`

export interface Call {
  readonly sessionID: string
  readonly toolCallID: string
  readonly name: string
  readonly agent: string
  readonly input: unknown
}

const debugInput = (input: unknown): string => {
  const json = Terminal.json(JSON.stringify(input) ?? "null")
  return json.length <= DEBUG_INPUT_CHARS ? json : `${json.slice(0, DEBUG_INPUT_CHARS)}…`
}

/** A settled call (`failed` with the message when it ended operationally, without a settlement). */
export const settled = (
  log: Log | undefined,
  location: string,
  call: Call,
  outcome: { readonly settlement: Settlement.Info; readonly replayed: boolean } | { readonly failed: string },
  durationMs: number,
) => {
  const failed = "failed" in outcome
  if (!enabled(log, failed ? "error" : "info")) return
  log.write(
    line("call", [
      ["tool", CallKey.named(call.name)],
      ["call", call.toolCallID],
      ["session", call.sessionID],
      ["agent", call.agent],
      ["status", failed ? "failed" : outcome.settlement.status],
      ["error", failed ? undefined : outcome.settlement.error?.kind],
      ["duration_ms", Math.round(durationMs)],
      ["replayed", failed ? undefined : outcome.replayed || undefined],
      ["outputs", failed || outcome.settlement.outputs.length === 0 ? undefined : outcome.settlement.outputs.map((output) => output.id).join(",")],
      ["location", location],
      ["message", failed ? outcome.failed : undefined],
      // A replay's is the request's, not the recorded call's (core log shows that one): left out.
      ["input", enabled(log, "debug") && (failed || !outcome.replayed) ? debugInput(call.input) : undefined],
    ]),
  )
}

export const asked = (
  log: Log | undefined,
  location: string,
  request: { readonly id: string; readonly sessionID: string; readonly toolCallID: string; readonly action: string; readonly resources: ReadonlyArray<string> },
) => {
  if (!enabled(log, "info")) return
  log.write(
    line("ask", [
      ["id", request.id],
      ["call", request.toolCallID],
      ["session", request.sessionID],
      ["action", request.action],
      ["location", location],
      ["resources", enabled(log, "debug") ? JSON.stringify(request.resources) : undefined],
    ]),
  )
}

export const replied = (log: Log | undefined, location: string, reply: { readonly id: string; readonly sessionID: string; readonly reply: string }) => {
  if (!enabled(log, "info")) return
  log.write(line("reply", [["id", reply.id], ["session", reply.sessionID], ["reply", reply.reply], ["location", location]]))
}
