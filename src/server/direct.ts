export * as Direct from "./direct"

// The sidecar's most frequent requests answered without the router, in the serve's own Location: a turn (`POST
// /v1/turns`, one each model step), a call's settlement as JSON or as its event stream (`POST
// /v1/turns/{turnID}/calls`, and `/calls/stream` as `core exec` forwards it: ./call-stream), and a message of an open
// MCP session (`POST /mcp` with its `Mcp-Session-Id`). They pass the same checks in the same order as every request
// (./router: Host, token, declared body size, then the body read and the request released from the read deadline)
// and are answered exactly as the routed handlers would (./handlers, the MCP edge), with no per-request Scope or
// fiber of its own: one fiber starts (or joins) the call and waits for its outcome, or runs the MCP edge. A request
// naming its Location (`X-Core-Location`, as a host serving many sends with every request) is answered here too,
// once the name passes the router's check and that Location is built. Anything else, or anything unusual about such a
// request (a refusal, a Location not allowed or not built yet, an MCP session's first request, a tracer keeping
// spans), is left to the router (`handle` answers undefined), which answers it as for any request.

import * as Cause from "effect/Cause"
import { CallKey } from "../contract/call-key"
import { Terminal } from "../contract/terminal"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { Calls } from "../host/calls"
import type { Served } from "../host/served"
import type { Sidecar } from "../host/sidecar"
import type { Settler } from "../settlement/settler"
import { Api } from "./api"
import { CallStream } from "./call-stream"
import { Handlers } from "./handlers"
import { Respond } from "./respond"
import type { Router } from "./router"
import { Security } from "./security"

export interface Options {
  readonly sidecar: Sidecar.Interface
  readonly checkToken: (authorization: string | undefined) => boolean
  readonly checkHost: (host: string | undefined) => boolean
  /** What `X-Core-Location` may name (the router's, which remembers where each name led). */
  readonly names: Security.LocationNames
  readonly log: (line: string) => void
  readonly release?: (request: Request) => void
  /** What answers `/mcp`: a message of an open session is answered here too. */
  readonly mcp?: Router.McpEndpoint
}

/** The Location a request holds, until `release` (an event stream takes it over, to let go once it is over). */
interface Held {
  readonly served: Served.Interface
  /** Whether the request named it (`X-Core-Location`) rather than taking the serve's own. */
  readonly named: boolean
  release: () => void
}

const MCP_PATH = "/mcp"
/** The router's answer to a POST to `/mcp` whose body is not JSON. */
const PARSE_ERROR = JSON.stringify({ jsonrpc: "2.0", error: { code: -32700, message: "Parse error: the body is not JSON" }, id: null })
const TURNS = "/v1/turns"
const PREFIX = "/v1/turns/"
const SUFFIX = "/calls"
const STREAM_SUFFIX = "/calls/stream"
/** A turn id the router would pass as it is: no escapes to decode, within its parameter limit. */
const PLAIN_ID = /^[A-Za-z0-9_.~-]{1,4096}$/

/** The headers of every JSON answer (Respond.text's, as the router's web handler writes them). */
const JSON_HEADERS = { ...Respond.COMMON_HEADERS, "content-type": "application/json" } as const
const REPLAYED_HEADERS = { ...JSON_HEADERS, ...Handlers.REPLAYED } as const

/** A JSON answer, with its length declared as the router's answers declare it. */
const answer = (status: number, body: string, headers: Record<string, string> = JSON_HEADERS): Response => {
  const response = new Response(body, { status, headers })
  response.headers.set("content-length", String(Buffer.byteLength(body)))
  return response
}

const problem = (refusal: Respond.Problem): Response =>
  answer(refusal.status, JSON.stringify({ error: { kind: refusal.kind, message: refusal.message } } satisfies Api.ErrorBody))

/** The turn id of a `POST /v1/turns/{turnID}/calls` URL (or, with `suffix`, of another), when it is one this module answers. */
export const turnOf = (url: string, suffix = SUFFIX): string | undefined => {
  const path = pathOf(url)
  if (path < 0 || !url.startsWith(PREFIX, path) || !url.endsWith(suffix)) return undefined
  const id = url.slice(path + PREFIX.length, url.length - suffix.length)
  return PLAIN_ID.test(id) ? id : undefined
}

/** Where a URL's path starts: after the scheme and authority. */
const pathOf = (url: string): number => url.indexOf("/", url.indexOf("//") + 2)

/** Whether a URL is `/mcp`, with or without a query (`?agent=` is read by the MCP edge). */
export const isMcp = (url: string): boolean => {
  const path = pathOf(url)
  if (path < 0 || !url.startsWith(MCP_PATH, path)) return false
  const after = path + MCP_PATH.length
  return after === url.length || url[after] === "?"
}

