export * as Turn from "./turn"

// A call's turn at being prepared: the host lets a few calls be prepared at once, process-wide (../shell/preparing),
// and a call holds its turn until it first waits on the world. The settler ends it as the tool's execute starts: a
// tool that waits on I/O (a tool file's request, an MCP server, a timer) must not hold the next calls back for the
// whole budget. A tool that prepares inside its execute (bash: the line parsed, the sandbox and the guard set up)
// keeps it (`keeps`) and ends it itself once it is about to wait.

import * as Effect from "effect/Effect"
import * as Internal from "../tool/internal"
import { PreparingTurn } from "../tool/preparing-turn"

/** Ends the running call's turn (idempotent); undefined outside a gated call. */
export const End = PreparingTurn.End

/** The records (Internal) of the tools that keep their turn. */
const keeping = new WeakSet<Internal.Record>()

/** Marks `tool` as one whose execute ends the call's turn itself (see Preparing.done); answers it. */
export const keeps = <T extends object>(tool: T): T => {
  const record = Internal.get(tool)
  if (record !== undefined) keeping.add(record)
  return tool
}

/** Ends the call's turn as the execute of the tool of `record` starts, unless the tool keeps it. */
export const startExecuting = (record: Internal.Record): Effect.Effect<void> =>
  keeping.has(record) ? Effect.void : PreparingTurn.end
