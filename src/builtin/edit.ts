export * as Edit from "./edit"

// The `edit` built-in: replaces one quoted piece of an existing file (or every exact occurrence). Finding the
// piece is ./match's job; this module keeps the file's encoding and line endings, writes only if the file is
// unchanged while the edit was being made, and tells the model what happened: which matcher matched, a diff of
// the change, and, when nothing or too much matched, where to look next.

import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { FileLock } from "./file-lock"
import { Match } from "./match"
import { ReadTracking } from "./read-tracking"
import { Stopping } from "../settlement/stopping"
import { Text } from "./text"

/** Unchanged lines shown around each change in the diff. */
export const DIFF_CONTEXT_LINES = 3
/** Line numbers listed in an ambiguity message before "and N more". */
const MAX_LISTED = 20
export const Input = Schema.Struct({
  filePath: Schema.String.annotate({
    description: "The file to change: relative to the Location (the project directory the tools work in), or absolute",
  }),
  oldString: Schema.String.annotate({
    description: "The text to replace, copied exactly from the file (whole lines with their indentation work best)",
  }),
  newString: Schema.String.annotate({ description: "The text to put in its place (must differ from oldString)" }),
  replaceAll: Schema.optionalKey(
    Schema.Boolean.annotate({ description: "Replace every exact occurrence of oldString instead of exactly one (default false)" }),
  ),
})

export const Output = Schema.Struct({
  path: Schema.String.annotate({ description: "The file changed, relative to the Location when inside it" }),
  replacements: Schema.Finite,
  matcher: Schema.Literals(Match.MATCHERS).annotate({ description: "How oldString was found" }),
  added: Schema.Finite.annotate({ description: "Lines added" }),
  removed: Schema.Finite.annotate({ description: "Lines removed" }),
  diff: Schema.String.annotate({ description: "A unified diff of the change" }),
  lineNumbersRemoved: Schema.optionalKey(
    Schema.Boolean.annotate({ description: "oldString (and newString) carried read's `N: ` line numbers, which were removed" }),
  ),
  notKept: Schema.optionalKey(Text.NotKept),
})
export type Output = typeof Output.Type

const DESCRIPTION = `Replace text in an existing file: oldString becomes newString.

- oldString must match exactly one place in the file. Copy it from the file (read it first) with its indentation, without read's "N: " numbers; add surrounding lines to make it unique. With replaceAll: true every exact occurrence is replaced instead.
- When oldString is not in the file exactly, tolerant matchers are tried: trailing whitespace ignored; the same lines at another indentation; runs of spaces counted as one; \\n, \\t and \\" written literally; a block whose first and last lines match, with a similar middle. A tolerant match must be unique and about the size of oldString; its whole lines are replaced, newString re-indented like them in the file's own unit (tabs or N spaces), and if that cannot be done exactly nothing is changed; replaceAll never applies one to several places.
- Unchanged lines keep their line endings, new lines take their neighbours'; a byte order mark is kept. Read-only and special files are refused.
- Edits of one file run one at a time, and are redone on the new content if another program changes it meanwhile. If the file changed since this session read it, nothing is written: read it again.
- Answers the replacements, the matcher when not exact, and a unified diff; if nothing matches, the most similar region with line numbers.
- To create or replace a whole file, use write; for several places or files at once, apply_patch. Empty oldString is refused; oldString of only whitespace must match exactly.`

/** A file's text with CRLF line breaks as "\n", and where those were, to map positions back. */
interface View {
  readonly text: string
  /** Positions in `text` of each "\n" that was "\r\n", ascending. */
  readonly crlf: ReadonlyArray<number>
}

const viewOf = (raw: string): View => {
  if (!raw.includes("\r\n")) return { text: raw, crlf: [] }
  const crlf: Array<number> = []
  let removed = 0
  for (let at = raw.indexOf("\r\n"); at !== -1; at = raw.indexOf("\r\n", at + 2)) {
    crlf.push(at - removed)
    removed++
  }
  return { text: raw.replaceAll("\r\n", "\n"), crlf }
}

/** The position in the file's own text of a position in its view: one more for each CRLF before it. */
const rawOffset = (view: View, offset: number): number => {
  let low = 0
  let high = view.crlf.length
  while (low < high) {
    const middle = (low + high) >> 1
    if (view.crlf[middle]! < offset) low = middle + 1
    else high = middle
  }
  return offset + low
}

