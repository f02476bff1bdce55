export * as Anthropic from "./anthropic"

// The `anthropic` mapping: a definition as a Messages API tool with `strict: true` (strict tool use: Claude's input
// always matches the schema), and a settlement as a `tool_result` content block.
//
// Anthropic's published rules this follows (docs.claude.com: "Tool use" / "Define tools", "Strict tool use" and
// "Structured outputs", JSON Schema limitations): a tool is `{ name, description, input_schema, strict }`; `name`
// matches ^[a-zA-Z0-9_-]{1,64}$ and property names ^[a-zA-Z0-9_.-]{1,64}$. In a strict schema every object has
// `additionalProperties: false`; supported are the basic types, `enum`, `const`, `anyOf`, `$ref`/`$defs` (not
// recursive), `default`, string `pattern` and `format` (date-time, time, date, duration, email, hostname, uri, ipv4,
// ipv6, uuid), array `minItems` of 0 or 1; not supported: numeric constraints (`minimum`, `maximum`,
// `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`), string `minLength`/`maxLength`, other array constraints,
// recursive schemas, `not`, `if`, `prefixItems` and friends. `default` is listed as supported, but Anthropic's
// own SDK strips it from strict schemas, so it moves too. Unsupported constraints move into the description
// (decoding still checks them); a record, a recursive schema or an unsupported combinator is refused.
//
// A result is `{ type: "tool_result", tool_use_id, content, is_error? }` whose content holds `text` blocks, `image`
// blocks (base64 source; JPEG, PNG, GIF, WEBP) and `document` blocks (base64 PDF, or plain text).

import type { Settlement } from "../contract/settlement"
import type { Definition } from "../tool/definition"
import { ProviderResult } from "./provider-result"
import { ProviderSchema } from "./provider-schema"

type Node = ProviderSchema.Node

export const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/
export const PROPERTY_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/
export const FORMATS: ReadonlySet<string> = new Set([
  "date-time",
  "time",
  "date",
  "duration",
  "email",
  "hostname",
  "uri",
  "ipv4",
  "ipv6",
  "uuid",
])
export const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"])
/**
 * Images as Anthropic takes them (vision guide): at most 5 MB per image, counted on the base64 text (so 3.75 MiB of
 * image), at most 8000 px a side (2000 px when a request holds more than 20 images); a long side over 1568 px is
 * scaled down by the API before the model sees it, at a cost in latency and nothing in what the model sees.
 */
export const IMAGE_LIMITS = { maxBytes: (5 * 1024 * 1024 * 3) / 4, maxDimension: 1_568 } as const

/** Keywords refused. */
const REFUSED = ProviderSchema.refusing([
  "allOf", "not", "if", "prefixItems", "patternProperties", "dependentRequired", "dependentSchemas",
  "propertyNames", "unevaluatedProperties", "unevaluatedItems", "contains",
])

const MOVED: ReadonlySet<string> = new Set([
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "maxItems",
  "uniqueItems",
  "minProperties",
  "maxProperties",
  // Documented as accepted, but Anthropic's own SDK strips it from strict schemas: said in words instead.
  "default",
])

/** An array may need at least 0 or 1 items, no more; a format outside the list is said in words. */
const movedByValue = (key: string, value: unknown) =>
  (key === "minItems" && typeof value === "number" && value > 1) || (key === "format" && !FORMATS.has(value as string))

const PROVIDER = "anthropic"

export interface Tool {
  readonly name: string
  readonly description: string
  readonly input_schema: Node
  readonly strict: true
}

export type ContentBlock =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly source: { readonly type: "base64"; readonly media_type: string; readonly data: string } }
  | {
      readonly type: "document"
      readonly source:
        | { readonly type: "base64"; readonly media_type: "application/pdf"; readonly data: string }
        | { readonly type: "text"; readonly media_type: "text/plain"; readonly data: string }
      readonly title?: string
    }

export interface ToolResult {
  readonly type: "tool_result"
  readonly tool_use_id: string
  readonly content: ReadonlyArray<ContentBlock>
  readonly is_error?: true
}

const REFUSED_REASON = "Anthropic strict tool use does not support it"

interface Walk {
  readonly problems: ProviderSchema.Problems
  /** The definitions that refer to themselves, refused where they are referred to. */
  readonly recursive: ReadonlySet<string>
}

/**
 * `input` as a strict schema node. A node that needs no change (no constraint to move, every object closed, every
 * part unchanged) is answered as it is, shared with the frozen definition; one that changes is copied once.
 */
