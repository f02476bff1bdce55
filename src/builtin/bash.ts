export * as Bash from "./bash"

// The `bash` built-in: runs one command line through the shell producer after checking it command by command
// (../shell/command): `external_directory` for a workdir or paths outside the Location, then `bash` on every
// command the line runs, asking once for those not yet allowed. Nothing is spawned before both checks pass. It
// returns the complete capture; bounding what the model sees is the settlement's job.

import { dirname, sep } from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Boundary } from "../permission/boundary"
import { CommandLine } from "../shell/command"
import { Shell } from "../shell/producer"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"

const NAME = "bash"

const Gap = Schema.Struct({
  offset: Schema.Int.annotate({ description: "Byte offset in the stream where the bytes not kept start" }),
  length: Schema.Int.annotate({ description: "How many bytes were not kept" }),
})

const Captured = Schema.Struct({
  bytes: Schema.Int.annotate({ description: "Every byte the stream carried" }),
  kept: Schema.Int.annotate({ description: "The bytes kept (the first and last parts)" }),
  complete: Schema.Boolean.annotate({ description: "Whether every byte was kept" }),
  gap: Schema.optionalKey(Gap),
})

export const Input = Schema.Struct({
  command: Schema.String.annotate({ description: "The bash command line to run, e.g. `bun test --timeout 60000 test/a.test.ts`" }),
  description: Schema.optionalKey(
    Schema.String.annotate({ description: "A few words saying what the command does, shown to whoever approves it" }),
  ),
  workdir: Schema.optionalKey(
    Schema.String.annotate({ description: "The directory to run in, relative to the project root or absolute (default: the project root)" }),
  ),
  timeoutMs: Schema.optionalKey(Schema.Int.annotate({ description: "Wall-clock limit in milliseconds" })),
})
export type Input = typeof Input.Type

export const Output = Schema.Struct({
  exitCode: Schema.NullOr(Schema.Int),
  signal: Schema.NullOr(Schema.String),
  timedOut: Schema.Boolean,
  timeout: Schema.optionalKey(
    Schema.Struct({ kind: Schema.Literals(["wall", "inactivity"]), ms: Schema.Int }),
  ),
  stdout: Schema.String,
  stderr: Schema.String,
  output: Schema.String.annotate({ description: "stdout and stderr interleaved as they arrived" }),
  capture: Schema.Struct({ stdout: Captured, stderr: Captured, output: Captured }),
  durationMs: Schema.Int,
  survivors: Schema.optionalKey(
    Schema.Array(Schema.Int).annotate({ description: "Processes of the command that could not be killed" }),
  ),
})
export type Output = typeof Output.Type

const count = (value: number): string => value.toLocaleString("en-US")

const describe = (limits: Shell.Limits): string =>
  [
    "Runs a bash command line in the project directory and returns its output and exit status.",
    "",
    "- Runs `bash -c COMMAND` in `workdir` (default: the project root). stdin is closed, so nothing can answer a " +
      "prompt: pass non-interactive flags (`--yes`, `-y`, `--no-pager`, `CI=1`).",
    "- The result is stdout and stderr interleaved as they arrived, then `Exit code N`. A non-zero exit code is a " +
      "normal result, not an error; 127 means the command was not found.",
    `- Each stream is captured up to ${count(limits.maxCaptureBytes)} bytes: beyond that the first and last halves ` +
      "are kept and the result says exactly how many bytes in the middle were not kept. For large output, write " +
      "it to a file and read the part you need, or filter it (grep, head, tail).",
    `- Timeout: ${count(limits.timeoutMs)} ms by default; set \`timeoutMs\` for up to ${count(limits.maxTimeoutMs)} ms.` +
      (limits.inactivityTimeoutMs === undefined
        ? ""
        : ` A command that prints nothing for ${count(limits.inactivityTimeoutMs)} ms is stopped.`) +
      " A stopped command and everything it started get SIGTERM, then SIGKILL after 3 s.",
    "- Background processes (`server &`) are stopped when the command line finishes: nothing outlives the call, " +
      "so this cannot start a server for later calls.",
    "- Every command in the line needs permission on its own, including those after `&&`, `;`, `|` and inside " +
      "`$(...)`; commands and file arguments outside the project need access to that directory too. Expansions " +
      "in a command name (`$CMD args`) are checked as the whole line.",
    "- To read, search or change files, prefer the file tools (read, glob, grep, edit, write) to cat, find, sed or echo.",
  ].join("\n")

