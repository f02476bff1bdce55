export * as Served from "./served"

// One Location as the sidecar serves it: its settling services, its turns, its event bus and its hot reload.
// Services come in generations: core.json changing builds a new generation (its permission rules are fixed at
// construction) and retires the old one, which closes once its running calls are done; its turns are dropped, so
// a host materializes again. A changed tool file is loaded again inside the current generation, so turns that
// advertised it see it as stale. An invalid core.json or tool file is reported, and the last good one stays;
// whatever a file holds, a reload never ends the watch.

import { join } from "node:path"
import { Terminal } from "../contract/terminal"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import { Skill } from "../builtin/skill"
import { Config } from "../config/config"
import { CallKey } from "../contract/call-key"
import { Host } from "./host"
import { Discovery } from "../location/discovery"
import { Skills } from "../location/skills"
import type { ManagedOutputs } from "../output/managed-outputs"
import { Permission } from "../permission/permission"
import { Provider } from "../provider/provider"
import { Plugins } from "../plugin/plugins"
import { Hooks } from "../settlement/hooks"
import type { Rule } from "../permission/rule"
import { Registry } from "../registry/registry"
import { McpClient } from "../mcp-client/mcp-client"
import { Settler } from "../settlement/settler"
import type { Approvals } from "../store/approvals"
import type { Store } from "../store/store"
import { Activity } from "./activity"
import { Todos } from "../store/todos"
import { Events } from "./events"
import { HostTools } from "./host-tools"
import { ToolFiles } from "./tool-files"
import { Turns } from "./turns"
import { Watch } from "./watch"

/**
 * The services every Location shares with the others: one store (and its todo lists), one outputs directory, one
 * application placement.
 */
export type Shared = Store.Service | Todos.Service | Approvals.Service | ManagedOutputs.Service | Registry.Application

export class UnknownAgent extends Schema.TaggedError<UnknownAgent>()("Served.UnknownAgent", {
  agent: Schema.String,
  known: Schema.Array(Schema.String),
  message: Schema.String,
}) {}

/** One generation of a Location's services. */
export interface Generation {
  readonly serial: number
  readonly settler: Settler.Interface
  readonly permission: Permission.Interface
  readonly turns: Turns.Cache<Turn>
  readonly files: ToolFiles.Interface
  /** Its MCP servers, connected before a turn's catalog is made. */
  readonly remote: McpClient.Interface
  /** Its plugins, installed after the built-ins and before the tool files. */
  readonly plugins: Plugins.Interface
  /** Its plugins' hooks, in installation order (what `core check` lists for a tool). */
  readonly hooks: Hooks.Chain
  /** Its skills (the `skill` tool, MCP prompts). */
  readonly skills: Skill.Interface
  /** Counts a call running in this generation until the returned effect runs. */
  readonly enter: Effect.Effect<Effect.Effect<void>>
}

export interface Turn {
  readonly id: string
  readonly agent: string
  readonly materialization: Settler.Materialization
  readonly generation: Generation
  /** The definitions as the provider the turn was prepared for takes them; undefined for core's own shape. */
  readonly prepared: Provider.Prepared | undefined
}

/** What a captured turn is for: a listing (every MCP server connected), one call, or neither. */
export interface CaptureOptions {
  readonly call?: string
  readonly connect?: false
}

export interface SubscribeOptions {
  /**
   * Whether the subscriber reads the calls' events (`call.*`, default true): they are published only while a
   * subscriber does, and then reach every subscriber.
   */
  readonly calls?: boolean
}

