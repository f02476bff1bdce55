export * as Respond from "./respond"

// How the sidecar answers: JSON bodies, the `{ error: { kind, message } }` of every refusal (DESIGN §8), server-
// sent event streams, and request bodies read under a size limit and decoded with their schema, every problem
// reported with what to fix. A client's mistake is a 4xx with a message, never a 500.

import * as ByteSize from "effect/ByteSize"
import * as Effect from "effect/Effect"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import * as HttpServerError from "effect/http/HttpServerError"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Stream from "effect/Stream"
import { Json } from "../config/json"
import { Nesting } from "../contract/nesting"
import { Api } from "./api"
import { Sse } from "./sse"

/** Request bodies larger than this are refused (413): by their declared length before anything is read. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024

/** A refusal of a request, answered with `status` and an error body. */
export class Problem extends Schema.TaggedError<Problem>()("Respond.Problem", {
  status: Schema.Number,
  kind: Api.ErrorKind,
  message: Schema.String,
}) {}

export const badRequest = (message: string) => new Problem({ status: 400, kind: "bad_request", message })

/** The refusals of a body that is no JSON text (not UTF-8, unreadable): JSON-RPC's parse error, to `/mcp`. */
const unparsable = new WeakSet<Problem>()

/** A 400 refusing a request body whose bytes are no JSON text (see `rpcRefusal`). */
export const unreadable = (message: string): Problem => {
  const problem = badRequest(message)
  unparsable.add(problem)
  return problem
}

/**
 * A refusal of a request to `/mcp`, as JSON-RPC words it (an MCP client reads no other shape): a body that is no JSON
 * text (not UTF-8, unreadable) is a parse error, anything else (too large, a refused X-Core-Location) an invalid
 * request.
 */
export const rpcRefusal = (refusal: Problem): string =>
  JSON.stringify({ jsonrpc: "2.0", error: { code: unparsable.has(refusal) ? -32700 : -32600, message: refusal.message }, id: null })
export const notFound = (message: string) => new Problem({ status: 404, kind: "not_found", message })

/**
 * A request header, read from the web Request itself: effect/http would first copy every header into a record,
 * which costs more than the rest of a small request's handling.
 */
export const header = (request: HttpServerRequest.HttpServerRequest, name: string): string | undefined => {
  const source = request.source
  if (!(source instanceof Request)) return request.headers[name]
  // Bun makes a new Headers object on every `headers` access.
  let headers = headersOf.get(source)
  if (headers === undefined) headersOf.set(source, (headers = source.headers))
  return headers.get(name) ?? undefined
}

const headersOf = new WeakMap<Request, Headers>()

/**
 * The read deadline, in seconds (kept by the connection guard, ./guard): a connection must deliver a request's
 * headers and body within it, or it is closed; it is checked every second, and trickling bytes does not extend it.
 * A request that passed the Host and token checks and whose body is read is released from it (Http's `release`):
 * calls, event streams and downloads may then stay quiet as long as they need, and the connection stays open until
 * its next request. So a process without the token holds a connection for seconds only.
 */
export const READ_DEADLINE_S = 10

/**
 * Responses are for this client alone, and are what they say they are. `Keep-Alive` tells a client how long an idle
 * connection lasts, so it stops reusing one before the read deadline closes it.
 */
export const COMMON_HEADERS = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "keep-alive": `timeout=${READ_DEADLINE_S}`,
} as const

export const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  text(status, JSON.stringify(body), headers)

