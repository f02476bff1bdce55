export * as SchemaCost from "./schema-cost"

// How much checking one value against an MCP server's JSON Schema can cost, worked out from the schema alone before
// core compiles it. A schema of a few hundred bytes can make a validator try 2^N subschemas on one value
// (`anyOf: [{$ref: next}, {$ref: next}]`, N deep), on the thread every Location's calls share, its memory growing
// as fast (a failed `anyOf` keeps an error per branch): a server could stall and exhaust `core serve` at listing
// time with an output or input schema, or let a model do it with the input it chooses. Such a schema is refused.
//
// The measure: for each value a validator reaches (following every key a schema can name, and any other key or
// index), how many times each subschema is applied to it (through `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/
// `else`, `dependentSchemas` and `$ref`), with every key present at once: an upper bound. A schema that refers to
// itself on the same value without end, or whose count passes MAX_APPLIED on any value at any depth, has no use.
// Values deeper than the data's own nesting limit are not followed: an input past it is refused before any check.

import { Nesting } from "../contract/nesting"

/** The most subschema applications one value may get (a union of a few thousand variants passes). */
export const MAX_APPLIED = 5_000
/** The most distinct sets of subschemas a value can meet that are looked at: a bound on the work here. */
const MAX_STATES = 20_000

type Node = Readonly<Record<string, unknown>>

/** Keywords whose subschemas apply to the same value, as an array or one. */
const SAME_ARRAYS = ["allOf", "anyOf", "oneOf"] as const
const SAME_ONE = ["not", "if", "then", "else"] as const

