export * as Mcp from "./mcp"

// One MCP session serving a Location's tools, whatever carries it (stdio for `core mcp`, streamable HTTP at `/mcp`):
// `tools/list` is the agent's catalog now, `tools/call` settles through the host's running calls (permissions,
// bounding, managed outputs, at most once) against the catalog current at the call, a reload announces
// `notifications/tools/list_changed`, `resources/read` opens managed outputs, and the Location's skills are its
// prompts (`prompts/list`, `prompts/get`: the skill's instructions as one user message; `list_changed` when they
// change). It answers the permission asks of its own calls only. No transport here, and no wording of results
// (./mapping).

import { existsSync } from "node:fs"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  type CallToolRequest,
  type CallToolResult,
  CallToolRequestSchema,
  ErrorCode,
  type JSONRPCMessage,
  GetPromptRequestSchema,
  InitializeRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  type ProgressToken,
  ReadResourceRequestSchema,
  type ServerNotification,
  type ServerRequest,
} from "@modelcontextprotocol/sdk/types.js"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Tracer from "effect/Tracer"
import * as PubSub from "effect/PubSub"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { CallKey } from "../contract/call-key"
import { Calls } from "../host/calls"
import { BadValue } from "../host/bad-value"
import type { Events } from "../host/events"
import type { Served } from "../host/served"
import { ManagedOutputs } from "../output/managed-outputs"
import { Permission } from "../permission/permission"
import type { Settlement } from "../contract/settlement"
import { Terminal } from "../contract/terminal"
import type { Settler } from "../settlement/settler"
import { Mapping } from "./mapping"
import { McpDelegated } from "./mcp-delegated"
import { McpStdio } from "./mcp-stdio"

/** MCP's code for a resource that does not exist (the protocol's own, beside JSON-RPC's). */
export const RESOURCE_NOT_FOUND = -32002

/** How long a permission ask waits for the client's user before it is declined. */
const ASK_TIMEOUT_MS = 24 * 60 * 60 * 1000

/** What a session runs on: the served Location, the host's running calls, the managed outputs. */
export interface Host {
  readonly served: Served.Interface
  readonly calls: Calls.Interface
  readonly outputs: ManagedOutputs.Interface
}

export interface Options {
  /** The agent whose rules filter the catalog and authorize each call. */
  readonly agent: string
  /** The session id of calls whose `_meta` names none: one per MCP session. */
  readonly sessionID: string
  readonly name: string
  readonly version: string
  /** Writes a note for the person running core (stderr), never to the client. */
  readonly note: (text: string) => void
  /**
   * Whether the client is the Location's one host (`core mcp`): then it is offered the shipped host tools it can
   * perform (`question` with form elicitation, `task` with sampling). Never on a Location other hosts share.
   */
  readonly hostTools?: boolean
}

export interface Session {
  /** The MCP server, connected to a transport with `connect`. */
  readonly server: Server
  /**
   * Connects the server to `transport`, with the session's own answer to a plain `tools/call` (answerDirectly)
   * in front of the SDK's dispatch.
   */
  readonly connect: (transport: Transport) => Promise<void>
  /**
   * Cancels the calls this session started that still run and waits until each is settled and recorded, then
   * closes the server (and its transport).
   */
  readonly close: Effect.Effect<void>
  /** Whether a call of this session is still being waited on. */
  readonly busy: () => boolean
  /**
   * With a tracer that keeps spans, the requests of `message` (one, or a batch) are traced under `span`, the HTTP
   * request that carried them, rather than under the one that opened the session; `release` forgets those not taken.
   */
  readonly carried: (message: unknown, span: Tracer.AnySpan) => () => void
  /**
   * The answer to `message` when it is a plain `tools/call` the session answers itself, without the transport
   * (undefined once settled for a cancelled one, which is never answered, as the SDK answers none); undefined for
   * any other message.
   */
  readonly answer: (message: unknown) => Promise<JSONRPCMessage | undefined> | undefined
  /**
   * Whether answering `message` may send the client anything before its result: a call's progress (it gave a
   * progress token), its permission asks (the client can ask its user), the host calls it delegates. Only such a
   * request needs an event stream.
   */
  readonly mayStream: (message: unknown) => boolean
  /**
   * The id of a request in `message` (one, or a batch) that is still being answered in this session, or that the
   * batch gives twice, if one is: a client reusing it, which MCP forbids, would have its answers mixed up over HTTP.
   */
  readonly inUse: (message: unknown) => string | number | undefined
  /**
   * The error answering `message`, a request whose params its method's schema refuses (a progress token of the
   * wrong type, say), named by its id; undefined for any other message.
   */
  readonly invalid: (message: unknown) => JSONRPCMessage | undefined
  /**
   * Serves `host` from now on: requests that came before the first one wait for it; a later one (another Location)
   * is announced with `notifications/tools/list_changed`, and calls already running finish where they started.
   */
  readonly attach: (host: Host) => Effect.Effect<void>
}

/**
 * The id `_meta[key]` names, undefined when it names none (absent, or null). Anything else must be a string that is
 * not blank: a host's id ignored (a number, an array) would settle the call under another id, and a retry with it
 * would run the tool again.
 */
