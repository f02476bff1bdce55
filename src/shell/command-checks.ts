export * as CommandChecks from "./command-checks"

// What a read command line (./command) asks of permissions: a check per simple command with the pattern an
// "always" saves, opaque parts asked every time, and the paths the line reads, changes or names (file commands'
// operands and redirections), resolved against the working directory. It decides nothing: ../builtin/bash.ts asks.

import { homedir } from "node:os"
import { realpathSync } from "node:fs"
import { basename, dirname, join, resolve } from "node:path"
import { Protected } from "../permission/protected"
import { Arity } from "./arity"
import { Awk } from "./awk"
import { CommandLine } from "./command-line"
import { Flags } from "./flags"
import { Operands } from "./operands"
import { Planted } from "./planted"
import { Runs } from "./runs"
import { Sed } from "./sed"
import { Words } from "./words"

type Word = CommandLine.Word
type Parsed = CommandLine.Parsed
type Opaque = CommandLine.Opaque
const { UNPARSED, suffixOf, textOf } = CommandLine

/** Whether the command `path` belongs to may change it: it writes it, or is not known to only read what it names. */
export const changes = (path: Path): boolean =>
  path.writes || path.access === "write" || path.access === "both" || !path.readsOnly

/** Paths that are not places in the file system, however they are written. */
const DEVICES = new Set([
  "/dev/null",
  "/dev/zero",
  "/dev/random",
  "/dev/urandom",
  "/dev/stdin",
  "/dev/stdout",
  "/dev/stderr",
  "/dev/tty",
])

/** One resource to check under the `bash` action, and what an "always" reply saves for it. */
export interface Check {
  readonly resource: string
  /** Undefined when nothing can be saved without approving more than was asked (the text holds `*` or `?`). */
  readonly save: string | undefined
  /** Set when what it runs cannot be known from the text: then it is asked even where a rule allows it. */
  readonly opaque?: string
  /**
   * Set when all that is opaque of it is paths known only when it runs that it only reads (`xargs wc -l`, `cat $F`):
   * it runs what its text says, and changes none of them.
   */
  readonly reads?: true
  /**
   * The same command with its flags spelled other ways (`rm -rf x` for `rm -fr x`): a rule denying any of them
   * denies the command, whichever spelling the rule was written in.
   */
  readonly variants?: ReadonlyArray<string>
  /**
   * Set when the command plants code that programs the user runs outside any sandbox would run (`git config
   * core.hooksPath …`): what it changes, for the person who must approve it each time, like core's configuration.
   */
  readonly protected?: string
}

/** A path the line's file commands or redirections touch. */
export interface Path {
  readonly word: Word
  /** Whether it is written by a redirection (or `find -fprint`), which needs the `edit` action too. */
  readonly writes: boolean
  /** The resource of the command (or statement) it belongs to. */
  readonly owner: string
  /**
   * Whether that command is known to only read the paths it names (`cat`, `sort` without `-o`: Protected.readsOnly,
   * on its words as the shell will give them); for a statement's redirection, whether every command it applies to
   * is; false for code a string holds.
   */
  readonly readsOnly: boolean
  /** Why where it leads cannot be known before the line runs; undefined when it can. */
  readonly unknown: string | undefined
  /**
   * What its command does with it where the command's table says (a copy's source is read, its target written);
   * undefined for a program core has no table for, which may do anything with it.
   */
  readonly access?: Operands.Access
}


/** The text itself as a pattern, unless a wildcard in it would approve more than the text. */
const exact = (text: string): string | undefined => (/[*?]/.test(text) ? undefined : text)

/** The pattern an "always" saves for a command: its prefix and ` *`, or the exact command (with `suffix`). */
const saveFor = (assignments: ReadonlyArray<string>, words: ReadonlyArray<Word>, suffix = ""): string | undefined => {
  const text = textOf(assignments, words) + suffix
  const name = words[0]!.value!
  if (Arity.INTERPRETERS.has(basename(name))) return exact(text)
  const found = Arity.wrapperOf(words, name)
  if (found !== undefined) {
    const indexes = Arity.wrappedIndexes(words, found.wrapper, found.length)
    // Where an unknown option leaves two readings, neither prefix says what was approved.
    if (indexes.length > 1) return exact(text)
    const index = indexes[0]
    const known = index !== undefined && words[index]!.value !== undefined && words[index]!.value !== ""
    const inner = known ? saveFor([], words.slice(index)) : undefined
    if (inner === undefined || !inner.endsWith(" *")) return exact(text)
    const outer = [...assignments, name, ...words.slice(1, index).map((word) => word.text)].join(" ")
    return /[*?]/.test(outer) ? exact(text) : `${outer} ${inner}`
  }
  const length = Arity.prefixLength(words.map((word) => word.value))
  if (length === undefined) return exact(text)
  const prefix = [...assignments, ...words.slice(0, length).map((word) => word.value!)].join(" ")
  return /[*?]/.test(assignments.join(" ")) ? exact(text) : `${prefix} *`
}

