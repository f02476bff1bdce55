// `@core/tool/testing`'s `location`: one kernel kept for a test Location, with plugins installed as core installs
// them (once each, in a Scope of its own, hooks applying to every call) and tools registered after them, until it
// is closed. The shapes, errors and kernel come from ./harness.ts, as `settle`'s do.

import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join, resolve } from "node:path"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { ManagedOutputs } from "../output/managed-outputs"
import { Agent } from "../permission/agent"
import { Permission } from "../permission/permission"
import type { Plugin } from "../author/plugin"
import { Plugins } from "../plugin/plugins"
import { Registry } from "../registry/registry"
import { Hooks } from "../settlement/hooks"
import { Settler } from "../settlement/settler"
import type { Tool } from "../tool/tool"
import {
  answerAsks,
  type Ask,
  callOf,
  CheckError,
  type Definition,
  kernelLayer,
  locationOf,
  OperationalFailure,
  type Options,
  OptionsError,
  type PermissionOptions,
  type Progress,
  type Settlement,
  type Trace,
} from "./harness"

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
  readonly limits?: NonNullable<Options["limits"]>
  /** How long one installation may take (default 10 s, as in core). */
  readonly installTimeoutMs?: number
  /**
   * What `Plugin.Shell` is in this Location. The kit runs no processes: core's shell producer (its per-call
   * supervisor, process-group kills and OS sandbox) lives in the core binary only, and a lesser shell here would
   * let tests pass that core would fail. Without a stand-in, every `run` fails with a Tool.Failure saying so
   * (SHELL_UNAVAILABLE); give one (answering `Plugin.Ran`) to test a plugin's own logic, and run its processes
   * for real through `core exec`.
   */
  readonly shell?: (typeof Plugin.Shell)["Service"]
}

/** Why `Plugin.Shell` fails in a test Location without a `shell` stand-in. */
export const SHELL_UNAVAILABLE =
  "Plugin.Shell runs no processes in @core/tool/testing: core's shell producer (supervisor, process-group kills, " +
  "sandbox) is in the core binary only. Give location({ shell }) a stand-in to test this tool's logic, or run it " +
  "through `core exec`."

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

/** Runs an effect in a test Location's kernel (an abort of `signal` interrupts it). */
type Runner = <A, E>(effect: Effect.Effect<A, E, any>, signal?: AbortSignal) => Promise<Exit.Exit<A, E>>

/** What a test Location's turns share: its kernel, and the asks answered so far. */
interface Kernel {
  readonly run: Runner
  readonly permission: Permission.Interface
  readonly settler: Settler.Interface
  readonly managed: ManagedOutputs.Interface
  readonly asks: Array<Ask>
}

/** The full text and structured value of each managed output a settlement names, by id. */
const keptOutputs = async (managed: ManagedOutputs.Interface, settlement: Settlement) => {
  const outputs: Record<string, string> = {}
  const structured: Record<string, unknown> = {}
  for (const { id } of settlement.outputs) {
    const text = await Effect.runPromise(managed.open(id).pipe(Effect.orDie))
    outputs[id] = await text.content.text()
    const kept = await Effect.runPromise(Effect.option(managed.open(id, "structured")))
    if (kept._tag === "Some") structured[id] = await kept.value.content.json()
  }
  return { outputs, structured }
}

/** Captures the catalog for an agent, and settles calls through it. */
const turnOf = async (kernel: Kernel, agent: string): Promise<Turn> => {
  const { permission, run, asks } = kernel
  if (!permission.isAgent(agent)) {
    throw new OptionsError({ message: `unknown agent "${agent}"; known agents: ${permission.agents.join(", ")}` })
  }
  const made = await run(kernel.settler.materialize(permission.rules(agent)))
  if (Exit.isFailure(made)) throw new OperationalFailure({ tool: "(definitions)", message: Cause.pretty(made.cause), cause: Cause.squash(made.cause) })
  const materialization = made.value
  const traceThrough = async (name: string, input: unknown, callOptions: CallOptions = {}): Promise<Trace> => {
    const progress: Array<Progress> = []
    const before = asks.length
    const call = callOf(agent, name, input, callOptions)
    const exit = await run(
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
        const recorded = await run(kernel.settler.interrupted(call))
        if (Exit.isSuccess(recorded) && recorded.value !== undefined) {
          return { settlement: recorded.value, progress, asks: asks.slice(before), outputs: {}, structured: {} }
        }
      }
      throw new OperationalFailure({
        tool: name,
        message: `${name} ended in an operational failure, which is never a tool result (\`core exec\` exits 3):\n${Cause.pretty(exit.cause)}`,
        cause: Cause.squash(exit.cause),
      })
    }
    const { settlement } = exit.value
    const { outputs, structured } = await keptOutputs(kernel.managed, settlement)
    return { settlement, progress, asks: asks.slice(before), outputs, structured }
  }
  return {
    definitions: materialization.definitions,
    trace: traceThrough,
    settle: async (name, input, callOptions) => (await traceThrough(name, input, callOptions)).settlement,
  }
}

