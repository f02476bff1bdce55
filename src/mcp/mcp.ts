export * as Mcp from "./mcp"

// Serves one Location's tools over the Model Context Protocol: `tools/list` is the agent's catalog, `tools/call`
// settles through the same settler as every other host (permissions, bounding, managed outputs, at most once),
// and the settlement is worded as an MCP tool result. The transport is the caller's (stdio for `core mcp`); only
// JSON-RPC goes through it.

import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool as McpTool,
} from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import type { Output } from "../output/output"
import { Permission } from "../permission/permission"
import type { Settlement } from "../settlement/settlement"
import { Settler } from "../settlement/settler"
import type { Definition } from "../tool/definition"

export interface Options {
  /** The agent whose rules filter the catalog and authorize each call. */
  readonly agent: string
  /** The session id of calls whose `_meta` names none: one per MCP session. */
  readonly sessionID: string
  readonly name: string
  readonly version: string
  /** Writes a note for the person running core (stderr for `core mcp`), never to the client. */
  readonly note: (text: string) => void
}

const isObjectSchema = (schema: unknown): boolean =>
  typeof schema === "object" && schema !== null && (schema as { type?: unknown }).type === "object"

/** A definition as an MCP tool: `outputSchema` only where MCP allows it (an object at the root). */
export const toolOf = (definition: Definition.Definition): McpTool => ({
  name: definition.name,
  description: definition.description,
  inputSchema: definition.inputSchema as McpTool["inputSchema"],
  ...(isObjectSchema(definition.outputSchema) ? { outputSchema: definition.outputSchema as McpTool["outputSchema"] } : {}),
})

const DATA_URI = /^data:([^;,]*)(?:;[^,]*)?;base64,(.*)$/s

type ContentBlock = CallToolResult["content"][number]

const contentOf = (part: Output.Part): ContentBlock => {
  if (part.type === "text") return { type: "text", text: part.text }
  const data = DATA_URI.exec(part.uri)
  if (data !== null && part.mime.startsWith("image/")) return { type: "image", data: data[2] ?? "", mimeType: part.mime }
  if (data !== null) return { type: "resource", resource: { uri: part.uri, mimeType: part.mime, blob: data[2] ?? "" } }
  return { type: "resource_link", uri: part.uri, name: part.name ?? part.uri, mimeType: part.mime }
}

/**
 * A settlement as an MCP tool result: its content; `structuredContent` when the tool advertised an output schema;
 * the JSON of `structured` as text when there is no content; an error, declined or cancelled call as `isError`.
 */
export const resultOf = (settlement: Settlement.Info, advertisedOutput: boolean): CallToolResult => {
  const content = settlement.content.map(contentOf)
  const structured = settlement.status === "success" && settlement.structured !== null ? settlement.structured : undefined
  if (content.length === 0 && structured !== undefined) content.push({ type: "text", text: JSON.stringify(structured) })
  if (content.length === 0 && settlement.error !== undefined) content.push({ type: "text", text: settlement.error.message })
  const structuredContent =
    structured !== undefined && advertisedOutput && typeof structured === "object" && !Array.isArray(structured)
      ? (structured as Record<string, unknown>)
      : undefined
  // A tool with an output schema must answer with structured content unless the result is an error; when bounding
  // kept the structured value out (too large: it is in the managed output, the preview says where), the result is
  // flagged as an error so the client takes the preview instead of refusing the whole result.
  const withheld = settlement.status === "success" && advertisedOutput && structuredContent === undefined
  return {
    content,
    ...(structuredContent === undefined ? {} : { structuredContent }),
    ...(settlement.status === "success" && !withheld ? {} : { isError: true }),
    // For hosts that know core: the outcome and the managed outputs behind a bounded preview (`core output ID`).
    _meta: { "core/settlement": { callID: settlement.callID, status: settlement.status, outputs: settlement.outputs } },
  }
}

const describe = (request: Permission.Request) =>
  `${request.action} on ${request.resources.map((resource) => JSON.stringify(resource)).join(", ")}`

/** The form a client shows a person for a permission ask. */
const askForm = (request: Permission.Request) => ({
  mode: "form" as const,
  message:
    `Allow ${describe(request)}?` +
    (request.protected === undefined
      ? request.save.length === 0
        ? ""
        : ` "always" saves ${request.save.map((pattern) => JSON.stringify(pattern)).join(", ")}.`
      : ` This changes ${request.protected}: it is asked each time and never saved.`),
  requestedSchema: {
    type: "object" as const,
    properties: {
      reply: { type: "string" as const, title: "Reply", enum: ["once", "always", "reject"] },
      message: { type: "string" as const, title: "A message for the model when rejecting (optional)" },
    },
    required: ["reply"],
  },
})

/** How long a permission ask waits for the client's user before it is declined. */
const ASK_TIMEOUT_MS = 24 * 60 * 60 * 1000

