export * as CommandLine from "./command"

// Reads a bash command line for permission checks: tree-sitter's bash grammar finds every simple command, however
// deeply it is nested (lists, pipelines, subshells, substitutions, heredocs, and the literal code given to
// `bash -c`, `eval` or `trap`), so each is checked on its own, with its file redirections. What cannot be known
// from the text (a line the grammar cannot read, a command named by an expansion, code in a string core cannot
// read, a path held in an expansion) is reported as opaque, to be asked about every time. It also finds the paths
// file commands and redirections touch. It decides nothing and spawns nothing: ../builtin/bash.ts asks.

import { homedir } from "node:os"
import { basename, dirname, resolve } from "node:path"
import * as Effect from "effect/Effect"
import type { Node, Parser } from "web-tree-sitter"
import treeSitterWasm from "web-tree-sitter/tree-sitter.wasm" with { type: "file" }
import bashWasm from "tree-sitter-bash/tree-sitter-bash.wasm" with { type: "file" }
import { Arity } from "./arity"
import { Evaluation } from "./evaluation"
import { Flags } from "./flags"
import { Operands } from "./operands"
import { Planted } from "./planted"
import { Runs } from "./runs"
import { Words } from "./words"

/**
 * Opens the resource of a line the grammar cannot read, which is checked as a whole. A parsed command's resource
 * starts with its literal name or an assignment, never with `<` (a redirection in bash).
 */
export const UNPARSED = "<unparsed>"

/** How deeply code inside code (`bash -c "eval '…'"`) is read before the rest is taken as opaque. */
const MAX_DEPTH = 8

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

/** One word of a command: as written, and its value when it has no expansion. */
export type Word = Words.Word

/** A file redirection (`> out.txt`, `2>>log`, `< in`); descriptor duplications (`2>&1`) are not files. */
export interface Redirect {
  /** As written, from the descriptor or operator to the end of the target. */
  readonly text: string
  readonly target: Word
  /** Whether it writes the target (`>`, `>>`, `>|`, `&>`, `&>>`, `N>`), rather than reading it (`<`). */
  readonly writes: boolean
}

/** A simple command (or a declaration, test or bare assignment) found in the line. */
export interface Simple {
  readonly kind: "command" | "declaration" | "test" | "assignment"
  /** `NAME=value` words before the command, as written. */
  readonly assignments: ReadonlyArray<string>
  /** The command name first (its value is always a literal), then its arguments. Empty for an assignment. */
  readonly words: ReadonlyArray<Word>
  /** Its own file redirections. */
  readonly redirects: ReadonlyArray<Redirect>
  /** What it is checked as: its text with the name unquoted, then its redirections. */
  readonly resource: string
  /**
   * The resource of the command whose code string holds it (`bash -c '…'`), if any: what is asked about when
   * something in it cannot be known, since the inner text alone would not show what runs it.
   */
  readonly within: string | undefined
  /** The node's own text. */
  readonly text: string
  /**
   * Set for a shell that only runs literal code (`bash -lc '…'`, `env sh -c '…'`): its commands are checked in
   * their own right, as if unwrapped, and the shell adds no check of its own.
   */
  readonly transparent?: boolean
}

/** Something the line runs whose effect cannot be known from its text: asked about as `resource`, every time. */
export interface Opaque {
  readonly resource: string
  /** Why, in a few words, for whoever is asked. */
  readonly reason: string
  /** Set when it plants code the user's own programs run (Planted): what, for the person who must approve it. */
  readonly protected?: string
}

export interface Parsed {
  /** The line as given. */
  readonly text: string
  readonly commands: ReadonlyArray<Simple>
  /** Redirections of statements that are not simple commands (`{ a; b; } > out`), with the statement's text. */
  readonly statements: ReadonlyArray<{ readonly owner: string; readonly redirect: Redirect }>
  /** What the line runs that cannot be known from its text. */
  readonly opaque: ReadonlyArray<Opaque>
  /** Why the grammar cannot read the line; undefined when it can. */
  readonly unparsed: string | undefined
}

