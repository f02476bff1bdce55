export * as Operands from "./operands"

// Which words of a file command name paths: the operands of `rm`, `cp`, `cat` ... after the ones that are not
// paths (a mode, a pattern), the values of options that name files (`cp -t DIR`, `grep -f FILE`), and the start
// points of `find`. Options whose value is not a path (`head -n 5`) are skipped with their value, so an expansion
// there (`head -n "$N"`) is not taken for a path. Each operand says what the command does with it (reads its
// content, changes it, both, or only names it), so a file rule meets it as the file tools would. Pure tables and
// word reading; ./command uses it.

import { Arity } from "./arity"
import { Awk } from "./awk"
import type { Words } from "./words"

type Word = Words.Word

/**
 * What a command does with a path: reads what it holds (`cat`, a copy's source, a link's target: whatever lets its
 * content be seen), changes it (`rm`, `touch`, a copy's target), both (`mv`'s sources, `sed -i`), or only names it
 * (`cd`, `ls`, `stat`, `find`'s start points: names and metadata, not content).
 */
export type Access = "read" | "write" | "both" | "none"

/** A path a file command names. */
export interface Operand {
  readonly word: Word
  /** Whether the command writes to it as output (`find -fprint FILE`), like a redirection. */
  readonly writes: boolean
  readonly access: Access
  /** Changed with everything under it, when it is a directory (`rm -r`, `chmod -R`, `find DIR -delete`). */
  readonly deep?: boolean
  /** A copy's or move's target: what it receives, each changed as `TARGET/NAME` when the target is a directory. */
  readonly sources?: ReadonlyArray<Word>
}

interface FileCommand {
  /**
   * What it does with its operands (default "read"); "copy": the last operand is written and the others read
   * (unless a target option names where they go: then they are all read); "move": the same, the others written too;
   * "output": the first is read, a second (where given) written (`uniq IN OUT`).
   */
  readonly access?: Access | "copy" | "move" | "output"
  /** Options that make it change its operands in place (`sed -i`): then they are read and written. */
  readonly inPlace?: RegExp
  /** Options that leave its operands as they are (`gzip -c` writes to stdout): then they are only read. */
  readonly unchanged?: RegExp
  /** Options that make it change whole directories (`rm -r`, `chmod -R`). */
  readonly recursive?: RegExp
  /** Leading operands that are not paths (the mode of `chmod`, the pattern of `grep`). */
  readonly skip?: number
  /** Options that give what the skipped operands would (`grep -e PATTERN`): with one, nothing is skipped. */
  readonly instead?: ReadonlyArray<string>
  /**
   * Options whose value is the next word: "path" when it names a file whose content is read, "target" when it
   * names where the operands go (written), "name" when only the file's name or metadata is used, "value" when it
   * names no file.
   */
  readonly options?: Readonly<Record<string, "path" | "target" | "name" | "value">>
  /** How many operands are paths, when the rest are not (`source FILE ARGS...`). */
  readonly paths?: number
}

const COPY_OPTIONS = { "-t": "target", "--target-directory": "target", "-S": "value", "--suffix": "value" } as const
/** `-R`, `--recursive`, or `-R` in a group of short options. */
const RECURSIVE_R = /^(-[A-Za-z]*R[A-Za-z]*|--recursive)$/
const OWNER: FileCommand = { access: "write", skip: 1, instead: ["--reference"], recursive: RECURSIVE_R }
/** A compressor: it replaces each file with its compressed (or expanded) form, unless told to write to stdout. */
const COMPRESSOR: FileCommand = {
  access: "both",
  unchanged: /^(-[A-Za-z]*[ctl][A-Za-z]*|--stdout|--to-stdout|--list|--test)$/,
  options: { "-S": "value", "--suffix": "value", "-b": "value", "-T": "value", "--threads": "value", "-o": "target", "--output": "target" },
}