const marker = (gap: Shell.Result["output"]["gap"]): string =>
  gap === undefined ? "" : `\n[… ${count(gap.length)} bytes not kept …]\n`

const captured = (capture: Shell.Result["output"]) => ({
  text: capture.gap === undefined ? capture.text : `${capture.head}${marker(capture.gap)}${capture.tail}`,
  report: {
    bytes: capture.seen,
    kept: capture.kept,
    complete: capture.gap === undefined,
    ...(capture.gap === undefined ? {} : { gap: capture.gap }),
  },
})

const outputOf = (result: Shell.Result): Output => {
  const stdout = captured(result.stdout)
  const stderr = captured(result.stderr)
  const output = captured(result.output)
  return {
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut !== undefined,
    ...(result.timedOut === undefined ? {} : { timeout: result.timedOut }),
    stdout: stdout.text,
    stderr: stderr.text,
    output: output.text,
    capture: { stdout: stdout.report, stderr: stderr.report, output: output.report },
    durationMs: Math.round(result.durationMs),
    ...(result.survivors.length === 0 ? {} : { survivors: [...result.survivors] }),
  }
}

const status = (output: Output): string => {
  if (output.timeout !== undefined) {
    return output.timeout.kind === "wall"
      ? `Timed out after ${output.timeout.ms} ms`
      : `Timed out after ${output.timeout.ms} ms without output`
  }
  if (output.signal !== null) return `Killed by ${output.signal}`
  if (output.exitCode === 127) return "Exit code 127 (command not found)"
  if (output.exitCode === 126) return "Exit code 126 (not executable)"
  return `Exit code ${output.exitCode}`
}

/** The model's view: the interleaved output, then how it ended, then any capture loss in plain words. */
export const text = (output: Output): string => {
  const lines = [output.output === "" ? "(no output)" : output.output.replace(/\n$/, ""), "", status(output)]
  const streams = [
    ["stdout", output.capture.stdout],
    ["stderr", output.capture.stderr],
    ["stdout and stderr together", output.capture.output],
  ] as const
  for (const [name, capture] of streams) {
    if (capture.gap === undefined) continue
    lines.push(`${name}: ${count(capture.bytes)} bytes, the middle ${count(capture.gap.length)} bytes were not kept`)
  }
  if (output.survivors !== undefined) {
    lines.push(`Could not kill ${output.survivors.length} process(es) of the command: ${output.survivors.join(", ")}`)
  }
  return lines.join("\n")
}

/** `<dir>/*` may be saved as it is only when the directory itself holds no wildcard character. */
const savable = (pattern: string): ReadonlyArray<string> => (/[*?]/.test(pattern.slice(0, -2)) ? [] : [pattern])

/** The `external_directory` pattern for a path outside the Location, or undefined inside it. */
const externalPattern = (directory: string, absolute: string) =>
  Boundary.resolve({ location: directory, path: absolute }).pipe(
    Effect.map((resolved) => resolved.pattern),
    // A path that cannot be resolved (a loop, a file used as a directory) is judged by where it is written.
    Effect.catchTag("Boundary.PathError", () =>
      Effect.succeed(Boundary.isWithin(directory, absolute) ? undefined : `${dirname(absolute)}${sep}*`),
    ),
  )

const lastLine = (tail: string): string => {
  const lines = tail.split("\n").filter((line) => line.trim() !== "")
  return (lines[lines.length - 1] ?? "").slice(0, 200)
}

