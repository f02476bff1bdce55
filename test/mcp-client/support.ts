// A Location with MCP servers configured, wired as `core exec` wires one (the host floor's settling layer), with
// a settle helper that answers asks as the test says.

import { mkdirSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import { Host } from "../../src/host/host"
import { Permission } from "../../src/permission/permission"
import { Registry } from "../../src/registry/registry"
import { McpClient } from "../../src/mcp-client/mcp-client"
import type { Settlement } from "../../src/contract/settlement"
import { Settler } from "../../src/settlement/settler"
import { tempDir } from "../support/temp"

export const BIN = join(import.meta.dir, "../../node_modules/.bin")
export const EVERYTHING = join(BIN, "mcp-server-everything")
export const FILESYSTEM = join(BIN, "mcp-server-filesystem")
export const FIXTURE = join(import.meta.dir, "fixture-server.ts")
export const BUN = process.execPath

/**
 * A fresh Location whose core.json holds `config` (but its `files`: other files of the Location, by relative
 * path), and the environment a host would read.
 */
export interface LocationConfig {
  readonly files?: Readonly<Record<string, string>>
  readonly [key: string]: unknown
}

export const location = (config: LocationConfig | ((directory: string) => LocationConfig)) => {
  const directory = tempDir("core-remote-")
  const data = tempDir("core-remote-data-")
  mkdirSync(join(data, "home"))
  const { files, ...content } = typeof config === "function" ? config(directory) : config
  writeFileSync(join(directory, "core.json"), JSON.stringify(content, null, 2))
  for (const [path, text] of Object.entries(files ?? {})) {
    mkdirSync(dirname(join(directory, path)), { recursive: true })
    writeFileSync(join(directory, path), text)
  }
  return { directory, environment: { dataDir: data, home: join(data, "home") } satisfies Host.Environment }
}

export type Services = Settler.Service | Permission.Service | Registry.Service | McpClient.Service | Scope.Scope

/** Runs `program` with the Location's settling services, as `core exec` does (servers connect at once). */
export const withLocation = <A, E>(config: LocationConfig | ((directory: string) => LocationConfig), program: (directory: string) => Effect.Effect<A, E, Services>) => {
  const { directory, environment } = location(config)
  return Effect.runPromise(
    Effect.gen(function* () {
      const prepared = yield* Host.prepare(environment, directory)
      // As `core exec NAME` of a server's tool would: the servers connected before the catalog is made.
      const connected = Effect.gen(function* () {
        yield* (yield* McpClient.Service).ensure
        return yield* program(prepared.directory)
      })
      return yield* connected.pipe(Effect.provide(Host.settlingLayer(environment, prepared)))
    }).pipe(Effect.scoped) as Effect.Effect<A, unknown, never>,
  )
}

let calls = 0

/** A call through `turn`; an ask is answered with `reply`, or left unanswered (and the call cancelled) when none. */
export const settle = (
  turn: Settler.Materialization,
  name: string,
  input: unknown,
  reply: Permission.Reply | undefined = { reply: "once" },
) =>
  Effect.gen(function* () {
    const permission = yield* Permission.Service
    const events = yield* permission.subscribe
    const call = { sessionID: "ses_remote", agent: "build", assistantMessageID: "msg_1", toolCallID: `call_${++calls}`, name, input }
    const progress: Array<string> = []
    const fiber = yield* Effect.forkChild(
      turn.settle(call, { onProgress: (update) => Effect.sync(() => void progress.push(update.message)) }),
    )
    const asked: Array<Permission.Request> = []
    const answered = Effect.gen(function* () {
      const event = yield* PubSub.take(events)
      if (event.type !== "asked") return
      asked.push(event.request)
      if (reply !== undefined) yield* permission.reply(event.request.id, reply)
    })
    const settled = yield* Effect.raceFirst(
      Fiber.join(fiber).pipe(Effect.map((result) => result.settlement)),
      answered.pipe(Effect.andThen(Fiber.join(fiber)), Effect.map((result) => result.settlement)),
    )
    return { settlement: settled as Settlement.Info, asked, progress }
  })

/** The turn of the default agent, after connecting. */
export const turn = Effect.gen(function* () {
  yield* (yield* McpClient.Service).ensure
  const permission = yield* Permission.Service
  return yield* (yield* Settler.Service).materialize(permission.rules("build"))
})

export const textOf = (settlement: Settlement.Info): string =>
  settlement.content.map((part) => (part.type === "text" ? part.text : `[${part.mime}]`)).join("\n")
