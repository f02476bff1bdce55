export * as ProviderDialect from "./provider-dialect"

// A JSON Schema written elsewhere (an MCP server's: draft-07 as zod-to-json-schema writes it, or 2020-12) in the
// dialect core derives its own tools' schemas in (src/tool/json-schema.ts: 2020-12, shared parts in `$defs` at the
// root), so each provider mapping takes a server's tool exactly as it takes core's: `$schema`, `$id` and `$comment`
// go (providers refuse or ignore them), `definitions` becomes `$defs` with its references, and a draft-07 tuple
// (`items` as an array, `additionalItems`) becomes `prefixItems` and `items`. Pure; values (`const`, `enum`,
// `default`, `examples`) are copied as they are.

import type { JsonSchema } from "../tool/json-schema"

/** Keywords that say which dialect or document a schema is, and nothing about its values. */
const DROPPED: ReadonlySet<string> = new Set(["$schema", "$id", "$comment"])
/** Keywords whose value is data, not schemas. */
const DATA: ReadonlySet<string> = new Set(["const", "enum", "default", "examples"])
/** Keywords whose value maps names to schemas. */
const SCHEMA_MAPS: ReadonlySet<string> = new Set([
  "properties",
  "patternProperties",
  "$defs",
  "definitions",
  "dependentSchemas",
])

const isNode = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const DEFINITIONS_REF = "#/definitions/"

const put = (target: Record<string, unknown>, key: string, value: unknown): void => {
  // "__proto__" is a legal property name in a schema.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

const node = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(node)
  if (!isNode(value)) return value
  const copy: Record<string, unknown> = {}
  const tuple = Array.isArray(value.items)
  for (const key in value) {
    const child = value[key]
    if (DROPPED.has(key)) continue
    if (DATA.has(key)) put(copy, key, child)
    else if (key === "$ref" && typeof child === "string" && child.startsWith(DEFINITIONS_REF)) {
      put(copy, key, `#/$defs/${child.slice(DEFINITIONS_REF.length)}`)
    } else if (SCHEMA_MAPS.has(key) && isNode(child)) {
      const mapped: Record<string, unknown> = {}
      for (const name in child) put(mapped, name, node(child[name]))
      const target = key === "definitions" ? "$defs" : key
      put(copy, target, isNode(copy[target]) ? { ...(copy[target] as object), ...mapped } : mapped)
    } else if (tuple && key === "items") put(copy, "prefixItems", node(child))
    else if (tuple && key === "additionalItems") put(copy, "items", node(child))
    else if (!tuple && key === "additionalItems") continue
    else put(copy, key, node(child))
  }
  return copy
}

/** `schema` in core's dialect: a fresh copy; the original (which checks the server's input) is left as it was. */
export const canonical = (schema: JsonSchema.JsonSchema): JsonSchema.JsonSchema => node(schema) as JsonSchema.JsonSchema
