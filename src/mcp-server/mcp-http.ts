export * as McpHttp from "./mcp-http"

// MCP's streamable HTTP transport for `core serve` (`/mcp`): one MCP session (./mcp) per `Mcp-Session-Id`, made by
// an `initialize` request and bound for its life to the Location that request acted on (`X-Core-Location`, as every
// route) and to an agent (`?agent=`, default build). A session holds its Location while it is open; DELETE ends it,
// and so does the server's shutdown: its calls cancelled and recorded, its streams ended. A session no request has
// used for the idle period (and with no call running) is ended too, as is the least recently used one beyond the
// bound, so clients that never say goodbye hold nothing for long; when every session has a call running, no new
// one is made beyond the bound. The caller has already checked the Host and the token; this module does no HTTP
// routing.

import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { isJsonContentType } from "@modelcontextprotocol/sdk/shared/mediaType.js"
import {
  ErrorCode,
  isInitializeRequest,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
} from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import type { Served } from "../host/served"
import type { Sidecar } from "../host/sidecar"
import { Agent } from "../permission/agent"
import { McpEvents } from "./mcp-events"
import { McpStdio } from "./mcp-stdio"
import { Mcp } from "./mcp"

/**
 * Sessions kept at most: beyond it, the least recently used idle one is ended, and when every one has a call running
 * a new session is refused (503).
 */
export const MAX_SESSIONS = 1_000
/** A session no request has used for this long (and with no call running) is ended. */
export const IDLE_MS = 30 * 60 * 1000

export interface Options {
  readonly sidecar: Sidecar.Interface
  readonly version: string
  /** Writes a line for the operator (stderr). */
  readonly log: (line: string) => void
  readonly max?: number
  readonly idleMs?: number
  /** The clock, in epoch milliseconds. */
  readonly now?: () => number
  /**
   * Whether a session answers a plain call itself rather than through the SDK's transport (default true). The
   * answers are the same either way.
   */
  readonly direct?: boolean
}

export interface Request {
  readonly request: globalThis.Request
  /** The parsed JSON body of a POST (the body stream has been read by then). */
  readonly body: unknown
  /** The body as it was sent, from which an error's id is read as the client wrote it (`McpStdio.answerIdOf`). */
  readonly text?: string
  /** The Location the request acts on (its `X-Core-Location`, or the serve's own). */
  readonly served: Served.Interface
  /** Whether the request named its Location itself. */
  readonly namedLocation: boolean
}

export interface Interface {
  /** Answers one request to `/mcp`. */
  readonly handle: (request: Request) => Effect.Effect<Response>
  /** How many sessions are open. */
  readonly size: () => number
  /** Ends every session: calls cancelled and recorded, streams ended. */
  readonly closeAll: Effect.Effect<void>
}

/** The state of the SDK's transport that chooses how a POST is answered (the SDK's version is pinned). */
interface Answering {
  _enableJsonResponse: boolean
  readonly _requestToStreamMapping: Map<string | number, string>
  readonly _streamMapping: Map<string, { readonly resolveJson?: unknown }>
}

/**
 * The SDK's streamable HTTP transport, choosing per POST how it is answered: with JSON when nothing can be sent
 * before the results (the SDK's own choice is one for the whole session), else as an event stream.
 */
class Transport extends WebStandardStreamableHTTPServerTransport {
  private get answering(): Answering {
    return this as unknown as Answering
  }

  /** Answers a POST whose parsed body is `body`: with JSON when `json`, else as an event stream. */
  post(request: globalThis.Request, body: unknown, json: boolean): Promise<Response> {
    // The SDK reads it before handling the POST first waits.
    this.answering._enableJsonResponse = json
    return this.handleRequest(request, { parsedBody: body })
  }

