// `@core/tool/testing`: settles a tool in-process through core's real pipeline (decode, authorize, execute,
// encode, project, bound, keep managed outputs) so an author's `bun test` sees the very settlement JSON that
// `core exec` prints. Each call gets a fresh kernel with an in-memory store and a temp outputs directory; nothing
// here reads core.json, $CORE_HOME or the durable store. A curated surface: every export is named below.

import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join, resolve } from "node:path"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { Kernel } from "../host/kernel"
import { Discovery } from "../location/discovery"
import { ManagedOutputs } from "../output/managed"
import type { Output } from "../output/output"
import { Agent } from "../permission/agent"
import { Permission } from "../permission/permission"
import type { Rule as PermissionRule } from "../permission/rule"
import type { Plugin } from "../plugin/plugin"
import { Plugins } from "../plugin/plugins"
import { Registry } from "../registry/registry"
import { Hooks } from "../settlement/hooks"
import { Settler } from "../settlement/settler"
import type { Settlement as SettlementInfo } from "../settlement/settlement"
import { Approvals } from "../store/approvals"
import { Store } from "../store/store"
import { Definition as ToolDefinition } from "../tool/definition"
import { ToolName } from "../tool/name"
import { Tool } from "../tool/tool"

/** The settlement JSON, exactly as `core exec` prints it (DESIGN §5). */
export type Settlement = SettlementInfo.Info

/** What a model is offered for a tool registered under a name: description and JSON Schemas. */
export type Definition = ToolDefinition.Definition

/** A progress update a tool reported through `context.progress`. */
export type Progress = Tool.Progress

/** A permission rule: `*` and `?` wildcards over the whole action and resource; the last match wins. */
export type Rule = PermissionRule.Rule

/** How a permission ask is answered: approve once, approve and save, or reject (with a message for the model). */
export type Reply = "once" | "always" | { readonly reject: string | undefined }

/** A permission ask as the reply function sees it. */
export interface Ask {
  readonly action: string
  readonly resources: ReadonlyArray<string>
}

export interface PermissionOptions {
  /** Rules applied after core's defaults (everything allowed, paths outside the Location asked). */
  readonly rules?: ReadonlyArray<Rule>
  /**
   * How asks are answered: one reply for every ask, or a function answering each (a person taking their time:
   * the call waits until its promise settles). Without it an ask is declined, as `core exec` does without a
   * terminal.
   */
  readonly reply?: Reply | ((ask: Ask) => Reply | Promise<Reply>)
}

export interface Options {
  /** The name the tool is registered and called under (default "tool"; `settleFile` needs one). */
  readonly name?: string
  /** The calling agent, whose rules apply (default "build"; "plan" may not edit). */
  readonly agent?: string
  readonly sessionID?: string
  readonly assistantMessageID?: string
  readonly toolCallID?: string
  /** The Location directory (default: a fresh temp directory; for `settleFile`, the folder above `tools/`). */
  readonly location?: string
  readonly permission?: PermissionOptions
  /** What the model may see of one output before it is bounded (default 2,000 lines, 51,200 bytes). */
  readonly limits?: { readonly maxLines?: number; readonly maxBytes?: number }
  /** Called with each progress update while the tool runs. */
  readonly onProgress?: (update: Progress) => void
  /**
   * Cancels the call when aborted, as SIGINT does for `core exec`: a running tool is interrupted (its processes
   * killed), and the call settles `cancelled`, also while it waits for a permission reply.
   */
  readonly signal?: AbortSignal
}

/** A settlement with what happened around it. */
export interface Trace {
  readonly settlement: Settlement
  /** The progress updates, in order. */
  readonly progress: ReadonlyArray<Progress>
  /** The permission asks the call raised (answered by `permission.reply`). */
  readonly asks: ReadonlyArray<{ readonly action: string; readonly resources: ReadonlyArray<string> }>
  /** The full text of each managed output of the settlement, by id (what `core output ID` prints). */
  readonly outputs: Readonly<Record<string, string>>
  /**
   * The full structured value each managed output holds when the settlement had to drop it (`structured: null`),
   * by id (what `core output ID --structured` prints).
   */
  readonly structured: Readonly<Record<string, unknown>>
}

