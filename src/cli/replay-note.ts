export * as ReplayNote from "./replay-note"

// What `core exec` says on stderr when it prints a settlement recorded before it ran (DESIGN §8's X-Core-Replayed):
// nothing ran, and how to run the call again. Imports nothing: the forwarded exec (./forward) words it too.

import { Terminal } from "../contract/terminal"

export const of = (sessionID: string, toolCallID: string): string =>
  `core: replayed: call ${Terminal.shown(toolCallID)} of session ${Terminal.shown(sessionID)} was settled before; ` +
  "this is its recorded settlement and nothing ran (give a new --call to run the tool again)\n"