const isSchema = (value: unknown): value is Node => typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Where a reference leads in the schema document: `#`, a JSON pointer (`#/$defs/a`), or an anchor (`#a`: a `$anchor`,
 * or a draft-07 `$id` of `#a`); undefined where it leads nowhere. Other references (by a `$id`'s URI) are not
 * followed, and `problem` refuses a schema holding one.
 */
const pointed = (root: unknown, ref: string, anchors: ReadonlyMap<string, Node>): unknown => {
  if (ref === "#") return root
  if (/^#[A-Za-z_][\w.:-]*$/.test(ref)) return anchors.get(ref.slice(1))
  if (!ref.startsWith("#/")) return undefined
  let at: unknown = root
  for (const raw of ref.slice(2).split("/")) {
    let part: string
    try {
      part = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~")
    } catch {
      return undefined
    }
    if (typeof at !== "object" || at === null || !Object.hasOwn(at, part)) return undefined
    at = (at as Record<string, unknown>)[part]
  }
  return at
}

/** The references a schema node makes. */
const REFS = ["$ref", "$dynamicRef", "$recursiveRef"] as const

/**
 * The subschemas applied to the same value as `node` (what it refers to included), or the reference it makes that
 * leads nowhere this check can follow.
 */
const sameOf = (root: unknown, node: Node, anchors: ReadonlyMap<string, Node>): ReadonlyArray<Node> | string => {
  const found: Array<Node> = []
  for (const key of SAME_ARRAYS) {
    const list = node[key]
    if (Array.isArray(list)) for (const each of list) if (isSchema(each)) found.push(each)
  }
  for (const key of SAME_ONE) if (isSchema(node[key])) found.push(node[key] as Node)
  // Draft 2020-12's dependentSchemas, and draft-07's dependencies where they are schemas (not lists of names).
  for (const key of ["dependentSchemas", "dependencies"]) {
    if (isSchema(node[key])) for (const each of Object.values(node[key] as Node)) if (isSchema(each)) found.push(each)
  }
  for (const key of REFS) {
    const ref = node[key]
    if (typeof ref !== "string") continue
    const target = pointed(root, ref, anchors)
    if (!isSchema(target)) return ref
    found.push(target)
  }
  return found
}

/**
 * The anchors of a schema document (`$anchor`, and a draft-07 `$id` of `#name`), or why its references cannot be
 * followed here: a `$id` naming a resource of its own below the root (its `#/…` references are its own then).
 */
const anchorsOf = (root: Node): Map<string, Node> | string => {
  const anchors = new Map<string, Node>()
  const pending: Array<{ readonly value: unknown; readonly top: boolean }> = [{ value: root, top: true }]
  let seen = 0
  while (pending.length > 0) {
    const { value, top } = pending.pop()!
    if (typeof value !== "object" || value === null) continue
    if (++seen > MAX_STATES * 10) return "it is too large to follow its references"
    if (Array.isArray(value)) {
      for (const each of value) pending.push({ value: each, top: false })
      continue
    }
    const node = value as Node
    if (typeof node.$anchor === "string") anchors.set(node.$anchor, node)
    if (typeof node.$id === "string") {
      if (/^#[A-Za-z_][\w.:-]*$/.test(node.$id)) anchors.set(node.$id.slice(1), node)
      else if (!top) return `it names a schema of its own inside it ($id ${JSON.stringify(node.$id).slice(0, 100)}), whose references core does not follow`
    }
    for (const [key, each] of Object.entries(node)) if (!DATA_KEYWORDS.has(key)) pending.push({ value: each, top: false })
  }
  return anchors
}

/** Keywords whose values are data, not schemas: what they hold is never a subschema (`enum: [{"$id": …}]`). */
const DATA_KEYWORDS: ReadonlySet<string> = new Set(["enum", "const", "default", "examples", "example"])

/** A key of a value's children as the schemas can tell them apart. */
type Key = { readonly property: string } | { readonly index: number } | "other-property" | "other-index" | "property-name"

/** The subschemas `node` applies to a child of its value under `key`. */
const childrenOf = (node: Node, key: Key): ReadonlyArray<unknown> => {
  const found: Array<unknown> = []
  const properties = isSchema(node.properties) ? node.properties : {}
  if (key === "property-name") return [node.propertyNames]
  if (key === "other-property" || (typeof key === "object" && "property" in key)) {
    const named = typeof key === "object" && Object.hasOwn(properties, key.property)
    if (named) found.push(properties[(key as { property: string }).property])
    if (isSchema(node.patternProperties)) found.push(...Object.values(node.patternProperties))
    if (!named) found.push(node.additionalProperties, node.unevaluatedProperties)
    return found
  }
  const index = typeof key === "object" && "index" in key ? key.index : undefined
  const prefix = Array.isArray(node.prefixItems) ? node.prefixItems : Array.isArray(node.items) ? node.items : undefined
  if (prefix !== undefined && index !== undefined && index < prefix.length) found.push(prefix[index])
  else {
    if (!Array.isArray(node.items)) found.push(node.items)
    found.push(node.additionalItems, node.unevaluatedItems)
  }
  found.push(node.contains)
  return found
}

/** The keys the subschemas of a value name for its children, and one of each other kind. */
const keysOf = (nodes: Iterable<Node>): ReadonlyArray<Key> => {
  const properties = new Set<string>()
  let indexes = 0
  for (const node of nodes) {
    if (isSchema(node.properties)) for (const name of Object.keys(node.properties)) properties.add(name)
    const prefix = Array.isArray(node.prefixItems) ? node.prefixItems : Array.isArray(node.items) ? node.items : []
    indexes = Math.max(indexes, prefix.length)
  }
  return [
    ...[...properties].map((property) => ({ property })),
    ...Array.from({ length: indexes }, (_, index) => ({ index })),
    "other-property",
    "other-index",
    "property-name",
  ]
}

/**
 * Why checking a value against `schema` could cost without bound, or undefined when it cannot: a subschema that
 * applies itself to the same value without end, or a value that some data would make meet more than MAX_APPLIED
 * subschemas.
 */
export const problem = (schema: unknown): string | undefined => {
  const root = schema
  if (!isSchema(schema)) return undefined
  const anchors = anchorsOf(schema)
  if (typeof anchors === "string") return anchors
  const ids = new Map<Node, number>()
  const idOf = (node: Node) => ids.get(node) ?? (ids.set(node, ids.size), ids.size - 1)
  /** Each node's applications on one value, itself included, by node: memoized, capped past MAX_APPLIED. */
  const closures = new Map<Node, Map<Node, number>>()
  const onStack = new Set<Node>()
  let endless: string | undefined
  let unfollowed: string | undefined
  const closure = (node: Node): Map<Node, number> => {
    const known = closures.get(node)
    if (known !== undefined) return known
    if (onStack.has(node)) {
      endless ??= "a subschema applies itself to the same value without end"
      return new Map()
    }
    onStack.add(node)
    const applied = new Map<Node, number>([[node, 1]])
    const same = sameOf(root, node, anchors)
    if (typeof same === "string") {
      unfollowed ??= `it refers to ${JSON.stringify(same).slice(0, 100)}, which core does not follow`
      return applied
    }
    for (const each of same) {
      for (const [reached, times] of closure(each)) applied.set(reached, Math.min(MAX_APPLIED + 1, (applied.get(reached) ?? 0) + times))
    }
    onStack.delete(node)
    closures.set(node, applied)
    return applied
  }
  /** The sets of subschemas (each with how many times it applies) met on some value, and those yet to be followed. */
  const seen = new Set<string>()
  const pending: Array<{ readonly state: Map<Node, number>; readonly depth: number }> = []
  /** A value met by `given`: its subschemas counted with what they apply, and followed unless met before. */
  const enter = (given: Map<Node, number>, depth: number): string | undefined => {
    const state = new Map<Node, number>()
    let total = 0
    for (const [node, times] of given) {
      for (const [reached, count] of closure(node)) {
        const now = Math.min(MAX_APPLIED + 1, (state.get(reached) ?? 0) + times * count)
        total += now - (state.get(reached) ?? 0)
        state.set(reached, now)
      }
    }
    if (endless !== undefined) return endless
    if (unfollowed !== undefined) return unfollowed
    if (total > MAX_APPLIED) return `some data would meet more than ${MAX_APPLIED} of its subschemas on one value`
    const key = [...state].map(([node, times]) => `${idOf(node)}:${times}`).sort().join(",")
    if (seen.has(key) || depth > Nesting.MAX_DEPTH) return undefined
    seen.add(key)
    if (seen.size > MAX_STATES) return `it is too intricate to bound what checking a value costs (more than ${MAX_STATES} cases)`
    pending.push({ state, depth })
    return undefined
  }
  const first = enter(new Map([[schema, 1]]), 0)
  if (first !== undefined) return first
  while (pending.length > 0) {
    const { state, depth } = pending.pop()!
    for (const key of keysOf(state.keys())) {
      const next = new Map<Node, number>()
      for (const [node, times] of state) {
        for (const child of childrenOf(node, key)) {
          if (isSchema(child)) next.set(child, Math.min(MAX_APPLIED + 1, (next.get(child) ?? 0) + times))
        }
      }
      if (next.size === 0) continue
      const found = enter(next, depth + 1)
      if (found !== undefined) return found
    }
  }
  return undefined
}
