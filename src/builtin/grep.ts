export * as Grep from "./grep"

// The grep built-in: lines matching a regular expression, grouped by file, files newest first. ripgrep searches
// in parallel (its --sort would make it single-threaded), and this module orders the files itself: it stats only
// files with matches, and while rg streams it keeps only the newest files whose matches fill the limit, so
// memory stays bounded however much matches. Every match is counted, so what the limit leaves out is exact.

import { basename, dirname } from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Pinned } from "../permission/pinned"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { Ripgrep } from "./ripgrep"
import { SearchTool } from "./search-tool"

export const DEFAULT_LIMIT = 100
/**
 * The most a call may ask for: what is shown is held in memory whole (a limit of 100,000,000 held gigabytes and let
 * the kernel end core), and past this a model reads none of it; a narrower search answers better.
 */
export const MAX_LIMIT = 20_000
/** Characters of a matching line shown before it is cut. */
export const MAX_LINE_CHARS = 2_000
/**
 * Characters of matching lines one call shows at most, all lines together: a line is cut at this over the limit
 * (never below MIN_LINE_CHARS) where that is less than MAX_LINE_CHARS. 20,000 lines of 2,000 characters made a
 * result of 40 MB that core held eight times over while bounding and keeping it; sixteen such calls at once held 3 GB.
 */
const MAX_SHOWN_CHARS = 4_000_000
const MIN_LINE_CHARS = 200

/** Where a call's matching lines are cut, by its limit (MAX_SHOWN_CHARS). */
const lineCharsFor = (limit: number): number =>
  Math.min(MAX_LINE_CHARS, Math.max(MIN_LINE_CHARS, Math.floor(MAX_SHOWN_CHARS / limit)))

export const Input = Schema.Struct({
  pattern: SearchTool.Pattern.annotate({
    description: "A regular expression (Rust regex syntax, like PCRE without look-around), e.g. log.*Error or function\\s+\\w+",
  }),
  path: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "The directory (or one file) to search, relative to the Location (the project directory the tools work in) " +
        "or absolute (default: the Location)",
    }),
  ),
  include: Schema.optionalKey(
    SearchTool.Pattern.annotate({
      description:
        'Only search files matching this glob, e.g. "*.ts" or "*.{ts,tsx}". A glob without "/" matches file names; ' +
        "one with a / matches paths relative to the searched directory (for a single file: relative to the Location)",
    }),
  ),
  limit: Schema.optionalKey(
    Schema.Int.check(
      Schema.isGreaterThanOrEqualTo(1, { expected: "at least 1" }),
      Schema.isLessThanOrEqualTo(MAX_LIMIT, { expected: `at most ${MAX_LIMIT}` }),
    ).annotate({
      description: `How many matching lines to show (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT}); the rest are counted`,
    }),
  ),
})

const Line = Schema.Struct({
  line: Schema.Int.annotate({ description: "1-based line number" }),
  text: Schema.String.annotate({ description: `The line, cut after ${MAX_LINE_CHARS} characters (fewer with a large limit) with a note` }),
})

const FileMatches = Schema.Struct({
  path: Schema.String,
  matches: Schema.Int.annotate({ description: "Matching lines in this file" }),
  lines: Schema.Array(Line).annotate({ description: "The matching lines shown" }),
  notUtf8: Schema.optionalKey(Schema.Boolean.annotate({ description: "The path is not UTF-8 (shown with U+FFFD)" })),
})

export const Output = Schema.Struct({
  pattern: Schema.String,
  path: Schema.String.annotate({ description: "Where the search ran" }),
  include: Schema.optionalKey(Schema.String),
  matches: Schema.Int.annotate({ description: "Matching lines in all" }),
  files: Schema.Int.annotate({ description: "Files with matches in all" }),
  shown: Schema.Array(FileMatches).annotate({ description: "Files with the matches shown, newest first" }),
  notShown: Schema.Int.annotate({ description: "Matching lines left out by the limit" }),
  problems: Schema.optionalKey(
    Schema.Array(Schema.String).annotate({ description: "What could not be searched (the results may be incomplete)" }),
  ),
})
export type Output = typeof Output.Type

