// Settles built-in tools in a real Location for tests: a temp directory (or a given one) holding `files`, the
// Location's permission service with the given rules, its registry with the built-ins registered through
// Builtins.layer, a memory store and managed outputs on disk. Asks are recorded and answered with `reply`
// (declined when none is given), as `core exec` does without a terminal.

import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Effect, Exit, Fiber, Layer, PubSub } from "effect"
import { Builtins } from "../../src/builtin/builtins"
import { Skill } from "../../src/builtin/skill"
import { Explain } from "../../src/builtin/explain"
import { Kernel } from "../../src/host/kernel"
import { Location } from "../../src/location/location"
import { ManagedOutputs } from "../../src/output/managed-outputs"
import type { Config } from "../../src/config/config"
import type { Agent } from "../../src/permission/agent"
import { Permission } from "../../src/permission/permission"
import type { Rule } from "../../src/permission/rule"
import type { Settlement } from "../../src/contract/settlement"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Shell } from "../../src/shell/shell"
import { ReadTracking } from "../../src/builtin/read-tracking"
import { Approvals } from "../../src/store/approvals"
import { Reads } from "../../src/store/reads"
import { Store } from "../../src/store/store"
import { Todos } from "../../src/store/todos"
import type { Tool } from "../../src/tool/tool"
import { tempDir } from "./temp"

export interface Ask {
  readonly action: string
  readonly resources: ReadonlyArray<string>
  readonly save: ReadonlyArray<string>
}

export interface Outcome {
  readonly settlement: Settlement.Info
  readonly asks: ReadonlyArray<Ask>
  readonly progress: ReadonlyArray<Tool.Progress>
  /** The full text of each managed output, by id. */
  readonly outputs: Readonly<Record<string, string>>
}

export interface SettleOptions {
  readonly agent?: string
  /** How asks are answered; declined when absent. */
  readonly reply?: Permission.Reply
  readonly limits?: { readonly maxLines?: number; readonly maxBytes?: number }
  readonly onProgress?: (update: Tool.Progress) => void
  /**
   * Interrupts the call when its first progress update whose message starts with this arrives (as a host cancels
   * it); the outcome is then the call settled again: its record, replayed.
   */
  readonly interruptAt?: string
  /** Interrupts the call as its first permission ask comes, unanswered (as a host cancels a call waiting on a person). */
  readonly interruptOnAsk?: boolean
  /** The call's sessionID (default "ses_builtin"). */
  readonly session?: string
  /** The call's toolCallID (default a fresh one). */
  readonly call?: string
}

export interface Harness {
  /** The Location's real directory. */
  readonly directory: string
  /** The data directory (managed outputs live under `outputs/`). */
  readonly data: string
  /** `$CORE_HOME`. */
  readonly home: string
  /** Writes files relative to the Location. */
  readonly write: (files: Record<string, string | Uint8Array>) => void
  readonly settle: (name: string, input: unknown, options?: SettleOptions) => Promise<Outcome>
  /** The tool registered under `name` in a Location built the same way. */
  readonly tool: (name: string) => Promise<Tool.Any>
  /** What `core check` says about the call (Explain.call), in a Location built the same way; nothing runs. */
  readonly check: (name: string, input: unknown, options?: { readonly agent?: string }) => Promise<Explain.Explanation>
}

export interface HarnessOptions {
  /** An existing directory to use as the Location instead of a fresh one. */
  readonly directory?: string
  readonly files?: Record<string, string | Uint8Array>
  /** Rules after core's defaults (`*` allow, `external_directory` ask), as a core.json would add them. */
  readonly rules?: ReadonlyArray<Rule.Rule>
  /** The `shell` section of a core.json: timeouts and capture limits of the shell producer. */
  readonly shell?: Config.Shell
  /** core.json `files.readBeforeWrite` (default true). */
  readonly readBeforeWrite?: boolean
  /** `$CORE_HOME` (its `skills/`); default a fresh empty directory. */
  readonly home?: string
  /** Where todo lists are kept (default: in memory for the life of the harness). */
  readonly todos?: Todos.Interface
}