/** A tool that could not be registered under a name (an invalid name, a value not made by `Tool.make`). */
export class CheckError extends Schema.TaggedError<CheckError>()("Testing.CheckError", {
  name: Schema.String,
  message: Schema.String,
}) {}

/**
 * A tool file that `core` would report as a diagnostic instead of loading, with what `core tools` says: the file,
 * the reason (an install hint for a missing package) and, for a syntax error, its `position` (1-based line and
 * column).
 */
export class LoadError extends Schema.TaggedError<LoadError>()("Testing.LoadError", {
  file: Schema.String,
  message: Schema.String,
  position: Schema.optionalKey(Schema.Struct({ line: Schema.Int, column: Schema.Int })),
}) {}

/** Options that `core exec` would refuse as a usage error (an unknown agent, a missing Location). */
export class OptionsError extends Schema.TaggedError<OptionsError>()("Testing.OptionsError", {
  message: Schema.String,
}) {}

/**
 * The call ended in an operational failure: a defect (a throw, `Effect.die`), an error other than
 * `Tool.Failure`, or an output that could not be kept. Never a tool result: `core exec` exits 3.
 */
export class OperationalFailure extends Schema.TaggedError<OperationalFailure>()("Testing.OperationalFailure", {
  tool: Schema.String,
  message: Schema.String,
  cause: Schema.Defect(),
}) {}

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
  const answer = Bun.spawnSync([binary, "--version"], { stdout: "pipe", stderr: "ignore" })
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

const messageOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "message" in cause ? String(cause.message) : String(cause)

const replyOf = (reply: Reply | undefined): Permission.Reply => {
  if (reply === "once" || reply === "always") return { reply }
  // No reply given: nobody is there to answer, as with core exec without a terminal.
  if (reply === undefined) return { reply: "reject", unattended: true }
  const message = reply.reject
  return message === undefined ? { reply: "reject" } : { reply: "reject", message }
}

const locationOf = (path: string): string => {
  const absolute = resolve(path)
  let isDirectory = false
  try {
    isDirectory = statSync(absolute).isDirectory()
  } catch {
    throw new OptionsError({ message: `location ${absolute} does not exist` })
  }
  if (!isDirectory) throw new OptionsError({ message: `location ${absolute} is not a directory` })
  return realpathSync(absolute)
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
    const outputsDirectory = join(scratch, "outputs")
    const rules = (options.permission?.rules ?? []).map(
      (rule, index): Agent.SourcedRule => ({
        action: rule.action,
        resource: rule.resource,
        effect: rule.effect,
        source: { file: "@core/tool/testing", path: `permission.rules[${index}]` },
      }),
    )
    const permission = Permission.layer({
      project: location,
      configured: { rules, agents: new Map() },
      readableRoots: [outputsDirectory],
    }).pipe(Layer.provide(Approvals.layerMemory))
    const limits: Partial<Output.Limits> = {
      ...(options.limits?.maxLines === undefined ? {} : { maxLines: options.limits.maxLines }),
      ...(options.limits?.maxBytes === undefined ? {} : { maxBytes: options.limits.maxBytes }),
    }
    const kernel = Kernel.layer({ store: Store.layerMemory, outputsDirectory, limits, permission })
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
    const reply = options.permission?.reply
    const events = yield* permission.subscribe
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          const event = yield* PubSub.take(events)
          if (event.type !== "asked") return
          const ask = { action: event.request.action, resources: event.request.resources }
          asks.push(ask)
          const answer = typeof reply === "function" ? yield* Effect.promise(async () => reply(ask)) : reply
          yield* permission.reply(event.request.id, replyOf(answer)).pipe(Effect.ignore)
        }),
      ),
    )

    const turn = yield* (yield* Settler.Service).materialize()
    const call: Settler.Call = {
      sessionID: options.sessionID ?? `ses_${crypto.randomUUID()}`,
      agent,
      assistantMessageID: options.assistantMessageID ?? `msg_${crypto.randomUUID()}`,
      toolCallID: options.toolCallID ?? `call_${crypto.randomUUID()}`,
      name,
      input,
    }
    const store = yield* Store.Service
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
        store.lookup(call).pipe(
          Effect.map((known) => {
            if (known?.state === "settled") observed.cancelled = known.settlement
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
      outputs[id] = yield* Effect.promise(() => Bun.file(text.path).text())
      const kept = yield* Effect.option(managed.open(id, "structured"))
      if (kept._tag === "Some") structured[id] = yield* Effect.promise(() => Bun.file(kept.value.path).json())
    }
    return { settlement, progress, asks, outputs, structured } satisfies Trace
  })

