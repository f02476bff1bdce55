export * as Api from "./api"

// The HTTP sidecar's contract (DESIGN §8) as data: one Effect schema per request body, response body and event,
// and one endpoint declaration per route. The router serves exactly these endpoints and the OpenAPI 3.1 document
// is derived from them, so the documentation cannot drift from what is served. No handling happens here.

import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import packageJson from "../../package.json" with { type: "json" }
import { Explain } from "../builtin/explain"
import { CallKey } from "../contract/call-key"
import { Events } from "../host/events"
import { HostTools } from "../host/host-tools"
import { Recorded } from "../host/recorded"
import { Plugin } from "../author/plugin"
import { Provider } from "../provider/provider"
import { Definition as ToolDefinition } from "../tool/definition"

// Errors

export const ErrorKind = Schema.Literals([
  "bad_request",
  "invalid_input",
  "unauthorized",
  "forbidden",
  "not_found",
  "method_not_allowed",
  "conflict",
  "payload_too_large",
  "model_compatibility",
  "operational",
]).annotate({
  description:
    "operational is core's own failure (500); every other kind is a problem with the request, answered with its own " +
    "status; conflict (409) is an answer to a delegated call that is no longer waiting, or a host tool's name the " +
    "Location's own tools hold; invalid_input (400) is a call whose input no tool can take (a string holding a NUL character or half of a character): nothing " +
    "ran and nothing was recorded; model_compatibility (400) is a turn asked for a provider that cannot take some " +
    "tool's schema: the message names each tool, the construct and the provider",
})
export type ErrorKind = typeof ErrorKind.Type

export const ErrorBody = Schema.Struct({
  error: Schema.Struct({ kind: ErrorKind, message: Schema.String }),
}).annotate({ identifier: "Error", description: "What went wrong and what to do about it" })
export type ErrorBody = typeof ErrorBody.Type

const BadRequest = ErrorBody.pipe(HttpApiSchema.status(400))
const Unauthorized = ErrorBody.pipe(HttpApiSchema.status(401))
const Forbidden = ErrorBody.pipe(HttpApiSchema.status(403))
const NotFound = ErrorBody.pipe(HttpApiSchema.status(404))
const Conflict = ErrorBody.pipe(HttpApiSchema.status(409))
const MethodNotAllowed = ErrorBody.pipe(HttpApiSchema.status(405))
const TooLarge = ErrorBody.pipe(HttpApiSchema.status(413))
const RangeNotSatisfiable = ErrorBody.pipe(HttpApiSchema.status(416))
const Operational = ErrorBody.pipe(HttpApiSchema.status(500))

/**
 * Every route: a Host that is not the server's (403), another method on its path (405), a body over 10 MiB (413),
 * core's own failure (500).
 */
const EVERY = [Forbidden, MethodNotAllowed, TooLarge, Operational] as const

/**
 * Every route but health, besides: a bad `X-Core-Location` (400), a missing or wrong token (401), one outside the roots
 * or no longer leading where it first led (403).
 */
const GUARDED = [...EVERY, BadRequest, Unauthorized] as const

/** The header naming another Location, honoured by every route but health. */
const LOCATION_HEADER = {
  "x-core-location": Schema.optionalKey(
    Schema.String.annotate({
      description:
        "An absolute directory to act on instead of the serve's --location; it must be a root given with " +
        "--location or --allow-root, or under one, and lead to the directory it led to when first served (403 once it " +
        "leads elsewhere: moved, or replaced by a link). Send the same value with every request of a turn.",
    }),
  ),
}

// Bodies

/**
 * An id: a non-empty string of whole characters (a lone surrogate would be stored as another call's id) with no NUL
 * (which not every store can keep), and not `.` or `..` (which no route's path can name).
 */
const EXPECTED_ID = {
  step: 'a string other than "." and ".." (a URL path reads them as steps)',
  nul: "a string with no NUL character (U+0000)",
  surrogate: "a string of well-formed Unicode, with no lone surrogate",
  long: `a string of at most ${CallKey.MAX_PATH_CHARS} characters escaped for a URL path`,
} as const

