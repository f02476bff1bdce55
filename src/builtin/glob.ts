export * as Glob from "./glob"

// The glob built-in: the files whose paths match a glob, newest first, found by ripgrep (so .gitignore is
// honoured, hidden files are included and .git is never entered). Only the files that match are stat'ed. It
// answers the newest `limit` of them and how many matched in all, so the model narrows its search rather than
// reading thousands of paths; bounding what is left is still the settlement's job (DESIGN §2 law 10). Only the
// newest `limit` are held while rg streams, so what glob keeps is bounded by the limit however large the tree.

import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Pinned } from "../permission/pinned"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { Ripgrep } from "./ripgrep"
import { SearchTool } from "./search-tool"

/** How many files an answer lists by default (the newest); the total is always counted. */
export const DEFAULT_LIMIT = 100
/**
 * The most a call may ask for: what is shown is held in memory whole (a limit of 100,000,000 held gigabytes and let
 * the kernel end core), and past this a model reads none of it; a narrower search answers better.
 */
export const MAX_LIMIT = 20_000

export const Input = Schema.Struct({
  pattern: SearchTool.Pattern.annotate({
    description:
      'The glob, matched against paths relative to the searched directory: "**/*.ts", "src/**/*.test.ts", ' +
      '"*.{json,jsonc}". A pattern without "/" matches file names at any depth; a leading "./" or "/" anchors it ' +
      "at the searched directory.",
  }),
  path: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "The directory to search, relative to the Location (the project directory the tools work in) or absolute " +
        "(default: the Location)",
    }),
  ),
  limit: Schema.optionalKey(
    Schema.Int.check(
      Schema.isGreaterThanOrEqualTo(1, { expected: "at least 1" }),
      Schema.isLessThanOrEqualTo(MAX_LIMIT, { expected: `at most ${MAX_LIMIT}` }),
    ).annotate({
      description: `How many files to list, newest first (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT}); the rest are counted`,
    }),
  ),
})

export const Output = Schema.Struct({
  pattern: Schema.String,
  path: Schema.String.annotate({ description: "The directory searched" }),
  files: Schema.Array(Schema.String).annotate({
    description: "The newest matching files, at most `limit`: relative to the Location when inside it, absolute otherwise",
  }),
  total: Schema.Int.annotate({ description: "How many files matched in all" }),
  hidden: Schema.optionalKey(
    Schema.Int.annotate({ description: "Matching files left out, not counted in `total`, because the user's rules deny reading them or they are the user's credential stores" }),
  ),
  notUtf8: Schema.optionalKey(
    Schema.Array(Schema.String).annotate({
      description: "Entries of `files` whose names are not UTF-8, shown with U+FFFD in place of the bad bytes",
    }),
  ),
  problems: Schema.optionalKey(
    Schema.Array(Schema.String).annotate({ description: "What could not be searched (the results may be incomplete)" }),
  ),
})
export type Output = typeof Output.Type

interface Found {
  readonly path: string
  readonly utf8: boolean
  readonly modified: number
}

const render = (output: Output): string => {
  const hidden = output.hidden === undefined ? [] : ["", Builtin.hiddenNote(output.hidden, "matching file")]
  if (output.total === 0) {
    return [
      `No files found matching ${output.pattern} in ${SearchTool.where(output.path)}.`,
      ...hidden,
      ...SearchTool.problemLines(output.problems, "results"),
    ].join("\n")
  }
  const lines = output.files.map(Builtin.nameLine)
  if (output.files.length < output.total) {
    lines.push(
      "",
      `(Showing the ${output.files.length} newest of ${output.total} matching files. Narrow the pattern or path, or raise limit.)`,
    )
  }
  if (output.notUtf8 !== undefined) {
    lines.push("", `(Not UTF-8, shown with U+FFFD: ${output.notUtf8.length} of these names.)`)
  }
  return [...lines, ...hidden, ...SearchTool.problemLines(output.problems, "results")].join("\n")
}

