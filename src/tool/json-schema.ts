export * as JsonSchema from "./json-schema"

// JSON Schema (draft 2020-12) derived from a tool's Effect schemas, in the form model providers accept: named
// shared parts in `$defs`, and for inputs an object at the root that refuses unknown keys, as decoding does.

import * as Schema from "effect/Schema"

export type JsonSchema = { readonly [key: string]: unknown }

const derive = (schema: Schema.Top, options?: Schema.ToJsonSchemaOptions) => {
  const document = Schema.toJsonSchemaDocument(schema, options)
  return { root: document.schema as JsonSchema, defs: { ...document.definitions } as Record<string, JsonSchema> }
}

const withDefs = (root: JsonSchema, defs: Record<string, JsonSchema>): JsonSchema =>
  Object.keys(defs).length === 0 ? root : { ...root, $defs: defs }

/** The JSON Schema of an output: any shape. */
export const output = (schema: Schema.Top): JsonSchema => {
  const { root, defs } = derive(schema)
  return withDefs(root, defs)
}

/** The JSON Schema of an input, always an object at the root; undefined when the schema is not an object. */
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
  return root.type === "object" ? withDefs(root, defs) : undefined
}

const isNotNull = (root: JsonSchema): boolean => {
  const not = root.not as JsonSchema | undefined
  return Object.keys(root).length === 1 && not !== undefined && not.type === "null"
}
