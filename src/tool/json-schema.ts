export * as JsonSchema from "./json-schema"

// JSON Schema (draft 2020-12) derived from a tool's Effect schemas, in the form model providers accept: named
// shared parts in `$defs`, and for inputs an object at the root that refuses unknown keys, as decoding does.
// Only limits that mean something are kept: `Schema.Int`'s safe-integer range (±2^53) is left out. An input
// number must be finite (JSON has no NaN or Infinity): `Schema.Number` in an input is refused at `Tool.make`.

import * as Schema from "effect/Schema"

export type JsonSchema = { readonly [key: string]: unknown }

const derive = (schema: Schema.Top, options?: Schema.ToJsonSchemaOptions) => {
  const document = Schema.toJsonSchemaDocument(schema, options)
  const defs: Record<string, JsonSchema> = {}
  for (const [name, definition] of Object.entries(document.definitions)) defs[name] = honest(definition as JsonSchema)
  return { root: honest(document.schema as JsonSchema), defs }
}

/**
 * A copy of `schema` without bounds that only restate the safe-integer range `Schema.Int` checks: they tell a
 * model nothing and crowd out the limits that matter.
 */
const honest = (schema: unknown): any => {
  if (Array.isArray(schema)) return schema.map(honest)
  if (typeof schema !== "object" || schema === null) return schema
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === "minimum" && value === Number.MIN_SAFE_INTEGER) continue
    if (key === "maximum" && value === Number.MAX_SAFE_INTEGER) continue
    copy[key] = honest(value)
  }
  return copy
}

/** `Schema.Number` derives as a number or one of the strings its JSON encoding uses for the non-finite values. */
const isNonFiniteStrings = (schema: unknown): boolean => {
  const strings = (schema as JsonSchema | undefined)?.enum
  return Array.isArray(strings) && ["Infinity", "-Infinity", "NaN"].every((name) => strings.includes(name))
}

/** The path (`lines`, `points[]`, `$defs.Range.low`) of the first place an input admits non-finite numbers. */
const nonFinite = (schema: unknown, path: string): string | undefined => {
  if (typeof schema !== "object" || schema === null) return undefined
  if (Array.isArray(schema)) return first(schema, (item) => nonFinite(item, path))
  const node = schema as JsonSchema
  if (Array.isArray(node.anyOf) && node.anyOf.some(isNonFiniteStrings)) return path
  return first(Object.entries(node), ([key, value]) => {
    switch (key) {
      case "properties":
      case "patternProperties":
        return first(Object.entries(value as JsonSchema), ([name, inner]) => nonFinite(inner, path === "" ? name : `${path}.${name}`))
      case "$defs":
        return first(Object.entries(value as JsonSchema), ([name, inner]) => nonFinite(inner, `$defs.${name}`))
      case "items":
      case "prefixItems":
        return nonFinite(value, `${path}[]`)
      case "additionalProperties":
        return nonFinite(value, `${path}.*`)
      case "anyOf":
      case "oneOf":
      case "allOf":
        return nonFinite(value, path)
      default:
        return undefined
    }
  })
}

const first = <A>(items: ReadonlyArray<A>, find: (item: A) => string | undefined): string | undefined => {
  for (const item of items) {
    const found = find(item)
    if (found !== undefined) return found
  }
  return undefined
}

const withDefs = (root: JsonSchema, defs: Record<string, JsonSchema>): JsonSchema =>
  Object.keys(defs).length === 0 ? root : { ...root, $defs: defs }

/** The JSON Schema of an output: any shape. */
export const output = (schema: Schema.Top): JsonSchema => {
  const { root, defs } = derive(schema)
  return withDefs(root, defs)
}

/**
 * The JSON Schema of an input, always an object at the root; undefined when the schema is not an object. Throws
 * a TypeError where the input admits NaN or Infinity (`Schema.Number`), which no model can send.
 */
export const input = (schema: Schema.Top): JsonSchema | undefined => {
  let { root, defs } = derive(schema, { onExcessProperty: "error" })
  // A class-based schema is a reference to its definition: inline it, providers want the object at the root.
  const ref = typeof root.$ref === "string" ? /^#\/\$defs\/(.+)$/.exec(root.$ref)?.[1] : undefined
  if (ref !== undefined && defs[ref] !== undefined) {
    root = defs[ref]!
    const rest = Object.fromEntries(Object.entries(defs).filter(([name]) => name !== ref))
    // Keep the definition only if something else still refers to it (a recursive class).
    if (!JSON.stringify([root, rest]).includes(`"#/$defs/${ref}"`)) defs = rest
  }
  // An empty struct derives as "anything but null": for a tool input it is an object without properties.
  if (schema.ast._tag === "Objects" && root.type === undefined && isNotNull(root)) {
    root = { type: "object", properties: {}, additionalProperties: false }
  }
  if (root.type !== "object") return undefined
  const document = withDefs(root, defs)
  const path = nonFinite(document, "")
  if (path !== undefined) {
    throw new TypeError(
      `Tool.make: input \`${path}\` is Schema.Number, which admits NaN and Infinity, but a model sends JSON ` +
        `numbers, always finite. Use Schema.Finite (any finite number) or Schema.Int (an integer) instead.`,
    )
  }
  return document
}

const isNotNull = (root: JsonSchema): boolean => {
  const not = root.not as JsonSchema | undefined
  return Object.keys(root).length === 1 && not !== undefined && not.type === "null"
}