const makeTool = (services: Builtin.Services) =>
  Builtin.tool({
    description:
      "Find files by path pattern (a glob such as **/*.ts or src/**/index.{js,ts}). Answers the matching paths, " +
      `relative to the Location (the project directory the tools work in), newest first: at most ${DEFAULT_LIMIT} ` +
      "by default (limit changes it), with the total count; a more specific pattern or path gives a shorter list. " +
      "Honours .gitignore, includes hidden files and never looks inside .git. Use grep to search file contents, " +
      "list for a directory tree, read to open a file.",
    input: Input,
    output: Output,
    checksPermissions: true,
    annotations: SearchTool.ANNOTATIONS,
    execute: (input, context) =>
      Effect.scoped(Effect.gen(function* () {
        const { resolved, shown } = yield* Builtin.authorizeDirectory(services, context, {
          tool: "glob",
          path: input.path,
          leaveOut: "search the project",
          instead: "glob searches a directory: give its parent, or read the file.",
        })
        const newest = new SearchTool.Newest<Found>(input.limit ?? DEFAULT_LIMIT)
        let total = 0
        const denied = Builtin.hidden(services, context.agent, resolved.real)
        let hidden = 0
        // rg walks the directory as checked, held open; the "./" paths it prints are put back under the real path.
        const held = yield* SearchTool.hold(resolved.real, shown, "searched")
        const times = yield* SearchTool.datedIn(held)
        const absolute = Pinned.underneath(resolved.real)
        const base = resolved.real.endsWith("/") ? resolved.real.slice(0, -1) : resolved.real
        const outcome = yield* SearchTool.search(services, context, {
          args: [...Ripgrep.COMMON_FLAGS, "--files", "--null", "--", "."],
          select: input.pattern,
          cwd: held.at(""),
          root: held.path,
          ...Ripgrep.records(0, (printed) => {
            // rg prints "./" and the rest of the path: only the rest is decoded, after the real path (UTF-8 as
            // any string is, so decoding the two together would answer the same).
            const relative = printed[0] === 0x2e && printed[1] === 0x2f
            const decoded = Ripgrep.decode(relative ? printed.subarray(1) : printed)
            const text = relative ? base + decoded.text : decoded.text
            // A file whose read a rule denies is not named.
            if (denied !== undefined && denied(text)) {
              hidden++
              return
            }
            total++
            newest.offer({ path: text, utf8: decoded.utf8, modified: times.of(printed, decoded.utf8 ? text : Buffer.from(absolute(printed))) })
          }),
        })
        const { problems, selectError } = outcome
        if (selectError !== undefined) return yield* SearchTool.invalidGlob("glob", input.pattern, selectError)
        if (SearchTool.failed(outcome, total)) {
          return yield* new Tool.Failure({ message: `ripgrep could not search ${shown}:\n${problems.join("\n")}` })
        }
        // rg prints every path as the directory it was given followed by the rest, so the directory's shown form
        // is worked out once rather than per file (which costs more than the search itself for many files).
        const under = `${base}/`
        const shownBase = shown === "." ? "" : shown.endsWith("/") ? shown : `${shown}/`
        const display = (path: string) =>
          path.startsWith(under) ? shownBase + path.slice(under.length) : Builtin.display(services.directory, path)
        const kept = newest.sorted()
        const files = kept.map((file) => display(file.path))
        const notUtf8 = kept.filter((file) => !file.utf8).map((file) => display(file.path))
        const output: Output = {
          pattern: input.pattern,
          path: shown,
          files,
          total,
          ...(hidden === 0 ? {} : { hidden }),
          ...(notUtf8.length === 0 ? {} : { notUtf8 }),
          ...(problems.length === 0 ? {} : { problems }),
        }
        return output
      })),
    toModelOutput: ({ output }) => render(output),
  })

/** The glob built-in, with the checks it makes recorded for explaining a call. */
export const make = (services: Builtin.Services) => SearchTool.planned(services, "glob", makeTool(services))
