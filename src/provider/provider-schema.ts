export * as ProviderSchema from "./provider-schema"

// What the provider mappings share: reading core's input JSON Schemas (draft 2020-12, as src/tool/json-schema.ts
// derives them), collecting the constructs a provider cannot express, and moving constraints a provider's dialect
// cannot state into the description, where the model still reads them. Decoding keeps enforcing every constraint
// of the tool's own schema, so a constraint moved into words is never lost. A mapping copies only the nodes it
// changes and answers the others as they are: a definition is frozen, so its parts can be shared with what a provider
// receives, never changed through it. Nothing here knows a provider's rules.

import type { JsonSchema } from "../tool/json-schema"

export type Node = { readonly [key: string]: unknown }

/** One construct a provider cannot express, found while preparing one tool. */
export interface Problem {
  readonly tool: string
  /** Where in the input: `pattern`, `edits[].range`, `(root)`. */
  readonly path: string
  /** The construct, in words: "a record (an object whose keys are not listed)". */
  readonly construct: string
  /** Why the provider refuses it and what to do instead. */
  readonly reason: string
}

/** A provider's tool for one definition, or the problems that keep it from being offered there. */
export type Mapped = { readonly _tag: "Tool"; readonly tool: unknown } | { readonly _tag: "Problems"; readonly problems: ReadonlyArray<Problem> }

/** Collects the problems of one tool's schema. */
export class Problems {
  readonly found: Array<Problem> = []
  constructor(readonly tool: string) {}
  add(path: string, construct: string, reason: string): void {
    this.found.push({ tool: this.tool, path: path === "" ? "(root)" : path, construct, reason })
  }
  /** Adds the problem of a tool name the provider's `pattern` refuses; `rule` says what the provider's names hold. */
  checkName(pattern: RegExp, rule: string): void {
    if (!pattern.test(this.tool)) this.add("", `the tool name ${JSON.stringify(this.tool)}`, rule)
  }
  mapped(tool: () => unknown): Mapped {
    return this.found.length === 0 ? { _tag: "Tool", tool: tool() } : { _tag: "Problems", problems: this.found }
  }
}

/** The keywords of constructs a provider may refuse, each with the construct in words, as a problem names it. */
const CONSTRUCTS = {
  allOf: "an allOf (a value matching several schemas at once)",
  not: "a not (any value but one schema)",
  if: "a conditional schema (if/then/else)",
  prefixItems: "a tuple (array items typed by position)",
  patternProperties: "properties matched by pattern",
  dependentRequired: "dependent requirements",
  dependentSchemas: "dependent schemas",
  propertyNames: "a rule on property names",
  unevaluatedProperties: "unevaluatedProperties",
  unevaluatedItems: "unevaluatedItems",
  contains: "a contains rule (some item matching a schema)",
} as const

/** The keywords a provider refuses, each with its construct in words (looked up once per keyword of every node). */
export const refusing = (keywords: ReadonlyArray<keyof typeof CONSTRUCTS>): ReadonlyMap<string, string> =>
  new Map(keywords.map((keyword) => [keyword, CONSTRUCTS[keyword]]))

/** The construct of an object whose keys are not listed (`additionalProperties` a schema), which no mapping takes. */
export const RECORD = "a record (an object whose keys are not listed in advance)"

export const isNode = (value: unknown): value is Node => typeof value === "object" && value !== null && !Array.isArray(value)

export const child = (path: string, key: string): string => (path === "" ? key : `${path}.${key}`)

/** Sets `key` on a plain object as an own property, "__proto__" (a legal property name in a schema) included. */
export const put = (target: Record<string, unknown>, key: string, value: unknown): void => {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
}

/**
 * `value` as a node whose keywords a walk reads: an object, or an array (its keys are indices, none a keyword). A
 * string, number or boolean has no keywords to read: a TypeError, as the `in` operator asking it for one would be.
 */
export const keyed = (value: unknown): Node => {
  if (typeof value !== "object" || value === null) throw new TypeError(`A schema cannot be ${JSON.stringify(value)}`)
  return value as Node
}

/**
 * `items` mapped one by one, in order: the same array when every item maps to itself, else a fresh one. A hole
 * stays empty, as `Array.prototype.map` leaves it.
 */
export const mapEach = (items: ReadonlyArray<unknown>, map: (item: unknown) => unknown): ReadonlyArray<unknown> => {
  let copy: Array<unknown> | undefined
  for (let index = 0, count = items.length; index < count; index++) {
    const item = items[index]
    const mapped = item === undefined && !(index in items) ? item : map(item)
    if (copy === undefined && mapped !== item) copy = items.slice(0, index)
    if (copy !== undefined) copy.push(mapped)
  }
  return copy ?? items
}

/**
 * The named schemas of `properties` (a node's properties, a document's `$defs`) mapped one by one, in order: the
 * same object when every one maps to itself, else a fresh one with the same keys in the same order.
 */
export const mapProperties = (properties: Node, map: (key: string, value: unknown) => unknown): Node => {
  let copy: Record<string, unknown> | undefined
  for (const key in properties) {
    const value = properties[key]
    const mapped = map(key, value)
    if (copy === undefined && mapped !== value) {
      copy = {}
      for (const earlier in properties) {
        if (earlier === key) break
        put(copy, earlier, properties[earlier])
      }
    }
    if (copy !== undefined) put(copy, key, mapped)
  }
  return copy ?? properties
}

