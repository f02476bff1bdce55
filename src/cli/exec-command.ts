export * as ExecCommand from "./exec-command"

// `core exec NAME --input JSON`: settles one call in a Location and prints its settlement (DESIGN §5, §6).
// Exit codes: 0 success, 1 model-visible error, 2 usage, 3 operational, 4 declined, 130 cancelled.

import * as Effect from "effect/Effect"
import { Terminal } from "../contract/terminal"
import { Json } from "../config/json"
import { Application } from "../location/application"
import { Discovery } from "../location/discovery"
import { Location } from "../location/location"
import { Agent } from "../permission/agent"
import { Permission } from "../permission/permission"
import { ManagedOutputs } from "../output/managed-outputs"
import { McpClient } from "../mcp-client/mcp-client"
import { Registry } from "../registry/registry"
import { Settler } from "../settlement/settler"
import { Settlement } from "../contract/settlement"
import { Store } from "../store/store"
import { AskAnswer } from "./ask-answer"
import { Asks } from "./asks"
import { Command } from "./command"
import { Diagnostics } from "./diagnostics"
import { ExitCodes } from "./exit-codes"
import { ProgressLine } from "./progress-line"
import { InputText } from "./input-text"
import { Runtime } from "./runtime"
import type { Tool } from "../tool/tool"
import { Host } from "../host/host"
import { BadValue } from "../host/bad-value"
import { CallKey } from "../contract/call-key"
import { Retention } from "../host/retention"
import { ReplayNote } from "./replay-note"

export const HELP = `Usage: core exec NAME --input JSON [options]

Settle one tool call in a Location and print its settlement JSON on stdout.

Options:
  --input JSON      the call's input, a JSON object ("-" reads it from stdin)
  --location DIR    the Location (default: the current directory)
  --agent ID        the agent making the call: its permission rules apply (default: build)
  --session ID      session id (default: a fresh id)
  --message ID      assistant message id (default: a fresh id)
  --call ID         tool call id (default: a fresh id); a recorded (session, call) replays without
                    running, and says so on stderr
  --yes             approve permission asks once without prompting (without a terminal and
                    without --yes, an ask is declined)
  -h, --help        show this help

Exit codes: 0 success, 1 model-visible error, 2 usage error (or an invalid core.json, or the tool's file did
not load), 3 operational failure, 4 declined, 130 cancelled.

With a core serve of the same data directory running on this Location (its --location or under an --allow-root),
with the same core and environment, the call settles there, printing and exiting the same (docs/serve.md, "core
exec forwards"). CORE_EXEC_FORWARD=0 settles it in this process.
`

const OPTIONS = {
  input: { type: "string" },
  location: { type: "string" },
  agent: { type: "string" },
  session: { type: "string" },
  message: { type: "string" },
  call: { type: "string" },
  yes: { type: "boolean" },
} as const

const usage = (message: string) => new Command.UsageError({ command: "exec", message })

/** The `--input` of `command`, parsed: a JSON object, or a usage error saying what is wrong and where. */
export const readInput = (command: string, raw: string | undefined) =>
  Effect.gen(function* () {
    const usage = (message: string) => new Command.UsageError({ command, message })
    if (raw === undefined) return yield* usage("--input JSON is required (use --input - to read it from stdin)")
    const { text, utf8 } = yield* Effect.promise(() => InputText.read(raw))
    if (raw === "-" && text.trim() === "") {
      return yield* usage("--input - read nothing from stdin: pipe the input JSON in (echo '{...}' | core exec NAME --input -)")
    }
    if (!utf8) {
      return yield* usage(
        `--input${raw === "-" ? " - (stdin)" : ""} is not valid UTF-8: its other bytes would reach the tool as U+FFFD, the replacement character; give the text as UTF-8`,
      )
    }
    const parsed = Json.parseStrict(text)
    if (!parsed.ok) return yield* usage(`--input is not valid JSON: ${parsed.problem.message}`)
    const value = parsed.value
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      const found = Array.isArray(value) ? "an array" : value === null ? "null" : `a ${typeof value}`
      return yield* usage(`--input must be a JSON object, not ${found}`)
    }
    return value
  })

export const exitCodeOf = (settlement: Settlement.Info): number => ExitCodes.ofStatus(settlement.status)

/**
 * A tool that is not in the catalog because its file failed to load: a person learns which file and why, and
 * nothing is settled (so the same call runs once the file is fixed), instead of an `Unknown tool` settlement.
 */
const refuseUnloaded = (name: string) =>
  Effect.gen(function* () {
    const diagnostics = [...(yield* Application.Service).diagnostics, ...(yield* Location.Service).diagnostics]
    const failed = Discovery.diagnosticFor(diagnostics, name)
    if (failed === undefined) return
    if ((yield* Registry.Service).capture().resolve(name)._tag !== "Unknown") return
    // Exit 2 as a usage error, without pointing at --help: the command was right, the tool's file is what to fix.
    return yield* new Command.UsageError({
      command: "exec",
      message: `the tool "${name}" did not load: ${failed.file}: ${failed.message}`,
      next: "Fix the file, then see whether it loads: core check",
    })
  })

/**
 * A tool that is not in the catalog because the MCP server that would offer it (`<server>_<tool>`) could not be
 * connected: a person learns which server and why, and nothing is settled (as for a tool file that did not load),
 * instead of an `Unknown tool` settlement that says nothing of the server. (The diagnostics printed as exec starts
 * come before the connection: it is made only for the tool asked for.)
 */
