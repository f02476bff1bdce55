export * as Replay from "./replay"

// What a call's record says a settle of it answers without running it (DESIGN §2 law 12): nothing yet (the call
// runs), a conflict (the record is another agent's or tool's, and is never shown), a wait (another settler runs it),
// the recorded settlement, or `interrupted` (begun and never settled). Pure: the settler reads records through it,
// and so does every edge that asks the settler what a call settled as.

import { Settlement } from "../contract/settlement"
import { Owner } from "../store/owner"
import { Store } from "../store/store"

/** The call as a record is checked against: its ids, the agent that asked and the tool it named. */
export interface Call {
  readonly sessionID: string
  readonly toolCallID: string
  readonly agent: string
  readonly name: string
}

export type Verdict =
  /** Nothing is recorded: the call runs. */
  | { readonly _tag: "Absent" }
  /** Recorded for another agent or tool: this error answers, recorded nowhere. */
  | { readonly _tag: "Conflict"; readonly settlement: Settlement.Info }
  /** Another settler runs the call now: its settlement is waited for. */
  | { readonly _tag: "Running" }
  /** Settled: the record replays, nothing runs. */
  | { readonly _tag: "Settled"; readonly settlement: Settlement.Info }
  /**
   * Begun and never settled, and no longer running: replays as this `interrupted`, recorded over `expected` (a call
   * whose owner is gone); a call recorded `failed` keeps that record (its reason, when it ended), and every replay
   * answers the same `interrupted` from it.
   */
  | { readonly _tag: "Interrupted"; readonly settlement: Settlement.Info; readonly expected: Store.Expected | undefined }

const ABSENT: Verdict = { _tag: "Absent" }
const RUNNING: Verdict = { _tag: "Running" }

/** What the record `known` (of the call's key) says a settle of `call` answers. */
export const of = (known: Store.Record | undefined, call: Call): Verdict => {
  if (known === undefined) return ABSENT
  const other = Store.otherThan(known, call)
  if (other !== undefined) return { _tag: "Conflict", settlement: conflict(call, other) }
  if (known.state === "settled") return { _tag: "Settled", settlement: known.settlement }
  if (known.state === "started" && known.running) return RUNNING
  return {
    _tag: "Interrupted",
    settlement: interrupted(call, known),
    expected: known.state === "failed" ? undefined : { state: "abandoned", owner: known.owner },
  }
}

/**
 * What an interrupted settle of `call` settled as: the settlement recorded for it (`cancelled`, also when it was
 * interrupted before it began, or the outcome that won the race); for a call another process runs, what stopping
 * waiting for it is (nothing ran here: it is not recorded, and the other's outcome will be); `undefined` when none
 * is recorded for this very call (the record is another agent's or tool's, or this process's own still running).
 */
export const settledAs = (known: Store.Record | undefined, call: Call): Settlement.Info | undefined => {
  if (known === undefined || Store.otherThan(known, call) !== undefined) return undefined
  if (known.state === "settled") return known.settlement
  if (known.state === "started" && known.running && known.owner !== Owner.current) {
    return Settlement.stoppedWaiting(call.name, call.toolCallID)
  }
  return undefined
}

/** Never the other's record: only that the id was used (by a call recorded, or running, for another tool or agent). */
export const conflict = (call: Call, other: "tool" | "agent"): Settlement.Info =>
  Settlement.error(
    call.name,
    call.toolCallID,
    "conflict",
    `The call id ${JSON.stringify(call.toolCallID)} in this session was already used ${other === "tool" ? "for another tool" : "by another agent"}; nothing ran. ` +
      `Call ${call.name} again with a new call id.`,
  )

/** What a call answers whose record was removed while another core ran it (see the settler's wait): never run again. */
export const forgotten = (call: Call): Settlement.Info =>
  Settlement.error(
    call.name,
    call.toolCallID,
    "interrupted",
    `${call.name} (${call.toolCallID}) was started by another core, and its record was removed before it settled. It ` +
      "may or may not have taken effect; check before calling it again with a new call id.",
  )

const interrupted = (call: Call, known: Store.Record & { readonly state: "started" | "failed" }): Settlement.Info =>
  Settlement.error(
    known.tool,
    call.toolCallID,
    "interrupted",
    known.state === "failed"
      ? `${known.tool} (${call.toolCallID}) ran but core could not settle it (an operational failure). It may ` +
          `have taken effect; check before calling it again with a new call id.`
      : `${known.tool} (${call.toolCallID}) was started but never settled: its core stopped, or could not reach its store, while it ran. It may ` +
          `or may not have taken effect; check before calling it again with a new call id.`,
  )