/** A document's root without its `$defs`: the document itself when it has none, else a copy. */
export const withoutDefs = (document: JsonSchema.JsonSchema): Node => {
  if (!Object.hasOwn(document, "$defs")) return document
  const root: Record<string, unknown> = {}
  for (const key in document) if (key !== "$defs") put(root, key, document[key])
  return root
}

const DEFS_PREFIX = "#/$defs/"
const LINE_TERMINATOR = /[\n\r\u2028\u2029]/

/**
 * The `$defs` name a `$ref` value points to, if it is a local reference: what follows `#/$defs/`, at least one
 * character and no line terminator (what `/^#\/\$defs\/(.+)$/` captures, without making a match).
 */
export const reference = (ref: unknown): string | undefined =>
  typeof ref === "string" && ref.length > DEFS_PREFIX.length && ref.startsWith(DEFS_PREFIX) && !LINE_TERMINATOR.test(ref)
    ? ref.slice(DEFS_PREFIX.length)
    : undefined

/** The `$defs` name a node's local reference points to, if it is one. */
export const refName = (node: Node): string | undefined => reference(node.$ref)

/** The definitions of a document (core's inputs keep shared parts in `$defs` at the root). */
export const defsOf = (document: JsonSchema.JsonSchema): Readonly<Record<string, Node>> =>
  isNode(document.$defs) ? (document.$defs as Record<string, Node>) : {}

/** The branch that only admits null: `{ "type": "null" }`. */
export const isNull = (node: unknown): boolean => isNode(node) && node.type === "null" && Object.keys(node).length === 1

const words = (key: string, value: unknown): string => {
  const shown = JSON.stringify(value)
  switch (key) {
    case "minimum":
      return `at least ${shown}`
    case "maximum":
      return `at most ${shown}`
    case "exclusiveMinimum":
      return `greater than ${shown}`
    case "exclusiveMaximum":
      return `less than ${shown}`
    case "multipleOf":
      return `a multiple of ${shown}`
    case "minLength":
      return `at least ${shown} characters`
    case "maxLength":
      return `at most ${shown} characters`
    case "pattern":
      return `matching the regular expression ${shown}`
    case "format":
      return `format ${shown}`
    case "minItems":
      return `at least ${shown} items`
    case "maxItems":
      return `at most ${shown} items`
    case "uniqueItems":
      return value === true ? "items all different" : ""
    case "minProperties":
      return `at least ${shown} keys`
    case "maxProperties":
      return `at most ${shown} keys`
    case "default":
      return `default ${shown}`
    case "enum":
      return `one of ${(value as ReadonlyArray<unknown>).map((item) => JSON.stringify(item)).join(", ")}`
    case "const":
      return `exactly ${shown}`
    default:
      return `${key} ${shown}`
  }
}

/**
 * A fresh copy of `node` (the caller may change it) without the `keys` it holds, their constraints appended to its
 * description in words ("Wall-clock limit (at least 1, at most 600000)"), so the model still reads what decoding
 * will check.
 */
export const moveToDescription = (
  node: Node,
  keys: ReadonlyArray<string>,
  /** Keys the copy leaves out besides `keys`, without a word in the description. */
  dropped?: (key: string) => boolean,
): Record<string, unknown> => {
  const copy: Record<string, unknown> = {}
  // Mapping a catalog is one walk of every schema node: plain loops, no intermediate arrays.
  for (const key in node) if (!keys.includes(key) && dropped?.(key) !== true) put(copy, key, node[key])
  let note = ""
  for (const key of keys) {
    if (!(key in node)) continue
    const text = words(key, node[key])
    if (text !== "") note = note === "" ? text : `${note}, ${text}`
  }
  if (note === "") return copy
  copy.description =
    typeof node.description === "string" && node.description !== "" ? `${node.description} (${note})` : `(${note})`
  return copy
}

const NONE: ReadonlySet<string> = new Set()

/** The names of a definition's `$defs` that refer to themselves, directly or through others. */
export const recursiveDefs = (defs: Readonly<Record<string, Node>>): ReadonlySet<string> => {
  // Only definitions that refer to others can be part of a cycle: most refer to none, and then none is recursive.
  let refs: Map<string, Set<string>> | undefined
  for (const name in defs) {
    const definition = defs[name]
    const into = typeof definition === "object" && definition !== null ? references(definition, undefined) : undefined
    if (into !== undefined) (refs ??= new Map()).set(name, into)
  }
  if (refs === undefined) return NONE
  const recursive = new Set<string>()
  for (const [start, first] of refs) {
    const seen = new Set<string>()
    const stack = [...first]
    while (stack.length > 0) {
      const next = stack.pop()!
      if (next === start) {
        recursive.add(start)
        break
      }
      if (seen.has(next)) continue
      seen.add(next)
      stack.push(...(refs.get(next) ?? []))
    }
  }
  return recursive
}

/** Adds the definitions `value` refers to, anywhere inside it, to `into` (made when the first is found). */
const references = (value: unknown, into: Set<string> | undefined): Set<string> | undefined => {
  if (Array.isArray(value)) {
    for (let index = 0, count = value.length; index < count; index++) {
      const item = value[index]
      if (typeof item === "object" && item !== null) into = references(item, into)
    }
    return into
  }
  const name = refName(value as Node)
  if (name !== undefined) (into ??= new Set()).add(name)
  for (const key in value as Node) {
    const item = (value as Node)[key]
    if (typeof item === "object" && item !== null) into = references(item, into)
  }
  return into
}
