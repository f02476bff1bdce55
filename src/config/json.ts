export * as Json from "./json"

// Parsing JSON a person or program typed, with errors that say where: strict JSON for inputs. Uses the
// runtime's JSON.parse on the happy path and jsonc-parser (which reports offsets) to explain a failure; the
// parser is loaded only then, so the happy path never pays for it. Nesting is bounded (MAX_DEPTH) and no check here
// recurses past it, so no text, however deep, can overflow the stack of whoever reads it.

import type { ParseError } from "jsonc-parser"
import { Nesting } from "../contract/nesting"

/**
 * How deep arrays and objects may nest. Deeper values are refused before anything recursive (a schema's decoding,
 * JSON.stringify, jsonc-parser) sees them: those overflow the stack somewhere past a few thousand levels.
 */
export const MAX_DEPTH = Nesting.MAX_DEPTH

/**
 * jsonc-parser, loaded on first use. Its ESM build, by path: the package's CommonJS entry is a UMD wrapper whose
 * inner requires a bundle cannot follow.
 */
export const parser = (): typeof import("jsonc-parser") => require("jsonc-parser/lib/esm/main.js")

export interface SyntaxProblem {
  readonly message: string
  readonly offset: number
  readonly line: number
  readonly column: number
}

export type Parsed = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problem: SyntaxProblem }

export type Path = ReadonlyArray<string | number>

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** `permission.bash["rm *"]`, `input.paths[0]`; "" for the root. */
export const formatPath = (path: Path): string =>
  path
    .map((segment, index) =>
      typeof segment === "number"
        ? `[${segment}]`
        : IDENTIFIER.test(segment)
          ? `${index === 0 ? "" : "."}${segment}`
          : `[${JSON.stringify(segment)}]`,
    )
    .join("")

/** One-based line and column of an offset. */
export const position = (text: string, offset: number): { readonly line: number; readonly column: number } => {
  const before = text.slice(0, offset)
  return { line: before.split("\n").length, column: offset - before.lastIndexOf("\n") }
}

/** What a jsonc-parser error says, in words ("comma expected"). */
export const describeCode = (error: ParseError): string =>
  parser()
    .printParseErrorCode(error.error)
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .toLowerCase()

/** jsonc-parser's SyntaxKind values (a const enum, which this build cannot import). */
const TOKEN = { openBrace: 1, closeBrace: 2, openBracket: 3, closeBracket: 4, string: 10, eof: 17 } as const

/** What the token-level scan of a text found first that no parse should go on with. */
export type ScanProblem = { readonly _tag: "TooDeep"; readonly offset: number } | { readonly _tag: "Nul"; readonly offset: number }

/**
 * Scans a text token by token (iteratively; comments and strings are skipped as the scanner reads them) for
 * nesting deeper than MAX_DEPTH and, when `nul`, for a string holding a NUL character.
 */
export const scan = (text: string, options: { readonly nul: boolean }): ScanProblem | undefined => {
  const scanner = parser().createScanner(text, true)
  let depth = 0
  for (let token = scanner.scan(); token !== TOKEN.eof; token = scanner.scan()) {
    if (token === TOKEN.openBrace || token === TOKEN.openBracket) {
      if (++depth > MAX_DEPTH) return { _tag: "TooDeep", offset: scanner.getTokenOffset() }
    } else if (token === TOKEN.closeBrace || token === TOKEN.closeBracket) {
      depth = Math.max(0, depth - 1)
    } else if (options.nul && token === TOKEN.string && scanner.getTokenValue().includes("\u0000")) {
      return { _tag: "Nul", offset: scanner.getTokenOffset() }
    }
  }
  return undefined
}

const located = (text: string, offset: number, what: string): SyntaxProblem => {
  const { line, column } = position(text, offset)
  return { message: `${what} at line ${line}, column ${column}`, offset, line, column }
}

export const TOO_DEEP = Nesting.TOO_DEEP

/**
 * Parses strict JSON; on failure, says what is wrong and at which line and column. Nesting deeper than MAX_DEPTH
 * is refused like a syntax error, at the bracket that goes too deep.
 */
