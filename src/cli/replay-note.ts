export * as ReplayNote from "./replay-note"

// What `core exec` says on stderr when it prints a settlement recorded before it ran (DESIGN §8's X-Core-Replayed):
// nothing ran, and how to run the call again. Imports nothing: the forwarded exec (./forward) words it too.

import { Terminal } from "../contract/terminal"

/** The note for the call `toolCallID` of `sessionID`, whose settlement's error is of `kind` (if an error). */
export const of = (sessionID: string, toolCallID: string, kind?: string): string => {
  const call = `call ${Terminal.shown(toolCallID)} of session ${Terminal.shown(sessionID)}`
  // Begun before and never settled (its core stopped): not a settlement recorded by whoever ran it.
  if (kind === "interrupted") {
    return (
      `core: replayed: ${call} was started before and never settled; it is answered as interrupted and nothing ran ` +
      "now (check whether it took effect; give a new --call to run the tool again)\n"
    )
  }
  return `core: replayed: ${call} was settled before; this is its recorded settlement and nothing ran (give a new --call to run the tool again)\n`
}

/**
 * The note for a call this core ran whose record another core made first (Steps.Settled's `superseded`): the tool
 * ran here, and the recorded settlement (of `kind`, if an error) answers it, for every caller.
 */
export const superseded = (sessionID: string, toolCallID: string, kind?: string): string =>
  `core: the tool of call ${Terminal.shown(toolCallID)} of session ${Terminal.shown(sessionID)} ran here, but its ` +
  `lease lapsed while it ran (this core was stopped, or could not reach the store) and another core recorded the ` +
  `call first${kind === "interrupted" ? " as interrupted" : ""}; that record is its settlement, for every caller. ` +
  "Check whether the tool took effect.\n"