/** A plugin for a test Location: a value made by `Plugin.make` (named after its place) or a plugin file's path. */
export type PluginSource = Plugin.Plugin | string

export interface LocationOptions {
  /** The Location directory (default: a fresh temp directory, removed on close). */
  readonly directory?: string
  /** Plugins installed in this order, each once, in a Scope of its own (after the built-ins, which a test has none of). */
  readonly plugins?: ReadonlyArray<PluginSource>
  /** Tools registered after the plugins, as a Location's `tools/*.ts` are (so a name here wins over a plugin's). */
  readonly tools?: Readonly<Record<string, Tool.Any>>
  readonly permission?: PermissionOptions
  readonly limits?: { readonly maxLines?: number; readonly maxBytes?: number }
  /** How long one installation may take (default 10 s, as in core). */
  readonly installTimeoutMs?: number
}

/** The ids and observers of one call through a test Location. */
export type CallOptions = Pick<
  Options,
  "agent" | "sessionID" | "assistantMessageID" | "toolCallID" | "onProgress" | "signal"
>

/** A captured catalog, as a host's turn holds it: calls through it are stale once their tool changed. */
export interface Turn {
  readonly definitions: ReadonlyArray<Definition>
  readonly settle: (name: string, input: unknown, options?: CallOptions) => Promise<Settlement>
  readonly trace: (name: string, input: unknown, options?: CallOptions) => Promise<Trace>
}

/**
 * A Location with plugins installed as core installs them (once, each in its own Scope, with hooks applying to
 * every call). Close it to close every plugin's Scope; `using` closes it too.
 */
export interface TestLocation extends AsyncDisposable {
  readonly directory: string
  /** What core would report for a plugin that failed to load or install: the file (or `plugin<N>`) and why. */
  readonly diagnostics: ReadonlyArray<{ readonly file: string; readonly message: string }>
  /** Captures the catalog for an agent (default "build"). */
  readonly turn: (agent?: string) => Promise<Turn>
  /** Settles one call through a fresh turn. */
  readonly settle: (name: string, input: unknown, options?: CallOptions) => Promise<Settlement>
  readonly trace: (name: string, input: unknown, options?: CallOptions) => Promise<Trace>
  /**
   * Installs a plugin again, as editing its file does under `core serve`: its Scope closes (its tools, hooks and
   * resources go) and a fresh one installs it (a file's current content). Answers the diagnostic, if it now fails.
   */
  readonly reload: (plugin: PluginSource) => Promise<string | undefined>
  readonly close: () => Promise<void>
}

/** A plugin's name in diagnostics and hooks: its file, or `plugin<N>` by its place. */
const pluginFile = (source: PluginSource, index: number, directory: string): string =>
  typeof source === "string" ? resolve(directory, source) : `plugin${index + 1}`