interface Collected {
  readonly path: string
  readonly raw: Uint8Array
  readonly utf8: boolean
  readonly modified: number
  count: number
  readonly lines: Array<typeof Line.Type>
}

const sameBytes = (left: Uint8Array, right: Uint8Array): boolean =>
  left.length === right.length && Buffer.from(left.buffer, left.byteOffset, left.length).equals(right)

/** Bytes of a line's text kept for showing it: enough for MAX_LINE_CHARS characters and one more. */
const KEEP_BYTES = (MAX_LINE_CHARS + 1) * 4
/** Bytes of a record kept while it spans chunks: its line number, the ":" and the text kept. */
const KEEP_RECORD_BYTES = KEEP_BYTES + 24

/** What rg's output is handed to, record by record, by `matchingLines`. */
interface Records {
  /** The records from here on name another file than the ones before: `path`, a copy of its bytes. */
  readonly path: (path: Uint8Array) => void
  /**
   * A matching line of the current file: its number, and its text as bytes `start` to `end` of `bytes` (only
   * valid during the call, and only the first KEEP_BYTES of a longer text); `length` is the text's whole length.
   */
  readonly line: (line: number, bytes: Uint8Array, start: number, end: number, length: number) => void
  /** Any other record of the current file (rg's note that a binary file matched). */
  readonly note: (note: Uint8Array) => void
}

/**
 * Parses rg's `--null --line-number --no-heading` output: `path NUL number ":" text LF` for each matching line
 * (`number ":" text LF` when one file is searched without its name). A path holds anything but NUL and a line
 * anything but LF, so neither ":" nor bytes that are not UTF-8 confuse it. rg prints a file's records together, so
 * a path is compared with the one before in place and handed on only when it changes; a line is handed on as a
 * range of the chunk it arrived in, so counting lines allocates nothing. Of a record spanning chunks only its first
 * KEEP_RECORD_BYTES are kept (and its length counted), so a megabyte-long minified line costs no more than a short
 * one.
 */
const matchingLines = (withPath: boolean, records: Records) => {
  let inPath = withPath
  let path: Uint8Array = new Uint8Array(0)
  let pathPending: Uint8Array | undefined
  let recordPending: Uint8Array | undefined
  let recordLength = 0
  const keepRecord = (chunk: Uint8Array, start: number, end: number) => {
    const kept = recordPending?.length ?? 0
    if (kept < KEEP_RECORD_BYTES) {
      const taken = chunk.subarray(start, Math.min(end, start + KEEP_RECORD_BYTES - kept))
      recordPending = recordPending === undefined ? taken.slice() : Ripgrep.concat(recordPending, taken)
    }
    recordLength += end - start
  }
  const setPath = (next: Uint8Array) => {
    path = next
    records.path(path)
  }
  /** Whether bytes `start` to `end` of `chunk` are the current path. */
  const samePath = (chunk: Uint8Array, start: number, end: number): boolean => {
    if (end - start !== path.length) return false
    for (let index = path.length - 1; index >= 0; index--) if (chunk[start + index] !== path[index]) return false
    return true
  }
  /** A whole record, bytes `start` to `end` of `bytes`, `length` bytes long (more than it holds when cut). */
  const record = (bytes: Uint8Array, start: number, end: number, length: number) => {
    let index = start
    let line = 0
    while (index < end && bytes[index]! >= 0x30 && bytes[index]! <= 0x39) line = line * 10 + bytes[index++]! - 0x30
    if (index === start || index === end || bytes[index] !== 0x3a) return records.note(bytes.subarray(start, end))
    const text = index + 1
    records.line(line, bytes, text, Math.min(end, text + KEEP_BYTES), length - (text - start))
  }
  const onData = (chunk: Uint8Array) => {
    let position = 0
    while (position < chunk.length) {
      if (inPath) {
        const end = chunk.indexOf(0, position)
        if (end === -1) {
          // Continued in the next chunk: copied, since the stream may reuse this one.
          pathPending = pathPending === undefined ? chunk.slice(position) : Ripgrep.concat(pathPending, chunk.subarray(position))
          return
        }
        if (pathPending !== undefined) {
          const whole = Ripgrep.concat(pathPending, chunk.subarray(position, end))
          pathPending = undefined
          if (!sameBytes(whole, path)) setPath(whole)
        } else if (!samePath(chunk, position, end)) setPath(chunk.slice(position, end))
        inPath = false
        position = end + 1
        continue
      }
      const end = chunk.indexOf(10, position)
      if (end === -1) {
        keepRecord(chunk, position, chunk.length)
        return
      }
      if (recordPending === undefined) record(chunk, position, end, end - position)
      else {
        keepRecord(chunk, position, end)
        const pending = recordPending
        recordPending = undefined
        record(pending, 0, pending.length, recordLength)
        recordLength = 0
      }
      inPath = withPath
      position = end + 1
    }
  }
  const onEnd = () => {
    const pending = recordPending
    recordPending = undefined
    if (pending !== undefined) record(pending, 0, pending.length, recordLength)
    recordLength = 0
  }
  return { onData, onEnd }
}

