export * as ProviderSchema from "./provider-schema"

// What the provider mappings share: reading core's input JSON Schemas (draft 2020-12, as src/tool/json-schema.ts
// derives them), collecting the constructs a provider cannot express, and moving constraints a provider's dialect
// cannot state into the description, where the model still reads them. Decoding keeps enforcing every constraint
// of the tool's own schema, so a constraint moved into words is never lost. Nothing here knows a provider's rules.

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

/** The keywords a provider refuses, each with its construct in words (a list: `scan` walks it once per node). */
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

/** The `$defs` name a local reference points to, if it is one. */
export const refName = (node: Node): string | undefined =>
  typeof node.$ref === "string" ? /^#\/\$defs\/(.+)$/.exec(node.$ref)?.[1] : undefined

/**
 * Maps the branches and the items of `copy` (a node's fresh copy, changed in place) with `map`: a `oneOf` becomes
 * an `anyOf` (the provider dialects have no oneOf; every branch is tried), each branch at `path`, the items at
 * `path[]`.
 */
export const mapBranchesAndItems = (
  copy: Record<string, unknown>,
  path: string,
  map: (node: Node, path: string) => Node,
): void => {
  if (Array.isArray(copy.oneOf)) {
    copy.anyOf = copy.oneOf
    delete copy.oneOf
  }
  if (Array.isArray(copy.anyOf)) copy.anyOf = copy.anyOf.map((branch: Node) => map(branch, path))
  if (isNode(copy.items)) copy.items = map(copy.items, `${path}[]`)
}

/**
 * One pass over a node's keywords: the constructs of those `refused` names (keyword → construct in words), and the
 * keywords to move into the description (those in `moved`, and those `alsoMoved` picks by value).
 */
export const scan = (
  node: Node,
  refused: ReadonlyMap<string, string>,
  moved: ReadonlySet<string>,
  alsoMoved?: (key: string, value: unknown) => boolean,
): { readonly refused: ReadonlyArray<string>; readonly moved: ReadonlyArray<string> } => {
  const found = { refused: [] as Array<string>, moved: [] as Array<string> }
  for (const key in node) {
    const construct = refused.get(key)
    if (construct !== undefined) found.refused.push(construct)
    else if (moved.has(key) || alsoMoved?.(key, node[key]) === true) found.moved.push(key)
  }
  return found
}

/** The definitions of a document (core's inputs keep shared parts in `$defs` at the root). */
export const defsOf = (document: JsonSchema.JsonSchema): Readonly<Record<string, Node>> =>
  isNode(document.$defs) ? (document.$defs as Record<string, Node>) : {}

/** The branch that only admits null: `{ "type": "null" }`. */
export const isNull = (node: unknown): boolean => isNode(node) && node.type === "null" && Object.keys(node).length === 1

/** Whether the node admits null (a null branch, a null in its type list, or null among its values). */
export const admitsNull = (node: Node): boolean =>
  node.type === "null" ||
  (Array.isArray(node.type) && node.type.includes("null")) ||
  (Array.isArray(node.anyOf) && node.anyOf.some(isNull)) ||
  (Array.isArray(node.enum) && node.enum.includes(null))

/** Whether a node says nothing about its value: any JSON value is valid. */
export const isAny = (node: Node): boolean =>
  !("type" in node) &&
  !("anyOf" in node) &&
  !("oneOf" in node) &&
  !("allOf" in node) &&
  !("$ref" in node) &&
  !("enum" in node) &&
  !("const" in node) &&
  !("not" in node)

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

/** The names of a definition's `$defs` that refer to themselves, directly or through others. */
export const recursiveDefs = (defs: Readonly<Record<string, Node>>): ReadonlySet<string> => {
  const refs = new Map<string, Set<string>>()
  const collect = (value: unknown, into: Set<string>): void => {
    if (typeof value !== "object" || value === null) return
    if (Array.isArray(value)) {
      for (const item of value) collect(item, into)
      return
    }
    const name = refName(value as Node)
    if (name !== undefined) into.add(name)
    for (const key in value) collect((value as Node)[key], into)
  }
  for (const name in defs) {
    const into = new Set<string>()
    collect(defs[name], into)
    refs.set(name, into)
  }
  const recursive = new Set<string>()
  for (const start of refs.keys()) {
    const seen = new Set<string>()
    const stack = [...(refs.get(start) ?? [])]
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
