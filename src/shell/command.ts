export * as CommandLine from "./command"

// Reads a bash command line for permission checks: tree-sitter's bash grammar finds every simple command, however
// deeply it is nested (lists, pipelines, subshells, substitutions, heredocs), so each is checked on its own; a
// line the grammar cannot read, or whose command names are not literal, is checked as a whole under the
// `<unparsed>` marker that no prefix rule matches. It also finds the paths file commands and redirections touch.
// It decides nothing and spawns nothing: ../builtin/bash.ts asks the permission service.

import { homedir } from "node:os"
import { basename, dirname, resolve } from "node:path"
import * as Effect from "effect/Effect"
import type { Node, Parser } from "web-tree-sitter"
import treeSitterWasm from "web-tree-sitter/tree-sitter.wasm" with { type: "file" }
import bashWasm from "tree-sitter-bash/tree-sitter-bash.wasm" with { type: "file" }
import { Arity } from "./arity"

/**
 * Opens the resource of a command line that is checked as a whole. A parsed command's resource starts with its
 * literal name or an assignment, never with `<` (a redirection in bash), so only a rule naming the marker, or one
 * starting with a wildcard, can match it.
 */
export const UNPARSED = "<unparsed>"

/** Commands whose operands are paths (after `skip` leading operands such as a mode or a pattern). */
const FILE_COMMANDS: Readonly<Record<string, number>> = {
  cd: 0,
  pushd: 0,
  ls: 0,
  cat: 0,
  head: 0,
  tail: 0,
  less: 0,
  more: 0,
  stat: 0,
  file: 0,
  du: 0,
  wc: 0,
  diff: 0,
  find: 0,
  touch: 0,
  mkdir: 0,
  rm: 0,
  rmdir: 0,
  unlink: 0,
  cp: 0,
  mv: 0,
  ln: 0,
  install: 0,
  tee: 0,
  truncate: 0,
  shred: 0,
  chmod: 1,
  chown: 1,
  chgrp: 1,
  grep: 1,
  sed: 1,
}

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

/** One word of a command. */
export interface Word {
  /** As written, quotes and all. */
  readonly text: string
  /** Its value when it has no expansion (quotes removed, escapes applied), else undefined. */
  readonly value: string | undefined
  /** Whether an unquoted `*`, `?` or `[` makes it a pattern. */
  readonly glob: boolean
  /** Whether it starts with an unquoted `~` (the home directory). */
  readonly tilde: boolean
}

/** A simple command (or a declaration, test or bare assignment) found in the line. */
export interface Simple {
  readonly kind: "command" | "declaration" | "test" | "assignment"
  /** `NAME=value` words before the command, as written. */
  readonly assignments: ReadonlyArray<string>
  /** The command name first (its value is always a literal), then its arguments. Empty for an assignment. */
  readonly words: ReadonlyArray<Word>
  /** The node's own text, for tests and assignments. */
  readonly text: string
}

export interface Parsed {
  /** The line as given. */
  readonly text: string
  readonly commands: ReadonlyArray<Simple>
  /** Targets of file redirections (`> out.txt`), which the line writes or reads wherever the command runs. */
  readonly redirects: ReadonlyArray<Word>
  /** Why the line cannot be checked command by command; undefined when it can. */
  readonly unparsed: string | undefined
}

