export * as Mapping from "./mapping"

// How core's values read in MCP, both transports alike: a definition as an MCP tool (schemas, annotations as
// hints), a settlement as a tool result (content, structured content, error flag, managed outputs as resource
// links), a permission ask as an elicitation form, and the `core://outputs/` URIs that name managed outputs.
// Pure: no transport, no services.

import type { CallToolResult, ElicitRequestFormParams, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import type { ManagedOutputs } from "../output/managed-outputs"
import type { Output } from "../output/output"
import type { Permission } from "../permission/permission"
import type { Settlement } from "../contract/settlement"
import { Terminal } from "../contract/terminal"
import type { Definition } from "../tool/definition"

/** The scheme and prefix of a managed output's URI: `core://outputs/ID` (its text), `.../ID/structured` (its JSON). */
export const OUTPUTS_PREFIX = "core://outputs/"

export const isObjectSchema = (schema: unknown): boolean =>
  typeof schema === "object" && schema !== null && (schema as { type?: unknown }).type === "object"

/** A tool's declared annotations as MCP's hints; only what the tool declared (MCP's defaults assume the worst). */
const hintsOf = (annotations: Definition.Definition["annotations"]): McpTool["annotations"] | undefined => {
  if (annotations === undefined) return undefined
  const hints: NonNullable<McpTool["annotations"]> = {}
  if (annotations.readOnly !== undefined) hints.readOnlyHint = annotations.readOnly
  if (annotations.destructive !== undefined) hints.destructiveHint = annotations.destructive
  if (annotations.idempotent !== undefined) hints.idempotentHint = annotations.idempotent
  if (annotations.openWorld !== undefined) hints.openWorldHint = annotations.openWorld
  return hints
}

/** The key of the value a bounded success sends as `structuredContent` when its structured value was withheld. */
export const WITHHELD_KEY = "core/withheld"

/** What a bounded success sends in place of a structured value too large to return. */
const WITHHELD_SCHEMA = {
  type: "object",
  description:
    "The call succeeded, but its structured value was too large to return: it is kept whole at the URI given (resources/read returns it).",
  properties: {
    [WITHHELD_KEY]: {
      type: "object",
      properties: { uri: { type: "string" }, bytes: { type: "number" } },
    },
  },
  required: [WITHHELD_KEY],
} as const

/** Root keywords that must stay at the root when a schema becomes one branch of another (refs point at them). */
const ROOT_KEYWORDS: ReadonlySet<string> = new Set(["$schema", "$id", "$defs", "definitions"])

/**
 * The output schema MCP advertises for a tool's object output: the tool's own, or the withheld marker a bounded
 * success sends instead (MCP clients check every non-error result against it, so it must admit that result).
 */
export const advertisedOutput = (schema: Record<string, unknown>): Record<string, unknown> => {
  const root: Record<string, unknown> = { type: "object" }
  const branch: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if (ROOT_KEYWORDS.has(key)) root[key] = value
    else branch[key] = value
  }
  root.anyOf = [branch, WITHHELD_SCHEMA]
  return root
}

/** A definition as an MCP tool: `outputSchema` only where MCP allows it (an object at the root). */
export const toolOf = (definition: Definition.Definition): McpTool => {
  const annotations = hintsOf(definition.annotations)
  return {
    name: definition.name,
    description: definition.description,
    inputSchema: definition.inputSchema as McpTool["inputSchema"],
    ...(isObjectSchema(definition.outputSchema)
      ? { outputSchema: advertisedOutput(definition.outputSchema as Record<string, unknown>) as McpTool["outputSchema"] }
      : {}),
    ...(annotations === undefined ? {} : { annotations }),
  }
}

/** The URI of a managed output's part. */
export const outputUri = (id: string, part: ManagedOutputs.Part = "text"): string =>
  `${OUTPUTS_PREFIX}${encodeURIComponent(id)}${part === "structured" ? "/structured" : ""}`

/** The managed output and part a `core://outputs/` URI names, or undefined for any other URI. */
export const parseOutputUri = (uri: string): { readonly id: string; readonly part: ManagedOutputs.Part } | undefined => {
  if (!uri.startsWith(OUTPUTS_PREFIX)) return undefined
  const [encoded, part, ...rest] = uri.slice(OUTPUTS_PREFIX.length).split("/")
  if (encoded === undefined || encoded === "" || rest.length > 0) return undefined
  if (part !== undefined && part !== "structured") return undefined
  try {
    return { id: decodeURIComponent(encoded), part: part === "structured" ? "structured" : "text" }
  } catch {
    return undefined
  }
}