/** One resource to check under the `bash` action, and what an "always" reply saves for it. */
export interface Check {
  readonly resource: string
  /** Undefined when nothing can be saved without approving more than was asked (the text holds `*` or `?`). */
  readonly save: string | undefined
  /** Set when what it runs cannot be known from the text: then it is asked even where a rule allows it. */
  readonly opaque?: string
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
  /** Why where it leads cannot be known before the line runs; undefined when it can. */
  readonly unknown: string | undefined
}

// The web-tree-sitter runtime is one WebAssembly instance per process, so the parser is one per process too:
// made on first use, never at start-up, since most commands never parse a shell line.
let parser: Promise<Parser> | undefined

const loadParser = async (): Promise<Parser> => {
  const { Parser, Language } = await import("web-tree-sitter")
  await Parser.init({ wasmBinary: await Bun.file(treeSitterWasm).bytes() })
  const language = await Language.load(await Bun.file(bashWasm).bytes())
  return new Parser().setLanguage(language)
}

// Walking the tree

interface Collector {
  readonly parser: Parser
  /** How many code strings deep this walk is. */
  readonly depth: number
  /** The outermost command whose code string is being read, if any. */
  readonly within: string | undefined
  readonly commands: Array<Simple>
  readonly statements: Array<{ readonly owner: string; readonly redirect: Redirect }>
  readonly opaque: Array<Opaque>
  unparsed: string | undefined
  /** Variables whose value the line itself makes a number, so evaluating them as arithmetic runs nothing. */
  numeric: ReadonlySet<string>
  /** The text being read (the line, or the code a command runs). */
  line: string
}

const isRedirect = (type: string) => type === "file_redirect" || type === "herestring_redirect" || type === "heredoc_redirect"

interface Gathered {
  readonly redirects: Array<Redirect>
  /** Words the grammar attached to a redirection that are really the command's arguments (`echo > out hi`). */
  readonly words: Array<Word>
}

/** Reads one redirection node into `into`: its file target, if it has one, and any arguments it swallowed. */
const redirection = (node: Node, into: Gathered): void => {
  if (node.type === "file_redirect") {
    const [target, ...rest] = node.childrenForFieldName("destination").filter((child) => child !== null)
    into.words.push(...rest.map(Words.of))
    if (target === undefined) return
    const operator = node.children.find((child) => child !== null && !child.isNamed)?.text ?? ""
    // `2>&1` and `>&-` name descriptors, not files; `> >(tee log)` feeds a command, walked like any other.
    if (operator.endsWith("&") && (target.type === "number" || target.text === "-")) return
    if (target.type === "process_substitution") return
    into.redirects.push({
      text: node.text.slice(0, target.endIndex - node.startIndex),
      target: Words.of(target),
      writes: operator.includes(">"),
    })
    return
  }
  if (node.type === "heredoc_redirect") {
    into.words.push(...node.childrenForFieldName("argument").filter((child) => child !== null).map(Words.of))
    // `cat <<EOF > out`: the grammar nests the redirections that follow the heredoc's start.
    for (const nested of node.childrenForFieldName("redirect")) if (nested !== null) redirection(nested, into)
  }
}

/**
 * A command name as checked: its value, quoted when it holds a space or a character that means something to bash,
 * so that the program literally named `git status` (`'git status'`) is never read as `git` given `status`, nor
 * `a=b` as an assignment.
 */