const metaString = (meta: Record<string, unknown> | undefined, key: string): string | undefined => {
  const value = meta?.[key]
  if (value === undefined || value === null) return undefined
  if (typeof value === "string" && value.trim() !== "") return value
  const found = typeof value === "string" ? "a blank string" : Array.isArray(value) ? "an array" : `a ${typeof value}`
  throw new ProtocolError(
    ErrorCode.InvalidParams,
    `Invalid params for tools/call: params._meta.${key} must be a non-empty string (the host's id of the call), not ${found}; send the id as a string, or leave it out`,
  )
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>
/** What answering a call needs of its request: its id, its abort, and (with a progress token) its notifications. */
type CallExtra = Pick<Extra, "requestId" | "signal"> & Partial<Pick<Extra, "sendNotification">>

/** A string that reads as a JSON number: as a JSON-RPC id it is another id than that number. */
const NUMERIC = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/

/**
 * The call id of a request id: the id as it is, but a string that reads as a number, which is quoted (JSON-RPC has
 * `1` and `"1"` as two ids: one must not join or replay the other's call), and one with a lone surrogate or a NUL,
 * which is quoted as JSON escapes it (ids the stores can keep: see CallKey.malformed).
 */
const callIdOf = (requestId: string | number): string =>
  typeof requestId === "string" && (requestId === "" || NUMERIC.test(requestId) || !CallKey.keepable(requestId))
    ? JSON.stringify(requestId)
    : String(requestId)

/** A schema as read here: whether a value passes, and each problem's place and words. */
interface RequestSchema {
  readonly safeParse: (value: unknown) => {
    readonly success: boolean
    readonly error?: { readonly issues: ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }> }
  }
}

/** What the SDK checks a request of each method this session answers against before its handler runs. */
const REQUESTS: ReadonlyMap<string, RequestSchema> = new Map<string, RequestSchema>([
  ["initialize", InitializeRequestSchema],
  ["tools/call", CallToolRequestSchema],
  ["tools/list", ListToolsRequestSchema],
  ["prompts/get", GetPromptRequestSchema],
  ["prompts/list", ListPromptsRequestSchema],
  ["resources/read", ReadResourceRequestSchema],
  ["resources/list", ListResourcesRequestSchema],
])

/**
 * A request whose params its method's schema refuses, answered as invalid params, in one line naming each problem's
 * place: the SDK answered it as an internal error (-32603) whose message was the schema's issues as JSON.
 */
const invalidParams = (message: unknown): JSONRPCMessage | undefined => {
  if (!isRecord(message) || typeof message.method !== "string") return undefined
  const id = message.id
  if (typeof id !== "string" && typeof id !== "number") return undefined
  const parsed = REQUESTS.get(message.method)?.safeParse(message)
  if (parsed === undefined || parsed.success) return undefined
  const problems = (parsed.error?.issues ?? []).map((issue) => `${issue.path.map(String).join(".")}: ${issue.message}`)
  return {
    jsonrpc: "2.0",
    id,
    error: { code: ErrorCode.InvalidParams, message: `Invalid params for ${message.method}: ${problems.join("; ") || "refused"}` },
  }
}

/**
 * A request refused with a JSON-RPC error of `code`, its message as the client reads it. The SDK's McpError puts
 * "MCP error N: " in front of its message, which the SDK passes on as it is and the client's McpError puts in front
 * again ("MCP error -32602: MCP error -32602: Unknown prompt"): this is read by the SDK as one (code, message, data).
 */
class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message)
  }
}

/** The call a `tools/call` asks for, with the ids its `_meta` gives (the session's own where it gives none). */
const callOf = (params: CallToolRequest["params"], options: Options, requestId: string | number): Settler.Call => {
  const meta = params._meta as Record<string, unknown> | undefined
  const call = {
    sessionID: metaString(meta, "sessionID") ?? options.sessionID,
    agent: options.agent,
    assistantMessageID: metaString(meta, "assistantMessageID") ?? `msg_${crypto.randomUUID()}`,
    toolCallID: metaString(meta, "toolCallID") ?? callIdOf(requestId),
    name: params.name,
    input: params.arguments ?? {},
  }
  // `_meta` ids of a lone surrogate would be kept as another call's: refused, as the HTTP API refuses them.
  const malformed = CallKey.malformed(call)
  if (malformed !== undefined) throw new ProtocolError(ErrorCode.InvalidParams, malformed)
  return call
}

/** The calls a session waits on, by key, with the host and turn each settles through. */
interface Running {
  readonly call: Settler.Call
  readonly host: Host
  readonly turn: Served.Turn
  readonly requestId: string | number
}

/** What a session's handlers share. */
interface State {
  readonly options: Options
  readonly server: Server
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
  /**
   * Runs `effect` for the request `requestId`: under the span of the HTTP request that carried it (see `carried`,
   * taken once), else as `run` does (stdio, where the session's context is the command's).
   */
  readonly runFor: <A, E>(requestId: string | number, effect: Effect.Effect<A, E>) => Promise<A>
  /** Runs `effect` in the session's context: its exit now when it ends without waiting, else once it ends. */
  readonly now: <A, E>(effect: Effect.Effect<A, E>) => Exit.Exit<A, E> | Promise<Exit.Exit<A, E>>
  /** Whether a tracer that keeps spans is installed. */
  readonly traced: boolean
  /** With a tracer that keeps spans, each request is a server span (its call's settle spans below it). */
  readonly span: <A, E>(name: string, effect: Effect.Effect<A, E>, attributes?: Record<string, unknown>) => Effect.Effect<A, E>
  /** The host served now, if there is one yet. */
  readonly host: () => Host | undefined
  /** The host served now, once there is one. */
  readonly current: () => Promise<Host>
  readonly running: Map<string, Running>
  /** The `tools/call` requests being answered. */
  readonly waiting: Set<Promise<unknown>>
  /** The shipped host tools registered in each served Location for this client. */
  readonly delegating: WeakMap<Served.Interface, ReadonlyArray<string>>
}

