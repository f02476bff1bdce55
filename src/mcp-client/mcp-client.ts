export * as McpClient from "./mcp-client"

// The MCP servers a Location's core.json names, as tools of that Location (DESIGN §13, client side): one
// connection per server, registering into the Location's registry. Servers are connected lazily: `ensure`
// connects those not connected (a host calls it before making a turn's catalog, so listing connects), and a call
// to a server that is down starts it again. A call names its tool, so `ensureFor` connects only the server that
// could offer it, and none for a tool the Location already has (a built-in's call never waits on a server).
// Closing the layer's scope removes every server's tools and ends every server process. It never decides
// permissions: calls settle like any tool's.

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import packageJson from "../../package.json" with { type: "json" }
import type { Config } from "../config/config"
import type { Discovery } from "../location/discovery"
import { Registry } from "../registry/registry"
import { Connection } from "./connection"

export interface Interface {
  /** Connects every server that is not connected (one that failed moments ago waits a little); never fails. */
  readonly ensure: Effect.Effect<void>
  /**
   * Connects the servers that could offer the tool `name` (`<server>_<tool>`) unless the Location already has a tool
   * of that name: a server's tool never takes a name already taken, so none could; never fails.
   */
  readonly ensureFor: (name: string) => Effect.Effect<void>
  /** Each server's state, in configuration order. */
  readonly states: () => ReadonlyArray<Connection.State>
  /** What stops a server or one of its tools from being offered, naming the file that configures it. */
  readonly diagnostics: () => ReadonlyArray<Discovery.Diagnostic>
}

export class Service extends Context.Service<Service, Interface>()("core/McpClient") {}

export interface Options {
  readonly directory: string
  readonly servers: ReadonlyArray<Config.McpEntry>
  /** Connect every server while the layer is built (a one-shot command whose catalog is made at once). */
  readonly eager: boolean
  /** A server registered its tools again on its own (`list_changed`, or a reconnect). */
  readonly onChange?: (server: string) => void
}

/** The diagnostics of one server's state. */
const diagnosticsOf = (state: Connection.State, file: string): ReadonlyArray<Discovery.Diagnostic> => [
  ...(state.status === "failed" && state.error !== undefined
    ? [{ file, message: `MCP server "${state.name}": ${state.error}` }]
    : []),
  ...state.problems.map((problem) => ({ file, message: `MCP server "${state.name}", ${problem}` })),
]

export const layer = (options: Options): Layer.Layer<Service, never, Registry.Service> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const registry = yield* Registry.Service
      const servers = options.servers.map(
        (entry) =>
          new Connection.Server({
            entry,
            directory: options.directory,
            tools: registry.tools,
            taken: (name) => registry.capture().resolve(name)._tag === "Found",
            onChange: () => options.onChange?.(entry.name),
            version: packageJson.version,
          }),
      )
      yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all(servers.map((server) => server.close()))))
      // Met on every call's capture: without a server to connect it stays synchronous (no promise to wait for).
      const connecting = Effect.promise(() => Promise.all(servers.map((server) => server.ensure()))).pipe(Effect.asVoid)
      const ensure = Effect.suspend(() => (servers.every((server) => server.ensured()) ? Effect.void : connecting))
      if (options.eager) yield* ensure
      const ensureFor = (name: string) =>
        Effect.suspend(() => {
          if (registry.capture().resolve(name)._tag === "Found") return Effect.void
          const wanted = servers.filter((server) => name.startsWith(`${server.name}_`) && !server.ensured())
          return wanted.length === 0
            ? Effect.void
            : Effect.promise(() => Promise.all(wanted.map((server) => server.ensure()))).pipe(Effect.asVoid)
        })
      return Service.of({
        ensure,
        ensureFor,
        states: () => servers.map((server) => server.state()),
        diagnostics: () =>
          servers.flatMap((server, index) => diagnosticsOf(server.state(), options.servers[index]!.file)),
      })
    }),
  )
