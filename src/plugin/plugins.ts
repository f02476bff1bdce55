export * as Plugins from "./plugins"

// Installs a Location's plugins (DESIGN §12): `$CORE_HOME/plugins/*.ts` then `<location>/plugins/*.ts`, each by
// file name, every one in a Scope of its own under the Location's, with only the capabilities of ./plugin.ts.
// A plugin that fails to load or install (or takes too long) is a diagnostic naming its file; the others install.
// Reloading a file closes its Scope (its tools, hooks and resources go) and installs it again in a fresh one.
// It must not import the shell or the built-ins: hosts hand the shell capability in, and the author kit has none.

import { existsSync } from "node:fs"
import { basename } from "node:path"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { Discovery } from "../location/discovery"
import { Boundary } from "../permission/boundary"
import { Permission } from "../permission/permission"
import { Rule } from "../permission/rule"
import { Registry } from "../registry/registry"
import { Hooks } from "../settlement/hooks"
import { Tool } from "../tool/tool"
import * as Internal from "../author/plugin-internal"
import { Plugin } from "../author/plugin"

/** The folder plugins live in, in a Location and in `$CORE_HOME`. */
export const FOLDER = "plugins"
/** How long an installation may take before it is abandoned (its Scope closed) and reported. */
export const INSTALL_TIMEOUT_MS = 10_000

export type Diagnostic = Discovery.Diagnostic

/** The Location services a plugin's capabilities are made from. */
export interface Services {
  readonly directory: string
  readonly tools: Registry.Tools
  readonly permission: Permission.Interface
  /** The shell producer as a capability; without it, running a process fails saying the shell is not here. */
  readonly shell?: (typeof Plugin.Shell)["Service"]
  readonly hooks: Hooks.Chain
}

/** What one plugin file holds now. */
export interface Installed {
  readonly file: string
  /** The tool names it registered. */
  readonly names: ReadonlyArray<string>
}

export interface Reloaded {
  readonly file: string
  readonly before: ReadonlyArray<string>
  readonly after: ReadonlyArray<string>
  readonly diagnostic: Diagnostic | undefined
}

export interface Options {
  readonly timeoutMs?: number
  /** The version a file is imported under (hot reload imports a changed file's new content). */
  readonly versionOf?: (file: string) => string | undefined
  /** A fresh version for a changed file. */
  readonly bump?: (file: string) => string
}

/** The plugin files that apply to a Location: `$CORE_HOME`'s first, then its own, each sorted by file name. */
export const files = (directory: string, home: string | undefined): ReadonlyArray<string> => [
  ...(home === undefined || home === directory ? [] : Discovery.toolFiles(home, FOLDER)),
  ...Discovery.toolFiles(directory, FOLDER),
]

/** Whether `file` lies in a `plugins/` folder. */
export const isPluginFile = (file: string): boolean => basename(file.slice(0, file.lastIndexOf("/"))) === FOLDER

const messageOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "message" in cause ? String(cause.message) : String(cause)

const failure = (file: string, message: string) => new Discovery.LoadError({ file, message })

/**
 * One `register` call a plugin made, kept so it can be made again above a plugin of lower rank that was installed
 * after it (a reload), in a Scope under the one it was made in; `overlay` is the latest such Scope.
 */
interface Registration {
  readonly record: Readonly<Record<string, Tool.Any>>
  readonly scope: Scope.Scope
  overlay: Scope.Closeable | undefined
}

/**
 * What one installation holds. `raise` puts it back above a plugin of lower rank installed after it: its
 * registrations of `names` are made again (then the previous raise's are closed, so the name is never missing) and
 * its hooks move after that plugin's, so the documented order holds after any reload.
 */
export interface Active {
  readonly names: ReadonlyArray<string>
  /** The hooks its installation answered, if any. */
  readonly hooks: Plugin.Hooks | undefined
  readonly raise: (names: ReadonlySet<string>) => Effect.Effect<void>
}