/**
 * Registers in `served`, once, the shipped host tools the client can perform; a Location tool of such a name stays
 * the Location's.
 */
const offerHostTools = (state: State, served: Served.Interface): Promise<void> | undefined => {
  if (state.options.hostTools !== true || state.delegating.has(served)) return undefined
  const names = McpDelegated.offered(state.server.getClientCapabilities())
  state.delegating.set(served, names)
  if (names.length === 0) return undefined
  return state.run(
    Effect.forEach(names, (name) =>
      served.hostTools.register({ enable: [name] }).pipe(
        Effect.catchTag("HostTools.Taken", (error) => Effect.sync(() => state.options.note(`core: ${error.message}\n`))),
      ),
    ).pipe(Effect.orDie, Effect.asVoid),
  )
}

/** The skills offered as prompts: the Location's, but those a rule of the agent denies. */
const promptsOf = (options: Options, served: Served.Interface) =>
  served
    .skills()
    .skills()
    .filter((skill) => !served.skillDenied(options.agent, skill.name))
    .map((skill) => ({ name: skill.name, description: skill.description }))

/** `prompts/list` and `prompts/get`: the Location's skills. */
const servePrompts = (state: State) => {
  const { server, options } = state
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: promptsOf(options, (await state.current()).served) }))

  server.setRequestHandler(GetPromptRequestSchema, async (request) => {
    const { served } = await state.current()
    const { name } = request.params
    const prompt = promptsOf(options, served).find((candidate) => candidate.name === name)
    if (prompt === undefined) {
      const known = promptsOf(options, served).map((candidate) => candidate.name)
      throw new ProtocolError(
        ErrorCode.InvalidParams,
        `Unknown prompt "${name.slice(0, 100)}"; ${known.length === 0 ? "this Location has no skills" : `the prompts are: ${known.join(", ")}`}`,
      )
    }
    const instructions = await state.run(Effect.result(served.skills().instructions(name)))
    if (instructions._tag === "Failure") throw new ProtocolError(ErrorCode.InvalidParams, instructions.failure.message)
    return {
      description: prompt.description,
      messages: [{ role: "user" as const, content: { type: "text" as const, text: instructions.success } }],
    }
  })
}

/**
 * `resources/read` of managed outputs. None are listed: they belong to calls, not to the session, and an id is only
 * ever learnt from a result.
 */
const serveResources = (state: State) => {
  state.server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: [] }))

  state.server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params
    const named = Mapping.parseOutputUri(uri)
    if (named === undefined) {
      throw new ProtocolError(RESOURCE_NOT_FOUND, `Unknown resource ${uri}: core serves managed outputs as ${Mapping.OUTPUTS_PREFIX}ID`, { uri })
    }
    const { outputs } = await state.current()
    const opened = await state.run(Effect.result(outputs.open(named.id, named.part)))
    if (opened._tag === "Failure") {
      // An object store that cannot be reached is core's failure, not an unknown resource.
      const code = opened.failure._tag === "ManagedOutputs.Unavailable" ? ErrorCode.InternalError : RESOURCE_NOT_FOUND
      throw new ProtocolError(code, opened.failure.message, { uri })
    }
    // An object of the store is read as exactly its recorded bytes, each within a deadline: never short as if whole,
    // never a request left unanswered.
    const text = await new Response(ManagedOutputs.body(opened.success)).text().catch((cause: unknown) => {
      throw new ProtocolError(ErrorCode.InternalError, `Could not read ${uri}: ${cause instanceof Error ? cause.message : String(cause)}`, { uri })
    })
    return { contents: [{ uri, mimeType: named.part === "structured" ? "application/json" : "text/plain", text }] }
  })
}

const kept = (outputs: ManagedOutputs.Interface) => (id: string): Mapping.Kept => {
  const paths = outputs.paths(id)
  return { text: existsSync(paths.text), structured: existsSync(paths.structured) || existsSync(paths.quoted) }
}

/**
 * Waits for the outcome of `call`'s `entry`; the request's abort cancels the call meanwhile, where the request
 * started it. One that joined a call another request started stops waiting: the call goes on, its owner's.
 */
const outcome = (state: State, serving: Host, call: Settler.Call, { entry, joined }: Calls.Started, signal: AbortSignal) => {
  if (joined) {
    const aborted = Effect.callback<never>((resume) => {
      const stop = () => resume(Effect.interrupt)
      if (signal.aborted) stop()
      else signal.addEventListener("abort", stop, { once: true })
      return Effect.sync(() => signal.removeEventListener("abort", stop))
    })
    return Effect.raceFirst(Deferred.await(entry.done), aborted)
  }
  return Effect.suspend(() => {
    const cancel = () => void state.run(serving.calls.cancel({ ...call, location: serving.served.directory }))
    // A request cancelled before its call started is cancelled now.
    if (signal.aborted) cancel()
    else signal.addEventListener("abort", cancel, { once: true })
    return Deferred.await(entry.done).pipe(Effect.ensuring(Effect.sync(() => signal.removeEventListener("abort", cancel))))
  })
}