/** git's options before its subcommand, with whether each takes the next word as its value (`-C DIR`). */
const GIT_GLOBALS: Readonly<Record<string, boolean>> = {
  "-C": true,
  "-c": true,
  "--git-dir": true,
  "--work-tree": true,
  "--namespace": true,
  "--config-env": true,
  "-P": false,
  "-p": false,
  "--no-pager": false,
  "--paginate": false,
  "--bare": false,
  "--no-replace-objects": false,
  "--literal-pathspecs": false,
  "--glob-pathspecs": false,
  "--noglob-pathspecs": false,
  "--icase-pathspecs": false,
  "--no-optional-locks": false,
  "--no-lazy-fetch": false,
  "--no-advice": false,
  "--attr-source": true,
}

/**
 * The words as they run, where that differs from how they are written: quotes and escapes undone (`git "push"` is
 * `git push`), braces expanded (`git pu{s..s}h` is `git push`), and git's options before its subcommand left out
 * (`git -C . push` is a push, and so is `git -C "$PWD" push`). Undefined when another word holds an expansion (what
 * it runs is not known here) or nothing differs.
 */
const asRun = (words: ReadonlyArray<Word>): ReadonlyArray<Word> | undefined => {
  let run = words
  if (words[0]!.value === "git") {
    let index = 1
    while (index < words.length) {
      // An option's value may be an expansion (`-C "$PWD"`, `--git-dir="$HOME/.git"`): it is left out all the same.
      const word = words[index]!
      const value = word.value ?? (/^--[\w-]+=/.test(word.text) ? word.text : undefined)
      if (value === undefined) break
      const option = value.split("=")[0]!
      if (!Object.hasOwn(GIT_GLOBALS, option)) break
      index += GIT_GLOBALS[option] === true && !value.includes("=") ? 2 : 1
    }
    run = [words[0]!, ...words.slice(index)]
  }
  if (run.some((word) => word.value === undefined && word.braces === undefined)) return undefined
  // A word bash brace-expands is the words it makes (`rm -r{f,} x` runs `rm -rf -r x`).
  const plain = run.flatMap((word): ReadonlyArray<Word> =>
    word.value === undefined
      ? word.braces!.map(({ value, glob }) => ({ text: value, value, glob, tilde: value.startsWith("~") }))
      : [{ ...word, text: word.value }],
  )
  return plain.length === words.length && plain.every((word, index) => word.text === words[index]!.text) ? undefined : plain
}

/** The check of one command's text, with its other spellings. */
const checkOf = (assignments: ReadonlyArray<string>, words: ReadonlyArray<Word>, suffix: string): Check => {
  const resource = textOf(assignments, words) + suffix
  const run = asRun(words)
  const spellings = [words, ...(run === undefined ? [] : [run])].flatMap((each) => [
    ...(each === words ? [] : [textOf(assignments, each) + suffix]),
    ...Flags.variants(
      each.map((word) => word.value),
      each.map((word) => word.text),
      each[0]!.value!,
    ).map((text) => [...assignments, text].join(" ") + suffix),
  ])
  const variants = [...new Set(spellings)].filter((text) => text !== resource)
  return {
    resource,
    save: saveFor(assignments, words, suffix),
    ...(variants.length === 0 ? {} : { variants }),
  }
}

/**
 * The checks for one command: its own text (with `suffix`, its redirections); each command it runs in its own
 * right (`sudo rm x` is also `rm x`, `find . -exec rm {} ;` also `rm {}`); and a command named by a path also
 * under its base name (`/bin/rm x` is also `rm x`), so rules about a command cannot be stepped around.
 */
const checksFor = (
  assignments: ReadonlyArray<string>,
  words: ReadonlyArray<Word>,
  suffix = "",
  transparent = suffix === "" && assignments.length === 0 && Runs.transparent(words),
): Array<Check> => {
  // A shell that only runs literal code is checked as that code, whose commands the walk found in their own right.
  if (transparent) return []
  const checks: Array<Check> = [checkOf(assignments, words, suffix)]
  // `X=1 rm x` runs `rm x`: a rule about the command holds whatever its environment.
  if (assignments.length > 0) checks.push(checkOf([], words, suffix))
  const name = words[0]!.value!
  if (name.includes("/") && basename(name) !== "" && basename(name) !== name && !/\s/.test(name)) {
    checks.push(checkOf([], [{ ...words[0]!, value: basename(name) }, ...words.slice(1)], suffix))
  }
  // One of git's own programs run by its name is that subcommand: checked as `git push …` too.
  const git = Runs.gitProgram(words)
  if (git !== undefined) checks.push(...checksFor([], git, suffix, false))
  for (const inner of Runs.of(words).commands) checks.push(...checksFor([], inner))
  return checks
}

/** Commands that give a file another name it can be run by. */
const RENAMERS: ReadonlySet<string> = new Set(["ln", "link", "cp", "mv", "install", "rsync", "ditto"])

/**
 * Commands that run a program the line itself copied or linked (`cp /bin/rm zap; ./zap x`): a rule about the
 * program cannot follow it to its new name, so they are opaque. A bare name counts when the line mentions PATH.
 */
const renamed = (parsed: Parsed): ReadonlyArray<Opaque> => {
  const made = new Set<string>()
  for (const command of parsed.commands) {
    if (command.kind !== "command" || !RENAMERS.has(basename(command.words[0]!.value!))) continue
    for (const word of command.words.slice(1)) if (word.value !== undefined && !word.value.startsWith("-")) made.add(basename(word.value))
  }
  if (made.size === 0) return []
  const pathMoves = /(^|[^A-Za-z0-9_])PATH([^A-Za-z0-9_]|$)/.test(parsed.text)
  return parsed.commands.flatMap((command) => {
    const name = command.kind === "command" ? command.words[0]!.value! : ""
    if (name === "" || !(name.includes("/") || pathMoves) || !made.has(basename(name))) return []
    return [{ resource: command.within ?? command.resource, reason: `it runs ${name}, a file the line itself copied or linked` }]
  })
}