/** The capabilities one plugin installs with; `names` and `registrations` collect what it registers. */
const capabilities = (services: Services, names: Array<string>, registrations: Array<Registration>) => {
  const { directory, permission } = services
  const resolved = (real: Boundary.Resolved): Plugin.Resolved => ({
    path: real.real,
    exists: real.exists,
    kind: real.kind,
    inside: real.inside,
  })
  const idsOf = (context: Tool.Context) => ({
    sessionID: context.sessionID,
    agent: context.agent,
    source: { messageID: context.assistantMessageID, callID: context.toolCallID },
  })
  return Context.make(Plugin.Location, { directory }).pipe(
    Context.add(Plugin.Tools, {
      register: (record) =>
        services.tools.register(record).pipe(
          Effect.andThen(Effect.gen(function* () {
            const scope = yield* Scope.Scope
            names.push(...Object.keys(record))
            registrations.push({ record: { ...record }, scope, overlay: undefined })
          })),
          Effect.mapError((error) => new Plugin.RegistrationError({ ...(error.name === undefined ? {} : { name: error.name }), message: error.message })),
        ),
    }),
    Context.add(Plugin.Permission, {
      assert: (context, check) =>
        permission
          .authorize(idsOf(context), [{ action: check.action, resources: check.resources, save: check.save ?? check.resources }]),
    }),
    Context.add(Plugin.Boundary, {
      resolve: (path) =>
        Boundary.resolve({ location: directory, path }).pipe(
          Effect.map(resolved),
          Effect.mapError((error) => new Tool.Failure({ message: error.message })),
        ),
      authorize: (context, request) =>
        permission
          .authorizePath({
            ...idsOf(context),
            path: request.path,
            access: request.access,
            action: request.action ?? (request.access === "read" ? "read" : "edit"),
          })
          .pipe(
            Effect.map(resolved),
            Effect.catchTag("Boundary.PathError", (error) => Effect.fail(new Tool.Failure({ message: error.message }))),
          ),
    }),
    Context.add(
      Plugin.Shell,
      services.shell ?? unavailableShell("The shell producer is not available to this Location's plugins."),
    ),
  )
}

/** A `Plugin.Shell` whose every run fails with `message`, for where no shell producer is given. */
export const unavailableShell = (message: string): (typeof Plugin.Shell)["Service"] => ({
  run: () => Effect.fail(new Tool.Failure({ message })),
})

/** Checks what an installation answered: nothing, or hooks that are functions. */
const hooksOf = (file: string, answer: unknown): Effect.Effect<Plugin.Hooks | undefined, Discovery.LoadError> => {
  if (answer === undefined) return Effect.succeed(undefined)
  if (typeof answer !== "object" || answer === null) {
    return Effect.fail(failure(file, "install answered something other than hooks ({ \"tool.definition\"?, ... }) or nothing"))
  }
  const hooks = answer as Plugin.Hooks
  for (const name of Plugin.HOOKS) {
    if (hooks[name] !== undefined && typeof hooks[name] !== "function") {
      return Effect.fail(failure(file, `its ${name} hook is not a function`))
    }
  }
  if (hooks.tools !== undefined && (!Array.isArray(hooks.tools) || !hooks.tools.every((p) => typeof p === "string"))) {
    return Effect.fail(failure(file, "its hooks' `tools` is not a list of name patterns"))
  }
  return Effect.succeed(hooks)
}

/** Makes `registration`'s names among `names` again, above what was registered since; closes the previous raise. */
const raiseRegistration = (tools: Registry.Tools, registration: Registration, names: ReadonlySet<string>) =>
  Effect.gen(function* () {
    const record = Object.fromEntries(Object.entries(registration.record).filter(([name]) => names.has(name)))
    if (Object.keys(record).length === 0 || registration.scope.state._tag === "Closed") return
    const overlay = yield* Scope.fork(registration.scope)
    // The record was accepted once and its Scope is open: a refusal now is a broken invariant.
    yield* tools.register(record).pipe(Scope.provide(overlay), Effect.orDie)
    const previous = registration.overlay
    registration.overlay = overlay
    if (previous !== undefined) yield* Scope.close(previous, Exit.void)
  })

/**
 * Runs one plugin's installation in `scope` (which the caller closes on failure): its capabilities, its timeout,
 * its hooks added to the Location's table until the Scope closes. Answers the names it registered, and how to
 * raise it above a plugin of lower rank installed after it.
 */