/**
 * `call` counted as one of the session's running calls (whose asks and delegated calls the session answers) while
 * `started` says this request started it; a joiner leaves the entry as it was. Answers how to stop counting it.
 */
const counting = (state: State, key: string, running: Running) => {
  const before = state.running.get(key)
  state.running.set(key, running)
  return {
    started: ({ joined }: Calls.Started) => {
      if (!joined || state.running.get(key) !== running) return
      if (before === undefined) state.running.delete(key)
      else state.running.set(key, before)
    },
    stop: () => {
      if (state.running.get(key) === running) state.running.delete(key)
    },
  }
}

/** A call's progress notifications waiting to be written, at most: past it the newest replaces the last. */
const WAITING_NOTIFICATIONS = 256

/** Settles `call` through `turn` and waits for its outcome, with no more than that when nothing is forwarded. */
const settle = (
  state: State,
  serving: Host,
  turn: Served.Turn,
  call: Settler.Call,
  extra: CallExtra,
  progressToken: ProgressToken | undefined,
  onStarted: (started: Calls.Started) => void,
) => {
  const sendNotification = extra.sendNotification
  if (progressToken === undefined || sendNotification === undefined) {
    return Effect.flatMap(serving.calls.start(serving.served, turn, call), (started) => {
      onStarted(started)
      return outcome(state, serving, call, started, extra.signal)
    })
  }
  let progress = 0
  // One notification is written at a time (the SDK's send is asynchronous, and waits for a full pipe to drain), the
  // others wait in order; past WAITING_NOTIFICATIONS waiting, the newest replaces the last: a client that does not
  // read holds a bounded number of a call's notifications, not every one the call reported (as /mcp's event streams
  // do, ./mcp-events). A client that reads sees every one.
  let writing: Promise<void> | undefined
  const waiting: Array<{ readonly progressToken: ProgressToken; readonly progress: number; readonly message: string }> = []
  const write = () => {
    const params = writing === undefined ? waiting.shift() : undefined
    if (params === undefined) return
    writing = sendNotification({ method: "notifications/progress", params }).then(
      () => undefined,
      () => undefined,
    ).then(() => {
      writing = undefined
      write()
    })
  }
  /** Settles once every notification reported so far is written (or replaced by one that is). */
  const written = async () => {
    while (writing !== undefined) await writing
  }
  const listener: Calls.Listener = {
    recorded: () => {},
    event: (event) => {
      if (event.event !== "progress") return
      const params = { progressToken, progress: ++progress, message: event.data.message }
      if (waiting.length < WAITING_NOTIFICATIONS) waiting.push(params)
      else waiting[waiting.length - 1] = params
      write()
    },
  }
  return Effect.gen(function* () {
    const listening = yield* serving.calls.startListening(serving.served, turn, call, listener)
    onStarted(listening)
    const settled = yield* outcome(state, serving, call, listening, extra.signal).pipe(Effect.ensuring(Effect.sync(listening.stop)))
    // Progress reported before the outcome goes out before the result: the last notification is written before the
    // result is.
    yield* Effect.promise(written)
    return settled
  })
}

/** A call whose input holds a string no tool takes, answered as `core exec` answers it: nothing runs or is recorded. */
const refusedText = (call: Settler.Call): CallToolResult | undefined => {
  const refused = BadValue.refusal(call.name, call.toolCallID, call.input)
  return refused === undefined ? undefined : Mapping.resultOf(refused, false)
}

/** Answers a `tools/call`: the call settled against the catalog current when it arrives, as MCP words it. */
const callTool = (state: State, serving: Host, call: Settler.Call, extra: CallExtra, progressToken: ProgressToken | undefined) => {
  const key = CallKey.of(serving.served.directory, call)
  const refused = refusedText(call)
  if (refused !== undefined) return Effect.succeed(refused)
  return Effect.gen(function* () {
    // For this call alone: a built-in's call never waits on an MCP server.
    const turn = yield* serving.served.capture(state.options.agent, { call: call.name })
    const counted = counting(state, key, { call, host: serving, turn, requestId: extra.requestId })
    const { settlement } = yield* settle(state, serving, turn, call, extra, progressToken, counted.started).pipe(
      Effect.ensuring(Effect.sync(counted.stop)),
    )
    return resultOf(serving, turn, call.name, settlement)
  })
}

/** A settlement of `tool` as an MCP tool result: structured where the turn's definition has an object output schema. */
const resultOf = (serving: Host, turn: Served.Turn, tool: string, settlement: Settlement.Info): CallToolResult => {
  const definition = turn.materialization.definitions.find((candidate) => candidate.name === tool)
  const structured = definition !== undefined && Mapping.isObjectSchema(definition.outputSchema)
  return Mapping.resultOf(settlement, structured, kept(serving.outputs))
}

/** `tools/list` (the agent's catalog now) and `tools/call` (settled through the host's running calls). */
const serveTools = (state: State) => {
  const { server, options } = state
  server.setRequestHandler(ListToolsRequestSchema, async (_, extra) => {
    const { served } = await state.current()
    await offerHostTools(state, served)
    const turn = await state.runFor(extra.requestId, state.span("mcp tools/list", served.capture(options.agent)))
    return { tools: turn.materialization.definitions.map(Mapping.toolOf) }
  })

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const serving = state.host() ?? (await state.current())
    const offering = offerHostTools(state, serving.served)
    if (offering !== undefined) await offering
    return answerCall(state, serving, request.params, extra)
  })
}

