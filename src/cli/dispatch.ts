export * as Dispatch from "./dispatch"

// Runs one command (all but `--version` and `--help`, which ./main answers itself): loads the command's module when
// it runs, turns its outcome into an exit code (DESIGN §6), and turns SIGINT, SIGTERM and SIGHUP into interruption
// of the running command (which cancels a call and records it).

// First: Bun's transpiler cache off before any module is transpiled at run time (./transpiler-cache).
import "./transpiler-cache"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { Terminal } from "../contract/terminal"
import { ProcessGroup } from "../shell/process-group"
import { Command } from "./command"
import { Telemetry } from "./telemetry"

type Run = (args: ReadonlyArray<string>) => Effect.Effect<number, unknown>

/** A command loaded when it runs: `--version`, `--help` and each command load only what they use. */
const lazy =
  <M>(load: () => Promise<M>, pick: (module: M) => Run): Run =>
  (args) =>
    Effect.flatMap(Effect.promise(load), (module) => pick(module)(args))

const COMMANDS: Readonly<Record<string, Run>> = {
  exec: lazy(() => import("./exec-command"), (module) => module.ExecCommand.run),
  tools: lazy(() => import("./tools-command"), (module) => module.ToolsCommand.run),
  output: lazy(() => import("./output-command"), (module) => module.OutputCommand.run),
  check: lazy(() => import("./check-command"), (module) => module.CheckCommand.run),
  permissions: lazy(() => import("./permissions-command"), (module) => module.PermissionsCommand.run),
  init: lazy(() => import("./init"), (module) => module.InitCommand.run),
  test: lazy(() => import("./test-command"), (module) => module.TestCommand.run),
  mcp: lazy(() => import("./mcp-command"), (module) => module.McpCommand.run),
  serve: lazy(() => import("./serve-command"), (module) => module.ServeCommand.run),
  log: lazy(() => import("./log-command"), (module) => module.LogCommand.run),
}

/** Commands that settle calls: they export traces when an OTLP endpoint is set (docs/operating.md). */
const TRACED: ReadonlySet<string> = new Set(["exec", "serve", "mcp"])

/**
 * Commands that answer SIGINT and SIGTERM themselves: the sidecar shuts down gracefully and exits 0; the test run
 * gets the signal and ends on its own.
 */
const HANDLES_SIGNALS: ReadonlySet<string> = new Set(["serve", "test"])

/** How a command ends when its terminal hangs up (SIGHUP), as a process the signal ends. */
const EXIT_HANGUP = 128 + 1
/** When a command hung up ends every process it started, should they outlast their grace. */
const HANGUP_MS = 5_000
/**
 * How long a command hung up may take to end at all. A change being made (a large file written, a patch committed)
 * is let finish: ended by force part-way, it left a patch half applied and its temp files in the user's tree.
 */
const HANGUP_EXIT_MS = 60_000

/**
 * Commands that serve until stopped: they take JavaScriptCore's normal JIT policy back, since the binary starts
 * reluctant to compile (build.ts) for the sake of short commands.
 */
const LONG_RUNNING: ReadonlySet<string> = new Set(["serve", "mcp"])

const messageOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)

/**
 * The exit code and what to say on stderr for a command that did not complete normally. Its words may hold the
 * model's (a path, a tool's message, a stack): escaped and indented after their first line (Terminal.block), so
 * nothing in them drives the terminal or passes for a line of core's own.
 */