export interface Interface {
  readonly directory: string
  /** The Location's events from now on, for the life of the Scope. */
  readonly subscribe: (options?: SubscribeOptions) => Effect.Effect<PubSub.Subscription<Events.Server>, never, Scope.Scope>
  /** Publishes `event` to the subscribers (nothing, and nothing kept, while none would read it). */
  readonly publish: (event: Events.Server) => Effect.Effect<void>
  /** Whether a subscriber reads the calls' events now. */
  readonly listened: () => boolean
  /**
   * Tells `sink` at once of each ask (`permission.asked`) and delegated host call (`host_call`) of the call `ids` as
   * it is published, listened to on the bus or not, until the answered function is called.
   */
  readonly watchAsks: (ids: CallKey.Ids, sink: (event: Events.Server) => void) => () => void
  /** Captures the catalog for `agent` as a new turn, prepared for `provider` when one is named. */
  readonly materialize: (
    agent: string,
    provider?: Provider.Name,
  ) => Effect.Effect<Turn, UnknownAgent | Provider.CompatibilityError>
  /**
   * Captures the catalog for `agent` as a turn that is not kept (no id finds it again): for hosts that settle each
   * call against the catalog current at the call (MCP), so they never crowd out the turns other hosts keep. MCP
   * servers are connected for a listing; with `call`, the turn is for calling that tool alone and only the server
   * that could offer it is connected; with `connect: false`, none (checking the agent, say).
   */
  readonly capture: (agent: string, options?: CaptureOptions) => Effect.Effect<Turn, UnknownAgent>
  /** A turn of the current generation, unless it expired. */
  readonly turn: (id: string) => Turn | undefined
  /** Pending asks of every live generation, with ids this Location answers by. */
  readonly pending: Effect.Effect<ReadonlyArray<Events.PermissionRequest>>
  readonly reply: (id: string, reply: Permission.Reply) => Effect.Effect<void, Permission.UnknownRequest>
  /** Loads changed tool files again (or core.json, building a new generation). */
  readonly reload: (changes: Watch.Changes) => Effect.Effect<void>
  /** Diagnostics of the first load. */
  readonly diagnostics: ReadonlyArray<Discovery.Diagnostic>
  /** Whether it (or the application's tools) reported a diagnostic since it was made, even one fixed since. */
  readonly warned: () => boolean
  /** The tools the host registered and performs itself, and their calls waiting for an answer. */
  readonly hostTools: HostTools.Interface
  /** How many calls are running in it (in every live generation). */
  readonly running: () => number
  /** The skills of the current generation, with their instructions (MCP prompts). */
  readonly skills: () => Skill.Interface
  /** Whether a rule of `agent` denies the skill `name` (such a skill is not offered as a prompt either). */
  readonly skillDenied: (agent: string, name: string) => boolean
  /** A session's todo list in this Location (empty when it has none). */
  readonly todos: (sessionID: string) => Effect.Effect<ReadonlyArray<Todos.Item>, Store.StoreError>
}

export interface Options {
  readonly directory: string
  /** `$CORE_HOME`, whose core.json applies under the Location's own. */
  readonly home: string
  readonly config: Config.Resolved
  readonly outputsDirectory: string
  /** Whether to watch the directory for changes. */
  readonly watch: boolean
  /** Writes a line for the operator (stderr). */
  readonly log: (line: string) => void
  /** Where asks and replies are told, at their level (none when absent). */
  readonly activity?: Activity.Log
  /** Every Location the host serves now (real directories), this one among them. */
  readonly locations?: () => ReadonlyArray<string>
  /** Whether the application's tools ($CORE_HOME) reported a diagnostic at the host's start. */
  readonly applicationWarned?: () => boolean
}

/** The pending ask as a host sees it; its id names the generation that asked, so a reply finds it. */
const publicRequest = (serial: number, request: Permission.Request): Events.PermissionRequest => ({
  id: `${request.id}.${serial}`,
  sessionID: request.sessionID,
  toolCallID: request.source.callID,
  action: request.action,
  resources: request.resources,
  save: request.save,
  ...(request.protected === undefined ? {} : { protected: request.protected }),
})

/**
 * One generation's services: the built-ins, then the plugins, over the Location's registry, wired as every host
 * wires a Location (a new generation installs its plugins again: their permission service is the new one), and its
 * MCP servers (connected when a turn first needs them).
 */
const generationLayer = (
  options: Options,
  config: Config.Resolved,
  versions: ToolFiles.Versions,
  onChange: (server: string) => void,
) =>
  Host.servicesLayer(
    {
      directory: options.directory,
      config,
      outputsDirectory: options.outputsDirectory,
      ...(options.locations === undefined ? {} : { locations: options.locations }),
    },
    Host.remoteLayer(options.directory, config, false, onChange).pipe(
      Layer.provideMerge(
        Host.extensionsLayer(options.directory, options.home, config, {
          versionOf: (file) => versions.get(file),
          bump: (file) => versions.bump(file),
        }).pipe(Layer.provideMerge(Registry.layer)),
      ),
    ),
  )

