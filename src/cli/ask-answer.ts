export * as AskAnswer from "./ask-answer"

// How `core exec` answers one permission ask, whether the call runs in process or in a `core serve` it forwards to:
// on a terminal a person is prompted (once / always / reject, with an optional message for the model); `--yes`
// approves each ask once; otherwise an ask is declined, since nobody is there to answer it. A change to core's own
// configuration is never approved without a person: `--yes` does not stand in for one. Prompts and notes go to
// stderr. What an ask names (a command, a path) is the model's: shown with every character a terminal acts on
// escaped, and the prompt written on a cleared line in the default rendition, so that nothing printed before it (a
// command's output that concealed what follows, or moved the cursor) can hide what the person approves. Imports
// nothing but types and a message: the forwarding path loads it without Effect.

import { Terminal } from "../contract/terminal"
import type { Permission } from "../permission/permission"
import { ProtectedMessage } from "../permission/protected-message"

export interface Options {
  /** Approve every ask once without prompting. */
  readonly yes: boolean
  /** Whether a person can be prompted (stdin and stderr are terminals). */
  readonly interactive: boolean
  /**
   * The command line the call runs, for a `bash` call (lineOf): shown with an ask about a part of it, since a part
   * alone (`sh`) does not show what the rest feeds it (`cat <<EOF | sh`).
   */
  readonly line?: string | undefined
}

/** The command line of a call of `tool` with `input`, when it is a bash call: what an ask about part of it is shown with. */
export const lineOf = (tool: string, input: unknown): string | undefined => {
  const command = tool === "bash" && typeof input === "object" && input !== null ? (input as { command?: unknown }).command : undefined
  return typeof command === "string" ? command : undefined
}

/** The most characters of one resource the question beside the choices shows; a longer one is shown whole above it. */
const MAX_BRIEF_CHARS = 160

/** What an ask shows: its action and resources, and what it changes of core's own configuration, if anything. */
export interface Ask {
  readonly action: string
  readonly resources: ReadonlyArray<string>
  readonly save: ReadonlyArray<string>
  readonly protected?: string | undefined
}

export const describe = (request: Ask) =>
  `${Terminal.inline(request.action)} on ${request.resources.map(Terminal.quoted).join(", ")}`

/**
 * The ask as the question beside the choices shows it: each resource past MAX_BRIEF_CHARS cut, saying how long it
 * is, so that the question and what it is about stay on screen together (a 70 KB command scrolled its start away).
 */
const brief = (request: Ask) =>
  `${Terminal.inline(request.action)} on ${request.resources
    .map((resource) => {
      const shown = Terminal.quoted(resource)
      if (shown.length <= MAX_BRIEF_CHARS) return shown
      // Not between the two halves of a character (quoted escapes the rest: only a pair of surrogates can be cut).
      const cut = /[\ud800-\udbff]/.test(shown[MAX_BRIEF_CHARS - 1]!) ? MAX_BRIEF_CHARS - 1 : MAX_BRIEF_CHARS
      return `${shown.slice(0, cut)}…" (${resource.length} characters, shown above)`
    })
    .join(", ")}`

/**
 * Reads lines from the terminal through one readline interface, made when a person is first asked (loading
 * node:readline only then) and kept: a second interface would miss lines the first had already buffered.
 */
export const terminalReader = (write: (text: string) => void) => {
  let lines: { readonly iterator: AsyncIterator<string>; readonly close: () => void } | undefined
  return {
    readLine: async (prompt: string): Promise<string | undefined> => {
      if (lines === undefined) {
        const { createInterface } = require("node:readline") as typeof import("node:readline")
        const terminal = createInterface({ input: process.stdin, terminal: false })
        // The iterator buffers lines typed ahead of the next prompt.
        lines = { iterator: terminal[Symbol.asyncIterator](), close: () => terminal.close() }
      }
      write(prompt)
      const next = await lines.iterator.next()
      return next.done === true ? undefined : next.value
    },
    close: () => lines?.close(),
  }
}

/** What a person answered, as a reply. */
export const promptReply = async (
  request: Ask,
  readLine: (prompt: string) => Promise<string | undefined>,
  line?: string,
): Promise<Permission.Reply> => {
  const saves = request.save.length === 0 ? "nothing: it acts as once" : request.save.map(Terminal.quoted).join(", ")
  const shortened = brief(request)
  // What the question alone would not show: the whole command line it is part of, the whole of a long resource.
  const context = [
    ...(line !== undefined && (request.resources.length !== 1 || request.resources[0] !== line) ? [`core: the command line: ${Terminal.quoted(line)}\n`] : []),
    ...(shortened === describe(request) ? [] : [`core: asked: ${describe(request)}\n`]),
    ...(request.protected === undefined ? [] : [`core: this changes ${Terminal.inline(request.protected)}: asked each time, never saved.\n`]),
  ].join("")
  for (;;) {
    const typed = await readLine(`${Terminal.PROMPT_START}${context}core: allow ${shortened}? [o]nce, [a]lways (saves ${saves}), [r]eject: `)
    // The end of input (the terminal closed, or core is stopping) answers nothing, which declines.
    if (typed === undefined) return { reply: "reject" }
    const answer = typed.trim().toLowerCase()
    if (answer === "o" || answer === "once") return { reply: "once" }
    if (answer === "a" || answer === "always") return { reply: "always" }
    if (answer === "r" || answer === "reject" || answer === "") {
      const message = ((await readLine(`${Terminal.PROMPT_START}core: a message for the model (leave empty to decline): `)) ?? "").trim()
      return message === "" ? { reply: "reject" } : { reply: "reject", message }
    }
  }
}

/** The reply to `request`: a person's, through `readLine`, when one must be asked; `write` takes the notes. */
export const reply = async (
  request: Ask,
  options: Options,
  readLine: (prompt: string) => Promise<string | undefined>,
  write: (text: string) => void,
): Promise<Permission.Reply> => {
  if (request.protected !== undefined && !options.interactive) {
    write(`core: refused ${describe(request)}: it changes ${Terminal.inline(request.protected)}, and only a person on a terminal may approve that (--yes does not)\n`)
    return { reply: "reject", message: ProtectedMessage.personRequired(request.protected, request.resources) }
  }
  if (options.yes && request.protected === undefined) {
    write(`core: approved once (--yes): ${describe(request)}\n`)
    return { reply: "once" }
  }
  if (options.interactive) return promptReply(request, readLine, options.line)
  write(`core: declined ${describe(request)}: no terminal to ask; pass --yes to approve it once\n`)
  return { reply: "reject", unattended: true, why: UNATTENDED_WHY }
}

/** Why an ask of `core exec` was declined without a person. */
export const UNATTENDED_WHY = "core exec has no terminal to ask a person"
