export * as Handlers from "./handlers"

// What each route of ./api does, given the request's served Location (already authorized by ./http). Handlers
// translate the domain's outcomes into answers: a settlement is always a 200 (success, error, declined and
// cancelled alike), an unknown or expired turn a 404, the sidecar's own failure a 500.

import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as HttpServerResponseModule from "effect/http/HttpServerResponse"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Explain } from "../builtin/explain"
import { CallKey } from "../contract/call-key"
import type { Calls } from "../host/calls"
import { Recorded } from "../host/recorded"
import type { Served } from "../host/served"
import type { Sidecar } from "../host/sidecar"
import { ManagedOutputs } from "../output/managed-outputs"
import { Agent } from "../permission/agent"
import { Provider } from "../provider/provider"
import type { Permission } from "../permission/permission"
import { Hooks } from "../settlement/hooks"
import { Settler } from "../settlement/settler"
import { Store } from "../store/store"
import { Api } from "./api"
import { ApiDocument } from "./api-document"
import { CallStream } from "./call-stream"
import { Sse } from "./sse"
import { Range } from "./range"
import { Respond } from "./respond"

export interface Route {
  readonly request: HttpServerRequest.HttpServerRequest
  readonly params: Readonly<Record<string, string | undefined>>
  /**
   * The request's Location, loaded; for a route that needs only its directory (Api.DIRECTORY_ONLY) and for those
   * that need none, the serve's own, unused.
   */
  readonly served: Served.Interface
  /** The request's Location's directory (checked against the roots), whether or not it could be loaded. */
  readonly directory: string
}

export type Handler = (
  route: Route,
) => Effect.Effect<HttpServerResponse.HttpServerResponse, Respond.Problem | Settler.OperationalError, Scope.Scope>

export const REPLAYED = { "x-core-replayed": "true" } as const

const param = (route: Route, name: string): string => route.params[name] ?? ""

/**
 * `id`, the call id `name` of a path or query, or a 400 where it cannot be a call's (a NUL or a lone surrogate:
 * CallKey.problemOf), as the body of a call refuses it: no store is asked for what none keeps.
 */
const idOf = (name: "sessionID" | "toolCallID", id: string) => {
  const problem = CallKey.problemOf(name, id)
  return problem === undefined ? Effect.succeed(id) : Effect.fail(Respond.badRequest(problem))
}


const wantsEvents = (request: HttpServerRequest.HttpServerRequest): boolean =>
  (Respond.header(request, "accept") ?? "").includes("text/event-stream")

/** The settlement as a call through `turn` answers it: with the provider's tool-result block when it has one. */
export const answerOf = (turn: Served.Turn, settlement: typeof Api.Settlement.Type): Api.CallSettlement =>
  turn.prepared === undefined
    ? settlement
    : { ...settlement, result: Provider.result(turn.prepared.provider, settlement) as Schema.Json }

/** The arguments as the tool declared them, where the turn's provider changed their shape (openai-strict). */
export const inputOf = (turn: Served.Turn, name: string, input: unknown): unknown =>
  turn.prepared === undefined ? input : turn.prepared.normalize(name, input)

const incompatible = (error: Provider.CompatibilityError) =>
  new Respond.Problem({ status: 400, kind: "model_compatibility", message: error.message })

// `X-Core-Replayed: true` says the answer is a settlement recorded before this request, and nothing ran for it. A
// request that joins a call still running gets that call's fresh settlement, so it is not marked.
const settleJson = (calls: Calls.Interface, turn: Served.Turn, call: Settler.Call, served: Served.Interface) =>
  Effect.flatMap(calls.start(served, turn, call), ({ entry }) =>
    Effect.map(Deferred.await(entry.done), ({ settlement, replayed }) =>
      Respond.json(200, answerOf(turn, settlement), replayed ? REPLAYED : {}),
    ),
  )