/** Whether a URL is exactly `/v1/turns` (no query, which the router would ignore but a client may mean). */
export const isTurns = (url: string): boolean => {
  const path = pathOf(url)
  return path >= 0 && url.length === path + TURNS.length && url.startsWith(TURNS, path)
}

type Route =
  | { readonly kind: "turn" }
  | { readonly kind: "calls"; readonly turnID: string; readonly stream: boolean }
  | { readonly kind: "mcp"; readonly mcp: Router.McpEndpoint }

const TURN: Route = { kind: "turn" }

const routeOf = (url: string, mcp: Router.McpEndpoint | undefined): Route | undefined => {
  if (mcp !== undefined && isMcp(url)) return { kind: "mcp", mcp }
  if (isTurns(url)) return TURN
  const turnID = turnOf(url)
  if (turnID !== undefined) return { kind: "calls", turnID, stream: false }
  const streamed = turnOf(url, STREAM_SUFFIX)
  return streamed === undefined ? undefined : { kind: "calls", turnID: streamed, stream: true }
}

/** A body without a declared length, read up to Respond.MAX_BODY_BYTES: undefined once it is past them. */
const readCounting = async (request: Request): Promise<Uint8Array | undefined> => {
  if (request.body === null) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Array<Uint8Array> = []
  let bytes = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    bytes += value.length
    if (bytes > Respond.MAX_BODY_BYTES) {
      await reader.cancel().catch(() => undefined)
      return undefined
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}

/** A non-empty string of whole characters with no NUL, as the API's `Id` schema takes it. */
const isId = (value: unknown): value is string => typeof value === "string" && value !== "" && CallKey.keepable(value)

/** Whether every number in parsed JSON is finite (JSON.parse reads `1e400` as Infinity, which is not JSON), without recursion. */
const finite = (value: unknown): boolean => {
  const stack: Array<unknown> = [value]
  while (stack.length > 0) {
    const next = stack.pop()
    if (typeof next === "number") {
      if (!Number.isFinite(next)) return false
    } else if (typeof next === "object" && next !== null) {
      if (Array.isArray(next)) for (const item of next) stack.push(item)
      else for (const key in next) stack.push((next as Record<string, unknown>)[key])
    }
  }
  return true
}

/**
 * A call's body as Api.CallRequest decodes it, read without the schema when it is exactly what the schema takes: its
 * five fields and no other, the ids non-empty strings, the name a string, the input parsed JSON whose numbers are all
 * finite. Anything else is left to the schema, which says what is wrong.
 */
export const plainCall = (value: object): Api.CallRequest | undefined => {
  const body = value as Record<string, unknown>
  let keys = 0
  for (const key in body) {
    if (!Object.hasOwn(body, key)) return undefined
    keys++
  }
  const { sessionID, assistantMessageID, toolCallID, name } = body
  if (keys !== 5 || !Object.hasOwn(body, "input") || !isId(sessionID) || !isId(assistantMessageID) || !isId(toolCallID)) {
    return undefined
  }
  if (typeof name !== "string" || !finite(body.input)) return undefined
  return { sessionID, assistantMessageID, toolCallID, name, input: body.input as Api.CallRequest["input"] }
}

/** The direct answerer; `handle` answers undefined for a request the router must answer. */
export const make = (options: Options) => {
  const { sidecar } = options
  const calls = sidecar.calls

  /** The request's body as text; past the limit, unreadable or not UTF-8, why it is refused (as the router refuses it). */
  const bodyOf = async (request: Request, declared: boolean): Promise<string | Respond.Problem> => {
    try {
      const bytes = declared ? await request.bytes() : await readCounting(request)
      if (bytes === undefined) return Respond.tooLarge
      return Respond.utf8(bytes) ?? Respond.notUtf8
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause)
      return Respond.unreadable(`The request body could not be read: ${reason}`)
    }
  }

  /** An answer for a failure no handler expected, logged in full, as the router answers one. */
  const unexpected = (cause: Cause.Cause<unknown>) => {
    options.log(`core: operational failure answering a request:\n${Cause.pretty(cause)}`)
    return problem(new Respond.Problem({ status: 500, kind: "operational", message: "core failed to answer; the server log has the details" }))
  }

  /**
   * Settles the call `request` asks of turn `turnID`, in the Location `held`, answered as JSON or as its event stream
   * (which lets go of the Location once it is over; answered otherwise, the caller lets go).
   */
  const settle = async (request: Request, raw: string, route: Route & { kind: "calls" }, held: Held): Promise<Response> => {
    const { turnID } = route
    const served = held.served
    const turn = served.turn(turnID)
    if (turn === undefined) {
      return problem(
        Respond.notFound(
          `Unknown or expired turn "${turnID}" in ${served.directory}: materialize again with POST /v1/turns ` +
            `(send the same X-Core-Location with every request of a turn)`,
        ),
      )
    }
    const decoded = Respond.decode(raw, Api.CallRequest, { plain: plainCall })
    if (!decoded.ok) return problem(decoded.problem)
    const call: Settler.Call = {
      ...decoded.value,
      input: Handlers.inputOf(turn, decoded.value.name, decoded.value.input),
      agent: turn.agent,
    }
    if (route.stream) {
      const release = held.release
      held.release = () => {}
      return CallStream.open({
        calls,
        served,
        turn,
        call,
        answer: (settlement) => Handlers.answerOf(turn, settlement),
        release,
        signal: request.signal,
      })
    }
    // Started (or joined) at once: nothing in starting a call waits; its outcome is awaited without a fiber.
    const exit = await Calls.outcome(Effect.runSync(calls.start(served, turn, call)).entry)
    if (Exit.isSuccess(exit)) {
      const { settlement, replayed } = exit.value
      return answer(200, JSON.stringify(Handlers.answerOf(turn, settlement)), replayed ? REPLAYED_HEADERS : JSON_HEADERS)
    }
    const error = Cause.findError(exit.cause)
    if (error._tag === "Success") {
      options.log(`core: operational failure: ${Terminal.block(error.success.message)}`)
      return problem(new Respond.Problem({ status: 500, kind: "operational", message: error.success.message }))
    }
    return unexpected(exit.cause)
  }

  /** A turn made in the Location `held` (`POST /v1/turns`), answered as the router answers it. */
  const turn = async (raw: string, held: Held): Promise<Response> => {
    const decoded = Respond.decode(raw, Api.TurnRequest, { emptyIsObject: true })
    if (!decoded.ok) return problem(decoded.problem)
    const exit = await Effect.runPromiseExit(Handlers.turnAnswer(held.served, decoded.value))
    if (Exit.isSuccess(exit)) return answer(200, exit.value)
    const error = Cause.findError(exit.cause)
    return error._tag === "Success" ? problem(error.success) : unexpected(exit.cause)
  }

  /** A message of an MCP session POSTed to `/mcp`, answered by the MCP edge as it is (JSON, or an event stream). */
  const post = async (mcp: Router.McpEndpoint, request: Request, raw: string, held: Held) => {
    let body: unknown
    try {
      body = JSON.parse(raw)
    } catch {
      return answer(400, PARSE_ERROR, { "content-type": "application/json" })
    }
    const exit = await Effect.runPromiseExit(mcp.handle({ request, body, text: raw, served: held.served, namedLocation: held.named }))
    return Exit.isSuccess(exit) ? exit.value : unexpected(exit.cause)
  }

  /** Reads the body of `request`, releases it from the read deadline, and answers it in the Location `held`. */
  const respond = async (request: Request, route: Route, held: Held, declared: boolean): Promise<Response> => {
    try {
      const raw = await bodyOf(request, declared)
      // To `/mcp`, in JSON-RPC's words.
      if (raw instanceof Respond.Problem) return route.kind === "mcp" ? answer(raw.status, Respond.rpcRefusal(raw)) : problem(raw)
      options.release?.(request)
      return route.kind === "calls"
        ? await settle(request, raw, route, held)
        : route.kind === "turn"
          ? await turn(raw, held)
          : await post(route.mcp, request, raw, held)
    } finally {
      held.release()
    }
  }

  return {
    handle: (request: Request): Promise<Response> | undefined => {
      if (request.method !== "POST") return undefined
      const route = routeOf(request.url, options.mcp)
      if (route === undefined) return undefined
      const headers = request.headers
      let answering: Route = route
      if (route.kind === "calls") {
        const accept = headers.get("accept")
        if (accept !== null && accept.includes("text/event-stream")) answering = { ...route, stream: true }
        // A session's first request (initialize) makes it, through the router.
      } else if (route.kind === "mcp" && headers.get("mcp-session-id") === null) return undefined
      if (!options.checkHost(headers.get("host") ?? undefined)) return undefined
      if (!options.checkToken(headers.get("authorization") ?? undefined)) return undefined
      // A declared length over the limit (or not a number) is the router's refusal; a body without one is read
      // counting, and refused once past the limit.
      const length = headers.get("content-length")
      if (length !== null && !(Number(length) <= Respond.MAX_BODY_BYTES)) return undefined
      // The Location named, checked as the router checks it (an absolute directory under a root, by its real path);
      // one it would refuse is its to refuse.
      const location = headers.get("x-core-location")
      const named = location !== null && location !== ""
      let directory = sidecar.primary.directory
      if (named) {
        const checked = options.names.check(location)
        if (checked._tag !== "Allowed") return undefined
        directory = checked.directory
      }
      // Held from here until answered (for an event stream, until its answer begins: the session holds its own). A
      // Location not built yet (or whose build failed) is the router's to build (or refuse).
      const held = sidecar.locations.hold(directory)
      if (held === undefined) return undefined
      return respond(request, answering, { served: held.served, named, release: held.release }, length !== null)
    },
  }
}
