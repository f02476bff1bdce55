export * as OpenAiStrict from "./openai-strict"

// The `openai-strict` mapping: a definition as an OpenAI function tool with `strict: true` (Structured Outputs: the
// model's arguments always match the schema), and the way back: arguments normalised before decoding, so that
// `null` for a property the tool declared optional means it was left out. Results are `openai`'s.
//
// OpenAI's published rules for strict schemas (platform.openai.com/docs/guides/structured-outputs, "Supported
// schemas"): every object lists all its properties in `required` and has `additionalProperties: false` (an optional
// property is one whose type admits null); the root is an object; types string, number, integer, boolean, object,
// array, enum and anyOf, with `$defs`/`$ref` (recursion allowed); strings take `pattern` and `format` (date-time,
// time, date, duration, email, hostname, ipv4, ipv6, uuid); numbers `minimum`, `maximum`, `exclusiveMinimum`,
// `exclusiveMaximum`, `multipleOf`; arrays `minItems`, `maxItems`. Not supported: `allOf`, `not`, `if`/`then`/
// `else`, `dependentRequired`, `dependentSchemas`, `patternProperties`, `propertyNames`, `unevaluatedProperties`,
// `minProperties`, `maxProperties`, string `minLength`/`maxLength`. At most 5,000 properties in all and 10 levels of
// object nesting. So: a record (keys not listed), a tuple, any-value and the unsupported combinators cannot be
// expressed and are refused; constraints strict mode lacks move into the description (decoding still checks them).

import type { Definition } from "../tool/definition"
import { OpenAi } from "./openai"
import { ProviderSchema } from "./provider-schema"

type Node = ProviderSchema.Node

export const MAX_PROPERTIES = 5_000
export const MAX_NESTING = 10
export const FORMATS: ReadonlySet<string> = new Set(["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"])

/** Keywords refused. */
const REFUSED = ProviderSchema.refusing([
  "allOf", "not", "if", "prefixItems", "patternProperties", "dependentRequired", "dependentSchemas",
  "propertyNames", "unevaluatedProperties", "unevaluatedItems", "contains",
])

/** Constraints strict mode lacks: said in the description instead. */
const MOVED: ReadonlySet<string> = new Set(["minLength", "maxLength", "minProperties", "maxProperties", "uniqueItems", "default"])

const unsupportedFormat = (key: string, value: unknown) => key === "format" && !FORMATS.has(value as string)

const PROVIDER = "openai-strict"

interface Walk {
  readonly problems: ProviderSchema.Problems
  properties: number
}

/**
 * A property the tool declares optional, as strict mode says it: `node` as it is when it admits null already (a null
 * branch, a null in its type list, null among its values), else `node` also admitting null.
 */
const optional = (node: Node): Node => {
  const type = node.type
  const anyOf = node.anyOf
  const values = node.enum
  if (
    type === "null" ||
    (Array.isArray(type) && type.includes("null")) ||
    (Array.isArray(anyOf) && anyOf.some(ProviderSchema.isNull)) ||
    (Array.isArray(values) && values.includes(null))
  ) {
    return node
  }
  if (Array.isArray(anyOf)) return { ...node, anyOf: [...anyOf, { type: "null" }] }
  if (typeof type === "string" && !("enum" in node) && !("$ref" in node)) return { ...node, type: [type, "null"] }
  // Without a description the node itself is the branch; else the description stays on the whole.
  if (!("description" in node)) return { anyOf: [node, { type: "null" }] }
  const { description, ...rest } = node
  return { anyOf: [rest, { type: "null" }], ...(description === undefined ? {} : { description }) }
}

const REFUSED_REASON = "OpenAI strict mode does not support it"

/**
 * `input` as a strict schema node. A node that needs no change (no constraint to move, every object closed and
 * listing all its properties as required, every part unchanged) is answered as it is, shared with the frozen
 * definition; one that changes is copied once.
 */
