export * as Gemini from "./gemini"

// The `gemini` mapping: a definition as a Gemini API function declaration whose `parameters` is the Schema object
// Gemini takes, and a settlement as a `functionResponse` part.
//
// Google's published rules this follows (ai.google.dev/api/caching#Schema, #FunctionDeclaration and the function
// calling guide): a declaration is `{ name, description, parameters }`, sent as `tools: [{ functionDeclarations }]`;
// `name` starts with a letter or "_" and holds a-z, A-Z, 0-9, "_", ".", ":" and "-", at most 64 characters;
// parameter names start with a letter or "_" and hold letters, digits and "_", at most 64. `parameters` is a select
// subset of the OpenAPI 3.0 Schema: `type` (one of string, number, integer, boolean, array, object), `format`
// (string: enum, date-time; number: float, double; integer: int32, int64), `title`, `description`, `nullable`,
// `enum` (strings only), `items`, `minItems`, `maxItems`, `properties`, `required`, `propertyOrdering`,
// `minProperties`, `maxProperties`, `minLength`, `maxLength`, `pattern`, `minimum`, `maximum`, `default`, `anyOf`.
// No `$ref`/`$defs` (inlined here; a recursive schema cannot be, and is refused), no `additionalProperties` (dropped:
// decoding still refuses unknown keys; a record, whose keys are not listed, is refused), no type lists (a null
// branch becomes `nullable`), no `const` (an enum of one string). Other constraints move into the description.
//
// A result is `{ functionResponse: { id, name, response } }` with `response` `{ output }` or `{ error }` (the
// text), and inline media in its `parts` as `{ inlineData: { mimeType, data } }`.

import type { Settlement } from "../contract/settlement"
import type { Definition } from "../tool/definition"
import { ProviderResult } from "./provider-result"
import { ProviderSchema } from "./provider-schema"

type Node = ProviderSchema.Node

export const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/
export const PROPERTY_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/
export const TYPES: ReadonlySet<string> = new Set(["string", "number", "integer", "boolean", "array", "object"])
/**
 * Images as Gemini takes them inline (image understanding guide): the whole request at most 20 MB, so no one image
 * may be larger; sides are scaled and tiled by the API (768 px tiles), with no per-side limit tighter than core's.
 */
export const IMAGE_LIMITS = { maxBytes: 20 * 1024 * 1024 } as const
export const FORMATS: Readonly<Record<string, ReadonlySet<string>>> = {
  string: new Set(["enum", "date-time"]),
  number: new Set(["float", "double"]),
  integer: new Set(["int32", "int64"]),
}
/** Every keyword Gemini's Schema has (besides `nullable`, which the mapping writes itself). */
export const KEYWORDS: ReadonlySet<string> = new Set([
  "type",
  "format",
  "title",
  "description",
  "nullable",
  "enum",
  "items",
  "minItems",
  "maxItems",
  "properties",
  "required",
  "propertyOrdering",
  "minProperties",
  "maxProperties",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "default",
  "anyOf",
])

/** Keywords refused. */
const REFUSED = ProviderSchema.refusing([
  "allOf", "not", "if", "prefixItems", "patternProperties", "dependentSchemas", "propertyNames",
  "contains",
])

/** Keywords that only annotate or identify, dropped without a word. */
const SILENT: ReadonlySet<string> = new Set(["$schema", "$id", "$comment", "examples", "additionalProperties", "$defs", "$ref"])

const PROVIDER = "gemini"

export interface FunctionDeclaration {
  readonly name: string
  readonly description: string
  readonly parameters: Node
}

export interface InlineData {
  readonly inlineData: { readonly mimeType: string; readonly data: string }
}

export interface FunctionResponsePart {
  readonly functionResponse: {
    readonly id: string
    readonly name: string
    readonly response: { readonly output: string } | { readonly error: string }
    readonly parts?: ReadonlyArray<InlineData>
  }
}

interface Walk {
  readonly problems: ProviderSchema.Problems
  readonly defs: Readonly<Record<string, Node>>
  readonly recursive: ReadonlySet<string>
}

const REFUSED_REASON = "Gemini's Schema does not support it"

/** Keywords besides `type`, `anyOf` and `enum` that say something about a node's value (it is not any value). */
const TYPING: ReadonlySet<string> = new Set(["oneOf", "allOf", "$ref", "const", "not"])

/**
 * `input` as Gemini's Schema. A reference is written out, and a node that needs reshaping (branches, a type list,
 * a null type, a constant) is reshaped first; a node that then needs no change (nothing to drop or move, no
 * properties to order, every part unchanged) is answered as it is, shared with the frozen definition.
 */
