export * as Patch from "./patch"

// The apply_patch format: parsing a patch into file operations (add, update with hunks and an optional move,
// delete), and locating an update's hunks in a file's lines. Pure: it reads no file and checks no permission.
// Parsing forgives what models add around a patch (a heredoc wrapper, trailing spaces on markers, unified-diff
// line numbers after @@); locating forgives whitespace at line ends and typographic punctuation.

import * as Result from "effect/Result"
import type { Text } from "./text"

/** Lines in one hunk: context and removed lines make `old`, context and added lines make `new`. */
export interface Hunk {
  /** 1-based line of the patch where the hunk starts. */
  readonly line: number
  /** Text after `@@`: a line of the file the hunk comes after (a function signature, say). */
  readonly header: string | undefined
  readonly old: ReadonlyArray<string>
  readonly new: ReadonlyArray<string>
  /** For each line of `new`: the index in `old` of the same context line, or undefined for an added line. */
  readonly context: ReadonlyArray<number | undefined>
  /** Marked `*** End of File`: the hunk's old lines end the file. */
  readonly endOfFile: boolean
}

export type Operation =
  | { readonly _tag: "Add"; readonly path: string; readonly line: number; readonly lines: ReadonlyArray<string> }
  | { readonly _tag: "Delete"; readonly path: string; readonly line: number }
  | {
      readonly _tag: "Update"
      readonly path: string
      readonly line: number
      readonly moveTo: string | undefined
      readonly hunks: ReadonlyArray<Hunk>
    }

export interface ParseError {
  /** 1-based line of the patch text. */
  readonly line: number
  readonly message: string
}

const BEGIN = "*** Begin Patch"
const END = "*** End Patch"
const ADD = "*** Add File:"
const DELETE = "*** Delete File:"
const UPDATE = "*** Update File:"
const MOVE = "*** Move to:"
const END_OF_FILE = "*** End of File"

const HEREDOC = /<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_-]*)\1\s*$/
// `@@ -12,3 +12,4 @@` from a unified diff: positions, not a context line.
const UNIFIED_RANGE = /^-\d+(?:,\d+)? \+\d+(?:,\d+)? @@/

// The first line of a unified diff (`git diff`, `diff -u`), which is not this format.
const UNIFIED_START = /^(?:diff --git |--- \S|\+\+\+ \S|@@ -\d)/

const UNIFIED_REMINDER =
  "this is a unified diff (---/+++ headers, @@ -l,n +l,n @@ ranges), which apply_patch does not take. Write it in " +
  `apply_patch's format: "${BEGIN}", then per file "${UPDATE} <path>" followed by its hunks ("@@", then lines ` +
  `starting with " " for context, "-" removed, "+" added; no line numbers), "${ADD} <path>" or "${DELETE} <path>", ` +
  `and "${END}" last.`

const isFileMarker = (line: string): boolean => {
  const trimmed = line.trim()
  return trimmed === END || trimmed.startsWith(ADD) || trimmed.startsWith(DELETE) || trimmed.startsWith(UPDATE)
}

const shown = (line: string): string => JSON.stringify(line.length > 80 ? `${line.slice(0, 80)}…` : line)

/**
 * The patch's lines, numbered as in the text, with a surrounding heredoc (`cat <<'EOF'` ... `EOF`,
 * `apply_patch <<"EOF"`) taken off.
 */
const unwrap = (text: string): Array<{ readonly text: string; readonly number: number }> => {
  const lines = text.split(/\r?\n/).map((line, index) => ({ text: line, number: index + 1 }))
  let first = lines.findIndex((line) => line.text.trim() !== "")
  if (first === -1) return []
  const opening = lines[first]!.text.trim()
  const heredoc = opening.startsWith("***") ? null : HEREDOC.exec(opening)
  let last = lines.length - 1
  while (last > first && lines[last]!.text.trim() === "") last--
  if (heredoc !== null) {
    first++
    if (lines[last]!.text.trim() === heredoc[2]) last--
  }
  return lines.slice(first, last + 1)
}

/** A line of the patch, numbered as in the text. */
type Line = { readonly text: string; readonly number: number }

/** A section parsed: its operation, and where the next section starts. */
type Section = Result.Result<{ readonly operation: Operation; readonly at: number }, ParseError>

const fail = (line: number, message: string) => Result.fail<ParseError>({ line, message: `Line ${line}: ${message}` })

const pathAfter = (line: string, marker: string) => line.trim().slice(marker.length).trim()

