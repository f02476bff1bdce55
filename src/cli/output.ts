export * as OutputCommand from "./output"

// `core output ID`: prints a managed output's full content to stdout (exit 1 if unknown or expired).

import * as Effect from "effect/Effect"
import { ManagedOutputs } from "../output/managed"
import { Command } from "./command"
import { Runtime } from "./runtime"

export const HELP = `Usage: core output ID

Print the full content of a managed output (the complete output of a call whose
model-facing form was bounded) to stdout.

Exit codes: 0 printed, 1 unknown or expired id, 2 usage error.
`

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Command.parse("output", args, {})
    if (values.help) {
      Command.stdout(HELP)
      return Command.EXIT.ok
    }
    const [id, ...extra] = positionals
    if (id === undefined) return yield* new Command.UsageError({ command: "output", message: "ID is required" })
    if (extra.length > 0) {
      return yield* new Command.UsageError({ command: "output", message: `unexpected argument "${extra[0]}"` })
    }
    const managed = yield* ManagedOutputs.Service
    const reference = yield* managed.open(id).pipe(
      Effect.mapError((error) => new Command.Exit({ code: Command.EXIT.modelError, message: error.message })),
    )
    // A reader that stops early (`core output ID | head`) closes the pipe: that is not a failure.
    yield* Effect.tryPromise({
      try: () => Bun.write(Bun.stdout, Bun.file(reference.path)),
      catch: (cause) => cause,
    }).pipe(
      Effect.catchIf(
        (cause) => (cause as { code?: unknown } | undefined)?.code === "EPIPE",
        () => Effect.void,
      ),
      Effect.mapError(
        (cause) => new Command.Exit({ code: Command.EXIT.operational, message: `could not print ${id}: ${String(cause)}` }),
      ),
    )
    return Command.EXIT.ok
  }).pipe(Effect.provide(Runtime.outputsLayer(Runtime.environment())))
