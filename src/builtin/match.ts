export * as Match from "./match"

// edit's matcher chain: where a model's `oldString` is in a file, first exactly, then by progressively more
// tolerant comparisons for the ways models misquote code (trailing spaces, another indent, collapsed spaces,
// escapes written literally, a misremembered middle). A matcher answers one place or none: several candidates
// are reported as ambiguous, and a candidate far larger than `oldString` is refused, never taken. Pure: text in,
// places out; it reads no file.

import { Indentation } from "./indentation"

/** The matchers, in the order they are tried. */
export const MATCHERS = [
  "exact",
  "trimmed-line-ends",
  "indentation-flexible",
  "whitespace-normalised",
  "escape-normalised",
  "block-anchors",
] as const

export type Matcher = (typeof MATCHERS)[number]

/** What each tolerant matcher forgives, for messages. */
export const DESCRIPTIONS: Readonly<Record<Matcher, string>> = {
  exact: "the text exactly",
  "trimmed-line-ends": "the same lines, ignoring whitespace at line ends",
  "indentation-flexible": "the same lines at another indentation (newString was re-indented to match)",
  "whitespace-normalised": "the same lines with runs of spaces and tabs counted as one",
  "escape-normalised": "oldString with \\n, \\t and quote escapes read as the characters they stand for",
  "block-anchors": "the first and last lines exactly (trimmed), and a similar middle",
}

/** A tolerant match may cover at most this many times oldString's lines, plus MAX_SPAN_EXTRA_LINES. */
export const MAX_SPAN_LINE_RATIO = 1.5
export const MAX_SPAN_EXTRA_LINES = 3
/** ...and at most this many times oldString's length in characters, plus MAX_SPAN_EXTRA_CHARS. */
export const MAX_SPAN_CHAR_RATIO = 2
export const MAX_SPAN_EXTRA_CHARS = 256
/** block-anchors needs oldString to have at least this many lines (first, middle, last). */
export const BLOCK_MIN_LINES = 3
/** block-anchors takes a middle at least this similar (bigram Dice coefficient, 0..1). */
export const BLOCK_MIN_SIMILARITY = 0.6
// How many characters the closest-region search may compare (bigrams of both sides) before it compares fewer lines
// per window; each line it compares is cut at CLOSEST_LINE_CHARS. Counted in characters, not lines: a quote of a
// thousand lines of 9,000 characters against as long a file held the thread every call shares for ten seconds.
const CLOSEST_BUDGET = 40_000_000
const CLOSEST_LINE_CHARS = 1_000
/**
 * Lines the tolerant matchers compare at most for one edit, all together (tens of milliseconds): past it they stop,
 * and the quote is not found (the message says why). An ordinary edit compares a line or two per line of the file.
 * Texts compared by similarity (block-anchors) also count a line per CHARS_PER_LINE characters.
 */
export const MATCH_BUDGET = 2_000_000
const CHARS_PER_LINE = 64
/** The longest middle block-anchors compares by similarity (squashed): past it the matcher is not tried. */
const MAX_BLOCK_MIDDLE_CHARS = 256_000

/** One place to replace: `[start, end)` of the text, and what goes there. */
export interface Span {
  readonly start: number
  readonly end: number
  /** 1-based line where the span starts. */
  readonly line: number
  readonly replacement: string
}

/** A candidate a matcher found but would not take, because it covers far more than oldString. */
export interface Refusal {
  readonly matcher: Matcher
  readonly line: number
  readonly lines: number
  readonly chars: number
}

/** The part of the file most like oldString, for a no-match message. */
export interface Closest {
  readonly startLine: number
  readonly endLine: number
  /** 0..1 */
  readonly similarity: number
}

export type Outcome =
  | { readonly _tag: "Found"; readonly matcher: Matcher; readonly spans: ReadonlyArray<Span> }
  | { readonly _tag: "Ambiguous"; readonly matcher: Matcher; readonly lines: ReadonlyArray<number> }
  | {
      readonly _tag: "NotFound"
      readonly closest: Closest | undefined
      readonly refused: ReadonlyArray<Refusal>
      /** The tolerant matcher that ran out of MATCH_BUDGET, when one did: the later ones were not tried. */
      readonly stopped?: Matcher
    }
  /** A tolerant match whose indentation style newString cannot be converted to: nothing is replaced. */
  | {
      readonly _tag: "Unindentable"
      readonly matcher: Matcher
      readonly startLine: number
      readonly endLine: number
      readonly reason: string
    }

