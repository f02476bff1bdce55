export * as WorkTree from "./work-tree"

// The files git writes in a work tree (`git checkout .`, `git reset --hard`, `git stash`, a merge): taken from the
// repository, never named on the line, so they may be core's own configuration (core.json, tools/) though no word
// says so. Where the OS sandbox keeps that configuration read-only, git cannot change it; where it is off, the bash
// checks alone hold, and a git command that may write anywhere in the work tree is asked of a person, as a change
// of core's configuration is. Pure: it reads words.

import { basename } from "node:path"
import type { CommandLine } from "./command-line"
import { Runs } from "./runs"

type Word = CommandLine.Word

/** What a person is told such a command may change. */
export const WHAT =
  "files git takes from the repository into the work tree, which may be core's own configuration (name the paths " +
  "after -- to have them checked as themselves)"

/** What a git command writes in the work tree. */
export type Writes =
  /** Files the line does not name: anywhere in the work tree, core's configuration among them. */
  | { readonly whole: string }
  /** Only the paths these words name (`git checkout -- src/a.ts`, `git rm x`): each checked as a change of itself. */
  | { readonly paths: ReadonlyArray<Word> }

/** One git command of a line that writes in the work tree. */
export interface Found {
  /** The resource of the command (or statement) it belongs to. */
  readonly owner: string
  readonly writes: Writes
}

/** git's own commands that never write in the work tree (those that may write a file they name are read as such). */
const KEEPS = new Set([
  "add", "annotate", "archive", "blame", "branch", "bugreport", "bundle", "cat-file", "check-attr", "check-ignore",
  "check-mailmap", "check-ref-format", "cherry", "column", "commit", "commit-graph", "commit-tree", "config",
  "count-objects", "credential", "describe", "diagnose", "diff", "diff-files", "diff-index", "diff-tree", "difftool",
  "fetch", "fetch-pack", "fmt-merge-msg", "for-each-ref", "for-each-repo", "format-patch", "fsck", "gc",
  "get-tar-commit-id", "grep", "hash-object", "help", "index-pack", "init", "interpret-trailers", "log", "ls-files",
  "ls-remote", "ls-tree", "mailinfo", "mailsplit", "maintenance", "merge-base", "merge-tree", "mktag", "mktree",
  "multi-pack-index", "name-rev", "notes", "pack-objects", "pack-redundant", "pack-refs", "patch-id", "prune",
  "prune-packed", "push", "range-diff", "reflog", "remote", "repack", "replace", "request-pull", "rev-list",
  "rev-parse", "send-pack", "shortlog", "show", "show-branch", "show-index", "show-ref", "stage", "status",
  "stripspace", "symbolic-ref", "tag", "unpack-file", "unpack-objects", "update-index", "update-ref",
  "update-server-info", "var", "verify-commit", "verify-pack", "verify-tag", "version", "whatchanged", "write-tree",
])

/** git's own commands that take files from the repository into the work tree, whatever their words say. */
const REWRITES = new Set([
  "am", "bisect", "cherry-pick", "filter-branch", "lfs", "merge", "merge-index", "merge-one-file", "mergetool", "pull",
  "rebase", "rerere", "revert", "sparse-checkout",
])

/** Options of these commands that take the next word as their value (`-b NAME`, `--source TREE`). */
const VALUED: Readonly<Record<string, ReadonlySet<string>>> = {
  checkout: new Set(["-b", "-B", "--orphan", "--conflict"]),
  switch: new Set(["-c", "-C", "--create", "--force-create", "--orphan", "--conflict"]),
  restore: new Set(["-s", "--source", "--conflict"]),
  clean: new Set(["-e", "--exclude"]),
  "merge-file": new Set(["-L"]),
  worktree: new Set(["-b", "-B", "--reason"]),
  clone: new Set([
    "-b", "--branch", "-o", "--origin", "-c", "--config", "--depth", "--reference", "--reference-if-able", "--template",
    "--separate-git-dir", "-j", "--jobs", "--filter", "--server-option", "--shallow-since", "--shallow-exclude",
    "--bundle-uri", "--ref-format", "--revision",
  ]),
}

/** The words of a git command after its options: a value an option takes (`-b NAME`) left out, and all after `--`. */
const operandsOf = (subcommand: string, words: ReadonlyArray<Word>): { before: ReadonlyArray<Word>; after: ReadonlyArray<Word> | undefined } => {
  const valued = VALUED[subcommand] ?? new Set<string>()
  const before: Array<Word> = []
  for (let index = 0; index < words.length; index++) {
    const value = words[index]!.value
    if (value === "--") return { before, after: words.slice(index + 1) }
    if (value !== undefined && value.startsWith("-") && value !== "-") {
      if (valued.has(value)) index++
      continue
    }
    before.push(words[index]!)
  }
  return { before, after: undefined }
}