const Id = Schema.NonEmptyString.check(
  Schema.makeFilter(
    (id: string) => {
      const flaw = CallKey.flawOf(id)
      return flaw === undefined ? undefined : EXPECTED_ID[flaw]
    },
    { expected: `a string of well-formed Unicode with no NUL character, other than "." and "..", of at most ${CallKey.MAX_PATH_CHARS} characters escaped for a URL path` },
  ),
)

export const Health = Schema.Struct({ ok: Schema.Literal(true), version: Schema.String }).annotate({ identifier: "Health" })

export const ProviderName = Provider.Name.annotate({
  identifier: "Provider",
  // Said as the CLI says it: the identifier alone made the refusal "Expected Provider".
  message: `Expected one of ${Provider.NAMES.join(", ")}`,
  description:
    "A provider mapping (docs/providers.md): definitions in that provider's tool shape and schema dialect, and each " +
    "settlement with that provider's tool-result block",
})

export const TurnRequest = Schema.Struct({
  agent: Schema.optionalKey(
    Schema.NonEmptyString.annotate({
      description: "The agent whose rules filter the catalog and apply to its calls (default build)",
    }),
  ),
  provider: Schema.optionalKey(ProviderName),
}).annotate({ identifier: "TurnRequest" })
export type TurnRequest = typeof TurnRequest.Type

export const Definition = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  inputSchema: Schema.Record(Schema.String, Schema.Json).annotate({ description: "JSON Schema (2020-12) of the input" }),
  outputSchema: Schema.Record(Schema.String, Schema.Json).annotate({ description: "JSON Schema (2020-12) of the output" }),
  annotations: Schema.optionalKey(
    ToolDefinition.Annotations.annotate({
      identifier: "Annotations",
      description:
        "What the tool declares about its effects (absent when it declares nothing): hints for the host, never " +
        "authorization",
    }),
  ),
}).annotate({ identifier: "Definition" })

export const Turn = Schema.Struct({
  turnID: Schema.String,
  definitions: Schema.Array(Definition),
  provider: Schema.optionalKey(ProviderName),
  tools: Schema.optionalKey(
    Schema.Array(Schema.Json).annotate({
      description:
        "With provider: one tool per definition, in the same order, in that provider's shape, ready for its request " +
        "(openai, openai-strict: Responses API function tools; anthropic: Messages API tools; gemini: function " +
        "declarations, sent as tools: [{ functionDeclarations }])",
    }),
  ),
  warnings: Schema.optionalKey(
    Schema.Literal(true).annotate({
      description:
        "Present once this Location (or the application's tools) reported a load problem since the serve started " +
        "(the serve's stderr and diagnostic events say which), even if fixed since",
    }),
  ),
}).annotate({
  identifier: "Turn",
  description: "The catalog captured for one provider turn; settle the turn's calls through its turnID",
})
export type Turn = typeof Turn.Type

export const CallRequest = Schema.Struct({
  sessionID: Id,
  assistantMessageID: Id,
  toolCallID: Id,
  name: Schema.String,
  input: Schema.Json.annotate({ description: "The tool's input as the model produced it" }),
}).annotate({ identifier: "CallRequest" })
export type CallRequest = typeof CallRequest.Type

// The shapes of what a Location publishes are the host's (../host/events); the API names them as its own.
export const Settlement = Events.Settlement

/** A call's answer: the settlement, and for a turn prepared for a provider, that provider's tool-result block. */
export const CallSettlement = Schema.Struct({
  ...Settlement.fields,
  result: Schema.optionalKey(
    Schema.Json.annotate({
      description:
        "With a turn prepared for a provider: the settlement as that provider's tool-result block answering the " +
        "call (openai, openai-strict: a function_call_output item; anthropic: a tool_result content block; gemini: " +
        "a functionResponse part)",
    }),
  ),
}).annotate({ identifier: "CallSettlement" })
export type CallSettlement = typeof CallSettlement.Type

export const CheckRequest = Schema.Struct({
  name: Schema.String,
  input: Schema.Json.annotate({ description: "The tool's input as the model produced it" }),
  agent: Schema.optionalKey(
    Schema.NonEmptyString.annotate({ description: "The agent whose rules decide (default: the turn's agent)" }),
  ),
}).annotate({ identifier: "CheckRequest" })
export type CheckRequest = typeof CheckRequest.Type