/**
 * What the `bash` action is checked on: each command's text with the prefix an "always" saves, then what cannot
 * be known from the text (opaque: asked every time, never saved): a line the grammar cannot read as a whole
 * under UNPARSED, commands whose name or code is not known, and commands touching a path that is not known. The
 * commands found in an unreadable line are checked too, so a rule denying one of them still applies.
 */
/** A piece of a word as bash reads it: a quoted string (`"a b"`, `'a b'`, `$'a b'`), `${…}`, an escaped character, a character. */
const VALUE = String.raw`(?:"(?:[^"\\]|\\[\s\S])*"|\$'(?:[^'\\]|\\[\s\S])*'|'[^']*'|\$\{[^}]*\}|\\[\s\S]|[^\s"'\\])`
/**
 * Keywords and openers bash reads before a command in a list (`then rm x`, `! rm x`, `{ rm x`, `time -p rm x`,
 * `coproc rm x`), and assignments and redirections (`x=$ rm x`, `y="a b" rm x`, `<<<$ rm x`, `> out rm x`,
 * `{fd}>/dev/null rm x`), each a word as bash reads one.
 */
const LEADING = new RegExp(
  String.raw`^(?:(?:if|then|else|elif|do|while|until|coproc|!|\{|time(?:\s+(?:-p|--))*|[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]\s]*\])?\+?=${VALUE}*|(?:\d*|\{[A-Za-z_][A-Za-z0-9_]*\})(?:<<<|<<-?|<>|>>|>\||&>>?|[<>]&?)\s*${VALUE}+)\s+)+`,
)
/** The most pieces of a line that cannot be read that are checked (piecesOf). */
const MAX_PIECES = 10_000

/**
 * The pieces of a line the grammar cannot read, split where bash may end a command (`;`, `&`, `|`, a line's end,
 * parentheses, backquotes, `$(`), each without the keywords, assignments and redirections before it, and one
 * named by a path also by its base name: checked against the rules besides the whole line (which is asked),
 * so that a rule denying a command written plainly in it still denies it. A guess at what bash reads, and only ever
 * stricter.
 */