  /**
   * A plain call's answer (Mcp.Session.answer) as JSON, as this transport answers it, without its passes over the
   * message: only for a request it would take as it is (Accept, Content-Type, its session, a protocol version it
   * supports); undefined otherwise, for `post`.
   */
  answerPlain(request: globalThis.Request, body: unknown, session: Mcp.Session): Promise<Response> | undefined {
    const state = this as unknown as { readonly _closed: boolean; readonly _initialized: boolean }
    const id = this.sessionId
    const headers = request.headers
    if (state._closed || !state._initialized || id === undefined || headers.get("mcp-session-id") !== id) return undefined
    const accept = headers.get("accept")
    if (accept === null || !accept.includes("application/json") || !accept.includes("text/event-stream")) return undefined
    if (!isJsonContentType(headers.get("content-type"))) return undefined
    const version = headers.get("mcp-protocol-version")
    if (version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined
    const answering = session.answer(body)
    if (answering === undefined) return undefined
    const json = { "Content-Type": "application/json", "mcp-session-id": id }
    return answering.then((message) => {
      if (message !== undefined) return new Response(JSON.stringify(message), { status: 200, headers: json })
      // Cancelled by the client (notifications/cancelled): no answer, as the SDK sends none, and the POST ends
      // rather than stay open for good.
      if (!state._closed) return new Response(null, { status: 202, headers: { "mcp-session-id": id } })
      // Cancelled as its session ended (DELETE /mcp, core stopping): the client still waits on this request.
      return new Response(JSON.stringify(sessionEnded((body as { readonly id: string | number }).id)), { status: 200, headers: json })
    })
  }

  /**
   * Answers every request still waiting on one of this session's POSTs (a call's stream) that its session ended: the
   * transport, closing, would end the streams with nothing said, and leave each client waiting on its ids.
   */
  endRequests(): Promise<void> {
    const waiting = [...this.answering._requestToStreamMapping.keys()]
    return Promise.allSettled(waiting.map((id) => this.send(sessionEnded(id)))).then(() => undefined)
  }

  // Each message goes as the POST it belongs to is answered; the SDK reads this before sending first waits.
  override send(message: JSONRPCMessage, options?: { relatedRequestId?: string | number }): Promise<void> {
    const { _requestToStreamMapping: streams, _streamMapping: answers } = this.answering
    // A response (a result or an error) goes with its own request's answer; anything else with its related request's.
    const id = "id" in message && !("method" in message) ? (message.id ?? undefined) : options?.relatedRequestId
    const stream = id === undefined ? undefined : streams.get(id)
    this.answering._enableJsonResponse = stream !== undefined && answers.get(stream)?.resolveJson !== undefined
    return super.send(message, options)
  }
}

/** The answer to a request whose session ended before it was answered (its call is cancelled). */
const sessionEnded = (id: string | number): JSONRPCMessage => ({
  jsonrpc: "2.0",
  id,
  error: {
    code: ErrorCode.ConnectionClosed,
    message: "The session ended before this call settled: the call was cancelled. Start a new session to call again.",
  },
})

/** What the SDK's transport answers JSON that is no JSON-RPC message with (as a parse error, -32700). */
const NOT_JSON_RPC_MESSAGE = "Parse error: Invalid JSON-RPC message"

/** Whether answering the POSTed `body` may send the session's client anything before the results. */
const streams = (session: Mcp.Session, body: unknown): boolean =>
  Array.isArray(body) ? body.some(session.mayStream) : session.mayStream(body)

/** The answer to a POSTed `body` with a request whose params do not check (Session.invalid), if it has one. */
const invalidAnswer = (session: Mcp.Session, body: unknown, text: string, sessionId: string): Response | undefined => {
  const messages: ReadonlyArray<unknown> = Array.isArray(body) ? body : [body]
  for (const message of messages) {
    const invalid = session.invalid(message)
    if (invalid === undefined) continue
    if (messages.length === 1) {
      // Its id as written (a batch of one keeps the id its element was read with).
      const id = Array.isArray(body) ? (invalid as { readonly id: McpStdio.AnswerId }).id : McpStdio.answerIdOf(text, body)
      return new Response(JSON.stringify({ ...invalid, id }), {
        status: 200,
        headers: { "content-type": "application/json", "mcp-session-id": sessionId },
      })
    }
    const { error } = invalid as { readonly error: { readonly message: string } }
    return rpcError(400, -32600, `Invalid Request: a request of this batch: ${error.message}`)
  }
  return undefined
}

interface Open {
  readonly transport: Transport
  readonly session: Mcp.Session
  readonly scope: Scope.Closeable
  readonly directory: string
  /** When a request last used it. */
  used: number
}

/** A JSON-RPC error answer, for what is refused before a session's transport sees it. */
const rpcError = (status: number, code: number, message: string, id: McpStdio.AnswerId = null): Response =>
  new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id }), {
    status,
    headers: { "content-type": "application/json" },
  })