export const make = (services: Builtin.Services) => {
  const { directory, shell } = services
  const limits = shell.limits
  return Tool.make({
    description: describe(limits),
    input: Input,
    output: Output,
    checksPermissions: true,
    toModelOutput: text,
    execute: (input, context) =>
      Effect.gen(function* () {
        const command = input.command
        if (command.trim() === "") {
          return yield* new Tool.Failure({ message: "The command is empty. Give a bash command line to run, e.g. `ls -la`." })
        }
        if (input.timeoutMs !== undefined && (input.timeoutMs <= 0 || input.timeoutMs > limits.maxTimeoutMs)) {
          return yield* new Tool.Failure({
            message:
              `timeoutMs must be between 1 and ${limits.maxTimeoutMs} ms, not ${input.timeoutMs}. Leave it out for ` +
              `the default of ${limits.timeoutMs} ms.`,
          })
        }

        const workdir = yield* Boundary.resolve({ location: directory, path: input.workdir ?? "." }).pipe(
          Effect.catchTag("Boundary.PathError", (error) => Effect.fail(new Tool.Failure({ message: error.message }))),
        )
        const parsed = yield* CommandLine.parse(command)
        const found = CommandLine.checks(parsed)
        // A line that runs nothing the grammar names (a comment, arithmetic) is still checked, as itself.
        const checks = found.length > 0 ? found : [{ resource: command.trim(), save: /[*?]/.test(command) ? undefined : command.trim() }]

        const external = new Set<string>()
        if (workdir.pattern !== undefined) external.add(workdir.pattern)
        for (const word of CommandLine.paths(parsed)) {
          const absolute = CommandLine.locate(word, workdir.real)
          if (absolute === undefined) continue
          const pattern = yield* externalPattern(directory, absolute)
          if (pattern !== undefined) external.add(pattern)
        }
        const metadata = { command, ...(input.description === undefined ? {} : { description: input.description }) }
        if (external.size > 0) {
          yield* Builtin.assert(services, context, {
            action: "external_directory",
            resources: [...external],
            save: [...external].flatMap(savable),
            tool: NAME,
            metadata,
          })
        }

        // Only now, so that nothing is told about a directory outside the Location before it may be looked at.
        const shown = Builtin.display(directory, workdir.real)
        if (!workdir.exists) {
          return yield* new Tool.Failure({
            message: `The workdir ${shown} does not exist. Create it first, or run in an existing directory.`,
          })
        }
        if (workdir.kind !== "directory") {
          return yield* new Tool.Failure({
            message: `The workdir ${shown} is not a directory. Give the directory to run in (perhaps ${Builtin.display(directory, dirname(workdir.real))}).`,
          })
        }

        // "Always" saves the patterns of the commands actually asked about, never those of commands in the same
        // line that were already allowed.
        const decisions = yield* services.permission
          .explain({ agent: context.agent, action: NAME, resources: checks.map((check) => check.resource) })
          .pipe(Effect.catchTag("Store.StoreError", (error) => Effect.die(error)))
        const asked = new Set(decisions.filter((decision) => decision.effect === "ask").map((decision) => decision.resource))
        const save = [
          ...new Set(checks.flatMap((check) => (asked.has(check.resource) && check.save !== undefined ? [check.save] : []))),
        ]
        yield* Builtin.assert(services, context, {
          action: NAME,
          resources: checks.map((check) => check.resource),
          save,
          tool: NAME,
          metadata: { ...metadata, ...(parsed.unparsed === undefined ? {} : { unparsed: parsed.unparsed }) },
        })

        const result = yield* shell
          .run({
            argv: [shell.shell, "-c", command],
            cwd: workdir.real,
            ...(input.timeoutMs === undefined ? {} : { timeoutMs: input.timeoutMs }),
            onProgress: (update) =>
              context.progress({
                message: lastLine(update.tail),
                metadata: { tail: update.tail, bytes: update.bytes, elapsedMs: Math.round(update.elapsedMs) },
              }),
          })
          .pipe(Effect.catchTag("Shell.SpawnError", (error) => Effect.fail(new Tool.Failure({ message: error.message }))))
        return outputOf(result)
      }),
  })
}
