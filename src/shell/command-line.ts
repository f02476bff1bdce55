export * as CommandLine from "./command-line"

// Reads a bash command line for permission checks: tree-sitter's bash grammar finds every simple command, however
// deeply it is nested (lists, pipelines, subshells, substitutions, heredocs, and the literal code given to
// `bash -c`, `eval` or `trap`), so each is checked on its own, with its file redirections. What cannot be known
// from the text (a line the grammar cannot read, a command named by an expansion, code in a string core cannot
// read, a path held in an expansion) is reported as opaque, to be asked about every time. ./command-checks turns
// what it read into permission checks and the paths the line touches. It decides nothing and spawns nothing.

import * as Effect from "effect/Effect"
import type { Node, Parser } from "web-tree-sitter"
import treeSitterWasm from "web-tree-sitter/tree-sitter.wasm" with { type: "file" }
import bashWasm from "tree-sitter-bash/tree-sitter-bash.wasm" with { type: "file" }
import { Settlement } from "../contract/settlement"
import { Arity } from "./arity"
import { Evaluation } from "./evaluation"
import { Planted } from "./planted"
import { Runs } from "./runs"
import { Words } from "./words"

/**
 * Opens the resource of a line the grammar cannot read, which is checked as a whole. A parsed command's resource
 * starts with its literal name or an assignment, never with `<` (a redirection in bash).
 */
export const UNPARSED = Settlement.UNPARSED

/** How deeply code inside code (`bash -c "eval '…'"`) is read before the rest is taken as opaque. */
const MAX_DEPTH = 8

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

/**
 * What a command or statement holds, as the commands found in the line from `from` up to (not including) `to`:
 * itself, and whatever runs while its redirections are open (its body, the substitutions in its words and
 * redirections, the code it runs). Scopes nest as the line does.
 */