/**
 * A matching line as shown: without a CR, cut when too long, marked when not UTF-8. `bytes` is the text, or only
 * its first KEEP_BYTES when `length` is more (then a character cut off at their end is dropped, and bytes past
 * them are not looked at).
 */
const shownLine = (bytes: Uint8Array, length: number, lineChars: number): string => {
  const whole = bytes.length === length
  const end = whole && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length
  const decoded = Ripgrep.decode(bytes.subarray(0, end), !whole)
  let text = decoded.text
  if (!whole || text.length > lineChars) {
    let cut = Math.min(text.length, lineChars)
    if (text.charCodeAt(cut - 1) >= 0xd800 && text.charCodeAt(cut - 1) <= 0xdbff) cut--
    text = `${text.slice(0, cut)} … [line cut at ${lineChars} characters; it is ${length} bytes long]`
  }
  return decoded.utf8 ? text : `${text} [not UTF-8: shown with U+FFFD]`
}

/**
 * rg's report of a bad regular expression, reworded: the reason first, then the pattern with rg's caret under the
 * fault. rg shows the pattern wrapped in the group `(?:…)` it searches with; the wrapper is removed.
 */
const regexError = (problems: ReadonlyArray<string>): string | undefined => {
  const literal = problems
    .map((line) => /^the literal "(\\[nr])" is not allowed in a regex$/.exec(line)?.[1])
    .find((found) => found !== undefined)
  if (literal !== undefined) {
    // rg's own advice (its --multiline flag) is not something grep offers.
    return (
      `it matches a line-ending character (${literal}), but grep matches one line at a time and lines end at \\n ` +
      "or \\r\\n, so no line holds one. Use $ to anchor at the end of a line, or search for each line separately."
    )
  }
  const start = problems.indexOf("regex parse error:")
  if (start === -1) return undefined
  const reason = problems.find((line) => line.startsWith("error: "))?.slice("error: ".length)
  const shown = problems[start + 1]
  const caret = problems[start + 2]
  const wrapped = shown === undefined ? undefined : /^(\s*)\(\?:(.*)\)$/.exec(shown)
  if (reason === undefined || shown === undefined || caret === undefined || wrapped === null || wrapped === undefined) {
    return problems.slice(start).join("\n")
  }
  const indent = wrapped[1]!
  const column = caret.indexOf("^") - indent.length - 3
  // A caret under the wrapper itself points at nothing the pattern holds.
  if (column < 0) return reason
  return `${reason}\n${indent}${wrapped[2]}\n${indent}${" ".repeat(column)}${caret.slice(caret.indexOf("^")).trimEnd()}`
}