export const Check = Schema.Struct({
  ...Explain.Explanation.fields,
  hooks: Schema.optionalKey(
    Schema.Array(
      Schema.Struct({
        plugin: Schema.String,
        hooks: Schema.Array(Schema.Literals(Plugin.HOOKS)),
      }),
    ).annotate({
      description: "The plugins whose hooks the call meets after the permission checks, in installation order; absent when none",
    }),
  ),
}).annotate({
  identifier: "Check",
  description: "What settling the call would meet, found without running or asking anything",
})
export type Check = typeof Check.Type

export const RecordedCall = Recorded.Entry

export const Cancelling = Schema.Struct({
  sessionID: Schema.String,
  toolCallID: Schema.String,
  status: Schema.Literal("cancelling"),
}).annotate({ identifier: "Cancelling" })
export type Cancelling = typeof Cancelling.Type

export const PermissionRequest = Events.PermissionRequest
export type PermissionRequest = Events.PermissionRequest

export const ReplyRequest = Schema.Struct({
  reply: Schema.Literals(["once", "always", "reject"]),
  message: Schema.optionalKey(
    Schema.String.annotate({
      description: "With reject: feedback the model reads (the call fails with it); without, the call is declined",
    }),
  ),
  unattended: Schema.optionalKey(
    Schema.Boolean.annotate({
      description:
        "With reject and no message: nobody could be asked (the model is told so, with why); for a host with no person to ask",
    }),
  ),
  why: Schema.optionalKey(
    Schema.String.annotate({ description: "With unattended: why nobody could be asked, naming the host" }),
  ),
}).annotate({ identifier: "ReplyRequest" })
export type ReplyRequest = typeof ReplyRequest.Type

export const Replied = Schema.Struct({ id: Schema.String, reply: Schema.Literals(["once", "always", "reject"]) }).annotate({
  identifier: "Replied",
})
export type Replied = typeof Replied.Type

export const HostToolDefinition = HostTools.Definition
export const HostToolsRequest = HostTools.Registration
export const HostCall = HostTools.Call
export const HostCallResult = HostTools.Answer

export const HostToolRemoved = Schema.Struct({ name: Schema.String, removed: Schema.Literal(true) }).annotate({
  identifier: "HostToolRemoved",
})
export type HostToolRemoved = typeof HostToolRemoved.Type

export const HostCallAnswered = Schema.Struct({ id: Schema.String, status: Schema.Literal("answered") }).annotate({
  identifier: "HostCallAnswered",
})
export type HostCallAnswered = typeof HostCallAnswered.Type

// Events

export const Progress = Events.Progress
export type Progress = Events.Progress
export const ServerEvent = Events.ServerEvent
export const Todos = Schema.Struct({
  sessionID: Schema.String,
  todos: Events.TodoUpdated.fields.todos,
}).annotate({ identifier: "Todos", description: "A session's todo list in this Location" })
export type Todos = typeof Todos.Type

/** The stream of one call: progress and asks as they come, then one settlement (or one error). */
export const CallEvent = Schema.Union([
  Events.event("progress", Progress),
  Events.event("permission", PermissionRequest),
  Events.event("host_call", HostCall),
  Events.event("settlement", CallSettlement),
  Events.event("error", ErrorBody),
])

// Endpoints

const docs = (summary: string, description?: string) =>
  OpenApi.annotations(description === undefined ? { summary } : { summary, description })