const FILE_COMMANDS: Readonly<Record<string, FileCommand>> = {
  // The file a shell reads and runs: outside the Location, it is asked about like any file read there.
  source: { paths: 1 },
  ".": { paths: 1 },
  cd: { access: "none" },
  pushd: { access: "none" },
  ls: { access: "none", options: { "-I": "value", "--ignore": "value", "-w": "value", "--width": "value", "-T": "value" } },
  cat: {},
  head: { options: { "-n": "value", "--lines": "value", "-c": "value", "--bytes": "value" } },
  tail: {
    options: { "-n": "value", "--lines": "value", "-c": "value", "--bytes": "value", "-s": "value", "--pid": "value" },
  },
  less: {},
  more: {},
  stat: { access: "none", options: { "-c": "value", "--format": "value", "--printf": "value" } },
  file: { options: { "-m": "path", "-f": "path", "-F": "value" } },
  du: { access: "none", options: { "-d": "value", "--max-depth": "value", "-B": "value", "-t": "value", "-X": "path" } },
  wc: {},
  diff: { options: { "-x": "value", "-X": "path", "-I": "value", "-U": "value", "-C": "value", "-L": "value", "-F": "value" } },
  touch: { access: "write", options: { "-r": "name", "--reference": "name", "-d": "value", "--date": "value", "-t": "value" } },
  mkdir: { access: "write", options: { "-m": "value", "--mode": "value" } },
  rm: { access: "write", recursive: /^(-[A-Za-z]*[rR][A-Za-z]*|--recursive)$/ },
  rmdir: { access: "write" },
  unlink: { access: "write" },
  cp: { access: "copy", options: COPY_OPTIONS },
  mv: { access: "move", options: COPY_OPTIONS },
  // A link's target is read: a hard link to a file is another name for its content (and so changes it: below).
  ln: { access: "copy", options: COPY_OPTIONS },
  link: { access: "copy" },
  install: {
    access: "copy",
    options: { "-t": "target", "--target-directory": "target", "-S": "value", "-m": "value", "-o": "value", "-g": "value" },
  },
  tee: { access: "write" },
  mkfifo: { access: "write", options: { "-m": "value", "--mode": "value", "-Z": "value", "--context": "value" } },
  mknod: { access: "write", paths: 1, options: { "-m": "value", "--mode": "value", "-Z": "value", "--context": "value" } },
  dd: {},
  sort: {
    options: {
      "-o": "target", "--output": "target", "-k": "value", "--key": "value", "-t": "value", "--field-separator": "value",
      "-S": "value", "--buffer-size": "value", "-T": "target", "--temporary-directory": "target", "--parallel": "value",
      "--files0-from": "path", "--random-source": "path", "--compress-program": "value",
    },
  },
  shuf: { options: { "-o": "target", "--output": "target", "-n": "value", "--head-count": "value", "-i": "value", "--input-range": "value", "--random-source": "path" } },
  iconv: { options: { "-o": "target", "--output": "target", "-f": "value", "--from-code": "value", "-t": "value", "--to-code": "value" } },
  // `--group` and `--all-repeated` take a value only attached (`--group=append`): the next word is an operand.
  uniq: { access: "output", options: { "-f": "value", "--skip-fields": "value", "-s": "value", "--skip-chars": "value", "-w": "value", "--check-chars": "value" } },
  gzip: COMPRESSOR,
  gunzip: COMPRESSOR,
  bzip2: COMPRESSOR,
  bunzip2: COMPRESSOR,
  xz: COMPRESSOR,
  unxz: COMPRESSOR,
  lzma: COMPRESSOR,
  zstd: COMPRESSOR,
  unzstd: COMPRESSOR,
  lz4: COMPRESSOR,
  compress: COMPRESSOR,
  rsync: {
    access: "copy",
    options: {
      "--exclude": "value", "--include": "value", "--exclude-from": "path", "--include-from": "path", "--files-from": "path",
      "-f": "value", "--filter": "value", "--chmod": "value", "--chown": "value", "-B": "value", "--block-size": "value",
      "--rsync-path": "value", "--password-file": "path", "--log-file": "name", "--partial-dir": "value", "-T": "value",
      "--temp-dir": "value", "--compare-dest": "value", "--copy-dest": "value", "--link-dest": "value", "--backup-dir": "value",
      "--suffix": "value", "--max-size": "value", "--min-size": "value", "--timeout": "value", "--port": "value", "--bwlimit": "value",
    },
  },
  truncate: { access: "write", options: { "-s": "value", "--size": "value", "-r": "name", "--reference": "name" } },
  shred: { access: "write", options: { "-n": "value", "--iterations": "value", "-s": "value", "--size": "value" } },
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
    inPlace: /^(-[A-Za-z]*i|--in-place)/,
    skip: 1,
    instead: ["-e", "--expression", "-f", "--file"],
    options: { "-e": "value", "--expression": "value", "-f": "path", "--file": "path", "-l": "value" },
  },
}

