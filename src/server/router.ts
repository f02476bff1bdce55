export * as Router from "./router"

// The sidecar's HTTP edge: an effect/http router serving exactly the endpoints of ./api, as a web handler for
// Bun.serve (or for tests, which hand it Requests). Every request, routable or not, passes the Host check, then the
// bearer token (all paths but health's), then the declared body size, before it is routed; then `X-Core-Location`.
// A request that passed them has its body read and is released from the server's read deadline.
// An unknown route (or a path that cannot be decoded) is a 404 and a known path with another method a 405, both
// after the same checks, so an unauthenticated client learns nothing. HEAD is answered for every GET route, without
// a body. No CORS headers are ever sent: browsers keep other origins out.

import * as Cause from "effect/Cause"
import { CallKey } from "../contract/call-key"
import { Terminal } from "../contract/terminal"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Tracer from "effect/Tracer"
import type { Sidecar } from "../host/sidecar"
import type { Served } from "../host/served"
import { Api } from "./api"
import { Direct } from "./direct"
import { Handlers } from "./handlers"
import { Respond } from "./respond"
import { Security } from "./security"

/** Methods answered with 405 on a known path that does not serve them (HEAD falls back to the path's GET route). */
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "QUERY"] as const
/** Ids in paths may be long (a host's own session ids, as long as a call takes: CallKey); the router's default is 100. */
const MAX_PARAM_LENGTH = CallKey.MAX_PATH_CHARS

export interface Options {
  readonly sidecar: Sidecar.Interface
  readonly version: string
  /** Checks `Authorization`. */
  readonly checkToken: (authorization: string | undefined) => boolean
  /** Checks `Host` (the bound address is known once listening, so this is asked per request). */
  readonly checkHost: (host: string | undefined) => boolean
  /** Real directories under which `X-Core-Location` may point (each name only as the directory it first led to). */
  readonly roots: ReadonlyArray<string>
  /** Writes a line for the operator (stderr). */
  readonly log: (line: string) => void
  /**
   * Releases a request from the server's read deadline: called once it passed the Host and token checks and its
   * body is read, so a long call or event stream is not cut while it is quiet.
   */
  readonly release?: (request: Request) => void
  /** What answers `/mcp`, behind the same checks (not part of the JSON API); without it, `/mcp` is unknown. */
  readonly mcp?: McpEndpoint
  /** A tracer that keeps spans: each request gets a server span, and the calls it starts spans of their own. */
  readonly tracer?: Tracer.Tracer
  /**
   * Whether a call's JSON settlement is answered without the router (./direct; default true, unless spans are kept).
   * The answers are the same either way.
   */
  readonly direct?: boolean
}

/**
 * MCP's streamable HTTP, as the server sees it (the CLI plugs in the MCP edge): it answers a request to `/mcp` that
 * passed the checks, given its parsed body and the Location it acts on.
 */
export interface McpEndpoint {
  readonly handle: (request: {
    readonly request: Request
    readonly body: unknown
    /** The body as sent: an error answers a numeric id as the client wrote it, which `body` may have rounded. */
    readonly text?: string
    readonly served: Served.Interface
    /** Whether the request named its Location (`X-Core-Location`) itself. */
    readonly namedLocation: boolean
  }) => Effect.Effect<Response>
  /** Ends every MCP session (at shutdown). */
  readonly closeAll: Effect.Effect<void>
}

/** The methods MCP's streamable HTTP uses. */
const MCP_METHODS = ["GET", "POST", "DELETE"] as const

export interface WebHandler {
  readonly handler: (request: Request) => Promise<Response>
  readonly dispose: () => Promise<void>
}