/** One resource to check under the `bash` action, and what an "always" reply saves for it. */
export interface Check {
  readonly resource: string
  /** Undefined when nothing can be saved without approving more than was asked (the text holds `*` or `?`). */
  readonly save: string | undefined
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

// Decoding words

const GLOB = /[*?[]/

const unescapeUnquoted = (text: string): { value: string; glob: boolean } => {
  let value = ""
  let glob = false
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!
    if (char === "\\") {
      const next = text[index + 1]
      index++
      if (next === undefined || next === "\n") continue
      value += next
      continue
    }
    if (GLOB.test(char)) glob = true
    value += char
  }
  return { value, glob }
}

const unescapeDoubleQuoted = (text: string): string => text.replace(/\\([\\"$`\n])/g, (_, char: string) => (char === "\n" ? "" : char))

interface Literal {
  readonly value: string
  readonly glob: boolean
}

/** The literal value of a word node, or undefined when it holds an expansion or substitution. */
const literal = (node: Node): Literal | undefined => {
  switch (node.type) {
    case "word":
    case "number":
      return unescapeUnquoted(node.text)
    case "raw_string":
      return { value: node.text.slice(1, -1), glob: false }
    case "string": {
      let value = ""
      for (const child of node.namedChildren) {
        if (child === null || child.type !== "string_content") return undefined
        value += unescapeDoubleQuoted(child.text)
      }
      return { value, glob: false }
    }
    case "concatenation": {
      let value = ""
      let glob = false
      for (const child of node.namedChildren) {
        const part = child === null ? undefined : literal(child)
        if (part === undefined) return undefined
        value += part.value
        glob ||= part.glob
      }
      return { value, glob }
    }
    default:
      return undefined
  }
}

const wordOf = (node: Node): Word => {
  const decoded = literal(node)
  const first = node.type === "concatenation" ? node.namedChild(0) : node
  return {
    text: node.text,
    value: decoded?.value,
    glob: decoded?.glob ?? false,
    tilde: first?.type === "word" && first.text.startsWith("~"),
  }
}

// Walking the tree

interface Collector {
  readonly commands: Array<Simple>
  readonly redirects: Array<Word>
  unparsed: string | undefined
}

const isRedirect = (type: string) => type === "file_redirect" || type === "herestring_redirect" || type === "heredoc_redirect"

/**
 * A redirection's target, and the words the grammar attached to it that are really the command's arguments
 * (`echo > out hi` runs `echo hi`).
 */
const redirection = (node: Node, collector: Collector): Array<Word> => {
  if (node.type === "file_redirect") {
    const [target, ...rest] = node.childrenForFieldName("destination").filter((child) => child !== null)
    const operator = node.children.find((child) => child !== null && !child.isNamed)?.text ?? ""
    // `2>&1` and `>&-` name descriptors, not files.
    const duplicates = operator.endsWith("&") && (target?.type === "number" || target?.text === "-")
    if (target !== undefined && !duplicates) collector.redirects.push(wordOf(target))
    return rest.map(wordOf)
  }
  if (node.type === "heredoc_redirect") {
    return node.childrenForFieldName("argument").filter((child) => child !== null).map(wordOf)
  }
  return []
}

const simple = (node: Node, extra: ReadonlyArray<Word>, collector: Collector) => {
  const assignments: Array<string> = []
  const words: Array<Word> = []
  let named = false
  let literal = true
  for (const child of node.namedChildren) {
    if (child === null) continue
    if (child.type === "variable_assignment") assignments.push(child.text)
    else if (child.type === "command_name") {
      const name = child.namedChild(0)
      const word = name === null ? undefined : wordOf(name)
      if (word === undefined || word.value === undefined || word.value === "" || word.glob) {
        collector.unparsed ??= `the command name ${child.text} is not a literal word`
        literal = false
      } else words.push(word)
      named = true
    } else if (isRedirect(child.type)) words.push(...redirection(child, collector))
    else if (named) words.push(wordOf(child))
  }
  // A command without a literal name is checked with the whole line; its redirections were still collected.
  if (!named || !literal) return
  words.push(...extra)
  collector.commands.push({ kind: "command", assignments, words, text: node.text })
}

const declaration = (node: Node, collector: Collector) => {
  const [keyword, ...rest] = node.children.filter((child) => child !== null)
  if (keyword === undefined) return
  collector.commands.push({
    kind: "declaration",
    assignments: [],
    words: [{ text: keyword.text, value: keyword.text, glob: false, tilde: false }, ...rest.map(wordOf)],
    text: node.text,
  })
}

const walk = (node: Node, collector: Collector, extra: ReadonlyArray<Word> = []): void => {
  if (node.isError || node.isMissing) collector.unparsed ??= "bash cannot parse it"
  switch (node.type) {
    case "command":
      simple(node, extra, collector)
      break
    case "redirected_statement": {
      const body = node.childForFieldName("body")
      const more: Array<Word> = []
      for (const redirect of node.childrenForFieldName("redirect")) {
        if (redirect !== null) more.push(...redirection(redirect, collector))
      }
      if (more.length > 0 && body?.type !== "command") collector.unparsed ??= "it gives arguments after a redirection"
      if (body !== null) walk(body, collector, more)
      for (const child of node.children) if (child !== null && child.id !== body?.id) walk(child, collector)
      return
    }
    case "declaration_command":
    case "unset_command":
      declaration(node, collector)
      break
    case "test_command":
      collector.commands.push({ kind: "test", assignments: [], words: [], text: node.text })
      break
    case "variable_assignment":
      // A bare assignment (`PATH=/x`) changes what later commands run: it is checked like a command.
      if (!["command", "declaration_command", "variable_assignments"].includes(node.parent?.type ?? "")) {
        collector.commands.push({ kind: "assignment", assignments: [], words: [], text: node.text })
      }
      break
    case "variable_assignments":
      collector.commands.push({ kind: "assignment", assignments: [], words: [], text: node.text })
      break
    case "file_redirect":
    case "heredoc_redirect":
      // Inside a command these were read with it; elsewhere (a redirected compound statement) here.
      if (node.parent?.type !== "command" && node.parent?.type !== "redirected_statement") redirection(node, collector)
      break
  }
  for (const child of node.children) if (child !== null) walk(child, collector)
}

/** Reads a command line. */
export const parse = (text: string): Effect.Effect<Parsed> =>
  Effect.promise(() => (parser ??= loadParser())).pipe(
    Effect.map((loaded) => {
      const tree = loaded.parse(text)
      const collector: Collector = { commands: [], redirects: [], unparsed: undefined }
      if (tree === null) collector.unparsed = "bash cannot parse it"
      else {
        try {
          walk(tree.rootNode, collector)
          if (tree.rootNode.hasError) collector.unparsed ??= "bash cannot parse it"
        } finally {
          tree.delete()
        }
      }
      return { text, commands: collector.commands, redirects: collector.redirects, unparsed: collector.unparsed }
    }),
  )

// Permission resources

/** The text itself as a pattern, unless a wildcard in it would approve more than the text. */
const exact = (text: string): string | undefined => (/[*?]/.test(text) ? undefined : text)

/** Where the command a wrapper runs starts among `words` (the wrapper first), if it names one. */
const wrappedIndex = (words: ReadonlyArray<Word>, wrapper: Arity.Wrapper): number | undefined => {
  let operands = wrapper.operands
  for (let index = 1; index < words.length; index++) {
    const value = words[index]!.value
    if (value === undefined) return index
    if (value === "--") continue
    if (wrapper.valued.includes(value)) {
      index++
      continue
    }
    if (value.startsWith("-")) continue
    if (wrapper.assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(value)) continue
    if (operands > 0) {
      operands--
      continue
    }
    return index
  }
  return undefined
}

const textOf = (assignments: ReadonlyArray<string>, words: ReadonlyArray<Word>): string =>
  [...assignments, words[0]!.value!, ...words.slice(1).map((word) => word.text)].join(" ")

/** The pattern an "always" saves for a command: its prefix and ` *`, or the exact command. */
const saveFor = (assignments: ReadonlyArray<string>, words: ReadonlyArray<Word>): string | undefined => {
  const text = textOf(assignments, words)
  const name = words[0]!.value!
  if (Arity.INTERPRETERS.has(name)) return exact(text)
  const wrapper = Object.hasOwn(Arity.WRAPPERS, name) ? Arity.WRAPPERS[name]! : undefined
  if (wrapper !== undefined) {
    const index = wrappedIndex(words, wrapper)
    const inner = index === undefined ? undefined : saveFor([], words.slice(index))
    if (inner === undefined || !inner.endsWith(" *")) return exact(text)
    const outer = [...assignments, name, ...words.slice(1, index).map((word) => word.text)].join(" ")
    return /[*?]/.test(outer) ? exact(text) : `${outer} ${inner}`
  }
  const length = Arity.prefixLength(words.map((word) => word.value))
  if (length === undefined) return exact(text)
  const prefix = [...assignments, ...words.slice(0, length).map((word) => word.value!)].join(" ")
  return /[*?]/.test(assignments.join(" ")) ? exact(text) : `${prefix} *`
}

/**
 * The checks for one command: its own text; the command a wrapper runs (`sudo rm x` is also `rm x`); and a
 * command named by a path also under its base name (`/bin/rm x` is also `rm x`), so rules about a command cannot
 * be stepped around.
 */
const checksFor = (assignments: ReadonlyArray<string>, words: ReadonlyArray<Word>): Array<Check> => {
  const checks: Array<Check> = [{ resource: textOf(assignments, words), save: saveFor(assignments, words) }]
  const name = words[0]!.value!
  if (name.includes("/") && basename(name) !== "" && basename(name) !== name) {
    const renamed = [{ ...words[0]!, value: basename(name) }, ...words.slice(1)]
    checks.push({ resource: textOf([], renamed), save: saveFor([], renamed) })
  }
  const wrapper = Object.hasOwn(Arity.WRAPPERS, basename(name)) ? Arity.WRAPPERS[basename(name)]! : undefined
  if (wrapper !== undefined) {
    const index = wrappedIndex(words, wrapper)
    if (index !== undefined && words[index]!.value !== undefined && words[index]!.value !== "") {
      checks.push(...checksFor([], words.slice(index)))
    }
  }
  return checks
}

/** Whether a wrapper runs a command it names by an expansion (`sudo $CMD`), which cannot be checked. */
const runsUnknown = (words: ReadonlyArray<Word>): boolean => {
  const name = basename(words[0]!.value!)
  const wrapper = Object.hasOwn(Arity.WRAPPERS, name) ? Arity.WRAPPERS[name]! : undefined
  if (wrapper === undefined) return false
  const index = wrappedIndex(words, wrapper)
  if (index === undefined) return false
  const value = words[index]!.value
  return value === undefined || value === "" || words[index]!.glob || runsUnknown(words.slice(index))
}

/**
 * What the `bash` action is checked on: each command's text with the prefix an "always" saves, and for a line
 * that cannot be read command by command, the whole line under UNPARSED (saved only as itself). Commands found in
 * an unreadable line are checked too, so a rule denying one of them still applies.
 */
export const checks = (parsed: Parsed): ReadonlyArray<Check> => {
  const found: Array<Check> = []
  let unknown = parsed.unparsed !== undefined
  for (const command of parsed.commands) {
    if (command.kind === "test") {
      const opener = command.text.startsWith("[[") ? "[[" : "["
      found.push({ resource: command.text, save: `${opener} *` })
    } else if (command.kind === "assignment") {
      found.push({ resource: command.text, save: exact(command.text) })
    } else {
      if (runsUnknown(command.words)) unknown = true
      found.push(...checksFor(command.assignments, command.words))
    }
  }
  if (unknown) {
    const whole = `${UNPARSED} ${parsed.text.trim()}`
    found.unshift({ resource: whole, save: exact(whole) })
  }
  const seen = new Set<string>()
  return found.filter((check) => !seen.has(check.resource) && seen.add(check.resource))
}

/** The paths the line's file commands and redirections name, as words. `cd` alone names the home directory. */
export const paths = (parsed: Parsed): ReadonlyArray<Word> => {
  const found: Array<Word> = [...parsed.redirects]
  const home: Word = { text: "~", value: "~", glob: false, tilde: true }
  const visit = (words: ReadonlyArray<Word>) => {
    const name = basename(words[0]!.value!)
    const wrapper = Object.hasOwn(Arity.WRAPPERS, name) ? Arity.WRAPPERS[name]! : undefined
    if (wrapper !== undefined) {
      const index = wrappedIndex(words, wrapper)
      if (index !== undefined && words[index]!.value !== undefined) visit(words.slice(index))
      return
    }
    if (!Object.hasOwn(FILE_COMMANDS, name)) return
    let skip = FILE_COMMANDS[name]!
    let options = true
    let operands = 0
    for (const word of words.slice(1)) {
      const value = word.value
      if (value === undefined) continue
      if (options && value === "--") {
        options = false
        continue
      }
      if (options && value.startsWith("-") && value !== "-") {
        // `--target-directory=/x`: a path given as an option's value.
        const attached = /^--[^=]+=([/~.].*)$/.exec(value)
        if (attached !== null) found.push({ ...word, value: attached[1]!, tilde: attached[1]!.startsWith("~") })
        continue
      }
      if (skip > 0) {
        skip--
        continue
      }
      if (value === "-") continue
      operands++
      found.push(word)
    }
    if (operands === 0 && (name === "cd" || name === "pushd") && words.length === 1) found.push(home)
  }
  for (const command of parsed.commands) if (command.kind === "command") visit(command.words)
  return found
}

/**
 * The absolute path a path word points at from `workdir` (`~` expanded; for a pattern, the directory its
 * matches lie in), or undefined when it cannot be known before running (`~user`) or names a device.
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
    const at = value.search(GLOB)
    const before = value.slice(0, at)
    value = before.endsWith("/") ? before : dirname(before === "" ? "." : before)
  }
  const absolute = resolve(workdir, value)
  if (DEVICES.has(absolute) || absolute.startsWith("/dev/fd/") || absolute.startsWith("/proc/self/fd/")) return undefined
  return absolute
}
