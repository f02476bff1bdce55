export * as Asks from "./asks"

// Answers permission asks for `core exec` in process, as ./ask-answer words and decides them (a terminal prompt,
// `--yes`, or a decline when nobody is there to ask). Prompts and notes go to stderr; stdout stays the settlement's.

import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import { Permission } from "../permission/permission"
import { AskAnswer } from "./ask-answer"
import { Command } from "./command"

export interface Options extends AskAnswer.Options {
  /** Reads one line typed by the person (undefined at the end of input); only used when interactive. */
  readonly readLine?: (prompt: string) => Promise<string | undefined>
}

/** What a person answered, as a reply. */
export const promptReply = AskAnswer.promptReply

/** Answers every ask of `permission` until the scope closes. */
export const answer = (permission: Permission.Interface, options: Options) =>
  Effect.gen(function* () {
    const events = yield* permission.subscribe
    const terminal = AskAnswer.terminalReader(Command.stderr)
    yield* Effect.addFinalizer(() => Effect.sync(() => terminal.close()))
    const readLine = options.readLine ?? terminal.readLine
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          const event = yield* PubSub.take(events)
          if (event.type !== "asked") return
          const reply = yield* Effect.promise(() => AskAnswer.reply(event.request, options, readLine, Command.stderr))
          // The request may have gone meanwhile (its call was cancelled): nothing to answer then.
          yield* permission.reply(event.request.id, reply).pipe(Effect.ignore)
        }),
      ),
    )
  })
