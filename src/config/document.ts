export * as Document from "./document"

// The text of a `core.json` as a document: its syntax tree (comments and trailing commas allowed), keys in
// document order, and problems located in it by line and column, whether from the syntax, a repeated key or a
// schema issue. It knows nothing of what the keys mean; `Config` owns the schema and the messages.

import type { Node, ParseError } from "jsonc-parser"
import { Json } from "./json"
import type * as SchemaAST from "effect/SchemaAST"
import type * as SchemaIssue from "effect/SchemaIssue"

const jsonc = Json.parser

/** How much of a value a problem shows. */
const FOUND_MAX_CHARS = 60

export type Path = Json.Path

export interface Problem {
  readonly path: Path
  readonly expected: string
  readonly found: string
  /** Where in the text the problem is, when known. */
  readonly offset?: number
  /** Set for syntax errors: what the parser said, like "comma expected". */
  readonly syntax?: string
  /** A suggestion appended to the message. */
  readonly hint?: string
}

export type Read =
  | { readonly _tag: "Syntax"; readonly problem: Problem }
  | { readonly _tag: "Read"; readonly tree: Node; readonly value: unknown; readonly duplicates: ReadonlyArray<Problem> }

/** `permission.bash["rm *"]`; "" for the root. */
export const formatPath = Json.formatPath

/** One-based line and column of an offset. */
export const position = Json.position

const truncate = (text: string): string =>
  text.length <= FOUND_MAX_CHARS ? text : `${text.slice(0, FOUND_MAX_CHARS - 1)}…`

/** A short rendering of a value for an error message. */
export const render = (value: unknown): string => {
  if (typeof value === "string") return truncate(JSON.stringify(value))
  if (Array.isArray(value)) return "an array"
  if (value === null) return "null"
  if (typeof value === "object") return "an object"
  return String(value)
}

/** `"a", "b" or "c"`. */
export const choices = (words: ReadonlyArray<string>): string => {
  const quoted = words.map((word) => JSON.stringify(word))
  return quoted.length <= 1 ? quoted.join("") : `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`
}

const syntaxProblem = (text: string, error: ParseError): Problem => {
  const said = Json.describeCode(error)
  const token = text.slice(error.offset, error.offset + error.length)
  return {
    path: [],
    expected: said.endsWith(" expected") ? said.slice(0, -" expected".length) : "valid JSON",
    found: error.offset >= text.length || token === "" ? "the end of the file" : truncate(token),
    offset: error.offset,
    syntax: said,
  }
}

/** The plain value of a node; keys repeated within one object are reported, the last one's value kept. */
const valueOf = (node: Node, path: Path, duplicates: Array<Problem>): unknown => {
  if (node.type === "array") return (node.children ?? []).map((child, index) => valueOf(child, [...path, index], duplicates))
  if (node.type !== "object") return node.value
  const object: Record<string, unknown> = {}
  for (const property of node.children ?? []) {
    const [keyNode, valueNode] = property.children ?? []
    if (keyNode === undefined || valueNode === undefined) continue
    const key = String(keyNode.value)
    if (Object.hasOwn(object, key)) {
      duplicates.push({ path: [...path, key], expected: "each key once", found: `${render(key)} a second time`, offset: keyNode.offset })
    }
    // defineProperty, so that a key named "__proto__" stays an ordinary key.
    Object.defineProperty(object, key, {
      value: valueOf(valueNode, [...path, key], duplicates),
      enumerable: true,
      writable: true,
      configurable: true,
    })
  }
  return object
}

/**
 * What the scan before parsing refuses, as a problem at its place: nesting deeper than Json.MAX_DEPTH (the parser
 * that follows is recursive) and a string holding a NUL character (no setting, path or pattern can hold one).
 */
const scanProblem = (problem: Json.ScanProblem): Problem =>
  problem._tag === "TooDeep"
    ? {
        path: [],
        expected: `at most ${Json.MAX_DEPTH} levels of nesting`,
        found: "deeper nesting",
        offset: problem.offset,
        syntax: Json.TOO_DEEP,
      }
    : {
        path: [],
        expected: "a string without NUL characters",
        found: "a NUL character (\\u0000)",
        offset: problem.offset,
        syntax: "a string holds a NUL character (\\u0000), which no setting can hold",
      }

/**
 * Parses the text, allowing comments and trailing commas; a syntax error stops at the first one. Any text is
 * answered with a value or a located problem, never a throw.
 */
