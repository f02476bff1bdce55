// `@core/tool/testing`: settles a tool in-process through core's real pipeline (decode, authorize, execute,
// encode, project, bound, keep managed outputs) so an author's `bun test` sees the very settlement JSON that
// `core exec` prints. Each call gets a fresh kernel with an in-memory store and a temp outputs directory; nothing
// here reads core.json, $CORE_HOME or the durable store. `location` (./test-location.ts) keeps one kernel for a
// test Location with plugins. A curated surface: every export is named below.

import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join, resolve } from "node:path"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import { Discovery } from "../location/discovery"
import { ManagedOutputs } from "../output/managed-outputs"
import { Agent } from "../permission/agent"
import { Permission } from "../permission/permission"
import { Registry } from "../registry/registry"
import { Settler } from "../settlement/settler"
import { Definition as ToolDefinition } from "../tool/definition"
import { ToolName } from "../tool/tool-name"
import { Tool } from "../tool/tool"
import {
  answerAsks,
  callOf,
  type Ask,
  CheckError,
  type Definition,
  kernelLayer,
  LoadError,
  locationOf,
  messageOf,
  OperationalFailure,
  type Options,
  OptionsError,
  type Progress,
  type Settlement,
  type Trace,
} from "./harness"

export {
  type Ask,
  CheckError,
  type Definition,
  LoadError,
  OperationalFailure,
  type Options,
  OptionsError,
  type PermissionOptions,
  type Progress,
  type Reply,
  type Rule,
  type Settlement,
  type Trace,
} from "./harness"
export {
  type CallOptions,
  location,
  type LocationOptions,
  type PluginSource,
  SHELL_UNAVAILABLE,
  type TestLocation,
  type Turn,
} from "./test-location"

/** The workspace's `.core/` kit does not match: its VERSION, or the installed core, names another core. */
export class KitVersionError extends Schema.TaggedError<KitVersionError>()("Testing.KitVersionError", {
  kit: Schema.String,
  found: Schema.String,
  message: Schema.String,
}) {}


/** Set by the kit build (build/kit.ts) to the version of core it came from; undefined when run from source. */
declare const CORE_KIT_VERSION: string | undefined

/** The version of the `core` that would run these tools: `$CORE_BIN`, else `core` on the PATH; undefined if none. */
const installedCore = (): string | undefined => {
  const binary = process.env.CORE_BIN || Bun.which("core")
  if (binary === null || binary === undefined) return undefined
  // Under `core test` this process is core acting as Bun (BUN_BE_BUN=1): the core asked must answer as itself.
  const { BUN_BE_BUN: _, ...env } = process.env
  const answer = Bun.spawnSync([binary, "--version"], { stdout: "pipe", stderr: "ignore", env })
  return answer.exitCode === 0 ? answer.stdout.toString().trim() : undefined
}

// The kit puts this module at `.core/node_modules/@core/tool/`, three folders below the VERSION file. Tests
// must run on the same core as the tools will: the kit, its VERSION and the installed core must agree.
if (typeof CORE_KIT_VERSION === "string") {
  const file = join(import.meta.dir, "../../../VERSION")
  const found = existsSync(file) ? readFileSync(file, "utf8").trim() : "(missing)"
  if (found !== CORE_KIT_VERSION) {
    throw new KitVersionError({
      kit: CORE_KIT_VERSION,
      found,
      message:
        `@core/tool/testing comes from core ${CORE_KIT_VERSION} but ${file} says ${found}: the .core/ folder is ` +
        `out of date or mixed. Run \`core init --update\` in the workspace to rewrite it.`,
    })
  }
  const installed = installedCore()
  if (installed !== undefined && installed !== CORE_KIT_VERSION) {
    throw new KitVersionError({
      kit: CORE_KIT_VERSION,
      found: installed,
      message:
        `This workspace's .core/ is from core ${CORE_KIT_VERSION}, but the core installed here is ${installed}: ` +
        `tests would not run the tools as core does. Run \`core init --update\` in the workspace.`,
    })
  }
}

/**
 * The definition `tool` would be offered under `name`, checked as registration checks it; throws CheckError for
 * an invalid name or a value not made by `Tool.make`.
 */
export const check = (tool: Tool.Any, name: string): Definition => {
  const problem = ToolName.problem(name)
  if (problem !== undefined) throw new CheckError({ name, message: `Invalid tool name: ${problem}` })
  if (!Tool.isTool(tool)) {
    throw new CheckError({
      name,
      message: `"${name}" is not a tool made by Tool.make (import Tool from "@core/tool", not from a copy of core)`,
    })
  }
  return ToolDefinition.of(tool, name)
}

/** Settles one call to `tool` and answers its settlement JSON; rejects with OperationalFailure when core would. */
export const settle = async (tool: Tool.Any, input: unknown, options: Options = {}): Promise<Settlement> =>
  (await trace(tool, input, options)).settlement

/** Settles one call to the tool `name` of a tool file, named as core names them (`git.ts` `status`: `git_status`). */
export const settleFile = async (
  path: string,
  name: string,
  input: unknown,
  options: Options = {},
): Promise<Settlement> => (await traceFile(path, name, input, options)).settlement