const metaString = (meta: Record<string, unknown> | undefined, key: string): string | undefined => {
  const value = meta?.[key]
  return typeof value === "string" && value.trim() !== "" ? value : undefined
}

/** Serves the Location's tools on `transport` until the client goes away. */
export const serve = (transport: Transport, options: Options) =>
  Effect.gen(function* () {
    const settler = yield* Settler.Service
    const permission = yield* Permission.Service
    const run = Effect.runPromiseWith(yield* Effect.context<never>())
    // Calls still running when the client goes away or core stops are interrupted, and the server waits until
    // each has recorded its cancellation before it ends, so core never exits with a call half recorded.
    const shutdown = new AbortController()
    const running = new Set<Promise<unknown>>()
    const materialize = () => settler.materialize(permission.rules(options.agent))
    const server = new Server(
      { name: options.name, version: options.version },
      { capabilities: { tools: { listChanged: false } } },
    )

    server.setRequestHandler(ListToolsRequestSchema, async () => {
      const { definitions } = await run(materialize())
      return { tools: definitions.map(toolOf) }
    })

    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const meta = request.params._meta as Record<string, unknown> | undefined
      const progressToken = request.params._meta?.progressToken
      let progress = 0
      const call: Settler.Call = {
        sessionID: metaString(meta, "sessionID") ?? options.sessionID,
        agent: options.agent,
        assistantMessageID: metaString(meta, "assistantMessageID") ?? `msg_${crypto.randomUUID()}`,
        toolCallID: metaString(meta, "toolCallID") ?? String(extra.requestId),
        name: request.params.name,
        input: request.params.arguments ?? {},
      }
      const settled = Effect.gen(function* () {
        const turn = yield* materialize()
        const definition = turn.definitions.find((candidate) => candidate.name === call.name)
        const { settlement } = yield* turn.settle(call, {
          onProgress: (update) =>
            progressToken === undefined
              ? Effect.void
              : Effect.promise(() =>
                  extra
                    .sendNotification({
                      method: "notifications/progress",
                      params: { progressToken, progress: ++progress, message: update.message },
                    })
                    .catch(() => undefined),
                ),
        })
        return resultOf(settlement, definition !== undefined && isObjectSchema(definition.outputSchema))
      })
      const settling = run(settled, { signal: AbortSignal.any([extra.signal, shutdown.signal]) })
      running.add(settling)
      try {
        return await settling
      } catch (error) {
        throw new McpError(ErrorCode.InternalError, error instanceof Error ? error.message : String(error))
      } finally {
        running.delete(settling)
      }
    })

    // Permission asks: a client that can ask its user (form elicitation) is asked; otherwise nobody can answer, and
    // the ask is declined as unattended (a change to core's own configuration is refused as needing a person).
    const answer = async (request: Permission.Request): Promise<Permission.Reply> => {
      if (server.getClientCapabilities()?.elicitation?.form === undefined) {
        options.note(`core: declined ${describe(request)}: the MCP client cannot ask its user; allow it in core.json to let MCP clients run it\n`)
        return request.protected === undefined ? { reply: "reject", unattended: true } : Permission.personRequired(request)
      }
      try {
        // A person may take their time: the request's own default timeout (a minute) would decline for them.
        const result = await server.elicitInput(askForm(request), { timeout: ASK_TIMEOUT_MS })
        if (result.action !== "accept") return { reply: "reject" }
        const reply = result.content?.reply
        if (reply === "once" || reply === "always") return { reply }
        const message = typeof result.content?.message === "string" ? result.content.message.trim() : ""
        return message === "" ? { reply: "reject" } : { reply: "reject", message }
      } catch (error) {
        options.note(`core: declined ${describe(request)}: asking the MCP client failed: ${error instanceof Error ? error.message : String(error)}\n`)
        return { reply: "reject", unattended: true }
      }
    }
    const asks = yield* permission.subscribe
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          const event = yield* PubSub.take(asks)
          if (event.type !== "asked") return
          const request = event.request
          // Each ask is answered on its own, so one waiting for a person holds up no other call.
          yield* Effect.forkScoped(
            Effect.promise(() => answer(request)).pipe(
              // The request may have gone meanwhile (its call was cancelled): nothing to answer then.
              Effect.flatMap((reply) => permission.reply(request.id, reply).pipe(Effect.ignore)),
            ),
          )
        }),
      ),
    )

    const closed = new Promise<void>((resolve) => {
      server.onclose = () => resolve()
    })
    yield* Effect.promise(() => server.connect(transport))
    yield* Effect.promise(() => closed).pipe(
      Effect.ensuring(
        Effect.promise(async () => {
          shutdown.abort()
          await Promise.allSettled(running)
          await server.close()
        }),
      ),
    )
  })