/** The result of a `tools/call` on `serving`; an operational failure is an InternalError. */
const answerCall = async (state: State, serving: Host, params: CallToolRequest["params"], extra: CallExtra) => {
  const call = callOf(params, state.options, extra.requestId)
  const settling = state.runFor(
    extra.requestId,
    state.span("mcp tools/call", callTool(state, serving, call, extra, params._meta?.progressToken), {
      "core.tool": call.name,
      "core.session": call.sessionID,
      "core.call": call.toolCallID,
    }),
  )
  state.waiting.add(settling)
  try {
    return await settling
  } catch (error) {
    throw new ProtocolError(ErrorCode.InternalError, messageOf(error))
  } finally {
    state.waiting.delete(settling)
  }
}

/** The message of an operational failure, as the client reads it in an InternalError. */
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/**
 * A plain call's answer, untraced, without a fiber of its own: its turn captured and its call started at once (as
 * serve's JSON calls are; only a tool of an MCP server not yet connected waits to be captured), its outcome read
 * as soon as it is settled and recorded, without a fiber or a promise when it settled at once. `cancel` is told
 * how to cancel the call once it is started.
 */
const answerUntraced = (
  state: State,
  serving: Host,
  params: CallToolRequest["params"],
  requestId: string | number,
  cancelled: Cancel,
): CallToolResult | Promise<CallToolResult> => {
  const call = callOf(params, state.options, requestId)
  const refused = refusedText(call)
  if (refused !== undefined) return refused
  const key = CallKey.of(serving.served.directory, call)
  const start = (captured: Exit.Exit<Served.Turn, unknown>): CallToolResult | Promise<CallToolResult> => {
    if (Exit.isFailure(captured)) throw new ProtocolError(ErrorCode.InternalError, messageOf(Cause.squash(captured.cause)))
    const turn = captured.value
    const counted = counting(state, key, { call, host: serving, turn, requestId })
    const settled = (exit: Calls.Outcome): CallToolResult => {
      counted.stop()
      if (Exit.isFailure(exit)) throw new ProtocolError(ErrorCode.InternalError, messageOf(Cause.squash(exit.cause)))
      return resultOf(serving, turn, call.name, exit.value.settlement)
    }
    let started: Calls.Started
    try {
      started = Effect.runSync(serving.calls.start(serving.served, turn, call))
    } catch (error) {
      counted.stop()
      throw new ProtocolError(ErrorCode.InternalError, messageOf(error))
    }
    counted.started(started)
    const { entry, joined } = started
    if (entry.outcome !== undefined) return settled(entry.outcome)
    if (!joined) {
      cancelled.onCancel(() => void state.run(serving.calls.cancel({ ...call, location: serving.served.directory })))
      return Calls.outcome(entry).then(settled)
    }
    // Joined: a cancel stops this request's wait (nothing is answered to it); the call goes on, its owner's.
    return new Promise<CallToolResult>((resolve, reject) => {
      cancelled.onCancel(() => reject(new ProtocolError(ErrorCode.RequestTimeout, "cancelled")))
      Calls.outcome(entry).then((exit) => {
        try {
          resolve(settled(exit))
        } catch (error) {
          reject(error)
        }
      })
    })
  }
  const captured = state.now(serving.served.capture(state.options.agent, { call: call.name }))
  return captured instanceof Promise ? captured.then(start) : start(captured)
}

/**
 * A request's cancellation as the SDK's table of requests being handled holds it (the SDK calls `abort` on
 * `notifications/cancelled` and when the transport closes): no AbortSignal, which costs a call more than its own
 * settle does when nothing listens.
 */
class Cancel {
  aborted = false
  private cancel: (() => void) | undefined
  abort(): void {
    if (this.aborted) return
    this.aborted = true
    this.cancel?.()
  }
  /** Cancels with `cancel` once aborted: now if it already is. */
  onCancel(cancel: () => void): void {
    if (this.aborted) cancel()
    else this.cancel = cancel
  }
}

/**
 * Puts `cancel` in the table of requests being handled (abortersOf) under `id`; answers how to take it out once the
 * request is answered. Beside a request of that id still being handled (a client reusing the id, whose request then
 * joins the running call), the one entry cancels both: `notifications/cancelled` for the id cancels the call, as it
 * would have before the second request came.
 */
const handling = (aborters: Map<string | number, Pick<AbortController, "abort">>, id: string | number, cancel: Pick<AbortController, "abort">) => {
  const previous = aborters.get(id)
  if (previous === undefined) {
    aborters.set(id, cancel)
    return () => {
      if (aborters.get(id) === cancel) aborters.delete(id)
    }
  }
  const both = {
    abort: () => {
      previous.abort()
      cancel.abort()
    },
  }
  aborters.set(id, both)
  return () => {
    if (aborters.get(id) === both) aborters.set(id, previous)
  }
}