export const harness = (options: HarnessOptions = {}): Harness => {
  const directory = realpathSync(options.directory ?? tempDir("core-builtin-"))
  const data = tempDir("core-builtin-data-")
  const write = (files: Record<string, string | Uint8Array>) => {
    for (const [path, content] of Object.entries(files)) {
      const absolute = join(directory, path)
      mkdirSync(dirname(absolute), { recursive: true })
      writeFileSync(absolute, content)
    }
  }
  write(options.files ?? {})
  const rules = (options.rules ?? []).map(
    (rule, index): Agent.SourcedRule => ({ ...rule, source: { file: "test", path: `rules[${index}]` } }),
  )
  const outputsDirectory = join(data, "outputs")
  // `$CORE_HOME`, for its skills.
  const home = options.home ?? tempDir("core-builtin-home-")
  // What sessions read outlives each settle, as the durable store does between calls.
  const reads = Layer.succeed(Reads.Service, Reads.Service.of(Reads.memory()))
  // So do todo lists, unless the test gives its own store of them.
  const todos = Layer.succeed(Todos.Service, options.todos ?? Todos.Service.of(Todos.memory()))

  const layerFor = (settleOptions: SettleOptions) => {
    const permission = Permission.layer({
      project: directory,
      // Protected as core's own, as core protects its home and data directory.
      home,
      dataDir: data,
      configured: { rules, agents: new Map() },
      // As core gives a Location: its own directory of outputs (each session's inside it).
      readableRoots: [ManagedOutputs.locationDirectory(outputsDirectory, directory)],
    }).pipe(Layer.provide(Approvals.layerMemory))
    const kernel = Kernel.layer({
      store: Store.layerMemory,
      outputsDirectory,
      permission,
      ...(settleOptions.limits === undefined ? {} : { limits: settleOptions.limits }),
    })
    const builtins = Skill.layer({ directory, home }).pipe(Layer.provideMerge(Builtins.layer)).pipe(
      // The guards' notes in the test's own data directory, as core keeps them in its own.
      Layer.provide(Shell.layer(options.shell, { guards: join(data, "guards"), keeping: join(data, "undone") })),
      Layer.provide(reads),
      Layer.provide(todos),
      Layer.provide(Layer.succeed(ReadTracking.Required, options.readBeforeWrite ?? true)),
    )
    return Location.layer(directory, builtins).pipe(Layer.provideMerge(kernel))
  }

  const check = (name: string, input: unknown, checkOptions: { readonly agent?: string } = {}) => {
    const program = Effect.gen(function* () {
      const resolution = (yield* Registry.Service).capture().resolve(name)
      if (resolution._tag !== "Found") return yield* Effect.die(`no tool ${name}`)
      return yield* Explain.call(yield* Permission.Service, { name, tool: resolution.tool, input, agent: checkOptions.agent ?? "build" })
    })
    return Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(layerFor({}))) as Effect.Effect<Explain.Explanation, unknown>)
  }

  const tool = (name: string) => {
    const program = Effect.gen(function* () {
      const resolution = (yield* Registry.Service).capture().resolve(name)
      if (resolution._tag !== "Found") return yield* Effect.die(`no tool ${name}`)
      return resolution.tool
    })
    return Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(layerFor({}))) as Effect.Effect<Tool.Any, unknown>)
  }

  const settle = (name: string, input: unknown, settleOptions: SettleOptions = {}): Promise<Outcome> => {
    const layer = layerFor(settleOptions)
    const program = Effect.gen(function* () {
      const service = yield* Permission.Service
      const asks: Array<Ask> = []
      const events = yield* service.subscribe
      yield* Effect.forkScoped(
        Effect.forever(
          Effect.gen(function* () {
            const event = yield* PubSub.take(events)
            if (event.type !== "asked") return
            const { action, resources, save } = event.request
            asks.push({ action, resources, save })
            if (settleOptions.interruptOnAsk === true) return interrupt?.()
            yield* service.reply(event.request.id, settleOptions.reply ?? { reply: "reject" }).pipe(Effect.ignore)
          }),
        ),
      )
      const progress: Array<Tool.Progress> = []
      const turn = yield* (yield* Settler.Service).materialize()
      const call = {
        sessionID: settleOptions.session ?? "ses_builtin",
        agent: settleOptions.agent ?? "build",
        assistantMessageID: "msg_builtin",
        toolCallID: settleOptions.call ?? `call_${crypto.randomUUID()}`,
        name,
        input,
      }
      let interrupt: (() => void) | undefined
      const settling = yield* Effect.forkChild(
        turn.settle(call, {
          onProgress: (update) =>
            Effect.sync(() => {
              progress.push(update)
              settleOptions.onProgress?.(update)
              if (settleOptions.interruptAt !== undefined && update.message.startsWith(settleOptions.interruptAt)) interrupt?.()
            }),
        }),
      )
      interrupt = () => {
        interrupt = undefined
        Effect.runFork(Fiber.interrupt(settling))
      }
      const exit = yield* Fiber.await(settling)
      const { settlement } = Exit.isSuccess(exit) ? exit.value : yield* turn.settle(call)
      const managed = yield* ManagedOutputs.Service
      const outputs: Record<string, string> = {}
      for (const { id } of settlement.outputs) {
        const reference = yield* managed.open(id).pipe(Effect.orDie)
        outputs[id] = yield* Effect.promise(() => reference.content.text())
      }
      return { settlement, asks, progress, outputs } satisfies Outcome
    })
    return Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(layer)) as Effect.Effect<Outcome, unknown>)
  }

  return { directory, data, home, write, settle, check, tool }
}

/** The text of a settlement's content parts, joined. */
export const textOf = (settlement: Settlement.Info): string =>
  settlement.content.map((part) => (part.type === "text" ? part.text : `[file ${part.mime}]`)).join("\n")