export const ENDPOINTS = {
  health: HttpApiEndpoint.get("health", "/v1/health", { success: Health, error: EVERY }).annotateMerge(
    docs("Liveness; needs no token (HEAD answers the same without a body)"),
  ),
  openapi: HttpApiEndpoint.get("openapi", "/v1/openapi.json", {
    headers: LOCATION_HEADER,
    success: Schema.Record(Schema.String, Schema.Json).annotate({ identifier: "OpenApiDocument" }),
    error: GUARDED,
  }).annotateMerge(docs("This document")),
  createTurn: HttpApiEndpoint.post("createTurn", "/v1/turns", {
    headers: LOCATION_HEADER,
    payload: TurnRequest,
    success: Turn,
    error: GUARDED,
  }).annotateMerge(
      docs(
        "Materialize the catalog for this Location and agent",
        "An empty body means the default agent. With `provider`, the answer also holds the definitions as that " +
          "provider's tools, the turn's calls answer with that provider's tool-result block beside the settlement, " +
          "and for openai-strict a null argument for a property the tool declares optional counts as left out; a " +
          "tool the provider cannot take fails the whole turn with 400 model_compatibility. A turn expires after 30 minutes unused, when 1,000 newer turns exist " +
          "in its Location, or when the Location's core.json changes; its calls then answer 404 and the host " +
          "materializes again.",
      ),
    ),
  settle: HttpApiEndpoint.post("settle", "/v1/turns/:turnID/calls", {
    params: { turnID: Schema.String },
    headers: LOCATION_HEADER,
    payload: CallRequest,
    success: CallSettlement,
    error: [...GUARDED, NotFound],
  }).annotateMerge(
    docs(
      "Settle one call through a turn",
      "Answers the settlement JSON. A call is identified by (sessionID, toolCallID) within its Location: settling it " +
        "again replays the record with `X-Core-Replayed: true` and runs nothing; a duplicate of a running call waits " +
        "for its result (not marked replayed: it is that call's fresh settlement); asked by another agent or under " +
        "another tool name, it is an error of kind `conflict` that runs nothing and shows nothing of the record. The call runs to its settlement even if the " +
        "client goes away. Sent with `Accept: text/event-stream`, this route answers as settleStream does.",
    ),
  ),
  settleStream: HttpApiEndpoint.post("settleStream", "/v1/turns/:turnID/calls/stream", {
    params: { turnID: Schema.String },
    headers: LOCATION_HEADER,
    payload: CallRequest,
    success: HttpApiSchema.StreamSse({ events: CallEvent }),
    error: [...GUARDED, NotFound],
  }).annotateMerge(
    docs(
      "Settle one call through a turn, as server-sent events",
      "The same call as settle (same identity, replay and joining), answered as events: progress and permission as " +
        "they come (the call's asks already pending first), then one settlement, or one error when core fails " +
        "operationally; then the stream ends. A replayed call sends only its settlement, with `X-Core-Replayed: true`.",
    ),
  ),
  check: HttpApiEndpoint.post("check", "/v1/turns/:turnID/check", {
    params: { turnID: Schema.String },
    headers: LOCATION_HEADER,
    payload: CheckRequest,
    success: Check,
    error: [...GUARDED, NotFound],
  }).annotateMerge(
    docs(
      "Explain the permission decision for a call through a turn, running nothing",
      "What `core check` says: each check the call would make, in order, with the decision per resource, the rule " +
        "that decided it and what an always reply would save. Nothing runs, nothing is asked and nothing is " +
        "recorded. An input that does not decode, or a path that cannot be used, is a 400; an unknown or expired " +
        "turn, or a name the turn does not advertise, a 404.",
    ),
  ),
  settlement: HttpApiEndpoint.get("settlement", "/v1/settlements/:sessionID/:toolCallID", {
    params: { sessionID: Schema.String, toolCallID: Schema.String },
    headers: LOCATION_HEADER,
    success: Settlement,
    error: [...GUARDED, NotFound],
  }).annotateMerge(docs("The recorded settlement of a call")),
  todos: HttpApiEndpoint.get("todos", "/v1/sessions/:sessionID/todos", {
    params: { sessionID: Schema.String },
    headers: LOCATION_HEADER,
    success: Todos,
    error: GUARDED,
  }).annotateMerge(
    docs(
      "A session's todo list",
      "The list the session's last todowrite call wrote in this Location, in order; an empty list when it wrote " +
        "none. Each write is also announced as a todo.updated event.",
    ),
  ),
  settlements: HttpApiEndpoint.get("settlements", "/v1/settlements", {
    query: {
      sessionID: Schema.optionalKey(Schema.String.annotate({ description: "Only this session's calls" })),
      since: Schema.optionalKey(
        Schema.String.annotate({
          description: "Only calls received since: an ISO time, or a duration back from now (90s, 10m, 2h, 7d)",
        }),
      ),
      limit: Schema.optionalKey(
        Schema.String.annotate({
          description: `At most the newest N calls, 1-${Recorded.MAX_LIMIT} (default ${Recorded.DEFAULT_LIMIT})`,
        }),
      ),
    },
    headers: LOCATION_HEADER,
    success: Schema.Array(RecordedCall),
    error: GUARDED,
  }).annotateMerge(
    docs(
      "The calls recorded in this Location, oldest first (what `core log --json` prints)",
      "Only the request's Location's calls, never another's. Inputs are kept up to 8 KiB of JSON (longer ones are " +
        "cut: inputTruncated).",
    ),
  ),
  cancel: HttpApiEndpoint.post("cancel", "/v1/calls/:sessionID/:toolCallID/cancel", {
    params: { sessionID: Schema.String, toolCallID: Schema.String },
    headers: LOCATION_HEADER,
    success: Cancelling.pipe(HttpApiSchema.status(202)),
    error: [...GUARDED, NotFound],
  }).annotateMerge(
    docs(
      "Interrupt a running call",
      "The call's processes are killed and it settles as cancelled; its waiting clients receive that settlement.",
    ),
  ),
  permissions: HttpApiEndpoint.get("permissions", "/v1/permissions", {
    headers: LOCATION_HEADER,
    success: Schema.Array(PermissionRequest),
    error: GUARDED,
  }).annotateMerge(docs("Pending permission asks of this Location")),
  reply: HttpApiEndpoint.post("reply", "/v1/permissions/:id/reply", {
    params: { id: Schema.String },
    headers: LOCATION_HEADER,
    payload: ReplyRequest,
    success: Replied,
    error: [...GUARDED, NotFound],
  }).annotateMerge(
    docs(
      "Answer a permission ask",
      "once allows this request; always also saves its patterns for the Location; reject with a message fails the " +
        "call with that message for the model, and without one declines it (and the session's other pending asks).",
    ),
  ),
  registerHostTools: HttpApiEndpoint.post("registerHostTools", "/v1/host-tools", {
    headers: LOCATION_HEADER,
    payload: HostToolsRequest,
    success: Schema.Array(HostToolDefinition),
    error: [...GUARDED, Conflict],
  }).annotateMerge(
    docs(
      "Register tools the host performs itself",
      "`enable` names shipped tools (question, task); `tools` are the host's own definitions. Every definition is " +
        "checked first (a bad name or schema is a 400 naming it, a name the Location's own tools hold a 409) and " +
        "then all are registered at once, each replacing a host tool of the same name (turns made before see it as " +
        "stale). They live until removed, the Location is let go or the serve stops. Answers every host tool of " +
        "the Location.",
    ),
  ),
  hostTools: HttpApiEndpoint.get("hostTools", "/v1/host-tools", {
    headers: LOCATION_HEADER,
    success: Schema.Array(HostToolDefinition),
    error: GUARDED,
  }).annotateMerge(docs("The host tools of this Location")),
  removeHostTool: HttpApiEndpoint.delete("removeHostTool", "/v1/host-tools/:name", {
    params: { name: Schema.String },
    headers: LOCATION_HEADER,
    success: HostToolRemoved,
    error: [...GUARDED, NotFound],
  }).annotateMerge(
    docs("Remove a host tool", "Turns made before see it as stale; its calls still waiting go on waiting for their answer."),
  ),
  hostCalls: HttpApiEndpoint.get("hostCalls", "/v1/host-calls", {
    headers: LOCATION_HEADER,
    success: Schema.Array(HostCall),
    error: GUARDED,
  }).annotateMerge(
    docs("Delegated calls waiting for the host's answer", "What host_call events announced and nobody answered yet, oldest first."),
  ),
  answerHostCall: HttpApiEndpoint.post("answerHostCall", "/v1/host-calls/:id/result", {
    params: { id: Schema.String },
    headers: LOCATION_HEADER,
    payload: HostCallResult,
    success: HostCallAnswered,
    error: [...GUARDED, NotFound, Conflict],
  }).annotateMerge(
    docs(
      "Answer a delegated call",
      "`output` (checked against the tool's output schema: a mismatch is a 400 and the call goes on waiting) or " +
        "`error.message` (the call fails with it, for the model to read). An id no call had is a 404; a call " +
        "already answered, cancelled or timed out is a 409.",
    ),
  ),
  events: HttpApiEndpoint.get("events", "/v1/events", {
    headers: LOCATION_HEADER,
    success: HttpApiSchema.StreamSse({ events: ServerEvent }),
    error: GUARDED,
  }).annotateMerge(
    docs(
      "Server-sent events of this Location",
      "Every call.started is followed by exactly one call.settled (any settlement, replayed or not) or call.failed " +
        "(the call ended operationally, with its message). A reader slower than the events loses the oldest.",
    ),
  ),
  output: HttpApiEndpoint.get("output", "/v1/outputs/:id", {
    params: { id: Schema.String },
    query: {
      part: Schema.optionalKey(
        Schema.Literals(["text", "structured"]).annotate({
          description:
            "`text` (the default): the full text the preview left out (for an output that kept no text, its " +
            "structured JSON). `structured`: the full structured value the settlement dropped, as JSON (404 when " +
            "the settlement kept it inline)",
        }),
      ),
    },
    headers: {
      ...LOCATION_HEADER,
      range: Schema.optionalKey(
        Schema.String.annotate({
          description:
            "One byte range: `bytes=FIRST-LAST`, `bytes=FIRST-` or `bytes=-SUFFIX` (digits, no spaces inside); any " +
            "other value is ignored and the whole content is served",
        }),
      ),
    },
    success: [
      HttpApiSchema.StreamUint8Array({ contentType: "text/plain; charset=utf-8" }),
      // The bytes of a range, which may cut a character in two.
      Schema.Uint8Array.annotate({ description: "The bytes of the range" }).pipe(
        HttpApiSchema.asUint8Array({ contentType: "text/plain; charset=utf-8" }),
        HttpApiSchema.status(206),
      ),
    ],
    error: [...GUARDED, NotFound, RangeNotSatisfiable],
  }).annotateMerge(
    docs(
      "A managed output's full content: its text, or with `?part=structured` its structured value",
      "With a single `Range: bytes=...`: 206 Partial Content with `Content-Range`, or 416 (with `Content-Range: " +
        "bytes */SIZE`) when the range selects no byte (it starts past the end, asks for an empty suffix, or the " +
        "output is empty).",
    ),
  ),
} as const