export const parseStrict = (text: string): Parsed => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    // Checked before jsonc-parser sees the text: its parser is recursive.
    const deep = scan(text, { nul: false })
    if (deep !== undefined) return { ok: false, problem: located(text, deep.offset, TOO_DEEP) }
    const errors: Array<ParseError> = []
    parser().parse(text, errors, { allowTrailingComma: false, disallowComments: true, allowEmptyContent: false })
    const first = errors[0]
    return { ok: false, problem: located(text, first?.offset ?? 0, first === undefined ? "invalid JSON" : describeCode(first)) }
  }
  if (Nesting.tooDeep(value)) {
    const deep = scan(text, { nul: false })
    return { ok: false, problem: located(text, deep?.offset ?? 0, TOO_DEEP) }
  }
  return { ok: true, value }
}

/**
 * A value no tool takes: a string holding a NUL character or half of a character (a lone UTF-16 surrogate), or a
 * number JSON cannot carry (`1e400` is parsed as Infinity, which JSON.stringify writes as `null`: a tool checked
 * against its schema with one would be sent another value).
 */
export interface BadValue {
  /** Where it is: a value's path, or a key's (its last segment the key). */
  readonly path: Path
  readonly kind: "nul" | "half" | "infinite"
  /** The string itself (a key, or a value), or the number as text. */
  readonly text: string
}

/** A high surrogate no low one follows, or a low one no high one comes before. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Where `text`'s first half of a character (a lone UTF-16 surrogate) is, and its code unit in hex; -1 for none. */
export const halfAt = (text: string): { readonly at: number; readonly unit: string } => {
  const at = text.search(LONE_SURROGATE)
  return { at, unit: at === -1 ? "" : text.charCodeAt(at).toString(16) }
}

const badKind = (text: string): BadValue["kind"] | undefined =>
  text.includes("\u0000") ? "nul" : text.isWellFormed() ? undefined : "half"

/** The first bad value at or below `value`, its path innermost segment first; containers past MAX_DEPTH are not searched. */
const badBelow = (
  value: unknown,
  depth: number,
  numbersOnly: boolean,
): { path: Array<string | number>; kind: BadValue["kind"]; text: string } | undefined => {
  if (typeof value === "string" && !numbersOnly) {
    const kind = badKind(value)
    return kind === undefined ? undefined : { path: [], kind, text: value }
  }
  if (typeof value === "number") return Number.isFinite(value) ? undefined : { path: [], kind: "infinite", text: String(value) }
  if (typeof value !== "object" || value === null || depth >= MAX_DEPTH) return undefined
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = badBelow(value[index], depth + 1, numbersOnly)
      if (found !== undefined) return (found.path.push(index), found)
    }
    return undefined
  }
  for (const key in value) {
    const kind = numbersOnly ? undefined : badKind(key)
    if (kind !== undefined) return { path: [key], kind, text: key }
    const found = badBelow((value as Record<string, unknown>)[key], depth + 1, numbersOnly)
    if (found !== undefined) return (found.path.push(key), found)
  }
  return undefined
}

/**
 * The first value (a string, a key or a number) in a parsed value that no tool takes, in document order, or
 * undefined: a string holding a NUL character (paths, patterns and commands cannot hold it, and the platform refuses
 * it deep inside a tool), or half of a character (JSON's `"\ud83d"`: no text, which a file, a store or a strict JSON
 * reader cannot keep); a number past what a double holds (`1e400`, read as Infinity). Values are searched to
 * MAX_DEPTH (what parseStrict accepts), never deeper.
 */
export const findBadValue = (value: unknown): BadValue | undefined => {
  const found = badBelow(value, 0, false)
  return found === undefined ? undefined : { ...found, path: found.path.reverse() }
}

/** The first number JSON cannot carry in a value (findBadValue's "infinite"), its strings and keys passed over. */
export const findInfinite = (value: unknown): BadValue | undefined => {
  const found = badBelow(value, 0, true)
  return found === undefined ? undefined : { ...found, path: found.path.reverse() }
}

/** How a bad value found is described, and what to do about it. */
export const describeBadValue = ({ path, kind, text }: BadValue): string => {
  const where = path.length === 0 ? "the value" : formatPath(path)
  if (kind === "nul") return `${where} holds a NUL character (\\u0000), which no tool accepts; remove it`
  if (kind === "infinite") return `${where} is a number beyond what JSON's numbers hold (read as ${text}), which no tool accepts; send a finite number`
  const { at, unit } = halfAt(text)
  return (
    `${where} holds half of a character (the UTF-16 surrogate \\u${unit} at position ${at}, ` +
    "without its other half), which no tool accepts; send whole characters"
  )
}
