export * as Operands from "./operands"

// Which words of a file command name paths: the operands of `rm`, `cp`, `cat` ... after the ones that are not
// paths (a mode, a pattern), the values of options that name files (`cp -t DIR`, `grep -f FILE`), and the start
// points of `find`. Options whose value is not a path (`head -n 5`) are skipped with their value, so an expansion
// there (`head -n "$N"`) is not taken for a path. Pure tables and word reading; ./command uses it.

import { Arity } from "./arity"
import type { Words } from "./words"

type Word = Words.Word

/** A path a file command names. */
export interface Operand {
  readonly word: Word
  /** Whether the command writes to it as output (`find -fprint FILE`), like a redirection. */
  readonly writes: boolean
}

interface FileCommand {
  /** Leading operands that are not paths (the mode of `chmod`, the pattern of `grep`). */
  readonly skip?: number
  /** Options that give what the skipped operands would (`grep -e PATTERN`): with one, nothing is skipped. */
  readonly instead?: ReadonlyArray<string>
  /** Options whose value is the next word: "path" when it names a file, "value" when it does not. */
  readonly options?: Readonly<Record<string, "path" | "value">>
  /** How many operands are paths, when the rest are not (`source FILE ARGS...`). */
  readonly paths?: number
}

const COPY: FileCommand = { options: { "-t": "path", "--target-directory": "path", "-S": "value", "--suffix": "value" } }
const OWNER: FileCommand = { skip: 1, instead: ["--reference"] }

const FILE_COMMANDS: Readonly<Record<string, FileCommand>> = {
  // The file a shell reads and runs: outside the Location, it is asked about like any file read there.
  source: { paths: 1 },
  ".": { paths: 1 },
  cd: {},
  pushd: {},
  ls: { options: { "-I": "value", "--ignore": "value", "-w": "value", "--width": "value", "-T": "value" } },
  cat: {},
  head: { options: { "-n": "value", "--lines": "value", "-c": "value", "--bytes": "value" } },
  tail: {
    options: { "-n": "value", "--lines": "value", "-c": "value", "--bytes": "value", "-s": "value", "--pid": "value" },
  },
  less: {},
  more: {},
  stat: { options: { "-c": "value", "--format": "value", "--printf": "value" } },
  file: { options: { "-m": "path", "-f": "path", "-F": "value" } },
  du: { options: { "-d": "value", "--max-depth": "value", "-B": "value", "-t": "value", "-X": "path" } },
  wc: {},
  diff: { options: { "-x": "value", "-X": "path", "-I": "value", "-U": "value", "-C": "value", "-L": "value", "-F": "value" } },
  touch: { options: { "-r": "path", "--reference": "path", "-d": "value", "--date": "value", "-t": "value" } },
  mkdir: { options: { "-m": "value", "--mode": "value" } },
  rm: {},
  rmdir: {},
  unlink: {},
  cp: COPY,
  mv: COPY,
  ln: COPY,
  install: {
    options: { "-t": "path", "--target-directory": "path", "-S": "value", "-m": "value", "-o": "value", "-g": "value" },
  },
  tee: {},
  truncate: { options: { "-s": "value", "--size": "value", "-r": "path", "--reference": "path" } },
  shred: { options: { "-n": "value", "--iterations": "value", "-s": "value", "--size": "value" } },
  chmod: OWNER,
  chown: OWNER,
  chgrp: OWNER,
  grep: {
    skip: 1,
    instead: ["-e", "--regexp", "-f", "--file"],
    options: {
      "-e": "value",
      "--regexp": "value",
      "-f": "path",
      "--file": "path",
      "-m": "value",
      "--max-count": "value",
      "-A": "value",
      "-B": "value",
      "-C": "value",
      "-d": "value",
      "-D": "value",
      "--label": "value",
    },
  },
  sed: {
    skip: 1,
    instead: ["-e", "--expression", "-f", "--file"],
    options: { "-e": "value", "--expression": "value", "-f": "path", "--file": "path", "-l": "value" },
  },
}