/** The refusal of an edit that would make the file larger than the file tools change at once. */
const tooLarge = (shown: string, bytes: number, bound: string): string =>
  `The edit would make ${shown} ${bound}${bytes} bytes, over the ${Text.MAX_CHANGE_BYTES} bytes (16 MiB) the file ` +
  "tools change at once; nothing was changed. Replace fewer places, or a shorter text, per edit."

/**
 * Splices the replacements into the file's own text: untouched lines keep their line endings byte for byte, and
 * the line breaks of each replacement take the endings of the lines around it (see Text.endingsLike).
 */
const rewrite = (raw: string, view: View, spans: ReadonlyArray<Match.Span>, eol: Text.Eol): string => {
  const parts: Array<string> = []
  let next = 0
  for (const span of spans) {
    const start = rawOffset(view, span.start)
    const end = rawOffset(view, span.end)
    const breakAt = raw.indexOf("\n", end)
    const lineEnd = breakAt === -1 ? undefined : breakAt > 0 && raw[breakAt - 1] === "\r" ? "\r\n" : "\n"
    parts.push(
      raw.slice(next, start),
      Text.endingsLike(raw.slice(start, end), span.replacement, raw.slice(Math.max(0, start - 2), start), lineEnd, eol),
    )
    next = end
  }
  parts.push(raw.slice(next))
  return parts.join("")
}

// read shows each line as `N: text`; a model sometimes copies the numbers into oldString.
const LINE_NUMBER = /^(\d+):(?: |$)/

/** Whether every line of `text` starts with read's `N: ` line number. */
const allNumbered = (text: string): boolean => {
  const lines = text.split("\n").filter((line, index, all) => !(index === all.length - 1 && line === ""))
  return lines.length > 0 && lines.every((line) => LINE_NUMBER.test(line))
}

/** The first line number of text whose lines all carry consecutive `N: ` numbers, or undefined. */
const numberedFrom = (text: string): number | undefined => {
  const lines = text.split("\n").filter((line, index, all) => !(index === all.length - 1 && line === ""))
  const numbers = lines.map((line) => LINE_NUMBER.exec(line)?.[1])
  if (numbers.length === 0 || numbers.some((number) => number === undefined)) return undefined
  const first = Number(numbers[0])
  return numbers.every((number, index) => Number(number) === first + index) ? first : undefined
}

const withoutNumbers = (text: string): string =>
  text
    .split("\n")
    .map((line) => line.replace(LINE_NUMBER, ""))
    .join("\n")

/** Text split into lines, a final line break not counting as another (empty) line. */
const splitLines = (text: string): Array<string> => {
  if (text === "") return []
  return (text.endsWith("\n") ? text.slice(0, -1) : text).split("\n")
}

interface Change {
  /** 0-based first line in the old text. */
  readonly start: number
  readonly old: ReadonlyArray<string>
  readonly new: ReadonlyArray<string>
}