const render = (output: Output): string => {
  const problems = SearchTool.problemLines(output.problems, "results")
  if (output.matches === 0) {
    const among = output.include === undefined ? "" : ` (searching only files matching ${output.include})`
    return [`No matches for ${output.pattern} in ${SearchTool.where(output.path)}${among}.`, ...problems].join("\n")
  }
  const shownCount = output.matches - output.notShown
  const lines = [
    `${output.matches} matching line${output.matches === 1 ? "" : "s"} in ${output.files} file${output.files === 1 ? "" : "s"}` +
      (output.notShown > 0 ? `; showing ${shownCount}, newest files first:` : ", newest files first:"),
  ]
  for (const file of output.shown) {
    lines.push("", `${Builtin.nameLine(file.path)}:${file.notUtf8 === true ? " (name not UTF-8: shown with U+FFFD)" : ""}`)
    for (const line of file.lines) lines.push(`  ${line.line}: ${line.text}`)
    if (file.lines.length < file.matches) lines.push(`  (${file.matches - file.lines.length} more in this file not shown)`)
  }
  if (output.notShown > 0) {
    const hiddenFiles = output.files - output.shown.length
    lines.push(
      "",
      `(${output.notShown} matching lines not shown` +
        (hiddenFiles > 0 ? `, ${hiddenFiles} more file${hiddenFiles === 1 ? "" : "s"} not listed` : "") +
        ". Narrow the pattern, path or include, or raise limit.)",
    )
  }
  return [...lines, ...problems].join("\n")
}

/**
 * Collects matching lines newest file first, trimmed to the files whose matches fill the limit. A file is stat'ed
 * when its first match arrives (`begin`); one that cannot be shown any more is only counted, its lines never decoded.
 */
const newestFirst = (limit: number, times: ReturnType<typeof SearchTool.modifiedTimes>) => {
  const lineChars = lineCharsFor(limit)
  const kept: Array<Collected> = []
  let filled = 0
  let current: Collected | undefined
  let showing = false
  let matches = 0
  let files = 0
  /** Ranks the file whose lines were arriving among those kept, and drops the files past the limit. */
  const finish = () => {
    if (current === undefined || !showing) return
    let at = kept.findIndex((other) => SearchTool.newerFirst(current!, other) < 0)
    if (at === -1) at = kept.length
    kept.splice(at, 0, current)
    filled = 0
    for (let index = 0; index < kept.length; index++) {
      filled += kept[index]!.count
      if (filled >= limit) {
        kept.length = index + 1
        break
      }
    }
  }
  /** Begins the file at `raw` (its real path), printed as `printed`, named `path`. */
  const begin = (raw: Uint8Array, printed: Uint8Array, path: string, utf8: boolean) => {
    const modified = times.of(printed, utf8 ? path : Buffer.from(raw))
    current = { path, raw, utf8, modified, count: 0, lines: [] }
    const oldest = kept[kept.length - 1]
    showing = filled < limit || oldest === undefined || SearchTool.newerFirst(current, oldest) < 0
    files++
  }
  return {
    kept,
    finish,
    begin,
    /** Whether the lines arriving are the file `raw`'s, begun already. */
    isCurrent: (raw: Uint8Array) => current !== undefined && sameBytes(raw, current.raw),
    /** A matching line of the current file (as Records.line hands it on): counted, and kept when it may be shown. */
    add: (line: number, bytes: Uint8Array, start: number, end: number, length: number) => {
      current!.count++
      matches++
      if (showing && current!.lines.length < limit) current!.lines.push({ line, text: shownLine(bytes.subarray(start, end), length, lineChars) })
    },
    matches: () => matches,
    files: () => files,
  }
}

/**
 * The kernel's own file systems: files in them look regular, but a read of some blocks until the kernel has more to
 * say (`/proc/kmsg`, `/sys/kernel/tracing/trace_pipe`) and takes it from the program that should have it. grep
 * refuses them, and a search of `/` leaves them out.
 */
const KERNEL: ReadonlyArray<string> = ["/proc", "/sys"]