/** A JSON body already serialized. */
export const text = (status: number, body: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(body, {
    status,
    contentType: "application/json",
    headers: { ...COMMON_HEADERS, ...headers },
  })

export const error = (status: number, kind: Api.ErrorKind, message: string, headers: Record<string, string> = {}) =>
  json(status, { error: { kind, message } } satisfies Api.ErrorBody, headers)

export const problem = (refusal: Problem) => error(refusal.status, refusal.kind, refusal.message)

/** A server-sent event stream of encoded events. */
export const events = (body: Stream.Stream<string>, headers: Record<string, string> = {}) =>
  HttpServerResponse.stream(Stream.encodeText(body), {
    contentType: "text/event-stream",
    headers: { ...COMMON_HEADERS, "cache-control": "no-cache, no-store", "x-accel-buffering": "no", ...headers },
  })

/** A stream that starts with the connected comment, then `body`, with keep-alive comments while it is idle. */
export const live = (body: Stream.Stream<string>) =>
  Stream.concat(
    Stream.succeed(Sse.CONNECTED),
    Stream.merge(body, Stream.tick(Sse.KEEP_ALIVE_MS).pipe(Stream.drop(1), Stream.as(Sse.KEEP_ALIVE))),
  )

export const tooLarge = new Problem({
  status: 413,
  kind: "payload_too_large",
  message: `The request body is larger than ${MAX_BODY_BYTES} bytes (10 MiB); send a smaller one`,
})

/** The request's declared body length (`Content-Length`); NaN when it has none (a chunked body) or it is not a number. */
const declaredLength = (request: HttpServerRequest.HttpServerRequest): number => {
  const declared = header(request, "content-length")
  return declared === undefined ? Number.NaN : Number(declared)
}

/** Whether the request declares a body over the limit: refused before routing, whether or not the route reads it. */
export const declaresTooLarge = (request: HttpServerRequest.HttpServerRequest): boolean =>
  declaredLength(request) > MAX_BODY_BYTES

const issueFormatter = SchemaIssue.makeFormatterStandardSchemaV1()
const DECODE_OPTIONS = { errors: "all", onExcessProperty: "error" } as const

/** The most issues of a body described; the rest are counted. */
const MAX_ISSUES = 20
/** The most characters of an issue's path (its keys, the sender's text) said. */
const MAX_PATH_CHARS = 200

/**
 * A body's issues, each by its path, MAX_ISSUES at most: a body of 850,000 unknown keys was answered with a 32 MB
 * error naming each of them.
 */
const describe = (issue: SchemaIssue.Issue): string => {
  const issues = issueFormatter(issue).issues
  const described = issues.slice(0, MAX_ISSUES).map((entry) => {
    const whole = entry.path === undefined || entry.path.length === 0 ? "(body)" : entry.path.map(String).join(".")
    const path = whole.length > MAX_PATH_CHARS ? `${whole.slice(0, MAX_PATH_CHARS)}…` : whole
    return `${path}: ${entry.message}`
  })
  if (issues.length > MAX_ISSUES) described.push(`… and ${issues.length - MAX_ISSUES} more`)
  return described.join("; ")
}

const found = (value: unknown): string =>
  Array.isArray(value) ? "an array" : value === null ? "null" : `a ${typeof value}`

const UTF8 = new TextDecoder("utf-8", { fatal: true })

/**
 * A body that is not UTF-8: read as text, each of its other bytes would be U+FFFD, so two different ids would be one
 * call (the second answered the first's settlement) and an input would reach its tool as other text than was sent.
 */
export const notUtf8 = unreadable(
  "The request body is not valid UTF-8: send JSON text encoded as UTF-8 (bytes that are not would be read as U+FFFD, making different ids and inputs the same)",
)

/** A body's bytes as text, or undefined when they are not UTF-8 (see notUtf8). */
export const utf8 = (bytes: Uint8Array): string | undefined => {
  try {
    return UTF8.decode(bytes)
  } catch {
    return undefined
  }
}

/** Bodies already read, by request: the edge reads a body once its request is trusted, the handler decodes it. */
const bodies = new WeakMap<object, string>()

/**
 * The request's body as text, read once under the size limit: too large → 413, unreadable → 400. A declared length
 * within the limit is what the body holds (the server enforces it): read whole. Without one (a chunked body), it is
 * read counting, and refused once past the limit.
 */
export const readText = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<string, Problem> =>
  Effect.gen(function* () {
    const known = bodies.get(request.source as object)
    if (known !== undefined) return known
    const length = declaredLength(request)
    if (length > MAX_BODY_BYTES) return yield* tooLarge
    const read: Effect.Effect<ArrayBuffer | Uint8Array, HttpServerError.HttpServerError> =
      length <= MAX_BODY_BYTES
        ? Effect.tryPromise({
            try: () => (request.source as Request).bytes(),
            catch: (cause) =>
              new HttpServerError.HttpServerError({ reason: new HttpServerError.RequestParseError({ request, cause }) }),
          })
        : request.arrayBuffer.pipe(Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES)))
    const bytes = yield* read.pipe(
      Effect.catchTag("HttpServerError", (cause) =>
        cause.reason._tag === "RequestParseError" && cause.reason.reason === "BodyTooLarge"
          ? Effect.fail(tooLarge)
          : Effect.fail(unreadable(`The request body could not be read: ${cause.message}`)),
      ),
    )
    const raw = utf8(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes))
    if (raw === undefined) return yield* notUtf8
    bodies.set(request.source as object, raw)
    return raw
  })