/** The changed lines of each replaced region, with lines the region kept trimmed off both ends. */
const changesOf = (content: string, spans: ReadonlyArray<Match.Span>): Array<Change> => {
  const regions: Array<{ start: number; end: number; spans: Array<Match.Span> }> = []
  for (const span of spans) {
    // From the start of the span's first line (lastIndexOf reads a position of -1 as 0, where a file may start with a
    // line break), to the end of its last: a span ending with a line break ends its line there only where its
    // replacement does too; else the next line is joined to the replacement, and is part of the change.
    const start = span.start === 0 ? 0 : content.lastIndexOf("\n", span.start - 1) + 1
    const whole = span.end > span.start && content[span.end - 1] === "\n" && span.replacement.endsWith("\n")
    const lineBreak = whole ? span.end - 1 : content.indexOf("\n", span.end)
    const end = lineBreak === -1 ? content.length : lineBreak + 1
    const last = regions[regions.length - 1]
    if (last !== undefined && start < last.end) {
      last.end = Math.max(last.end, end)
      last.spans.push(span)
    } else regions.push({ start, end, spans: [span] })
  }
  const changes: Array<Change> = []
  let line = 0
  let counted = 0
  for (const region of regions) {
    for (let at = content.indexOf("\n", counted); at !== -1 && at < region.start; at = content.indexOf("\n", at + 1)) line++
    counted = region.start
    const before = splitLines(content.slice(region.start, region.end))
    const after = splitLines(Match.apply(content.slice(region.start, region.end), region.spans.map((span) => ({
      ...span,
      start: span.start - region.start,
      end: span.end - region.start,
    }))))
    let head = 0
    while (head < before.length && head < after.length && before[head] === after[head]) head++
    let tail = 0
    while (tail < before.length - head && tail < after.length - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail++
    const old = before.slice(head, before.length - tail)
    const added = after.slice(head, after.length - tail)
    if (old.length > 0 || added.length > 0) changes.push({ start: line + head, old, new: added })
  }
  return changes
}

/** A unified diff of the changes, DIFF_CONTEXT_LINES lines of context around each, nearby changes in one hunk. */
const unified = (shown: string, content: string, changes: ReadonlyArray<Change>): string => {
  const lines = splitLines(content)
  // An absolute path (a file outside the Location) follows a/ and b/ without a second slash, as git writes one.
  const named = shown.startsWith("/") ? shown.slice(1) : shown
  const out = [`--- a/${named}`, `+++ b/${named}`]
  let delta = 0
  let index = 0
  while (index < changes.length) {
    let last = index
    while (
      last + 1 < changes.length &&
      changes[last + 1]!.start - (changes[last]!.start + changes[last]!.old.length) <= 2 * DIFF_CONTEXT_LINES
    ) last++
    const first = changes[index]!
    const final = changes[last]!
    const from = Math.max(0, first.start - DIFF_CONTEXT_LINES)
    const to = Math.min(lines.length, final.start + final.old.length + DIFF_CONTEXT_LINES)
    const body: Array<string> = []
    let cursor = from
    let grown = 0
    for (const change of changes.slice(index, last + 1)) {
      for (; cursor < change.start; cursor++) body.push(` ${lines[cursor]}`)
      for (const line of change.old) body.push(`-${line}`)
      for (const line of change.new) body.push(`+${line}`)
      cursor = change.start + change.old.length
      grown += change.new.length - change.old.length
    }
    for (; cursor < to; cursor++) body.push(` ${lines[cursor]}`)
    const oldCount = to - from
    const newCount = oldCount + grown
    const position = (start: number, count: number) => `${count === 0 ? start : start + 1},${count}`
    out.push(`@@ -${position(from, oldCount)} +${position(from + delta, newCount)} @@`, ...body)
    delta += grown
    index = last + 1
  }
  return out.join("\n")
}

const listed = (lines: ReadonlyArray<number>): string =>
  lines.length <= MAX_LISTED
    ? lines.join(", ")
    : `${lines.slice(0, MAX_LISTED).join(", ")} and ${lines.length - MAX_LISTED} more`

const numbered = (content: string, startLine: number, endLine: number): string =>
  Text.numbered(content.split("\n"), startLine, endLine)

const notFound = (
  shown: string,
  content: string,
  oldString: string,
  outcome: Extract<Match.Outcome, { _tag: "NotFound" }>,
): string => {
  if (oldString.trim() === "") {
    return (
      `oldString, which is only whitespace, does not occur in ${shown} exactly; the tolerant matchers ignore ` +
      "whitespace, so they cannot find it. Quote the lines around the whitespace to change (with their text), and " +
      "put them with the change in newString."
    )
  }
  const parts = [
    outcome.stopped === undefined
      ? `oldString was not found in ${shown}, neither exactly nor by a tolerant matcher.`
      : `oldString was not found in ${shown} exactly, and the tolerant matchers stopped at ${outcome.stopped}: ` +
        "the quote is long and the file repeats its lines so often that comparing them loosely would take too long. " +
        "Quote fewer lines, exactly as the file has them.",
  ]
  const { closest } = outcome
  if (closest !== undefined) {
    const range = closest.startLine === closest.endLine ? `line ${closest.startLine}` : `lines ${closest.startLine}-${closest.endLine}`
    parts.push(
      `The most similar region is ${range} (${Math.round(closest.similarity * 100)}% similar):\n${numbered(content, closest.startLine, closest.endLine)}`,
    )
  }
  for (const refusal of outcome.refused.slice(0, 3)) {
    parts.push(
      `A ${refusal.matcher} match at line ${refusal.line} was refused: it spans ${refusal.lines} lines and ${refusal.chars} characters, more than oldString's size allows (at most ${Match.MAX_SPAN_LINE_RATIO}× its lines + ${Match.MAX_SPAN_EXTRA_LINES} and ${Match.MAX_SPAN_CHAR_RATIO}× its characters + ${Match.MAX_SPAN_EXTRA_CHARS}).`,
    )
  }
  const prefix = LINE_NUMBER.exec(oldString)
  const region = closest === undefined ? undefined : splitLines(content).slice(closest.startLine - 1, closest.endLine).join("\n")
  const unlike = unlikeOnly(content, region, prefix !== null && allNumbered(oldString) ? withoutNumbers(oldString) : oldString)
  if (unlike !== undefined) {
    parts.push(
      `oldString is in ${shown}, but written with other code points there: ${unlike}. They look the same, and ` +
        "read shows them as they are. Write those characters in oldString as the file has them (as JSON \\u escapes), " +
        "or quote only the text around them.",
    )
  } else if (prefix !== null) {
    parts.push(
      `oldString starts with "${prefix[0]}": the line number read shows before each line, which is not part of the file. Drop these numbers from oldString and newString.`,
    )
  }
  parts.push("Read the file again and copy oldString exactly from it, including indentation, then retry.")
  return parts.join("\n\n")
}

/** Characters no one sees: zero-width spaces and joiners, the word joiner, a byte order mark inside text, soft hyphens. */
const INVISIBLE = /[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]/gu
/** Text as it looks: composed (NFC), without invisible characters. */
const looks = (text: string): string => text.normalize("NFC").replace(INVISIBLE, "")

/** The code points that look like nothing or merge into the letter before them. */
const UNSEEN = /[\p{M}\u00ad\u200b-\u200f\u2060-\u2064\ufeff]/gu

/**
 * Where `oldString` is in `content` only once both are taken as they look (one composed and the other not, or an
 * invisible character in one): the code points that differ, named (`U+0301`, `U+200B`) from the file's `region`
 * most like oldString, or undefined.
 */
const unlikeOnly = (content: string, region: string | undefined, oldString: string): string | undefined => {
  const wanted = looks(oldString)
  if (wanted.trim() === "" || content.includes(oldString) || !looks(content).includes(wanted)) return undefined
  const named = (text: string) => new Set(text.match(UNSEEN) ?? [])
  const inOld = named(oldString)
  const inFile = named(region ?? "")
  const codes = (chars: Iterable<string>) => [...chars].map((char) => `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`)
  const fileOnly = codes([...inFile].filter((char) => !inOld.has(char))).slice(0, 5)
  const oldOnly = codes([...inOld].filter((char) => !inFile.has(char))).slice(0, 5)
  const sides = [
    ...(fileOnly.length === 0 ? [] : [`the file has ${fileOnly.join(", ")} (combining marks or invisible characters)`]),
    ...(oldOnly.length === 0 ? [] : [`oldString has ${oldOnly.join(", ")}, which the file does not`]),
  ]
  return sides.length === 0 ? "one is composed (NFC) and the other not (NFD)" : sides.join("; ")
}

const ambiguous = (shown: string, outcome: Extract<Match.Outcome, { _tag: "Ambiguous" }>): string =>
  outcome.matcher === "exact"
    ? `oldString occurs ${outcome.lines.length} times in ${shown} (at lines ${listed(outcome.lines)}). Include more surrounding lines in oldString so that it matches exactly one place, or set replaceAll: true to replace every occurrence.`
    : `oldString is not in ${shown} exactly, and matching ${Match.DESCRIPTIONS[outcome.matcher]} (${outcome.matcher}) finds ${outcome.lines.length} places (at lines ${listed(outcome.lines)}), so nothing was changed. Copy oldString exactly from the file, with enough surrounding lines to match one place.`

const unindentable = (shown: string, content: string, outcome: Extract<Match.Outcome, { _tag: "Unindentable" }>): string =>
  `oldString is not in ${shown} exactly; matching ${Match.DESCRIPTIONS[outcome.matcher]} (${outcome.matcher}) ` +
  `found lines ${outcome.startLine}-${outcome.endLine}, but ${outcome.reason}. Nothing was changed, so the file ` +
  `keeps one indentation style. The matched lines:\n${numbered(content, outcome.startLine, outcome.endLine)}\n\n` +
  "Copy oldString from these lines exactly, and indent newString the same way."

const describe = (output: Output): string => {
  const count = `${output.replacements} replacement${output.replacements === 1 ? "" : "s"}`
  const how = output.matcher === "exact" ? "" : ` (oldString was not found exactly; matched ${Match.DESCRIPTIONS[output.matcher]}: ${output.matcher})`
  const numbers = output.lineNumbersRemoved === true ? " The `N: ` line numbers copied from read were removed first." : ""
  return `Edited ${output.path}: ${count}${how}, +${output.added} -${output.removed} lines.${numbers}${Text.notKeptNote(output.path, output.notKept)}\n\n${output.diff}`
}

const makeTool = (services: Builtin.Services) =>
  Builtin.tool({
    description: DESCRIPTION,
    input: Input,
    output: Output,
    checksPermissions: true,
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: false },
    toModelOutput: ({ output }) => describe(output),
    execute: (input, context) =>
      Effect.gen(function* () {
        if (input.oldString === "") {
          return yield* new Tool.Failure({
            message:
              "oldString is empty. edit replaces existing text: quote the lines to change (or the lines around an insertion point, repeated in newString). To create a file or replace all of it, use write.",
          })
        }
        const half = Text.halfCharacter("oldString", input.oldString) ?? Text.halfCharacter("newString", input.newString)
        if (half !== undefined) return yield* new Tool.Failure({ message: `${half} Nothing was changed.` })
        if (input.oldString === input.newString) {
          return yield* new Tool.Failure({
            message: "oldString and newString are identical, so the edit would change nothing. Put the new text in newString.",
          })
        }
        const { resolved, shown } = yield* Builtin.authorizeChange(services, context, { tool: "edit", path: input.filePath, reads: true })
        if (!resolved.exists) {
          return yield* new Tool.Failure({
            message: `File not found: ${shown}.${Text.otherFormNote(resolved.real) || " edit changes existing files; to create this one, use write."}`,
          })
        }
        if (resolved.kind !== "file") {
          return yield* new Tool.Failure({
            message: `Cannot edit ${shown}: it is ${resolved.kind === "directory" ? "a directory" : "not a regular file"}. Give the path of a text file.`,
          })
        }
        return yield* FileLock.retried(
          [resolved.real],
          (tries) => attempt(services, context, input, resolved.real, shown, tries),
          () => Text.changed(shown),
        )
      }),
  })

