export * as Command from "./command"

// What every command shares: flag parsing with usage errors, the exit codes of DESIGN §6, and writing to the
// standard streams. Machine-readable output goes to stdout; everything else to stderr.

import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ExitCodes } from "./exit-codes"

export const EXIT = ExitCodes.EXIT

/** Core's own way out of the process, taken before any tool or plugin code loads (see `guardExit`). */
export const exit: (code: number) => never = process.exit.bind(process) as (code: number) => never

/**
 * Keeps the code core runs (tool and plugin files, at import, in `execute`, in a hook) from ending core with
 * `process.exit`: that ended a command at once with the code it gave (0: a success with no settlement printed) and a
 * sidecar with every call it held. It throws instead: a file that calls it does not load (a diagnostic), and a call
 * that does fails operationally. Core leaves through `exit`.
 */
export const guardExit = (): void => {
  process.exit = ((code?: number | string | null) => {
    throw new Error(
      `process.exit(${code ?? ""}) was called by code core runs (a tool or plugin file); it does not end core. A tool ` +
        "reports a failure with Tool.Failure and leaves the process to core.",
    )
  }) as typeof process.exit
}

/**
 * Keeps stdout for what core prints (a settlement's JSON, `core tools --json`, serve's ready line): what the code core
 * runs logs with `console.log`, `info`, `debug`, `dir` or `table` (a tool file, at import or in `execute`) goes to
 * stderr, where it breaks no reader's JSON. Core's own output never goes through the console. A tool writing to
 * `process.stdout` itself still reaches stdout (its stream is made only when used, which costs a command
 * milliseconds, and Bun.write to stdout relies on it); `core mcp` sends that to stderr too.
 */
export const guardConsole = (): void => {
  const error = console.error
  const toStderr = (...values: Array<unknown>) => error(...values)
  console.log = toStderr
  console.info = toStderr
  console.debug = toStderr
  console.dir = (value: unknown) => error(Bun.inspect(value))
  console.table = toStderr
}

/**
 * The exit code of what a command printed as it was interrupted: `core exec` prints the call's settlement as
 * recorded, which is not always a cancellation (a change the tool made in full as the signal came is a success).
 * Undefined: the command ends as cancelled (130).
 */
let interruptedExit: number | undefined

/** Says the interrupted command ends with `code`, the exit code of what it printed. */
export const endInterruptedWith = (code: number): void => {
  interruptedExit = code
}

/** The exit code of an interrupted command: what it said it ends with, else cancelled. */
export const interrupted = (): number => interruptedExit ?? EXIT.cancelled

export class UsageError extends Schema.TaggedError<UsageError>()("Command.UsageError", {
  command: Schema.String,
  message: Schema.String,
  /** What to do instead of reading the command's --help (a core.json to fix: `core check` says every problem). */
  next: Schema.optionalKey(Schema.String),
}) {}

/** A failure of the command itself, with the exit code it ends with. */
export class Exit extends Schema.TaggedError<Exit>()("Command.Exit", {
  code: Schema.Number,
  message: Schema.String,
}) {}

export interface Option {
  readonly type: "string" | "boolean"
  readonly short?: string
}

export type Options = Readonly<Record<string, Option>>

export type Values<O extends Options> = {
  readonly [K in keyof O]?: O[K]["type"] extends "string" ? string : boolean
} & { readonly help?: boolean }

const HELP_OPTION: Option = { type: "boolean", short: "h" }

/**
 * Parses `args` strictly: `--flag value`, `--flag=value`, boolean `--flag`, `-h`, and `--` before positionals that
 * start with a dash. An unknown flag, a missing value or a value given to a boolean is a usage error.
 */
export const parse = <const O extends Options>(command: string, args: ReadonlyArray<string>, options: O) =>
  Effect.suspend(() => {
    const all: Options = { ...options, help: HELP_OPTION }
    const values: Record<string, string | boolean> = {}
    const positionals: Array<string> = []
    const fail = (message: string) => Effect.fail(new UsageError({ command, message }))
    for (let index = 0; index < args.length; index++) {
      const arg = args[index]!
      if (arg === "--") {
        positionals.push(...args.slice(index + 1))
        break
      }
      if (!arg.startsWith("-") || arg === "-") {
        positionals.push(arg)
        continue
      }
      const equals = arg.indexOf("=")
      const flag = arg.startsWith("--") ? arg.slice(2, equals === -1 ? undefined : equals) : undefined
      const name = flag ?? Object.keys(all).find((key) => all[key]!.short !== undefined && `-${all[key]!.short}` === arg)
      const option = name === undefined || !Object.hasOwn(all, name) ? undefined : all[name]
      if (name === undefined || option === undefined) return fail(`unknown flag ${equals === -1 ? arg : arg.slice(0, equals)}`)
      if (option.type === "boolean") {
        if (equals !== -1) return fail(`--${name} does not take a value`)
        values[name] = true
      } else if (equals !== -1) {
        values[name] = arg.slice(equals + 1)
      } else if (index + 1 < args.length) {
        values[name] = args[++index]!
      } else {
        return fail(`--${name} needs a value`)
      }
    }
    return Effect.succeed({ values: values as Values<O>, positionals })
  })

/** Whether the terminal hung up (SIGHUP): nothing more goes to stdout, as nothing reads it. */
let hungUp = false

/** The terminal hung up: what the command would still print is dropped (a forwarded exec prints nothing either). */
export const hangUp = (): void => {
  hungUp = true
}

/** Writes to stdout still under way, in order; the process must not exit before they finish (see `drain`). */
let writing: Promise<void> = Promise.resolve()
/** The first failure writing stdout, other than the reader going away. */
let writeFailure: unknown = undefined

const isClosedPipe = (cause: unknown): boolean => (cause as { code?: unknown } | undefined)?.code === "EPIPE"

/**
 * Queues `text` for stdout. `process.stdout.write` on a pipe keeps what the reader has not taken yet in memory
 * and drops it when the process exits, so a slow reader would get a cut settlement: every machine-readable byte
 * goes through `Bun.write`, which finishes only once the bytes are in the pipe.
 */
export const stdout = (text: string): void => {
  if (hungUp) return
  writing = writing
    .then(() => Bun.write(Bun.stdout, text))
    .then(
      () => undefined,
      (cause: unknown) => {
        // A reader that stops early (`core tools --json | head`) closes the pipe: that is not a failure.
        if (!isClosedPipe(cause)) writeFailure ??= cause
      },
    )
}

/** Waits until everything queued for stdout is written; answers the write failure, if any. */
export const drain = async (): Promise<unknown> => {
  await writing
  return writeFailure
}

export const stderr = (text: string): void => {
  process.stderr.write(text)
}
