export * as LineFiles from "./line-files"

// The files a bash line reads and the files it changes, found from its text (../shell/accessed) and placed where they
// really lead, so bash meets the `read` and `edit` rules on each as the file tools do: glob words expanded as bash
// would now, relative paths also from each directory a literal `cd` moves to, a word of a program core has no
// table for that names an existing file, and the files under a directory read whole that a `read` rule denies.
// It decides nothing and asks nothing: bash turns these into checks.

import { statSync } from "node:fs"
import { homedir } from "node:os"
import { basename, dirname, join, relative, resolve, sep } from "node:path"
import * as Effect from "effect/Effect"
import { Boundary } from "../permission/boundary"
import { Protected } from "../permission/protected"
import { Accessed } from "../shell/accessed"
import { CommandLine } from "../shell/command-line"
import { CommandChecks } from "../shell/command-checks"
import { Runs } from "../shell/runs"
import { Words } from "../shell/words"

/** A path as `read` and `edit` rules name it, as the file tools check it: relative inside the Location, absolute outside. */
const ruleResource = (directory: string, resolved: { readonly real: string; readonly inside: boolean }): string =>
  resolved.inside ? relative(directory, resolved.real).split(sep).join("/") || "." : resolved.real

/** Whether `words` make a symbolic link (`ln -s`, `cp -s`, their long forms). */
const linking = (words: ReadonlyArray<CommandLine.Word>): boolean => {
  const name = basename(words[0]?.value ?? "")
  return (
    (name === "ln" || name === "cp") &&
    words.slice(1).some((word) => word.value !== undefined && (/^-[A-Za-z]*s[A-Za-z]*$/.test(word.value) || /^--sy/.test(word.value)))
  )
}

/** Whether any command of the line (or one a wrapper of it runs) makes a symbolic link: where its paths lead changes as it runs. */
export const makesLinks = (parsed: CommandLine.Parsed): boolean => {
  const visit = (words: ReadonlyArray<CommandLine.Word>): boolean => linking(words) || Runs.of(words).commands.some(visit)
  return parsed.commands.some((command) => command.kind === "command" && visit(command.words))
}

/** The directories a line's `cd`s and `pushd`s name literally, each from the one before: where its relative paths may lead. */
const cdTargets = (parsed: CommandLine.Parsed, workdir: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  let at = workdir
  for (const command of parsed.commands) {
    if (command.kind !== "command") continue
    const target = CommandChecks.directoryChange(command.words)
    const place = target === undefined || target === null ? undefined : CommandChecks.locate(target, at)
    if (place === undefined) continue
    at = place
    found.push(place)
  }
  return found
}

/**
 * The symbolic links the line makes (`ln -s TARGET LINK`, `ln -st DIR TARGET…`, `cp -s`), also as a wrapper runs
 * them (`env ln -s …`), by the absolute path of each link: a path through one is not there yet when the line is
 * checked (`ln -s keep k && echo x > k/a`), so it is checked where the link will lead as well.
 */
const madeLinks = (parsed: CommandLine.Parsed, workdir: string): ReadonlyMap<string, string> => {
  const links = new Map<string, string>()
  const visit = (words: ReadonlyArray<CommandLine.Word>): void => {
    if (linking(words)) made(words.slice(1))
    for (const inner of Runs.of(words).commands) visit(inner)
  }
  const made = (args: ReadonlyArray<CommandLine.Word>): void => {
    // The directory given with -t DIR, -tDIR or --target-directory=DIR, and the operands apart from it.
    let directory: string | undefined
    const operands: Array<CommandLine.Word> = []
    const namesDirectory = (value: string | undefined) => value !== undefined && /^(-[A-Za-z]*t|--ta[a-z-]*)$/.test(value)
    for (const [index, word] of args.entries()) {
      const value = word.value
      if (value === undefined) continue
      const attached = /^-[A-Za-z]*t(.+)$/.exec(value)?.[1] ?? /^--ta[a-z-]*=(.+)$/.exec(value)?.[1]
      if (attached !== undefined) directory = attached
      else if (namesDirectory(value)) directory = args[index + 1]?.value
      else if (!value.startsWith("-") && !namesDirectory(args[index - 1]?.value)) operands.push(word)
    }
    const place = (link: string, target: string) => {
      const at = CommandChecks.locate({ text: link, value: link, glob: false, tilde: false }, workdir)
      if (at !== undefined) links.set(at, resolve(dirname(at), target.startsWith("~/") ? homedir() + target.slice(1) : target))
    }
    if (directory !== undefined) {
      for (const target of operands) place(join(directory, basename(target.value!)), target.value!)
      return
    }
    const link = operands.at(-1)
    if (operands.length >= 2 && link?.value !== undefined) place(link.value, operands[0]!.value!)
  }
  for (const command of parsed.commands) if (command.kind === "command") visit(command.words)
  return links
}