/** Makes a test Location and installs its plugins; see TestLocation. */
export const location = async (options: LocationOptions = {}): Promise<TestLocation> => {
  const scratch = realpathSync(mkdtempSync(join(tmpdir(), "core-testing-")))
  const directory = options.directory === undefined ? scratch : locationOf(options.directory)
  const outputsDirectory = join(scratch, "outputs")
  const rules = (options.permission?.rules ?? []).map(
    (rule, index): Agent.SourcedRule => ({
      action: rule.action,
      resource: rule.resource,
      effect: rule.effect,
      source: { file: "@core/tool/testing", path: `permission.rules[${index}]` },
    }),
  )
  const permissionLayer = Permission.layer({
    project: directory,
    configured: { rules, agents: new Map() },
    readableRoots: [outputsDirectory],
  }).pipe(Layer.provide(Approvals.layerMemory))
  const limits: Partial<Output.Limits> = {
    ...(options.limits?.maxLines === undefined ? {} : { maxLines: options.limits.maxLines }),
    ...(options.limits?.maxBytes === undefined ? {} : { maxBytes: options.limits.maxBytes }),
  }
  const scope = Scope.makeUnsafe()
  const closeAll = async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(scratch, { recursive: true, force: true })
  }
  const context = await Effect.runPromise(
    Layer.buildWithScope(Kernel.layer({ store: Store.layerMemory, outputsDirectory, limits, permission: permissionLayer }), scope),
  )
  const runIn = <A, E>(effect: Effect.Effect<A, E, any>, signal?: AbortSignal) =>
    Effect.runPromiseExit(effect.pipe(Effect.provideContext(context)) as Effect.Effect<A, E>, signal === undefined ? undefined : { signal })

  const permission = Context.get(context, Permission.Service)
  const registry = Context.get(context, Registry.Service)
  const services: Plugins.Services = {
    directory,
    tools: registry.tools,
    permission,
    hooks: Context.get(context, Hooks.Current)!,
  }
  const asks: Array<Ask> = []
  const reply = options.permission?.reply
  await runIn(
    Effect.gen(function* () {
      const events = yield* permission.subscribe.pipe(Scope.provide(scope))
      yield* Effect.forkIn(
        Effect.forever(
          Effect.gen(function* () {
            const event = yield* PubSub.take(events)
            if (event.type !== "asked") return
            const ask = { action: event.request.action, resources: event.request.resources }
            asks.push(ask)
            const answer = typeof reply === "function" ? yield* Effect.promise(async () => reply(ask)) : reply
            yield* permission.reply(event.request.id, replyOf(answer)).pipe(Effect.ignore)
          }),
        ),
        scope,
      )
    }),
  )

  const installed = new Map<string, Scope.Closeable>()
  const diagnostics: Array<{ file: string; message: string }> = []
  let version = 0
  const install = (source: PluginSource, file: string, fresh: boolean) =>
    Effect.gen(function* () {
      const child = yield* Scope.fork(scope)
      const installing = (
        typeof source === "string" ? Plugins.load(file, fresh ? `test.${++version}` : undefined) : Effect.succeed(source)
      ).pipe(
        Effect.flatMap((plugin) => Plugins.install(file, plugin, services, child, options.installTimeoutMs)),
        Effect.onError(() => Scope.close(child, Exit.void)),
      )
      const result = yield* Effect.result(installing)
      if (result._tag === "Failure") return `${file}: ${result.failure.message}`
      installed.set(file, child)
      return undefined
    })

  const sources = options.plugins ?? []
  for (const [index, source] of sources.entries()) {
    const file = pluginFile(source, index, directory)
    const exit = await runIn(install(source, file, false))
    if (Exit.isFailure(exit)) {
      await closeAll()
      throw Cause.squash(exit.cause)
    }
    if (exit.value !== undefined) diagnostics.push({ file, message: exit.value })
  }
  if (options.tools !== undefined) {
    const registered = await runIn(registry.tools.register(options.tools).pipe(Scope.provide(scope)))
    if (Exit.isFailure(registered)) {
      await closeAll()
      const error = Cause.findError(registered.cause)
      throw error._tag === "Success" ? new CheckError({ name: error.success.name ?? "tools", message: error.success.message }) : Cause.squash(registered.cause)
    }
  }

  const turn = async (agent: string = Agent.DEFAULT_AGENT): Promise<Turn> => {
    if (!permission.isAgent(agent)) {
      throw new OptionsError({ message: `unknown agent "${agent}"; known agents: ${permission.agents.join(", ")}` })
    }
    const made = await runIn((Context.get(context, Settler.Service)).materialize(permission.rules(agent)))
    if (Exit.isFailure(made)) throw new OperationalFailure({ tool: "(definitions)", message: Cause.pretty(made.cause), cause: Cause.squash(made.cause) })
    const materialization = made.value
    const traceThrough = async (name: string, input: unknown, callOptions: CallOptions = {}): Promise<Trace> => {
      const progress: Array<Progress> = []
      const before = asks.length
      const call: Settler.Call = {
        sessionID: callOptions.sessionID ?? `ses_${crypto.randomUUID()}`,
        agent,
        assistantMessageID: callOptions.assistantMessageID ?? `msg_${crypto.randomUUID()}`,
        toolCallID: callOptions.toolCallID ?? `call_${crypto.randomUUID()}`,
        name,
        input,
      }
      const exit = await runIn(
        materialization.settle(call, {
          onProgress: (update) =>
            Effect.sync(() => {
              progress.push(update)
              callOptions.onProgress?.(update)
            }),
        }),
        callOptions.signal,
      )
      if (Exit.isFailure(exit)) {
        if (Cause.hasInterruptsOnly(exit.cause)) {
          const known = await runIn(Context.get(context, Store.Service).lookup(call))
          if (Exit.isSuccess(known) && known.value?.state === "settled") {
            return { settlement: known.value.settlement, progress, asks: asks.slice(before), outputs: {}, structured: {} }
          }
        }
        throw new OperationalFailure({
          tool: name,
          message: `${name} ended in an operational failure, which is never a tool result (\`core exec\` exits 3):\n${Cause.pretty(exit.cause)}`,
          cause: Cause.squash(exit.cause),
        })
      }
      const { settlement } = exit.value
      const managed = Context.get(context, ManagedOutputs.Service)
      const outputs: Record<string, string> = {}
      const structured: Record<string, unknown> = {}
      for (const { id } of settlement.outputs) {
        const text = await Effect.runPromise(managed.open(id).pipe(Effect.orDie))
        outputs[id] = await Bun.file(text.path).text()
        const kept = await Effect.runPromise(Effect.option(managed.open(id, "structured")))
        if (kept._tag === "Some") structured[id] = await Bun.file(kept.value.path).json()
      }
      return { settlement, progress, asks: asks.slice(before), outputs, structured }
    }
    return {
      definitions: materialization.definitions,
      trace: traceThrough,
      settle: async (name, input, callOptions) => (await traceThrough(name, input, callOptions)).settlement,
    }
  }

  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    await closeAll()
  }
  return {
    directory,
    diagnostics,
    turn,
    trace: async (name, input, callOptions) => (await turn(callOptions?.agent)).trace(name, input, callOptions),
    settle: async (name, input, callOptions) => (await turn(callOptions?.agent)).settle(name, input, callOptions),
    reload: async (source) => {
      const index = sources.indexOf(source)
      const file = typeof source === "string" && index === -1 ? resolve(directory, source) : pluginFile(source, index, directory)
      const previous = installed.get(file)
      installed.delete(file)
      if (previous !== undefined) await Effect.runPromise(Scope.close(previous, Exit.void))
      const exit = await runIn(install(source, file, true))
      if (Exit.isFailure(exit)) throw Cause.squash(exit.cause)
      return exit.value
    },
    close,
    [Symbol.asyncDispose]: close,
  }
}
