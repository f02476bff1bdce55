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

/** The longest an id may be once escaped for a URL path (encodeURIComponent): the routes naming a call take no longer. */
export const MAX_PATH_CHARS = 4096
/** Escaped, a UTF-16 code unit takes at most 9 characters (its UTF-8 bytes as %XX each): an id this short fits. */
const SURELY_FITS = Math.floor(MAX_PATH_CHARS / 9)

/** Whether the well-formed `id` fits a URL path's segment once escaped (escaped only when it may not). */
const fits = (id: string): boolean =>
  id.length <= SURELY_FITS || (id.length <= MAX_PATH_CHARS && encodeURIComponent(id).length <= MAX_PATH_CHARS)

/**
 * Whether `id` can be kept apart from every other id, and named in a URL path: whole characters (no lone surrogate),
 * no NUL, not `.` or `..` (a path reads them as steps: `/v1/settlements/s/..` is `/v1/settlements/`), and at most
 * MAX_PATH_CHARS escaped (a longer one could be recorded, but its call never cancelled or looked up by its route).
 */
export const keepable = (id: string): boolean =>
  id.isWellFormed() && !id.includes("\u0000") && id !== "." && id !== ".." && fits(id)

/** What keeps an id from being a call's (`keepable`), where something does. */
export const flawOf = (id: string): "step" | "nul" | "surrogate" | "long" | undefined => {
  if (keepable(id)) return undefined
  if (id === "." || id === "..") return "step"
  if (!id.isWellFormed()) return "surrogate"
  return id.includes("\u0000") ? "nul" : "long"
}

/** Why the id `name` (`sessionID`, ...) cannot be a call's, in words for whoever sent it; undefined when it can. */
export const problemOf = (name: string, id: string): string | undefined => {
  const flaw = flawOf(id)
  const shown = `The ${name} ${flaw === "long" ? `${JSON.stringify(id.slice(0, 40))}… (${id.length} characters)` : JSON.stringify(id)}`
  switch (flaw) {
    case undefined:
      return undefined
    case "step":
      return `${shown} cannot name a call in a URL path, which reads it as a step ("." here, ".." up). Send another id.`
    case "nul":
      return `${shown} holds a NUL character (U+0000), which the settlement stores cannot keep. Send ids without it.`
    case "surrogate":
      return `${shown} is not well-formed Unicode (it holds a lone surrogate): ids are kept as UTF-8, where it would be another call's id. Send ids of whole characters.`
    case "long":
      return `${shown} is longer than ${MAX_PATH_CHARS} characters escaped for a URL path, so no route could name its call (to cancel it or look it up). Send a shorter id.`
  }
}

/**
 * Why a call's ids cannot be kept apart from another call's, or undefined when they can: an id that is not
 * well-formed Unicode (a lone surrogate, as JSON's `"\ud800"` makes) is stored as UTF-8 with U+FFFD in its place,
 * so `"a\ud800"` and `"a\udfff"` would be one call, and the second answered the first's settlement; an id holding
 * a NUL character cannot be kept by every store (Postgres refuses it in text), so none takes it; and `.` or `..`
 * could be recorded but never named by the routes that find a call by its ids.
 */
export const malformed = (ids: Ids & { readonly assistantMessageID?: string }): string | undefined => {
  // Checked on every settle: six calls, no allocation, unless one is malformed.
  if (keepable(ids.sessionID) && keepable(ids.toolCallID) && (ids.assistantMessageID === undefined || keepable(ids.assistantMessageID))) return undefined
  return (
    problemOf("sessionID", ids.sessionID) ??
    problemOf("toolCallID", ids.toolCallID) ??
    (ids.assistantMessageID === undefined ? undefined : problemOf("assistantMessageID", ids.assistantMessageID))
  )
}