/** The subscribers of every event, and of the calls' events. */
interface Listeners {
  all: number
  calls: number
}

const isCallEvent = (event: Events.Server): boolean => event.event.startsWith("call.")

/**
 * A Location's event bus. An event none of the subscribers would read is not published: most hosts only wait for
 * their calls' settlements, and a bus with no subscriber keeps nothing anyway.
 */
const bus = Effect.map(Events.bus<Events.Server>(), (events) => {
  const listeners: Listeners = { all: 0, calls: 0 }
  /** The sinks of each call's asks, by its ids (watchAsks). */
  const watchers = new Map<string, Set<(event: Events.Server) => void>>()
  const watchAsks = (ids: CallKey.Ids, sink: (event: Events.Server) => void) => {
    const key = CallKey.of("", ids)
    let sinks = watchers.get(key)
    if (sinks === undefined) watchers.set(key, (sinks = new Set()))
    sinks.add(sink)
    return () => {
      sinks.delete(sink)
      if (sinks.size === 0 && watchers.get(key) === sinks) watchers.delete(key)
    }
  }
  const tell = (event: Events.Server) => {
    if (watchers.size === 0 || (event.event !== "permission.asked" && event.event !== "host_call")) return
    const sinks = watchers.get(CallKey.of("", event.data))
    if (sinks !== undefined) for (const sink of [...sinks]) sink(event)
  }
  const subscribe = (options: SubscribeOptions = {}) => {
    const calls = options.calls !== false
    const count = (by: number) =>
      Effect.sync(() => {
        listeners.all += by
        if (calls) listeners.calls += by
      })
    // Counted before it subscribes and after it unsubscribes.
    return Effect.andThen(Effect.acquireRelease(count(1), () => count(-1)), PubSub.subscribe(events))
  }
  const publish = (event: Events.Server): Effect.Effect<void> => {
    const published =
      (isCallEvent(event) ? listeners.calls : listeners.all) === 0 ? Effect.void : Effect.asVoid(PubSub.publish(events, event))
    return watchers.size === 0 ? published : Effect.andThen(Effect.sync(() => tell(event)), published)
  }
  return { subscribe, publish, listened: () => listeners.calls > 0, watchAsks }
})

/** The shared services, with todo lists written through them announced (`todo.updated`): the built-ins write so. */
const announcingTodos = (shared: Context.Context<Shared>, publish: (event: Events.Server) => Effect.Effect<void>) => {
  const todos = Context.get(shared, Todos.Service)
  return Context.add(shared, Todos.Service, Todos.Service.of({
    read: todos.read,
    write: (key, items) =>
      Effect.tap(todos.write(key, items), () => publish({ event: "todo.updated", data: { sessionID: key.sessionID, todos: items } })),
  }))
}

/**
 * Announces the permission asks and replies of `generation` (as the host sees them, its serial in their ids) for the
 * life of its scope; subscribed before it returns, so no ask of a tool goes unannounced.
 */
const announceAsks = (
  options: Options,
  generation: Generation & { readonly scope: Scope.Scope },
  publish: (event: Events.Server) => Effect.Effect<void>,
) =>
  Effect.gen(function* () {
    const asks = yield* generation.permission.subscribe.pipe(Scope.provide(generation.scope))
    yield* Effect.forkIn(
      Effect.forever(
        Effect.flatMap(PubSub.take(asks), (event) => {
          if (event.type === "asked") {
            const data = publicRequest(generation.serial, event.request)
            Activity.asked(options.activity, options.directory, data)
            return publish({ event: "permission.asked", data })
          }
          const data = { id: `${event.id}.${generation.serial}`, sessionID: event.sessionID, reply: event.reply }
          Activity.replied(options.activity, options.directory, data)
          return publish({ event: "permission.replied", data })
        }),
      ),
      generation.scope,
    )
  })