const convert = (input: unknown, path: string, walk: Walk): Node => {
  const node = ProviderSchema.keyed(input)
  // One pass: what reshapes the node, and the constructs refused (reported unless the node is a reference).
  let ref, anyOf, oneOf, type: unknown
  let hasConst = false
  let keys = 0
  let branchKeys = 0
  let hasOneOf = false
  let last: string | undefined
  let refused: Array<string> | undefined
  for (const key in node) {
    keys++
    last = key
    switch (key) {
      case "$ref":
        ref = node[key]
        break
      case "anyOf":
        anyOf = node[key]
        branchKeys++
        break
      case "oneOf":
        oneOf = node[key]
        branchKeys++
        hasOneOf = true
        break
      case "type":
        type = node[key]
        break
      case "const":
        hasConst = true
        break
      default: {
        const construct = REFUSED.get(key)
        if (construct !== undefined) (refused ??= []).push(construct)
      }
    }
  }
  const name = ProviderSchema.reference(ref)
  if (name !== undefined) {
    if (walk.recursive.size > 0 && walk.recursive.has(name)) {
      walk.problems.add(path, `a recursive schema (${name} contains itself)`, "Gemini schemas have no references, so recursion cannot be written out")
      return {}
    }
    // A bare reference is its definition; siblings of `$ref` are laid over a copy of it.
    if (keys === 1) {
      const target = definition(walk.defs, name)
      if (ProviderSchema.isNode(target)) return convert(target, path, walk)
    }
    const { $ref: _, ...siblings } = node
    return convert({ ...(walk.defs[name] ?? {}), ...siblings }, path, walk)
  }
  if (refused !== undefined) for (const construct of refused) walk.problems.add(path, construct, REFUSED_REASON)
  if (Array.isArray(anyOf) || Array.isArray(oneOf) || Array.isArray(type) || type === "null" || hasConst) {
    return reshape(node, path, walk, { branchesOnly: keys === branchKeys, anyOfLast: last === "anyOf" && !hasOneOf })
  }
  return finish(node, false, path, walk)
}

/**
 * The definition `defs` has under `name`, found by comparing names: a name cut from a `$ref` is a fresh string, which
 * a property lookup would intern first.
 */
const definition = (defs: Readonly<Record<string, Node>>, name: string): unknown => {
  for (const key in defs) if (key === name) return defs[key]
  return undefined
}

/** What the pass over a node's keys saw of its branch keys (`anyOf`, `oneOf`). */
interface Shape {
  /** Every key of the node is a branch key. */
  readonly branchesOnly: boolean
  /** `anyOf` is the node's last key, and it has no `oneOf`. */
  readonly anyOfLast: boolean
}

/** A node with branches, a type list, a null type or a constant, in the shape Gemini's Schema has for it. */
const reshape = (input: Node, path: string, walk: Walk, shape: Shape): Node => {
  let node: Node = input
  // A null branch or a null in a type list is Gemini's `nullable`.
  let nullable = false
  const branches = Array.isArray(node.anyOf) ? node.anyOf : Array.isArray(node.oneOf) ? node.oneOf : undefined
  if (branches !== undefined) {
    const kept = (branches as ReadonlyArray<Node>).filter((branch) => !ProviderSchema.isNull(branch))
    nullable = kept.length < branches.length
    if (kept.length === 0) return onlyNull(path, walk)
    // The branches' keys go, and the one branch left takes their place, or the branches kept go last. Where that
    // changes nothing (a node of branches alone; every branch kept and `anyOf` last already), the node is its own.
    if (kept.length === 1 && shape.branchesOnly && ProviderSchema.isNode(kept[0])) return withNullable(convert(kept[0], path, walk), nullable)
    if (kept.length === 1 || kept.length < branches.length || !shape.anyOfLast || !Array.isArray(node.anyOf)) {
      const { anyOf: _a, oneOf: _o, ...rest } = node
      node = kept.length === 1 ? { ...kept[0]!, ...rest } : { ...rest, anyOf: kept }
      if (kept.length === 1) return withNullable(convert(node, path, walk), nullable)
    }
  }
  if (Array.isArray(node.type)) {
    const types = (node.type as ReadonlyArray<string>).filter((type) => type !== "null")
    nullable ||= types.length < node.type.length
    const { type: _, ...rest } = node
    node = types.length === 1 ? { ...rest, type: types[0] } : { ...rest, anyOf: types.map((type) => ({ type })) }
  }
  if (node.type === "null") return onlyNull(path, walk)
  if ("const" in node) {
    const { const: value, ...rest } = node
    node = { ...rest, enum: [value] }
  }
  return finish(node, nullable, path, walk)
}