/** An "*** Add File" section's lines, from `at`: each added line starts with "+". */
const parseAdd = (lines: ReadonlyArray<Line>, at: number, path: string, number: number): Section => {
  const content: Array<string> = []
  let blank = 0
  while (at < lines.length && !isFileMarker(lines[at]!.text)) {
    const next = lines[at]!
    // A blank line among the added ones is an empty line whose "+" was dropped; blank lines at the end are not content.
    if (next.text.trim() === "") blank++
    else if (next.text.startsWith("+")) {
      for (; blank > 0; blank--) content.push("")
      content.push(next.text.slice(1))
    } else {
      return fail(next.number, `expected an added line starting with "+" (the content of ${path}), or the next "*** " section, found ${shown(next.text)}.`)
    }
    at++
  }
  return Result.succeed({ operation: { _tag: "Add", path, line: number, lines: content }, at })
}

/** An "*** Delete File" section, from `at`: nothing but blank lines. */
const parseDelete = (lines: ReadonlyArray<Line>, at: number, path: string, number: number): Section => {
  while (at < lines.length && !isFileMarker(lines[at]!.text)) {
    const next = lines[at]!
    if (next.text.trim() !== "") {
      return fail(next.number, `expected the next "*** " section after "${DELETE} ${path}" (a deleted file has no lines), found ${shown(next.text)}.`)
    }
    at++
  }
  return Result.succeed({ operation: { _tag: "Delete", path, line: number }, at })
}

/** A hunk being read. */
interface OpenHunk {
  line: number
  header: string | undefined
  old: Array<string>
  new: Array<string>
  context: Array<number | undefined>
  endOfFile: boolean
  /** Empty lines (without even the leading space) at the end so far. */
  trailingEmpty: number
}

const openHunk = (line: number, header: string | undefined): OpenHunk => ({
  line,
  header,
  old: [],
  new: [],
  context: [],
  endOfFile: false,
  trailingEmpty: 0,
})

/** Ends the hunk being read (if any) into `hunks`; an error when it has no lines. */
const closeHunk = (current: OpenHunk | undefined, hunks: Array<Hunk>): ParseError | undefined => {
  if (current === undefined) return undefined
  // Empty lines ending a hunk before the next section or "@@" separate sections; they are not context.
  if (!current.endOfFile && current.trailingEmpty > 0 && current.trailingEmpty < current.old.length) {
    const keep = current.old.length - current.trailingEmpty
    current.old.length = keep
    current.new.length -= current.trailingEmpty
    current.context.length -= current.trailingEmpty
  }
  if (current.old.length === 0 && current.new.length === 0) {
    return { line: current.line, message: `Line ${current.line}: the hunk has no lines; give context (" "), removed ("-") or added ("+") lines after "@@".` }
  }
  const { line, header, old, context, endOfFile } = current
  hunks.push({ line, header, old, new: current.new, context, endOfFile })
  return undefined
}

/** Adds a hunk line (" " context, "-" removed, "+" added; an empty line is context whose space was lost). */
const addHunkLine = (current: OpenHunk, text: string) => {
  const kind = text[0]
  current.trailingEmpty = text === "" ? current.trailingEmpty + 1 : 0
  const body = text.slice(1)
  if (kind === undefined || kind === " ") {
    current.context.push(current.old.length)
    current.old.push(body)
    current.new.push(body)
  } else if (kind === "-") current.old.push(body)
  else {
    current.context.push(undefined)
    current.new.push(body)
  }
}

/** An update's hunks, from `at` to the next section: "@@" lines, hunk lines and "*** End of File" markers. */
const parseHunks = (
  lines: ReadonlyArray<Line>,
  at: number,
): Result.Result<{ readonly hunks: ReadonlyArray<Hunk>; readonly at: number }, ParseError> => {
  const hunks: Array<Hunk> = []
  let current: OpenHunk | undefined
  while (at < lines.length && !isFileMarker(lines[at]!.text)) {
    const next = lines[at]!
    at++
    if (next.text.trim() === END_OF_FILE) {
      if (current === undefined) return fail(next.number, `"${END_OF_FILE}" must follow a hunk's lines.`)
      current.endOfFile = true
      const error = closeHunk(current, hunks)
      if (error !== undefined) return Result.fail(error)
      current = undefined
      continue
    }
    if (next.text.startsWith("@@")) {
      const error = closeHunk(current, hunks)
      if (error !== undefined) return Result.fail(error)
      const header = next.text.slice(2).trim()
      // A closing `@@` and the spaces before it, tried from the start of a run of spaces only: the model writes the
      // header, and trying each space of a long run took seconds.
      current = openHunk(next.number, header === "" || UNIFIED_RANGE.test(header) ? undefined : header.replace(/(?<!\s)\s*@@$/, ""))
      continue
    }
    // Blank lines after a hunk closed by "*** End of File" are spacing, not a new hunk.
    if (current === undefined && hunks.length > 0 && next.text.trim() === "") continue
    const kind = next.text[0]
    if (kind !== " " && kind !== "-" && kind !== "+" && next.text !== "") {
      return fail(next.number, `expected a hunk line starting with " " (context), "-" (removed) or "+" (added), an "@@" line, "${END_OF_FILE}", or the next "*** " section, found ${shown(next.text)}.`)
    }
    current ??= openHunk(next.number, undefined)
    addHunkLine(current, next.text)
  }
  const error = closeHunk(current, hunks)
  if (error !== undefined) return Result.fail(error)
  return Result.succeed({ hunks, at })
}

