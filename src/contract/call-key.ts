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
export const keepable = (id: string): boolean => wholeText(id) && id !== "." && id !== ".." && fits(id)

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
 * The most characters of the tool name a call asked for that are kept as they are. A registered name has at most 64
 * (law 4), so a longer one names no tool; it is a model's text, of any length, and is kept (in the call's record, the
 * log lines, the spans, `core log`) as `named` makes it.
 */
export const MAX_NAME = 256
/** How many of a long name's first characters its kept form shows. */
const SHOWN = 192

/**
 * The tool name `name` is kept and answered under: `name` itself when it has at most MAX_NAME characters, else its
 * first SHOWN characters with its length and its whole SHA-256 (about 290 characters), so that neither grows the
 * store or a log by its megabytes. One to one: two long names keep two forms, and a kept form, longer than
 * MAX_NAME, is never a name kept as it is (sent as a name, it is kept as another), so a retry under another name is
 * a conflict, as for any two names (law 12). Applied where a call is settled (the settler), and where it is shown.
 */
export const named = (name: string): string => {
  if (name.length <= MAX_NAME) return name
  // Not cut between the two halves of a character.
  const end = SHOWN - (/[\ud800-\udbff]/.test(name[SHOWN - 1]!) ? 1 : 0)
  const digest = new Bun.CryptoHasher("sha256").update(name).digest("hex")
  return `${name.slice(0, end)}…(${name.length} characters, sha256 ${digest})`
}

/**
 * Why a call's ids cannot be kept apart from another call's, or undefined when they can: an id that is not
 * well-formed Unicode (a lone surrogate, as JSON's `"\ud800"` makes) is stored as UTF-8 with U+FFFD in its place,
 * so `"a\ud800"` and `"a\udfff"` would be one call, and the second answered the first's settlement; an id holding
 * a NUL character cannot be kept by every store (Postgres refuses it in text), so none takes it; and `.` or `..`
 * could be recorded but never named by the routes that find a call by its ids.
 */
export const malformed = (ids: Ids & { readonly assistantMessageID?: string; readonly name?: string }): string | undefined => {
  // Checked on every settle: eight calls, no allocation, unless one is malformed.
  if (
    keepable(ids.sessionID) &&
    keepable(ids.toolCallID) &&
    (ids.assistantMessageID === undefined || keepable(ids.assistantMessageID)) &&
    (ids.name === undefined || wholeText(ids.name))
  ) {
    return undefined
  }
  return (
    problemOf("sessionID", ids.sessionID) ??
    problemOf("toolCallID", ids.toolCallID) ??
    (ids.assistantMessageID === undefined ? undefined : problemOf("assistantMessageID", ids.assistantMessageID)) ??
    (ids.name === undefined ? undefined : nameProblem(ids.name))
  )
}

/** Whether every store keeps `text` as it is: whole characters (no lone surrogate) and no NUL. */
const wholeText = (text: string): boolean => text.isWellFormed() && !text.includes("\u0000")

/**
 * Why a tool name cannot be kept as the name a call asked for (the store keeps it with the call, and compares a
 * retry's with it): a NUL, which Postgres refuses in text, or a lone surrogate, which a store keeps as U+FFFD, so that
 * the retry would be another tool's call (a conflict) where it should be answered the record.
 */
const nameProblem = (name: string): string | undefined => {
  if (wholeText(name)) return undefined
  const shown = `The tool name ${JSON.stringify(named(name))}`
  return name.includes("\u0000")
    ? `${shown} holds a NUL character (U+0000), which no tool's name has and the settlement stores cannot keep. Call a tool by its name.`
    : `${shown} is not well-formed Unicode (it holds a lone surrogate), which no tool's name is. Call a tool by its name.`
}
