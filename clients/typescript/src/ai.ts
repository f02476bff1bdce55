// `@core/client/ai`: a session's turn as an AI SDK `ToolSet`. Each tool's `execute` settles the model's call through
// core (same ids on a retry, cancelled with the SDK's abort signal, asks answered by `onAsk`), and `toModelOutput`
// turns the settlement into the SDK's tool output: text, images and other files, errors, a declined call. With
// `approval`, `needsApproval` asks core's check route whether the call would ask; a call the person then approved
// through the SDK has exactly the asks that check foresaw answered once. The ToolSet is live: `prepareStep` brings
// it up to date (new, changed and removed tools) before each model step when the session's turn is outdated.

import { dynamicTool, jsonSchema, type JSONSchema7, type Tool, type ToolSet } from "ai"
import type { CallOptions } from "./client.js"
import type { Session } from "./session.js"
import type { Check, Definition, PermissionRequest, Progress, Settlement } from "./types.js"

/** The AI SDK's tool output, as `toModelOutput` answers it. */
export type ModelOutput = Awaited<ReturnType<NonNullable<Tool["toModelOutput"]>>>

export interface AiToolsOptions {
  /** Answers an ask of a running call; without it, asks are declined (the model reads that a person said no). */
  readonly onAsk?: (ask: PermissionRequest) => ReturnType<NonNullable<CallOptions["onAsk"]>>
  /** Each progress update of a running call, with the SDK's id of that call. */
  readonly onProgress?: (toolCallId: string, progress: Progress) => void
  /**
   * Performs a call of a host tool (`core.registerHostTools`) the model made: its answer settles the call. Without
   * it, such a call waits for another answerer (`core.hostCalls()`), or for its timeout.
   */
  readonly onHostCall?: CallOptions["onHostCall"]
  /** Set `needsApproval` from core's check: a call core would ask about waits for the SDK's approval first. */
  readonly approval?: boolean
}

export interface AiTools {
  /** The tools to hand `generateText` / `streamText` / an agent; kept current by `prepareStep`. */
  readonly tools: ToolSet
  /** Hand it to the SDK as `prepareStep` (or call it from yours): it refreshes `tools` between model steps. */
  readonly prepareStep: () => Promise<undefined>
}

const freshID = (prefix: string): string => `${prefix}_${crypto.randomUUID().replaceAll("-", "")}`

const text = (settlement: Settlement): string =>
  settlement.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n")

/** A `data:` URI's media type and base64 payload. */
const DATA_URI = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s

/** A settlement as the AI SDK's tool output: what the model reads of the call. */
export const toModelOutput = (settlement: Settlement): ModelOutput => {
  if (settlement.status === "declined") return { type: "execution-denied", reason: text(settlement) }
  if (settlement.status !== "success") return { type: "error-text", value: text(settlement) }
  // Structured only: its JSON is what the model reads (DESIGN §4).
  if (settlement.content.length === 0) return { type: "json", value: (settlement.structured ?? null) as never }
  if (settlement.content.length === 1 && settlement.content[0]!.type === "text") {
    return { type: "text", value: settlement.content[0]!.text }
  }
  return {
    type: "content",
    value: settlement.content.map((part) => {
      if (part.type === "text") return { type: "text" as const, text: part.text }
      const data = DATA_URI.exec(part.uri)
      const name = part.name === undefined ? {} : { filename: part.name }
      return data === null
        ? { type: "file" as const, mediaType: part.mime, data: { type: "url" as const, url: new URL(part.uri) }, ...name }
        : { type: "file" as const, mediaType: part.mime, data: { type: "data" as const, data: data[2]! }, ...name }
    }),
  }
}

/** Whether `check` foresaw `ask`: the same action, asking about each of its resources. */
const foresees = (check: Check, ask: PermissionRequest): boolean =>
  check.checks.some(
    (step) =>
      step.action === ask.action &&
      ask.resources.every((resource) =>
        step.resources.some((checked) => checked.resource === resource && checked.decision === "ask"),
      ),
  )

/** The session's tools as an AI SDK ToolSet. */
export const aiTools = async (session: Session, options: AiToolsOptions = {}): Promise<AiTools> => {
  /** Calls the person approved through the SDK, with what core's check said they would ask. */
  const approved = new Map<string, Check>()
  let assistantMessageID = freshID("msg")

  const make = (definition: Definition) =>
    dynamicTool({
      description: definition.description,
      // No validation here: core validates the input and tells the model what to fix.
      inputSchema: jsonSchema(definition.inputSchema as JSONSchema7),
      ...(options.approval === true
        ? {
            needsApproval: async (input: unknown, { toolCallId }: { toolCallId: string }) => {
              const check = await session.check(definition.name, input).catch(() => undefined)
              // A call core refuses (a deny, input it cannot take) needs no approval: its settlement says why.
              if (check?.decision !== "ask") return false
              approved.set(toolCallId, check)
              return true
            },
          }
        : {}),
      execute: async (input, { toolCallId, abortSignal }) => {
        const check = approved.get(toolCallId)
        const onAsk = async (ask: PermissionRequest) => {
          if (check !== undefined && foresees(check, ask)) return "once" as const
          return options.onAsk === undefined ? ("reject" as const) : options.onAsk(ask)
        }
        try {
          return await session.call(
            { name: definition.name, input, toolCallID: toolCallId, assistantMessageID },
            {
              stream: true,
              onAsk,
              ...(abortSignal === undefined ? {} : { signal: abortSignal }),
              ...(options.onProgress === undefined ? {} : { onProgress: (progress: Progress) => options.onProgress!(toolCallId, progress) }),
              ...(options.onHostCall === undefined ? {} : { onHostCall: options.onHostCall }),
            },
          )
        } finally {
          approved.delete(toolCallId)
        }
      },
      toModelOutput: ({ output }) => toModelOutput(output as Settlement),
    })

  const tools: ToolSet = {}
  let shown: ReadonlyArray<Definition> = []
  const refresh = async () => {
    const definitions = await session.definitions()
    if (definitions === shown) return
    const before = new Map(shown.map((definition) => [definition.name, JSON.stringify(definition)]))
    for (const name of Object.keys(tools)) {
      if (!definitions.some((definition) => definition.name === name)) delete tools[name]
    }
    for (const definition of definitions) {
      if (before.get(definition.name) !== JSON.stringify(definition)) tools[definition.name] = make(definition)
    }
    shown = definitions
  }
  await refresh()
  return {
    tools,
    prepareStep: async () => {
      assistantMessageID = freshID("msg")
      await refresh()
      return undefined
    },
  }
}