export type Name = keyof typeof ENDPOINTS

/** Routes that need no token. */
export const PUBLIC: ReadonlySet<Name> = new Set(["health"])

/**
 * The routes that read only what is recorded of a Location: answered from its directory, without loading it, so a
 * Location whose core.json is broken can still be looked into (as `core log` can).
 */
export const DIRECTORY_ONLY: ReadonlySet<Name> = new Set(["settlement", "settlements"])

const group = HttpApiGroup.make("core").add(
  ENDPOINTS.health,
  ENDPOINTS.openapi,
  ENDPOINTS.createTurn,
  ENDPOINTS.settle,
  ENDPOINTS.settleStream,
  ENDPOINTS.check,
  ENDPOINTS.settlement,
  ENDPOINTS.todos,
  ENDPOINTS.settlements,
  ENDPOINTS.cancel,
  ENDPOINTS.permissions,
  ENDPOINTS.reply,
  ENDPOINTS.registerHostTools,
  ENDPOINTS.hostTools,
  ENDPOINTS.removeHostTool,
  ENDPOINTS.hostCalls,
  ENDPOINTS.answerHostCall,
  ENDPOINTS.events,
  ENDPOINTS.output,
)

export const api = HttpApi.make("core")
  .add(group)
  .annotate(OpenApi.Title, "core sidecar")
  .annotate(OpenApi.Version, packageJson.version)
  .annotate(
    OpenApi.Description,
    "Settle AI agents' tool calls over HTTP. Every route but /v1/health needs `Authorization: Bearer <token>`; " +
      "`X-Core-Location` names another allowed Location. Errors are `{ error: { kind, message } }`.",
  )