/** Like `settle`, and also answers the progress updates, permission asks and full managed outputs. */
export const trace = async (tool: Tool.Any, input: unknown, options: Options = {}): Promise<Trace> => {
  const name = options.name ?? "tool"
  check(tool, name)
  return run({ [name]: tool }, name, input, options)
}

/** Like `settleFile`, and also answers the progress updates, permission asks and full managed outputs. */
export const traceFile = async (
  path: string,
  name: string,
  input: unknown,
  options: Options = {},
): Promise<Trace> => {
  const file = resolve(path)
  // As core does: the same checks (syntax, imports), and `@core/tool` and `effect` are this copy's own.
  const loaded = await Effect.runPromiseExit(Discovery.importFile(file))
  if (Exit.isFailure(loaded)) {
    const error = Cause.findError(loaded.cause)
    if (error._tag !== "Success") throw Cause.squash(loaded.cause)
    const { position } = error.success
    throw new LoadError({ file, message: `${file}: ${error.success.message}`, ...(position === undefined ? {} : { position }) })
  }
  const record = loaded.value
  for (const [toolName, tool] of Object.entries(record)) {
    try {
      check(tool, toolName)
    } catch (error) {
      throw new LoadError({ file, message: `${file}: ${messageOf(error)}` })
    }
  }
  const folder = dirname(file)
  const location = options.location ?? (basename(folder) === "tools" ? dirname(folder) : undefined)
  return run(record, name, input, location === undefined ? options : { ...options, location })
}


const run = async (
  record: Readonly<Record<string, Tool.Any>>,
  name: string,
  input: unknown,
  options: Options,
): Promise<Trace> => {
  const scratch = realpathSync(mkdtempSync(join(tmpdir(), "core-testing-")))
  try {
    const location = options.location === undefined ? scratch : locationOf(options.location)
    const kernel = kernelLayer(location, join(scratch, "outputs"), options)
    const observed: Observed = { progress: [], asks: [], cancelled: undefined }
    const exit = await Effect.runPromiseExit(
      program(record, name, input, options, observed).pipe(Effect.scoped, Effect.provide(kernel)),
      options.signal === undefined ? undefined : { signal: options.signal },
    )
    if (Exit.isSuccess(exit)) return exit.value
    if (Cause.hasInterruptsOnly(exit.cause) && observed.cancelled !== undefined) {
      const { progress, asks } = observed
      return { settlement: observed.cancelled, progress, asks, outputs: {}, structured: {} }
    }
    const error = Cause.findError(exit.cause)
    if (error._tag === "Success" && !(error.success instanceof Settler.OperationalError)) throw error.success
    const cause = error._tag === "Success" ? error.success : Cause.squash(exit.cause)
    throw new OperationalFailure({
      tool: name,
      message:
        `${name} ended in an operational failure, which is never a tool result (\`core exec\` exits 3):\n` +
        Cause.pretty(exit.cause),
      cause,
    })
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

/** What a call showed on its way, kept outside its fiber: an interrupted call answers from it. */
interface Observed {
  readonly progress: Array<Progress>
  readonly asks: Array<Ask>
  /** What the settler recorded for a call interrupted by `signal`. */
  cancelled: Settlement | undefined
}

const program = (
  record: Readonly<Record<string, Tool.Any>>,
  name: string,
  input: unknown,
  options: Options,
  observed: Observed,
) =>
  Effect.gen(function* () {
    const agent = options.agent ?? Agent.DEFAULT_AGENT
    const permission = yield* Permission.Service
    if (!permission.isAgent(agent)) {
      const known = permission.agents.join(", ")
      return yield* new OptionsError({ message: `unknown agent "${agent}"; known agents: ${known}` })
    }
    yield* (yield* Registry.Service).tools
      .register(record)
      .pipe(Effect.mapError((error) => new CheckError({ name: error.name ?? name, message: error.message })))

    // Asks are answered as they come, like `core exec` does (declined unless a reply is given).
    const { asks, progress } = observed
    yield* answerAsks(permission, options.permission?.reply, asks)

    const settler = yield* Settler.Service
    const turn = yield* settler.materialize()
    const call = callOf(agent, name, input, options)
    const { settlement } = yield* turn.settle(
      call,
      {
        onProgress: (update) =>
          Effect.sync(() => {
            progress.push(update)
            options.onProgress?.(update)
          }),
      },
    ).pipe(
      // The settler records what an interrupted call settled as; the answer is that record.
      Effect.onInterrupt(() =>
        settler.interrupted(call).pipe(
          Effect.map((recorded) => {
            observed.cancelled = recorded
          }),
          Effect.ignore,
        ),
      ),
    )

    const managed = yield* ManagedOutputs.Service
    const outputs: Record<string, string> = {}
    const structured: Record<string, unknown> = {}
    for (const { id } of settlement.outputs) {
      const text = yield* managed.open(id).pipe(Effect.orDie)
      outputs[id] = yield* Effect.promise(() => text.content.text())
      const kept = yield* Effect.option(managed.open(id, "structured"))
      if (kept._tag === "Some") structured[id] = yield* Effect.promise(() => kept.value.content.json())
    }
    return { settlement, progress, asks, outputs, structured } satisfies Trace
  })

