export * as Words from "./words"

// The words of a bash command as the grammar gives them: each word's text as written, and its value when it has
// no expansion (quotes removed, escapes applied), whether an unquoted wildcard makes it a pattern and whether it
// starts with an unquoted `~`. Pure decoding of tree-sitter nodes; it never decides what a word means.

import type { Node } from "web-tree-sitter"

/** One word of a command. */
export interface Word {
  /** As written, quotes and all. */
  readonly text: string
  /** Its value when it has no expansion (quotes removed, escapes applied), else undefined. */
  readonly value: string | undefined
  /** Whether an unquoted `*`, `?` or `[` makes it a pattern. */
  readonly glob: boolean
  /** Whether it starts with an unquoted `~` (a home directory). */
  readonly tilde: boolean
  /**
   * Where bash brace-expands it (`-r{f,}` is `-rf -r`): the plain words it makes, in order, when each has a value and
   * there are at most MOST_BRACED of them; undefined otherwise (and for every word that does not brace-expand).
   */
  readonly braces?: ReadonlyArray<Braced> | undefined
}

/** One word brace expansion makes: its value, and whether an unquoted wildcard makes it a pattern. */
export interface Braced {
  readonly value: string
  readonly glob: boolean
}

/** The characters that make an unquoted word a pattern. */
export const GLOB = /[*?[]/

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
      // Only blanks between the quotes make no content node: the value is the blanks (`" "` is one space to bash).
      if (node.namedChildren.length === 0) return { value: unescapeDoubleQuoted(node.text.slice(1, -1)), glob: false }
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

/**
 * Whether bash would brace-expand the word (`{/etc,x}/passwd` is two words): an unquoted, unescaped `{` then `,`
 * then `}`. Such a word has no single value. The test takes the first `,` after a `{`, so it reads each character
 * once: the model writes the word, and letting any `,` be the one took seconds on `{` and 100,000 commas.
 */
const braced = (text: string): boolean => {
  const unquoted = text.replace(/\\./gs, "__").replace(/'[^']*'|"(?:\\.|[^"\\])*"/gs, (quoted) => "_".repeat(quoted.length))
  // A `}` right after the `{` is text to bash (`x{},a}` is `x}` and `xa`).
  return /\{\}?[^{},]*,[^{}]*\}/.test(unquoted) || sequence(unquoted)
}

/**
 * Whether `text` holds a sequence expression (`{1..3}`, `{o..o}`): a `{` then `..` before the next brace, which is
 * `}`. Each stretch between braces is read once.
 */
const sequence = (text: string): boolean => {
  const braces = /[{}]/g
  let open = -1
  for (let found = braces.exec(text); found !== null; found = braces.exec(text)) {
    if (found[0] === "}" && open !== -1 && text.slice(open + 1, found.index).includes("..")) return true
    open = found[0] === "{" ? found.index : -1
  }
  return false
}

/** The most words one word's braces may make for core to list them (each then checked as written so). */
export const MOST_BRACED = 256
/** A word longer than this is not brace-expanded here: its braces leave it unknown. */
const MOST_BRACED_TEXT = 1024

/**
 * Which characters of `text` bash reads as text (true), not as syntax: those in quotes (the quotes too), a backslash
 * and what it escapes, and `${…}`, `$(…)` and `` `…` `` (whose insides are no braces of the word's).
 */
const literalMask = (text: string): Array<boolean> => {
  const mask = new Array<boolean>(text.length).fill(false)
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!
    let end = index
    if (char === "\\") end = index + 1
    else if (char === "'") end = text.indexOf("'", index + 1)
    else if (char === '"') {
      end = index + 1
      while (end < text.length && text[end] !== '"') end += text[end] === "\\" ? 2 : 1
    } else if (char === "`") end = text.indexOf("`", index + 1)
    else if (char === "$" && (text[index + 1] === "{" || text[index + 1] === "(")) {
      const [open, close] = text[index + 1] === "{" ? ["{", "}"] : ["(", ")"]
      let depth = 0
      for (end = index + 1; end < text.length; end++) {
        if (text[end] === open) depth++
        else if (text[end] === close && --depth === 0) break
      }
    } else continue
    if (end === -1 || end >= text.length) end = text.length - 1
    for (let at = index; at <= end; at++) mask[at] = true
    index = end
  }
  return mask
}

/** The words of a sequence expression's body (`1..3`, `a..e`, `01..10..3`), or undefined where it is none. */
const sequenceOf = (body: string): Array<string> | undefined => {
  const parts = body.split("..")
  if (parts.length !== 2 && parts.length !== 3) return undefined
  const [from, to, by = "1"] = parts as [string, string, string?]
  const integer = /^[-+]?\d+$/
  if (!integer.test(by)) return undefined
  const numbers = integer.test(from) && integer.test(to)
  const letters = /^[A-Za-z]$/.test(from) && /^[A-Za-z]$/.test(to)
  if (!numbers && !letters) return undefined
  const start = numbers ? Number(from) : from.charCodeAt(0)
  const end = numbers ? Number(to) : to.charCodeAt(0)
  const step = Math.abs(Number(by)) || 1
  // Past what a double holds exactly, the count is not known here: unknown (bash's own ends are 64-bit).
  if (![start, end, step].every(Number.isSafeInteger)) return undefined
  const count = Math.floor(Math.abs(end - start) / step) + 1
  if (count > MOST_BRACED) return undefined
  // As bash pads: to the width of an end written with a leading zero (`{01..10}`, `{1..010}`, `{-01..1}`).
  const padded = (end: string) => (/^-?0\d/.test(end) ? end.length : 0)
  const width = numbers ? Math.max(padded(from), padded(to)) : 0
  const made: Array<string> = []
  for (let index = 0; index < count; index++) {
    const at = start <= end ? start + index * step : start - index * step
    if (!numbers) made.push(String.fromCharCode(at))
    else made.push(at < 0 ? `-${String(-at).padStart(width - 1, "0")}` : String(at).padStart(width, "0"))
  }
  return made
}