/**
 * A JSON body's text decoded with `schema`. An empty body counts as `{}` when `emptyIsObject`. Not JSON, nested
 * deeper than Json.MAX_DEPTH, or not what the schema wants → 400, saying where and what was expected; a string
 * holding a NUL character → 400 (`invalid_input` when it is in a call's `input`).
 */
export const decode = <S extends Schema.Codec<unknown, unknown>>(
  raw: string,
  schema: S,
  options: {
    readonly emptyIsObject?: boolean
    /**
     * What `schema` decodes, found without it where it can be (the frequent well-formed body): undefined leaves the
     * value to `schema`, which says what is wrong.
     */
    readonly plain?: (value: object) => S["Type"] | undefined
  } = {},
): { readonly ok: true; readonly value: S["Type"] } | { readonly ok: false; readonly problem: Problem } => {
  let value: unknown = {}
  if (raw.trim() !== "" || options.emptyIsObject !== true) {
    const parsed = Json.parseStrict(raw)
    if (!parsed.ok) return { ok: false, problem: badRequest(`The request body is not valid JSON: ${parsed.problem.message}`) }
    value = parsed.value
  }
  const bad = Json.findBadValue(value)
  if (bad !== undefined) {
    // In a call's `input` it is the model's input that no tool can take; anywhere else, the request's mistake.
    const kind = bad.path[0] === "input" ? "invalid_input" : "bad_request"
    return { ok: false, problem: new Problem({ status: 400, kind, message: `The request body is invalid: ${Json.describeBadValue(bad)}` }) }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, problem: badRequest(`The request body must be a JSON object, not ${found(value)}`) }
  }
  const plain = options.plain?.(value)
  if (plain !== undefined) return { ok: true, value: plain }
  const decoded = Schema.decodeUnknownExit(schema)(value, Nesting.describing(value, DECODE_OPTIONS))
  if (decoded._tag === "Success") return { ok: true, value: decoded.value as S["Type"] }
  const issue = decoded.cause.reasons.find((reason) => reason._tag === "Fail")
  const detail = issue !== undefined && Schema.isSchemaError(issue.error) ? describe(issue.error.issue) : "invalid"
  return { ok: false, problem: badRequest(`The request body is invalid: ${detail}`) }
}

/** The request's JSON body, read (readText: too large → 413, unreadable → 400) and decoded with `schema` (decode). */
export const body = <S extends Schema.Codec<unknown, unknown>>(
  request: HttpServerRequest.HttpServerRequest,
  schema: S,
  options: { readonly emptyIsObject?: boolean } = {},
): Effect.Effect<S["Type"], Problem> =>
  Effect.flatMap(readText(request), (raw) => {
    const decoded = decode(raw, schema, options)
    return decoded.ok ? Effect.succeed(decoded.value) : Effect.fail(decoded.problem)
  })
