export * as List from "./list"

// The list built-in: a directory's tree as ripgrep's file walk sees it (.gitignore honoured, hidden files
// included, dependency, build and cache directories left out), shown breadth first up to MAX_ENTRIES entries
// with an exact count of the rest. Directories appear through the files under them, so empty ones do not.

import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { Ripgrep } from "./ripgrep"
import { SearchTool } from "./search-tool"

/** Entries (files and directories) shown; the rest are counted. */
export const MAX_ENTRIES = 100

export const Input = Schema.Struct({
  path: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "The directory to list, relative to the Location (the project directory the tools work in) or absolute " +
        "(default: the Location)",
    }),
  ),
  ignore: Schema.optionalKey(
    Schema.Array(Schema.String.check(Schema.isMaxLength(SearchTool.MAX_IGNORE_CHARS, { expected: `at most ${SearchTool.MAX_IGNORE_CHARS} characters` }))).check(Schema.isMaxLength(SearchTool.MAX_IGNORES, { expected: `at most ${SearchTool.MAX_IGNORES} globs` })).annotate({
      description: 'More globs to leave out, relative to the listed directory, e.g. ["*.log", "fixtures/"]',
    }),
  ),
})

const Entry = Schema.Struct({
  path: Schema.String.annotate({ description: "Relative to the listed directory; directories end with /" }),
  notShown: Schema.optionalKey(Schema.Int.annotate({ description: "Entries under this directory left out" })),
})

export const Output = Schema.Struct({
  path: Schema.String.annotate({ description: "The directory listed" }),
  entries: Schema.Array(Entry).annotate({ description: "The entries shown, in tree order (directories first)" }),
  total: Schema.Int.annotate({ description: "Files and directories under the listed directory, in all" }),
  notShown: Schema.Int.annotate({ description: "Entries left out of `entries`" }),
  notUtf8: Schema.optionalKey(Schema.Int.annotate({ description: "Names that are not UTF-8, shown with U+FFFD" })),
  hidden: Schema.optionalKey(
    Schema.Int.annotate({ description: "Files left out, not counted in `total`, because the user's rules deny reading them or they are the user's credential stores" }),
  ),
  problems: Schema.optionalKey(Schema.Array(Schema.String)),
})
export type Output = typeof Output.Type

interface Node {
  readonly directories: Map<string, Node>
  readonly files: Array<string>
  /** Files and directories under this one. */
  size: number
}

const node = (): Node => ({ directories: new Map(), files: [], size: 0 })

type Child = { readonly name: string; readonly child: Node | undefined }

/** Each directory's children as `children` ordered them, ordered once per listing (a folder may hold 500,000). */
const ordered = new WeakMap<Node, ReadonlyArray<Child>>()

/**
 * A directory's children in display order: directories first, then files, each by name: in the default order, by
 * UTF-16 code units as `<` compares them, which is native (a comparator called per comparison took 1.2 s a sort
 * for 500,000 files).
 */
const children = (directory: Node): ReadonlyArray<Child> => {
  const known = ordered.get(directory)
  if (known !== undefined) return known
  const sorted = [
    ...[...directory.directories.keys()].sort().map((name) => ({ name, child: directory.directories.get(name) })),
    ...[...directory.files].sort().map((name) => ({ name, child: undefined })),
  ]
  ordered.set(directory, sorted)
  return sorted
}

/** The entries shown: breadth first (so the top levels come first), then laid out as a tree. */
const select = (root: Node): Array<typeof Entry.Type> => {
  const chosen = new Set<Node | string>()
  const queue: Array<{ readonly directory: Node; readonly prefix: string }> = [{ directory: root, prefix: "" }]
  let count = 0
  for (let head = 0; head < queue.length && count < MAX_ENTRIES; head++) {
    const { directory, prefix } = queue[head]!
    for (const { name, child } of children(directory)) {
      if (count === MAX_ENTRIES) break
      count++
      if (child === undefined) chosen.add(`${prefix}${name}`)
      else {
        chosen.add(child)
        queue.push({ directory: child, prefix: `${prefix}${name}/` })
      }
    }
  }
  const entries: Array<typeof Entry.Type> = []
  const walk = (directory: Node, prefix: string) => {
    for (const { name, child } of children(directory)) {
      if (child === undefined) {
        if (chosen.has(`${prefix}${name}`)) entries.push({ path: `${prefix}${name}` })
        continue
      }
      if (!chosen.has(child)) continue
      const left = children(child).reduce(
        (sum, next) =>
          next.child === undefined
            ? sum + (chosen.has(`${prefix}${name}/${next.name}`) ? 0 : 1)
            : sum + (chosen.has(next.child) ? 0 : 1 + next.child.size),
        0,
      )
      entries.push({ path: `${prefix}${name}/`, ...(left > 0 ? { notShown: left } : {}) })
      walk(child, `${prefix}${name}/`)
    }
  }
  walk(root, "")
  return entries
}