/** The web handler of the sidecar. */
export const make = (options: Options): WebHandler => {
  const handlers = Handlers.make(options.sidecar, options.version)
  // One memory of where each name led, for the routes and the direct answers alike.
  const names = Security.locationNames(options.roots)

  /**
   * The refusal of a request that fails a check made before routing, in this order: Host, token (unless the path
   * is public), declared body size. A chunked body's size is checked as it is read.
   */
  const refusal = (request: HttpServerRequest.HttpServerRequest, isPublic: boolean, rpc = false) => {
    const host = Respond.header(request, "host")
    // Refused, the connection is closed after the answer: a client without the token has nothing more to ask on it
    // (the guard also keeps a never-released connection's deadline from its first byte).
    if (!options.checkHost(host)) {
      return Respond.error(
        403,
        "forbidden",
        `Host "${host ?? ""}" is not this server's address; connect to the address in the ready line`,
        { connection: "close" },
      )
    }
    const authorization = Respond.header(request, "authorization")
    if (!isPublic && !options.checkToken(authorization)) {
      return Respond.error(
        401,
        "unauthorized",
        authorization === undefined
          ? "Missing Authorization: Bearer <token> (the token is in core serve's ready line, or $CORE_TOKEN)"
          : "Wrong token in Authorization: Bearer <token>",
        { "www-authenticate": "Bearer", connection: "close" },
      )
    }
    if (Respond.declaresTooLarge(request)) return rpc ? Respond.text(413, Respond.rpcRefusal(Respond.tooLarge)) : Respond.problem(Respond.tooLarge)
    return undefined
  }

  /**
   * The checks every request passes, then `handler`; refusals and failures become error bodies here, once. A
   * handler that acts on a Location gets the request's (`X-Core-Location`, checked after routing); the others
   * (health, and refusals of a method) get the serve's own, unused.
   */
  const respond = (isPublic: boolean, handler: Handlers.Handler, actsOnLocation = !isPublic, directoryOnly = false, rpc = false) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const refused = refusal(request, isPublic, rpc)
      if (refused !== undefined) return refused
      if (!isPublic) {
        // Read here, so that a trusted request is released from the read deadline only once its body is in.
        if (request.method !== "GET" && request.method !== "HEAD") yield* Respond.readText(request)
        if (request.source instanceof Request) options.release?.(request.source)
      }
      const named = Respond.header(request, "x-core-location")
      if (directoryOnly) {
        const directory = yield* directoryOf(named)
        return yield* handler({ request, params: yield* HttpRouter.params, served: options.sidecar.primary, directory })
      }
      const served = actsOnLocation ? yield* locationOf(named) : options.sidecar.primary
      const params = yield* HttpRouter.params
      return yield* handler({ request, params, served, directory: served.directory })
    }).pipe(
      // To `/mcp` (`rpc`), in JSON-RPC's words: an MCP client reads no other shape.
      Effect.catchTag("Respond.Problem", (refusal) =>
        Effect.succeed(rpc ? Respond.text(refusal.status, Respond.rpcRefusal(refusal)) : Respond.problem(refusal)),
      ),
      Effect.catchTag("Settler.OperationalError", (failure) => {
        options.log(`core: operational failure: ${Terminal.block(failure.message)}`)
        return Effect.succeed(Respond.error(500, "operational", failure.message))
      }),
      // The one boundary where an unexpected failure becomes an answer: logged in full, answered as operational.
      Effect.catchCause((cause) => {
        if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
        options.log(`core: operational failure answering a request:\n${Cause.pretty(cause)}`)
        return Effect.succeed(Respond.error(500, "operational", "core failed to answer; the server log has the details"))
      }),
    )

  /** The directory of the Location a request names (checked against the roots as `locationOf` checks it), unloaded. */
  const directoryOf = (header: string | undefined) =>
    Effect.gen(function* () {
      if (header === undefined || header === "") return options.sidecar.primary.directory
      const checked = names.check(header)
      if (checked._tag === "Invalid") return yield* Respond.badRequest(checked.message)
      if (checked._tag === "Outside" || checked._tag === "Replaced") {
        return yield* new Respond.Problem({ status: 403, kind: "forbidden", message: checked.message })
      }
      return checked.directory
    })

  const locationOf = (header: string | undefined) =>
    Effect.gen(function* () {
      // Taken through the Locations even when it is the serve's own: the request holds its Location until it
      // is answered (or its stream ends), and each request lets go of Locations unused too long.
      const location = options.sidecar.locations.get(yield* directoryOf(header))
      if (header === undefined || header === "") return yield* location
      return yield* location.pipe(Effect.mapError((error) => Respond.badRequest(`The Location cannot be served: ${error.message}`)))
    })

  /** A 405, with the `Allow` header HTTP asks of one (HEAD where GET is: the router serves it). */
  const methodNotAllowed = (allowed: ReadonlyArray<string>): Handlers.Handler => {
    const allow = (allowed.includes("GET") && !allowed.includes("HEAD") ? [...allowed, "HEAD"] : allowed).join(", ")
    return (route) =>
      Effect.succeed(
        Respond.error(405, "method_not_allowed", `${route.request.method} is not allowed on this route; use ${allowed.join(" or ")}`, {
          allow,
        }),
      )
  }

  /** How much of an unknown path an answer repeats. */
  const MAX_ECHOED = 200
  const notFound = (request: HttpServerRequest.HttpServerRequest) => {
    const path = request.url.length > MAX_ECHOED ? `${request.url.slice(0, MAX_ECHOED)}...` : request.url
    return Respond.error(404, "not_found", `No route ${request.method} ${path}; see GET /v1/openapi.json`)
  }

  /** `/mcp`: the body parsed here (it was read by the checks), then the session's transport answers. */
  const mcpRoute = (mcp: McpEndpoint): Handlers.Handler => (route) =>
    Effect.gen(function* () {
      let body: unknown
      let text: string | undefined
      if (route.request.method === "POST") {
        text = yield* Respond.readText(route.request)
        try {
          body = JSON.parse(text)
        } catch {
          const error = { jsonrpc: "2.0", error: { code: -32700, message: "Parse error: the body is not JSON" }, id: null }
          return HttpServerResponse.jsonUnsafe(error, { status: 400 })
        }
      }
      const named = Respond.header(route.request, "x-core-location")
      const answer = yield* mcp.handle({
        request: route.request.source as Request,
        body,
        ...(text === undefined ? {} : { text }),
        served: route.served,
        namedLocation: named !== undefined && named !== "",
      })
      return HttpServerResponse.fromWeb(answer)
    })

  const routes = HttpRouter.use((router) =>
    Effect.gen(function* () {
      if (options.mcp !== undefined) {
        const handler = respond(false, mcpRoute(options.mcp), true, false, true)
        for (const method of MCP_METHODS) yield* router.add(method, "/mcp", handler)
        const refuse = respond(false, methodNotAllowed(MCP_METHODS), false)
        for (const method of METHODS) {
          if (!(MCP_METHODS as ReadonlyArray<string>).includes(method)) yield* router.add(method, "/mcp", refuse)
        }
      }
      const methodsOf = new Map<string, Array<string>>()
      const publicPaths = new Set<string>()
      for (const [name, endpoint] of Object.entries(Api.ENDPOINTS) as Array<[Api.Name, (typeof Api.ENDPOINTS)[Api.Name]]>) {
        const isPublic = Api.PUBLIC.has(name)
        yield* router.add(endpoint.method, endpoint.path, respond(isPublic, handlers[name], !isPublic, Api.DIRECTORY_ONLY.has(name)))
        methodsOf.set(endpoint.path, [...(methodsOf.get(endpoint.path) ?? []), endpoint.method])
        if (isPublic) publicPaths.add(endpoint.path)
      }
      for (const [path, allowed] of methodsOf) {
        // A public path's refusals need no token either: they say nothing a client could not read in the docs.
        const refuse = respond(publicPaths.has(path), methodNotAllowed(allowed), false)
        for (const method of METHODS) {
          if (!allowed.includes(method)) yield* router.add(method, path as HttpRouter.PathInput, refuse)
        }
      }
      // Every request no route serves (an unknown path or method, a path that cannot be decoded, an over-long id)
      // passes the same checks here, then is answered as an unknown route. HEAD reaches a path's GET route (the
      // router falls back to it), and the web handler leaves the body out.
      yield* router.addGlobalMiddleware((effect) =>
        Effect.catchCause(effect, (cause) => {
          const error = Cause.findError(cause)
          const unroutable =
            error._tag === "Success" &&
            error.success instanceof HttpServerError.HttpServerError &&
            error.success.reason._tag === "RouteNotFound"
          if (!unroutable) return Effect.failCause(cause)
          return Effect.gen(function* () {
            const request = yield* HttpServerRequest.HttpServerRequest
            return refusal(request, false) ?? notFound(request)
          })
        }),
      )
    }),
  )

  const app = options.tracer === undefined ? routes : Layer.merge(routes, Layer.succeed(Tracer.Tracer, options.tracer))
  const routed = HttpRouter.toWebHandler(app, {
    disableLogger: true,
    routerConfig: { maxParamLength: MAX_PARAM_LENGTH },
  }) as WebHandler
  if (options.tracer !== undefined || options.direct === false) return routed
  const direct = Direct.make({ ...options, names })
  return {
    handler: (request) => direct.handle(request) ?? routed.handler(request),
    dispose: routed.dispose,
  }
}