/** The Protocol's table of the requests being handled, which `notifications/cancelled` aborts (the SDK's version is pinned). */
const abortersOf = (server: Server): Map<string | number, Pick<AbortController, "abort">> =>
  (server as unknown as { readonly _requestHandlerAbortControllers: Map<string | number, Pick<AbortController, "abort">> })
    ._requestHandlerAbortControllers

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The params of `message` when it is a `tools/call` this session answers itself: well formed as the SDK's schema
 * wants it, with nothing to send the client before its result (no progress token, no task), on a Location already
 * served, whose host tools were already offered. Anything else is the SDK's to dispatch (and to refuse).
 */
const plainCall = (state: State, message: unknown): CallToolRequest["params"] | undefined => {
  if (!isRecord(message) || message.method !== "tools/call" || message.jsonrpc !== "2.0") return undefined
  // JSON-RPC's request, with nothing more (the SDK refuses a member it does not know).
  for (const key in message) if (key !== "jsonrpc" && key !== "id" && key !== "method" && key !== "params") return undefined
  const id = message.id
  if (typeof id !== "string" && !(typeof id === "number" && Number.isSafeInteger(id))) return undefined
  const params = message.params
  if (!isRecord(params) || typeof params.name !== "string" || params.task !== undefined) return undefined
  if (params.arguments !== undefined && !isRecord(params.arguments)) return undefined
  const meta = params._meta
  if (meta !== undefined) {
    if (!isRecord(meta)) return undefined
    // Only the ids core reads: a progress token, a related task or anything else is the SDK's to handle.
    for (const key in meta) {
      if ((key !== "sessionID" && key !== "assistantMessageID" && key !== "toolCallID") || typeof meta[key] !== "string") {
        return undefined
      }
    }
  }
  const serving = state.host()
  if (serving === undefined || (state.options.hostTools === true && !state.delegating.has(serving.served))) return undefined
  return params as CallToolRequest["params"]
}

/**
 * Answers a plain `tools/call` (plainCall) as the SDK's dispatch would, without its schema checks of the request and
 * of the result (core words the result itself, ./mapping): the request is cancelled by `notifications/cancelled`
 * through the SDK's own table, a cancelled request is answered with nothing, a failure with an InternalError.
 * `deliver` gets the answer. Answers whether it took the message.
 */
const answerDirectly = (state: State, message: unknown, deliver: (answer: JSONRPCMessage | undefined) => void): boolean => {
  const params = plainCall(state, message)
  if (params === undefined) return false
  const id = (message as { readonly id: string | number }).id
  const aborters = abortersOf(state.server)
  // A cancelled request is answered nothing: `deliver` is told so, to end what carries the answer (an HTTP POST).
  const send = (cancelled: { readonly aborted: boolean }, answer: JSONRPCMessage) => deliver(cancelled.aborted ? undefined : answer)
  const failed = (cancelled: { readonly aborted: boolean }, error: unknown) => {
    const failure = error as { readonly code?: unknown; readonly message?: unknown }
    const code = typeof failure.code === "number" && Number.isSafeInteger(failure.code) ? failure.code : ErrorCode.InternalError
    // An McpError's message carries its code in front ("MCP error -32603: …"): the client's McpError adds it again.
    const text = typeof failure.message === "string" ? failure.message.replace(/^MCP error -?\d+: /, "") : "Internal error"
    send(cancelled, { jsonrpc: "2.0", id, error: { code, message: text } })
  }
  if (!state.traced) {
    const cancelled = new Cancel()
    const done = handling(aborters, id, cancelled)
    let answered: CallToolResult | Promise<CallToolResult>
    try {
      answered = answerUntraced(state, state.host()!, params, id, cancelled)
    } catch (error) {
      done()
      failed(cancelled, error)
      return true
    }
    if (!(answered instanceof Promise)) {
      done()
      send(cancelled, { jsonrpc: "2.0", id, result: answered })
      return true
    }
    // Waited on by `close`, which lets every call be settled and recorded first.
    const waiting = answered.then(
      (result) => send(cancelled, { jsonrpc: "2.0", id, result }),
      (error: unknown) => failed(cancelled, error),
    )
    state.waiting.add(waiting)
    void waiting.finally(() => {
      state.waiting.delete(waiting)
      done()
    })
    return true
  }
  const aborter = new AbortController()
  const done = handling(aborters, id, aborter)
  answerCall(state, state.host()!, params, { requestId: id, signal: aborter.signal }).then(
    (result) => send(aborter.signal, { jsonrpc: "2.0", id, result }),
    (error: unknown) => failed(aborter.signal, error),
  ).finally(done)
  return true
}

/**
 * A permission ask of one of the session's calls: a client that can ask its user (form elicitation) is asked;
 * otherwise nobody can answer, and the ask is declined as unattended (a change to core's own configuration is
 * refused as needing a person).
 */
const answer = async (state: State, request: Permission.Request, relatedRequestId: string | number): Promise<Permission.Reply> => {
  const { server, options } = state
  if (server.getClientCapabilities()?.elicitation?.form === undefined) {
    options.note(`core: declined ${Mapping.describe(request)}: the MCP client cannot ask its user; allow it in core.json to let MCP clients run it\n`)
    return request.protected === undefined
      ? { reply: "reject", unattended: true, why: "the MCP client cannot ask its user" }
      : Permission.personRequired(request)
  }
  try {
    // A person may take their time: the request's own default timeout (a minute) would decline for them.
    // Sent along the call's own request, so a streamable HTTP client gets it on that call's stream.
    const result = await server.elicitInput(Mapping.askForm(request), { timeout: ASK_TIMEOUT_MS, relatedRequestId })
    if (result.action !== "accept") return { reply: "reject" }
    const reply = result.content?.reply
    if (reply === "once" || reply === "always") return { reply }
    const message = typeof result.content?.message === "string" ? result.content.message.trim() : ""
    return message === "" ? { reply: "reject" } : { reply: "reject", message }
  } catch (error) {
    options.note(`core: declined ${Mapping.describe(request)}: asking the MCP client failed: ${Terminal.block(error instanceof Error ? error.message : String(error))}\n`)
    return { reply: "reject", unattended: true, why: "asking the MCP client's user failed" }
  }
}