const render = (output: Output): string => {
  const header = output.path.endsWith("/") ? output.path : `${output.path}/`
  const hidden = output.hidden === undefined ? [] : ["", Builtin.hiddenNote(output.hidden, "file")]
  if (output.total === 0) {
    return [`${header} (no files)`, ...hidden, ...SearchTool.problemLines(output.problems, "listing")].join("\n")
  }
  const lines = [header]
  for (const entry of output.entries) {
    const segments = entry.path.split("/").filter((segment) => segment !== "")
    const name = entry.path.endsWith("/") ? `${segments[segments.length - 1]}/` : segments[segments.length - 1]!
    const note = entry.notShown === undefined ? "" : `  (${entry.notShown} more not shown)`
    lines.push(`${"  ".repeat(segments.length)}${Builtin.nameLine(name)}${note}`)
  }
  if (output.notShown > 0) {
    lines.push(
      "",
      `(${output.entries.length} of ${output.total} entries shown; ${output.notShown} not shown. List a ` +
        "subdirectory with path to see more, or find files by name with glob.)",
    )
  }
  if (output.notUtf8 !== undefined) lines.push("", `(${output.notUtf8} ${output.notUtf8 === 1 ? "name is" : "names are"} not UTF-8; shown with U+FFFD.)`)
  return [...lines, ...hidden, ...SearchTool.problemLines(output.problems, "listing")].join("\n")
}

const makeTool = (services: Builtin.Services) =>
  Builtin.tool({
    description:
      "Show the tree of a directory (default: the project): directories first, then files, breadth first up to " +
      `${MAX_ENTRIES} entries with a count of the rest. Honours .gitignore, includes hidden files, and leaves out ` +
      `${Ripgrep.DEFAULT_IGNORED_DIRECTORIES.slice(0, 8).join(", ")} and similar dependency, build and cache ` +
      "directories (give one as path to list it). Empty directories are not shown. ignore adds globs to leave out. " +
      "Use glob to find files by pattern, grep to search contents, read to open a file.",
    input: Input,
    output: Output,
    checksPermissions: true,
    annotations: SearchTool.ANNOTATIONS,
    execute: (input, context) =>
      Effect.scoped(Effect.gen(function* () {
        const { resolved, shown } = yield* Builtin.authorizeDirectory(services, context, {
          tool: "list",
          path: input.path,
          leaveOut: "list the project",
          instead: "Use read to read a file, or list its parent directory.",
        })
        const root = node()
        // rg walks from the directory as checked, held open (Pinned) and given as its working directory through
        // the descriptor, so a directory on its path swapped since cannot lead the walk elsewhere. Its records
        // then start with "./".
        const prefix = 2
        let total = 0
        let notUtf8 = 0
        let hidden = 0
        const denied = Builtin.hidden(services, context.agent, resolved.real)
        const under = resolved.real.endsWith("/") ? resolved.real : `${resolved.real}/`
        const held = yield* SearchTool.hold(resolved.real, shown, "listed")
        const outcome = yield* SearchTool.search(services, context, {
          args: [
            ...Ripgrep.COMMON_FLAGS,
            "--files",
            "--null",
            ...Ripgrep.DEFAULT_IGNORED_DIRECTORIES.map((name) => `--glob=!${name}`),
            ...(input.ignore ?? []).map((pattern) => `--glob=!${pattern}`),
            "--",
            ".",
          ],
          cwd: held.at(""),
          root: held.path,
          ...Ripgrep.records(0, (record) => {
            const { text, utf8 } = Ripgrep.decode(record.subarray(prefix))
            // A file whose read a rule denies is not named (a name that is not UTF-8 is judged as shown).
            if (denied !== undefined && denied(under + text)) {
              hidden++
              return
            }
            if (!utf8) notUtf8++
            const segments = text.split("/")
            let directory = root
            const visited = [root]
            for (let index = 0; index < segments.length - 1; index++) {
              const name = segments[index]!
              let next = directory.directories.get(name)
              if (next === undefined) {
                next = node()
                directory.directories.set(name, next)
                for (const ancestor of visited) ancestor.size++
                total++
              }
              directory = next
              visited.push(next)
            }
            directory.files.push(segments[segments.length - 1]!)
            for (const ancestor of visited) ancestor.size++
            total++
          }),
        })
        const { problems } = outcome
        if (SearchTool.failed(outcome, total)) {
          return yield* new Tool.Failure({
            message: `Cannot list ${shown}: ${problems.join("\n")}\nCheck the ignore globs (syntax: * ** ? [abc] {a,b}).`,
          })
        }
        const entries = select(root)
        const output: Output = {
          path: shown,
          entries,
          total,
          notShown: total - entries.length,
          ...(notUtf8 === 0 ? {} : { notUtf8 }),
          ...(hidden === 0 ? {} : { hidden }),
          ...(problems.length === 0 ? {} : { problems }),
        }
        return output
      })),
    toModelOutput: ({ output }) => render(output),
  })

/** The list built-in, with the checks it makes recorded for explaining a call. */
export const make = (services: Builtin.Services) => SearchTool.planned(services, "list", makeTool(services))