const strict = (input: unknown, path: string, level: number, walk: Walk): Node => {
  const node = ProviderSchema.keyed(input)
  // One pass over the keywords: the structural ones kept, the refused reported, the moved collected in order.
  let type, properties, required, items, anyOf, oneOf, additional, constant: unknown
  let hasProperties = false
  let hasConst = false
  // Whether the node says anything about its value (a type, branches, a reference, values).
  let typed = false
  let moved: Array<string> | undefined
  for (const key in node) {
    const value = node[key]
    switch (key) {
      case "type":
        type = value
        typed = true
        break
      case "properties":
        properties = value
        hasProperties = true
        break
      case "required":
        required = value
        break
      case "items":
        items = value
        break
      case "anyOf":
        anyOf = value
        typed = true
        break
      case "oneOf":
        oneOf = value
        typed = true
        break
      case "additionalProperties":
        additional = value
        break
      case "const":
        constant = value
        hasConst = true
        typed = true
        break
      case "$ref":
      case "enum":
        typed = true
        break
      default: {
        const construct = REFUSED.get(key)
        if (construct !== undefined) {
          walk.problems.add(path, construct, REFUSED_REASON)
          if (key === "allOf" || key === "not") typed = true
        } else if (MOVED.has(key) || unsupportedFormat(key, value)) (moved ??= []).push(key)
      }
    }
  }
  if (!typed) {
    walk.problems.add(path, "a value of any type", "OpenAI strict mode needs a type for every value")
    return node
  }
  // A oneOf becomes an anyOf: the provider dialects have no oneOf, and every branch is tried.
  const fromOneOf = Array.isArray(oneOf)
  const branches = fromOneOf ? oneOf : anyOf
  const mappedBranches = Array.isArray(branches)
    ? ProviderSchema.mapEach(branches, (branch) => strict(branch, path, level, walk))
    : branches
  const mappedItems = ProviderSchema.isNode(items) ? strict(items, `${path}[]`, level, walk) : items
  const object = type === "object" || hasProperties
  let mappedProperties = properties
  // Whether `required` already lists every property, in order, as strict mode's must.
  let allListed = true
  if (object) {
    if (level + 1 > MAX_NESTING) {
      walk.problems.add(path, `an object nested ${level + 1} levels deep`, `OpenAI strict mode allows at most ${MAX_NESTING} levels`)
    }
    if (additional !== undefined && additional !== false) {
      walk.problems.add(
        path,
        ProviderSchema.RECORD,
        "OpenAI strict mode needs every key listed, with additionalProperties false; use a struct, or an array of key-value pairs",
      )
    }
    const listed: ReadonlyArray<unknown> = Array.isArray(required) ? required : []
    const count = listed.length
    // `listed` is read once, in order, its length once: the keys before `next` are properties already seen, so a
    // property is required only if it is listed from `next` on. Reading a frozen array is slow, and it usually lists
    // the required properties in their order.
    let next = 0
    mappedProperties = ProviderSchema.mapProperties(ProviderSchema.isNode(properties) ? properties : {}, (key, value) => {
      walk.properties++
      const mapped = strict(value, ProviderSchema.child(path, key), level + 1, walk)
      let isRequired = false
      if (next < count) {
        if (listed[next] === key) {
          isRequired = true
          next++
        } else {
          allListed = false
          isRequired = listed.indexOf(key, next + 1) !== -1
        }
      } else allListed = false
      return isRequired ? mapped : optional(mapped)
    })
    allListed &&= next === count && Array.isArray(required)
  }
  const unchanged =
    moved === undefined &&
    !hasConst &&
    !fromOneOf &&
    mappedBranches === anyOf &&
    mappedItems === items &&
    (!object || (mappedProperties === properties && additional === false && allListed))
  if (unchanged) return node
  const copy = ProviderSchema.moveToDescription(node, moved ?? [])
  if (hasConst) {
    copy.enum = [constant]
    delete copy.const
  }
  if (fromOneOf) {
    copy.anyOf = mappedBranches
    delete copy.oneOf
  } else if (Array.isArray(branches)) copy.anyOf = mappedBranches
  if (ProviderSchema.isNode(items)) copy.items = mappedItems
  if (object) {
    copy.properties = mappedProperties
    copy.required = Object.keys(mappedProperties as Node)
    copy.additionalProperties = false
  }
  return copy
}