export interface Scope {
  readonly from: number
  readonly to: number
  /** When it ended among the line's scopes: of two with the same commands, the one nested in the other ends first. */
  readonly order: number
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
  /** Its heredocs and here-strings as written: what it is fed, shown and checked after its redirections. */
  readonly feeds: ReadonlyArray<string>
  /** What it is checked as: its text with the name unquoted, then its redirections and what it is fed. */
  readonly resource: string
  /**
   * The resource of the command whose code string holds it (`bash -c '…'`), if any: what is asked about when
   * something in it cannot be known, since the inner text alone would not show what runs it.
   */
  readonly within: string | undefined
  /** The node's own text. */
  readonly text: string
  readonly scope: Scope
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

/** A redirection of a statement that is not a simple command (`{ a; b; } < in`), with the statement's text. */
export interface Statement {
  readonly owner: string
  readonly redirect: Redirect
  /**
   * The commands it applies to (`a` and `b`), as found in the line, the same array for each redirection of the
   * statement; undefined where they cannot be told (a command whose name is an expansion, a function's body).
   */
  readonly commands: ReadonlyArray<Simple> | undefined
  /** What runs while its redirection is open. */
  readonly scope: Scope
}

export interface Parsed {
  /** The line as given. */
  readonly text: string
  readonly commands: ReadonlyArray<Simple>
  /** Redirections of statements that are not simple commands (`{ a; b; } > out`). */
  readonly statements: ReadonlyArray<Statement>
  /** What the line runs that cannot be known from its text. */
  readonly opaque: ReadonlyArray<Opaque>
  /** Whether it defines a shell function, which a command of the same name then runs. */
  readonly defines: boolean
  /** Why the grammar cannot read the line; undefined when it can. */
  readonly unparsed: string | undefined
}

// The web-tree-sitter runtime is one WebAssembly instance per process, so the parser is one per process too:
// made on first use, never at start-up, since most commands never parse a shell line.
let parser: Promise<Parser> | undefined
/** The parser once made. */
let ready: Parser | undefined

const loadParser = async (): Promise<Parser> => {
  const { Parser, Language } = await import("web-tree-sitter")
  await Parser.init({ wasmBinary: await Bun.file(treeSitterWasm).bytes() })
  const language = await Language.load(await Bun.file(bashWasm).bytes())
  return (ready = new Parser().setLanguage(language))
}

// Walking the tree

interface Collector {
  /** The grammar, once loaded: a line of plain words is read without it (`plainCommands`). */
  readonly parser: Parser | undefined
  /** Whether a line of plain words is read without the grammar (false: every line with it). */
  readonly plain: boolean
  /** How many code strings deep this walk is. */
  readonly depth: number
  /** The outermost command whose code string is being read, if any. */
  readonly within: string | undefined
  readonly commands: Array<Simple>
  readonly statements: Array<Statement>
  /** Scopes begun and not yet ended, innermost last: each ends where the walk of the node that began it does. */
  readonly open: Array<{ readonly from: number; to: number; order: number }>
  /** How many scopes have ended, for every code string read into the line. */
  readonly ended: { count: number }
  readonly opaque: Array<Opaque>
  unparsed: string | undefined
  defines: boolean
  /** Variables whose value the line itself makes a number, so evaluating them as arithmetic runs nothing. */
  numeric: ReadonlySet<string>
  /** The text being read (the line, or the code a command runs). */
  line: string
  /** Whether `line` mentions STARTUP, once worked out for it (see `mentionsStartup`). */
  startup?: { readonly line: string; readonly found: boolean }
}

/** A scope beginning at `from` (the next command found, by default), ended by `close`. */
const begin = (collector: Collector, from = collector.commands.length): Scope => {
  const scope = { from, to: from, order: 0 }
  collector.open.push(scope)
  return scope
}

/** Ends the scopes begun since `mark` (a length of `open`) where the line has been read up to. */
const close = (collector: Collector, mark: number): void => {
  while (collector.open.length > mark) {
    const scope = collector.open.pop()!
    scope.to = collector.commands.length
    scope.order = collector.ended.count++
  }
}

const isRedirect = (type: string) => type === "file_redirect" || type === "herestring_redirect" || type === "heredoc_redirect"

interface Gathered {
  readonly redirects: Array<Redirect>
  /** Words the grammar attached to a redirection that are really the command's arguments (`echo > out hi`). */
  readonly words: Array<Word>
  /** Its heredocs and here-strings as written (`<<EOF`, its body and end; `<<< "…"`): what it is fed. */
  readonly feeds: Array<string>
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
  if (node.type === "herestring_redirect") {
    into.feeds.push(node.text)
    return
  }
  if (node.type === "heredoc_redirect") {
    // Its start, then its body and end, which the grammar holds here though they come on the lines after.
    const part = (type: string) => node.children.find((child) => child?.type === type)?.text ?? ""
    const operator = node.children.find((child) => child !== null && !child.isNamed)?.text ?? "<<"
    into.feeds.push(`${operator}${part("heredoc_start")}\n${part("heredoc_body")}${part("heredoc_end")}`)
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

export const textOf = (assignments: ReadonlyArray<string>, words: ReadonlyArray<Word>): string =>
  [...assignments, nameOf(words[0]!.value!), ...words.slice(1).map((word) => word.text)].join(" ")

export const suffixOf = (redirects: ReadonlyArray<Redirect>, feeds: ReadonlyArray<string> = []): string =>
  redirects.map((redirect) => ` ${redirect.text}`).join("") + feeds.map((feed) => ` ${feed}`).join("")

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
  collector.defines ||= inner.defines
  if (inner.unparsed !== undefined) {
    collector.opaque.push({ resource: owner, reason: `the code it runs cannot be read (${inner.unparsed})` })
  }
}

/**
 * What a command runs besides itself: wrapped commands, code strings, or the reason it cannot be known. `neutral`
 * says whether every wrapper around it so far is neutral (Runs.neutral), so a shell there may be transparent.
 */
const inspect = (given: ReadonlyArray<Word>, owner: string, collector: Collector, neutral = true): void => {
  // One of git's own programs run by its name is read as the git subcommand it is.
  const words = Runs.gitProgram(given) ?? given
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
  const gathered: Gathered = { redirects: [], words: [], feeds: [] }
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
  const feeds = [...gathered.feeds, ...outer.feeds]
  const rest = [...args, ...gathered.words, ...outer.words]
  if (!named) {
    const commands: ReadonlyArray<Simple> = []
    const scope = begin(collector)
    for (const redirect of redirects) collector.statements.push({ owner: collector.within ?? node.text, redirect, commands, scope })
    return
  }
  if (name === undefined || name.value === undefined || name.value === "" || name.glob) {
    // Which program runs is known only when it runs: asked as the command, every time. Its redirections still
    // name files, checked as the statement's.
    const text = [...assignments, name?.text ?? "", ...rest.map((word) => word.text)].join(" ") + suffixOf(redirects, feeds)
    const resource = collector.within ?? text
    collector.opaque.push({ resource, reason: `its command name ${name?.text ?? ""} is not known before it runs` })
    const scope = begin(collector)
    for (const redirect of redirects) collector.statements.push({ owner: resource, redirect, commands: undefined, scope })
    return
  }
  addCommand(assignments, [name, ...rest], redirects, node.text, collector, feeds)
}

/** Whether the command runs another (a wrapper, `xargs`, `find -exec`, a shell's code): where each word lies matters. */
const runsAnother = (words: ReadonlyArray<Word>): boolean =>
  Arity.wrapperOf(words, words[0]!.value!) !== undefined || Runs.of(words).commands.length > 0

/**
 * A simple command whose name is known (`words[0]`, a literal value), with its assignments and redirections: checked,
 * and what it runs besides itself read. `text` is the command as written.
 */
const addCommand = (
  assignments: ReadonlyArray<string>,
  words: ReadonlyArray<Word>,
  redirects: ReadonlyArray<Redirect>,
  text: string,
  collector: Collector,
  feeds: ReadonlyArray<string> = [],
): void => {
  const name = words[0]!
  const rest = words.slice(1)
  const resource = textOf(assignments, words) + suffixOf(redirects, feeds)
  const within = collector.within
  // A word bash brace-expands into more words than core lists, or into words holding expansions, is not known; nor,
  // under a program that runs another (`env -u ""{},git} push`: `env -u } git push`), is which word that one is.
  const braced = rest.find((word) => Words.expands(word) && (word.braces === undefined || runsAnother(words)))
  if (braced !== undefined) {
    collector.opaque.push({ resource: within ?? resource, reason: `bash expands the braces of ${braced.text} into words core does not list` })
  }
  // A subcommand written as a pattern (`npm ru[n] x`) is whatever file name bash expands it to: not known.
  if (Object.hasOwn(Arity.TABLE, name.value!) && Arity.TABLE[name.value!]! > 1 && rest[0]?.glob === true) {
    collector.opaque.push({ resource: within ?? resource, reason: `its subcommand ${rest[0].text} is a pattern bash expands to a file's name` })
  }
  // A shell in a line that mentions where it reads its start-up files from (HOME, a login shell's profile;
  // ZDOTDIR, zsh's) may run more than its code: it is not transparent. One given an environment keeps its own
  // check (its code's commands are still their own).
  const neutral = !mentionsStartup(collector)
  const transparent = neutral && assignments.length === 0 && redirects.length === 0 && feeds.length === 0 && Runs.transparent(words)
  const scope = begin(collector)
  collector.commands.push({ kind: "command", assignments, words, redirects, feeds, resource, within, text, scope, transparent })
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

/**
 * Whether the text being read mentions STARTUP: worked out once per text, not once per command in it (a line of
 * 200,000 commands searched whole for each took the sidecar minutes).
 */
const mentionsStartup = (collector: Collector): boolean => {
  const known = collector.startup
  if (known !== undefined && known.line === collector.line) return known.found
  const found = STARTUP.test(collector.line)
  collector.startup = { line: collector.line, found }
  return found
}

/** Adds a declaration, test or bare assignment, as `text`. */
const other = (
  kind: Exclude<Simple["kind"], "command">,
  text: string,
  collector: Collector,
  words: ReadonlyArray<Word> = [],
  resource = text,
): void => {
  const scope = begin(collector)
  collector.commands.push({ kind, assignments: [], words, redirects: [], feeds: [], resource, within: collector.within, text, scope })
}

/**
 * An assignment made by something other than `NAME=value` (a loop, `${NAME:=value}`), checked as one where its name
 * is in capitals, as bash's own variables and the environment's are (`for PATH in .`): a loop over `f` sets nothing
 * another program reads, and is not asked about.
 */
const assigned = (text: string, collector: Collector): void => {
  if (!/^[A-Z0-9_]+[[=]/.test(text)) return
  other("assignment", text, collector)
  Evaluation.codeVariables([text], collector.within ?? text, collector)
}

const declaration = (node: Node, collector: Collector) => {
  const [keyword, ...rest] = node.children.filter((child) => child !== null)
  if (keyword === undefined) return
  const words = [{ text: keyword.text, value: keyword.text, glob: false, tilde: false }, ...rest.map(Words.of)]
  const resource = textOf([], words)
  other("declaration", node.text, collector, words, resource)
  Evaluation.evaluatingCommand(words, collector.within ?? resource, collector)
  Evaluation.compoundDeclaration(words, collector.within ?? resource, collector)
  Evaluation.codeVariables(words.slice(1).map((word) => word.value ?? word.text), collector.within ?? resource, collector)
  templates(words.slice(1).map((word) => word.value ?? word.text), collector.within ?? resource, collector)
}

/** Operators the grammar reads as comparisons in a test, which bash reads as redirections in `[ … ]`. */
const COMPARING: ReadonlySet<string> = new Set([">", ">>", "<", "<<", "<<<", "<>", ">|", "&>", "&>>", ">&", "<&"])

/** Whether a test's expression holds an operator bash reads as a redirection in `[ … ]`. */
const redirectsWithin = (node: Node): boolean =>
  node.children.some((child) => child !== null && ((!child.isNamed && COMPARING.has(child.type)) || (child.type.endsWith("expression") && redirectsWithin(child))))

/** Walks `node` into `collector`; the scopes it begins end with it. */
const walk = (node: Node, collector: Collector, outer?: Gathered): void => {
  const mark = collector.open.length
  visit(node, collector, outer)
  close(collector, mark)
}

/**
 * What a redirection written after `body` applies to: `body` itself, or for a list, a pipeline or a negation, its
 * last part (`a && b | c > out` is c's), once the parts before it have been read.
 */
const lastOf = (body: Node, collector: Collector): Node => {
  let node = body
  while (node.type === "list" || node.type === "pipeline" || node.type === "negated_command") {
    const last = node.namedChildren.at(-1)
    if (last === null || last === undefined) break
    Evaluation.evaluates(node, collector)
    if (node.isError || node.isMissing) collector.unparsed ??= "bash cannot parse it"
    for (const child of node.children) if (child !== null && child.id !== last.id) walk(child, collector)
    node = last
  }
  return node
}

const visit = (node: Node, collector: Collector, outer: Gathered = { redirects: [], words: [], feeds: [] }): void => {
  Evaluation.evaluates(node, collector)
  if (node.isError || node.isMissing) collector.unparsed ??= "bash cannot parse it"
  switch (node.type) {
    case "command":
      simple(node, outer, collector)
      break
    case "redirected_statement": {
      const body = node.childForFieldName("body")
      const gathered: Gathered = { redirects: [], words: [], feeds: [] }
      for (const redirect of node.childrenForFieldName("redirect")) if (redirect !== null) redirection(redirect, gathered)
      // `a && b < in` and `a | b > out` are read by the grammar as the list's or the pipeline's redirection; bash
      // gives it to the last command (or compound command) alone, as here: the parts before it are read as they are.
      const target = body === null ? null : lastOf(body, collector)
      // A command's scope holds the substitutions in its redirections, read below.
      if (target?.type === "command") visit(target, collector, gathered)
      else {
        if (gathered.words.length > 0) collector.unparsed ??= "it gives arguments after a redirection"
        // A compound command's (`{ a; b; } < in`, `while …; done < in`): it applies to every command in it.
        const from = collector.commands.length
        const opaqueFrom = collector.opaque.length
        if (target !== null) walk(target, collector)
        const commands = collector.commands.slice(from)
        const scope = begin(collector, from)
        for (const redirect of gathered.redirects) collector.statements.push({ owner: collector.within ?? node.text, redirect, commands, scope })
        // What a heredoc feeds a group (`{ sh; } <<EOF`) reaches whichever of its commands reads its input: one asked
        // for what it runs from there (a shell, an interpreter) is asked with what is fed, so that the ask shows it
        // and a rule about that text meets it.
        if (gathered.feeds.length > 0) {
          const fed = new Set(commands.map((command) => command.resource))
          for (let index = opaqueFrom; index < collector.opaque.length; index++) {
            const entry = collector.opaque[index]!
            if (fed.has(entry.resource)) collector.opaque[index] = { ...entry, resource: entry.resource + suffixOf([], gathered.feeds) }
          }
        }
      }
      for (const child of node.children) if (child !== null && child.id !== body?.id) walk(child, collector)
      return
    }
    case "function_definition":
      collector.defines = true
      break
    case "declaration_command":
    case "unset_command":
      declaration(node, collector)
      break
    case "test_command":
      // `[` is a command, and `>` or `<` in its words redirects it (`[ x > core.json ]` truncates core.json):
      // read as the command it is. In `[[ … ]]` they compare strings.
      if (node.text.startsWith("[") && !node.text.startsWith("[[") && redirectsWithin(node)) {
        readCode(`command ${node.text}`, node.text, collector, true)
      } else other("test", node.text, collector)
      break
    case "variable_assignment":
      // A bare assignment (`PATH=/x`) changes what later commands run: it is checked like a command.
      if (!["command", "declaration_command", "variable_assignments"].includes(node.parent?.type ?? "")) {
        other("assignment", node.text, collector)
        Evaluation.codeVariables([node.text], collector.within ?? node.text, collector)
        templates([node.text], collector.within ?? node.text, collector)
      }
      break
    case "variable_assignments":
      other("assignment", node.text, collector)
      break
    case "for_statement": {
      // `for NAME in WORDS` (and `select`) assigns NAME each word: checked as the assignment it is.
      const variable = node.childForFieldName("variable")?.text
      if (variable !== undefined) {
        const values = node.childrenForFieldName("value").flatMap((value) => (value === null ? [] : [value.text]))
        assigned(`${variable}=${values.length === 0 ? '"$@"' : values.join(" ")}`, collector)
      }
      break
    }
    case "expansion": {
      // `${NAME:=VALUE}` (or `=`) assigns NAME where it is unset or empty: checked as that assignment.
      const operator = node.children.findIndex((child) => child?.type === ":=" || child?.type === "=")
      const target = node.namedChildren[0]
      if (operator !== -1 && target !== null && target !== undefined && (target.type === "variable_name" || target.type === "subscript")) {
        const value = node.children.slice(operator + 1, -1).map((child) => child?.text ?? "").join("")
        assigned(`${target.text}=${value}`, collector)
      }
      break
    }
    case "file_redirect":
    case "heredoc_redirect": {
      // Inside a command or a redirected statement these were read with it; elsewhere (a function's own
      // redirections) here, as the enclosing statement's.
      const parent = node.parent
      if (parent !== null && !["command", "redirected_statement", "heredoc_redirect"].includes(parent.type)) {
        const gathered: Gathered = { redirects: [], words: [], feeds: [] }
        redirection(node, gathered)
        const scope = begin(collector)
        for (const redirect of gathered.redirects) {
          collector.statements.push({ owner: collector.within ?? parent.text, redirect, commands: undefined, scope })
        }
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

/** What ends a word to bash, so that a `#` after it starts a comment. */
const WORD_BREAK = /^[ \t\n;&|()<>]$/

/** Where bash ends the `$'…'` string starting at `start` (past its closing quote), or -1 when it does not end. */
const ansiCEnd = (text: string, start: number): number => {
  for (let at = start + 2; at < text.length; at++) {
    if (text[at] === "\\") at++
    else if (text[at] === "'") return at + 1
  }
  return -1
}

/**
 * Words bash reads as reserved where a command's name stands (`!`, `{`, `if`, `while`…): the grammar reads one as a
 * command's name only where it misread what came before (`! { rm x; }`, `! ! rm x`: its `!` takes a simple command
 * only), so that the command bash runs is an argument of it.
 */
const RESERVED: ReadonlySet<string> = new Set([
  "!", "{", "if", "then", "elif", "else", "fi", "case", "esac", "for", "select", "while", "until", "do", "done", "in",
  "function", "[[", "]]",
])

/**
 * What bash reads as a compound command after `time` (and its `-p`, `--`) or `coproc` (and a name), which the grammar
 * knows as no keywords: a command name to it, its compound command the arguments (`time if rm x; then :; fi`). One
 * group (`time { …; }`) core reads as bash does.
 */
const COMPOUND_OPENERS: ReadonlySet<string> = new Set(["!", "{", "(", "((", "[[", "if", "while", "until", "for", "select", "case", "function", "coproc", "time"])

/** Where a newline may stand inside a command to both readers: in quotes, a heredoc, a substitution, an array. */
const HOLDS_LINES: ReadonlySet<string> = new Set([
  "string", "raw_string", "ansi_c_string", "translated_string", "heredoc_body", "heredoc_redirect", "command_substitution",
  "process_substitution", "arithmetic_expansion", "expansion", "array", "subshell", "compound_statement",
])

/** A heredoc's end word as core reads it: a plain word, or one quoted whole (`'EOF'`, `"EOF"`, `\EOF`). */
const HEREDOC_WORD = /^(?:([A-Za-z0-9_.-]+)|'([A-Za-z0-9_.-]+)'|"([A-Za-z0-9_.-]+)"|\\([A-Za-z0-9_.-]+))$/

/**
 * Whether two of a command's or an array's words have nothing between them, which bash reads as one word: the
 * grammar read it apart (`read a[\$\(rm\ x\)]` is `a[` and `\$\(rm\ x\)]` to it, `(['b[$(rm x)]']=1)` two
 * elements), where bash evaluates a subscript whole.
 */
const touching = (node: Node): boolean => {
  const parts = node.children.filter((child): child is Node => child !== null && child.isNamed && !child.type.endsWith("_redirect"))
  return parts.some((part, index) => index > 0 && part.startIndex === parts[index - 1]!.endIndex)
}

/**
 * Where the grammar and bash read a line apart, so that a command bash runs is not among those found: a heredoc
 * whose end word bash takes otherwise (`<<E''` ends at the line `E`, where the grammar waits for `E''` and reads
 * what lies between as text), as `unparsed`; a command substitution the grammar left as text (backquotes in a
 * `${…}` or an unquoted heredoc, `$(…)` in a heredoc whose lines are indented), or a backquoted one holding a
 * backslash (bash reads `\`` in it as another substitution), as the reason the line is opaque. Every `$(` and
 * backquote in the text must be a substitution the grammar read, or lie where bash reads it as text: in single
 * quotes, a comment, a quoted heredoc, or after a backslash.
 */
const misread = (root: Node, text: string): { readonly unparsed?: string; readonly opaque?: string } => {
  const escaped = (at: number) => {
    let backslashes = 0
    while (at - backslashes - 1 >= 0 && text[at - backslashes - 1] === "\\") backslashes++
    return backslashes % 2 === 1
  }
  const read = new Set<number>()
  const inert: Array<readonly [number, number]> = []
  /** Where a character is text to both readers: quoted, a heredoc's body, a comment. */
  const quoted: Array<readonly [number, number]> = []
  /** Arithmetic, where `<(` is a comparison. */
  const arithmetic: Array<readonly [number, number]> = []
  let found: { readonly unparsed?: string; readonly opaque?: string } | undefined
  // `inString`: in double quotes or an unquoted heredoc's body, where single quotes are text, not quoting
  // (`"${x:-'$(cmd)'}"` runs cmd); a substitution inside starts afresh.
  /** Whether the character at `at` ends a word to bash (or the text ends there). */
  const breaks = (at: number) => at >= text.length || (WORD_BREAK.test(text[at]!) && !escaped(at))
  const visit = (node: Node, inString: boolean): void => {
    switch (node.type) {
      case "simple_expansion":
        // A `$` and then a blank: bash reads the `$` as a character and the word after it as the next word (the
        // command, after `x=$`), where the grammar reads one expansion of that word (`x=$ rm x`, `<<<$ rm x`). In
        // double quotes both read text.
        if (!inString && /^\$\s/.test(node.text)) found ??= { unparsed: "bash reads a lone $ as a character where core reads an expansion" }
        break
      case "variable_assignment": {
        // The grammar skips blanks and escaped blanks after `=` and reads the next word as the value (`x=\  rm x` is
        // the value `rm` to it), and may end a value before a character bash reads on in the word (`x=}\a rm x`).
        const equals = node.children.find((child) => child?.type === "=" || child?.type === "+=")
        const value = node.childForFieldName("value")
        if (equals !== null && equals !== undefined && ((value !== null && value.startIndex !== equals.endIndex) || !breaks(node.endIndex))) {
          found ??= { unparsed: "bash ends an assignment's value elsewhere than core reads it" }
        }
        break
      }
      case "array":
        if (touching(node)) found ??= { unparsed: "bash reads one word where core reads two" }
        break
      case "regex":
        // Outside `[[ ]]` bash reads `==` and `=~` as words: a pattern the grammar read after one among a command's
        // words swallows what bash runs as commands (`echo [[ x == ;rm x ]]`).
        if (node.parent?.type === "command") found ??= { unparsed: "bash reads == and a pattern outside [[ ]] as words" }
        break
      case "command":
      case "declaration_command":
      case "unset_command":
      case "file_redirect":
      case "herestring_redirect": {
        const name = node.childForFieldName("name")
        const words = node.children.filter((child): child is Node => child !== null && (child.type === "command_name" || child.type === "word"))
        const first = words.findIndex((word) => word.type === "command_name")
        const named = first === -1 ? undefined : words[first]!.text
        if (name !== null && named !== undefined && RESERVED.has(named)) {
          found ??= { unparsed: `bash reads ${named} as a keyword where core reads a command's name` }
        } else if (named === "time" || named === "coproc") {
          let rest = words.slice(first + 1).map((word) => word.text)
          if (named === "time") while (rest[0] === "-p" || rest[0] === "--") rest = rest.slice(1)
          // `coproc NAME {…}`: the name, then the compound command.
          if (named === "coproc" && rest.length > 1 && /^[A-Za-z_][A-Za-z0-9_]*$/.test(rest[0]!) && COMPOUND_OPENERS.has(rest[1]!)) rest = rest.slice(1)
          if (rest[0] === "{") rest = rest.slice(1)
          if (rest[0] !== undefined && COMPOUND_OPENERS.has(rest[0])) found ??= { unparsed: `bash runs a compound command after ${named} where core reads words` }
        }
        if (touching(node)) found ??= { unparsed: "bash reads one word where core reads two" }
        // A line's end ends a command to bash: the grammar reads on past one after an operator (`echo x == ` and a
        // line), a word starting at it (`true` and a line `\rm x`), or a line holding a lone backslash (after a
        // command, or a redirection's target: `read >&2`, a line `\`, `rm x`).
        const lines: Array<readonly [number, number]> = []
        const gather = (inner: Node) => {
          for (const child of inner.children) {
            if (child === null) continue
            if (HOLDS_LINES.has(child.type)) lines.push([child.startIndex, child.endIndex])
            else gather(child)
          }
        }
        gather(node)
        for (let at = text.indexOf("\n", node.startIndex); at !== -1 && at < node.endIndex; at = text.indexOf("\n", at + 1)) {
          if (!escaped(at) && !lines.some(([from, to]) => at >= from && at < to)) {
            found ??= { unparsed: "bash ends a command at a line's end where core reads on" }
            break
          }
        }
        break
      }
      case "word":
        // A blank or a line's end in a word that no backslash escapes: the grammar read across what bash splits
        // (`coproc { { rm x` has the one word `{ {` to it).
        for (const blank of node.text.matchAll(/[ \t\n]/g)) {
          if (!escaped(node.startIndex + blank.index)) {
            found ??= { unparsed: "bash splits words where core reads one" }
            break
          }
        }
        break
      case "process_substitution":
        read.add(node.startIndex)
        break
      case "command_substitution":
        inString = false
        read.add(node.startIndex)
        if (node.text.startsWith("`")) {
          read.add(node.endIndex - 1)
          if (node.text.includes("\\")) found ??= { opaque: "a backquoted substitution holds a backslash, which bash reads again" }
        }
        break
      case "arithmetic_expansion":
        read.add(node.startIndex)
        arithmetic.push([node.startIndex, node.endIndex])
        break
      case "regex":
        // A pattern (`${x#…}`) ending in a backslash: the grammar stops it there, where bash reads the backslash as
        // escaping what follows (`${x#\'}; rm x #'}` is `${x#\'}` and a command to bash, one string to the grammar).
        if (/(?:^|[^\\])(?:\\\\)*\\$/.test(node.text)) found ??= { unparsed: "bash reads an escaped character where core reads a quote" }
        break
      case "string":
      case "translated_string":
      case "heredoc_body":
        if (node.type !== "heredoc_body" && escaped(node.startIndex)) {
          found ??= { unparsed: "bash reads an escaped character where core reads a quote" }
        }
        inString = true
        quoted.push([node.startIndex, node.endIndex])
        break
      case "raw_string":
      case "ansi_c_string":
        // In double quotes bash reads neither as quoting: the grammar's reading must not run past a `"` there.
        // Outside them, bash ends `$'…'` at its first quote not escaped (`$'\\'` ends at the second), where the
        // grammar reads `\'` as an escaped quote and runs on to a later one, reading commands between as text.
        if (inString ? node.text.includes('"') : node.type === "ansi_c_string" && ansiCEnd(text, node.startIndex) !== node.endIndex) {
          found ??= { unparsed: "bash ends a quoted string elsewhere than core reads it" }
        }
        // A quote bash reads as escaped (`\'`) that the grammar reads as opening a string.
        if (escaped(node.startIndex)) found ??= { unparsed: "bash reads an escaped character where core reads a quote" }
        quoted.push([node.startIndex, node.endIndex])
        if (inString) break
        inert.push([node.startIndex, node.endIndex])
        return
      case "comment":
        // `#` starts a comment only at a word's start: after a space the grammar skips as a backslash-space
        // (`echo \\ #; rm x`), bash reads `#` inside a word and runs what follows.
        // (A carriage return, form feed or vertical tab before it is said of below.)
        const before = text[node.startIndex - 1]
        if (before !== undefined && !/[\r\f\v]/.test(before) && !(WORD_BREAK.test(before) && !escaped(node.startIndex - 1))) {
          found ??= { unparsed: "bash reads a # as part of a word where core reads a comment" }
        }
        quoted.push([node.startIndex, node.endIndex])
        inert.push([node.startIndex, node.endIndex])
        return
      case "heredoc_redirect": {
        const startNode = node.children.find((child) => child?.type === "heredoc_start")
        // What the grammar reads after the operator's line but before the body (a first body line `\` read as more
        // words: `cat <<E`, a line `\`, a line `E`, then `rm x`): bash reads it as the body, which ends earlier.
        const lineEnd = startNode === null || startNode === undefined ? -1 : text.indexOf("\n", startNode.endIndex)
        if (lineEnd !== -1 && node.children.some((child) => child !== null && !/^heredoc_(body|end)$/.test(child.type) && child.endIndex > lineEnd)) {
          found ??= { unparsed: "bash reads where its heredoc starts otherwise" }
        }
        const word = HEREDOC_WORD.exec(startNode?.text ?? "")
        // The grammar may end the word early (`<<"E"x` is the word `Ex` to bash).
        const joined = startNode !== null && startNode !== undefined && /^[^\s;&|()<>]/.test(text.slice(startNode.endIndex))
        // bash ends the body only at a line that is the word alone (after tabs, with `<<-`); the grammar also at
        // `E `, ` E`, `E;`, and reads what follows as commands where bash reads text.
        const endNode = node.children.find((child) => child?.type === "heredoc_end")
        const wanted = word?.slice(1).find((part) => part !== undefined)
        let apart = false
        if (endNode !== null && endNode !== undefined) {
          const lineStart = text.lastIndexOf("\n", endNode.startIndex - 1) + 1
          const lineEnd = text.indexOf("\n", endNode.endIndex)
          const before = text.slice(lineStart, endNode.startIndex)
          const after = text.slice(endNode.endIndex, lineEnd === -1 ? text.length : lineEnd)
          const dashed = node.children.some((child) => child?.type === "<<-")
          // `E)` ends one inside `$(…)`: bash reads to the substitution's end, which is the same place.
          apart = endNode.text !== wanted || !(before === "" || (dashed && /^\t+$/.test(before))) || !(after === "" || after.startsWith(")"))
        }
        if (word === null || joined || apart) {
          found ??= { unparsed: "bash reads where its heredoc ends otherwise" }
        } else if (word[1] === undefined) {
          // Quoted: the body is text.
          const body = node.children.find((child) => child?.type === "heredoc_body")
          if (body !== undefined && body !== null) inert.push([body.startIndex, body.endIndex])
        }
        break
      }
    }
    for (const child of node.children) if (child !== null) visit(child, inString)
  }
  visit(root, false)
  if (found?.unparsed !== undefined) return found
  const within = (ranges: ReadonlyArray<readonly [number, number]>, at: number) => ranges.some(([from, to]) => at >= from && at < to)
  // A carriage return, form feed or vertical tab is part of a word to bash and a space to the grammar:
  // `true\r#$(cmd)` runs cmd where the grammar reads a comment.
  for (const match of text.matchAll(/[\r\f\v]/g)) {
    if (!within(quoted, match.index)) return { unparsed: "it holds a carriage return, form feed or vertical tab outside quotes, which bash reads as part of a word" }
  }
  // A line continuation inside quotes or an expansion, which bash removes first: `"$\<newline>(cmd)"` is `$(cmd)`.
  const SUBSTITUTIONS = /\$[({]|`/g
  const continued = text.replace(/\\\n/g, (match, at: number) => (escaped(at) || within(inert, at) ? match : ""))
  if ((continued.match(SUBSTITUTIONS) ?? []).length > (text.match(SUBSTITUTIONS) ?? []).length) {
    return { opaque: "a line continuation joins a substitution bash runs" }
  }
  // `<(…)` and `>(…)` bash runs where the grammar read a word (in `${…}`: `${x:-<(cmd)}`).
  for (const match of text.matchAll(/[<>]\(/g)) {
    if (!read.has(match.index) && !escaped(match.index) && !within(quoted, match.index) && !within(arithmetic, match.index)) {
      return { unparsed: "it holds a process substitution where core reads text (bash runs it)" }
    }
  }
  for (let at = text.search(/`|\$\(/); at !== -1; ) {
    if (!read.has(at) && !escaped(at) && !inert.some(([from, to]) => at >= from && at < to)) {
      return { opaque: "it holds a command substitution where core reads text (bash runs it)" }
    }
    const next = text.slice(at + 1).search(/`|\$\(/)
    at = next === -1 ? -1 : at + 1 + next
  }
  return found ?? {}
}

/**
 * The most `|` a line may hold to be parsed. The grammar's runtime aborts (and stays aborted for the whole process:
 * every later line fails to parse) on a pipeline of some 14,000 commands left open at its end, which a model can
 * write in 56 KB; 10,000 parse. A line past this is checked whole, as one that cannot be parsed is.
 */
const MAX_PIPES = 8_192

/** Whether `text` holds more than MAX_PIPES `|`. */
const tooManyPipes = (text: string): boolean => {
  let count = 0
  for (let at = text.indexOf("|"); at !== -1; at = text.indexOf("|", at + 1)) if (++count > MAX_PIPES) return true
  return false
}

/**
 * A plain command line: commands of plain words joined by `&&`, `||`, `|` or `;`, on one line. A plain word is
 * letters, digits and `_./:@%+,=-`, and such characters and spaces in single or double quotes (`--format="%h %s"`);
 * a command's first word is an unquoted name (no `=`, nor `@` or `%`, which the grammar cannot read in a name, and
 * not starting with `:+,-`), and no unquoted word is one the grammar reads as a keyword. To bash such a line is
 * these commands of these very words, each with the value written (nothing in them is escaped, expanded, redirected
 * or a pattern), and the grammar reads it so too; the two readings are compared in test/shell/command.test.ts.
 */
const PLAIN_CHARACTER = /^[A-Za-z0-9_./:@%+,=-]$/
const PLAIN_QUOTED = /^[A-Za-z0-9_./:@%+,= -]*$/
const PLAIN_NAME = /^[A-Za-z0-9_./][A-Za-z0-9_./:+,-]*$/
/** What ends a word of a plain command line. */
const WORD_END: ReadonlySet<string> = new Set([" ", "&", "|", ";"])

/** Words the grammar reads as more than a word (keywords, declarations), wherever they stand unquoted. */
const KEYWORDS: ReadonlySet<string> = new Set([
  "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done", "in",
  "function", "time", "coproc", "declare", "typeset", "export", "readonly", "local", "unset", "unsetenv",
])

/** A command of plain words: as written, and its words. */
interface PlainCommand {
  readonly text: string
  readonly words: ReadonlyArray<Word>
}

/** The commands of `line` when it is a plain command line (above), in order, else undefined. */
export const plainCommands = (line: string): ReadonlyArray<PlainCommand> | undefined => {
  const commands: Array<PlainCommand> = []
  let words: Array<Word> = []
  let start = 0
  let end = 0
  /** Ends the command being read: false where it is none (no word, or no name first). */
  const close = (): boolean => {
    const first = words[0]
    if (first === undefined || first.text !== first.value || !PLAIN_NAME.test(first.text)) return false
    if (words.some((word) => word.text === word.value && KEYWORDS.has(word.text))) return false
    commands.push({ text: line.slice(start, end), words })
    words = []
    return true
  }
  let at = 0
  while (at < line.length) {
    const char = line[at]!
    if (char === " ") {
      at++
      continue
    }
    if (char === "&" || char === "|" || char === ";") {
      const doubled = char !== ";" && line[at + 1] === char
      // A lone `&` runs the command before it in the background: read by the grammar.
      if ((char === "&" && !doubled) || !close()) return undefined
      at += doubled ? 2 : 1
      continue
    }
    // A word: runs of plain characters and quoted parts, one after another.
    let value = ""
    let after = at
    while (after < line.length && !WORD_END.has(line[after]!)) {
      const part = line[after]!
      if (part === "'" || part === '"') {
        const closing = line.indexOf(part, after + 1)
        if (closing === -1 || !PLAIN_QUOTED.test(line.slice(after + 1, closing))) return undefined
        value += line.slice(after + 1, closing)
        after = closing + 1
      } else if (PLAIN_CHARACTER.test(part)) {
        value += part
        after++
      } else return undefined
    }
    const text = line.slice(at, after)
    if (words.length === 0) start = at
    end = after
    words.push({ text, value, glob: false, tilde: false })
    at = after
  }
  return close() ? commands : undefined
}

/** Thrown where the grammar is needed and not given: the line is read again once it is loaded. */
const NEEDS_GRAMMAR = Symbol("needs the grammar")

/** Parses `text` and walks it into `collector`. */
const read = (given: string, collector: Collector): void => {
  if (tooManyPipes(given)) {
    collector.unparsed ??= "it holds too many pipes to read"
    return
  }
  // Read as the grammar reads it, without loading the grammar (tens of milliseconds of a one-off command).
  const plain = collector.plain ? plainCommands(given) : undefined
  if (plain !== undefined) {
    if (collector.depth === 0) collector.numeric = new Set()
    for (const { text, words } of plain) {
      const mark = collector.open.length
      addCommand([], words, [], text, collector)
      close(collector, mark)
    }
    return
  }
  try {
    readTree(given, collector)
  } catch (cause) {
    // Nesting deeper than the walk's stack (tens of thousands of parentheses): read no further.
    if (!(cause instanceof RangeError)) throw cause
    collector.unparsed ??= "it is nested too deeply to read"
  }
}

const readTree = (given: string, collector: Collector): void => {
  const grammar = collector.parser
  if (grammar === undefined) throw NEEDS_GRAMMAR
  let tree = grammar.parse(given)
  if (tree !== null) {
    const joined = joinContinuations(tree.rootNode, given)
    if (joined !== given) {
      tree.delete()
      tree = grammar.parse(joined)
    }
  }
  if (tree === null) {
    collector.unparsed ??= "bash cannot parse it"
    return
  }
  try {
    if (collector.depth === 0) collector.numeric = Evaluation.numericNames(tree.rootNode)
    const apart = misread(tree.rootNode, tree.rootNode.text)
    if (apart.unparsed !== undefined) {
      collector.unparsed ??= apart.unparsed
      return
    }
    walk(tree.rootNode, collector)
    if (tree.rootNode.hasError) collector.unparsed ??= "bash cannot parse it"
    // A line that cannot be parsed is checked whole already.
    else if (apart.opaque !== undefined) collector.opaque.push({ resource: collector.within ?? given, reason: apart.opaque })
  } finally {
    tree.delete()
  }
}

/** `text` read into a fresh collector with `grammar`; undefined where it needs the grammar and was given none. */
const readLine = (text: string, grammar: Parser | undefined, plain: boolean): Parsed | undefined => {
  const collector: Collector = {
    parser: grammar,
    plain,
    depth: 0,
    within: undefined,
    commands: [],
    statements: [],
    open: [],
    ended: { count: 0 },
    opaque: [],
    unparsed: undefined,
    defines: false,
    numeric: new Set(),
    line: text,
  }
  try {
    read(text, collector)
  } catch (cause) {
    if (cause === NEEDS_GRAMMAR) return undefined
    throw cause
  }
  const { commands, statements, opaque, unparsed, defines } = collector
  return { text, commands, statements, opaque, unparsed, defines }
}

/** Reads `text` now, when it can be without loading the grammar (a plain line, or the grammar already loaded). */
export const parseNow = (text: string): Parsed | undefined => readLine(text, ready, true)

/**
 * Reads a command line: a line of plain words (and the plain code such a line gives `bash -c`) without the grammar,
 * any other with it. `grammar` reads every line with the grammar (the tests compare the two).
 */
export const parse = (text: string, grammar = false): Effect.Effect<Parsed> =>
  Effect.suspend(() => {
    const read = grammar ? undefined : readLine(text, ready, true)
    if (read !== undefined) return Effect.succeed(read)
    return Effect.promise(() => (parser ??= loadParser())).pipe(Effect.map((loaded) => readLine(text, loaded, !grammar)!))
  })