/** Serves the Location of `options` for the life of the Scope. */
export const make = Effect.fnUntraced(function* (options: Options) {
  const { directory } = options
  const scope = yield* Scope.Scope
  const shared = yield* Effect.context<Shared>()
  const { subscribe, publish: announce, listened, watchAsks } = yield* bus
  // A Location that reported a load problem says so in its turns (`warnings`), listened to or not.
  let warned = false
  const publish = (event: Events.Server) =>
    event.event === "diagnostic"
      ? Effect.suspend(() => {
          warned = true
          return announce(event)
        })
      : announce(event)
  const todos = Context.get(shared, Todos.Service)
  const announcing = announcingTodos(shared, publish)
  const versions = new ToolFiles.Versions()
  const reloading = yield* Semaphore.make(1)
  const hostTools = HostTools.make({ publish: (call) => publish({ event: "host_call", data: call }) })
  let serial = 0
  /** The current generation and the retired ones still running calls. */
  const live = new Set<Live>()

  interface Live extends Generation {
    readonly scope: Scope.Closeable
    active: number
    retired: boolean
  }

  const closeIfDone = (generation: Live) =>
    Effect.suspend(() => {
      if (!generation.retired || generation.active > 0 || !live.delete(generation)) return Effect.void
      return Scope.close(generation.scope, Exit.void)
    })

  const build = Effect.fnUntraced(function* (config: Config.Resolved) {
    const generationScope = yield* Scope.fork(scope)
    return yield* Effect.gen(function* () {
      // A server that changed its tools on its own: turns made before may now be stale.
      const mcpChanged = (server: string) => {
        const file = config.mcp?.find((entry) => entry.name === server)?.file ?? join(directory, Config.FILE_NAME)
        Effect.runFork(publish({ event: "tools.changed", data: { reason: "tools", files: [file] } }))
      }
      const context = yield* Layer.buildWithScope(
        generationLayer(options, config, versions, mcpChanged).pipe(Layer.provide(Layer.succeedContext(announcing))),
        generationScope,
      )
      const permission = Context.get(context, Permission.Service)
      const registry = Context.get(context, Registry.Service)
      const installation = Context.get(context, Plugins.Service)
      const generation: Live = {
        serial: ++serial,
        settler: Context.get(context, Settler.Service),
        permission,
        turns: new Turns.Cache<Turn>(),
        files: ToolFiles.make(directory, registry.tools, generationScope, versions),
        remote: Context.get(context, McpClient.Service),
        plugins: installation.plugins,
        hooks: installation.hooks,
        skills: Context.get(context, Skill.Service),
        scope: generationScope,
        active: 0,
        retired: false,
        enter: Effect.sync(() => {
          generation.active++
          return Effect.suspend(() => {
            generation.active--
            return closeIfDone(generation)
          })
        }),
      }
      yield* announceAsks(options, generation, publish)
      const diagnostics = [...installation.diagnostics, ...generation.skills.diagnostics(), ...(yield* generation.files.loadAll)]
      // The host's tools come last, in names nothing else of the Location holds.
      const left = yield* hostTools.attach({
        tools: registry.tools,
        scope: generationScope,
        find: (name) => {
          const resolved = registry.capture().resolve(name)
          return resolved._tag === "Found" ? resolved.tool : undefined
        },
      })
      for (const name of left) {
        diagnostics.push({
          file: join(directory, Config.FILE_NAME),
          message: `The host tool "${name}" is not offered: the Location now has a tool of that name`,
        })
      }
      return { generation, diagnostics }
    }).pipe(Effect.onError(() => Scope.close(generationScope, Exit.void)))
  })

  const report = (diagnostics: ReadonlyArray<Discovery.Diagnostic>) =>
    Effect.forEach(diagnostics, (diagnostic) => {
      options.log(Terminal.warning(`${diagnostic.file}: ${diagnostic.message}`))
      return publish({ event: "diagnostic", data: diagnostic })
    })

  const first = yield* build(options.config)
  let current: Live = first.generation
  live.add(current)
  yield* report(first.diagnostics)

  /** What each generation's MCP servers last reported, so a turn reports only what changed. */
  const remoteReported = new WeakMap<Live, string>()
  const reportRemote = (generation: Live) =>
    Effect.suspend(() => {
      const diagnostics = generation.remote.diagnostics()
      const key = JSON.stringify(diagnostics)
      if (remoteReported.get(generation) === key) return Effect.void
      remoteReported.set(generation, key)
      return report(diagnostics)
    })

  /** Rules per agent, kept per generation so the registry's catalog cache serves repeated turns. */
  const rulesets = new WeakMap<Live, Map<string, Rule.Ruleset>>()
  const rulesOf = (generation: Live, agent: string): Rule.Ruleset => {
    let byAgent = rulesets.get(generation)
    if (byAgent === undefined) rulesets.set(generation, (byAgent = new Map()))
    let rules = byAgent.get(agent)
    if (rules === undefined) byAgent.set(agent, (rules = generation.permission.rules(agent)))
    return rules
  }

  // Without a generator: met on every call of a host that captures per call (MCP), where a generator's optimized
  // code is dropped and made again over a long run (./calls says more).
  const capture = (agent: string, options: CaptureOptions = {}): Effect.Effect<Turn, UnknownAgent> =>
    Effect.suspend(() => {
      const generation = current
      if (!generation.permission.isAgent(agent)) {
        return Effect.fail(
          new UnknownAgent({
            agent,
            known: generation.permission.agents,
            message: `Unknown agent "${agent}"; known agents: ${generation.permission.agents.join(", ")}`,
          }),
        )
      }
      const turn = Effect.map(
        generation.settler.materialize(rulesOf(generation, agent)),
        (materialization): Turn => ({ id: `turn_${crypto.randomUUID().replaceAll("-", "")}`, agent, materialization, generation, prepared: undefined }),
      )
      const reported = Effect.andThen(reportRemote(generation), turn)
      if (options.connect === false) return reported
      return Effect.andThen(options.call === undefined ? generation.remote.ensure : generation.remote.ensureFor(options.call), reported)
    })

  const materialize = (agent: string, provider?: Provider.Name) =>
    Effect.flatMap(capture(agent), (turn) =>
      Effect.map(
        provider === undefined
          ? Effect.succeed(undefined)
          : Effect.fromResult(Provider.prepare(turn.materialization.definitions, provider)),
        (prepared) => turn.generation.turns.add((id): Turn => ({ ...turn, id, prepared })),
      ),
    )

  /**
   * Installs changed plugins again, then loads changed tool files again, and those defining a name a reinstalled
   * plugin registers: a tool file's registration comes after every plugin's, so it keeps winning.
   */
  const reloadFiles = (changed: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const generation = current
      const plugins = yield* Effect.forEach(changed.filter(Plugins.isPluginFile), (file) => generation.plugins.reload(file))
      const files = new Set(changed.filter((file) => !Plugins.isPluginFile(file)))
      const reinstalled = new Set(plugins.flatMap((result) => result.after))
      if (reinstalled.size > 0) {
        for (const file of generation.files.known()) {
          if (generation.files.namesOf(file)?.some((name) => reinstalled.has(name))) files.add(file)
        }
      }
      const results = [...plugins, ...(yield* Effect.forEach([...files].sort(), (file) => generation.files.reload(file)))]
      yield* report(results.flatMap((result) => (result.diagnostic === undefined ? [] : [result.diagnostic])))
      const touched = results.filter(ToolFiles.changed)
      if (touched.length > 0) {
        yield* publish({ event: "tools.changed", data: { reason: "tools", files: touched.map((result) => result.file) } })
      }
    })

  /**
   * Finds the skills again; when what `skill`'s description lists changed, it is registered again, and so are the
   * tool files that define `skill` (a Location's own keeps winning).
   */
  const reloadSkills = Effect.gen(function* () {
    const generation = current
    const result = yield* generation.skills.reload
    yield* report(result.diagnostics)
    if (!result.changed) return
    const own = generation.files.known().filter((file) => generation.files.namesOf(file)?.includes("skill"))
    yield* Effect.forEach(own, (file) => generation.files.reload(file))
    yield* publish({ event: "tools.changed", data: { reason: "tools", files: result.files } })
  })

  /** Builds a new generation from core.json as it is now; `files` are tool files that changed meanwhile. */
  const reloadConfig = (files: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const loaded = yield* Effect.result(Host.loadConfig(directory, options.home))
      if (loaded._tag === "Failure") {
        const error = loaded.failure
        options.log(Terminal.warning(`${error.message} (keeping the last good configuration)`))
        yield* publish({
          event: "diagnostic",
          data: { file: error.file, message: `${error.message} (the last good configuration stays in effect)` },
        })
        return yield* reloadFiles(files)
      }
      // The new generation imports the changed files' current content, the others' modules already loaded.
      for (const file of files) versions.bump(file)
      const next = yield* build(loaded.success)
      const previous = current
      current = next.generation
      live.add(current)
      previous.retired = true
      yield* closeIfDone(previous)
      yield* report(next.diagnostics)
      const changed = [...loaded.success.files, ...files]
      return yield* publish({ event: "tools.changed", data: { reason: "config", files: changed } })
    })

  /**
   * A reload that failed in a way nothing above foresaw: reported like an invalid file, so the watch goes on and
   * the last good state stays. The one boundary where reloading's unexpected failures are caught.
   */
  const reloadFailed = (changes: Watch.Changes, cause: Cause.Cause<unknown>) => {
    const file = changes.config ? join(directory, Config.FILE_NAME) : ([...changes.files][0] ?? join(directory, "tools"))
    options.log(`core: warning: reloading ${file} failed unexpectedly (the last good state stays):\n${Cause.pretty(cause)}`)
    const reason = Cause.squash(cause)
    const detail = reason instanceof Error ? reason.message : String(reason)
    return publish({
      event: "diagnostic",
      data: { file, message: `Reloading failed unexpectedly: ${detail} (the last good state stays in effect)` },
    })
  }

  const reload = (changes: Watch.Changes) =>
    reloading
      .withPermits(1)(
        Effect.gen(function* () {
          const files = new Set(changes.files)
          if (changes.rescan) {
            for (const file of [...current.files.known(), ...Discovery.toolFiles(directory)]) files.add(file)
            for (const file of [...current.plugins.installed().map((entry) => entry.file), ...current.plugins.files()]) files.add(file)
          }
          if (changes.config) return yield* reloadConfig([...files].sort())
          if (files.size > 0) yield* reloadFiles([...files].sort())
          if (changes.skills) yield* reloadSkills
        }),
      )
      .pipe(
        // Interrupted only, the cause holds no failure to pass on.
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause as Cause.Cause<never>) : reloadFailed(changes, cause),
        ),
      )

  if (options.watch) yield* Watch.watch(directory, reload, Skills.LOCATION_ROOTS)

  const pending = Effect.gen(function* () {
    const requests: Array<Events.PermissionRequest> = []
    for (const generation of live) {
      for (const request of yield* generation.permission.pending) requests.push(publicRequest(generation.serial, request))
    }
    return requests
  })

  const reply = (id: string, answer: Permission.Reply) =>
    Effect.suspend(() => {
      const dot = id.lastIndexOf(".")
      // The serial as published: digits only (Number() also read "0x3", "3e0" and " 3" as 3, aliases of one ask).
      const serial = id.slice(dot + 1)
      const serialOf = /^(0|[1-9]\d{0,15})$/.test(serial) ? Number(serial) : undefined
      const generation = dot === -1 || serialOf === undefined ? undefined : [...live].find((candidate) => candidate.serial === serialOf)
      const unknown = () => new Permission.UnknownRequest({ id, message: `No pending permission request ${id} (it may have been answered already)` })
      if (generation === undefined) return Effect.fail(unknown())
      // A miss names the id as it was sent, not the generation's own part of it.
      return Effect.mapError(generation.permission.reply(id.slice(0, dot), answer), unknown)
    })

  return {
    directory,
    subscribe,
    publish,
    listened,
    watchAsks,
    materialize,
    capture,
    turn: (id: string) => current.turns.get(id),
    pending,
    reply,
    reload,
    hostTools,
    diagnostics: first.diagnostics,
    warned: () => warned || options.applicationWarned?.() === true,
    running: () => {
      let count = 0
      for (const generation of live) count += generation.active
      return count
    },
    todos: (sessionID: string) => todos.read({ location: directory, sessionID }),
    skills: () => current.skills,
    skillDenied: (agent: string, name: string) => current.permission.denies(agent, "skill")?.(name) === true,
  } satisfies Interface
})