/** The most unquoted `{` a word may hold for core to expand it (each may start a brace expression). */
const MOST_OPENINGS = 64
/** The most texts `expandBraces` looks through for one word, past which the word is unknown. */
const MOST_STEPS = 2_048

/**
 * The texts bash makes of `text` by brace expansion (`a{b,c}d` is `abd acd`; nested and sequence expressions too),
 * at most MOST_BRACED, or undefined where there would be more, or where finding them would take more than
 * `budget.steps` texts looked through. A text with no brace expression is itself.
 */
const expandBraces = (text: string, budget = { steps: MOST_STEPS }): Array<string> | undefined => {
  if (--budget.steps < 0) return undefined
  const mask = literalMask(text)
  for (let open = 0; open < text.length; open++) {
    if (text[open] !== "{" || mask[open]) continue
    let depth = 0
    let close = -1
    const commas: Array<number> = []
    // A `}` right after the `{` is text to bash (`x{},a}` is `x}` and `xa`).
    const first = text[open + 1] === "}" && !mask[open + 1] ? open + 2 : open + 1
    for (let at = first; at < text.length && close === -1; at++) {
      if (mask[at]) continue
      const char = text[at]
      if (char === "{") depth++
      else if (char === "}") {
        if (depth === 0) close = at
        else depth--
      } else if (char === "," && depth === 0) commas.push(at)
    }
    if (close === -1) continue
    const bounds = [open, ...commas, close]
    const alternatives =
      commas.length > 0 ? bounds.slice(0, -1).map((from, index) => text.slice(from + 1, bounds[index + 1])) : sequenceOf(text.slice(open + 1, close))
    if (alternatives === undefined) continue
    const made: Array<string> = []
    for (const alternative of alternatives) {
      const more = expandBraces(text.slice(0, open) + alternative + text.slice(close + 1), budget)
      if (more === undefined || made.push(...more) > MOST_BRACED) return undefined
    }
    return made
  }
  return [text]
}

/**
 * The value of a word's text with no expansion left in it (quotes removed, escapes applied), and whether an unquoted
 * `*`, `?` or `[` makes it a pattern; undefined where it holds an expansion.
 */
const plainValue = (text: string): Braced | undefined => {
  let value = ""
  let glob = false
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!
    if (char === "\\") {
      const next = text[++index]
      if (next !== undefined && next !== "\n") value += next
    } else if (char === "'") {
      const end = text.indexOf("'", index + 1)
      if (end === -1) return undefined
      value += text.slice(index + 1, end)
      index = end
    } else if (char === '"') {
      let end = index + 1
      while (end < text.length && text[end] !== '"') end += text[end] === "\\" ? 2 : 1
      const inside = text.slice(index + 1, end)
      if (end >= text.length || /[$`]/.test(inside)) return undefined
      value += unescapeDoubleQuoted(inside)
      index = end
    } else if (char === "$" || char === "`") return undefined
    else {
      glob ||= GLOB.test(char)
      value += char
    }
  }
  return { value, glob }
}

/** The plain words bash makes of a word by brace expansion (Word.braces), or undefined. */
const bracesOf = (text: string): ReadonlyArray<Braced> | undefined => {
  if (text.length > MOST_BRACED_TEXT) return undefined
  let openings = 0
  for (const char of text) if (char === "{" && ++openings > MOST_OPENINGS) return undefined
  const texts = expandBraces(text)
  if (texts === undefined || (texts.length === 1 && texts[0] === text)) return undefined
  // An empty word left unquoted is no word to bash (`git {push,} x` is `git push x`).
  const values = texts.filter((made) => made !== "").map(plainValue)
  return values.every((value) => value !== undefined) ? (values as Array<Braced>) : undefined
}

/** Decodes a word node. */
export const of = (node: Node): Word => {
  const expands = braced(node.text)
  const decoded = expands ? undefined : literal(node)
  const first = node.type === "concatenation" ? node.namedChild(0) : node
  return {
    text: node.text,
    value: decoded?.value,
    glob: decoded?.glob ?? false,
    tilde: first?.type === "word" && first.text.startsWith("~"),
    ...(expands ? { braces: bracesOf(node.text) } : {}),
  }
}

/** Whether bash brace-expands the word (its value is then unknown, and Word.braces may list what it makes). */
export const expands = (word: Word): boolean => "braces" in word