/** The call answered as its event stream (./call-stream), holding the request's Location until the stream is over. */
const settleEvents = (sidecar: Sidecar.Interface, route: Route, turn: Served.Turn, call: Settler.Call) =>
  Effect.suspend(() => {
    const held = sidecar.locations.hold(route.served.directory)
    const source = route.request.source
    // The call starts with the request's context: its spans sit under the request's, as a JSON call's do.
    return Effect.flatMap(Effect.context<never>(), (context) =>
      Effect.promise(() =>
        CallStream.open({
          calls: sidecar.calls,
          served: route.served,
          turn,
          call,
          answer: (settlement) => answerOf(turn, settlement),
          release: held === undefined ? () => {} : held.release,
          ...(source instanceof Request ? { signal: source.signal } : {}),
          run: Effect.runPromiseWith(context),
        }),
      ),
    ).pipe(Effect.map((response) => HttpServerResponseModule.raw(response)))
  })

/** `POST /v1/turns/{turnID}/calls`: the call through its turn, answered with its settlement or as its events. */
const settle = (sidecar: Sidecar.Interface, route: Route, stream: boolean) =>
  Effect.gen(function* () {
    const turnID = param(route, "turnID")
    const turn = route.served.turn(turnID)
    if (turn === undefined) {
      return yield* Respond.notFound(
        `Unknown or expired turn "${turnID}" in ${route.served.directory}: materialize again with POST /v1/turns ` +
          `(send the same X-Core-Location with every request of a turn)`,
      )
    }
    const request = yield* Respond.body(route.request, Api.CallRequest)
    const call: Settler.Call = { ...request, input: inputOf(turn, request.name, request.input), agent: turn.agent }
    return yield* stream ? settleEvents(sidecar, route, turn, call) : settleJson(sidecar.calls, turn, call, route.served)
  })

/** A catalog's definitions (and provider tools) serialized once: every turn of an unchanged catalog shares them. */
const json = new WeakMap<ReadonlyArray<unknown>, string>()
const serialized = (values: ReadonlyArray<unknown>): string => {
  let cached = json.get(values)
  if (cached === undefined) json.set(values, (cached = JSON.stringify(values)))
  return cached
}

/** `POST /v1/turns`: the turn made in `served` for what `request` asks, as the answer's JSON text. */
export const turnAnswer = (served: Served.Interface, request: typeof Api.TurnRequest.Type): Effect.Effect<string, Respond.Problem> =>
  Effect.map(
    served.materialize(request.agent ?? Agent.DEFAULT_AGENT, request.provider).pipe(
      Effect.catchTags({
        "Served.UnknownAgent": (error) => Effect.fail(Respond.badRequest(error.message)),
        "Provider.CompatibilityError": (error) => Effect.fail(incompatible(error)),
      }),
    ),
    (turn) => {
      const { definitions } = turn.materialization
      const warnings = served.warned() ? `,"warnings":true` : ""
      const head = `{"turnID":${JSON.stringify(turn.id)},"definitions":${serialized(definitions)}`
      if (turn.prepared === undefined) return `${head}${warnings}}`
      const { provider, tools } = turn.prepared
      return `${head},"provider":${JSON.stringify(provider)},"tools":${serialized(tools)}${warnings}}`
    },
  )

