export * as CallKey from "./call-key"

// One string per call, for every map that holds calls: its Location, its session and the id the model gave it (what
// its record is kept under). A running call that a duplicate may join is keyed with the agent that asked and the tool
// it named as well: asked by another agent or under another tool, the same ids are another call, which meets a
// conflict and never this call's result.

/** The session and call id a call came with. */
export interface Ids {
  readonly sessionID: string
  readonly toolCallID: string
}

/** Who asked for a call, and under which tool name. */
export interface Asked {
  readonly agent: string
  readonly name: string
}

/** The key of the call `ids` in `location`; with `asked`, of that running call as a duplicate may join it. */
export const of = (location: string, ids: Ids, asked?: Asked): string =>
  asked === undefined
    ? JSON.stringify([location, ids.sessionID, ids.toolCallID])
    : JSON.stringify([location, ids.sessionID, ids.toolCallID, asked.agent, asked.name])

/**
 * Why a call's ids cannot be kept apart from another call's, or undefined when they can: an id that is not
 * well-formed Unicode (a lone surrogate, as JSON's `"\ud800"` makes) is stored as UTF-8 with U+FFFD in its place,
 * so `"a\ud800"` and `"a\udfff"` would be one call, and the second answered the first's settlement.
 */
export const malformed = (ids: Ids & { readonly assistantMessageID?: string }): string | undefined => {
  // Checked on every settle: three calls, no allocation, unless one is malformed.
  if (ids.sessionID.isWellFormed() && ids.toolCallID.isWellFormed() && (ids.assistantMessageID?.isWellFormed() ?? true)) return undefined
  const [name, id] = !ids.sessionID.isWellFormed()
    ? ["sessionID", ids.sessionID]
    : !ids.toolCallID.isWellFormed()
      ? ["toolCallID", ids.toolCallID]
      : ["assistantMessageID", ids.assistantMessageID!]
  return `The ${name} ${JSON.stringify(id)} is not well-formed Unicode (it holds a lone surrogate): ids are kept as UTF-8, where it would be another call's id. Send ids of whole characters.`
}
