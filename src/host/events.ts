export * as Events from "./events"

// What a served Location publishes: the shapes of its events (which the HTTP API streams as server-sent events and
// documents under the same names), its event bus, and the progress a call reports in JSON form. A slow reader
// loses the oldest events rather than growing the host's memory without bound.

import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import * as Schema from "effect/Schema"
import { Settlement as SettlementSchema } from "../contract/settlement"
import { HostTools } from "./host-tools"
import { Todos } from "../store/todos"

/** A settlement, as events carry it. */
export const Settlement = SettlementSchema.Info.annotate({ identifier: "Settlement" })

export const PermissionRequest = Schema.Struct({
  id: Schema.String,
  sessionID: Schema.String,
  toolCallID: Schema.String,
  action: Schema.String,
  resources: Schema.Array(Schema.String),
  save: Schema.Array(Schema.String).annotate({ description: 'The patterns an "always" reply saves' }),
  protected: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "Present when the resources are core's own configuration (what they are): only a person may approve it, " +
        "each time; an answerer without a person replies reject",
    }),
  ),
}).annotate({ identifier: "PermissionRequest" })
export type PermissionRequest = typeof PermissionRequest.Type

export const Progress = Schema.Struct({
  message: Schema.String,
  metadata: Schema.optionalKey(Schema.Record(Schema.String, Schema.Json)),
}).annotate({ identifier: "Progress" })
export type Progress = typeof Progress.Type

export const CallKey = { sessionID: Schema.String, toolCallID: Schema.String }

export const CallStarted = Schema.Struct({ ...CallKey, tool: Schema.String, turnID: Schema.String }).annotate({
  identifier: "CallStarted",
})
export const CallProgress = Schema.Struct({ ...CallKey, ...Progress.fields }).annotate({ identifier: "CallProgress" })
export const CallSettled = Schema.Struct({ ...CallKey, replayed: Schema.Boolean, settlement: Settlement }).annotate({
  identifier: "CallSettled",
})
export const CallFailed = Schema.Struct({
  ...CallKey,
  tool: Schema.String,
  message: Schema.String.annotate({ description: "What failed; the server log has the details" }),
}).annotate({
  identifier: "CallFailed",
  description:
    "The call ended without a settlement: core failed operationally (a tool that died or broke its contract, a " +
    "store that could not record). It may have taken effect; check before calling it again with a new call id.",
})
export const PermissionReplied = Schema.Struct({
  id: Schema.String,
  sessionID: Schema.String,
  reply: Schema.Literals(["once", "always", "reject"]),
}).annotate({ identifier: "PermissionReplied" })
export const ToolsChanged = Schema.Struct({
  reason: Schema.Literals(["tools", "config"]),
  files: Schema.Array(Schema.String).annotate({ description: "The files whose change was applied" }),
}).annotate({ identifier: "ToolsChanged", description: "Turns made before now may be stale (tools) or gone (config)" })
export const TodoUpdated = Schema.Struct({
  sessionID: Schema.String,
  todos: Schema.Array(Todos.Item).annotate({ description: "The session's whole list, as todowrite wrote it" }),
}).annotate({ identifier: "TodoUpdated", description: "A session's todo list was written (todowrite)" })
export const Diagnostic = Schema.Struct({ file: Schema.String, message: Schema.String }).annotate({
  identifier: "Diagnostic",
})

/** A call of a host tool waiting for the host's answer (POST /v1/host-calls/{id}/result). */
export const HostCall = HostTools.Call
export type HostCall = HostTools.Call

/** An event: its name and its data as JSON. */
export const event = <const Name extends string, S extends Schema.Top>(name: Name, data: S) =>
  Schema.Struct({
    event: Schema.Literal(name),
    data: Schema.fromJsonString(data as unknown as Schema.Codec<S["Type"], S["Encoded"]>),
  })

/**
 * `GET /v1/events`: what happens in the Location. Every `call.started` is followed by one `call.settled` or one
 * `call.failed`.
 */
export const ServerEvent = Schema.Union([
  event("call.started", CallStarted),
  event("call.progress", CallProgress),
  event("call.settled", CallSettled),
  event("call.failed", CallFailed),
  event("permission.asked", PermissionRequest),
  event("permission.replied", PermissionReplied),
  event("host_call", HostCall),
  event("tools.changed", ToolsChanged),
  event("todo.updated", TodoUpdated),
  event("diagnostic", Diagnostic),
])

export type Server = typeof ServerEvent.Type

/** The stream of one call: progress and asks as they come, then one settlement or one error. */
export type Call =
  | { readonly event: "progress"; readonly data: Progress }
  | { readonly event: "permission"; readonly data: PermissionRequest }
  | { readonly event: "host_call"; readonly data: HostTools.Call }
  | { readonly event: "settlement"; readonly data: typeof Settlement.Type }
  | { readonly event: "error"; readonly data: { readonly error: { readonly kind: string; readonly message: string } } }

/** Events buffered per reader before the oldest are dropped. */
export const BUFFER = 4096

export const bus = <A>(): Effect.Effect<PubSub.PubSub<A>> => PubSub.sliding<A>(BUFFER)

/**
 * Progress metadata as JSON: a tool may put anything in it, and what cannot be sent as JSON (a bigint, a cycle)
 * is left out rather than breaking the stream.
 */
export const progress = (update: {
  readonly message: string
  readonly metadata?: Readonly<Record<string, unknown>>
}): Progress => {
  if (update.metadata === undefined) return { message: update.message }
  try {
    return { message: update.message, metadata: JSON.parse(JSON.stringify(update.metadata)) }
  } catch {
    return { message: update.message }
  }
}