/** The session table, for the life of the Scope (closing it ends every session). */
export const make = (options: Options): Effect.Effect<Interface, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { sidecar } = options
    const max = options.max ?? MAX_SESSIONS
    const idleMs = options.idleMs ?? IDLE_MS
    const now = options.now ?? Date.now
    /** In order of last use (a use moves a session to the end). */
    const sessions = new Map<string, Open>()
    const parent = yield* Scope.Scope

    const end = (id: string) =>
      Effect.suspend(() => {
        const open = sessions.get(id)
        if (open === undefined) return Effect.void
        sessions.delete(id)
        return open.session.close.pipe(Effect.andThen(Scope.close(open.scope, Exit.void)))
      })

    /** A new session for an `initialize` request, bound to the request's Location and `?agent=`. */
    const start = (request: Request) =>
      Effect.gen(function* () {
        const agent = new URL(request.request.url).searchParams.get("agent") ?? Agent.DEFAULT_AGENT
        const scope = yield* Scope.fork(parent)
        const id = crypto.randomUUID()
        const opened = yield* Effect.gen(function* () {
          // The session holds its Location (it is not let go while the session is open).
          const served = yield* sidecar.locations.get(request.served.directory)
          const known = yield* Effect.result(served.capture(agent, { connect: false }))
          if (known._tag === "Failure") return rpcError(400, -32602, known.failure.message)
          const session = yield* Mcp.session(
            { served, calls: sidecar.calls, outputs: sidecar.outputs },
            {
              agent,
              sessionID: `ses_mcp_${id}`,
              name: "core",
              version: options.version,
              note: (text) => options.log(text.trimEnd()),
            },
          )
          const transport = new Transport({
            sessionIdGenerator: () => id,
            onsessionclosed: () => void Effect.runFork(end(id)),
          })
          yield* Effect.promise(() => session.connect(transport))
          return { transport, session, scope, directory: served.directory, used: now() } satisfies Open
        }).pipe(
          Scope.provide(scope),
          Effect.catchTag("Config.ConfigError", (error) =>
            Effect.succeed(rpcError(400, -32602, `The Location cannot be served: ${error.message}`)),
          ),
        )
        if (opened instanceof Response) {
          yield* Scope.close(scope, Exit.void)
          return opened
        }
        sessions.set(id, opened)
        // An initialize is answered before anything else can be sent.
        const answer = McpEvents.answer(
          yield* Effect.promise(() => opened.transport.post(request.request, request.body, true)),
        )
        // An initialize the transport refused made no session.
        if (opened.transport.sessionId === undefined) yield* end(id)
        return answer
      })

    /**
     * Ends the sessions idle too long, then the least recently used beyond the bound with `room` more to come
     * (never one with a call running).
     */
    const expire = (room: number) => Effect.suspend(() => {
      const at = now()
      let excess = sessions.size + room - max
      const gone: Array<string> = []
      for (const [id, open] of sessions) {
        if (at - open.used <= idleMs && excess <= 0) break
        if (open.session.busy()) continue
        gone.push(id)
        excess--
      }
      return Effect.forEach(gone, end, { discard: true })
    })

    const handle = (request: Request): Effect.Effect<Response> =>
      Effect.gen(function* () {
        const id = request.request.headers.get("mcp-session-id")
        yield* expire(id === null ? 1 : 0)
        if (id === null) {
          if (request.request.method === "POST" && isInitializeRequest(request.body)) {
            // Every session at the bound has a call running: none is ended for a newcomer, whose work would be lost.
            if (sessions.size >= max) {
              return rpcError(
                503,
                -32000,
                `Too many MCP sessions (${max}), each with a call running: end one with DELETE /mcp or retry later`,
              )
            }
            return yield* start(request)
          }
          return rpcError(400, -32000, "No Mcp-Session-Id: start a session with an initialize request (POST /mcp)")
        }
        const open = sessions.get(id)
        if (open === undefined) return rpcError(404, -32001, "Session not found: it ended or never existed; initialize again")
        open.used = now()
        sessions.delete(id)
        sessions.set(id, open)
        if (request.namedLocation && request.served.directory !== open.directory) {
          return rpcError(400, -32000, `This session serves ${open.directory}; send that X-Core-Location or none`)
        }
        const post = request.request.method === "POST"
        // A request id still being answered in this session, reused (MCP forbids it): the transport would send the
        // answer of one to the other's POST and leave the first open for good, so it is refused.
        const reused = post ? open.session.inUse(request.body) : undefined
        if (reused !== undefined) {
          return rpcError(
            400,
            -32600,
            `Invalid Request: the id ${JSON.stringify(reused)} is in use by another request being answered in this ` +
              "session, or given twice in this batch; use a new id for each request",
            reused,
          )
        }
        // A DELETE the transport takes (a protocol version it supports) ends the session: what is still waiting on its
        // streams is told so first.
        const version = request.request.headers.get("mcp-protocol-version")
        if (request.request.method === "DELETE" && (version === null || SUPPORTED_PROTOCOL_VERSIONS.includes(version))) {
          yield* Effect.promise(() => open.transport.endRequests())
        }
        const json = post && !streams(open.session, request.body)
        // Traced, the calls this request carries sit under its span, not under the request that opened the session.
        const parent = post ? yield* Effect.serviceOption(Tracer.ParentSpan) : Option.none()
        const release = Option.isSome(parent) ? open.session.carried(request.body, parent.value) : undefined
        const answer = McpEvents.answer(
          yield* Effect.promise(
            () =>
              (json && options.direct !== false ? open.transport.answerPlain(request.request, request.body, open.session) : undefined) ??
              (post ? open.transport.post(request.request, request.body, json) : open.transport.handleRequest(request.request)),
          ),
        )
        // Answered as JSON, its requests are done; a stream's calls take their span as they start.
        if (json) release?.()
        // The transport refuses a body with a request whose params do not check as unparsable, with no id: such a
        // request is answered with its own id instead, as over stdio (in a batch, the batch is refused naming it).
        if (post && answer.status === 400) {
          const refused = invalidAnswer(open.session, request.body, request.text ?? "", id)
          if (refused !== undefined) return refused
          // JSON (the route read it) that is no JSON-RPC message, which the transport calls a parse error: an invalid
          // request, as over stdio. (Its other parse errors, a failure while it handled a valid message, stand.)
          const said = yield* Effect.promise(() => answer.clone().json().catch(() => undefined))
          const error = (said as { error?: { code?: unknown; message?: unknown } } | undefined)?.error
          if (error?.code === ErrorCode.ParseError && error.message === NOT_JSON_RPC_MESSAGE) {
            return rpcError(400, ErrorCode.InvalidRequest, McpStdio.NOT_JSON_RPC, Array.isArray(request.body) ? null : McpStdio.answerIdOf(request.text ?? "", request.body))
          }
        }
        // A DELETE the transport refused (a protocol version it does not support) ends nothing.
        if (request.request.method === "DELETE" && answer.ok) yield* end(id)
        return answer
      })

    const closeAll = Effect.suspend(() => Effect.forEach([...sessions.keys()], end, { concurrency: "unbounded", discard: true }))
    yield* Effect.addFinalizer(() => closeAll)
    return { handle, size: () => sessions.size, closeAll }
  })
