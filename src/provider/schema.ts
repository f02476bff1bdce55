export * as ProviderSchema from "./schema"

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
  mapped(tool: () => unknown): Mapped {
    return this.found.length === 0 ? { _tag: "Tool", tool: tool() } : { _tag: "Problems", problems: this.found }
  }
}

export const isNode = (value: unknown): value is Node => typeof value === "object" && value !== null && !Array.isArray(value)

export const child = (path: string, key: string): string => (path === "" ? key : `${path}.${key}`)

/** The `$defs` name a local reference points to, if it is one. */
export const refName = (node: Node): string | undefined =>
  typeof node.$ref === "string" ? /^#\/\$defs\/(.+)$/.exec(node.$ref)?.[1] : undefined

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
  ["type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const", "not"].every((key) => !(key in node))

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
 * A copy of `node` without the `keys` it holds, their constraints appended to its description in words
 * ("Wall-clock limit (at least 1, at most 600000)"), so the model still reads what decoding will check.
 */
export const moveToDescription = (node: Node, keys: ReadonlyArray<string>): Node => {
  if (keys.length === 0) return node
  const moved = keys.filter((key) => key in node)
  if (moved.length === 0) return node
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) if (!moved.includes(key)) copy[key] = value
  const said = moved.map((key) => words(key, node[key])).filter((text) => text !== "")
  if (said.length === 0) return copy
  const note = `(${said.join(", ")})`
  copy.description = typeof node.description === "string" && node.description !== "" ? `${node.description} ${note}` : note
  return copy
}

/** The names of a definition's `$defs` that refer to themselves, directly or through others. */
export const recursiveDefs = (defs: Readonly<Record<string, Node>>): ReadonlySet<string> => {
  const refs = new Map<string, Set<string>>()
  const collect = (value: unknown, into: Set<string>): void => {
    if (Array.isArray(value)) return value.forEach((item) => collect(item, into))
    if (!isNode(value)) return
    const name = refName(value)
    if (name !== undefined) into.add(name)
    for (const inner of Object.values(value)) collect(inner, into)
  }
  for (const [name, node] of Object.entries(defs)) {
    const into = new Set<string>()
    collect(node, into)
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