/** The handlers of every route, over the sidecar's services. */
export const make = (sidecar: Sidecar.Interface, version: string): Readonly<Record<Api.Name, Handler>> => {
  let openapi: Record<string, unknown> | undefined

  return {
    health: () => Effect.succeed(Respond.json(200, { ok: true, version } satisfies typeof Api.Health.Type)),

    // The Host header was checked to be the server's own address, so it names this server: each request's own (the
    // document is made once, its `servers` not kept from the first request that read it).
    openapi: (route) =>
      Effect.sync(() => {
        const host = Respond.header(route.request, "host")
        openapi ??= ApiDocument.openapi({})
        return Respond.text(200, JSON.stringify(host === undefined ? openapi : { ...openapi, servers: ApiDocument.serversOf(`http://${host}`) }))
      }),

    createTurn: (route) =>
      Effect.gen(function* () {
        const request = yield* Respond.body(route.request, Api.TurnRequest, { emptyIsObject: true })
        return Respond.text(200, yield* turnAnswer(route.served, request))
      }),

    settle: (route) => settle(sidecar, route, wantsEvents(route.request)),

    settleStream: (route) => settle(sidecar, route, true),

    check: (route) =>
      Effect.gen(function* () {
        const turnID = param(route, "turnID")
        const turn = route.served.turn(turnID)
        if (turn === undefined) {
          return yield* Respond.notFound(
            `Unknown or expired turn "${turnID}" in ${route.served.directory}: materialize again with POST /v1/turns`,
          )
        }
        const request = yield* Respond.body(route.request, Api.CheckRequest)
        const agent = request.agent ?? turn.agent
        const { permission } = turn.generation
        if (!permission.isAgent(agent)) {
          return yield* Respond.badRequest(`Unknown agent "${agent}". Known agents: ${permission.agents.join(", ")}`)
        }
        const resolution = turn.materialization.resolve(request.name)
        if (resolution._tag === "Stale") {
          return yield* Respond.notFound(`The tool "${request.name}" changed since this turn was made: materialize again`)
        }
        if (resolution._tag === "Unknown") {
          const hint = resolution.suggestions.length > 0 ? ` Did you mean ${resolution.suggestions.join(", ")}?` : ""
          return yield* Respond.notFound(`The turn does not advertise a tool "${request.name}".${hint}`)
        }
        const input = inputOf(turn, request.name, request.input)
        const explained = yield* Explain.call(permission, { name: request.name, tool: resolution.tool, input, agent }).pipe(
          Effect.catchTags({
            "Explain.InvalidInput": (error) => Effect.fail(Respond.badRequest(error.message)),
            "Tool.Failure": (failure) => Effect.fail(Respond.badRequest(`${request.name}: ${failure.message}`)),
          }),
        )
        // The plugin hooks a call to this tool meets after the permission checks, as core check lists them.
        const hooks = Hooks.applied(turn.generation.hooks, request.name)
        return Respond.json(200, (hooks.length === 0 ? explained : { ...explained, hooks }) satisfies Api.Check)
      }),

    settlement: (route) =>
      Effect.gen(function* () {
        const key = {
          location: route.directory,
          sessionID: yield* idOf("sessionID", param(route, "sessionID")),
          toolCallID: yield* idOf("toolCallID", param(route, "toolCallID")),
        }
        const known = yield* sidecar.store.lookup(key).pipe(Effect.orDie)
        // The settlement as recorded, handed on without decoding it.
        if (known?.state === "settled") return Respond.text(200, Store.jsonOf(known))
        const call = `(${key.sessionID}, ${key.toolCallID})`
        if (known === undefined) return yield* Respond.notFound(`No call ${call} is recorded`)
        if (known.state === "started" && known.running) {
          return yield* Respond.notFound(`The call ${call} is still running; it has no settlement yet`)
        }
        if (known.state === "failed") {
          return yield* Respond.notFound(
            `The call ${call} failed operationally while it ran (a defect in its tool or in core; GET /v1/settlements ` +
              `lists its reason) and has no settlement; settle it again to get its interrupted settlement`,
          )
        }
        return yield* Respond.notFound(
          `The call ${call} began but was never settled (its core stopped, or could not reach its store, while it ran); settle it again to get its ` +
            `interrupted settlement`,
        )
      }),

    todos: (route) =>
      Effect.gen(function* () {
        const sessionID = yield* idOf("sessionID", param(route, "sessionID"))
        const todos = yield* route.served.todos(sessionID).pipe(Effect.orDie)
        return Respond.json(200, { sessionID, todos } satisfies Api.Todos)
      }),

    settlements: (route) =>
      Effect.gen(function* () {
        const query = new URL(route.request.url, "http://core").searchParams
        const sessionID = query.get("sessionID") ?? undefined
        // As the calls route refuses it: no call has an empty session id, so this asks for nothing meant.
        if (sessionID === "") return yield* Respond.badRequest("sessionID cannot be empty; leave it out to list every session")
        if (sessionID !== undefined) yield* idOf("sessionID", sessionID)
        const sinceText = query.get("since")
        let since: number | undefined
        if (sinceText !== null) {
          const parsed = Recorded.parseSince(sinceText, Date.now())
          if ("problem" in parsed) return yield* Respond.badRequest(`since ${parsed.problem}`)
          since = parsed.at
        }
        const limitText = query.get("limit") ?? String(Recorded.DEFAULT_LIMIT)
        const limit = Number(limitText)
        if (!/^\d+$/.test(limitText) || limit < 1 || limit > Recorded.MAX_LIMIT) {
          return yield* Respond.badRequest(`limit must be a whole number from 1 to ${Recorded.MAX_LIMIT}, not ${JSON.stringify(limitText)}`)
        }
        // The request's Location only: another's calls are never listed, whatever the query says.
        const listed = yield* sidecar.store
          .list({ location: route.directory, sessionID, since, limit })
          .pipe(Effect.mapError((error) => new Settler.OperationalError({ message: error.message, cause: error })))
        return Respond.json(200, listed.map(Recorded.entryOf))
      }),

    cancel: (route) =>
      Effect.gen(function* () {
        const ids = {
          sessionID: yield* idOf("sessionID", param(route, "sessionID")),
          toolCallID: yield* idOf("toolCallID", param(route, "toolCallID")),
        }
        if (!(yield* sidecar.calls.cancel({ ...ids, location: route.served.directory }))) {
          return yield* Respond.notFound(`No call (${ids.sessionID}, ${ids.toolCallID}) is running`)
        }
        return Respond.json(202, { ...ids, status: "cancelling" } satisfies Api.Cancelling)
      }),

    permissions: (route) => Effect.map(route.served.pending, (requests) => Respond.json(200, requests)),

    reply: (route) =>
      Effect.gen(function* () {
        const id = param(route, "id")
        const request = yield* Respond.body(route.request, Api.ReplyRequest)
        const reply: Permission.Reply =
          request.reply === "reject"
            ? request.message === undefined
              ? request.unattended === true
                ? { reply: "reject", unattended: true, ...(request.why === undefined ? {} : { why: request.why }) }
                : { reply: "reject" }
              : { reply: "reject", message: request.message }
            : { reply: request.reply }
        yield* route.served.reply(id, reply).pipe(
          Effect.catchTag("Permission.UnknownRequest", (error) => Effect.fail(Respond.notFound(error.message))),
        )
        return Respond.json(200, { id, reply: request.reply } satisfies Api.Replied)
      }),

    registerHostTools: (route) =>
      Effect.gen(function* () {
        const request = yield* Respond.body(route.request, Api.HostToolsRequest)
        const tools = yield* route.served.hostTools.register(request).pipe(
          Effect.catchTags({
            "HostTools.Invalid": (error) => Effect.fail(Respond.badRequest(error.message)),
            "HostTools.Taken": (error) => Effect.fail(new Respond.Problem({ status: 409, kind: "conflict", message: error.message })),
          }),
        )
        yield* route.served.publish({ event: "tools.changed", data: { reason: "tools", files: [] } })
        return Respond.json(200, tools)
      }),

    hostTools: (route) => Effect.sync(() => Respond.json(200, route.served.hostTools.list())),

    removeHostTool: (route) =>
      Effect.gen(function* () {
        const name = param(route, "name")
        yield* route.served.hostTools.remove(name).pipe(Effect.mapError((error) => Respond.notFound(error.message)))
        yield* route.served.publish({ event: "tools.changed", data: { reason: "tools", files: [] } })
        return Respond.json(200, { name, removed: true } satisfies Api.HostToolRemoved)
      }),

    hostCalls: (route) => Effect.sync(() => Respond.json(200, route.served.hostTools.pending())),

    answerHostCall: (route) =>
      Effect.gen(function* () {
        const id = param(route, "id")
        const request = yield* Respond.body(route.request, Api.HostCallResult)
        yield* route.served.hostTools.answer(id, request).pipe(
          Effect.catchTags({
            "HostTools.Invalid": (error) => Effect.fail(Respond.badRequest(error.message)),
            "HostTools.Unknown": (error) => Effect.fail(Respond.notFound(error.message)),
            "HostTools.Finished": (error) => Effect.fail(new Respond.Problem({ status: 409, kind: "conflict", message: error.message })),
          }),
        )
        return Respond.json(200, { id, status: "answered" } satisfies Api.HostCallAnswered)
      }),

    events: (route) =>
      Effect.gen(function* () {
        const subscription = yield* route.served.subscribe()
        const events = Stream.fromSubscription(subscription).pipe(Stream.map(Sse.encode))
        return Respond.events(Respond.live(events).pipe(Stream.interruptWhen(Deferred.await(sidecar.closing))))
      }),

    output: (route) =>
      Effect.gen(function* () {
        // `?part=structured`: the structured value a bounded settlement dropped, as JSON; else the text.
        const part = new URL(route.request.url, "http://core").searchParams.get("part") ?? "text"
        if (part !== "text" && part !== "structured") {
          return Respond.error(400, "bad_request", `part must be "text" or "structured", not ${JSON.stringify(part)}`)
        }
        const output = yield* sidecar.outputs
          .open(param(route, "id"), part)
          .pipe(
            Effect.mapError((error) =>
              error._tag === "ManagedOutputs.Unavailable"
                ? new Respond.Problem({ status: 500, kind: "operational", message: error.message })
                : Respond.notFound(error.message),
            ),
          )
        const file = output.content
        const requested = Respond.header(route.request, "range")
        const range = Range.resolve(requested, output.bytes, Respond.header(route.request, "if-range"))
        const headers = { "accept-ranges": "bytes", "cache-control": "no-store", "x-content-type-options": "nosniff" }
        const contentType = part === "structured" ? "application/json" : "text/plain; charset=utf-8"
        // A local file is sent as a file; an object of the store is streamed (a Blob of the store would be answered
        // with a redirect to the store), chunked: its length is known here, but Bun sends such a stream chunked.
        const body = (blob: Blob, start: number, length: number) =>
          output.path === undefined ? ManagedOutputs.exactly(blob.stream(), start, length) : blob
        switch (range._tag) {
          case "Whole":
            // Bun.serve applies a request's Range itself to a file answered with 200, by its own reading of the
            // header: a Range this module chose to ignore is answered with the whole content as a plain stream.
            return HttpServerResponseModule.raw(
              requested === undefined ? body(file, 0, output.bytes) : ManagedOutputs.exactly(file.stream(), 0, output.bytes),
              { status: 200, contentType, contentLength: output.bytes, headers },
            )
          case "Partial":
            return HttpServerResponseModule.raw(body(file.slice(range.start, range.end + 1), range.start, range.end - range.start + 1), {
              status: 206,
              contentType,
              contentLength: range.end - range.start + 1,
              headers: { ...headers, "content-range": `bytes ${range.start}-${range.end}/${output.bytes}` },
            })
          case "Unsatisfiable":
            // The header quoted where it is short (it may be kilobytes long): the reason says what it asks either way.
            return Respond.error(416, "bad_request", `The range ${requested!.length <= 100 ? `"${requested}" ` : ""}cannot be satisfied: ${range.reason}`, {
              "content-range": `bytes */${output.bytes}`,
            })
        }
      }),
  }
}