/** rg's arguments for a search of `target` (one file: printed without its name) in `real`. */
const searchArgs = (single: boolean, pattern: string, target: string, real: string) => [
  ...Ripgrep.COMMON_FLAGS,
  ...(real === "/" ? KERNEL.map((root) => `--glob=!${root}`) : []),
  "--line-number",
  "--no-heading",
  single ? "--no-filename" : "--with-filename",
  "--null",
  "--color=never",
  // A CRLF file's lines end before the \r, so $ matches at their end as it does in an LF file.
  "--crlf",
  `--regexp=${pattern}`,
  "--",
  target,
]

/** Why a search rg could not run failed: an invalid regular expression said so, or rg's own words. */
const searchFailure = (problems: ReadonlyArray<string>, pattern: string) => {
  const regex = regexError(problems)
  return new Tool.Failure({
    message:
      regex === undefined
        ? `ripgrep could not run this search:\n${problems.join("\n")}`
        : `Invalid regular expression ${JSON.stringify(pattern)}: ${regex}\n` +
          "grep uses Rust regex syntax: escape ( ) [ ] { } . * + ? | \\ ^ $ with a backslash to match them literally.",
  })
}

/** The kept files' lines, newest file first, up to the limit; answers how many of the limit were left unused. */
const shownFiles = (kept: ReadonlyArray<Collected>, limit: number, directory: string) => {
  let remaining = limit
  const shown: Array<typeof FileMatches.Type> = []
  for (const file of kept) {
    if (remaining === 0) break
    const lines = file.lines.slice(0, remaining)
    remaining -= lines.length
    shown.push({
      path: Builtin.display(directory, file.path),
      matches: file.count,
      lines,
      ...(file.utf8 ? {} : { notUtf8: true }),
    })
  }
  return { shown, remaining }
}

const DESCRIPTION =
  "Search file contents for a regular expression (ripgrep), case-sensitive: start the pattern with (?i) to " +
  "ignore case. Answers the matching lines with their line numbers, grouped by file (paths relative to the " +
  `Location, the project directory the tools work in), newest files first, at most ${DEFAULT_LIMIT} lines by ` +
  `default (limit changes it) with a count of the rest. Lines over ${MAX_LINE_CHARS} characters are cut (over ` +
  `${MAX_SHOWN_CHARS / 1_000_000} million characters divided by limit, with a limit over ${MAX_SHOWN_CHARS / MAX_LINE_CHARS}). Each ` +
  "line is matched without its line ending, so $ works in Windows files too. include filters files by glob " +
  "(*.ts, *.{ts,tsx}). Honours .gitignore, includes hidden files, never looks inside .git, skips binary files. " +
  "Use glob to find files by name, then read to see a match in context."