const failureOf = (cause: Cause.Cause<unknown>): { code: number; message: string } => {
  if (Cause.hasInterruptsOnly(cause)) return { code: Command.interrupted(), message: "" }
  const error = Cause.findError(cause)
  if (error._tag === "Success") {
    const failure = error.success
    if (failure instanceof Command.UsageError) {
      return {
        code: Command.EXIT.usage,
        message: `core ${failure.command}: ${Terminal.block(failure.message)}\n${failure.next ?? `Run 'core ${failure.command} --help' for usage.`}`,
      }
    }
    if (failure instanceof Command.Exit) return { code: failure.code, message: `core: ${Terminal.block(failure.message)}` }
    // An operational error: say what failed, then the underlying error's own words when they add something.
    const inner = typeof failure === "object" && failure !== null && "cause" in failure ? failure.cause : undefined
    const outer = messageOf(failure)
    // The underlying error's words, when it has some: not what a value stringifies to ("[object Promise]", "hi").
    const detail = inner instanceof Error || typeof inner === "string" ? messageOf(inner) : ""
    return {
      code: Command.EXIT.operational,
      message: `core: ${Terminal.block(`${outer}${detail === "" || outer.includes(detail) ? "" : `: ${detail}`}`)}`,
    }
  }
  // A defect (a tool that threw or died): its own stack points into the tool file.
  return { code: Command.EXIT.operational, message: `core: operational failure:\n  ${Terminal.block(Cause.pretty(cause))}` }
}

const main = async (command: string, rest: ReadonlyArray<string>): Promise<number> => {
  const run = COMMANDS[command]
  if (run === undefined) {
    Command.stderr(`core: unknown command "${command}"\nRun 'core --help' for usage.\n`)
    return Command.EXIT.usage
  }
  if (LONG_RUNNING.has(command)) Bun.unsafe.setJITPolicy(1)
  const program =
    TRACED.has(command) && Telemetry.asked(process.env)
      ? Telemetry.traced(run(rest), process.env, (line) => Command.stderr(`${line}\n`), command === "exec" ? "core exec" : undefined)
      : run(rest)
  const fiber = Effect.runFork(program)
  let interrupted = false
  let hungUp = false
  const interrupt = () => {
    if (interrupted) {
      // A second signal does not wait for the call to end gracefully, but no process outlives core either.
      ProcessGroup.killAllNow()
      Command.exit(hungUp ? EXIT_HANGUP : Command.EXIT.cancelled)
    }
    interrupted = true
    Effect.runFork(Fiber.interrupt(fiber))
  }
  // The terminal gone: the command is interrupted as by SIGINT (a change being made finishes, a temp file is
  // removed, the command's processes end), prints nothing, and ends as the signal ends a process, within a bound.
  const hangup = () => {
    if (hungUp) return
    hungUp = true
    Command.hangUp()
    setTimeout(() => ProcessGroup.killAllNow(), HANGUP_MS).unref()
    setTimeout(() => {
      ProcessGroup.killAllNow()
      Command.exit(EXIT_HANGUP)
    }, HANGUP_EXIT_MS).unref()
    if (!interrupted) interrupt()
  }
  const signals = !HANDLES_SIGNALS.has(command)
  if (signals) process.on("SIGINT", interrupt).on("SIGTERM", interrupt).on("SIGHUP", hangup)
  const exit = await Effect.runPromise(Fiber.await(fiber))
  process.off("SIGINT", interrupt).off("SIGTERM", interrupt).off("SIGHUP", hangup)
  if (hungUp) return EXIT_HANGUP
  if (Exit.isSuccess(exit)) return exit.value
  const { code, message } = failureOf(exit.cause)
  if (message !== "") Command.stderr(`${message}\n`)
  return code
}

/** Runs `core COMMAND ARGS...` to its end, then exits the process with the command's exit code. */
export const run = async ([command, ...rest]: ReadonlyArray<string>): Promise<never> => {
  Command.guardExit()
  Command.guardConsole()
  const code = await main(command!, rest)
  // Exiting drops whatever stdout still holds: wait until the reader has taken every byte, however slow it is.
  const failure = await Command.drain()
  if (failure !== undefined) Command.stderr(`core: could not write to stdout: ${messageOf(failure)}\n`)
  Command.exit(failure === undefined || code !== Command.EXIT.ok ? code : Command.EXIT.operational)
}
