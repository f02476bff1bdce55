export * as Json from "./json"

// Parsing JSON a person or program typed, with errors that say where: strict JSON for inputs. Uses the
// runtime's JSON.parse on the happy path and jsonc-parser (which reports offsets) to explain a failure; the
// parser is loaded only then, so the happy path never pays for it.

import type { ParseError } from "jsonc-parser"

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

/** Parses strict JSON; on failure, says what is wrong and at which line and column. */
export const parseStrict = (text: string): Parsed => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    const errors: Array<ParseError> = []
    parser().parse(text, errors, { allowTrailingComma: false, disallowComments: true, allowEmptyContent: false })
    const first = errors[0]
    const offset = first?.offset ?? 0
    const { line, column } = position(text, offset)
    const what = first === undefined ? "invalid JSON" : describeCode(first)
    return { ok: false, problem: { message: `${what} at line ${line}, column ${column}`, offset, line, column } }
  }
}