/** Answers an ask the Location announced, when it is one of this session's calls. */
const onAsked = (state: State, location: string, asked: Events.PermissionRequest) =>
  Effect.gen(function* () {
    const mine = state.running.get(CallKey.of(location, asked))
    if (mine === undefined) return
    // The announced id is the request's own id and its generation's serial; the full request (what it protects)
    // is the generation's.
    const { generation } = mine.turn
    const suffix = `.${generation.serial}`
    if (!asked.id.endsWith(suffix)) return
    const id = asked.id.slice(0, -suffix.length)
    const request = (yield* generation.permission.pending).find((candidate) => candidate.id === id)
    if (request === undefined) return
    const reply = yield* Effect.promise(() => answer(state, request, mine.requestId))
    // The request may have gone meanwhile (its call was cancelled, or another answerer was first).
    yield* mine.host.served.reply(asked.id, reply).pipe(Effect.ignore)
  })

/** Performs a delegated call of this session's own through the client. */
const onHostCall = (state: State, location: string, hostCall: Events.HostCall) =>
  Effect.gen(function* () {
    const mine = state.running.get(CallKey.of(location, hostCall))
    if (mine === undefined || !(state.delegating.get(mine.host.served) ?? []).includes(hostCall.name)) return
    const performed = yield* Effect.promise(() => McpDelegated.perform(state.server, hostCall, mine.requestId, state.options.note))
    // The call may have gone meanwhile (cancelled, or timed out).
    yield* mine.host.served.hostTools.answer(hostCall.id, performed).pipe(Effect.ignore)
  })

/**
 * Whether `message` is `notifications/cancelled`, its request cancelled now, in the order messages come: the SDK's
 * own handler runs a microtask later, when a request that came after the notification may hold the id (a client
 * reusing it at once), and cancelled that one too, which was then never answered.
 */
const cancelled = (state: State, message: unknown): boolean => {
  if (!isRecord(message) || message.method !== "notifications/cancelled" || "id" in message) return false
  const params = message.params
  const id = isRecord(params) ? params.requestId : undefined
  if (typeof id === "string" || typeof id === "number") abortersOf(state.server).get(id)?.abort(isRecord(params) ? params.reason : undefined)
  return true
}

/**
 * The refusal of a request whose id is still being answered, when the SDK would dispatch it (a plain call joins the
 * running one instead: answerDirectly): the SDK's table holds one request per id, so this one's would take the
 * first's place, and a cancel of the id would no longer reach the first call.
 */
const reused = (state: State, message: unknown): JSONRPCMessage | undefined => {
  if (!isRecord(message) || typeof message.method !== "string") return undefined
  const id = message.id
  if ((typeof id !== "string" && typeof id !== "number") || !abortersOf(state.server).has(id)) return undefined
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: ErrorCode.InvalidRequest,
      message: `Invalid request: the request id ${JSON.stringify(id)} is still being answered (MCP forbids reusing one); send a new id.`,
    },
  }
}

/** Whether answering `message` may send the client anything before its result (Session.mayStream). */
const mayStream = (state: State, message: unknown): boolean => {
  // A message that is not a request is refused by the SDK, with JSON.
  if (!isRecord(message) || message.method !== "tools/call") return false
  if (typeof message.id !== "string" && typeof message.id !== "number") return false
  const params = message.params
  if (isRecord(params) && isRecord(params._meta) && params._meta.progressToken !== undefined) return true
  const capabilities = state.server.getClientCapabilities()
  return capabilities?.elicitation?.form !== undefined || (state.options.hostTools === true && McpDelegated.offered(capabilities).length > 0)
}

/**
 * A session for the life of the Scope (closing it closes the session), on `host`, or on the first host `attach`
 * gives when `host` is undefined (a Location known only once the client has said its roots).
 */
