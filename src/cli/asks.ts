export * as Asks from "./asks"

// Answers permission asks for `core exec`: on a terminal a person is prompted (once / always / reject, with an
// optional message for the model); `--yes` approves each ask once; otherwise an ask is declined, since nobody
// is there to answer it. A change to core's own configuration is never approved without a person: `--yes`
// does not stand in for one (it is given in advance, without seeing the request). Prompts and notes go to stderr; stdout stays the settlement's.

import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import { Permission } from "../permission/permission"
import { Command } from "./command"

export interface Options {
  /** Approve every ask once without prompting. */
  readonly yes: boolean
  /** Whether a person can be prompted (stdin and stderr are terminals). */
  readonly interactive: boolean
  /** Reads one line typed by the person (undefined at the end of input); only used when interactive. */
  readonly readLine?: (prompt: string) => Promise<string | undefined>
}

const describe = (request: Permission.Request) =>
  `${request.action} on ${request.resources.map((resource) => JSON.stringify(resource)).join(", ")}`

/**
 * Reads lines from the terminal through one readline interface, made when a person is first asked (loading
 * node:readline only then) and kept: a second interface would miss lines the first had already buffered.
 */
const terminalReader = () => {
  let lines: { readonly iterator: AsyncIterator<string>; readonly close: () => void } | undefined
  return {
    readLine: async (prompt: string): Promise<string | undefined> => {
      if (lines === undefined) {
        const { createInterface } = require("node:readline") as typeof import("node:readline")
        const terminal = createInterface({ input: process.stdin, terminal: false })
        // The iterator buffers lines typed ahead of the next prompt.
        lines = { iterator: terminal[Symbol.asyncIterator](), close: () => terminal.close() }
      }
      Command.stderr(prompt)
      const next = await lines.iterator.next()
      return next.done === true ? undefined : next.value
    },
    close: () => lines?.close(),
  }
}

/** What a person answered, as a reply. */
export const promptReply = async (
  request: Permission.Request,
  readLine: (prompt: string) => Promise<string | undefined>,
): Promise<Permission.Reply> => {
  const saves = request.save.length === 0 ? "nothing: it acts as once" : request.save.map((pattern) => JSON.stringify(pattern)).join(", ")
  const note =
    request.protected === undefined ? "" : `core: this changes ${request.protected}: asked each time, never saved.\n`
  for (;;) {
    const typed = await readLine(`${note}core: allow ${describe(request)}? [o]nce, [a]lways (saves ${saves}), [r]eject: `)
    // The end of input (the terminal closed, or core is stopping) answers nothing, which declines.
    if (typed === undefined) return { reply: "reject" }
    const answer = typed.trim().toLowerCase()
    if (answer === "o" || answer === "once") return { reply: "once" }
    if (answer === "a" || answer === "always") return { reply: "always" }
    if (answer === "r" || answer === "reject" || answer === "") {
      const message = ((await readLine("core: a message for the model (leave empty to decline): ")) ?? "").trim()
      return message === "" ? { reply: "reject" } : { reply: "reject", message }
    }
  }
}

/** Answers every ask of `permission` until the scope closes. */
export const answer = (permission: Permission.Interface, options: Options) =>
  Effect.gen(function* () {
    const events = yield* permission.subscribe
    const terminal = terminalReader()
    yield* Effect.addFinalizer(() => Effect.sync(() => terminal.close()))
    const readLine = options.readLine ?? terminal.readLine
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          const event = yield* PubSub.take(events)
          if (event.type !== "asked") return
          const request = event.request
          let reply: Permission.Reply
          if (request.protected !== undefined && !options.interactive) {
            Command.stderr(`core: refused ${describe(request)}: it changes ${request.protected}, and only a person on a terminal may approve that (--yes does not)\n`)
            reply = Permission.personRequired(request)
          } else if (options.yes && request.protected === undefined) {
            Command.stderr(`core: approved once (--yes): ${describe(request)}\n`)
            reply = { reply: "once" }
          } else if (options.interactive) {
            reply = yield* Effect.promise(() => promptReply(request, readLine))
          } else {
            Command.stderr(`core: declined ${describe(request)}: no terminal to ask; pass --yes to approve it once\n`)
            reply = { reply: "reject", unattended: true, why: "core exec has no terminal to ask a person" }
          }
          // The request may have gone meanwhile (its call was cancelled): nothing to answer then.
          yield* permission.reply(request.id, reply).pipe(Effect.ignore)
        }),
      ),
    )
  })