export const read = (text: string): Read => {
  const scanned = Json.scan(text, { nul: true })
  if (scanned !== undefined) return { _tag: "Syntax", problem: scanProblem(scanned) }
  const errors: Array<ParseError> = []
  const tree = jsonc().parseTree(text, errors, { allowTrailingComma: true })
  const first = errors[0]
  if (first !== undefined) return { _tag: "Syntax", problem: syntaxProblem(text, first) }
  if (tree === undefined) {
    return { _tag: "Syntax", problem: { path: [], expected: "value", found: "the end of the file", offset: 0, syntax: "value expected" } }
  }
  const duplicates: Array<Problem> = []
  const value = valueOf(tree, [], duplicates)
  return { _tag: "Read", tree, value, duplicates }
}

const nodeAt = (tree: Node, path: Path): Node | undefined => jsonc().findNodeAtLocation(tree, [...path])

/** The keys of the object at `path`, in the order the document writes them. */
export const keysInOrder = (tree: Node, path: Path): Array<string> => {
  const node = nodeAt(tree, path)
  if (node?.type !== "object") return []
  return (node.children ?? []).flatMap((property) => {
    const key = property.children?.[0]?.value
    return typeof key === "string" ? [key] : []
  })
}

/** Offset of the value at `path`, or of its key. */
const offsetOf = (tree: Node, path: Path, at: "value" | "key"): number | undefined => {
  const node = nodeAt(tree, path)
  if (node === undefined) return undefined
  if (at === "key" && node.parent?.type === "property") return node.parent.children?.[0]?.offset
  return node.offset
}

/** What a schema expects: the `expected` annotation of its last check, or its own, or its kind. */
const expectedOf = (ast: SchemaAST.AST): string => {
  const fromCheck = ast.checks?.at(-1)?.annotations?.expected
  if (typeof fromCheck === "string") return fromCheck
  const own = ast.annotations?.expected
  if (typeof own === "string") return own
  switch (ast._tag) {
    case "Objects":
      return "an object"
    case "String":
      return "a string"
    case "Number":
      return "a number"
    default:
      return "a valid value"
  }
}

const unexpectedKey = (tree: Node, path: Path, ast: SchemaAST.AST): Problem => {
  const key = String(path.at(-1))
  const offset = offsetOf(tree, path, "key")
  const located = offset === undefined ? {} : { offset }
  if (ast._tag !== "Objects") return { path, expected: "no such key", found: `key ${render(key)}`, ...located }
  const index = ast.indexSignatures[0]
  // A record refuses a key its key schema refuses; a struct refuses a key it does not name.
  if (index !== undefined) return { path, expected: expectedOf(index.parameter), found: render(key), ...located }
  const known = ast.propertySignatures.map((signature) => String(signature.name))
  const near = known.find((name) => name.toLowerCase() === key.toLowerCase())
  return {
    path,
    expected: known.length === 0 ? "no keys" : `one of the keys ${choices(known)}`,
    found: `unknown key ${render(key)}`,
    ...located,
    ...(near === undefined ? {} : { hint: `did you mean ${render(near)}?` }),
  }
}

/** Every problem a schema issue describes, each at the deepest key path that explains it. */
export const fromIssue = (issue: SchemaIssue.Issue, tree: Node): Array<Problem> => {
  const problems: Array<Problem> = []
  const value = (path: Path, expected: string, input: unknown) => {
    const offset = offsetOf(tree, path, "value")
    problems.push({ path, expected, found: render(input), ...(offset === undefined ? {} : { offset }) })
  }
  const walk = (issue: SchemaIssue.Issue, path: Path): void => {
    switch (issue._tag) {
      case "Pointer":
        return walk(issue.issue, [...path, ...issue.path.map((segment) => (typeof segment === "number" ? segment : String(segment)))])
      case "Encoding":
        return walk(issue.issue, path)
      case "AnyOf":
        // No member got far enough to say more: the union's own expectation is the explanation.
        if (issue.issues.length === 0) return value(path, expectedOf(issue.ast), issue.input)
        return issue.issues.forEach((inner) => walk(inner, path))
      case "Composite":
        // Failed checks on one value are one problem, stated as the value's expectation.
        if (issue.issues.every((inner) => inner._tag === "Filter")) return value(path, expectedOf(issue.ast), issue.input)
        return issue.issues.forEach((inner) => walk(inner, path))
      case "Filter": {
        const expected = issue.filter.annotations?.expected
        return value(path, typeof expected === "string" ? expected : "a valid value", issue.input)
      }
      case "InvalidType":
        return value(path, expectedOf(issue.ast), issue.input)
      case "UnexpectedKey":
        problems.push(unexpectedKey(tree, path, issue.ast))
        return
      default:
        return value(path, "a valid value", issue.input)
    }
  }
  walk(issue, [])
  return problems
}

/** The problem nearest the start of the document; problems without a place come last. */
export const earliest = (problems: ReadonlyArray<Problem>): Problem | undefined =>
  problems.reduce<Problem | undefined>(
    (best, problem) =>
      best === undefined || (problem.offset ?? Infinity) < (best.offset ?? Infinity) ? problem : best,
    undefined,
  )