export const nameOf = (value: string): string =>
  /^[^\s'"\\;&|<>()$`*?!#~=]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`

const textOf = (assignments: ReadonlyArray<string>, words: ReadonlyArray<Word>): string =>
  [...assignments, nameOf(words[0]!.value!), ...words.slice(1).map((word) => word.text)].join(" ")

const suffixOf = (redirects: ReadonlyArray<Redirect>): string => redirects.map((redirect) => ` ${redirect.text}`).join("")

/**
 * Reads literal bash code a command runs (`bash -c '…'`) into the same collector, its commands checked like the
 * line's. Code that is all a transparent shell does is read as if it stood in the line itself; any other code is
 * read within `owner`, which is what is asked about when something in it cannot be known.
 */
const readCode = (code: string, owner: string, collector: Collector, unwrapped = false): void => {
  if (collector.depth >= MAX_DEPTH) {
    collector.opaque.push({ resource: owner, reason: "it nests code in code too deeply to read" })
    return
  }
  const inner: Collector = {
    ...collector,
    depth: collector.depth + 1,
    within: unwrapped ? collector.within : (collector.within ?? owner),
    unparsed: undefined,
    numeric: new Set(),
    line: code,
  }
  read(code, inner)
  if (inner.unparsed !== undefined) {
    collector.opaque.push({ resource: owner, reason: `the code it runs cannot be read (${inner.unparsed})` })
  }
}

/**
 * What a command runs besides itself: wrapped commands, code strings, or the reason it cannot be known. `neutral`
 * says whether every wrapper around it so far is neutral (Runs.neutral), so a shell there may be transparent.
 */
const inspect = (words: ReadonlyArray<Word>, owner: string, collector: Collector, neutral = true): void => {
  const planted = Planted.git(words)
  if (planted !== undefined) collector.opaque.push({ resource: owner, reason: `${planted} sets what git runs for the user`, protected: Planted.WHAT })
  const inner = Runs.of(words)
  if (inner.opaque !== undefined) collector.opaque.push({ resource: owner, reason: inner.opaque })
  for (const code of inner.code) readCode(code, owner, collector, neutral && inner.unwrapped === true)
  const passes = neutral && Runs.neutral(words) !== undefined
  for (const command of inner.commands) inspect(command, owner, collector, passes)
}

const simple = (node: Node, outer: Gathered, collector: Collector) => {
  const assignments: Array<string> = []
  const gathered: Gathered = { redirects: [], words: [] }
  const args: Array<Word> = []
  let name: Word | undefined
  let named = false
  for (const child of node.namedChildren) {
    if (child === null) continue
    if (child.type === "variable_assignment") assignments.push(child.text)
    else if (child.type === "command_name") {
      const first = child.namedChild(0)
      name = first === null ? undefined : Words.of(first)
      named = true
    } else if (isRedirect(child.type)) redirection(child, gathered)
    else if (named) args.push(Words.of(child))
  }
  const redirects = [...gathered.redirects, ...outer.redirects]
  const rest = [...args, ...gathered.words, ...outer.words]
  if (!named) {
    for (const redirect of redirects) collector.statements.push({ owner: collector.within ?? node.text, redirect })
    return
  }
  if (name === undefined || name.value === undefined || name.value === "" || name.glob) {
    // Which program runs is known only when it runs: asked as the command, every time. Its redirections still
    // name files, checked as the statement's.
    const text = [...assignments, name?.text ?? "", ...rest.map((word) => word.text)].join(" ") + suffixOf(redirects)
    const resource = collector.within ?? text
    collector.opaque.push({ resource, reason: `its command name ${name?.text ?? ""} is not known before it runs` })
    for (const redirect of redirects) collector.statements.push({ owner: resource, redirect })
    return
  }
  const words = [name, ...rest]
  const resource = textOf(assignments, words) + suffixOf(redirects)
  const within = collector.within
  // A shell in a line that mentions where it reads its start-up files from (HOME, a login shell's profile;
  // ZDOTDIR, zsh's) may run more than its code: it is not transparent. One given an environment keeps its own
  // check (its code's commands are still their own).
  const neutral = !STARTUP.test(collector.line)
  const transparent = neutral && assignments.length === 0 && redirects.length === 0 && Runs.transparent(words)
  collector.commands.push({ kind: "command", assignments, words, redirects, resource, within, text: node.text, transparent })
  Evaluation.evaluatingCommand(words, within ?? resource, collector)
  // Also the environment a wrapper gives (`env PS4='…' bash -x`, `sudo EDITOR=… visudo`).
  const environment = [...assignments, ...words.slice(1).flatMap((word) => (word.value === undefined ? [] : [word.value]))]
  Evaluation.codeVariables(environment, within ?? resource, collector)
  templates(environment, within ?? resource, collector)
  inspect(words, within ?? resource, collector, neutral)
}

/** Makes the statement protected when it sets where git copies hooks from (Planted.template). */
const templates = (assignments: ReadonlyArray<string>, resource: string, collector: Collector): void => {
  const found = assignments.find(Planted.template)
  if (found !== undefined) collector.opaque.push({ resource, reason: `${found.split("=")[0]} sets where git init and clone copy hooks from`, protected: Planted.WHAT })
}

/** Variables that say where a shell reads start-up code from. */
const STARTUP = /(^|[^A-Za-z0-9_])(HOME|ZDOTDIR)([^A-Za-z0-9_]|$)/

const other = (kind: Simple["kind"], text: string, within: string | undefined, words: ReadonlyArray<Word> = []): Simple => ({
  kind,
  assignments: [],
  words,
  redirects: [],
  resource: text,
  within,
  text,
})

const declaration = (node: Node, collector: Collector) => {
  const [keyword, ...rest] = node.children.filter((child) => child !== null)
  if (keyword === undefined) return
  const words = [{ text: keyword.text, value: keyword.text, glob: false, tilde: false }, ...rest.map(Words.of)]
  const resource = textOf([], words)
  collector.commands.push({ ...other("declaration", node.text, collector.within, words), resource })
  Evaluation.evaluatingCommand(words, collector.within ?? resource, collector)
  Evaluation.compoundDeclaration(words, collector.within ?? resource, collector)
  Evaluation.codeVariables(words.slice(1).map((word) => word.value ?? word.text), collector.within ?? resource, collector)
  templates(words.slice(1).map((word) => word.value ?? word.text), collector.within ?? resource, collector)
}

const walk = (node: Node, collector: Collector, outer: Gathered = { redirects: [], words: [] }): void => {
  Evaluation.evaluates(node, collector)
  if (node.isError || node.isMissing) collector.unparsed ??= "bash cannot parse it"
  switch (node.type) {
    case "command":
      simple(node, outer, collector)
      break
    case "redirected_statement": {
      const body = node.childForFieldName("body")
      const gathered: Gathered = { redirects: [], words: [] }
      for (const redirect of node.childrenForFieldName("redirect")) if (redirect !== null) redirection(redirect, gathered)
      if (body?.type === "command") walk(body, collector, gathered)
      else {
        if (gathered.words.length > 0) collector.unparsed ??= "it gives arguments after a redirection"
        for (const redirect of gathered.redirects) collector.statements.push({ owner: collector.within ?? node.text, redirect })
        if (body !== null) walk(body, collector)
      }
      for (const child of node.children) if (child !== null && child.id !== body?.id) walk(child, collector)
      return
    }
    case "declaration_command":
    case "unset_command":
      declaration(node, collector)
      break
    case "test_command":
      collector.commands.push(other("test", node.text, collector.within))
      break
    case "variable_assignment":
      // A bare assignment (`PATH=/x`) changes what later commands run: it is checked like a command.
      if (!["command", "declaration_command", "variable_assignments"].includes(node.parent?.type ?? "")) {
        collector.commands.push(other("assignment", node.text, collector.within))
        Evaluation.codeVariables([node.text], collector.within ?? node.text, collector)
        templates([node.text], collector.within ?? node.text, collector)
      }
      break
    case "variable_assignments":
      collector.commands.push(other("assignment", node.text, collector.within))
      break
    case "file_redirect":
    case "heredoc_redirect": {
      // Inside a command or a redirected statement these were read with it; elsewhere (a function's own
      // redirections) here, as the enclosing statement's.
      const parent = node.parent
      if (parent !== null && !["command", "redirected_statement", "heredoc_redirect"].includes(parent.type)) {
        const gathered: Gathered = { redirects: [], words: [] }
        redirection(node, gathered)
        for (const redirect of gathered.redirects) collector.statements.push({ owner: collector.within ?? parent.text, redirect })
      }
      break
    }
  }
  for (const child of node.children) if (child !== null) walk(child, collector)
}

/**
 * The text with each line continuation (backslash, newline) between two tokens removed, as bash removes it before
 * splitting words: the grammar reads `r\<newline>m` as two words where bash runs `rm`. Continuations inside a
 * token (a quoted string, a comment) are left to it.
 */
const joinContinuations = (root: Node, text: string): string => {
  const cuts: Array<number> = []
  let previous: Node | undefined
  const visit = (node: Node): void => {
    if (node.childCount === 0) {
      if (previous !== undefined) {
        const gap = text.slice(previous.endIndex, node.startIndex)
        if (gap.includes("\\\n") && /^(?:[ \t]|\\\n)*$/.test(gap)) {
          for (let at = gap.indexOf("\\\n"); at !== -1; at = gap.indexOf("\\\n", at + 2)) cuts.push(previous.endIndex + at)
        }
      }
      previous = node
      return
    }
    for (const child of node.children) if (child !== null) visit(child)
  }
  visit(root)
  let joined = text
  for (const at of cuts.reverse()) joined = joined.slice(0, at) + joined.slice(at + 2)
  return joined
}

/** Parses `text` and walks it into `collector`. */
const read = (given: string, collector: Collector): void => {
  let tree = collector.parser.parse(given)
  if (tree !== null) {
    const joined = joinContinuations(tree.rootNode, given)
    if (joined !== given) {
      tree.delete()
      tree = collector.parser.parse(joined)
    }
  }
  if (tree === null) {
    collector.unparsed ??= "bash cannot parse it"
    return
  }
  try {
    if (collector.depth === 0) collector.numeric = Evaluation.numericNames(tree.rootNode)
    walk(tree.rootNode, collector)
    if (tree.rootNode.hasError) collector.unparsed ??= "bash cannot parse it"
  } finally {
    tree.delete()
  }
}

/** Reads a command line. */
export const parse = (text: string): Effect.Effect<Parsed> =>
  Effect.promise(() => (parser ??= loadParser())).pipe(
    Effect.map((loaded) => {
      const collector: Collector = {
        parser: loaded,
        depth: 0,
        within: undefined,
        commands: [],
        statements: [],
        opaque: [],
        unparsed: undefined,
        numeric: new Set(),
        line: text,
      }
      read(text, collector)
      const { commands, statements, opaque, unparsed } = collector
      return { text, commands, statements, opaque, unparsed }
    }),
  )

// Permission resources

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

/** The check of one command's text, with its other spellings. */
const checkOf = (assignments: ReadonlyArray<string>, words: ReadonlyArray<Word>, suffix: string): Check => {
  const resource = textOf(assignments, words) + suffix
  const variants = Flags.variants(
    words.map((word) => word.value),
    words.map((word) => word.text),
    words[0]!.value!,
  )
    .map((text) => [...assignments, text].join(" ") + suffix)
    .filter((text) => text !== resource)
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
export const checks = (parsed: Parsed): ReadonlyArray<Check> => {
  const found: Array<Check> = []
  for (const command of parsed.commands) {
    if (command.kind === "test") {
      const opener = command.text.startsWith("[[") ? "[[" : "["
      found.push({ resource: command.text, save: `${opener} *` })
    } else if (command.kind === "assignment") {
      found.push({ resource: command.text, save: exact(command.text) })
    } else {
      found.push(...checksFor(command.assignments, command.words, suffixOf(command.redirects), command.transparent === true))
    }
  }
  const opaque: Array<Opaque> = [...parsed.opaque, ...renamed(parsed)]
  for (const path of paths(parsed)) {
    if (path.unknown !== undefined) opaque.push({ resource: path.owner, reason: path.unknown })
  }
  // A change into what git runs for the user (`cp x .git/hooks/pre-commit`, `echo > .git/config`).
  for (const path of changed(parsed)) {
    const value = path.word.value
    if (value === undefined || !Planted.gitPath(value)) continue
    opaque.unshift({ resource: path.owner, reason: `it changes ${path.word.text}, which git runs or reads for the user`, protected: Planted.WHAT })
  }
  // What plants code is checked first, and once per resource.
  opaque.sort((a, b) => Number(b.protected !== undefined) - Number(a.protected !== undefined))
  if (parsed.unparsed !== undefined) opaque.unshift({ resource: `${UNPARSED} ${parsed.text.trim()}`, reason: parsed.unparsed })
  const asked = new Set(opaque.map((entry) => entry.resource))
  // A command asked as opaque keeps its other spellings, so a rule denying one still denies it.
  const variants = new Map(found.flatMap((check) => (check.variants === undefined ? [] : [[check.resource, check.variants] as const])))
  const seen = new Set<string>()
  return [
    ...found.filter((check) => !asked.has(check.resource)),
    ...opaque.map((entry): Check => {
      const spelled = variants.get(entry.resource)
      return {
        resource: entry.resource,
        save: undefined,
        opaque: entry.reason,
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
  if (word === Runs.INPUT) return "the paths it is given come from its input"
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
  const add = (word: Word, writes: boolean, owner: string) => found.push({ word, writes, owner, unknown: unknownWhy(word, homeMoves) })
  const visit = (words: ReadonlyArray<Word>, owner: string) => {
    const name = basename(words[0]!.value!)
    const operands = Operands.isFileCommand(name) ? Operands.of(name, words) : Operands.guessed(name, words)
    for (const operand of operands) add(operand.word, operand.writes, owner)
    if (name === "cd" && words.length === 1) add(HOME, false, owner)
    for (const inner of Runs.of(words).commands) visit(inner, owner)
  }
  for (const command of parsed.commands) {
    // A variable set to a place outside (`F=/etc; sort $F/passwd`) is checked like a path of that place.
    const assignments =
      command.kind === "assignment"
        ? [command.text]
        : [...command.assignments, ...(command.kind === "declaration" ? command.words.slice(1).map((word) => word.value ?? word.text) : [])]
    for (const assignment of assignments) {
      const place = Operands.assigned(assignment)
      if (place !== undefined) add(place, false, command.within ?? command.resource)
    }
    if (command.kind !== "command") continue
    const owner = command.within ?? command.resource
    for (const redirect of command.redirects) add(redirect.target, redirect.writes, owner)
    visit(command.words, owner)
  }
  for (const { owner, redirect } of parsed.statements) add(redirect.target, redirect.writes, owner)
  return found
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
  const add = (word: Word, writes: boolean, owner: string) => found.push({ word, writes, owner, unknown: unknownWhy(word, homeMoves) })
  for (const command of parsed.commands) {
    const owner = command.within ?? command.resource
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
    for (const redirect of command.redirects) add(redirect.target, redirect.writes, owner)
  }
  for (const { owner, redirect } of parsed.statements) add(redirect.target, redirect.writes, owner)
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
        for (const word of inner.slice(1)) found.push({ word, writes: true, owner, unknown: undefined })
      }
      visit(inner, owner)
    }
  }
  for (const command of parsed.commands) if (command.kind === "command") visit(command.words, command.within ?? command.resource)
  return found
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
  const absolute = resolve(workdir, value)
  if (DEVICES.has(absolute) || absolute.startsWith("/dev/fd/") || absolute.startsWith("/proc/self/fd/")) return undefined
  return absolute
}