export interface Input {
  /** The file's text, line breaks as "\n". */
  readonly content: string
  readonly oldString: string
  readonly newString: string
  readonly replaceAll?: boolean
}

/** The file's lines and where each starts, computed once per search. */
interface Indexed {
  readonly content: string
  readonly lines: ReadonlyArray<string>
  readonly offsets: ReadonlyArray<number>
  /**
   * The lines the tolerant matchers may still compare (MATCH_BUDGET): a long quote of a line the file repeats
   * thousands of times (`}`) made every window a candidate, seconds of processor on the thread every call shares.
   */
  readonly budget: { left: number }
}

const index = (content: string): Indexed => {
  const lines = content.split("\n")
  const offsets: Array<number> = []
  let offset = 0
  for (const line of lines) {
    offsets.push(offset)
    offset += line.length + 1
  }
  return { content, lines, offsets, budget: { left: MATCH_BUDGET } }
}

/** 1-based line of a character offset. */
const lineAt = (file: Indexed, offset: number): number => {
  let low = 0
  let high = file.offsets.length - 1
  while (low < high) {
    const middle = (low + high + 1) >> 1
    if (file.offsets[middle]! <= offset) low = middle
    else high = middle - 1
  }
  return low + 1
}

/** oldString (or newString) as lines; a final line break is remembered rather than kept as an empty line. */
interface Quoted {
  readonly lines: ReadonlyArray<string>
  readonly trailingNewline: boolean
}

const quote = (text: string): Quoted => {
  const lines = text.split("\n")
  const trailingNewline = lines.length > 1 && lines[lines.length - 1] === ""
  return { lines: trailingNewline ? lines.slice(0, -1) : lines, trailingNewline }
}

const disproportionate = (old: string, oldLines: number, spanText: string, spanLines: number): boolean =>
  spanLines > Math.floor(MAX_SPAN_LINE_RATIO * oldLines) + MAX_SPAN_EXTRA_LINES ||
  spanText.length > MAX_SPAN_CHAR_RATIO * old.length + MAX_SPAN_EXTRA_CHARS

/** Every non-overlapping exact occurrence of `needle`. */
const occurrences = (content: string, needle: string): Array<number> => {
  const found: Array<number> = []
  for (let at = content.indexOf(needle); at !== -1; at = content.indexOf(needle, at + needle.length)) found.push(at)
  return found
}

/** A window of whole lines `[first, first + count)` as a span; with `trailingNewline`, its last line break too. */
const lineSpan = (file: Indexed, first: number, count: number, trailingNewline: boolean, replacement: string): Span => {
  const last = first + count - 1
  const lastEnd = file.offsets[last]! + file.lines[last]!.length
  const hasBreak = last < file.lines.length - 1
  return {
    start: file.offsets[first]!,
    end: trailingNewline && hasBreak ? lastEnd + 1 : lastEnd,
    line: first + 1,
    // Quoting a final line break of a file that has none must not add one.
    replacement: trailingNewline && !hasBreak && replacement.endsWith("\n") ? replacement.slice(0, -1) : replacement,
  }
}

type Step =
  | { readonly _tag: "Found"; readonly spans: ReadonlyArray<Span> }
  | { readonly _tag: "Ambiguous"; readonly lines: ReadonlyArray<number> }
  | { readonly _tag: "Unindentable"; readonly startLine: number; readonly endLine: number; readonly reason: string }
  | { readonly _tag: "None"; readonly refused: ReadonlyArray<Omit<Refusal, "matcher">> }

const NONE: Step = { _tag: "None", refused: [] }

/**
 * The tolerant line matchers share one shape: windows of oldString's line count where every line compares equal
 * after `normalise`. Exactly one window is a match; several are ambiguous.
 */