export const install = (
  file: string,
  plugin: Plugin.Plugin,
  services: Services,
  scope: Scope.Scope,
  timeoutMs = INSTALL_TIMEOUT_MS,
): Effect.Effect<Active, Discovery.LoadError> =>
  Effect.gen(function* () {
    const names: Array<string> = []
    const registrations: Array<Registration> = []
    const installation = Internal.installOf(plugin)!.pipe(
      Effect.provideContext(capabilities(services, names, registrations)),
      Scope.provide(scope),
    )
    // The boundary where whatever an installation does wrong (an error, a throw, a registration refused) becomes
    // a diagnostic; an interruption passes through.
    const guarded = Effect.suspend(() => installation).pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause as Cause.Cause<never>)
          : Effect.fail(failure(file, `failed to install: ${reasonOf(cause)}`)),
      ),
    )
    // Run apart and waited for only so long: an installation waiting where it cannot be interrupted (the acquire of
    // an acquireRelease, a connection that never answers) would hold a timeout that waits for its interruption, and
    // the Location's loading with it, forever. Past the limit it is interrupted without being waited for (what it
    // acquires later is released as it is added, its Scope being closed by then).
    const fiber = yield* Effect.forkDetach(guarded)
    const finished = yield* Effect.raceFirst(
      Fiber.join(fiber).pipe(Effect.map((answer) => ({ answer }))),
      Effect.as(Effect.sleep(timeoutMs), undefined),
    ).pipe(Effect.onInterrupt(() => Effect.sync(() => fiber.interruptUnsafe())))
    if (finished === undefined) {
      fiber.interruptUnsafe()
      return yield* failure(file, `did not finish installing within ${timeoutMs / 1000} s`)
    }
    const { answer } = finished
    const hooks = yield* hooksOf(file, answer)
    let raiseHooks = Effect.void
    if (hooks !== undefined) {
      const entry = { plugin: basename(file, ".ts"), hooks }
      let remove = services.hooks.add(entry)
      let closed = false
      yield* Scope.addFinalizer(scope, Effect.sync(() => {
        closed = true
        remove()
      }))
      // Removed and added again in one step: no settle meets the table without this plugin's hooks.
      raiseHooks = Effect.sync(() => {
        if (closed) return
        remove()
        remove = services.hooks.add(entry)
      })
    }
    const raise = (raised: ReadonlySet<string>) =>
      Effect.forEach(registrations, (registration) => raiseRegistration(services.tools, registration, raised), { discard: true }).pipe(
        Effect.andThen(raiseHooks),
      )
    return { names, hooks, raise } satisfies Active
  })

const appliesTo = (hooks: Plugin.Hooks, tool: string): boolean =>
  hooks.tools === undefined || hooks.tools.some((pattern) => Rule.matches(pattern, tool))

/** Calls `hook` as the settlement would: a throw or an answer that is not an Effect is a defect. */
const delegate = <A, B, E>(hook: ((value: A) => Effect.Effect<B, E>) | undefined, value: A) =>
  Effect.suspend(() => {
    if (hook === undefined) return Effect.void
    const effect = hook(value)
    return Effect.isEffect(effect) ? effect : Effect.die(new TypeError(`answered ${typeof effect}, not an Effect`))
  })

/**
 * Holds the place of a plugin's call hooks while it is installed again (the old ones go with its Scope first): a
 * call meeting them waits for the new installation, then meets its hooks (none if it failed). So a call racing a
 * reload is never let through unhooked. Answers how to let the waiting calls go, with what the installation answered.
 */
export const holdHooks = (table: Hooks.Chain, plugin: string, old: Plugin.Hooks | undefined) => {
  if (old === undefined || (old["tool.execute.before"] === undefined && old["tool.execute.after"] === undefined)) {
    return (_installed: Plugin.Hooks | undefined) => Effect.void
  }
  const installed = Deferred.makeUnsafe<Plugin.Hooks | undefined>()
  const current = (tool: string) =>
    Effect.map(Deferred.await(installed), (hooks) => (hooks !== undefined && appliesTo(hooks, tool) ? hooks : undefined))
  const remove = table.add({
    plugin,
    hooks: {
      ...(old.tools === undefined ? {} : { tools: old.tools }),
      "tool.execute.before": (call) =>
        Effect.flatMap(current(call.tool), (hooks) => delegate(hooks?.["tool.execute.before"], call)),
      "tool.execute.after": (result) =>
        Effect.flatMap(current(result.tool), (hooks) => delegate(hooks?.["tool.execute.after"], result)),
    },
  })
  return (hooks: Plugin.Hooks | undefined) =>
    Effect.sync(() => {
      remove()
      Deferred.doneUnsafe(installed, Effect.succeed(hooks))
    })
}

/**
 * After the plugin at `rank` of `ranked` was installed again, raises every plugin ranked after it over `names`
 * (what the reinstalled one registered) and over its hooks, in rank order.
 */
export const raiseAfter = (ranked: ReadonlyArray<Active | undefined>, rank: number, names: ReadonlyArray<string>) =>
  Effect.forEach(rank < 0 ? [] : ranked.slice(rank + 1), (active) => active?.raise(new Set(names)) ?? Effect.void, { discard: true })

const reasonOf = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.findError(cause)
  return messageOf(error._tag === "Success" ? error.success : Cause.squash(cause))
}