const has = (words: ReadonlyArray<Word>, ...options: ReadonlyArray<string>) =>
  words.some((word) => word.value !== undefined && options.some((option) => word.value === option || word.value!.startsWith(`${option}=`)))

/**
 * Whether every option before `--` is one of `allowed` (`--opt=value` by its name), written out whole: git also takes
 * a long option cut short (`--ha` for `--hard`), short ones run together (`-fa`) and `--no-…` undoing one, so a
 * form that writes nothing is known only by options that all say so.
 */
const only = (subcommand: string, words: ReadonlyArray<Word>, allowed: ReadonlyArray<string>) => {
  const valued = VALUED[subcommand] ?? new Set<string>()
  for (let index = 0; index < words.length; index++) {
    const value = words[index]!.value
    if (value === undefined) return false
    if (value === "--") return true
    if (!value.startsWith("-") || value === "-") continue
    if (!allowed.includes(value.split("=")[0]!)) return false
    if (valued.has(value)) index++
  }
  return true
}

/** Options that change nothing of what a command writes. */
const QUIET = ["-q", "--quiet"]

/** Whether a pathspec is one git reads as a pattern or with magic (`*.json`, `:(glob)x`, `:/`): what it matches is not its text. */
const patterned = (word: Word): boolean => word.value === undefined || word.glob || /[*?[\\]/.test(word.value) || word.value.startsWith(":")

/** What one git subcommand, given `rest` (the words after it), writes in the work tree; undefined when nothing. */
const subcommandWrites = (subcommand: string, rest: ReadonlyArray<Word>): Writes | undefined => {
  const whole = (why: string): Writes => ({ whole: why })
  const paths = (words: ReadonlyArray<Word>, why: string): Writes =>
    words.some(patterned) ? whole(`${why}, by a pattern git matches itself`) : { paths: words }
  if (has(rest, "--pathspec-from-file")) return whole(`git ${subcommand} is given its paths in a file`)
  const { before, after } = operandsOf(subcommand, rest)
  switch (subcommand) {
    case "checkout": {
      // `git checkout -b NAME` makes a branch where HEAD is, and changes no file.
      if (has(rest, "-b", "-B", "--orphan") && before.length === 0 && after === undefined) {
        if (only(subcommand, rest, ["-b", "-B", "--orphan", "-t", "--track", "--no-track", ...QUIET])) return undefined
      }
      return after !== undefined && after.length > 0
        ? paths(after, "git checkout takes these paths from the repository")
        : whole("git checkout may switch the work tree to another commit, or take the paths it names from one")
    }
    case "switch":
      return has(rest, "-c", "-C", "--create", "--force-create") &&
        before.length === 0 &&
        only(subcommand, rest, ["-c", "-C", "--create", "--force-create", "-t", "--track", "--no-track", ...QUIET])
        ? undefined
        : whole("git switch puts another commit's files in the work tree")
    case "restore": {
      if (has(rest, "-S", "--staged") && only(subcommand, rest, ["-S", "--staged", "-s", "--source", ...QUIET])) return undefined
      const named = [...before, ...(after ?? [])]
      return named.length === 0 ? undefined : paths(named, "git restore takes these paths from the repository")
    }
    case "reset":
      return only(subcommand, rest, ["--soft", "--mixed", "-N", "--intent-to-add", "--no-refresh", "--refresh", ...QUIET])
        ? undefined
        : whole("git reset --hard puts a commit's files in the work tree")
    case "stash": {
      const verb = before[0]?.value
      if (verb !== undefined && ["list", "show", "drop", "clear", "create", "store"].includes(verb)) return undefined
      if ((verb === undefined || verb === "push") && after !== undefined && after.length > 0) {
        return paths(after, "git stash puts back these paths as the last commit has them")
      }
      return whole("git stash puts files back as a commit, or a stash, has them")
    }
    case "clean":
      if (has(rest, "-n", "--dry-run") && only(subcommand, rest, ["-n", "--dry-run", "-d", "-x", "-X", "-e", "--exclude", ...QUIET])) return undefined
      return before.length + (after?.length ?? 0) > 0
        ? paths([...before, ...(after ?? [])], "git clean removes the files not in the repository under these paths")
        : whole("git clean removes every file not in the repository, core's own configuration among them")
    case "rm":
      if (has(rest, "--cached") && only(subcommand, rest, ["--cached", "-r", "--ignore-unmatch", "-n", "--dry-run", "--sparse", ...QUIET])) return undefined
      return paths([...before, ...(after ?? [])], "git rm removes these paths")
    case "mv":
    case "merge-file":
      return paths([...before, ...(after ?? [])], `git ${subcommand} changes these paths`)
    case "checkout-index":
      return only(subcommand, rest, ["-f", "--force", "-u", "--index", "-n", "--no-create", ...QUIET])
        ? paths([...before, ...(after ?? [])], "git checkout-index puts these paths in the work tree")
        : whole("git checkout-index puts files of the index in the work tree")
    case "read-tree":
      return only(subcommand, rest, ["-m", "--reset", "-i", "-n", "--dry-run", "-v", "--trivial", "--aggressive", "--prefix", "--empty", "--no-sparse-checkout", ...QUIET])
        ? undefined
        : whole("git read-tree -u puts a tree's files in the work tree")
    case "apply":
      return has(rest, "--check", "--stat", "--numstat", "--summary", "--cached") &&
        only(subcommand, rest, ["--check", "--stat", "--numstat", "--summary", "--cached", "-v", "--verbose", "-z", ...QUIET])
        ? undefined
        : whole("git apply writes the files its patch names")
    case "worktree": {
      const [verb, ...operands] = before
      return verb?.value !== undefined && ["add", "move", "remove"].includes(verb.value)
        ? paths(operands, `git worktree ${verb.value} makes or removes these paths`)
        : undefined
    }
    case "clone":
      // Without a directory it makes one named after the repository, which the line does not spell.
      return before.length >= 2
        ? paths(before.slice(-1), "git clone makes this directory")
        : whole("git clone makes a directory named after the repository it clones")
    case "submodule":
      return [undefined, "status", "summary"].includes(before[0]?.value) ? undefined : whole("git submodule puts the submodules' files in the work tree")
    default:
      if (KEEPS.has(subcommand)) return undefined
      if (REWRITES.has(subcommand)) return whole(`git ${subcommand} takes files from the repository into the work tree`)
      // An alias of the user's git config, or a program of its own on PATH: what it runs is not on the line.
      return whole(`git ${subcommand} is none of git's own commands that core knows (an alias, or a program of its own)`)
  }
}

/** git's options before its subcommand, with whether each takes the next word as its value. */
const GLOBALS_VALUED = new Set(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path", "--attr-source"])

/** What a git command (its words, `git` first) writes in the work tree; undefined when nothing. */
export const ofGit = (words: ReadonlyArray<Word>): Writes | undefined => {
  let index = 1
  let moved = false
  for (; index < words.length; index++) {
    const value = words[index]!.value
    if (value === undefined) return { whole: `git is given ${words[index]!.text}, known only when it runs` }
    if (!value.startsWith("-")) break
    const option = value.split("=")[0]!
    // Paths are then read from another directory, or in another work tree, than the line's.
    if (["-C", "--git-dir", "--work-tree"].includes(option)) moved = true
    if (GLOBALS_VALUED.has(option) && !value.includes("=")) index++
  }
  const subcommand = words[index]?.value
  if (subcommand === undefined) {
    return index < words.length ? { whole: `git's subcommand ${words[index]!.text} is known only when it runs` } : undefined
  }
  const writes = subcommandWrites(subcommand, words.slice(index + 1))
  return writes !== undefined && "paths" in writes && moved
    ? { whole: `git ${subcommand} reads its paths in another directory than the line's` }
    : writes
}

/**
 * The git commands of a line that write in the work tree, also as a wrapper runs them (`timeout 5 git checkout .`,
 * `xargs git checkout`) or by the name of one of git's own programs (`git-checkout`).
 */
export const of = (parsed: CommandLine.Parsed): ReadonlyArray<Found> => {
  const found: Array<Found> = []
  const visit = (words: ReadonlyArray<Word>, owner: string): void => {
    const spelled = Runs.gitProgram(words) ?? words
    if (basename(spelled[0]?.value ?? "") === "git") {
      const writes = ofGit(spelled)
      if (writes !== undefined) found.push({ owner, writes })
    }
    for (const inner of Runs.of(words).commands) visit(inner, owner)
  }
  for (const command of parsed.commands) if (command.kind === "command") visit(command.words, command.within ?? command.resource)
  return found
}