export const session = (initial: Host | undefined, options: Options): Effect.Effect<Session, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const traced = (yield* Effect.tracer) !== Tracer.nativeTracer
    const context = yield* Effect.context<never>()
    /** The spans of the HTTP requests carrying messages not yet answered, by the message's id (traced only). */
    const requests = new Map<string | number, Tracer.AnySpan>()
    const run = Effect.runPromiseWith(context)
    let host: Host | undefined
    let attached: () => void = () => undefined
    const ready = new Promise<void>((resolve) => {
      attached = resolve
    })
    const state: State = {
      options,
      server: new Server(
        { name: options.name, version: options.version },
        { capabilities: { tools: { listChanged: true }, resources: {}, prompts: { listChanged: true } } },
      ),
      run,
      runFor: (requestId, effect) => {
        const span = requests.get(requestId)
        if (span === undefined) return run(effect)
        requests.delete(requestId)
        return Effect.runPromiseWith(Context.add(context, Tracer.ParentSpan, span))(effect)
      },
      now: (effect) => {
        const fiber = Effect.runForkWith(context)(effect)
        return fiber.pollUnsafe() ?? new Promise((resolve) => fiber.addObserver(resolve))
      },
      traced,
      span: (name, effect, attributes = {}) => (traced ? Effect.withSpan(effect, name, { kind: "server", attributes }) : effect),
      host: () => host,
      current: async () => {
        if (host === undefined) await ready
        return host!
      },
      running: new Map(),
      waiting: new Set(),
      delegating: new WeakMap(),
    }
    const { server, running, waiting } = state
    servePrompts(state)
    serveResources(state)
    serveTools(state)

    /** The prompts last listed as changed, so a reload that left them as they were announces nothing for them. */
    let promptsSent: string | undefined
    const listChanged = Effect.promise(async () => {
      await server.sendToolListChanged().catch(() => undefined)
      if (host === undefined) return
      const now = JSON.stringify(promptsOf(options, host.served))
      if (now === promptsSent) return
      promptsSent = now
      await server.sendPromptListChanged().catch(() => undefined)
    })
    /**
     * Listens to the events of the Location served now (its asks and its reloads), in a scope of its own that the
     * next Location's replaces. Subscribed before it returns: an ask of the first call is never missed.
     */
    const listen = (served: Served.Interface) =>
      Effect.gen(function* () {
        const listening = yield* Scope.fork(scope)
        // Its asks and reloads only: the calls' own events are not published for it.
        const events = yield* served.subscribe({ calls: false }).pipe(Scope.provide(listening))
        yield* Effect.forkIn(
          Effect.forever(
            Effect.flatMap(PubSub.take(events), (event) => {
              if (event.event === "permission.asked") return Effect.forkIn(onAsked(state, served.directory, event.data), scope).pipe(Effect.asVoid)
              if (event.event === "host_call") return Effect.forkIn(onHostCall(state, served.directory, event.data), scope).pipe(Effect.asVoid)
              if (event.event === "tools.changed") return listChanged
              return Effect.void
            }),
          ),
          listening,
        )
        return listening
      })
    let listening: Scope.Closeable | undefined
    const attach = (next: Host) =>
      Effect.gen(function* () {
        const previous = host
        if (previous?.served === next.served) return
        if (listening !== undefined) yield* Scope.close(listening, Exit.void)
        host = next
        if (previous === undefined) promptsSent = JSON.stringify(promptsOf(options, next.served))
        listening = yield* listen(next.served)
        attached()
        if (previous !== undefined) yield* listChanged
      })
    if (initial !== undefined) yield* attach(initial)

    let closing: Promise<void> | undefined
    const close = Effect.promise(
      () =>
        (closing ??= (async () => {
          for (const { call, host } of running.values()) await run(host.calls.cancel({ ...call, location: host.served.directory }))
          await Promise.allSettled(waiting)
          await server.close()
        })()),
    )
    yield* Effect.addFinalizer(() => close)
    const connect = async (transport: Transport) => {
      await server.connect(transport)
      // The SDK's dispatch stays for everything but a plain call.
      const dispatch = transport.onmessage
      const deliver = (answer: JSONRPCMessage | undefined) => {
        if (answer === undefined) return
        void transport.send(answer).catch((error) => server.onerror?.(new Error(`Failed to send a response: ${error}`)))
      }
      // Over stdio a plain call is taken before the transport's own check of the message (plainCall's is stricter).
      if (transport instanceof McpStdio.Transport) {
        transport.takes = (message) => answerDirectly(state, message, deliver)
        transport.invalid = invalidParams
      }
      transport.onmessage = (message, extra) => {
        if (answerDirectly(state, message, deliver)) return
        if (cancelled(state, message)) return
        const refused = reused(state, message) ?? invalidParams(message)
        if (refused !== undefined) deliver(refused)
        else dispatch?.(message, extra)
      }
    }
    return {
      server,
      connect,
      close,
      busy: () => waiting.size > 0,
      carried: (message, span) => {
        if (!traced) return () => {}
        const ids = (Array.isArray(message) ? message : [message]).flatMap((one: unknown) =>
          typeof one === "object" && one !== null && "method" in one && "id" in one && (typeof one.id === "string" || typeof one.id === "number")
            ? [one.id]
            : [],
        )
        for (const id of ids) requests.set(id, span)
        return () => {
          for (const id of ids) if (requests.get(id) === span) requests.delete(id)
        }
      },
      answer: (message: unknown) => {
        let deliver!: (answer: JSONRPCMessage | undefined) => void
        const answered = new Promise<JSONRPCMessage | undefined>((resolve) => (deliver = resolve))
        return answerDirectly(state, message, deliver) ? answered : undefined
      },
      attach,
      mayStream: (message: unknown) => mayStream(state, message),
      inUse: (message: unknown) => {
        const handled = abortersOf(state.server)
        const batch = new Set<string | number>()
        for (const one of Array.isArray(message) ? message : [message]) {
          if (!isRecord(one) || !("method" in one) || !(typeof one.id === "string" || typeof one.id === "number")) continue
          if (handled.has(one.id) || batch.has(one.id)) return one.id
          batch.add(one.id)
        }
        return undefined
      },
      invalid: invalidParams,
    }
  })