/** An "*** Update File" section, from `at`: an optional "*** Move to" line, then its hunks. */
const parseUpdate = (lines: ReadonlyArray<Line>, at: number, path: string, number: number): Section => {
  let moveTo: string | undefined
  if (at < lines.length && lines[at]!.text.trim().startsWith(MOVE)) {
    moveTo = pathAfter(lines[at]!.text, MOVE)
    if (moveTo === "") return fail(lines[at]!.number, `"${MOVE}" needs a file path after it.`)
    at++
  }
  const parsed = parseHunks(lines, at)
  if (Result.isFailure(parsed)) return Result.fail(parsed.failure)
  const { hunks } = parsed.success
  if (hunks.length === 0 && moveTo === undefined) {
    return fail(number, `"${UPDATE} ${path}" has no hunks: add lines after "@@", or a "${MOVE} <path>" line to rename it.`)
  }
  return Result.succeed({ operation: { _tag: "Update", path, line: number, moveTo, hunks }, at: parsed.success.at })
}

/** Parses a patch; an error names the patch line and what was expected there. */
export const parse = (text: string): Result.Result<ReadonlyArray<Operation>, ParseError> => {
  const lines = unwrap(text)
  const start = lines[0]
  if (start === undefined) return fail(1, `expected "${BEGIN}", found an empty patch.`)
  if (UNIFIED_START.test(start.text)) return fail(start.number, UNIFIED_REMINDER)
  if (start.text.trim() !== BEGIN) return fail(start.number, `expected "${BEGIN}", found ${shown(start.text)}.`)
  const operations: Array<Operation> = []
  let at = 1

  while (at < lines.length) {
    const { text: raw, number } = lines[at]!
    const line = raw.trim()
    if (line === END) {
      const extra = lines.slice(at + 1).find((rest) => rest.text.trim() !== "")
      if (extra !== undefined) return fail(extra.number, `expected nothing after "${END}", found ${shown(extra.text)}.`)
      if (operations.length === 0) {
        return fail(number, `the patch changes no files: add "${ADD}", "${UPDATE}" or "${DELETE}" sections.`)
      }
      return Result.succeed(operations)
    }
    const marker = line.startsWith(ADD) ? ADD : line.startsWith(DELETE) ? DELETE : line.startsWith(UPDATE) ? UPDATE : undefined
    if (marker === undefined) {
      return fail(number, `expected "${ADD} <path>", "${UPDATE} <path>", "${DELETE} <path>" or "${END}", found ${shown(raw)}.`)
    }
    const path = pathAfter(raw, marker)
    if (path === "") return fail(number, `"${marker}" needs a file path after it.`)
    const section = (marker === ADD ? parseAdd : marker === DELETE ? parseDelete : parseUpdate)(lines, at + 1, path, number)
    if (Result.isFailure(section)) return Result.fail(section.failure)
    operations.push(section.success.operation)
    at = section.success.at
  }
  const last = lines[lines.length - 1]!
  return fail(last.number, `the patch ends without "${END}"; end it with that line.`)
}