const strict = (input: unknown, path: string, walk: Walk): Node => {
  if (!ProviderSchema.isNode(input)) return copyOf(input)
  const node = input
  // One pass over the keywords: the structural ones kept, the refused reported, the moved collected in order.
  let type, properties, items, anyOf, oneOf, additional, ref: unknown
  let hasProperties = false
  let moved: Array<string> | undefined
  for (const key in node) {
    const value = node[key]
    switch (key) {
      case "type":
        type = value
        break
      case "properties":
        properties = value
        hasProperties = true
        break
      case "items":
        items = value
        break
      case "anyOf":
        anyOf = value
        break
      case "oneOf":
        oneOf = value
        break
      case "additionalProperties":
        additional = value
        break
      case "$ref":
        ref = value
        break
      default: {
        const construct = REFUSED.get(key)
        if (construct !== undefined) walk.problems.add(path, construct, REFUSED_REASON)
        else if (MOVED.has(key) || movedByValue(key, value)) (moved ??= []).push(key)
      }
    }
  }
  const name = walk.recursive.size === 0 ? undefined : ProviderSchema.reference(ref)
  if (name !== undefined && walk.recursive.has(name)) {
    walk.problems.add(path, `a recursive schema (${name} contains itself)`, "Anthropic strict tool use does not support recursion")
  }
  // A oneOf becomes an anyOf: the provider dialects have no oneOf, and every branch is tried.
  const fromOneOf = Array.isArray(oneOf)
  const branches = fromOneOf ? oneOf : anyOf
  const mappedBranches = Array.isArray(branches) ? ProviderSchema.mapEach(branches, (branch) => strict(branch, path, walk)) : branches
  const mappedItems = ProviderSchema.isNode(items) ? strict(items, `${path}[]`, walk) : items
  const object = type === "object" || hasProperties
  let mappedProperties = properties
  if (object) {
    if (additional !== undefined && additional !== false) {
      walk.problems.add(
        path,
        ProviderSchema.RECORD,
        "Anthropic strict tool use needs additionalProperties false on every object; use a struct, or an array of key-value pairs",
      )
    }
    mappedProperties = ProviderSchema.isNode(properties) ? ProviderSchema.mapProperties(properties, (key, value) => property(key, value, path, walk)) : {}
  }
  const unchanged =
    moved === undefined &&
    !fromOneOf &&
    mappedBranches === anyOf &&
    mappedItems === items &&
    (!object || (mappedProperties === properties && additional === false))
  if (unchanged) return node
  const copy = ProviderSchema.moveToDescription(node, moved ?? [])
  if (fromOneOf) {
    copy.anyOf = mappedBranches
    delete copy.oneOf
  } else if (Array.isArray(branches)) copy.anyOf = mappedBranches
  if (ProviderSchema.isNode(items)) copy.items = mappedItems
  if (object) {
    copy.properties = mappedProperties
    copy.additionalProperties = false
  }
  return copy
}

/**
 * A schema value that is not an object node (a boolean schema such as `true`, an array) as the walk copies it: the
 * plain object of its enumerable keys (none for a boolean). Null has no keys to read: a TypeError, as reading a
 * keyword of it would be.
 */
const copyOf = (value: unknown): Record<string, unknown> => {
  if (value === null || value === undefined) throw new TypeError(`A schema cannot be ${value}`)
  const copy: Record<string, unknown> = {}
  for (const key in value as object) ProviderSchema.put(copy, key, (value as Node)[key])
  return copy
}

const property = (key: string, value: unknown, path: string, walk: Walk): Node => {
  const at = ProviderSchema.child(path, key)
  if (!PROPERTY_PATTERN.test(key)) {
    walk.problems.add(at, `the property name ${JSON.stringify(key)}`, 'Anthropic property names hold only letters, digits, "_", "." and "-", at most 64')
  }
  return strict(value, at, walk)
}

export const tool = (definition: Definition.Definition): ProviderSchema.Mapped => {
  const problems = new ProviderSchema.Problems(definition.name)
  problems.checkName(NAME_PATTERN, `${PROVIDER} tool names hold only letters, digits, "_" and "-", at most 64`)
  const defs = ProviderSchema.defsOf(definition.inputSchema)
  const schema: Record<string, unknown> = strict(ProviderSchema.withoutDefs(definition.inputSchema), "", {
    problems,
    recursive: ProviderSchema.recursiveDefs(defs),
  })
  if (Object.keys(defs).length > 0) {
    // Recursion is refused where a definition is referred to, not again inside the definitions.
    const inDefs: Walk = { problems, recursive: new Set() }
    schema.$defs = ProviderSchema.mapProperties(defs, (name, node) => strict(node, `$defs.${name}`, inDefs))
  }
  return problems.mapped((): Tool => ({ name: definition.name, description: definition.description, input_schema: schema, strict: true }))
}

const block = (piece: ProviderResult.Piece): ContentBlock => {
  if (piece.type === "text") return { type: "text", text: piece.text }
  if (piece.type === "link") return { type: "text", text: ProviderResult.described(piece, "not inline data, so not attached") }
  const title = piece.name === undefined ? {} : { title: piece.name }
  if (IMAGE_TYPES.has(piece.mime)) return { type: "image", source: { type: "base64", media_type: piece.mime, data: piece.data } }
  if (piece.mime === "application/pdf") {
    return { type: "document", source: { type: "base64", media_type: "application/pdf", data: piece.data }, ...title }
  }
  if (piece.mime.startsWith("text/")) {
    const data = Buffer.from(piece.data, "base64").toString("utf8")
    return { type: "document", source: { type: "text", media_type: "text/plain", data }, ...title }
  }
  return { type: "text", text: ProviderResult.described(piece, "Anthropic models take images, PDF and text files only, so not attached") }
}

export const result = (settlement: Settlement.Info): ToolResult => ({
  type: "tool_result",
  tool_use_id: settlement.callID,
  content: ProviderResult.pieces(settlement).map(block),
  ...(ProviderResult.isError(settlement) ? { is_error: true as const } : {}),
})