/** Whether `name` is a command whose operands this module reads. */
export const isFileCommand = (name: string): boolean => name === "find" || Object.hasOwn(FILE_COMMANDS, name)

/** Options of `find` that write their output to the file given as their value. */
const FIND_OUTPUTS = ["-fprint", "-fprint0", "-fprintf", "-fls"]

/** Options of `find` that run a command on what it finds. */
const FIND_EXECS = ["-exec", "-execdir", "-ok", "-okdir"]

/** Whether a command run on what find found (`{}`) changes it: a file command that changes its operands. */
const changesFound = (words: ReadonlyArray<Word>): boolean => {
  const name = words[0]?.value
  if (name === undefined || !Object.hasOwn(FILE_COMMANDS, name)) return false
  return of(name, words).some((operand) => operand.word.value?.includes("{}") === true && operand.access !== "read" && operand.access !== "none")
}

/** `find`: its start points (the operands before the expression) and the files `-fprint` and the like write. */
const find = (words: ReadonlyArray<Word>): Array<Operand> => {
  const found: Array<Operand> = []
  let index = 1
  // Its own options come first: -H, -L, -P, -D debugopts, -Olevel.
  while (index < words.length && /^-([HLP]|O\d*|D)$/.test(words[index]!.value ?? "")) {
    index += words[index]!.value === "-D" ? 2 : 1
  }
  const starts: Array<Word> = []
  for (; index < words.length; index++) {
    const value = words[index]!.value ?? words[index]!.text
    if (value.startsWith("-") || ["(", "!", ")", ","].includes(value)) break
    starts.push(words[index]!)
  }
  // `-delete`, or a command that changes what it is given (`-exec truncate -s0 {} ;`): everything under the start
  // points may change.
  let changes = false
  for (; index < words.length; index++) {
    const value = words[index]!.value ?? ""
    if (FIND_OUTPUTS.includes(value) && index + 1 < words.length) {
      found.push({ word: words[++index]!, writes: true, access: "write" })
    } else if (value === "-delete") changes = true
    else if (FIND_EXECS.includes(value)) {
      let end = index + 1
      while (end < words.length && words[end]!.value !== ";" && words[end]!.value !== "+") end++
      changes ||= changesFound(words.slice(index + 1, end))
      index = end
    }
  }
  // Without a start point find searches `.`.
  const points = starts.length > 0 ? starts : [{ text: ".", value: ".", glob: false, tilde: false }]
  return [...points.map((word): Operand => (changes ? { word, writes: false, access: "write", deep: true } : { word, writes: false, access: "none" })), ...found]
}

/** What an option's kind of value means for the file it names. */
const OPTION_ACCESS = { path: "read", target: "write", name: "none" } as const satisfies Record<string, Access>