export const tool = (definition: Definition.Definition): ProviderSchema.Mapped => {
  const problems = new ProviderSchema.Problems(definition.name)
  problems.checkName(OpenAi.NAME_PATTERN, OpenAi.nameRule(PROVIDER))
  const walk: Walk = { problems, properties: 0 }
  const { $defs } = definition.inputSchema
  const parameters: Record<string, unknown> = strict(ProviderSchema.withoutDefs(definition.inputSchema), "", 0, walk)
  if (ProviderSchema.isNode($defs)) {
    parameters.$defs = ProviderSchema.mapProperties($defs, (name, node) => strict(node, `$defs.${name}`, 0, walk))
  }
  if (walk.properties > MAX_PROPERTIES) {
    problems.add("", `${walk.properties} properties`, `OpenAI strict mode allows at most ${MAX_PROPERTIES} in one schema`)
  }
  return problems.mapped(
    (): OpenAi.FunctionTool => ({
      type: "function",
      name: definition.name,
      description: definition.description,
      parameters,
      strict: true,
    }),
  )
}

// The way back

const jsonType = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "array" : typeof value === "number" ? "number" : typeof value

/**
 * Whether `value` could be an instance of `branch`: by type; for an object, by its keys (each one the branch's, as
 * strict mode allows no other, and every key the branch requires there) and the constant values of its properties.
 * Strict mode sends every key, so two object branches are told apart by their keys, not by the first that could take
 * some of them (its optional keys' nulls were taken off, the other branch's left, and the input refused).
 */
const fits = (branch: Node, value: unknown): boolean => {
  const types = typeof branch.type === "string" ? [branch.type] : Array.isArray(branch.type) ? (branch.type as Array<string>) : []
  const type = jsonType(value)
  if (types.length > 0 && !types.some((candidate) => candidate === type || (candidate === "integer" && type === "number"))) {
    return false
  }
  if (Array.isArray(branch.enum) && !branch.enum.some((item) => item === value)) return false
  if (type !== "object" || !ProviderSchema.isNode(branch.properties)) return true
  const properties = branch.properties as Record<string, Node>
  if (Object.keys(value as Node).some((key) => !Object.hasOwn(properties, key))) return false
  const required: ReadonlyArray<unknown> = Array.isArray(branch.required) ? branch.required : []
  if (required.some((key) => typeof key === "string" && !Object.hasOwn(value as Node, key))) return false
  return Object.entries(properties).every(([key, property]) => {
    const fixed = Array.isArray(property.enum) && property.enum.length === 1 ? property.enum[0] : property.const
    return fixed === undefined || !(key in (value as Node)) || (value as Node)[key] === fixed
  })
}

const normalize = (node: Node, value: unknown, defs: Readonly<Record<string, Node>>): unknown => {
  const ref = ProviderSchema.refName(node)
  const resolved = ref === undefined ? node : (defs[ref] ?? node)
  const branches = Array.isArray(resolved.anyOf) ? resolved.anyOf : Array.isArray(resolved.oneOf) ? resolved.oneOf : undefined
  if (branches !== undefined) {
    const branch = (branches as ReadonlyArray<Node>)
      .map((candidate) => {
        const name = ProviderSchema.refName(candidate)
        return name === undefined ? candidate : (defs[name] ?? candidate)
      })
      .find((candidate) => fits(candidate, value))
    return branch === undefined ? value : normalize(branch, value, defs)
  }
  if (Array.isArray(value)) {
    return ProviderSchema.isNode(resolved.items) ? value.map((item) => normalize(resolved.items as Node, item, defs)) : value
  }
  if (!ProviderSchema.isNode(value) || !ProviderSchema.isNode(resolved.properties)) return value
  const properties = resolved.properties as Record<string, Node>
  const required: ReadonlyArray<unknown> = Array.isArray(resolved.required) ? resolved.required : []
  const result: Record<string, unknown> = {}
  // Defined, never assigned: an own `__proto__` key from JSON would otherwise become the result's prototype, and
  // decoding would read the properties it supplies as arguments the call never sent.
  const keep = (key: string, item: unknown) =>
    Object.defineProperty(result, key, { value: item, enumerable: true, writable: true, configurable: true })
  for (const [key, item] of Object.entries(value)) {
    if (!Object.hasOwn(properties, key)) keep(key, item)
    else if (item !== null || required.includes(key)) keep(key, normalize(properties[key]!, item, defs))
  }
  return result
}

/**
 * The arguments of a strict call as the tool declared them: `null` for a property the tool's own schema makes
 * optional means absent (strict mode can only say "optional" as "may be null"), at every depth. Everything else,
 * including values the schema would refuse, is passed on unchanged for decoding to judge.
 */
export const normalizer =
  (definition: Definition.Definition) =>
  (input: unknown): unknown =>
    normalize(definition.inputSchema, input, ProviderSchema.defsOf(definition.inputSchema))
