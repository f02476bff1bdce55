export * as OutputCommand from "./output-command"

// `core output ID [--structured] [--raw]`: prints a managed output's full text, or the structured value its
// settlement dropped, to stdout (exit 1 if unknown or expired): its bytes as kept, or, on a terminal, what a
// terminal would act on escaped.

import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Config } from "../config/config"
import { ManagedOutputs } from "../output/managed-outputs"
import { Command } from "./command"
import { Host } from "../host/host"
import { Store } from "../store/store"
import { Terminal } from "../contract/terminal"
import { existsSync } from "node:fs"
import { isatty } from "node:tty"

/**
 * The managed outputs with the retention the operator set (`output.retentionDays` in $CORE_HOME/core.json, as the
 * sidecar and exec have it), and each Location's own as the store records it: an output is found expired, and
 * removed, only past its Location's. An operator's file that does not load is a usage error rather than a guess at
 * its retention.
 */
const outputsLayer = (environment: Host.Environment) =>
  Layer.unwrap(
    Config.load({ home: environment.home, location: environment.home }).pipe(
      Effect.map((config) =>
        Layer.effectDiscard(Effect.flatMap(ManagedOutputs.Service, (outputs) => retained(environment, outputs))).pipe(
          Layer.provideMerge(Host.outputsLayer(environment, config.retentionDays.operator)),
        ),
      ),
      Effect.mapError(
        (error) =>
          new Command.UsageError({ command: "output", message: error.message, next: "Fix it, then see whether it loads: core check" }),
      ),
    ),
  )

/** Has `outputs` keep the retentions Locations set of their own, as the store records them (none without a store). */
const retained = (environment: Host.Environment, outputs: ManagedOutputs.Interface) =>
  environment.storeUrl === undefined && !existsSync(Host.storePath(environment))
    ? Effect.void
    : Effect.flatMap(Store.Service, (store) => Effect.flatMap(store.retentions, outputs.retain)).pipe(
        Effect.provide(Host.storeLayer(environment)),
      )

/**
 * Writes `body` to a terminal: the text a model or its command made may hold what a terminal acts on (an escape that
 * rewrites the screen or writes the clipboard, a bidirectional control), shown escaped (Terminal.text) instead;
 * bytes that are not UTF-8 as U+FFFD. Piece by piece, never holding the whole output.
 */
const toTerminal = async (body: Blob | ReadableStream<Uint8Array>): Promise<void> => {
  const sink = Bun.stdout.writer()
  const decoder = new TextDecoder()
  // A carriage return ending a piece is a CRLF's or a lone one: the next piece says which.
  let held = ""
  for await (const chunk of body instanceof Blob ? body.stream() : body) {
    const decoded = held + decoder.decode(chunk, { stream: true })
    held = decoded.endsWith("\r") ? "\r" : ""
    sink.write(Terminal.text(held === "" ? decoded : decoded.slice(0, -1)))
    await sink.flush()
  }
  sink.write(Terminal.text(held + decoder.decode()))
  await sink.end()
}

export const HELP = `Usage: core output ID [--structured] [--raw]

Print a managed output to stdout: what a call's bounded settlement left out.
Without options, the full text its preview replaced (for an output that kept
no text, its structured value's JSON). Piped or redirected, its bytes as kept;
on a terminal, every character a terminal acts on (escape sequences, other
controls but tab and line feed, bidirectional controls) is shown as \\uXXXX.

Options:
  --structured      print the full structured value the settlement dropped, as JSON
  --raw             print the bytes as kept on a terminal too
  -h, --help        show this help

Exit codes: 0 printed, 1 unknown or expired id (or no structured value kept), 2 usage error,
3 the object store (CORE_OUTPUTS_URL) could not be read.
`

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Command.parse("output", args, { structured: { type: "boolean" }, raw: { type: "boolean" } })
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
    const reference = yield* managed.open(id, values.structured === true ? "structured" : "text").pipe(
      Effect.mapError(
        (error) =>
          new Command.Exit({
            // An object store that cannot be reached is core's own failure, not an unknown id.
            code: error._tag === "ManagedOutputs.Unavailable" ? Command.EXIT.operational : Command.EXIT.modelError,
            message: error.message,
          }),
      ),
    )
    // A reader that stops early (`core output ID | head`) closes the pipe: that is not a failure.
    yield* Effect.tryPromise({
      // An object of the store is printed as exactly its recorded bytes, each within a deadline: never short as if whole.
      try: async () => {
        const body = ManagedOutputs.body(reference)
        // isatty, not process.stdout.isTTY: that makes a stream of stdout, which leaves a pipe non-blocking (EAGAIN).
        if (isatty(1) && values.raw !== true) return toTerminal(body)
        await (body instanceof Blob ? Bun.write(Bun.stdout, body) : Bun.write(Bun.stdout, new Response(body)))
      },
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
  }).pipe(Effect.provide(outputsLayer(Host.environment())))