const refuseUnconnected = (name: string) =>
  Effect.gen(function* () {
    if ((yield* Registry.Service).capture().resolve(name)._tag !== "Unknown") return
    // A server's name has no "_" (Config): the one before the first is the server's.
    const failed = (yield* McpClient.Service).states().find((state) => state.status === "failed" && name.startsWith(`${state.name}_`))
    if (failed === undefined) return
    return yield* new Command.UsageError({
      command: "exec",
      message: `the tool "${name}" is not offered: MCP server "${failed.name}" could not be connected: ${failed.error ?? "it failed"}`,
      next: "See each server's state and why: core mcp list",
    })
  })

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Command.parse("exec", args, OPTIONS)
    if (values.help) {
      Command.stdout(HELP)
      return Command.EXIT.ok
    }
    const [name, ...extra] = positionals
    if (name === undefined) return yield* usage("NAME is required: core exec NAME --input JSON")
    if (extra.length > 0) return yield* usage(`unexpected argument "${extra[0]}"`)
    for (const flag of ["agent", "session", "message", "call"] as const) {
      if (values[flag] !== undefined && values[flag].trim() === "") return yield* usage(`--${flag} cannot be empty`)
      // Bytes that are not UTF-8 reach core as U+FFFD each, so two different ids would be one call: refused.
      if (values[flag]?.includes("\uFFFD")) {
        return yield* usage(`--${flag} is not valid UTF-8 (it reads as U+FFFD, the replacement character): two different ids would be the same`)
      }
      if (values[flag] === "." || values[flag] === "..") {
        return yield* usage(`--${flag} cannot be "${values[flag]}": a URL path reads it as a step, so no route could name the call`)
      }
      if (values[flag] !== undefined && CallKey.flawOf(values[flag]) === "long") {
        return yield* usage(
          `--${flag} is longer than ${CallKey.MAX_PATH_CHARS} characters escaped for a URL path, so no route could name the call; give a shorter one`,
        )
      }
    }
    const input = yield* readInput("exec", values.input)
    // No tool takes a NUL character or half of a character; the call is refused as invalid input before anything
    // loads, runs or is recorded.
    const refused = BadValue.refusal(name, values.call ?? `call_${crypto.randomUUID()}`, input)
    if (refused !== undefined) {
      Command.stdout(`${Terminal.pretty(refused)}\n`)
      return Command.EXIT.modelError
    }
    const environment = Host.environment()
    const prepared = yield* Runtime.prepare("exec", environment, values.location)
    // process.stderr and process.stdin are made on first use, at a cost of tens of milliseconds of CPU: a call
    // that shows no progress and asks nothing never touches them.
    let line: ProgressLine.ProgressLine | undefined
    const progress = {
      show: (update: Tool.Progress) => (line ??= ProgressLine.make(process.stderr)).show(update),
      clear: () => line?.clear(),
    }
    const agent = values.agent ?? Agent.DEFAULT_AGENT

    return yield* Effect.gen(function* () {
      yield* Diagnostics.report
      const permission = yield* Permission.Service
      yield* Runtime.checkAgent("exec", permission, agent)
      yield* Asks.answer(permission, {
        yes: values.yes === true,
        line: AskAnswer.lineOf(name, input),
        get interactive() {
          return process.stdin.isTTY === true && process.stderr.isTTY === true
        },
      })
      yield* refuseUnloaded(name)
      // Only the MCP server that could offer this tool is connected, and none for a tool the Location has.
      yield* (yield* McpClient.Service).ensureFor(name)
      yield* refuseUnconnected(name)
      const settler = yield* Settler.Service
      // Not filtered by the agent's rules: a person calling a tool directly learns why it is refused (denied,
      // with the rule) instead of being told it does not exist.
      const turn = yield* settler.materialize()
      const call: Settler.Call = {
        sessionID: values.session ?? `ses_${crypto.randomUUID()}`,
        agent,
        assistantMessageID: values.message ?? `msg_${crypto.randomUUID()}`,
        toolCallID: values.call ?? `call_${crypto.randomUUID()}`,
        name,
        input,
      }
      const settled = yield* turn.settle(call, { onProgress: (update) => Effect.sync(() => progress.show(update)) }).pipe(
        Effect.onInterrupt(() =>
          // What the settler recorded (a cancel names the processes it ended), else a cancelled of its own.
          Effect.flatMap(Effect.orElseSucceed(settler.interrupted(call), () => undefined), (recorded) =>
            Effect.sync(() => {
              progress.clear()
              const cancelled = recorded ?? Settlement.runnerOutcome(name, call.toolCallID, "cancelled")
              Command.stdout(`${Terminal.pretty(cancelled)}\n`)
              // What was printed says how the call ended (a change made in full as the signal came is a success).
              Command.endInterruptedWith(exitCodeOf(cancelled))
            }),
          ),
        ),
      )
      const { settlement } = settled
      progress.clear()
      Command.stdout(`${Terminal.pretty(settlement)}\n`)
      if (settled.replayed) process.stderr.write(ReplayNote.of(call.sessionID, call.toolCallID, settlement.error?.kind))
      if (settled.superseded === true) process.stderr.write(ReplayNote.superseded(call.sessionID, call.toolCallID, settlement.error?.kind))
      // The retention sweep runs at most hourly across processes, after the answer is out: expired managed
      // outputs, and the records of calls as old (their outputs are gone with them).
      const sweeping = Retention.sweepIfDue(yield* Store.Service, yield* ManagedOutputs.Service)
      yield* sweeping.pipe(Effect.ignore)
      return exitCodeOf(settlement)
    }).pipe(Effect.scoped, Effect.provide(Host.settlingLayer(environment, prepared)))
  })
