// A Location with its own $CORE_HOME and $CORE_DATA_DIR, whose built-ins settle calls with the durable approvals
// store in that data dir, under `"*": "allow"` (but `rm`), and whose asks are answered by a person (a scripted reply) or, as
// `core exec` does without a terminal, by core's own answerer (with or without --yes).

import { Database } from "bun:sqlite"
import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Effect, Layer, PubSub } from "effect"
import { Builtins } from "../../src/builtin/builtins"
import { ReadTracking } from "../../src/builtin/read-tracking"
import { Kernel } from "../../src/host/kernel"
import { Reads } from "../../src/store/reads"
import { Asks } from "../../src/cli/asks"
import { Location } from "../../src/location/location"
import type { Agent } from "../../src/permission/agent"
import type { Config } from "../../src/config/config"
import { Permission } from "../../src/permission/permission"
import type { Settlement } from "../../src/contract/settlement"
import { Settler } from "../../src/settlement/settler"
import { Shell } from "../../src/shell/shell"
import { Approvals } from "../../src/store/approvals"
import { SqliteStore } from "../../src/store/sqlite-store"
import { Store } from "../../src/store/store"
import { tempDir } from "../support/temp"

/** Who answers asks: a person replying once or always, or core's answerer without a terminal (with --yes or not). */
export type Answerer = "once" | "always" | "no-terminal" | "yes"

export interface Outcome {
  readonly settlement: Settlement.Info
  readonly asks: ReadonlyArray<Permission.Request>
}

/** What the Location's core.json says: everything allowed, but `rm`. */
export const RULES: ReadonlyArray<Agent.SourcedRule> = [
  { action: "*", resource: "*", effect: "allow", source: { file: "core.json", path: "permission.*" } },
  { action: "bash", resource: "rm *", effect: "deny", source: { file: "core.json", path: "permission.bash" } },
]

/** `shell`: the Location's shell settings (`{ sandbox: "off" }` checks what core's own checks hold without the OS sandbox). */
export const world = (files: Record<string, string> = {}, shell: Config.Shell = {}) => {
  const root = realpathSync(tempDir("core-protected-"))
  const directory = join(root, "project")
  const home = join(root, "home")
  const dataDir = join(root, "data")
  for (const dir of [directory, home, join(dataDir, "outputs")]) mkdirSync(dir, { recursive: true })
  const write = (base: string, entries: Record<string, string>) => {
    for (const [path, content] of Object.entries(entries)) {
      mkdirSync(dirname(join(base, path)), { recursive: true })
      writeFileSync(join(base, path), content)
    }
  }
  write(directory, { "core.json": '{ "permission": { "*": "allow", "bash": { "rm *": "deny" } } }', ...files })
  write(home, { "core.json": "{}" })
  const store = join(dataDir, "core.db")

  const permissionLayer = Permission.layer({
    project: directory,
    configured: { rules: RULES, agents: new Map() },
    readableRoots: [join(dataDir, "outputs")],
    home,
    dataDir,
  }).pipe(Layer.provideMerge(SqliteStore.approvalsLayer(store)), Layer.orDie)

  /** Saves "always" approvals through the store, as a person's earlier "always" would have. */
  const approve = (action: string, patterns: ReadonlyArray<string>) =>
    Effect.runPromise(
      Effect.gen(function* () {
        yield* (yield* Approvals.Service).save(directory, action, patterns)
      }).pipe(Effect.provide(SqliteStore.approvalsLayer(store))),
    )

  /** Inserts an approval straight into the SQLite file, as any local process could. */
  const insert = (action: string, pattern: string) => {
    // Through the layer first, so the schema exists.
    return approve("unrelated", ["x"]).then(() => {
      const db = new Database(store)
      db.run("INSERT INTO approvals (project, action, pattern, saved_at) VALUES (?, ?, ?, ?)", [directory, action, pattern, 1])
      db.close()
    })
  }

  const settle = (name: string, input: unknown, answerer: Answerer): Promise<Outcome> => {
    const kernel = Kernel.layer({
      store: Store.layerMemory,
      outputsDirectory: join(dataDir, "outputs"),
      permission: permissionLayer,
    })
    const builtins = Builtins.layer.pipe(
      Layer.provide(Shell.layer(shell)),
      Layer.provide(Reads.layerMemory),
      Layer.provide(Layer.succeed(ReadTracking.Required, false)),
    )
    const layer = Location.layer(directory, builtins).pipe(Layer.provideMerge(kernel))
    const program = Effect.gen(function* () {
      const permission = yield* Permission.Service
      const asks: Array<Permission.Request> = []
      const events = yield* permission.subscribe
      // Recorded before anyone answers.
      yield* Effect.forkScoped(
        Effect.forever(
          Effect.gen(function* () {
            const event = yield* PubSub.take(events)
            if (event.type !== "asked") return
            asks.push(event.request)
            if (answerer === "once" || answerer === "always") {
              yield* permission.reply(event.request.id, { reply: answerer }).pipe(Effect.ignore)
            }
          }),
        ),
      )
      if (answerer === "no-terminal" || answerer === "yes") {
        yield* Asks.answer(permission, { yes: answerer === "yes", interactive: false })
      }
      const turn = yield* (yield* Settler.Service).materialize()
      const { settlement } = yield* turn.settle({
        sessionID: "ses_protected",
        agent: "build",
        assistantMessageID: "msg",
        toolCallID: `call_${crypto.randomUUID()}`,
        name,
        input,
      })
      return { settlement, asks } satisfies Outcome
    })
    return Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(layer)) as Effect.Effect<Outcome, unknown>)
  }

  return { directory, home, dataDir, store, approve, insert, settle }
}

export const messageOf = (settlement: Settlement.Info): string =>
  settlement.error?.message ?? settlement.content.map((part) => (part.type === "text" ? part.text : "")).join("\n")