/** Whether `name` is a command whose operands this module reads. */
export const isFileCommand = (name: string): boolean => name === "find" || Object.hasOwn(FILE_COMMANDS, name)

/** Options of `find` that write their output to the file given as their value. */
const FIND_OUTPUTS = ["-fprint", "-fprint0", "-fprintf", "-fls"]

/** `find`: its start points (the operands before the expression) and the files `-fprint` and the like write. */
const find = (words: ReadonlyArray<Word>): Array<Operand> => {
  const found: Array<Operand> = []
  let index = 1
  // Its own options come first: -H, -L, -P, -D debugopts, -Olevel.
  while (index < words.length && /^-([HLP]|O\d*|D)$/.test(words[index]!.value ?? "")) {
    index += words[index]!.value === "-D" ? 2 : 1
  }
  for (; index < words.length; index++) {
    const value = words[index]!.value ?? words[index]!.text
    if (value.startsWith("-") || ["(", "!", ")", ","].includes(value)) break
    found.push({ word: words[index]!, writes: false })
  }
  for (; index < words.length; index++) {
    if (FIND_OUTPUTS.includes(words[index]!.value ?? "") && index + 1 < words.length) {
      found.push({ word: words[++index]!, writes: true })
    }
  }
  return found
}

/** The paths among the words of a file command (its name first); none for any other command. */
export const of = (name: string, words: ReadonlyArray<Word>): Array<Operand> => {
  if (name === "find") return find(words)
  if (!Object.hasOwn(FILE_COMMANDS, name)) return []
  const spec = FILE_COMMANDS[name]!
  const options = spec.options ?? {}
  const given = (word: Word) => {
    const value = word.value ?? ""
    return (spec.instead ?? []).some((option) => value === option || value.startsWith(`${option}=`))
  }
  let skip = words.slice(1).some(given) ? 0 : (spec.skip ?? 0)
  let left = spec.paths ?? Number.POSITIVE_INFINITY
  let parsingOptions = true
  const found: Array<Operand> = []
  for (let index = 1; index < words.length; index++) {
    const word = words[index]!
    // An expansion that starts with a dash (`-$FLAGS`) is taken for options.
    const value = word.value ?? (word.text.startsWith("-") ? word.text : undefined)
    if (parsingOptions && value === "--") {
      parsingOptions = false
      continue
    }
    if (parsingOptions && value !== undefined && value.startsWith("-") && value !== "-") {
      const kind = Object.hasOwn(options, value) ? options[value]! : undefined
      // `-t/dir`: a short option with its value attached.
      const short = value.length > 2 && !value.startsWith("--") && Object.hasOwn(options, value.slice(0, 2)) ? options[value.slice(0, 2)] : undefined
      if (kind === undefined && short !== undefined) {
        const path = value.slice(2)
        if (short === "path") found.push({ word: { ...word, text: path, value: path, tilde: false }, writes: false })
        continue
      }
      if (kind !== undefined) {
        index++
        if (kind === "path" && index < words.length) found.push({ word: words[index]!, writes: false })
        continue
      }
      // `--target-directory=/x`: a path given as an option's attached value (one that looks like a path, unless
      // the option is known to take one).
      const attached = /^(--[^=]+)=(.*)$/.exec(value)
      const kindOf = attached === null ? undefined : Object.hasOwn(options, attached[1]!) ? options[attached[1]!] : undefined
      if (attached !== null && kindOf !== "value") {
        const path = attached[2]!
        if (word.value === undefined) {
          if (kindOf === "path") found.push({ word, writes: false })
        } else if (kindOf === "path" || /^[/~.]/.test(path)) {
          // Bash leaves a `~` after `--option=` as it is.
          found.push({ word: { ...word, text: path, value: path, tilde: false }, writes: false })
        }
      }
      continue
    }
    if (skip > 0) {
      skip--
      continue
    }
    if (value === "-") continue
    if (left-- <= 0) break
    found.push({ word, writes: false })
  }
  return found
}

