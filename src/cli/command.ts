export * as Command from "./command"

// What every command shares: flag parsing with usage errors, the exit codes of DESIGN §6, and writing to the
// standard streams. Machine-readable output goes to stdout; everything else to stderr.

import { parseArgs, type ParseArgsConfig } from "node:util"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

export const EXIT = {
  ok: 0,
  modelError: 1,
  usage: 2,
  operational: 3,
  declined: 4,
  cancelled: 130,
} as const

export class UsageError extends Schema.TaggedError<UsageError>()("Command.UsageError", {
  command: Schema.String,
  message: Schema.String,
}) {}

/** A failure of the command itself, with the exit code it ends with. */
export class Exit extends Schema.TaggedError<Exit>()("Command.Exit", {
  code: Schema.Number,
  message: Schema.String,
}) {}

export type Options = NonNullable<ParseArgsConfig["options"]>

/** Parses `args` strictly: an unknown flag or a missing value is a usage error naming the command. */
export const parse = <const O extends Options>(command: string, args: ReadonlyArray<string>, options: O) =>
  Effect.try({
    try: () =>
      parseArgs({
        args: [...args],
        options: { ...options, help: { type: "boolean", short: "h" } } as O & { help: { type: "boolean"; short: "h" } },
        allowPositionals: true,
        strict: true,
      }),
    catch: (cause) => new UsageError({ command, message: describeParseError(cause) }),
  })

/** node:util's parse errors, in words that fit a one-line usage error. */
const describeParseError = (cause: unknown): string => {
  const error = cause as { code?: string; message?: string }
  const message = error.message ?? String(cause)
  const flag = /'(-[^'\s]*)[^']*'/.exec(message)?.[1]
  switch (error.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown flag ${flag ?? message}`
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return flag === undefined ? message : `${flag} needs a value`
    default:
      return message
  }
}

export const stdout = (text: string): void => {
  process.stdout.write(text)
}

export const stderr = (text: string): void => {
  process.stderr.write(text)
}