/** A node whose reference is written out and whose branches, type list and constant are reshaped, as Gemini's Schema. */
const finish = (node: Node, nullable: boolean, path: string, walk: Walk): Node => {
  // One pass over the keywords: the structural ones kept, whether any is dropped, the unknown ones in order.
  let type, enumeration, format, additional, anyOf, items, properties: unknown
  let typed = false
  let drops = false
  let unknown: Array<string> | undefined
  for (const key in node) {
    const value = node[key]
    switch (key) {
      case "type":
        type = value
        typed = true
        break
      case "enum":
        enumeration = value
        typed = true
        break
      case "anyOf":
        anyOf = value
        typed = true
        break
      case "format":
        format = value
        break
      case "additionalProperties":
        additional = value
        drops = true
        break
      case "items":
        items = value
        break
      case "properties":
        properties = value
        break
      case "description":
      case "required":
      case "minimum":
      case "maximum":
        break
      default:
        if (TYPING.has(key)) typed = true
        if (SILENT.has(key) || REFUSED.has(key)) drops = true
        else if (!KEYWORDS.has(key)) (unknown ??= []).push(key)
    }
  }
  if (!typed) {
    walk.problems.add(path, "a value of any type", "Gemini's Schema needs a type for every value")
    return node
  }
  // Said in the description: an enum of other than strings, a format Gemini lacks for the type, unknown keywords.
  let moved = unknown
  const movesEnum = Array.isArray(enumeration) && !allStrings(enumeration)
  let movesFormat = false
  if (typeof format === "string") {
    const formats = typeof type === "string" ? FORMATS[type] : undefined
    movesFormat = formats === undefined || !formats.has(format)
  }
  if (movesEnum || movesFormat) moved = [...(movesEnum ? ["enum"] : []), ...(movesFormat ? ["format"] : []), ...(unknown ?? [])]
  if (typeof additional === "object" && additional !== null) {
    walk.problems.add(
      path,
      ProviderSchema.RECORD,
      "Gemini's Schema lists every property and has no additionalProperties; use a struct, or an array of key-value pairs",
    )
  }
  if (typeof type === "string" && !TYPES.has(type)) {
    walk.problems.add(path, `the type ${JSON.stringify(type)}`, "Gemini's Schema has no such type")
  }
  const mappedBranches = Array.isArray(anyOf) ? ProviderSchema.mapEach(anyOf, (branch) => convert(branch, path, walk)) : anyOf
  const mappedItems = ProviderSchema.isNode(items) ? convert(items, `${path}[]`, walk) : items
  const hasProperties = ProviderSchema.isNode(properties)
  const mappedProperties = hasProperties
    ? ProviderSchema.mapProperties(properties as Node, (key, value) => property(key, value, path, walk))
    : properties
  if (moved === undefined && !drops && mappedBranches === anyOf && mappedItems === items && !hasProperties) {
    return withNullable(node, nullable)
  }
  const copy = ProviderSchema.moveToDescription(node, moved ?? [], dropped)
  if (Array.isArray(anyOf)) copy.anyOf = mappedBranches
  if (ProviderSchema.isNode(items)) copy.items = mappedItems
  if (hasProperties) {
    copy.properties = mappedProperties
    // Gemini may otherwise produce arguments in any order; keep the author's.
    copy.propertyOrdering = Object.keys(mappedProperties as Node)
  }
  return withNullable(copy, nullable)
}

/** Whether every item is a string (holes skipped, as `every` skips them); by index, which reads a frozen array faster than a callback does. */
const allStrings = (items: ReadonlyArray<unknown>): boolean => {
  for (let index = 0, count = items.length; index < count; index++) {
    const item = items[index]
    if (typeof item !== "string" && (item !== undefined || index in items)) return false
  }
  return true
}

const property = (key: string, value: unknown, path: string, walk: Walk): Node => {
  const at = ProviderSchema.child(path, key)
  if (!PROPERTY_PATTERN.test(key)) {
    walk.problems.add(
      at,
      `the parameter name ${JSON.stringify(key)}`,
      'Gemini parameter names start with a letter or "_" and hold only letters, digits and "_", at most 64',
    )
  }
  return convert(value, at, walk)
}

/** Keywords Gemini's Schema leaves out without a word (SILENT) or refuses (REFUSED, reported by the walk). */
const dropped = (key: string): boolean => SILENT.has(key) || REFUSED.has(key)

const onlyNull = (path: string, walk: Walk): Node => {
  walk.problems.add(path, "a value that can only be null", "Gemini's Schema has no null type")
  return {}
}

const withNullable = (node: Node, nullable: boolean): Node => (nullable ? { ...node, nullable: true } : node)

export const tool = (definition: Definition.Definition): ProviderSchema.Mapped => {
  const problems = new ProviderSchema.Problems(definition.name)
  problems.checkName(
    NAME_PATTERN,
    `${PROVIDER} function names start with a letter or "_" and hold letters, digits, "_", ".", ":" and "-", at most 64`,
  )
  const defs = ProviderSchema.defsOf(definition.inputSchema)
  const parameters = convert(definition.inputSchema, "", { problems, defs, recursive: ProviderSchema.recursiveDefs(defs) })
  return problems.mapped((): FunctionDeclaration => ({ name: definition.name, description: definition.description, parameters }))
}

export const result = (settlement: Settlement.Info): FunctionResponsePart => {
  const texts: Array<string> = []
  const parts: Array<InlineData> = []
  for (const piece of ProviderResult.pieces(settlement)) {
    if (piece.type === "text") texts.push(piece.text)
    else if (piece.type === "media") parts.push({ inlineData: { mimeType: piece.mime, data: piece.data } })
    else texts.push(ProviderResult.described(piece, "not inline data, so not attached"))
  }
  const text = texts.join("\n")
  return {
    functionResponse: {
      id: settlement.callID,
      name: settlement.tool,
      response: ProviderResult.isError(settlement) ? { error: text } : { output: text },
      ...(parts.length === 0 ? {} : { parts }),
    },
  }
}