/** `dd`: the file `if=` reads and the one `of=` writes. */
const dd = (words: ReadonlyArray<Word>): Array<Operand> =>
  words.slice(1).flatMap((word): Array<Operand> => {
    const operand = /^(if|of)=(.*)$/s.exec(word.value ?? word.text)
    if (operand === null) return []
    const path = operand[2]!
    const named = { ...word, text: path, value: word.value === undefined ? undefined : path, tilde: path.startsWith("~") }
    return [{ word: named, writes: false, access: operand[1] === "if" ? "read" : "write" }]
  })

/** Long options that matter as flags alone (what they do to the operands), besides those with a value. */
const FLAG_LONGS = ["--in-place", "--recursive", "--stdout", "--to-stdout", "--list", "--test", "--remove-source-files"]

/**
 * A long option as getopt takes it: written whole, or any start of one known name (`--in` is `--in-place`,
 * `--out=x` is `--output=x`); an ambiguous start is as written (getopt refuses it, and the command runs nothing).
 */
const longOf = (value: string, spec: FileCommand): string => {
  if (!value.startsWith("--") || value === "--") return value
  const at = value.indexOf("=")
  const given = at === -1 ? value : value.slice(0, at)
  const known = [...Object.keys(spec.options ?? {}), ...FLAG_LONGS].filter((option) => option.startsWith("--"))
  if (known.includes(given)) return value
  const matches = known.filter((option) => option.startsWith(given))
  return matches.length === 1 ? matches[0]! + (at === -1 ? "" : value.slice(at)) : value
}