/** Imports a plugin file (checked as tool files are) and answers its default export, which must be a plugin. */
export const load = Effect.fnUntraced(function* (file: string, version: string | undefined, timeoutMs?: number) {
  const exports = yield* Discovery.importModule(file, {
    ...(version === undefined ? {} : { version }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  })
  const plugin = exports.default
  if (!Plugin.isPlugin(plugin)) {
    return yield* failure(file, "does not default-export a plugin; export default Plugin.make({ install }) (from \"@core/tool\")")
  }
  return plugin
})

export interface Interface {
  /** Installs every plugin file, in order; answers the diagnostics. */
  readonly installAll: Effect.Effect<ReadonlyArray<Diagnostic>>
  /** Installs one file's current content again in a fresh Scope (or only closes its Scope when it is gone). */
  readonly reload: (file: string) => Effect.Effect<Reloaded>
  /** The files installed now, with their tool names. */
  readonly installed: () => ReadonlyArray<Installed>
  /** The plugin files that apply now, installed or not. */
  readonly files: () => ReadonlyArray<string>
}

interface Entry {
  readonly scope: Scope.Closeable
  readonly active: Active
}

/** The plugins of the Location `services.directory` (and of `home`), installed in Scopes under `parent`. */
export const make = (
  services: Services,
  home: string | undefined,
  parent: Scope.Scope,
  options: Options = {},
): Interface => {
  const entries = new Map<string, Entry>()

  const installFile = (file: string, version: string | undefined) =>
    Effect.gen(function* () {
      const scope = yield* Scope.fork(parent)
      const active = yield* load(file, version, options.timeoutMs).pipe(
        Effect.flatMap((plugin) => install(file, plugin, services, scope, options.timeoutMs)),
        Effect.onError(() => Scope.close(scope, Exit.void)),
      )
      entries.set(file, { scope, active })
      return active.names
    })

  const installAll = Effect.gen(function* () {
    const diagnostics: Array<Diagnostic> = []
    for (const file of files(services.directory, home)) {
      const result = yield* Effect.result(installFile(file, options.versionOf?.(file)))
      if (result._tag === "Failure") diagnostics.push({ file, message: result.failure.message })
    }
    return diagnostics
  })

  const reload = Effect.fnUntraced(function* (file: string) {
    const previous = entries.get(file)
    entries.delete(file)
    const release = holdHooks(services.hooks, basename(file, ".ts"), previous?.active.hooks)
    return yield* Effect.gen(function* () {
      // A plugin's resources are released before its next installation acquires them again.
      if (previous !== undefined) yield* Scope.close(previous.scope, Exit.void)
      const before = previous?.active.names ?? []
      if (!existsSync(file)) return { file, before, after: [], diagnostic: undefined } satisfies Reloaded
      const result = yield* Effect.result(installFile(file, options.bump?.(file)))
      if (result._tag === "Failure") {
        return { file, before, after: [], diagnostic: { file, message: result.failure.message } } satisfies Reloaded
      }
      // Installed last, it would now win over the plugins ranked after it: raise them back over its names.
      const ranked = files(services.directory, home)
      yield* raiseAfter(ranked.map((candidate) => entries.get(candidate)?.active), ranked.indexOf(file), result.success)
      return { file, before, after: result.success, diagnostic: undefined } satisfies Reloaded
    }).pipe(Effect.ensuring(Effect.suspend(() => release(entries.get(file)?.active.hooks))))
  })

  return {
    installAll,
    reload,
    installed: () => [...entries].map(([file, entry]) => ({ file, names: entry.active.names })),
    files: () => files(services.directory, home),
  }
}

/** A Location's installed plugins: the files, what their first installation reported, their hooks. */
export interface Installation {
  readonly plugins: Interface
  readonly diagnostics: ReadonlyArray<Diagnostic>
  readonly hooks: Hooks.Chain
}

export class Service extends Context.Service<Service, Installation>()("core/Plugins") {}

export interface LayerOptions<R> extends Options {
  readonly directory: string
  /** `$CORE_HOME`, whose plugins install in every Location, first. */
  readonly home: string | undefined
  /** The shell capability, from the host's shell producer. */
  readonly shell?: Effect.Effect<(typeof Plugin.Shell)["Service"], never, R>
}

/**
 * Installs the plugins into the Location's registry for the life of the layer (each in its own Scope), with the
 * Location's permission service and the hook table the settler meets (provided below, see `Hooks.layer`).
 */
export const layer = <R = never>(options: LayerOptions<R>): Layer.Layer<Service, never, Registry.Service | Permission.Service | R> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const registry = yield* Registry.Service
      const permission = yield* Permission.Service
      const hooks = yield* Hooks.Current
      if (hooks === undefined) return yield* Effect.die("Plugins.layer needs the Location's hook table (Hooks.layer)")
      const shell = options.shell === undefined ? undefined : yield* options.shell
      const scope = yield* Scope.Scope
      const services: Services = {
        directory: options.directory,
        tools: registry.tools,
        permission,
        hooks,
        ...(shell === undefined ? {} : { shell }),
      }
      const plugins = make(services, options.home, scope, options)
      const diagnostics = yield* plugins.installAll
      return Service.of({ plugins, diagnostics, hooks })
    }),
  )