const piecesOf = (text: string): ReadonlyArray<string> => {
  const pieces = new Set<string>()
  // A line continuation is no end of a command to bash: joined first (`r\` and a line `m x` is `rm x`).
  for (const part of text.replace(/\\\n/g, "").split(/[;&|\n()`]|\$\(/)) {
    const piece = part.trim().replace(LEADING, "")
    if (piece === "") continue
    pieces.add(piece)
    const first = piece.split(/\s/, 1)[0]!
    if (first.includes("/")) pieces.add(basename(first) + piece.slice(first.length))
    if (pieces.size >= MAX_PIECES) break
  }
  return [...pieces]
}

/** The checks of the commands found in `parsed`, each with its other spellings. */
const commandsOf = (parsed: Parsed): Array<Check> => {
  const found: Array<Check> = []
  for (const command of parsed.commands) {
    if (command.kind === "test") {
      const opener = command.text.startsWith("[[") ? "[[" : "["
      found.push({ resource: command.text, save: `${opener} *` })
    } else if (command.kind === "assignment") {
      found.push({ resource: command.text, save: exact(command.text) })
    } else {
      found.push(...checksFor(command.assignments, command.words, suffixOf(command.redirects, command.feeds), command.transparent === true))
    }
  }
  return found
}

export const checks = (parsed: Parsed): ReadonlyArray<Check> => {
  const found = commandsOf(parsed)
  const opaque: Array<Opaque> = [...parsed.opaque, ...renamed(parsed)]
  /** The commands opaque for a path known only when they run that they only read, and for nothing else. */
  const reading = new Set<string>()
  const other = new Set(opaque.map((entry) => entry.resource))
  for (const path of paths(parsed)) {
    if (path.unknown === undefined) continue
    opaque.push({ resource: path.owner, reason: path.unknown })
    if (changes(path)) other.add(path.owner)
    else reading.add(path.owner)
  }
  // A change into what git runs for the user (`cp x .git/hooks/pre-commit`, `echo > .git/config`).
  for (const path of changed(parsed)) {
    const value = path.word.value
    if (value === undefined || !Planted.gitPath(value)) continue
    opaque.unshift({ resource: path.owner, reason: `it changes ${path.word.text}, which git runs or reads for the user`, protected: Planted.WHAT })
  }
  // What plants code is checked first, and once per resource.
  opaque.sort((a, b) => Number(b.protected !== undefined) - Number(a.protected !== undefined))
  const unparsed = parsed.unparsed === undefined ? undefined : `${UNPARSED} ${parsed.text.trim()}`
  if (unparsed !== undefined) opaque.unshift({ resource: unparsed, reason: parsed.unparsed! })
  const asked = new Set(opaque.map((entry) => entry.resource))
  // A command asked as opaque keeps its other spellings, so a rule denying one still denies it; a line that cannot
  // be read, its pieces.
  const variants = new Map(found.flatMap((check) => (check.variants === undefined ? [] : [[check.resource, check.variants] as const])))
  // The line asked whole: unparsed, or opaque as a whole (a substitution bash runs where the grammar read text:
  // `echo "${x:-'$(rm x)'}"`), which its pieces only can tell apart.
  const whole = unparsed ?? (opaque.some((entry) => entry.resource === parsed.text) ? parsed.text : undefined)
  if (whole !== undefined) {
    // The pieces as written, and as read on lines of their own (quotes undone, wrappers seen through: `"rm" x`,
    // `sudo rm x`), where they can be read so.
    const pieces = piecesOf(parsed.text)
    // Each read on its own: one the grammar cannot read either leaves the others read.
    const commands = pieces.flatMap((piece) => {
      const read = CommandLine.parseNow(piece)
      return read === undefined || read.unparsed !== undefined ? [] : commandsOf(read).flatMap((check) => [check.resource, ...(check.variants ?? [])])
    })
    variants.set(whole, [...new Set([...(variants.get(whole) ?? []), ...pieces, ...commands])])
  }
  const seen = new Set<string>()
  return [
    ...found.filter((check) => !asked.has(check.resource)),
    ...opaque.map((entry): Check => {
      const spelled = variants.get(entry.resource)
      return {
        resource: entry.resource,
        save: undefined,
        opaque: entry.reason,
        ...(reading.has(entry.resource) && !other.has(entry.resource) ? { reads: true as const } : {}),
        ...(entry.protected === undefined ? {} : { protected: entry.protected }),
        ...(spelled === undefined ? {} : { variants: spelled }),
      }
    }),
  ].filter((check) => !seen.has(check.resource) && seen.add(check.resource))
}

const HOME: Word = { text: "~", value: "~", glob: false, tilde: true }

/** Why where `word` leads cannot be known before the line runs, or undefined when it can. */
const unknownWhy = (word: Word, homeMoves: boolean): string | undefined => {
  // `<(ls a)` is a pipe from a command (walked like any other), not a place in the file system.
  if (/^[<>]\([\s\S]*\)$/.test(word.text)) return undefined
  if (Runs.fromInput(word)) return "the paths it is given come from its input"
  if (word.value === undefined) return `the path ${word.text} holds an expansion`
  if (!word.tilde) return undefined
  if (word.value !== "~" && !word.value.startsWith("~/")) return `the path ${word.text} names a directory known only when it runs`
  return homeMoves ? `the path ${word.text} is under HOME, which the line changes` : undefined
}

/**
 * The paths the line's file commands and redirections name, each with the resource of the command it belongs to
 * and whether it can be known before running. `cd` alone names the home directory.
 */
export const paths = (parsed: Parsed): ReadonlyArray<Path> => {
  const found: Array<Path> = []
  // A line that mentions HOME at all may change it, and with it what `~` means.
  const homeMoves = /(^|[^A-Za-z0-9_])HOME([^A-Za-z0-9_]|$)/.test(parsed.text)
  const uses = usesOf(parsed)
  const add = (word: Word, writes: boolean, owner: string, reads: boolean, access?: Operands.Access) =>
    found.push({ word, writes, owner, readsOnly: reads, unknown: unknownWhy(word, homeMoves), ...(access === undefined ? {} : { access }) })
  const visit = (words: ReadonlyArray<Word>, owner: string, reads: boolean) => {
    const name = basename(words[0]!.value!)
    const known = Operands.isFileCommand(name)
    const operands = known ? Operands.of(name, words) : Operands.guessed(name, words)
    for (const operand of operands) add(operand.word, operand.writes, owner, reads, known ? operand.access : undefined)
    if (name === "cd" && words.length === 1) add(HOME, false, owner, reads)
    for (const inner of Runs.of(words).commands) visit(inner, owner, reads)
  }
  for (const command of parsed.commands) {
    // A variable set to a place outside (`F=/etc; sort $F/passwd`) is checked like a path of that place.
    const assignments =
      command.kind === "assignment"
        ? [command.text]
        : [...command.assignments, ...(command.kind === "declaration" ? command.words.slice(1).map((word) => word.value ?? word.text) : [])]
    const reads = uses.onlyReads(command)
    for (const assignment of assignments) {
      const place = Operands.assigned(assignment)
      if (place !== undefined) add(place, false, command.within ?? command.resource, reads)
    }
    if (command.kind !== "command") continue
    const owner = command.within ?? command.resource
    const reopened = uses.reopened(command.scope)
    for (const redirect of command.redirects) add(redirect.target, redirect.writes || reopened, owner, reads)
    visit(command.words, owner, reads)
  }
  for (const statement of parsed.statements) {
    const { redirect, scope, commands, owner } = statement
    add(redirect.target, redirect.writes || commands === undefined || uses.reopened(scope), owner, uses.reads(statement))
  }
  return found
}

/**
 * Whether a command only reads what it names, by its words' values as the shell gives them (`-$'o'` is `-o`; an
 * expansion or a pattern may be any option). Code a string holds (`bash -c '…'`) counts as its shell, which may
 * do anything.
 */
const readsByWords = (command: CommandLine.Simple): boolean =>
  command.kind === "command" && command.within === undefined && wordsRead(command.words)

/**
 * Wrappers that run their command as it is and write no file themselves: what they run decides (`timeout 5 cat x`,
 * `env cat x`). Not `nohup` (it may write nohup.out), `time` (GNU time's `-o FILE`) or `exec` (its redirections stay
 * open for the rest of the line).
 */
const READ_WRAPPERS: ReadonlySet<string> = new Set(["env", "nice", "timeout", "command", "stdbuf"])

/**
 * Whether `words` only read what they name (Protected.readsOnly), through a wrapper above that sets nothing for
 * its command (no `NAME=value`, no option with a value given by `=`): a variable it set may change what runs.
 */
const wordsRead = (words: ReadonlyArray<Word>): boolean => {
  const name = words[0]?.value
  // By its name, or as the system's own (`/usr/bin/env`), as Protected.readsOnly takes a program named by a path.
  if (name !== undefined && (!name.includes("/") || Protected.SYSTEM_PROGRAM.test(name)) && READ_WRAPPERS.has(basename(name))) {
    const inner = Runs.neutral(words)
    if (inner === undefined) return false
    const own = words.slice(1, words.length - inner.length)
    return !own.some((word) => word.value === undefined || word.value.includes("=")) && wordsRead(inner)
  }
  // xargs writes nothing itself: what it runs decides, given the words its input adds (Runs.of), unless an option
  // of its own is not known or sets a variable for what it runs (`--process-slot-var=LD_PRELOAD`).
  if (name !== undefined && (!name.includes("/") || Protected.SYSTEM_PROGRAM.test(name)) && basename(name) === "xargs") {
    const index = Arity.wrappedIndexes(words, Arity.wrapperOf(words, "xargs")!.wrapper)[0]
    const own = words.slice(1, index)
    const inner = Runs.of(words).commands
    return (
      index !== undefined &&
      inner.length === 1 &&
      !own.some((word) => word.value === undefined || /^--p/.test(word.value)) &&
      wordsRead(inner[0]!)
    )
  }
  return Protected.readsOnly(words.map((word) => (word.glob ? undefined : word.value)))
}

/** PATH named other than to expand it (`PATH=…`, `export PATH`, `${PATH:=…}`; `$PATH` only reads it). */
const NAMES_PATH = /(^|[^A-Za-z0-9_$])PATH([^A-Za-z0-9_]|$)/

/** Builtins that say what a name runs, and the variables that do. */
const RENAMING = new Set(["hash", "enable", "alias"])
const RENAMING_VARIABLES = /BASH_CMDS|BASH_ALIASES|BASH_FUNC_/

/**
 * Whether the line may change what a command's name runs: it defines a shell function (`cat() { …; }; cat x`),
 * names PATH (`PATH=bin:$PATH cat x`, `printf -v P\ATH …`, in code it runs too), sets BASH_CMDS, BASH_ALIASES or
 * an exported function (BASH_FUNC_…), or runs `hash`, `enable` or `alias` however it is run (`builtin hash`).
 * Then no command in it is known to only read.
 */
const renames = (parsed: Parsed): boolean =>
  parsed.defines ||
  NAMES_PATH.test(parsed.text) ||
  RENAMING_VARIABLES.test(parsed.text) ||
  parsed.commands.some(
    (command) =>
      NAMES_PATH.test(command.text) ||
      RENAMING_VARIABLES.test(command.text) ||
      command.assignments.some((assignment) => NAMES_PATH.test(assignment) || RENAMING_VARIABLES.test(assignment)) ||
      command.words.some((word) => word.value !== undefined && (RENAMING.has(word.value) || NAMES_PATH.test(word.value) || RENAMING_VARIABLES.test(word.value))),
  )

/**
 * Paths that reopen what one of the process's descriptors is open on (`/dev/stdin`, `/dev/fd/3`,
 * `/proc/self/fd/0`): written, they write the file a redirection opened, though it opened it only to read.
 */
const DESCRIPTOR = /^\/(dev\/(std(in|out|err)|fd\/\d+)|proc\/(self|thread-self)\/fd\/\d+)\/?$/

/**
 * Whether a redirection writes through a descriptor's path. A relative path is taken as if from `/`; a pattern
 * (`/dev/f[d]/3`) may be one.
 */
const throughDescriptor = ({ writes, target }: CommandLine.Redirect): boolean =>
  writes && target.value !== undefined && (target.glob || DESCRIPTOR.test(resolve("/", target.value)))

/**
 * Whether a word may name a descriptor's path, or a place a link to one may be made from: anything in `/dev` or
 * `/proc` (`/dev/./stdin`, `/proc`, `/dev/shm/../fd/3`), as written or as its value, but the devices every
 * program is given (`/dev/null`).
 */
const namesDevices = (word: Word): boolean =>
  [word.text, word.value].some((text) => text !== undefined && /\/(dev|proc)(\/|$)|^(dev|proc)\//.test(text) && !/^\/dev\/(null|zero|u?random|full|tty)$/.test(text))

/** How a line's commands and redirections are used. */
interface Uses {
  /** Whether a command only reads what it names (Protected.readsOnly), in this line. */
  readonly onlyReads: (command: CommandLine.Simple) => boolean
  /** Whether each command a statement's redirection applies to only reads (`{ cat; wc -l; } < in`, `ls && wc -l < in`). */
  readonly reads: (statement: CommandLine.Statement) => boolean
  /**
   * Whether a file opened to read within `scope` may be written through a descriptor's path while it is open: by
   * the command itself or one inside it (`{ { echo x; } > /dev/fd/3; } 3< core.json`), by another redirection of
   * the same statement (`< core.json > /dev/stdin` truncates core.json with no command at all), or anywhere in the
   * line by a program that may write given such a path in any form (`of=/dev/stdin`, `-o/dev/fd/3`), which may
   * also make a link to one to be written later (`ln -s /dev/fd/3 x`).
   */
  readonly reopened: (scope: CommandLine.Scope) => boolean
}

/**
 * Worked out once per line, statement and command: a line holds tens of thousands of them at most, and comparing
 * each with every other took seconds. A redirection is reopened by a write through a descriptor made within its
 * scope: by its command or one inside it, or by a statement nested in it or its own; never by one enclosing it,
 * whose redirections are open before it is. Scopes nest or are apart, so a statement that starts inside one
 * (after its start) is nested in it; one starting with it is nested in it when it ends before it (`{ { echo; }
 * > /dev/fd/3; } 3< core.json`). One without commands (`{ > /dev/fd/3; }`) counts where it stands, up to the
 * scope's end, which errs towards a change only for such a statement just after one that reads.
 */
const usesOf = (parsed: Parsed): Uses => {
  const known = worked.get(parsed)
  if (known !== undefined) return known
  const uses = workOut(parsed)
  worked.set(parsed, uses)
  return uses
}

/** Each line's uses, once worked out: `paths` and `mentioned` both need them. */
const worked = new WeakMap<Parsed, Uses>()

const workOut = (parsed: Parsed): Uses => {
  const renamed = renames(parsed)
  const onlyReads = (command: CommandLine.Simple) => !renamed && readsByWords(command)
  const count = parsed.commands.length
  // Each a count of writes before an index: by commands at it, by statements starting at it, by statements
  // without commands standing there.
  const commands = new Uint32Array(count + 1)
  const starts = new Uint32Array(count + 1)
  const bare = new Uint32Array(count + 2)
  // Of the statements starting at each index, the first to end.
  const first = new Map<number, CommandLine.Scope>()
  let anywhere = false
  for (const [index, command] of parsed.commands.entries()) {
    if (command.redirects.some(throughDescriptor)) commands[index + 1] = 1
    anywhere ||= !onlyReads(command) && command.words.slice(1).some(namesDevices)
  }
  for (const { redirect, scope } of parsed.statements) {
    if (!throughDescriptor(redirect)) continue
    if (scope.to === scope.from) bare[scope.from + 1] = 1
    else {
      starts[scope.from + 1] = 1
      const known = first.get(scope.from)
      if (known === undefined || scope.to < known.to || (scope.to === known.to && scope.order < known.order)) first.set(scope.from, scope)
    }
  }
  for (let index = 1; index <= count; index++) {
    commands[index]! += commands[index - 1]!
    starts[index]! += starts[index - 1]!
  }
  for (let index = 1; index <= count + 1; index++) bare[index]! += bare[index - 1]!
  const within = (scope: CommandLine.Scope): boolean => {
    const starting = first.get(scope.from)
    return starting !== undefined && (starting.to < scope.to || (starting.to === scope.to && starting.order <= scope.order))
  }
  const statements = new Map<ReadonlyArray<CommandLine.Simple>, boolean>()
  return {
    onlyReads,
    reads: ({ commands }) => {
      // What they apply to cannot be told: they may do anything.
      if (commands === undefined) return false
      let reads = statements.get(commands)
      if (reads === undefined) statements.set(commands, (reads = commands.every(onlyReads)))
      return reads
    },
    reopened: (scope) => {
      const { from, to } = scope
      return (
        anywhere ||
        commands[to]! - commands[from]! > 0 ||
        (to > from + 1 && starts[to]! - starts[from + 1]! > 0) ||
        within(scope) ||
        bare[to + 1]! - bare[from]! > 0
      )
    },
  }
}

/** File commands that change what their operands name. */
const CHANGERS: ReadonlySet<string> = new Set([
  "rm", "rmdir", "unlink", "cp", "mv", "ln", "install", "touch", "mkdir", "tee", "truncate", "shred", "chmod", "chown",
  "chgrp", "rsync", "dd",
])

/**
 * Every word of the line that may name a file, whatever its program does with it: each argument of each command
 * (in literal code and wrapped commands too), an option's attached value (`--output=x`, `-ox`), a `key=value`'s
 * value (`of=x`), and every redirection target. `writes` is true where the line is known to change the file (a
 * redirection, an operand of `rm`, `cp`, `mv`, `tee`, `sed -i` ..., an output option's value such as `of=x` or
 * `-o x`), false where it may only read it (or core cannot tell); `unknown` says why a word's value cannot be
 * known. For checks that must see any file a line might
 * change, such as places no command may touch without a person's say, where a file table would miss a program.
 */
export const mentioned = (parsed: Parsed): ReadonlyArray<Path> => {
  const found: Array<Path> = []
  const homeMoves = /(^|[^A-Za-z0-9_])HOME([^A-Za-z0-9_]|$)/.test(parsed.text)
  const uses = usesOf(parsed)
  for (const command of parsed.commands) {
    const owner = command.within ?? command.resource
    const reads = uses.onlyReads(command)
    const add = (word: Word, writes: boolean, owner: string) => found.push({ word, writes, owner, readsOnly: reads, unknown: unknownWhy(word, homeMoves) })
    const words = command.kind === "command" || command.kind === "declaration" ? command.words.slice(1) : []
    for (const text of command.kind === "assignment" ? [command.text] : command.assignments) {
      const value = text.slice(text.indexOf("=") + 1)
      add({ text: value, value: /[$`]/.test(value) ? undefined : value.replace(/^(['"])(.*)\1$/s, "$2"), glob: false, tilde: value.startsWith("~") }, false, owner)
    }
    const name = command.kind === "command" ? basename(command.words[0]!.value!) : ""
    const changes = CHANGERS.has(name) || (name === "sed" && words.some((word) => /^(-[A-Za-z]*i|--in-place)/.test(word.value ?? "")))
    for (const [index, word] of words.entries()) {
      // A value given to an option that names an output (`-o x`, `--output x`) is written.
      const output = index > 0 && /^(-o|--output|--outfile|--out)$/.test(words[index - 1]!.value ?? "")
      add(word, changes || output, owner)
      const value = word.value
      if (value === undefined) continue
      const written = /^(of|--output|--outfile|--out|-o)=?/.test(value)
      const parts = [/^[^=]+=(.+)$/s.exec(value)?.[1], /^-[A-Za-z](.+)$/s.exec(value)?.[1]]
      for (const part of parts) {
        if (part !== undefined) add({ text: part, value: part, glob: false, tilde: part.startsWith("~") }, changes || written, owner)
      }
    }
    const reopened = uses.reopened(command.scope)
    for (const redirect of command.redirects) add(redirect.target, redirect.writes || reopened, owner)
  }
  for (const statement of parsed.statements) {
    const { owner, redirect, scope, commands } = statement
    const writes = redirect.writes || commands === undefined || uses.reopened(scope)
    found.push({ word: redirect.target, writes, owner, readsOnly: uses.reads(statement), unknown: unknownWhy(redirect.target, homeMoves) })
  }
  return found
}

/**
 * The words the line is known to change as files: redirection targets, and the operands of file commands that
 * change them (`cp`, `mv`, `ln`, `tee`, `sed -i` …, also as a wrapper runs them) or an output option's value.
 * Programs that only read (`cat .git/config`, `sed -n 1p .git/config`) are not counted; what an unknown program
 * writes is left to the sandbox.
 */
const changed = (parsed: Parsed): ReadonlyArray<Path> => {
  const found = mentioned(parsed).filter((path) => path.writes)
  const visit = (words: ReadonlyArray<Word>, owner: string): void => {
    for (const inner of Runs.of(words).commands) {
      const name = basename(inner[0]?.value ?? "")
      if (CHANGERS.has(name) || (name === "sed" && inner.some((word) => /^(-[A-Za-z]*i|--in-place)/.test(word.value ?? "")))) {
        for (const word of inner.slice(1)) found.push({ word, writes: true, owner, readsOnly: false, unknown: undefined })
      }
      visit(inner, owner)
    }
  }
  for (const command of parsed.commands) if (command.kind === "command") visit(command.words, command.within ?? command.resource)
  return found
}

/** The programs whose scripts may name a file they write, each with the reader that says whether this one may. */
const SCRIPTED: Readonly<Record<string, (args: ReadonlyArray<string | undefined>) => boolean>> = {
  sed: Sed.runs,
  ...Object.fromEntries([...Awk.NAMES].map((name) => [name, Awk.runs])),
}

/**
 * Whether the line runs a sed script or an awk program that writes, or may write, a file it names itself (`sed -n
 * 'w core.json'`, the `w` flag of `s`, `e`; `awk '{ print > "core.json" }'`, `system(…)`; or a script core cannot
 * read: Sed.runs, Awk.runs, or fed to it by the line), also as a wrapper runs it: such a file is not a word of the
 * line, so what it changes is known only when it runs.
 */
export const scriptWrites = (parsed: Parsed): boolean => {
  const visit = (words: ReadonlyArray<Word>): boolean => {
    const name = basename(words[0]?.value ?? "")
    const mayWrite = Object.hasOwn(SCRIPTED, name) ? SCRIPTED[name]! : undefined
    // A program file the line feeds it (`awk -f - <<< '…'`, `-f <(…)`) is code written on the line that core does
    // not read, as a sed script there is.
    return (
      (mayWrite !== undefined && (mayWrite(words.slice(1).map((word) => word.value)) || Runs.programFed(words.slice(1)))) ||
      Runs.of(words).commands.some(visit)
    )
  }
  return parsed.commands.some((command) => command.kind === "command" && visit(command.words))
}

/**
 * Where a command moves the working directory to, for itself and what it runs after it (`cd DIR`, `pushd DIR`,
 * `builtin cd DIR`, `command cd DIR`) or for the command it runs (`env -C DIR cmd`): the word naming DIR, `null` when
 * it moves somewhere the line does not say (`popd`, `cd` alone, `cd -`), undefined when it does not move.
 */
export const directoryChange = (words: ReadonlyArray<Word>): Word | null | undefined => {
  const name = basename(words[0]?.value ?? "")
  if ((name === "builtin" || name === "command") && words.length > 1) {
    // Their options, and the `--` ending them (`command -- cd src`).
    const rest = words.slice(1).filter((word) => !/^-[A-Za-z]*$/.test(word.value ?? "") && word.value !== "--")
    return ["cd", "pushd", "popd"].includes(rest[0]?.value ?? "") ? directoryChange(rest) : undefined
  }
  if (name === "cd" || name === "pushd") {
    const target = words.slice(1).find((word) => !(word.value ?? "").startsWith("-") || word.value === "-")
    return target === undefined || target.value === "-" ? null : target
  }
  if (name === "popd") return null
  if (name === "env") {
    for (let index = 1; index < words.length; index++) {
      const value = words[index]!.value ?? ""
      // `-C DIR`, and `-iC DIR` (options run together, C last).
      if (/^-[A-Za-z]*C$/.test(value) || value === "--chdir") return words[index + 1] ?? null
      const attached = /^(?:-[A-Za-z]*C|--chdir=)(.+)$/s.exec(value)?.[1]
      if (attached !== undefined) return { ...words[index]!, text: attached, value: attached, tilde: false }
      // An option's value (`-u NAME`, `-S STRING`) is not the command env runs.
      if (/^-[A-Za-z]*[uS]$/.test(value) || value === "--unset" || value === "--split-string") {
        index++
        continue
      }
      // The command env runs: what follows is its own.
      if (!value.startsWith("-") && !value.includes("=")) break
    }
  }
  return undefined
}

/**
 * Every move of the working directory in `parsed` (`directoryChange`), in order, those of the commands a wrapper
 * runs included (`nice env -C DIR cmd`, `timeout 5 env -C DIR cmd`).
 */
export const directoryChanges = (parsed: CommandLine.Parsed): ReadonlyArray<Word | null> => {
  const found: Array<Word | null> = []
  const visit = (words: ReadonlyArray<Word>): void => {
    const change = directoryChange(words)
    if (change !== undefined) found.push(change)
    // A command named by an expansion runs nothing Runs can read.
    if (words[0]?.value === undefined) return
    for (const inner of Runs.of(words).commands) visit(inner)
  }
  for (const command of parsed.commands) visit(command.words)
  return found
}

/**
 * Whether `parsed` moves where later relative paths lead in a way no `cd` target says: `shopt` setting `cdable_vars`
 * (or an option the text does not name), which makes `cd NAME` go to $NAME, or find's `-execdir` and `-okdir` (a
 * command run in each folder found).
 */
export const unplacedMoves = (parsed: CommandLine.Parsed): boolean => {
  const visit = (words: ReadonlyArray<Word>): boolean => {
    // A command named by an expansion runs nothing Runs can read.
    if (words[0]?.value === undefined) return false
    const name = basename(words[0].value)
    if (name === "shopt" && words.slice(1).some((word) => word.value === undefined || word.value === "cdable_vars")) return true
    if (name === "find" && words.some((word) => word.value === "-execdir" || word.value === "-okdir")) return true
    return Runs.of(words).commands.some(visit)
  }
  return parsed.commands.some((command) => visit(command.words))
}

/**
 * `value` resolved from `workdir` as the system walks it: a `..` after a link leaves where the link leads, not the
 * folder holding the link (`sub/L/../core.json` with L a link to ../tools is the Location's core.json).
 */
const physical = (workdir: string, value: string): string => {
  if (!/(^|\/)\.\.(\/|$)/.test(value)) return resolve(workdir, value)
  let at = value.startsWith("/") ? "/" : workdir
  for (const step of value.split("/")) {
    if (step === "" || step === ".") continue
    if (step !== "..") at = join(at, step)
    else {
      try {
        at = realpathSync(at)
      } catch {
        // Not there (yet): the text is all there is.
      }
      at = dirname(at)
    }
  }
  return resolve(at)
}

/**
 * The pattern of a glob word whose last component alone is a glob (`*.txt`, `src/*.o`): what it names is the entries
 * of the folder `locate` answers whose names match it. Undefined for any other word, and for one globbing a folder's
 * name (`src*` then `/x`), which is judged by the folder `locate` answers as a whole.
 */
export const lastGlob = (word: Word): string | undefined => {
  if (!word.glob || word.value === undefined) return undefined
  // Quoted or escaped, a character of it is no wildcard (`'[x]'*` matches a literal `[x]`), which the value, its
  // quotes removed, no longer says: the folder as a whole.
  if (/['"\\$`]/.test(word.text.slice(word.text.lastIndexOf("/") + 1))) return undefined
  const slash = word.value.lastIndexOf("/")
  const at = word.value.search(Words.GLOB)
  return at > slash ? word.value.slice(slash + 1) : undefined
}

/**
 * The absolute path a known path word points at from `workdir` (`~` expanded; for a pattern, the directory its
 * matches lie in), or undefined when it names a device or cannot be known before running.
 */
export const locate = (word: Word, workdir: string, home = homedir()): string | undefined => {
  let value = word.value
  if (value === undefined || value === "") return undefined
  if (word.tilde) {
    if (value === "~") value = home
    else if (value.startsWith("~/")) value = home + value.slice(1)
    else return undefined
  }
  if (word.glob) {
    const at = value.search(Words.GLOB)
    const before = value.slice(0, at)
    value = before.endsWith("/") ? before : dirname(before === "" ? "." : before)
  }
  const absolute = physical(workdir, value)
  // A device named as one is no file; one reached through a link (`d/../stdin`) is checked where it leads.
  const named = absolute === resolve(workdir, value)
  if (named && (DEVICES.has(absolute) || absolute.startsWith("/dev/fd/") || absolute.startsWith("/proc/self/fd/"))) return undefined
  return absolute
}