/** The paths among the words of a file command (its name first), with what it does to each; none for any other command. */
export const of = (name: string, written: ReadonlyArray<Word>): Array<Operand> => {
  if (name === "find") return find(written)
  if (name === "dd") return dd(written)
  if (!Object.hasOwn(FILE_COMMANDS, name)) return []
  const spec = FILE_COMMANDS[name]!
  // Options by their whole names, up to `--`.
  const end = written.findIndex((word) => word.value === "--")
  const words = written.map((word, index) =>
    word.value === undefined || (end !== -1 && index > end) ? word : { ...word, value: longOf(word.value, spec) },
  )
  const options = spec.options ?? {}
  const given = (word: Word) => {
    const value = word.value ?? ""
    return (spec.instead ?? []).some((option) => value === option || value.startsWith(`${option}=`))
  }
  let skip = words.slice(1).some(given) ? 0 : (spec.skip ?? 0)
  let left = spec.paths ?? Number.POSITIVE_INFINITY
  let parsingOptions = true
  let targeted = false
  const found: Array<Operand> = []
  const positional: Array<Word> = []
  const option = (word: Word, kind: "path" | "target" | "name", attached?: string) => {
    if (kind === "target") targeted = true
    const named = attached === undefined ? word : { ...word, text: attached, value: attached, tilde: false }
    found.push({ word: named, writes: false, access: OPTION_ACCESS[kind] })
  }
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
        if (short !== "value") option(word, short, value.slice(2))
        continue
      }
      if (kind !== undefined) {
        index++
        if (kind !== "value" && index < words.length) option(words[index]!, kind)
        continue
      }
      // A group of short options (`-vt DIR`, `-uoOUT`): the first that takes a value takes the rest of the group,
      // or the next word.
      if (!value.startsWith("--") && /^-[A-Za-z0-9]{2,}/.test(value)) {
        const at = [...value.slice(1)].findIndex((letter) => Object.hasOwn(options, `-${letter}`))
        if (at !== -1) {
          const grouped = options[`-${value[at + 1]}`]!
          const rest = value.slice(at + 2)
          if (rest !== "") {
            if (grouped !== "value") option(word, grouped, rest)
          } else {
            index++
            if (grouped !== "value" && index < words.length) option(words[index]!, grouped)
          }
          continue
        }
      }
      // `--target-directory=/x`: a path given as an option's attached value (one that looks like a path, unless
      // the option is known to take one).
      const attached = /^(--[^=]+)=(.*)$/.exec(value)
      const kindOf = attached === null ? undefined : Object.hasOwn(options, attached[1]!) ? options[attached[1]!] : undefined
      if (attached !== null && kindOf !== "value") {
        const path = attached[2]!
        if (word.value === undefined) {
          if (kindOf !== undefined) option(word, kindOf)
        } else if (kindOf !== undefined || /^[/~.]/.test(path)) {
          // Bash leaves a `~` after `--option=` as it is.
          option(word, kindOf ?? "path", path)
        }
      }
      continue
    }
    if (skip > 0) {
      skip--
      continue
    }
    // `-` is stdin (or stdout): no path, but where operands are counted (`uniq - OUT`) it still takes its place.
    if (value === "-" && spec.access !== "output") continue
    if (left-- <= 0) break
    positional.push(word)
  }
  // `ln SOURCE` alone links SOURCE's name in the working directory (`ln -sf e/core.json` makes ./core.json): that is
  // the operand it writes, a name known only when the source's is.
  if (name === "ln" && !targeted && positional.length === 1) {
    const source = positional[0]!
    const made = source.value === undefined ? undefined : linkName(source.value)
    found.push({ word: source, writes: false, access: "read" })
    found.push({ word: { ...source, text: made ?? source.text, value: made }, writes: false, access: "write", sources: [source] })
    return found
  }
  const has = (pattern: RegExp | undefined) => pattern !== undefined && words.slice(1).some((word) => pattern.test(word.value ?? ""))
  const inPlace = has(spec.inPlace)
  const access = inPlace ? "both" : has(spec.unchanged) ? "read" : (spec.access ?? "read")
  const deep = has(spec.recursive)
  // `rsync --remove-source-files` moves.
  const moving = access === "move" || (name === "rsync" && has(/^--remove-source-files$/))
  const copying = access === "copy" || moving
  // Where a copy goes: the target option's directory, else its last operand; what it receives, the others.
  const target = copying ? (targeted ? found.findIndex((operand) => operand.access === "write") : -1) : -1
  const sources = copying ? (targeted ? positional : positional.slice(0, -1)) : []
  if (target !== -1) found[target] = { ...found[target]!, sources }
  // A hard link is another name through which its file can be changed: linking is changing it (`ln yarn.lock y`).
  const hardLink =
    ((name === "ln" && !has(/^(-[A-Za-z]*s[A-Za-z]*|--symbolic)$/)) || name === "link" || (name === "cp" && has(/^(-[A-Za-z]*l[A-Za-z]*|--link)$/)))
  positional.forEach((word, index) => {
    if (word.value === "-") return
    const last = index === positional.length - 1 && !targeted
    const each: Access =
      moving || hardLink
        ? last ? "write" : "both"
        : access === "copy" ? (last ? "write" : "read") : access === "output" ? (index === 0 ? "read" : "write") : access
    // What is moved, or linked file by file (`cp -al keep elsewhere`), changes whole: every file under it.
    const whole = (deep && each !== "read") || ((moving || hardLink) && !last)
    found.push({ word, writes: false, access: each, ...(whole ? { deep: true } : {}), ...(copying && last ? { sources } : {}) })
  })
  return found
}

/** The name `ln SOURCE` gives its link in the working directory: the source's last part (`e/tools/` → tools). */
const linkName = (source: string): string => {
  const trimmed = source.replace(/\/+$/, "")
  return trimmed.slice(trimmed.lastIndexOf("/") + 1)
}

/** Programs that name no file with their arguments, however they look (`echo /etc/passwd` prints a string). */
const NO_FILES: ReadonlySet<string> = new Set([
  "echo", "printf", "true", "false", "test", "[", "expr", "seq", "sleep", "basename", "dirname", "export", "declare",
  "local", "readonly", "typeset", "unset", "set", "shift", "exit", "return", "kill", "wait", "type", "which", "hash",
  "alias", "unalias", "let", "read", "getopts", "trap", "eval", "date", "id", "whoami", "uname", "hostname", "pwd",
])

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
 * Whether a word may brace-expand into paths: it starts with `{`, or a `{` not after `$` has a `,` after it before any
 * `}`. Read in one pass, as the model writes the word and a pattern trying every `{` up to the end took seconds.
 */