const makeTool = (services: Builtin.Services) =>
  Builtin.tool({
    description: DESCRIPTION,
    input: Input,
    output: Output,
    checksPermissions: true,
    annotations: SearchTool.ANNOTATIONS,
    execute: (input, context) =>
      Effect.scoped(Effect.gen(function* () {
        const resolved = yield* Builtin.authorizePath(services, context, {
          action: "grep",
          path: input.path ?? ".",
          access: "read",
          tool: "grep",
        })
        const shown = Builtin.display(services.directory, resolved.real)
        if (resolved.kind === "missing") {
          return yield* new Tool.Failure({ message: `Path not found: ${shown}. Give an existing directory or file, or leave path out to search the project.` })
        }
        if (resolved.kind === "other") {
          return yield* new Tool.Failure({ message: `${shown} is not a directory or regular file (a FIFO, socket or device); grep searches directories and files.` })
        }
        const kernel = KERNEL.find((root) => resolved.real === root || resolved.real.startsWith(`${root}/`))
        if (kernel !== undefined) {
          return yield* new Tool.Failure({
            message:
              `${shown} is in ${kernel}, the kernel's own files, which grep does not search: some never end (a read ` +
              "waits for the next kernel message) or take what another program should get. Read the file you need " +
              "with read.",
          })
        }
        const limit = input.limit ?? DEFAULT_LIMIT
        const single = resolved.kind === "file"
        // Files whose read a rule denies are never shown: their lines, their notes and their counts are left out,
        // without a count of them either (it would tell what they hold). One such file asked for by name is refused.
        const denied = Builtin.hidden(services, context.agent, resolved.real)
        if (single && denied !== undefined && denied(resolved.real)) {
          yield* Builtin.refuseDenied(services, context, [{ action: "read", resources: [shown], save: [] }])
        }
        // rg searches a file it is given by name whatever the globs, so include is applied to it here (rg still
        // runs, listing the file, to report an invalid glob as it would for a directory).
        const excluded = single && input.include !== undefined && !Ripgrep.selects(input.include, shown)
        const notes: Array<string> = []
        const realBytes = Buffer.from(resolved.real)
        // rg runs in the directory as checked (the file's own, for one file), held open; the "./" paths it prints
        // are put back under the real path.
        const held = yield* SearchTool.hold(single ? dirname(resolved.real) : resolved.real, shown, "searched")
        const absolute = Pinned.underneath(resolved.real)
        const target = single ? `./${basename(resolved.real)}` : "."
        const collected = newestFirst(limit, yield* SearchTool.datedIn(held))
        // rg prints a file's records together, so a file is judged (and, unless denied, begun) once, at its first
        // line; its path is made absolute once, when its records begin.
        let skipped: Uint8Array | undefined
        let skipping = false
        let raw: Uint8Array = realBytes
        let printed: Uint8Array = Buffer.from(target)
        let fresh = true
        const hides = (raw: Uint8Array): boolean => denied !== undefined && denied(Ripgrep.decode(raw).text)
        const parser = matchingLines(!single, {
          path: (path) => {
            printed = path
            raw = absolute(path)
            fresh = true
          },
          line: (line, bytes, start, end, length) => {
            if (fresh) {
              fresh = false
              if (skipped !== undefined && sameBytes(raw, skipped)) skipping = true
              else if (collected.isCurrent(raw)) skipping = false
              else {
                const { text, utf8 } = Ripgrep.decode(raw)
                skipping = denied !== undefined && denied(text)
                if (skipping) skipped = raw
                else {
                  collected.finish()
                  collected.begin(raw, printed, text, utf8)
                }
              }
            }
            if (!skipping) collected.add(line, bytes, start, end, length)
          },
          note: (note) => {
            if (!hides(raw)) notes.push(`${shown}: ${Ripgrep.decode(note).text}`)
          },
        })
        const outcome = yield* SearchTool.search(services, context, {
          args: excluded ? [...Ripgrep.COMMON_FLAGS, "--files", "--", target] : searchArgs(single, input.pattern, target, resolved.real),
          ...(input.include === undefined ? {} : { select: input.include }),
          cwd: held.at(""),
          root: held.path,
          onData: excluded ? () => undefined : parser.onData,
          onEnd: () => {
            parser.onEnd()
            collected.finish()
          },
        })
        const { selectError } = outcome
        const problems = [...outcome.problems, ...notes]
        const matches = collected.matches()
        if (selectError !== undefined) return yield* SearchTool.invalidGlob("include glob", input.include, selectError)
        if (SearchTool.failed(outcome, matches)) return yield* searchFailure(outcome.problems, input.pattern)
        const { shown: files, remaining } = shownFiles(collected.kept, limit, services.directory)
        const output: Output = {
          pattern: input.pattern,
          path: shown,
          ...(input.include === undefined ? {} : { include: input.include }),
          matches,
          files: collected.files(),
          shown: files,
          notShown: matches - (limit - remaining),
          ...(problems.length === 0 ? {} : { problems }),
        }
        return output
      })),
    toModelOutput: ({ output }) => render(output),
  })

/** The grep built-in, with the checks it makes recorded for explaining a call. */
export const make = (services: Builtin.Services) => SearchTool.planned(services, "grep", makeTool(services))