const byLines = (file: Indexed, input: Input, normalise: (line: string) => string): Step => {
  const old = quote(input.oldString)
  const wanted = old.lines.map(normalise)
  const count = wanted.length
  if (count === 0 || count > file.lines.length || wanted.every((line) => line === "")) return NONE
  const normalised = file.lines.map(normalise)
  const firsts: Array<number> = []
  const { budget } = file
  for (let first = 0; first + count <= normalised.length; first++) {
    let equal = true
    let offset = 0
    for (; offset < count && equal; offset++) equal = normalised[first + offset] === wanted[offset]
    if ((budget.left -= offset) < 0) return NONE
    if (equal) firsts.push(first)
  }
  return settle(file, input, old, firsts.map((first) => ({ first, count })))
}

/**
 * One candidate window is a match unless it is disproportionate; more than one is ambiguous. newString replaces
 * the window's whole lines, re-indented from oldString's indentation to the window's (see `reindented`).
 */
const settle = (
  file: Indexed,
  input: Input,
  old: Quoted,
  windows: ReadonlyArray<{ readonly first: number; readonly count: number }>,
): Step => {
  if (windows.length > 1) return { _tag: "Ambiguous", lines: windows.map((window) => window.first + 1) }
  const window = windows[0]
  if (window === undefined) return NONE
  const replacement = Indentation.reindented(file.lines, old.lines, input.newString, window.first, window.count)
  if (typeof replacement !== "string") {
    return { _tag: "Unindentable", startLine: window.first + 1, endLine: window.first + window.count, reason: replacement.reason }
  }
  const span = lineSpan(file, window.first, window.count, old.trailingNewline, replacement)
  const text = file.content.slice(span.start, span.end)
  if (disproportionate(input.oldString, old.lines.length, text, window.count)) {
    return { _tag: "None", refused: [{ line: span.line, lines: window.count, chars: text.length }] }
  }
  return { _tag: "Found", spans: [span] }
}

const exact = (file: Indexed, input: Input): Step => {
  const found = occurrences(file.content, input.oldString)
  if (found.length === 0) return NONE
  const spans = (at: number): Span => ({
    start: at,
    end: at + input.oldString.length,
    line: lineAt(file, at),
    replacement: input.newString,
  })
  if (found.length === 1 || input.replaceAll === true) return { _tag: "Found", spans: found.map(spans) }
  return { _tag: "Ambiguous", lines: found.map((at) => lineAt(file, at)) }
}

const indentationFlexible = (file: Indexed, input: Input): Step => {
  const old = quote(input.oldString)
  const count = old.lines.length
  if (count === 0 || count > file.lines.length) return NONE
  const oldIndent = Indentation.commonIndent(old.lines)
  const wanted = old.lines.map((line) => (line.trim() === "" ? "" : line.slice(oldIndent.length).trimEnd()))
  const anchor = wanted.findIndex((line) => line !== "")
  if (anchor === -1) return NONE
  const anchorText = wanted[anchor]!.trimStart()
  const windows: Array<{ first: number; count: number; indent: string }> = []
  const { budget } = file
  for (let first = 0; first + count <= file.lines.length; first++) {
    if (file.lines[first + anchor]!.trim() !== anchorText.trim()) continue
    if ((budget.left -= count) < 0) return NONE
    const window = file.lines.slice(first, first + count)
    const indent = Indentation.commonIndent(window)
    // Same indentation is trimmed-line-ends' case, already tried.
    if (indent === oldIndent) continue
    const equal = window.every((line, offset) =>
      line.trim() === "" ? wanted[offset] === "" : line.slice(indent.length).trimEnd() === wanted[offset],
    )
    if (equal) windows.push({ first, count, indent })
  }
  return settle(file, input, old, windows)
}

/** The escapes a model writes literally when it double-escapes its arguments. */
const ESCAPES: Readonly<Record<string, string>> = { n: "\n", t: "\t", r: "\r", '"': '"', "'": "'", "`": "`", "\\": "\\", $: "$" }