const DATA_URI = /^data:([^;,]*)(?:;[^,]*)?;base64,(.*)$/s

type ContentBlock = CallToolResult["content"][number]

const contentOf = (part: Output.Part): ContentBlock => {
  if (part.type === "text") return { type: "text", text: part.text }
  const data = DATA_URI.exec(part.uri)
  if (data !== null && part.mime.startsWith("image/")) return { type: "image", data: data[2] ?? "", mimeType: part.mime }
  if (data !== null && part.mime.startsWith("audio/")) return { type: "audio", data: data[2] ?? "", mimeType: part.mime }
  if (data !== null) return { type: "resource", resource: { uri: part.uri, mimeType: part.mime, blob: data[2] ?? "" } }
  return { type: "resource_link", uri: part.uri, name: part.name ?? part.uri, mimeType: part.mime }
}

/** What a managed output holds: the text a preview left out, the structured value bounding withheld. */
export interface Kept {
  readonly text: boolean
  readonly structured: boolean
}

/**
 * A settlement as an MCP tool result: its content, then one resource link to the managed output when text was left
 * out of the preview; `structuredContent` when the tool advertised an output schema (its value, or the withheld
 * marker when bounding kept the value out); the JSON of `structured` as text when there is no content. `isError` is
 * set for a model-visible error and for a call that did not run or did not finish (declined, cancelled); a bounded
 * success is a success.
 */
export const resultOf = (
  settlement: Settlement.Info,
  advertisedOutput: boolean,
  kept: (id: string) => Kept = () => ({ text: true, structured: false }),
): CallToolResult => {
  const content = settlement.content.map(contentOf)
  const structured = settlement.status === "success" && settlement.structured !== null ? settlement.structured : undefined
  if (content.length === 0 && structured !== undefined) content.push({ type: "text", text: JSON.stringify(structured) })
  if (content.length === 0 && settlement.error !== undefined) content.push({ type: "text", text: settlement.error.message })
  const output = settlement.outputs[0]
  const holds = output === undefined ? { text: false, structured: false } : kept(output.id)
  if (output !== undefined && holds.text) {
    content.push({
      type: "resource_link",
      uri: outputUri(output.id),
      name: `output ${output.id}`,
      mimeType: "text/plain",
      description: "The complete output the preview left out (resources/read returns it)",
    })
  }
  let structuredContent: Record<string, unknown> | undefined
  if (settlement.status === "success" && advertisedOutput) {
    if (typeof structured === "object" && structured !== null && !Array.isArray(structured)) {
      structuredContent = structured as Record<string, unknown>
    } else {
      // Bounding kept the value out: a client checking the result against the advertised schema finds the marker.
      const where = output !== undefined && holds.structured ? { uri: outputUri(output.id, "structured"), bytes: output.bytes } : {}
      structuredContent = { [WITHHELD_KEY]: where }
    }
  }
  return {
    content,
    ...(structuredContent === undefined ? {} : { structuredContent }),
    ...(settlement.status === "success" ? {} : { isError: true }),
    // For hosts that know core: the outcome and the managed outputs behind a bounded preview (`core output ID`).
    _meta: { "core/settlement": { callID: settlement.callID, status: settlement.status, outputs: settlement.outputs } },
  }
}

/**
 * A permission ask in words: the action and its resources, the model's, with every character a terminal (or a
 * client's form) acts on escaped, so they show as they are to the person asked.
 */
export const describe = (request: Permission.Request): string =>
  `${Terminal.inline(request.action)} on ${request.resources.map(Terminal.quoted).join(", ")}`

/** The form a client shows a person for a permission ask. */
export const askForm = (request: Permission.Request): ElicitRequestFormParams => ({
  mode: "form",
  message:
    `Allow ${describe(request)}?` +
    (request.protected === undefined
      ? request.save.length === 0
        ? ""
        : ` "always" saves ${request.save.map(Terminal.quoted).join(", ")}.`
      : ` This changes ${Terminal.inline(request.protected)}: it is asked each time and never saved.`),
  requestedSchema: {
    type: "object",
    properties: {
      reply: { type: "string", title: "Reply", enum: ["once", "always", "reject"] },
      message: { type: "string", title: "A message for the model when rejecting (optional)" },
    },
    required: ["reply"],
  },
})