const braceList = (text: string): boolean => {
  if (text.startsWith("{")) return true
  let open = false
  for (let index = 1; index < text.length; index++) {
    const char = text[index]
    if (char === "}") open = false
    else if (char === "{" && text[index - 1] !== "$") open = true
    else if (char === "," && open) return true
  }
  return false
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
  let program = Awk.NAMES.has(name) && !words.some((word) => /^(-f|-e|--file|--source)/.test(word.value ?? ""))
  const found: Array<Operand> = []
  for (let index = 1; index < end; index++) {
    const word = words[index]!
    if (word.value === undefined) {
      // `/etc/$F`, `~/$F`: a place known only when it runs.
      if (/^(\/|~\/|\.\.\/|[A-Za-z_][\w.-]*=\/|--?[A-Za-z][\w-]*=\/)|\.\.\//.test(word.text) || braceList(word.text)) {
        found.push({ word, writes: false, access: "read" })
      }
      continue
    }
    if (program && !word.value.startsWith("-")) {
      program = false
      continue
    }
    // `--output=FILE` (or any start of it that getopt takes, `--outp=`): a file the program writes (`git diff
    // --output=x`, `git log --output x`).
    const output = /^--out(?:p(?:u(?:t)?)?)?(?:-file)?(?:=(.*))?$/s.exec(word.value)
    if (output !== null) {
      const target = output[1] !== undefined ? { ...word, text: output[1], value: output[1], tilde: false } : words[index + 1]
      if (output[1] === undefined) index++
      if (target !== undefined && target.value !== "") found.push({ word: target, writes: true, access: "write" })
      continue
    }
    const place = placeIn(word.value)
    if (place !== undefined) {
      found.push({ word: { ...word, text: place, value: place, tilde: place.startsWith("~") }, writes: false, access: "read" })
    }
  }
  return found
}

/**
 * The words of a program not in the file table that may name a file it reads, whatever their form: each literal
 * argument, an option's attached value (`--file=x`, `-fx`) and a `key=value`'s value (`dd if=x`), up to the command
 * a wrapper runs (read on its own); none for programs that name no file, and not an awk program. The caller keeps
 * those that name an existing file: `base64 app.env`, `xxd app.env` and `dd if=app.env` read it, whatever the
 * table knows of them.
 */
export const named = (name: string, words: ReadonlyArray<Word>): Array<string> => {
  if (NO_FILES.has(name) || isFileCommand(name)) return []
  let end = words.length
  const wrapper = Arity.wrapperOf(words, name)
  if (wrapper !== undefined) end = Arity.wrappedIndex(words, wrapper.wrapper, wrapper.length) ?? words.length
  let program = Awk.NAMES.has(name) && !words.some((word) => /^(-f|-e|--file|--source)/.test(word.value ?? ""))
  const found: Array<string> = []
  for (let index = 1; index < end; index++) {
    const value = words[index]!.value
    if (value === undefined || value === "") continue
    if (program && !value.startsWith("-")) {
      program = false
      continue
    }
    found.push(value)
    const attached = /^(?:--?[A-Za-z][\w-]*=|[A-Za-z_][\w.-]*=|-[A-Za-z])(.+)$/s.exec(value)?.[1]
    if (attached !== undefined) found.push(attached)
    // `HEAD:app.env`: a revision's copy of a file (git show, git cat-file) is that file's content too.
    const revision = /^[^:/\s]*:(?!\/\/)(.+)$/s.exec(value)?.[1]
    if (revision !== undefined) found.push(revision)
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