// Typographic characters models put in place of the ASCII ones a file holds, and the reverse.
const PUNCTUATION: ReadonlyArray<readonly [RegExp, string]> = [
  [/[\u2018\u2019\u201A\u201B\u2032\u2035]/g, "'"],
  [/[\u201C\u201D\u201E\u201F\u2033\u2036\u00AB\u00BB]/g, '"'],
  [/[\u2010\u2011\u2012\u2013\u2014\u2015\u2212\uFE58\uFE63\uFF0D]/g, "-"],
  [/[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g, " "],
  [/\u2026/g, "..."],
]

const plain = (line: string): string => {
  let text = line
  for (const [pattern, ascii] of PUNCTUATION) text = text.replace(pattern, ascii)
  return text.trim()
}

// Comparisons from strictest to loosest; a hunk takes the first place the strictest one that finds any finds.
const COMPARISONS: ReadonlyArray<(line: string) => string> = [
  (line) => line,
  (line) => line.trimEnd(),
  (line) => line.trim(),
  plain,
]

/**
 * Where `wanted` first occurs in `lines` at or after `from`, or -1: Knuth-Morris-Pratt over whole lines, so a hunk
 * of a line the file repeats thousands of times (`}`) costs a pass over the file, not a pass per line of it.
 */
const indexOfLines = (lines: ReadonlyArray<string>, wanted: ReadonlyArray<string>, from: number): number => {
  // fallback[i]: the length of the longest proper prefix of wanted[0..i] that is also its suffix.
  const fallback = new Int32Array(wanted.length)
  for (let index = 1, length = 0; index < wanted.length; ) {
    if (wanted[index] === wanted[length]) fallback[index++] = ++length
    else if (length > 0) length = fallback[length - 1]!
    else fallback[index++] = 0
  }
  for (let at = from, matched = 0; at < lines.length; ) {
    if (lines[at] === wanted[matched]) {
      at++
      if (++matched === wanted.length) return at - matched
    } else if (matched > 0) matched = fallback[matched - 1]!
    else at++
  }
  return -1
}

/** A file's lines as a comparison sees them, made once per file for all its hunks. */
const comparedLines = new WeakMap<ReadonlyArray<string>, Map<(line: string) => string, ReadonlyArray<string>>>()
const compared = (lines: ReadonlyArray<string>, compare: (line: string) => string): ReadonlyArray<string> => {
  let byComparison = comparedLines.get(lines)
  if (byComparison === undefined) comparedLines.set(lines, (byComparison = new Map()))
  let seen = byComparison.get(compare)
  if (seen === undefined) byComparison.set(compare, (seen = lines.map(compare)))
  return seen
}

/** Where `pattern` starts in `lines` at or after `from`, or -1; `endOfFile` tries the end of the file first. */
export const seek = (
  lines: ReadonlyArray<string>,
  pattern: ReadonlyArray<string>,
  from: number,
  endOfFile: boolean,
): number => {
  if (pattern.length === 0) return from
  const last = lines.length - pattern.length
  for (const compare of COMPARISONS) {
    const wanted = pattern.map(compare)
    if (endOfFile && last >= from && wanted.every((line, offset) => compare(lines[last + offset]!) === line)) return last
    if (last < from) continue
    // Each line of the file compared once per comparison, not once per window it is in.
    const found = indexOfLines(compare === COMPARISONS[0] ? lines : compared(lines, compare), wanted, from)
    if (found !== -1) return found
  }
  return -1
}

export interface HunkError {
  readonly hunk: Hunk
  readonly message: string
}

/**
 * Locates each hunk in `lines` in order (a cursor moves past each one, so repeated context finds the next
 * occurrence), answering the splices that apply them. A hunk with only added lines goes after its `@@` line, or
 * at the end of the file without one.
 */
export const locate = (lines: ReadonlyArray<string>, hunks: ReadonlyArray<Hunk>): Result.Result<ReadonlyArray<Text.Splice>, HunkError> => {
  const splices: Array<Text.Splice> = []
  let cursor = 0
  for (const hunk of hunks) {
    if (hunk.header !== undefined) {
      const at = seek(lines, [hunk.header], cursor, false)
      if (at === -1) {
        return Result.fail({ hunk, message: `could not find the "@@ ${hunk.header}" line${cursor > 0 ? ` after line ${cursor}` : ""}` })
      }
      cursor = at + 1
    }
    if (hunk.old.length === 0) {
      const at = hunk.header === undefined ? lines.length : cursor
      splices.push({ at, remove: 0, insert: hunk.new })
      cursor = at
      continue
    }
    let old = hunk.old
    let added = hunk.new
    // The hunk may repeat its @@ line as context.
    const from = hunk.header === undefined ? cursor : cursor - 1
    let at = seek(lines, old, from, hunk.endOfFile)
    // A trailing empty context line often stands for the end of the file rather than a blank line in it.
    if (at === -1 && old[old.length - 1] === "" && hunk.context[added.length - 1] === old.length - 1) {
      old = old.slice(0, -1)
      added = added.slice(0, -1)
      at = old.length === 0 ? -1 : seek(lines, old, from, hunk.endOfFile)
    }
    if (at === -1) {
      const quoted = hunk.old.map((line) => `  ${line}`).join("\n")
      return Result.fail({
        hunk,
        message: `could not find these lines${cursor > 0 ? ` after line ${cursor}` : ""}${hunk.endOfFile ? " at the end of the file" : ""}:\n${quoted}`,
      })
    }
    // Context lines stay as the file has them, whatever tolerance matched them.
    const insert = added.map((line, index) => {
      const kept = hunk.context[index]
      return kept === undefined ? line : lines[at + kept]!
    })
    const kept = added.map((_, index) => {
      const line = hunk.context[index]
      return line === undefined ? undefined : at + line
    })
    splices.push({ at, remove: old.length, insert, kept })
    cursor = at + old.length
  }
  return Result.succeed(splices)
}