/**
 * One try at the edit: read the file, find oldString, write the result if the file is still what was read. When
 * another process changed it in between, it answers FileLock.CHANGED, to be redone against the new content.
 */
const attempt = (
  services: Builtin.Services,
  context: Tool.Context,
  input: typeof Input.Type,
  real: string,
  shown: string,
  tries: number,
): Effect.Effect<Output | typeof FileLock.CHANGED, Tool.Failure> =>
  Effect.gen(function* () {
    const snapshot = yield* ReadTracking.readToChange(services, context, { path: real, shown, tool: "edit", unseen: "allow" })
    const decoded = yield* Text.decode(snapshot.bytes, shown, "edit")
    const view = viewOf(decoded.text)
    const search = (oldString: string, newString: string) =>
      Match.find({
        content: view.text,
        oldString: oldString.replaceAll("\r\n", "\n"),
        newString: newString.replaceAll("\r\n", "\n"),
        ...(input.replaceAll === undefined ? {} : { replaceAll: input.replaceAll }),
      })
    let outcome = search(input.oldString, input.newString)
    let lineNumbersRemoved = false
    const first = outcome._tag === "NotFound" ? numberedFrom(input.oldString.replaceAll("\r\n", "\n")) : undefined
    if (first !== undefined && (allNumbered(input.newString) || !LINE_NUMBER.test(input.newString))) {
      // Taken only when the numbers are right: the text without them is found exactly where they say. The numbers
      // pin it there where it occurs elsewhere too (the place read showed, of several alike).
      const oldText = withoutNumbers(input.oldString.replaceAll("\r\n", "\n"))
      const newText = allNumbered(input.newString) ? withoutNumbers(input.newString.replaceAll("\r\n", "\n")) : input.newString
      let stripped = search(oldText, newText)
      if (stripped._tag === "Ambiguous" && stripped.matcher === "exact" && stripped.lines.includes(first) && input.replaceAll !== true) {
        const every = Match.find({ content: view.text, oldString: oldText, newString: newText.replaceAll("\r\n", "\n"), replaceAll: true })
        if (every._tag === "Found" && every.matcher === "exact") {
          stripped = { ...every, spans: every.spans.filter((span) => span.line === first) }
        }
      }
      if (stripped._tag === "Found" && stripped.spans.length === 1 && stripped.spans[0]!.line === first) {
        outcome = stripped
        lineNumbersRemoved = true
      } else if (stripped._tag === "Ambiguous" && stripped.matcher === "exact") {
        // Without the numbers it is in the file, at several places, none of them where the numbers say.
        return yield* new Tool.Failure({
          message:
            `oldString without read's line numbers occurs ${stripped.lines.length} times in ${shown} (at lines ` +
            `${listed(stripped.lines)}), none of them at line ${first}, which its numbers name. Use the numbers read ` +
            "shows for the place you mean, or drop them and include more surrounding lines so that oldString matches one place.",
        })
      }
    }
    if (outcome._tag === "NotFound") {
      return yield* new Tool.Failure({ message: notFound(shown, view.text, input.oldString, outcome) })
    }
    if (outcome._tag === "Ambiguous") return yield* new Tool.Failure({ message: ambiguous(shown, outcome) })
    if (outcome._tag === "Unindentable") return yield* new Tool.Failure({ message: unindentable(shown, view.text, outcome) })
    // What the edit would make is held to the size the file tools change, as the file was: a short oldString
    // replaced everywhere by a long newString made a 2 MB file 600 MB (and core serve ran out of memory). Counted
    // before the text is made (a UTF-16 unit is a byte at least), and once made, in bytes.
    const grown = outcome.spans.reduce((sum, span) => sum + span.replacement.length - (span.end - span.start), decoded.text.length)
    if (grown > Text.MAX_CHANGE_BYTES) return yield* new Tool.Failure({ message: tooLarge(shown, grown, "at least ") })
    const text = rewrite(decoded.text, view, outcome.spans, decoded.eol)
    if (text === decoded.text) {
      return yield* new Tool.Failure({
        message: `The edit would leave ${shown} unchanged (newString equals the text it replaces). Put the new text in newString.`,
      })
    }
    const bytes = Text.encode(text, decoded.bom)
    if (bytes.length > Text.MAX_CHANGE_BYTES) return yield* new Tool.Failure({ message: tooLarge(shown, bytes.length, "") })
    const spans = outcome.spans
    const matcher = outcome.matcher
    // Made in full or not at all, and answered: a cancel meanwhile neither stops it nor hides that it was made.
    return yield* Effect.uninterruptible(
      Effect.gen(function* () {
        if (tries === 1) {
          yield* context.progress({
            message: `Writing ${shown}: ${spans.length} replacement${spans.length === 1 ? "" : "s"}`,
            metadata: { path: shown, replacements: spans.length, matcher },
          })
        }
        const replaced = yield* Text.replace({ path: real, bytes, shown, kept: snapshot, expected: snapshot })
        if (replaced === "changed") return FileLock.CHANGED
        yield* ReadTracking.see(services, context, real, yield* ReadTracking.written(real, bytes))
        const changes = changesOf(view.text, spans)
        return yield* Stopping.finished({
          path: shown,
          replacements: spans.length,
          matcher,
          added: changes.reduce((sum, change) => sum + change.new.length, 0),
          removed: changes.reduce((sum, change) => sum + change.old.length, 0),
          diff: unified(shown, view.text, changes),
          ...(lineNumbersRemoved ? { lineNumbersRemoved } : {}),
          ...(replaced.lost.length === 0 ? {} : { notKept: replaced.lost }),
        })
      }),
    )
  })

/** The edit built-in, with the checks it makes recorded for explaining a call (Builtin.planned). */
export const make = (services: Builtin.Services) =>
  Builtin.planned(makeTool(services), (input) =>
    Builtin.changePlan(services, { path: input.filePath, reads: true }).pipe(Effect.map(({ checks }) => checks)),
  )
