export * as Http from "./http"

// The sidecar's HTTP edge: an effect/http router serving exactly the endpoints of ./api, as a web handler for
// Bun.serve (or for tests, which hand it Requests). Before any handler runs, every request passes the Host check,
// then the bearer token (all routes but health), then `X-Core-Location`; an unknown route is a 404 and a known
// path with another method a 405, both after the same checks, so an unauthenticated client learns nothing. No
// CORS headers are ever sent: browsers keep other origins out.

import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import { Api } from "./api"
import { Handlers } from "./handlers"
import { Respond } from "./respond"
import { Security } from "./security"
import type { Sidecar } from "./sidecar"

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const
/** Ids in paths may be long (a host's own session ids); the router's default limit is 100 characters. */
const MAX_PARAM_LENGTH = 4096

export interface Options {
  readonly sidecar: Sidecar.Interface
  readonly version: string
  /** Checks `Authorization`. */
  readonly checkToken: (authorization: string | undefined) => boolean
  /** Checks `Host` (the bound address is known once listening, so this is asked per request). */
  readonly checkHost: (host: string | undefined) => boolean
  /** Real directories under which `X-Core-Location` may point. */
  readonly roots: ReadonlyArray<string>
  /** Writes a line for the operator (stderr). */
  readonly log: (line: string) => void
}

export interface WebHandler {
  readonly handler: (request: Request) => Promise<Response>
  readonly dispose: () => Promise<void>
}

/** The web handler of the sidecar. */
export const make = (options: Options): WebHandler => {
  const handlers = Handlers.make(options.sidecar, options.version)

  /** The checks every request passes, then `handler`; refusals and failures become error bodies here, once. */
  const respond = (name: Api.Name | undefined, handler: Handlers.Handler) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const host = Respond.header(request, "host")
      if (!options.checkHost(host)) {
        return Respond.error(
          403,
          "forbidden",
          `Host "${host ?? ""}" is not this server's address; connect to the address in the ready line`,
        )
      }
      const isPublic = name !== undefined && Api.PUBLIC.has(name)
      const authorization = Respond.header(request, "authorization")
      if (!isPublic && !options.checkToken(authorization)) {
        return Respond.error(
          401,
          "unauthorized",
          authorization === undefined
            ? "Missing Authorization: Bearer <token> (the token is in core serve's ready line, or $CORE_TOKEN)"
            : "Wrong token in Authorization: Bearer <token>",
          { "www-authenticate": "Bearer" },
        )
      }
      const served = isPublic ? options.sidecar.primary : yield* locationOf(Respond.header(request, "x-core-location"))
      const params = yield* HttpRouter.params
      return yield* handler({ request, params, served })
    }).pipe(
      Effect.catchTag("Respond.Problem", (refusal) => Effect.succeed(Respond.problem(refusal))),
      Effect.catchTag("Settler.OperationalError", (failure) => {
        options.log(`core: operational failure: ${failure.message}`)
        return Effect.succeed(Respond.error(500, "operational", failure.message))
      }),
      // The one boundary where an unexpected failure becomes an answer: logged in full, answered as operational.
      Effect.catchCause((cause) => {
        if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
        options.log(`core: operational failure answering a request:\n${Cause.pretty(cause)}`)
        return Effect.succeed(Respond.error(500, "operational", "core failed to answer; the server log has the details"))
      }),
    )

  const locationOf = (header: string | undefined) =>
    Effect.gen(function* () {
      if (header === undefined || header === "") return options.sidecar.primary
      const checked = Security.checkLocation(options.roots, header)
      if (checked._tag === "Invalid") return yield* Respond.badRequest(checked.message)
      if (checked._tag === "Outside") {
        return yield* new Respond.Problem({ status: 403, kind: "forbidden", message: checked.message })
      }
      return yield* options.sidecar.locations
        .get(checked.directory)
        .pipe(Effect.mapError((error) => Respond.badRequest(`The Location cannot be served: ${error.message}`)))
    })

  const methodNotAllowed = (allowed: ReadonlyArray<string>): Handlers.Handler => (route) =>
    Effect.fail(
      new Respond.Problem({
        status: 405,
        kind: "method_not_allowed",
        message: `${route.request.method} is not allowed on this route; use ${allowed.join(" or ")}`,
      }),
    )

  const notFound: Handlers.Handler = (route) =>
    Effect.fail(Respond.notFound(`No route ${route.request.method} ${route.request.url}; see GET /v1/openapi.json`))

  const routes = HttpRouter.use((router) =>
    Effect.gen(function* () {
      const methodsOf = new Map<string, Array<string>>()
      for (const [name, endpoint] of Object.entries(Api.ENDPOINTS) as Array<[Api.Name, (typeof Api.ENDPOINTS)[Api.Name]]>) {
        yield* router.add(endpoint.method, endpoint.path, respond(name, handlers[name]))
        methodsOf.set(endpoint.path, [...(methodsOf.get(endpoint.path) ?? []), endpoint.method])
      }
      for (const [path, allowed] of methodsOf) {
        const refuse = respond(undefined, methodNotAllowed(allowed))
        for (const method of METHODS) {
          if (!allowed.includes(method)) yield* router.add(method, path as HttpRouter.PathInput, refuse)
        }
      }
      yield* router.add("*", "*", respond(undefined, notFound))
      // A path the router cannot even decode (a stray "%") never reaches a route: answered here the same way.
      yield* router.addGlobalMiddleware((effect) =>
        Effect.catchCause(effect, (cause) => {
          const error = Cause.findError(cause)
          const unroutable =
            error._tag === "Success" &&
            error.success instanceof HttpServerError.HttpServerError &&
            error.success.reason._tag === "RouteNotFound"
          if (!unroutable) return Effect.failCause(cause)
          return Effect.succeed(
            Respond.error(404, "not_found", "No such route (the path cannot be decoded); see GET /v1/openapi.json"),
          )
        }),
      )
    }),
  )

  return HttpRouter.toWebHandler(routes, {
    disableLogger: true,
    routerConfig: { maxParamLength: MAX_PARAM_LENGTH },
  }) as WebHandler
}
