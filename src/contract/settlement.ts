export * as Settlement from "./settlement"

// The settlement: the outcome of one tool call as hosts, scripts and the store see it (DESIGN §5, a contract).
// One Effect schema is the source of the JSON shape, its decoding from the store and its documentation.

import * as Schema from "effect/Schema"
import { Output } from "../output/output"
import { Cancelled } from "./cancelled"

export const ErrorKind = Schema.Literals([
  "failure",
  "unknown",
  "invalid_input",
  "invalid_output",
  "stale",
  "denied",
  "interrupted",
  "conflict",
])
export type ErrorKind = typeof ErrorKind.Type

export const Status = Schema.Literals(["success", "error", "declined", "cancelled"])
export type Status = typeof Status.Type

export const Info = Schema.Struct({
  tool: Schema.String,
  callID: Schema.String,
  status: Status,
  content: Schema.Array(Output.Part),
  structured: Schema.Json,
  error: Schema.optionalKey(Schema.Struct({ kind: ErrorKind, message: Schema.String })),
  outputs: Schema.Array(Output.Ref),
})
export type Info = typeof Info.Type

/** A model-visible error settlement: the message is also the one text part the model reads. */
export const error = (tool: string, callID: string, kind: ErrorKind, message: string): Info => ({
  tool,
  callID,
  status: "error",
  content: [{ type: "text", text: message }],
  structured: null,
  error: { kind, message },
  outputs: [],
})

/**
 * A runner outcome (declined or cancelled): not a tool result, nothing for the model beyond a short note, and for a
 * cancelled call what it did while it was stopped (the processes it had started that were ended).
 */
export const runnerOutcome = (
  tool: string,
  callID: string,
  status: "declined" | "cancelled",
  stopping: ReadonlyArray<string> = [],
): Info => ({
  tool,
  callID,
  status,
  content: [
    {
      type: "text",
      text:
        status === "cancelled" ? Cancelled.text(tool, stopping) : declinedText(tool, undefined),
    },
  ],
  structured: null,
  outputs: [],
})

/** A settle that only waited for another process's call of the same ids, stopped: its text says nothing ran here. */
export const stoppedWaiting = (tool: string, callID: string): Info => ({
  ...runnerOutcome(tool, callID, "cancelled"),
  content: [{ type: "text", text: Cancelled.stoppedWaiting(tool) }],
})

/** A call cancelled before it began running: nothing of it ran, and its text says so. */
export const cancelledBeforeStart = (tool: string, callID: string): Info => ({
  ...runnerOutcome(tool, callID, "cancelled"),
  content: [{ type: "text", text: Cancelled.beforeStart(tool) }],
})

/** What a declined permission ask was for, and whether a person answered it. */
export interface DeclinedAsk {
  readonly action: string
  readonly resources: ReadonlyArray<string>
  /** No person answered: nobody could be asked, or core stopped first. */
  readonly unattended: boolean
  /** When unattended: why nobody could be asked, naming the face. */
  readonly why?: string
}

const MAX_SHOWN_RESOURCES = 3

/** How a command line core could not read is named in an ask (before the line itself), whatever tool asks. */
export const UNPARSED = "<unparsed>"

const shownResources = (resources: ReadonlyArray<string>): string => {
  const shown = resources.slice(0, MAX_SHOWN_RESOURCES).map((resource) => JSON.stringify(resource)).join(", ")
  const more = resources.length - MAX_SHOWN_RESOURCES
  return more > 0 ? `${shown} and ${more} more` : shown
}

/**
 * What the model reads of a call declined at a permission ask: what was asked for, who declined it (a person, or
 * nobody could be asked, and why, naming the face), and whether calling again can help.
 */
const declinedText = (tool: string, ask: DeclinedAsk | undefined): string => {
  const asked =
    ask === undefined
      ? "the permission it needed"
      : `permission for ${ask.action}${ask.resources.length === 0 ? "" : ` on ${shownResources(ask.resources)}`}`
  if (ask === undefined) return `${tool} did not run: ${asked} was not granted (declined, or nobody could approve it).`
  if (!ask.unattended) {
    return `${tool} did not run: a person declined ${asked}. Do not call it again unchanged; ask the user what they want.`
  }
  // A line asked only because it could not be read is most often a mistake in it: saying so saves a person's time.
  const unread = ask.resources.some((resource) => resource.startsWith(`${UNPARSED} `))
  return (
    `${tool} did not run: ${asked} needs a person's approval, and ${ask.why ?? "nobody was there to answer"}. ` +
    (unread
      ? "It needs one because core could not read the line as bash (a syntax error, such as an unclosed quote, " +
        "bracket or $((, or a line too complex to read): if it holds a mistake, fix it and call again; otherwise " +
        "ask the user to approve it (calling it again unchanged is declined the same way)."
      : `Calling it again unchanged is declined the same way; ask the user to approve it.`)
  )
}

/** A call declined at a permission ask: a runner outcome whose note says what was asked, who declined and what to do. */
export const declined = (tool: string, callID: string, ask: DeclinedAsk): Info => ({
  ...runnerOutcome(tool, callID, "declined"),
  content: [{ type: "text", text: declinedText(tool, ask) }],
})
