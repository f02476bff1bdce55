export * as Glob from "./glob"

// The glob built-in: files whose paths match a glob, newest first, found by ripgrep (so .gitignore is honoured,
// hidden files are included and .git is never entered). Only the files that match are stat'ed, and only the
// newest MAX_FILES are kept while rg streams, so memory stays bounded however many match.

import { statSync } from "node:fs"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { Ripgrep } from "./ripgrep"

/** Files shown, newest first; the rest are counted. */
export const MAX_FILES = 100

export const Input = Schema.Struct({
  pattern: Schema.String.annotate({
    description:
      'The glob, matched against paths relative to the searched directory: "**/*.ts", "src/**/*.test.ts", ' +
      '"*.{json,jsonc}". A pattern without "/" matches file names at any depth.',
  }),
  path: Schema.optionalKey(
    Schema.String.annotate({ description: "The directory to search, relative to the Location or absolute (default: the Location)" }),
  ),
})

export const Output = Schema.Struct({
  pattern: Schema.String,
  path: Schema.String.annotate({ description: "The directory searched" }),
  files: Schema.Array(Schema.String).annotate({ description: `Matching files, newest first (at most ${MAX_FILES})` }),
  total: Schema.Int.annotate({ description: "How many files matched" }),
  notShown: Schema.Int.annotate({ description: "Matching files left out of `files`" }),
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

interface Dated {
  readonly path: string
  readonly modified: number
}

/** Newer first; equal times by path, so the order is stable. */
export const newerFirst = (a: Dated, b: Dated): number =>
  b.modified - a.modified || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)

/** Keeps the `size` newest of what it is offered, sorted, in O(size) per insertion. */
const newest = <A extends Dated>(size: number) => {
  const kept: Array<A> = []
  const offer = (item: A) => {
    const order = newerFirst
    if (kept.length === size && order(item, kept[kept.length - 1]!) >= 0) return
    let low = 0
    let high = kept.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (order(kept[middle]!, item) <= 0) low = middle + 1
      else high = middle
    }
    kept.splice(low, 0, item)
    if (kept.length > size) kept.pop()
  }
  return { kept, offer }
}

/** A file's modification time; 0 for one that vanished since rg listed it. */
export const modifiedTime = (path: string | Buffer): number => {
  try {
    return statSync(path).mtimeMs
  } catch {
    return 0
  }
}

const render = (output: Output): string => {
  if (output.total === 0) {
    return [`No files found matching ${output.pattern} in ${output.path}.`, ...problemLines(output.problems)].join("\n")
  }
  const lines = [...output.files]
  if (output.notShown > 0) {
    lines.push(
      "",
      `(${output.notShown} more of ${output.total} files not shown. Use a more specific pattern or path to narrow it.)`,
    )
  }
  if (output.notUtf8 !== undefined) {
    lines.push("", `(Not UTF-8, shown with U+FFFD: ${output.notUtf8.length} of these names.)`)
  }
  return [...lines, ...problemLines(output.problems)].join("\n")
}

const problemLines = (problems: ReadonlyArray<string> | undefined): Array<string> =>
  problems === undefined ? [] : ["", "ripgrep reported problems, so the results may be incomplete:", ...problems]

export const make = (services: Builtin.Services) =>
  Tool.make({
    description:
      "Find files by path pattern (a glob such as **/*.ts or src/**/index.{js,ts}). Answers paths relative to the " +
      `project, newest first, at most ${MAX_FILES} of them with a count of the rest. Honours .gitignore, includes ` +
      "hidden files and never looks inside .git. Use grep to search file contents, list for a directory tree, " +
      "read to open a file.",
    input: Input,
    output: Output,
    checksPermissions: true,
    execute: (input, context) =>
      Effect.gen(function* () {
        const resolved = yield* Builtin.authorizePath(services, context, {
          action: "glob",
          path: input.path ?? ".",
          access: "read",
          tool: "glob",
        })
        const shown = Builtin.display(services.directory, resolved.real)
        if (resolved.kind === "missing") {
          return yield* new Tool.Failure({ message: `Directory not found: ${shown}. Give an existing directory, or leave path out to search the project.` })
        }
        if (resolved.kind !== "directory") {
          return yield* new Tool.Failure({
            message: `${shown} is a ${resolved.kind === "file" ? "file" : "special file"}, not a directory. glob searches a directory: give its parent, or read the file.`,
          })
        }
        const found = newest<Found>(MAX_FILES)
        let total = 0
        const outcome = yield* Ripgrep.run({
          args: [...Ripgrep.COMMON_FLAGS, "--files", "--null", "--", resolved.real],
          select: input.pattern,
          cwd: resolved.real,
          ...Ripgrep.records(0, (record) => {
            total++
            const { text, utf8 } = Ripgrep.decode(record)
            found.offer({ path: text, utf8, modified: modifiedTime(utf8 ? text : Buffer.from(record)) })
          }),
        })
        const { problems, selectError } = outcome
        if (selectError !== undefined) {
          return yield* new Tool.Failure({
            message:
              `Invalid glob ${JSON.stringify(input.pattern)}: ${selectError}.\n` +
              "Glob syntax: * (any characters but /), ** (any directories), ? (one character), [abc], {a,b}.",
          })
        }
        if (outcome.code === 2 && total === 0 && !Ripgrep.onlyPathProblems(problems)) {
          return yield* new Tool.Failure({ message: `ripgrep could not search ${shown}:\n${problems.join("\n")}` })
        }
        const files = found.kept.map((file) => Builtin.display(services.directory, file.path))
        const notUtf8 = found.kept.filter((file) => !file.utf8).map((file) => Builtin.display(services.directory, file.path))
        const output: Output = {
          pattern: input.pattern,
          path: shown,
          files,
          total,
          notShown: total - files.length,
          ...(notUtf8.length === 0 ? {} : { notUtf8 }),
          ...(problems.length === 0 ? {} : { problems }),
        }
        return output
      }),
    toModelOutput: render,
  })