/** Makes a test Location and installs its plugins; see TestLocation. */
export const location = async (options: LocationOptions = {}): Promise<TestLocation> => {
  const scratch = realpathSync(mkdtempSync(join(tmpdir(), "core-testing-")))
  const directory = options.directory === undefined ? scratch : locationOf(options.directory)
  const scope = Scope.makeUnsafe()
  const closeAll = async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(scratch, { recursive: true, force: true })
  }
  const context = await Effect.runPromise(
    Layer.buildWithScope(kernelLayer(directory, join(scratch, "outputs"), options), scope),
  )
  const runIn: Runner = <A, E>(effect: Effect.Effect<A, E, any>, signal?: AbortSignal) =>
    Effect.runPromiseExit(effect.pipe(Effect.provideContext(context)) as Effect.Effect<A, E>, signal === undefined ? undefined : { signal })

  const permission = Context.get(context, Permission.Service)
  const registry = Context.get(context, Registry.Service)
  const services: Plugins.Services = {
    directory,
    tools: registry.tools,
    permission,
    hooks: Context.get(context, Hooks.Current)!,
    shell: options.shell ?? Plugins.unavailableShell(SHELL_UNAVAILABLE),
  }
  const asks: Array<Ask> = []
  await runIn(answerAsks(permission, options.permission?.reply, asks).pipe(Scope.provide(scope)))
  const kernel: Kernel = {
    run: runIn,
    permission,
    settler: Context.get(context, Settler.Service),
    managed: Context.get(context, ManagedOutputs.Service),
    asks,
  }

  const installed = new Map<string, { readonly scope: Scope.Closeable; readonly active: Plugins.Active }>()
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
      installed.set(file, { scope: child, active: result.success })
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
  // The tools go in a Scope of their own, made again over the names of a plugin reinstalled after them.
  let toolsScope: Scope.Closeable | undefined
  const registerTools = (names?: ReadonlySet<string>) =>
    Effect.gen(function* () {
      const record = Object.fromEntries(Object.entries(options.tools ?? {}).filter(([name]) => names?.has(name) ?? true))
      if (Object.keys(record).length === 0) return
      const next = yield* Scope.fork(scope)
      yield* registry.tools.register(record).pipe(Scope.provide(next), Effect.onError(() => Scope.close(next, Exit.void)))
      const previous = toolsScope
      toolsScope = next
      if (previous !== undefined && names !== undefined) yield* Scope.close(previous, Exit.void)
    })
  if (options.tools !== undefined) {
    const registered = await runIn(registerTools())
    if (Exit.isFailure(registered)) {
      await closeAll()
      const error = Cause.findError(registered.cause)
      throw error._tag === "Success" ? new CheckError({ name: error.success.name ?? "tools", message: error.success.message }) : Cause.squash(registered.cause)
    }
  }

  const turn = (agent: string = Agent.DEFAULT_AGENT): Promise<Turn> => turnOf(kernel, agent)

  /** Installs a plugin again: its Scope closes, a fresh one installs it, ranked where it was. */
  const reload = async (source: PluginSource) => {
    const index = sources.indexOf(source)
    const file = typeof source === "string" && index === -1 ? resolve(directory, source) : pluginFile(source, index, directory)
    const previous = installed.get(file)
    installed.delete(file)
    const release = Plugins.holdHooks(services.hooks, basename(file, ".ts"), previous?.active.hooks)
    if (previous !== undefined) await Effect.runPromise(Scope.close(previous.scope, Exit.void))
    const exit = await runIn(
      Effect.gen(function* () {
        const diagnostic = yield* install(source, file, true)
        const names = installed.get(file)?.active.names
        if (names === undefined) return diagnostic
        // Installed last, it would win over what is ranked after it: the later plugins, then the tools.
        const ranked = sources.map((candidate, rank) => installed.get(pluginFile(candidate, rank, directory))?.active)
        yield* Plugins.raiseAfter(ranked, index === -1 ? ranked.length : index, names)
        yield* registerTools(new Set(names))
        return diagnostic
      }).pipe(Effect.ensuring(Effect.suspend(() => release(installed.get(file)?.active.hooks)))),
    )
    if (Exit.isFailure(exit)) throw Cause.squash(exit.cause)
    return exit.value
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
    reload,
    close,
    [Symbol.asyncDispose]: close,
  }
}
