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
  return /\{[^{},]*,[^{}]*\}/.test(unquoted) || sequence(unquoted)
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

/** Decodes a word node. */
export const of = (node: Node): Word => {
  const decoded = braced(node.text) ? undefined : literal(node)
  const first = node.type === "concatenation" ? node.namedChild(0) : node
  return {
    text: node.text,
    value: decoded?.value,
    glob: decoded?.glob ?? false,
    tilde: first?.type === "word" && first.text.startsWith("~"),
  }
}
