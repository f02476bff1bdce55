// Each provider's published rules for tool definitions, restated here as validators independent of the mappings in
// src/provider (which they check): a validator walks a produced tool and lists every rule it breaks, by path. They
// are written from the providers' documentation, not from the mapping code, so a mapping that drifts from a rule
// fails here.

type Node = Record<string, any>

const isNode = (value: unknown): value is Node => typeof value === "object" && value !== null && !Array.isArray(value)

/** Every schema node with its path and object depth. */
export const nodes = (schema: Node): Array<{ node: Node; path: string; depth: number }> => {
  const found: Array<{ node: Node; path: string; depth: number }> = []
  const visit = (node: Node, path: string, depth: number) => {
    found.push({ node, path, depth })
    if (isNode(node.properties)) for (const [key, value] of Object.entries(node.properties)) visit(value, `${path}/${key}`, depth + 1)
    if (isNode(node.items)) visit(node.items, `${path}[]`, depth)
    if (isNode(node.additionalProperties)) visit(node.additionalProperties, `${path}/*`, depth + 1)
    for (const key of ["anyOf", "oneOf", "allOf", "prefixItems"]) {
      if (Array.isArray(node[key])) node[key].forEach((branch: Node, index: number) => visit(branch, `${path}|${key}${index}`, depth))
    }
    if (isNode(node.$defs)) for (const [key, value] of Object.entries(node.$defs)) visit(value as Node, `#${key}`, 0)
  }
  visit(schema, "", 0)
  return found
}
const isObjectNode = (node: Node) => node.type === "object" || (Array.isArray(node.type) && node.type.includes("object")) || "properties" in node

const typed = (node: Node) => ["type", "anyOf", "$ref", "enum", "const"].some((key) => key in node)

/** OpenAI function tools (Responses API), strict or not. */
export const openai = (tool: Node, strict: boolean): Array<string> => {
  const broken: Array<string> = []
  if (tool.type !== "function") broken.push("type is not function")
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name)) broken.push(`name ${tool.name}`)
  if (typeof tool.description !== "string") broken.push("description")
  if (tool.strict !== strict) broken.push(`strict is not ${strict}`)
  const parameters = tool.parameters as Node
  if (parameters?.type !== "object") broken.push("parameters is not an object schema")
  if (!strict) return broken
  // Structured Outputs, supported schemas.
  const refused = ["allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "patternProperties"]
  const refusedToo = ["propertyNames", "unevaluatedProperties", "minProperties", "maxProperties", "minLength", "maxLength", "prefixItems", "oneOf"]
  const formats = ["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"]
  let properties = 0
  for (const { node, path, depth } of nodes(parameters)) {
    for (const key of [...refused, ...refusedToo]) if (key in node) broken.push(`${path}: ${key}`)
    if (!typed(node)) broken.push(`${path}: no type`)
    if (typeof node.format === "string" && !formats.includes(node.format)) broken.push(`${path}: format ${node.format}`)
    if (isObjectNode(node)) {
      if (node.additionalProperties !== false) broken.push(`${path}: additionalProperties is not false`)
      const keys = Object.keys(node.properties ?? {})
      properties += keys.length
      const required = [...(node.required ?? [])].sort()
      if (JSON.stringify(required) !== JSON.stringify([...keys].sort())) broken.push(`${path}: not every property required`)
      if (depth >= 10) broken.push(`${path}: nested deeper than 10`)
    }
  }
  if (properties > 5000) broken.push("more than 5000 properties")
  return broken
}

const refsOf = (node: unknown, into: Set<string>): Set<string> => {
  if (Array.isArray(node)) node.forEach((item) => refsOf(item, into))
  else if (isNode(node)) {
    if (typeof node.$ref === "string") into.add(node.$ref.replace("#/$defs/", ""))
    for (const value of Object.values(node)) refsOf(value, into)
  }
  return into
}

/** Anthropic Messages API tools with strict tool use. */
export const anthropic = (tool: Node): Array<string> => {
  const broken: Array<string> = []
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name)) broken.push(`name ${tool.name}`)
  if (tool.strict !== true) broken.push("strict is not true")
  const schema = tool.input_schema as Node
  if (schema?.type !== "object") broken.push("input_schema is not an object schema")
  const refused = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength"]
  const refusedToo = ["maxItems", "uniqueItems", "not", "if", "allOf", "prefixItems", "patternProperties", "minProperties", "maxProperties"]
  const formats = ["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"]
  for (const { node, path } of nodes(schema)) {
    for (const key of [...refused, ...refusedToo]) if (key in node) broken.push(`${path}: ${key}`)
    if ("minItems" in node && node.minItems !== 0 && node.minItems !== 1) broken.push(`${path}: minItems ${node.minItems}`)
    if (typeof node.format === "string" && !formats.includes(node.format)) broken.push(`${path}: format ${node.format}`)
    if (isObjectNode(node)) {
      if (node.additionalProperties !== false) broken.push(`${path}: additionalProperties is not false`)
      for (const key of Object.keys(node.properties ?? {})) {
        if (!/^[a-zA-Z0-9_.-]{1,64}$/.test(key)) broken.push(`${path}/${key}: property name`)
      }
    }
  }
  // No recursive schema: no definition reaches itself.
  const defs: Node = schema?.$defs ?? {}
  for (const name of Object.keys(defs)) {
    const seen = new Set<string>()
    const stack = [...refsOf(defs[name], new Set())]
    while (stack.length > 0) {
      const next = stack.pop()!
      if (next === name) {
        broken.push(`#${name}: recursive`)
        break
      }
      if (!seen.has(next)) {
        seen.add(next)
        stack.push(...refsOf(defs[next], new Set()))
      }
    }
  }
  return broken
}

/** Gemini API function declarations: `parameters` in its Schema (a subset of OpenAPI 3.0). */
export const gemini = (declaration: Node): Array<string> => {
  const broken: Array<string> = []
  if (!/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/.test(declaration.name)) broken.push(`name ${declaration.name}`)
  const allowed = new Set([
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties", "required",
    "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf", "propertyOrdering",
    "default", "items", "minimum", "maximum",
  ])
  const types = ["string", "number", "integer", "boolean", "array", "object"]
  const formats: Record<string, Array<string>> = { string: ["enum", "date-time"], number: ["float", "double"], integer: ["int32", "int64"] }
  const parameters = declaration.parameters as Node
  if (parameters?.type !== "object") broken.push("parameters is not an object schema")
  for (const { node, path } of nodes(parameters)) {
    for (const key of Object.keys(node)) if (!allowed.has(key)) broken.push(`${path}: ${key}`)
    if ("type" in node && !(typeof node.type === "string" && types.includes(node.type))) broken.push(`${path}: type ${JSON.stringify(node.type)}`)
    if (!("type" in node) && !("anyOf" in node)) broken.push(`${path}: no type`)
    if (Array.isArray(node.enum) && !node.enum.every((value: unknown) => typeof value === "string")) broken.push(`${path}: enum of non-strings`)
    if (typeof node.format === "string" && !(formats[node.type] ?? []).includes(node.format)) broken.push(`${path}: format ${node.format}`)
    for (const key of Object.keys(node.properties ?? {})) {
      if (!/^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/.test(key)) broken.push(`${path}/${key}: parameter name`)
    }
    for (const key of node.required ?? []) if (!(key in (node.properties ?? {}))) broken.push(`${path}: required ${key} is no property`)
  }
  return broken
}
