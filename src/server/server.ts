export * as Server from "./server"

// `core serve` on Bun.serve (the platform edge for HTTP): listens, reports the address and token once ready, and
// on `stop` shuts down gracefully: no new connections, running calls cancelled and recorded, event streams ended,
// remaining connections closed, then the Locations and the store closed (by the Scope, in that order).

import { closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Deferred from "effect/Deferred"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import packageJson from "../../package.json" with { type: "json" }
import type { Activity } from "../host/activity"
import type { Host } from "../host/host"
import { Sidecar } from "../host/sidecar"
import { ProcessDirs } from "../shell/process-dirs"
import { Supervised } from "../shell/supervised"
import { Forwarding } from "./forwarding"
import { Guard } from "./guard"
import { Router } from "./router"
import { Respond } from "./respond"
import { Security } from "./security"

export class ListenError extends Schema.TaggedError<ListenError>()("Server.ListenError", {
  host: Schema.String,
  port: Schema.Number,
  message: Schema.String,
}) {}

/** Why the server could not listen, in words that say what to do: Bun's own says only "Failed to listen at HOST". */
const listenError = (options: { readonly host: string; readonly port: number }, cause: unknown): ListenError => {
  const address = Security.authority(options.host, options.port)
  const code = (cause as { readonly code?: unknown } | undefined)?.code
  const reason =
    code === "EADDRINUSE"
      ? "the port is in use by another program (choose another with --port, or --port 0 for a free one)"
      : code === "EADDRNOTAVAIL"
        ? "the address is not one of this machine's (check --host)"
        : code === "EACCES"
          ? "permission denied (ports below 1024 need privileges: choose another with --port)"
          : cause instanceof Error
            ? cause.message
            : String(cause)
  return new ListenError({ host: options.host, port: options.port, message: `cannot listen on ${address}: ${reason}` })
}

/** `$CORE_TOKEN` is a token no client could send (see Security.tokenProblem); core refuses to start with it. */
export class InvalidToken extends Schema.TaggedError<InvalidToken>()("Server.InvalidToken", {
  message: Schema.String,
}) {}

export interface Ready {
  readonly url: string
  readonly token: string
}

export interface Options {
  readonly environment: Host.Environment
  readonly primary: Host.Prepared
  /** Real directories under which `X-Core-Location` may point. */
  readonly roots: ReadonlyArray<string>
  readonly host: string
  readonly port: number
  readonly token: string
  /** Called once listening. */
  readonly onReady: (ready: Ready) => void
  /** Completes when the server should shut down. */
  readonly stop: Effect.Effect<void>
  /** Writes a line for the operator (stderr). */
  readonly log: (line: string) => void
  /** Where each settled call, ask and reply is told (none when absent). */
  readonly activity?: Activity.Log
  /** The read deadline in seconds (default READ_DEADLINE_S). */
  readonly readDeadlineS?: number
  /** Makes what answers `/mcp` on the sidecar, for the life of the server (the CLI gives MCP's streamable HTTP). */
  readonly mcp?: (sidecar: Sidecar.Interface) => Effect.Effect<Router.McpEndpoint, never, Scope.Scope>
  /** The settlement store; the durable one in the data directory unless given (a benchmark's memory store). */
  readonly store?: Sidecar.Options["store"]
}

/** How long answers in flight may take to finish at shutdown before their connections are closed. */
const DRAIN_MS = 2_000
/** How long the guard's connections get at shutdown to pass on what the server sent them. */
const CLOSE_MS = 1_000

/** The read deadline (see Respond.READ_DEADLINE_S). */
export const READ_DEADLINE_S = Respond.READ_DEADLINE_S

/**
 * Below this open-file limit core warns at start: the connections served at once are bounded by the limit (see
 * connectionDescriptors), and this leaves room for thousands of them plus the tools' files.
 */
export const MIN_OPEN_FILES = 8192

/** The open files kept for everything but connections (the store, tool processes' pipes, watched directories). */
const RESERVED_FILES = 2_048

/** The descriptors the connections may hold together under an open-file limit: a reserve is kept for the rest. */
export const connectionDescriptors = (limit: number): number =>
  Math.max(Math.floor(limit / 2), limit - RESERVED_FILES)

/** The longest path of a unix socket (sun_path, less its terminating zero), with a margin. */
const MAX_SOCKET_PATH = 100

/** Whether a held directory is reached as `/proc/self/fd/N` (Linux), a short path however deep the directory lies. */
const HELD_BY_PROC = existsSync("/proc/self/fd")

/**
 * A private (0700) directory for the server's unix socket and its forwarding record (the token that record holds
 * answers every route), `serve-<pid>-<machine><random>` (ProcessDirs), in the data directory: hidden from commands
 * and kept from the tools with the rest of it. The socket is bound and reached through the held directory, so the
 * data directory's depth never matters where that is `/proc/self/fd/N`. Elsewhere a data directory too deep for a
 * socket's path puts it in the temporary one instead (`inData` false), where no record is written: exec forwards
 * only to the records of its data directory. Those a killed core of this machine left there are removed.
 */
const socketDirectory = (dataDir: string): { readonly directory: string; readonly inData: boolean } => {
  const prefix = "serve-"
  const inData = HELD_BY_PROC || join(dataDir, prefix).length + 30 + "/http.sock".length <= MAX_SOCKET_PATH
  return { directory: ProcessDirs.make(inData ? dataDir : tmpdir(), prefix), inData }
}

/**
 * The socket directory `directory` (just made) held open: the socket, the record and every connection the guard
 * passes on reach it through its descriptor (`/proc/self/fd/N`), never through its path again. Someone who may write
 * a folder above the data directory could otherwise point that path at a directory of theirs after it was made, and
 * take the connections (with the tokens they carry) and the forwarding record. It must be this user's alone.
 */
const held = (directory: string): { readonly at: (name: string) => string; readonly close: () => void } => {
  const fd = openSync(directory, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
  const stats = fstatSync(fd)
  if (!stats.isDirectory() || stats.uid !== process.getuid?.() || (stats.mode & 0o077) !== 0) {
    closeSync(fd)
    throw new Error(`${directory} is not the private directory core made for its socket (it was replaced as it was made)`)
  }
  // Elsewhere than Linux (no /proc), by its path.
  const base = HELD_BY_PROC ? `/proc/self/fd/${fd}` : directory
  return { at: (name) => `${base}/${name}`, close: () => closeSync(fd) }
}

/**
 * Bun's own body limit. Bun answers a declared length over it itself, with an empty 413, before the sidecar sees the
 * request; so it is set as high as Bun goes, and the sidecar refuses bodies over its own limit (Respond.MAX_BODY_BYTES)
 * with its error body: by the declared length before reading anything, or while reading a chunked body. Bun reads a
 * body only when it is asked to, so this limit holds no memory.
 */
const BUN_MAX_BODY_BYTES = Number.MAX_SAFE_INTEGER

/** Serves until `stop`, then shuts down gracefully. */
export const run = Effect.fn("Server.run")(function* (options: Options) {
  const problem = Security.tokenProblem(options.token)
  if (problem !== undefined) return yield* new InvalidToken({ message: problem })
  const sidecar = yield* Sidecar.make({
    environment: options.environment,
    primary: options.primary,
    watch: true,
    log: options.log,
    ...(options.activity === undefined ? {} : { activity: options.activity }),
    ...(options.store === undefined ? {} : { store: options.store }),
  })
  // The port is known once listening; no request is handled before the checker is in place (same tick).
  let checkHost: (host: string | undefined) => boolean = () => false
  let guard: Guard.Interface | undefined
  const mcp = options.mcp === undefined ? undefined : yield* options.mcp(sidecar)
  // Requests run in the handler's own fibers: they get the tracer this server runs with, when one keeps spans.
  const tracer = yield* Effect.tracer
  // `core exec` of the same data directory forwards its calls with a token of its own (./forwarding).
  const forwardToken = Security.generateToken()
  const checkToken = Security.tokenChecker(options.token)
  const checkForwardToken = Security.tokenChecker(forwardToken)
  const web = Router.make({
    ...(tracer === Tracer.nativeTracer ? {} : { tracer }),
    ...(mcp === undefined ? {} : { mcp }),
    sidecar,
    version: packageJson.version,
    checkToken: (authorization) => checkToken(authorization) || checkForwardToken(authorization),
    checkHost: (host) => checkHost(host),
    roots: options.roots,
    log: options.log,
    release: (request) => guard?.release(request),
  })
  yield* Effect.addFinalizer(() => Effect.promise(() => web.dispose()))

  // Bun.serve answers on a unix socket in a private directory; the guard (./guard) listens on the address, keeps
  // the read deadline and bounds the connections below the open-file limit.
  yield* Effect.sync(() => mkdirSync(options.environment.dataDir, { recursive: true, mode: 0o700 }))
  const { directory, inData } = yield* Effect.sync(() => socketDirectory(options.environment.dataDir))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(directory, { recursive: true, force: true })))
  const place = yield* Effect.acquireRelease(
    Effect.try({ try: () => held(directory), catch: (cause) => listenError(options, cause) }),
    (place) => Effect.sync(place.close),
  )
  const socket = place.at(Forwarding.SOCKET_NAME)
  const server = yield* Effect.try({
    try: () =>
      Bun.serve({
        unix: socket,
        fetch: web.handler,
        // The guard keeps the read deadline; only it can connect here. Bun's types leave idleTimeout out for a unix
        // socket, yet it applies there (10 s unless set): 0 turns it off.
        ...({ idleTimeout: 0 } as object),
        maxRequestBodySize: BUN_MAX_BODY_BYTES,
        error: (error) => {
          options.log(`core: operational failure in the HTTP server: ${error.stack ?? error.message}`)
          return new Response(JSON.stringify({ error: { kind: "operational", message: "core failed to answer" } }), {
            status: 500,
            headers: { "content-type": "application/json" },
          })
        },
      }),
    catch: (cause) => listenError(options, cause),
  })
  yield* Effect.addFinalizer(() => Effect.promise(() => server.stop(true)))
  const limit = Supervised.openFileLimit()
  guard = yield* Effect.try({
    try: () =>
      Guard.listen({
        hostname: options.host,
        port: options.port,
        backend: socket,
        deadlineMs: (options.readDeadlineS ?? READ_DEADLINE_S) * 1_000,
        maxDescriptors: connectionDescriptors(limit ?? MIN_OPEN_FILES),
        log: options.log,
      }),
    catch: (cause) => listenError(options, cause),
  })
  const front = guard
  // The server's connections close first, then the guard's, once what the server sent them is passed on.
  yield* Effect.addFinalizer(() =>
    Effect.promise(async () => {
      await server.stop(true)
      await front.close(CLOSE_MS)
    }),
  )
  const port = front.port
  checkHost = Security.hostChecker(options.host, port)
  // No command core runs from now on may connect to this port (where Landlock has network rules), nor a command of
  // the user's other cores.
  const unshared = Supervised.listening(port)
  if (unshared !== undefined) {
    options.log(`core: warning: the user's other core processes cannot be told this port, so their commands may connect to it: ${unshared}`)
  }
  if (!Security.isLoopback(options.host)) {
    options.log(
      `core: warning: listening on ${options.host}, reachable from other machines; anyone with the token can run tools`,
    )
  }
  if (limit !== undefined && limit < MIN_OPEN_FILES) {
    options.log(
      `core: warning: the open-file limit is ${limit} (ulimit -n): core holds at most ` +
        `${Math.floor(connectionDescriptors(limit) / 3)} connections at once; raise the limit to at least ${MIN_OPEN_FILES}`,
    )
  }
  const url = `http://${Security.authority(options.host, port)}`
  // Only in the data directory, which no command or tool reads: elsewhere a command could read the token.
  if (inData) {
    yield* Effect.sync(() =>
      Forwarding.write(place.at(""), {
        version: packageJson.version,
        pid: process.pid,
        execPath: process.execPath,
        url,
        token: forwardToken,
        location: options.primary.directory,
        roots: options.roots,
        environment: Forwarding.environmentDigest(process.env),
        umask: process.umask(),
      }),
    )
  }
  options.onReady({ url, token: options.token })

  yield* options.stop
  options.log("core: shutting down: cancelling running calls")
  front.stopAccepting()
  const stopped = server.stop(false)
  yield* sidecar.calls.cancelAll
  yield* Deferred.succeed(sidecar.closing, undefined)
  if (mcp !== undefined) yield* mcp.closeAll
  // Answers in flight get a moment to finish; then the rest of the connections are closed (the Scope's finalizer).
  yield* Effect.promise(() => stopped).pipe(Effect.timeoutOrElse({ duration: DRAIN_MS, orElse: () => Effect.void }))
})