/** Programs that name no file with their arguments, however they look (`echo /etc/passwd` prints a string). */
const NO_FILES: ReadonlySet<string> = new Set([
  "echo", "printf", "true", "false", "test", "[", "expr", "seq", "sleep", "basename", "dirname", "export", "declare",
  "local", "readonly", "typeset", "unset", "set", "shift", "exit", "return", "kill", "wait", "type", "which", "hash",
  "alias", "unalias", "let", "read", "getopts", "trap", "eval", "date", "id", "whoami", "uname", "hostname", "pwd",
])

const AWKS: ReadonlySet<string> = new Set(["awk", "gawk", "mawk", "nawk"])

/** A value that names a place outside the working directory's subtree: absolute, in a home, or up a level. */
const PLACE = /^(\/|~([/]|$))|(^|\/)\.\.(\/|$)/

/** The path inside a word that may name one: the word, an option's attached value, or a `key=value`'s value. */
const placeIn = (value: string): string | undefined => {
  if (value.startsWith("file://")) return value.slice("file://".length)
  if (PLACE.test(value)) return value
  // `-cf/x`: a group of short options whose last takes the rest of the word.
  const grouped = /^-[A-Za-z]+((?:\/|~|\.\.\/).*)$/s.exec(value)?.[1]
  if (grouped !== undefined) return grouped
  const attached = /^(?:--?[A-Za-z][\w-]*=|[A-Za-z_][\w.-]*=|-[A-Za-z])(.+)$/s.exec(value)?.[1]
  if (attached === undefined) return undefined
  if (attached.startsWith("file://")) return attached.slice("file://".length)
  return PLACE.test(attached) ? attached : undefined
}

/**
 * The paths a program that is not in the file table may touch, read from how its words look: every word that is
 * absolute, starts with `~` or `..`, or gives one as an option's or a `key=value`'s value (`dd if=/x`, `sort -o
 * /x`, `--file=/x`); a word holding an expansion after such a start cannot be known. A wrapper's own words are
 * read up to the command it runs (which is read on its own), and an awk program is not a path.
 */
export const guessed = (name: string, words: ReadonlyArray<Word>): Array<Operand> => {
  if (NO_FILES.has(name)) return []
  let end = words.length
  const wrapper = Arity.wrapperOf(words, name)
  if (wrapper !== undefined) end = Arity.wrappedIndex(words, wrapper.wrapper, wrapper.length) ?? words.length
  let program = AWKS.has(name) && !words.some((word) => /^(-f|-e|--file|--source)/.test(word.value ?? ""))
  const found: Array<Operand> = []
  for (let index = 1; index < end; index++) {
    const word = words[index]!
    if (word.value === undefined) {
      // `/etc/$F`, `~/$F`: a place known only when it runs.
      if (/^(\/|~\/|\.\.\/|[A-Za-z_][\w.-]*=\/|--?[A-Za-z][\w-]*=\/)|\.\.\//.test(word.text) || /^\{|[^$]\{[^}]*,/.test(word.text)) {
        found.push({ word, writes: false })
      }
      continue
    }
    if (program && !word.value.startsWith("-")) {
      program = false
      continue
    }
    const place = placeIn(word.value)
    if (place !== undefined) found.push({ word: { ...word, text: place, value: place, tilde: place.startsWith("~") }, writes: false })
  }
  return found
}

/** The path an assignment (`F=/etc`, `export F=~/x`) gives a variable, when it names a place outside the subtree. */
export const assigned = (text: string): Word | undefined => {
  const value = /^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=(.*)$/s.exec(text)?.[1]
  if (value === undefined) return undefined
  const unquoted = /^(['"])(.*)\1$/s.exec(value)?.[2] ?? value
  if (!PLACE.test(unquoted)) return undefined
  // Read as written: an expansion inside makes it unknown, as any path would be.
  const literal = !/[$`]/.test(unquoted)
  return { text: unquoted, value: literal ? unquoted : undefined, glob: false, tilde: unquoted.startsWith("~") }
}