const unescape = (text: string): string => text.replace(/\\([ntr"'`\\$])/g, (_, character: string) => ESCAPES[character]!)

const escapeNormalised = (file: Indexed, input: Input): Step => {
  const oldString = unescape(input.oldString)
  if (oldString === input.oldString || oldString === "") return NONE
  const found = occurrences(file.content, oldString)
  if (found.length > 1) return { _tag: "Ambiguous", lines: found.map((at) => lineAt(file, at)) }
  const at = found[0]
  if (at === undefined) return NONE
  return {
    _tag: "Found",
    spans: [{ start: at, end: at + oldString.length, line: lineAt(file, at), replacement: unescape(input.newString) }],
  }
}

/** Sorted character-bigram codes of a line, for Dice similarity. */
const bigrams = (text: string): Float64Array => {
  const codes = new Float64Array(Math.max(0, text.length - 1))
  for (let at = 0; at < codes.length; at++) codes[at] = text.charCodeAt(at) * 65536 + text.charCodeAt(at + 1)
  return codes.sort()
}

/** Dice coefficient of two bigram multisets (1 for two empty texts that are equal). */
const dice = (left: Float64Array, right: Float64Array, leftText: string, rightText: string): number => {
  if (left.length === 0 || right.length === 0) return leftText === rightText ? 1 : 0
  let common = 0
  let i = 0
  let j = 0
  while (i < left.length && j < right.length) {
    if (left[i] === right[j]) {
      common++
      i++
      j++
    } else if (left[i]! < right[j]!) i++
    else j++
  }
  return (2 * common) / (left.length + right.length)
}

const squash = (line: string): string => line.trim().replace(/\s+/g, " ")

/** A text with each line squashed, as similarity compares it. */
const squashed = (text: string): string => text.split("\n").map(squash).join("\n")

/** How alike two texts are, 0..1, by character bigrams of their squashed lines. */
export const similarity = (left: string, right: string): number => {
  const a = squashed(left)
  const b = squashed(right)
  return dice(bigrams(a), bigrams(b), a, b)
}

const blockAnchors = (file: Indexed, input: Input): Step => {
  const old = quote(input.oldString)
  const count = old.lines.length
  if (count < BLOCK_MIN_LINES) return NONE
  const first = old.lines[0]!.trim()
  const last = old.lines[count - 1]!.trim()
  if (first === "" || last === "") return NONE
  const middle = squashed(old.lines.slice(1, -1).join("\n"))
  if (middle.length > MAX_BLOCK_MIDDLE_CHARS) return NONE
  const middleGrams = bigrams(middle)
  const maxLines = Math.floor(MAX_SPAN_LINE_RATIO * count) + MAX_SPAN_EXTRA_LINES
  const trimmed = file.lines.map((line) => line.trim())
  // nextLast[i]: the first line at or after i that is the last anchor (trimmed.length when none), so each start
  // looks only at its own candidate ends.
  const nextLast = new Int32Array(trimmed.length + 1).fill(trimmed.length)
  for (let at = trimmed.length - 1; at >= 0; at--) nextLast[at] = trimmed[at] === last ? at : nextLast[at + 1]!
  const windows: Array<{ first: number; count: number }> = []
  const refused: Array<Omit<Refusal, "matcher">> = []
  for (let start = 0; start < trimmed.length; start++) {
    if (trimmed[start] !== first) continue
    let best: { first: number; count: number; score: number } | undefined
    const bound = Math.min(trimmed.length, start + maxLines)
    for (let end = nextLast[start + 2] ?? trimmed.length; end < bound; end = nextLast[end + 1]!) {
      const between = squashed(file.lines.slice(start + 1, end).join("\n"))
      if ((file.budget.left -= end - start + Math.ceil((middle.length + between.length) / CHARS_PER_LINE)) < 0) return NONE
      const score = dice(middleGrams, bigrams(between), middle, between)
      if (score >= BLOCK_MIN_SIMILARITY && (best === undefined || score > best.score)) {
        best = { first: start, count: end - start + 1, score }
      }
    }
    if (best !== undefined) {
      windows.push(best)
      continue
    }
    // The nearest end past the bound is reported, so the model learns why this block was not taken.
    const beyond = nextLast[Math.max(bound, start + 2)] ?? trimmed.length
    if (beyond < trimmed.length) {
      const chars = file.offsets[beyond]! + file.lines[beyond]!.length - file.offsets[start]!
      refused.push({ line: start + 1, lines: beyond - start + 1, chars })
    }
  }
  const step = settle(file, input, old, windows)
  return step._tag === "None" ? { _tag: "None", refused: [...refused, ...step.refused] } : step
}

const STEPS: ReadonlyArray<readonly [Matcher, (file: Indexed, input: Input) => Step]> = [
  ["exact", exact],
  ["trimmed-line-ends", (file, input) => byLines(file, input, (line) => line.trimEnd())],
  ["indentation-flexible", indentationFlexible],
  ["whitespace-normalised", (file, input) => byLines(file, input, squash)],
  ["escape-normalised", escapeNormalised],
  ["block-anchors", blockAnchors],
]

/**
 * The window of the file most like oldString, line by line. Only the file's real lines are windows (the empty
 * text after a final line break is not a line), and an oldString of only whitespace has no similar region: every
 * blank line would be "100% similar" to it.
 */
const closest = (file: Indexed, oldString: string): Closest | undefined => {
  const cut = (line: string) => {
    const one = squash(line)
    return one.length > CLOSEST_LINE_CHARS ? one.slice(0, CLOSEST_LINE_CHARS) : one
  }
  const old = quote(oldString).lines.map(cut)
  if (old.every((line) => line === "")) return undefined
  const real = file.content === "" ? 0 : file.content.endsWith("\n") ? file.lines.length - 1 : file.lines.length
  const count = Math.min(old.length, real)
  if (count === 0) return undefined
  const fileLines = file.lines.slice(0, real).map(cut)
  const fileGrams = fileLines.map(bigrams)
  // Long files and long quotes compare a prefix of the quote per window rather than every line: as many lines as
  // the budget pays for every window, a line costing its characters on both sides.
  const windows = fileLines.length - count + 1
  // A file line costs the file's average; the quote's lines cost what they are (a few long ones among many empty
  // ones are not paid for at their average).
  const fileLine = 1 + fileLines.reduce((chars, line) => chars + line.length, 0) / fileLines.length
  let compared = 0
  for (let planned = 0; compared < count; compared++) {
    planned += windows * (fileLine + old[compared]!.length)
    if (compared > 0 && planned > CLOSEST_BUDGET) break
  }
  const oldGrams = old.slice(0, compared).map(bigrams)
  // And whatever the estimate, no more than the budget (twice over) is spent: the windows past it are not scored.
  let left = 2 * CLOSEST_BUDGET
  let best: Closest | undefined
  for (let first = 0; first + count <= fileLines.length && left > 0; first++) {
    let total = 0
    for (let offset = 0; offset < compared; offset++) {
      left -= 1 + fileLines[first + offset]!.length + old[offset]!.length
      total += dice(fileGrams[first + offset]!, oldGrams[offset]!, fileLines[first + offset]!, old[offset]!)
    }
    const score = total / compared
    if (best === undefined || score > best.similarity) {
      best = { startLine: first + 1, endLine: first + count, similarity: score }
    }
  }
  return best !== undefined && best.similarity > 0 ? best : undefined
}

/**
 * Finds where `oldString` is. With `replaceAll`, every exact occurrence is a place; when there is none, the
 * tolerant matchers still answer one place only, so a loose comparison never rewrites many places at once.
 */
export const find = (input: Input): Outcome => {
  if (input.oldString === "") return { _tag: "NotFound", closest: undefined, refused: [] }
  const file = index(input.content)
  const refused: Array<Refusal> = []
  for (const [matcher, step] of STEPS) {
    const result = step(file, input)
    if (result._tag === "Found") return { _tag: "Found", matcher, spans: result.spans }
    if (result._tag === "Ambiguous") return { _tag: "Ambiguous", matcher, lines: result.lines }
    if (result._tag === "Unindentable") return { ...result, matcher }
    for (const refusal of result.refused) refused.push({ matcher, ...refusal })
    if (file.budget.left < 0) return { _tag: "NotFound", closest: closest(file, input.oldString), refused, stopped: matcher }
  }
  return { _tag: "NotFound", closest: closest(file, input.oldString), refused }
}

/** The region of `content` (line breaks as "\n") most like `text`, line by line; undefined when nothing is alike. */
export const nearest = (content: string, text: string): Closest | undefined => closest(index(content), text)

/** `content` with every span (sorted, not overlapping) replaced. */
export const apply = (content: string, spans: ReadonlyArray<Span>): string => {
  const parts: Array<string> = []
  let next = 0
  for (const span of spans) {
    parts.push(content.slice(next, span.start), span.replacement)
    next = span.end
  }
  parts.push(content.slice(next))
  return parts.join("")
}