/** Where `path` leads through a link the line makes, if it goes through one. */
const throughLinks = (path: string, links: ReadonlyMap<string, string>): ReadonlyArray<string> =>
  [...links].flatMap(([link, target]) => (path === link ? [target] : path.startsWith(`${link}/`) ? [target + path.slice(link.length)] : []))

/** Whether `path` is a file now (following symlinks), as a program given its name would open it. */
const isFile = (path: string): boolean => {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/** Past this many matches a pattern's files are not all checked one by one: the pattern itself is, too. */
const MAX_MATCHES = 10_000

/**
 * The files a glob word matches now, as bash would expand it from `from` (no dotfiles, `**` as `*`); bounded by
 * MAX_MATCHES. What it matches when the line runs may differ (a file made meanwhile by the line itself).
 */
const expand = (word: Words.Word, from: string): ReadonlyArray<string> => {
  const value = word.value!
  const full = resolve(from, word.tilde ? homedir() + value.slice(1) : value)
  const at = full.search(Words.GLOB)
  const base = full.slice(0, full.lastIndexOf("/", at)) || "/"
  const pattern = full.slice(base === "/" ? 1 : base.length + 1).replaceAll("**", "*")
  const found: Array<string> = []
  try {
    for (const match of new Bun.Glob(pattern).scanSync({ cwd: base, dot: false, onlyFiles: false, followSymlinks: false })) {
      found.push(resolve(base, match))
      if (found.length >= MAX_MATCHES) break
    }
  } catch {
    // A directory that cannot be listed matches nothing bash could expand either.
  }
  return found
}

/** Past this many entries a directory a command reads whole is not searched further for files a rule denies. */
const MAX_WALKED = 20_000

/**
 * The files under a directory a command reads whole (`grep -r x dir`, `cp -r dir out`) that a rule denies, found by
 * walking it (no symlinks followed, at most MAX_WALKED entries): each is then checked as a read (or an edit). With
 * `into`: where a copy or move of the directory puts each of them (`cp -a stage/. keep/`), those `denied` denies.
 * Nothing when `root` is no directory.
 */
const deniedUnder = (root: string, denied: (real: string) => boolean, into = root): ReadonlyArray<string> => {
  const found: Array<string> = []
  let walked = 0
  try {
    for (const match of new Bun.Glob("**").scanSync({ cwd: root, dot: true, onlyFiles: true, followSymlinks: false })) {
      const path = resolve(into, match)
      if (denied(path)) found.push(path)
      if (++walked >= MAX_WALKED) break
    }
  } catch {
    // What cannot be listed cannot be read, copied or moved by the command either.
  }
  return found
}

export interface Files {
  /** What the line reads, as the `read` rules name it (relative inside the Location, absolute outside). */
  readonly reads: ReadonlySet<string>
  /** What the line changes, by absolute path: each is checked as an edit where it really leads. */
  readonly written: ReadonlySet<string>
  /**
   * Whether it changes a path that leads into a process's own view of /proc, which core cannot look up for the
   * command: through a link the line makes (`ln -s /dev d; echo x 3<core.json > d/fd/3` writes core.json).
   */
  readonly viewed: boolean
}

/** The files `parsed` (run in `workdir` of the Location `directory`) reads and changes. */
export const of = Effect.fnUntraced(function* (input: {
  readonly directory: string
  readonly workdir: string
  readonly parsed: CommandLine.Parsed
  /** Whether the agent's `read` rules deny a file by its real path; absent when none denies anything. */
  readonly readDenied?: (real: string) => boolean
  /** Whether its `edit` rules deny a file by its real path; absent when none denies anything. */
  readonly editDenied?: (real: string) => boolean
}) {
  const { directory, workdir, parsed, readDenied, editDenied } = input
  const reads = new Set<string>()
  const written = new Set<string>()
  let viewed = false
  // A relative path after a `cd` is checked from each directory the line moves to as well.
  const places = [workdir, ...cdTargets(parsed, workdir)]
  const accessedPaths = Accessed.of(parsed)
  const links = madeLinks(parsed, workdir)
  for (const accessed of accessedPaths.paths) {
    const anchored = Protected.anchored(accessed.word.value)
    for (const from of anchored ? [workdir] : places) {
      const absolute = CommandChecks.locate(accessed.word, from)
      if (absolute === undefined) continue
      const matches = accessed.word.glob ? expand(accessed.word, from) : [absolute]
      for (const match of links.size === 0 ? matches : matches.flatMap((each) => [each, ...throughLinks(each, links)])) {
        const resolved = yield* Effect.result(Boundary.resolve({ location: directory, path: match }))
        if (resolved._tag === "Failure") continue
        if (accessed.reads) reads.add(ruleResource(directory, resolved.success))
        if (accessed.reads && readDenied !== undefined && resolved.success.kind === "directory") {
          for (const file of deniedUnder(resolved.success.real, readDenied)) {
            reads.add(ruleResource(directory, { real: file, inside: Boundary.isWithin(directory, file) }))
          }
        }
        if (accessed.writes) {
          written.add(match)
          viewed ||= resolved.success.perProcess
          const sources = (accessed.sources ?? []).flatMap((source) =>
            source.value === undefined ? [] : source.glob ? expand(source, from) : [source.value],
          )
          if (resolved.success.kind === "directory") {
            // A copy into a directory changes the name it makes there (`cp x keep` writes keep/x), and a directory
            // copied or moved there, each file it holds: those the `edit` rules deny are changed too (`stage/.`
            // copies what stage holds into the directory itself).
            for (const name of sources) {
              written.add(join(match, basename(name)))
              if (editDenied === undefined) continue
              const into = basename(name) === "." ? [match] : name.endsWith("/") ? [match, join(match, basename(name))] : [join(match, basename(name))]
              for (const target of into) for (const file of deniedUnder(resolve(from, name), editDenied, target)) written.add(file)
            }
            // A whole directory changed (`rm -r keep`, `mv keep elsewhere`): each file under it the `edit` rules
            // deny is changed too.
            if (accessed.deep === true && editDenied !== undefined) {
              for (const file of deniedUnder(resolved.success.real, editDenied)) written.add(file)
            }
          } else if (editDenied !== undefined && sources.length === 1) {
            // A directory copied or moved to a new name (`mv stage keep`) is that name: its files land under it.
            for (const file of deniedUnder(resolve(from, sources[0]!), editDenied, match)) written.add(file)
          }
        }
      }
      // A pattern matching nothing now (or too much to list) is checked as written too, so a rule on its form
      // (`*.env`) still meets it.
      if (accessed.reads && accessed.word.glob && (matches.length === 0 || matches.length >= MAX_MATCHES)) {
        const pattern = resolve(from, accessed.word.value!)
        reads.add(ruleResource(directory, { real: pattern, inside: Boundary.isWithin(directory, pattern) }))
      }
    }
  }
  // A program core has no table for reads what its words name: one naming an existing file is a read of it.
  for (const value of new Set(accessedPaths.named)) {
    for (const from of value.startsWith("/") ? [workdir] : places) {
      const absolute = resolve(from, value.startsWith("~/") ? homedir() + value.slice(1) : value)
      if (!isFile(absolute)) continue
      const resolved = yield* Effect.result(Boundary.resolve({ location: directory, path: absolute }))
      if (resolved._tag === "Success") reads.add(ruleResource(directory, resolved.success))
    }
  }
  return { reads, written, viewed } satisfies Files
})
