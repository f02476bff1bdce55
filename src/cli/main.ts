// The `core` executable: dispatches a command, turns its outcome into an exit code (DESIGN §6), and turns
// SIGINT/SIGTERM into interruption of the running command (which cancels a call and records it).

// First: `core __supervise` is the per-call supervisor of a shell command, and must not wait for the rest.
import "../shell/launch"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import packageJson from "../../package.json" with { type: "json" }
import { ProcessGroup } from "../shell/process-group"
import { Command } from "./command"
import { Telemetry } from "./telemetry"

const HELP = `core ${packageJson.version}: a tool runtime for AI agents

Usage:
  core exec NAME --input JSON [--location DIR] [--agent ID] [--session ID] [--message ID] [--call ID] [--yes]
  core tools [--location DIR] [--agent ID] [--json] [--provider P]
  core output ID [--structured]
  core check NAME --input JSON [--location DIR] [--agent ID]
  core check [--location DIR] [--provider P]
  core permissions [reset [--action A]] [--location DIR]
  core mcp [--location DIR] [--agent ID]
  core mcp list [--location DIR] [--json]
  core serve [--location DIR] [--allow-root DIR]... [--host 127.0.0.1] [--port N] [--log-level L]
  core log [--session ID] [--location DIR] [--since T] [--json]
  core init [DIR] [--update]
  core test [ARGS...]
  core --version | --help | COMMAND --help

Commands:
  exec         settle one tool call and print its settlement JSON
  tools        list the tools a model would be offered
  output       print a managed output (the full output behind a bounded preview)
  check        explain the permission decision for a call, running nothing; or check a whole Location (CI)
  permissions  list or clear the approvals saved by "always" replies
  mcp          serve a Location's tools to an MCP client over stdio; list the Location's MCP servers
  serve        serve tool calls over HTTP to agent hosts (the sidecar), and MCP at /mcp
  log          list the recorded calls: tool, status, agent, Location, input
  init         prepare a directory for writing and testing tools (no npm install)
  test         run a tool workspace's tests (bun test) with the Bun inside core

Environment:
  CORE_DATA_DIR   managed outputs and the settlement store (default ~/.local/share/core)
  CORE_STORE_URL  postgres://… : settlements and saved approvals in a Postgres shared by a
                  fleet (docs/fleet.md); add ?pgbouncer=true behind pgbouncer
  CORE_OUTPUTS_URL
                  s3://bucket/prefix : managed outputs in an S3-compatible store too, read on
                  every host sharing it (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, ...)
  CORE_LEASE_MS   how long a running call's lease lasts unless renewed (default 5000)
  CORE_USER       who saved approvals are recorded as approved by (default user@host)
  CORE_HOME       application tools in $CORE_HOME/tools/*.ts and $CORE_HOME/core.json
                  (default ~/.config/core)
  OTEL_EXPORTER_OTLP_ENDPOINT
                  export OpenTelemetry traces over OTLP/HTTP (exec, serve, mcp); unset: none
`

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

const messageOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)

/** The exit code and what to say on stderr for a command that did not complete normally. */
const failureOf = (cause: Cause.Cause<unknown>): { code: number; message: string } => {
  if (Cause.hasInterruptsOnly(cause)) return { code: Command.EXIT.cancelled, message: "" }
  const error = Cause.findError(cause)
  if (error._tag === "Success") {
    const failure = error.success
    if (failure instanceof Command.UsageError) {
      return {
        code: Command.EXIT.usage,
        message: `core ${failure.command}: ${failure.message}\nRun 'core ${failure.command} --help' for usage.`,
      }
    }
    if (failure instanceof Command.Exit) return { code: failure.code, message: `core: ${failure.message}` }
    // An operational error: say what failed, then the underlying error's own words when they add something.
    const inner = typeof failure === "object" && failure !== null && "cause" in failure ? failure.cause : undefined
    const outer = messageOf(failure)
    const detail = inner === undefined ? "" : messageOf(inner)
    return {
      code: Command.EXIT.operational,
      message: `core: ${outer}${detail === "" || outer.includes(detail) ? "" : `: ${detail}`}`,
    }
  }
  // A defect (a tool that threw or died): its own stack points into the tool file.
  return { code: Command.EXIT.operational, message: `core: operational failure:\n${Cause.pretty(cause)}` }
}

const main = async (argv: ReadonlyArray<string>): Promise<number> => {
  const [command, ...rest] = argv
  if (command === undefined) {
    Command.stderr(HELP)
    return Command.EXIT.usage
  }
  if (command === "--help" || command === "-h" || command === "help") {
    Command.stdout(HELP)
    return Command.EXIT.ok
  }
  if (command === "--version" || command === "-v") {
    Command.stdout(`${packageJson.version}\n`)
    return Command.EXIT.ok
  }
  const run = COMMANDS[command]
  if (run === undefined) {
    Command.stderr(`core: unknown command "${command}"\nRun 'core --help' for usage.\n`)
    return Command.EXIT.usage
  }
  const program =
    TRACED.has(command) && Telemetry.asked(process.env)
      ? Telemetry.traced(run(rest), process.env, (line) => Command.stderr(`${line}\n`), command === "exec" ? "core exec" : undefined)
      : run(rest)
  const fiber = Effect.runFork(program)
  let interrupted = false
  const interrupt = () => {
    if (interrupted) {
      // A second signal does not wait for the call to end gracefully, but no process outlives core either.
      ProcessGroup.killAllNow()
      process.exit(Command.EXIT.cancelled)
    }
    interrupted = true
    Effect.runFork(Fiber.interrupt(fiber))
  }
  const signals = !HANDLES_SIGNALS.has(command)
  if (signals) process.on("SIGINT", interrupt)
  if (signals) process.on("SIGTERM", interrupt)
  const exit = await Effect.runPromise(Fiber.await(fiber))
  process.off("SIGINT", interrupt)
  process.off("SIGTERM", interrupt)
  if (Exit.isSuccess(exit)) return exit.value
  const { code, message } = failureOf(exit.cause)
  if (message !== "") Command.stderr(`${message}\n`)
  return code
}

const code = await main(process.argv.slice(2))
// Exiting drops whatever stdout still holds: wait until the reader has taken every byte, however slow it is.
const failure = await Command.drain()
if (failure !== undefined) Command.stderr(`core: could not write to stdout: ${messageOf(failure)}\n`)
process.exit(failure === undefined || code !== Command.EXIT.ok ? code : Command.EXIT.operational)
