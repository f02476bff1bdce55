export * as Runs from "./runs"

// What a command runs besides itself, read from its words: the command a wrapper or `find -exec` runs, the bash
// code a shell, `eval` or `trap` is given as literal text (read like the line itself), and why what it runs cannot
// be known from the line when it cannot (code in an expansion, code in another language, code fed on stdin). Pure:
// it reads words and decides nothing; ./command walks what it finds and ../builtin/bash asks about it.

import { basename, posix } from "node:path"
import { Arity } from "./arity"
import { Awk } from "./awk"
import { Operands } from "./operands"
import { Sed } from "./sed"
import type { Words } from "./words"

type Word = Words.Word

export interface Inner {
  /** Commands it runs, as words (`sudo rm x` runs `rm x`). */
  readonly commands: ReadonlyArray<ReadonlyArray<Word>>
  /** Bash code it runs, given as literal text (`bash -c 'rm x'`, `eval "rm x"`, `trap 'rm x' EXIT`). */
  readonly code: ReadonlyArray<string>
  /** Why what it runs cannot be known before it runs; undefined when it can. */
  readonly opaque: string | undefined
  /**
   * Whether `code` is all the command does (`bash -c '…'`, `bash -lc '…'` with options that change nothing it
   * runs): then the command is judged as that code, unwrapped.
   */
  readonly unwrapped?: boolean
}

/**
 * The arguments a command gets from its input (`xargs CMD`, `parallel CMD`): appended to the command it runs, so
 * that a command needing a name or a path from them (`xargs env`, `xargs cat`) cannot be known either.
 */
export const INPUT: Word = { text: "<input>", value: undefined, glob: false, tilde: false }

/** Words a command is given with its input in place of a marker (`xargs -I{} rm {}`): known only when it runs. */
const marked = new WeakSet<Word>()

/** Whether a word of a command that runs holds what the command's input gives it (INPUT, or a marker's place). */
export const fromInput = (word: Word): boolean => word === INPUT || marked.has(word)

/** `words` with each word holding `marker` read as what the input puts there, its text kept for the rules. */
const replaced = (words: ReadonlyArray<Word>, marker: string): ReadonlyArray<Word> =>
  words.map((word, index) => {
    if (index === 0 || !(word.value ?? "").includes(marker)) return word
    const given: Word = { ...word, value: undefined }
    marked.add(given)
    return given
  })

const NOTHING: Inner = { commands: [], code: [], opaque: undefined }
const opaque = (reason: string): Inner => ({ commands: [], code: [], opaque: reason })
const code = (text: string): Inner => ({ commands: [], code: [text], opaque: undefined })

/** Shells whose code the bash grammar reads faithfully, so a literal `-c` string is checked command by command. */
const BASH_LIKE: ReadonlySet<string> = new Set(["bash", "sh", "dash", "ash"])
/** Shells with syntax of their own (zsh's glob qualifiers run code, fish is another language): read only when plain. */
const OTHER_SHELLS: ReadonlySet<string> = new Set(["zsh", "ksh", "mksh", "fish"])
/** Of those, the ones whose plain code (see PLAIN) means what it means to bash. */
const POSIX_LIKE: ReadonlySet<string> = new Set(["zsh", "ksh", "mksh"])
/**
 * Code with none of the characters that start zsh's or ksh's own syntax (glob qualifiers, `=(…)`, `$`, history,
 * braces, patterns): words, quotes, pipes, lists and redirections only, which every one of them reads as bash does.
 */
const PLAIN = /^[A-Za-z0-9_\s.\/\-:,@%+'"|;&<>]*$/
/**
 * What plain code may still hold that those shells read differently: `=cmd` (a program's path), a lone `-`
 * (run with a login argv0), precommand modifiers and builtins of their own (`noglob rm x` runs `rm x`; `zmodload`,
 * `zpty`, `sched` run or load code).
 */
const NOT_PLAIN = /(^|[\s;&|'"])(=|-(?=[\s;&|]|$))|(^|[^\w-])(noglob|nocorrect|zmodload|zpty|sched|autoload|emulate|zsystem|sysopen|builtin|whence|functions|disable|enable|unhash|hash|alias|bindkey|zle|zcompile|zstyle|vared|r|nohup|command|exec)(?![\w-])/
/**
 * A shell's options that change nothing about what its `-c` code runs: a login shell (`-l`, which reads the
 * user's own profile, outside the Location), errexit, nounset, xtrace, verbose, pipefail and the like.
 */
const QUIET_SHELL_OPTIONS = /^(-[clexuvpr]+|\+[exuv]+|--login|--noprofile|--norc|--posix|--noediting)$/
/** Values of `-o` that change nothing about what runs. */
const QUIET_SET_OPTIONS: ReadonlySet<string> = new Set(["pipefail", "errexit", "nounset", "xtrace", "verbose", "posix", "noclobber", "noglob", "errtrace", "functrace"])
/** A shell's options that only print something (`-v` and `-h` are not: they are bash's verbose and hashall). */
const SHELL_INFORMATIONAL = ["--version", "--help"]

/** An interpreter of another language, whose code core cannot read. */
interface Interpreter {
  /** Options whose value is code (`python -c CODE`, `node -e CODE`). */
  readonly code: ReadonlyArray<string>
  /** Options whose value is the next word and is not code (`python -W ignore`). */
  readonly valued: ReadonlyArray<string>
  /**
   * Letters that may be grouped behind one dash (`perl -ne CODE`): a group holding a code letter holds code,
   * unless a letter before it takes the rest of the group as its value (`-Mstrict`, `-Wdefault`). Empty when the
   * interpreter does not group options.
   */
  readonly grouped: { readonly code: string; readonly valued: string }
  /** Options after which it runs no code from stdin (`python -m mod`, `node --test`, `--version`). */
  readonly standalone: ReadonlyArray<string>
  /** Whether, given no script, it reads its program from stdin (which the line may feed: `echo … | python3`). */
  readonly stdin: boolean
}

const UNGROUPED = { code: "", valued: "" }

const PYTHON: Interpreter = {
  code: ["-c"],
  valued: ["-W", "-X", "-Q"],
  grouped: { code: "c", valued: "WXQm" },
  standalone: ["-m", "-V", "--version", "-h", "--help", "-?"],
  stdin: true,
}
const NODE: Interpreter = {
  code: ["-e", "--eval", "-p", "--print"],
  valued: ["-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions"],
  grouped: { code: "ep", valued: "rC" },
  standalone: ["--test", "--run", "--v8-options", "-v", "--version", "-h", "--help"],
  stdin: true,
}

const INTERPRETERS: Readonly<Record<string, Interpreter>> = {
  python: PYTHON,
  python2: PYTHON,
  python3: PYTHON,
  pypy: PYTHON,
  pypy3: PYTHON,
  node: NODE,
  nodejs: NODE,
  bun: { code: ["-e", "--eval", "-p", "--print"], valued: [], grouped: UNGROUPED, standalone: [], stdin: false },
  perl: {
    code: ["-e", "-E"],
    valued: ["-I", "-M", "-m"],
    // `-l` and `-0` take only digits, so `-lane` still holds `-e`.
    grouped: { code: "eE", valued: "IMmxiCdD" },
    standalone: ["-v", "--version", "-h", "--help"],
    stdin: true,
  },
  ruby: {
    code: ["-e"],
    valued: ["-I", "-r", "-C", "-E"],
    grouped: { code: "e", valued: "IrCEixKTW0" },
    standalone: ["--version", "-h", "--help"],
    stdin: true,
  },
  php: {
    code: ["-r", "-R", "-B", "-E"],
    valued: ["-c", "-d", "-z"],
    grouped: UNGROUPED,
    standalone: ["-v", "--version", "-h", "--help", "-i", "-m", "-l", "-S"],
    stdin: true,
  },
  lua: { code: ["-e"], valued: ["-l"], grouped: UNGROUPED, standalone: ["-v"], stdin: true },
  luajit: { code: ["-e"], valued: ["-l", "-j", "-O"], grouped: UNGROUPED, standalone: ["-v"], stdin: true },
  Rscript: { code: ["-e"], valued: [], grouped: UNGROUPED, standalone: [], stdin: false },
}

/** Whether a group of single-letter options (`-ne`) holds a code option. */
const groupHoldsCode = (value: string, grouped: Interpreter["grouped"]): boolean => {
  if (!/^-[A-Za-z]/.test(value) || value.startsWith("--")) return false
  for (const letter of value.slice(1)) {
    if (grouped.code.includes(letter)) return true
    if (grouped.valued.includes(letter)) return false
  }
  return false
}

/**
 * A script path that is the process's own input or an inherited descriptor, however it is spelled (`/dev/./stdin`,
 * `/dev/stdin/.`, `/proc/self/./fd/0`; from a relative path, enough `..` reach `/`): its code is fed by the line.
 */
const FED = /^(\/|(\.\.\/)*)(dev\/(stdin|fd\/\d+)|proc\/(self|thread-self|\d+)\/fd\/\d+)$/

const fedPath = (path: string): boolean => FED.test(posix.normalize(path))

const fed = (word: Word): boolean => word.value !== undefined && fedPath(word.value)

/** Programs that read a program from a file (`make -f`, `awk -f`, `sed -f`, `jq --from-file`). */
const PROGRAM_FILE_READERS: ReadonlySet<string> = new Set(["make", "gmake", "remake", "bmake", "sed", "m4", "gawk", "awk", "mawk", "nawk", "jq"])

/**
 * Whether their program file is what the line feeds them: a fed path anywhere, or as a program file (attached or
 * the next word) standard input (`-`) or what an expansion names (`<(echo …)`).
 */
export const programFed = (args: ReadonlyArray<Word>): boolean => {
  for (let index = 0; index < args.length; index++) {
    const word = args[index]!
    if (fed(word)) return true
    const value = word.value
    if (value === undefined) continue
    // Long options by any start of their name, as getopt takes them (`--fil=/dev/stdin`).
    const long = longOption(value, "file", "makefile", "from-file")
    const attached = /^-[A-Za-z]*f(.+)$/s.exec(value)?.[1] ?? (long ? /^--[a-z-]+=(.*)$/s.exec(value)?.[1] : undefined)
    if (attached !== undefined) {
      if (attached === "-" || fedPath(attached)) return true
      continue
    }
    if (/^-[A-Za-z]*f$/.test(value) || long) {
      const next = args[index + 1]
      if (next !== undefined && (next.value === undefined || next.value === "-" || fedPath(next.value))) return true
    }
  }
  return false
}

/** Whether every word is a literal: then the values are what runs. */
const literal = (words: ReadonlyArray<Word>): boolean => words.every((word) => word.value !== undefined)

const joined = (words: ReadonlyArray<Word>): string => words.map((word) => word.value!).join(" ")

/** The options before a command's first operand, and its operands (everything from the first operand on). */
const split = (
  words: ReadonlyArray<Word>,
  valued: ReadonlyArray<string>,
): { readonly options: ReadonlyArray<Word>; readonly operands: ReadonlyArray<Word> } => {
  const options: Array<Word> = []
  for (let index = 1; index < words.length; index++) {
    const word = words[index]!
    const value = word.value ?? word.text
    if (value === "--") return { options, operands: words.slice(index + 1) }
    if (value === "-" || !/^[-+]/.test(value)) return { options, operands: words.slice(index) }
    options.push(word)
    if (valued.includes(value) && index + 1 < words.length) options.push(words[++index]!)
  }
  return { options, operands: [] }
}

const has = (options: ReadonlyArray<Word>, names: ReadonlyArray<string>) =>
  options.some((option) => option.value !== undefined && names.includes(option.value))

/** A shell: `-c` code (read when bash-like and literal), a script file, or code from stdin. */
const shell = (name: string, words: ReadonlyArray<Word>): Inner => {
  // `-o`, `-O` and their `+` forms take a value, also at the end of a group (`-eo pipefail`).
  const options: Array<Word> = []
  let operands: ReadonlyArray<Word> = []
  let command = false
  let stdin = false
  let quiet = true
  for (let index = 1; index < words.length; index++) {
    const word = words[index]!
    const value = word.value
    if (value !== undefined && /^[-+]/.test(value) && value !== "-" && value !== "--") {
      const setting = /^[-+][A-Za-z]*o$/.test(value) ? words[index + 1]?.value : undefined
      quiet &&= QUIET_SHELL_OPTIONS.test(value.replace(/o$/, "")) || value === "-o" || value === "+o"
      if (/o$/.test(value) && !value.startsWith("--")) quiet &&= setting !== undefined && QUIET_SET_OPTIONS.has(setting)
    }
    if (value === undefined) {
      if (word.text.startsWith("-")) return opaque(`its option ${word.text} holds an expansion`)
      operands = words.slice(index)
      break
    }
    if (value === "--") {
      operands = words.slice(index + 1)
      break
    }
    if (value === "-") {
      stdin = true
      operands = words.slice(index + 1)
      break
    }
    if (value.startsWith("--")) {
      options.push(word)
      // fish's `--command CODE` and `--command=CODE`.
      if (value.startsWith("--command")) command = true
      if (["--rcfile", "--init-file", "--command"].includes(value)) index++
      continue
    }
    if (/^[-+][A-Za-z]+$/.test(value)) {
      options.push(word)
      if (value.startsWith("-") && value.includes("c")) command = true
      if (value.startsWith("-") && value.includes("s")) stdin = true
      if (/[oO]$/.test(value)) index++
      continue
    }
    operands = words.slice(index)
    break
  }
  if (command) {
    const text = operands[0]
    if (text === undefined) return opaque(`${name} -c is given its code from elsewhere`)
    if (text.value === undefined) return opaque(`the code given to ${name} -c holds an expansion`)
    const readable = BASH_LIKE.has(name) || (POSIX_LIKE.has(name) && PLAIN.test(text.value) && !NOT_PLAIN.test(text.value))
    if (!readable) return opaque(`${name} code is not read by core`)
    // What follows the code is $0, $1 …: values, never run.
    return { ...code(text.value), unwrapped: quiet && !stdin }
  }
  const script = operands[0]
  if (script === undefined || stdin) {
    return has(options, SHELL_INFORMATIONAL) ? NOTHING : opaque(`${name} reads the code it runs from its standard input`)
  }
  if (script.value === undefined) return opaque(`the script ${name} runs is named by an expansion (${script.text})`)
  if (fed(script)) return opaque(`${name} runs code fed to it through ${script.value}`)
  return NOTHING
}

/** An interpreter of another language: opaque when given code as text or on stdin; a script file is not. */
const foreign = (name: string, spec: Interpreter, words: ReadonlyArray<Word>): Inner => {
  const { options, operands } = split(words, spec.valued)
  for (const option of options) {
    const value = option.value
    if (value === undefined) return opaque(`its option ${option.text} holds an expansion`)
    const flag = spec.code.some((candidate) => value === candidate || value.startsWith(`${candidate}=`))
    if (flag || groupHoldsCode(value, spec.grouped)) return opaque(`${name} runs code given as text, which core does not read`)
  }
  const script = operands[0]
  if (script === undefined || script.value === "-") {
    if (!spec.stdin || has(options, spec.standalone)) return NOTHING
    return opaque(`${name} reads the code it runs from its standard input`)
  }
  if (script.value === undefined) return opaque(`the script ${name} runs is named by an expansion (${script.text})`)
  if (fed(script)) return opaque(`${name} runs code fed to it through ${script.value}`)
  return NOTHING
}

/**
 * awk: its program is code that may write a file or run a command (`print > "f"`, `print | "sh"`, `system()`,
 * ./awk); one that does neither, written out on the line, runs nothing else.
 */
const awk = (name: string, words: ReadonlyArray<Word>): Inner =>
  Awk.runs(words.slice(1).map((word) => word.value))
    ? opaque(`the ${name} program may write files or run commands (print > file, print | command, system()), or is not on the line`)
    : NOTHING

/** The command a wrapper runs, checked like any other; unknown when its name is not a literal word. */
const wrapped = (name: string, words: ReadonlyArray<Word>, replace?: string): Inner => {
  const target = words[0]
  if (target === undefined) return NOTHING
  // `time { rm x; }`: the grammar reads the group as words, and what follows the brace runs.
  if (target.value === "{") return wrapped(name, words.slice(1), replace)
  // `time (sleep 1)`: a subshell, whose commands the walk finds like any other.
  if (/^\([\s\S]*\)$/.test(target.text)) return NOTHING
  if (target.value === undefined || target.value === "" || target.glob) {
    return opaque(`${name} runs a command named by ${target.text}, which is not known before it runs`)
  }
  if (replace !== undefined && target.value.includes(replace)) {
    return opaque(`${name} runs a command named by its input (${target.text})`)
  }
  if (replace !== undefined && COPIERS.has(basename(target.value)) && words.slice(1).some((word) => (word.value ?? word.text).includes(replace))) {
    // `xargs -I{} ln -s {} zap`: a program named by the input gets a new name, which later runs as that program.
    return { commands: [words], code: [], opaque: `${name} copies or links a file named by its input, which may be a program given another name` }
  }
  if (replace !== undefined) {
    // What the command runs with its input in place (`env {}`) must be knowable too.
    const probed = of(words.map((word) => (word.value?.includes(replace) ? INPUT : word)))
    // It is still read as written, so a rule about what it visibly runs holds.
    if (probed.opaque !== undefined) {
      return { commands: [words], code: [], opaque: `${name} runs a command whose own command comes from its input (${probed.opaque})` }
    }
  }
  return { commands: [words], code: [], opaque: undefined }
}

/** Commands that give a file another name (a copy, a link, a move): a program among them runs under the new one. */
const COPIERS: ReadonlySet<string> = new Set(["ln", "link", "cp", "mv", "install", "rsync", "dd", "ditto", "scp", "rename"])

/** `fd … -x CMD …` (and --exec, -X, --exec-batch): the command it runs on each path found, up to `;` or the end. */
const fd = (words: ReadonlyArray<Word>): Inner => {
  const commands: Array<ReadonlyArray<Word>> = []
  for (let index = 1; index < words.length; index++) {
    const value = words[index]!.value ?? words[index]!.text
    const attached = /^--exec(-batch)?=(.*)$/s.exec(value)
    if (!["-x", "--exec", "-X", "--exec-batch"].includes(value) && attached === null) continue
    const start = attached === null ? index + 1 : index
    let end = start
    while (end < words.length && words[end]!.value !== ";") end++
    const command = attached === null ? words.slice(start, end) : [{ ...words[index]!, text: attached[2]!, value: attached[2]! }, ...words.slice(start + 1, end)]
    // Without a placeholder, the paths found are appended to the command.
    const placed = command.some((word) => /\{[/.]*\}|\{\/\/\}/.test(word.value ?? word.text))
    const inner = wrapped("fd", placed ? command : [...command, INPUT], "{")
    if (inner.opaque !== undefined) return { commands: [...commands, ...inner.commands], code: [], opaque: inner.opaque }
    commands.push(...inner.commands)
    index = end
  }
  return { commands, code: [], opaque: undefined }
}

/**
 * `rg --pre CMD` and `--hostname-bin CMD`: a program rg runs (on each file searched, or once), checked as that
 * command and asked, since what it is given comes from the search.
 */
const rg = (words: ReadonlyArray<Word>): Inner => {
  for (let index = 1; index < words.length; index++) {
    const value = words[index]!.value ?? words[index]!.text
    if (value === "--") break
    const attached = /^(--pre|--hostname-bin)=(.*)$/s.exec(value)
    const option = attached?.[1] ?? value
    if (option !== "--pre" && option !== "--hostname-bin") continue
    const given = words[index]!
    const program = attached === null ? words[index + 1] : { ...given, text: attached[2]!, value: given.value === undefined ? undefined : attached[2]! }
    if (program === undefined || program.value === undefined || program.value === "") return opaque(`rg ${option} runs a program that is not known before it runs`)
    return { commands: [[program, INPUT]], code: [], opaque: `rg ${option} runs ${program.value} on what it searches` }
  }
  return NOTHING
}

/** `find … -exec CMD … ;` (and -execdir, -ok, -okdir): each command it runs. */
const find = (words: ReadonlyArray<Word>): Inner => {
  const commands: Array<ReadonlyArray<Word>> = []
  for (let index = 1; index < words.length; index++) {
    if (!["-exec", "-execdir", "-ok", "-okdir"].includes(words[index]!.value ?? "")) continue
    const start = index + 1
    let end = start
    while (end < words.length && words[end]!.value !== ";" && words[end]!.value !== "+") end++
    const inner = wrapped("find", words.slice(start, end), "{}")
    if (inner.opaque !== undefined) return inner
    commands.push(...inner.commands)
    index = end
  }
  return { commands, code: [], opaque: undefined }
}

/**
 * One of git's own programs run by its name (`/usr/lib/git-core/git-push`, or `git-push` with git's exec path on
 * PATH) as the git subcommand it is (`git push …`); undefined for any other command.
 */
export const gitProgram = (words: ReadonlyArray<Word>): ReadonlyArray<Word> | undefined => {
  const subcommand = /^git-([a-z][a-z0-9-]*)$/.exec(basename(words[0]!.value!))?.[1]
  if (subcommand === undefined) return undefined
  const spelled = (value: string): Word => ({ text: value, value, glob: false, tilde: false })
  return [spelled("git"), spelled(subcommand), ...words.slice(1)]
}

/** What `words` (a command with a literal name) runs besides itself. */
export const of = (words: ReadonlyArray<Word>): Inner => {
  const git = gitProgram(words)
  if (git !== undefined) return of(git)
  const name = basename(words[0]!.value!)
  const args = words.slice(1)
  switch (name) {
    case "eval":
      if (args.length === 0) return NOTHING
      return literal(args) ? code(joined(args)) : opaque("eval runs code held in an expansion")
    case "trap": {
      const { operands } = split(words, [])
      // `trap SIGNAL` alone resets it, `trap -p`/`-l` print; `trap - SIGNAL` and `trap '' SIGNAL` run nothing.
      if (operands.length < 2) return NOTHING
      const action = operands[0]!
      if (action.value === undefined) return opaque("trap runs code held in an expansion")
      return action.value === "" || action.value === "-" ? NOTHING : code(action.value)
    }
    case "alias": {
      const found: Array<string> = []
      for (const arg of args) {
        if (arg.value === undefined) return opaque("alias defines code held in an expansion")
        const at = arg.value.indexOf("=")
        if (at > 0) found.push(arg.value.slice(at + 1))
      }
      // Read, so a rule about what it defines still holds, and asked: with expand_aliases (or `bash -i`) the
      // name runs that code in place of the command it looks like.
      return { commands: [], code: found, opaque: found.length > 0 ? "alias makes a command name run other code" : undefined }
    }
    case "source":
    case ".": {
      const script = args[0]
      if (script !== undefined && script.value === undefined) {
        return opaque(`${name} runs a file named by ${script.text}, which is not known before it runs`)
      }
      return script !== undefined && fed(script) ? opaque(`${name} runs code fed to it through ${script.value}`) : NOTHING
    }
    case "coproc":
      // `coproc NAME { …; }`: a name comes before a group only.
      return wrapped(name, args[1]?.value === "{" ? args.slice(1) : args)
    case "find":
      return find(words)
    case "fd":
    case "fdfind":
      return fd(words)
    case "rg":
      return rg(words)
    case "fc":
      // fc runs commands from the history, or an editor on them.
      return args.some((word) => /^-[A-Za-z]*l/.test(word.value ?? "")) ? NOTHING : opaque("fc runs commands from the history")
    case "su":
      return opaque("su runs a shell whose commands come from -c or its standard input")
    case "watch": {
      const { options, operands } = split(words, ["-n", "--interval", "-q", "--equexit"])
      if (has(options, ["-x", "--exec"])) return wrapped(name, operands)
      // Without -x, watch hands its arguments to `sh -c` as one line.
      if (operands.length === 0) return NOTHING
      return literal(operands) ? code(joined(operands)) : opaque("watch runs code held in an expansion")
    }
  }
  if (BASH_LIKE.has(name) || OTHER_SHELLS.has(name)) return shell(name, words)
  // `bun x CMD` runs a program as npx does (a wrapper, below); `bun FILE` runs code.
  if (Object.hasOwn(INTERPRETERS, name) && !(name === "bun" && args[0]?.value === "x")) return foreign(name, INTERPRETERS[name]!, words)
  // A program file fed by the line (`make -f /dev/stdin`, `awk -f <(echo …)`, `sed -f -`).
  if (PROGRAM_FILE_READERS.has(name) && programFed(args)) return opaque(`${name} reads a program fed to it by the line`)
  if (Awk.NAMES.has(name)) return awk(name, words)
  if (name === "deno" && args[0]?.value === "eval") return opaque("deno eval runs code given as text, which core does not read")
  if (RUNS_ITS_OWN.has(name)) return opaque(`${name} runs commands of its own language or schedule, which core does not read`)
  const special = SPECIAL[name]?.(words)
  if (special !== undefined) return special
  const found = Arity.wrapperOf(words, name)
  if (found === undefined) return unknown(name, words)
  const { wrapper, length } = found
  const indexes = Arity.wrappedIndexes(words, wrapper, length)
  const index = indexes[0]
  const options = words.slice(length, index ?? words.length)
  const coded = codeOption(name, words.slice(length))
  if (coded !== undefined) return coded
  if (name === "env" && options.some((word) => /^(-[A-Za-z]*S|--split-string)/.test(word.value ?? word.text))) {
    return opaque("env -S splits a string into the command it runs")
  }
  if ((name === "sudo" || name === "doas") && has(options, ["-s", "-i", "--shell", "--login"])) {
    // A shell: given a command, it runs it as a line (`sudo -s 'a; b'`); given none, it reads stdin.
    if (index === undefined) return opaque(`${name} runs a shell reading commands from its standard input`)
    const rest = words.slice(index)
    return literal(rest) ? code(joined(rest)) : opaque(`${name} runs a shell line held in an expansion`)
  }
  if (name === "runuser" && !has(options, ["-u", "--user"])) {
    // `runuser USER` is su: a login shell reading its standard input.
    return opaque("runuser runs a shell whose commands come from -c or its standard input")
  }
  if (index === undefined) return NOTHING
  if (name === "xargs") {
    const marker = xargsMarker(options)
    // Without a marker, what xargs reads is appended to the command; with one, it takes the marker's place, so the
    // paths the command is given there are as unknown (`xargs -I{} truncate -s0 {}` is `xargs truncate -s0`). A
    // command it puts the input into as code (`sh -c 'rm {}'`) is read as written, so a rule about what it visibly
    // runs holds, and is given the input as well.
    if (marker === undefined) return wrapped(name, [...words.slice(index), INPUT])
    const inner = wrapped(name, words.slice(index), marker)
    const given = (command: ReadonlyArray<Word>) => (inner.opaque === undefined ? replaced(command, marker) : [...command, INPUT])
    return { ...inner, commands: inner.commands.map(given) }
  }
  return all(indexes.map((start) => wrapped(name, words.slice(start))))
}

/**
 * The marker xargs replaces with what it reads (`-I X`, `-IX`, `-i`, `--replace[=X]`, also run together with other
 * short options, `-rI X`), or undefined when there is none.
 */
const xargsMarker = (options: ReadonlyArray<Word>): string | undefined => {
  for (let index = 0; index < options.length; index++) {
    const value = options[index]!.value ?? ""
    if (value.startsWith("--replace")) return value.slice("--replace=".length) || "{}"
    if (!/^-[^-]/.test(value)) continue
    // The first of its letters that takes a value takes the rest of the word (or the next word) as it.
    const at = [...value.slice(1)].findIndex((letter) => "adEILnPsiel".includes(letter))
    if (at < 0) continue
    const rest = value.slice(at + 2)
    if (value[at + 1] === "I") return rest || options[index + 1]?.value
    if (value[at + 1] === "i") return rest || "{}"
    if (rest === "" && "adEILnPs".includes(value[at + 1]!)) index++
  }
  return undefined
}

/** What several readings of one command run, together: opaque when any is. */
const all = (readings: ReadonlyArray<Inner>): Inner => {
  const hidden = readings.find((reading) => reading.opaque !== undefined)
  if (hidden !== undefined) return hidden
  return { commands: readings.flatMap((reading) => reading.commands), code: readings.flatMap((reading) => reading.code), opaque: undefined }
}

/**
 * Options that hand a wrapper a shell line (`flock FILE -c 'a; b'`, `script -c CMD`, `su -c`, `runuser -c`): its
 * code, read when literal, else opaque; undefined when there is none.
 */
const codeOption = (name: string, options: ReadonlyArray<Word>): Inner | undefined => {
  if (!["flock", "script", "runuser", "sg", "nsenter", "unshare", "setsid"].includes(name)) return undefined
  for (let index = 0; index < options.length; index++) {
    const value = options[index]!.value
    if (value === undefined) continue
    const attached = /^--command=(.*)$/s.exec(value)
    if (attached !== null) return code(attached[1]!)
    if (value === "-c" || value === "--command" || (name !== "setsid" && /^-[A-Za-z]*c$/.test(value) && !value.startsWith("--"))) {
      if (name === "unshare" || name === "setsid" || name === "nsenter") continue
      const text = options[index + 1]
      if (text === undefined) return opaque(`${name} -c is given its code from elsewhere`)
      return text.value === undefined ? opaque(`the code given to ${name} -c holds an expansion`) : code(text.value)
    }
  }
  return undefined
}

/** Options of programs core does not know that commonly hand them code or a command line to run. */
const CODE_OPTIONS = /^(-c|-e|-[A-Za-z]+c|--command|--cmd|-cmd|--eval|--exec|-exec|-execdir|--run|-ex|--init-command|--rcfile|--pre|--rsh|-x|--sh-exec|--lua-exec)(=.*)?$/s

/**
 * Programs core does not know that take `-c` (or `-e`) as something else than code, read as running nothing but
 * themselves (their paths are checked as any other program's).
 */
const NOT_CODE: ReadonlySet<string> = new Set([
  "gcc", "cc", "c++", "g++", "clang", "clang++", "tcc", "ld", "as", "ar", "nm", "objdump", "readelf",
  "tar", "gzip", "gunzip", "zcat", "bzip2", "bunzip2", "bzcat", "xz", "unxz", "xzcat", "zstd", "unzstd", "zstdcat",
  "lz4", "pigz", "unzip", "zip", "7z", "cpio",
  "wc", "cut", "ps", "ping", "sort", "uniq", "od", "tr", "cmp", "column", "xxd", "hexdump", "pgrep", "pkill",
  "top", "lsof", "df", "free", "jq", "yq", "base64", "md5sum", "sha1sum", "sha256sum", "sha512sum", "split", "fold",
  "date", "ssh-keygen", "openssl", "curl", "wget", "git", "node", "ruby", "perl", "cargo", "rustc", "go", "javac",
  "printf", "echo", "pr", "nl", "paste", "expand", "unexpand", "iconv", "locale", "journalctl", "ulimit",
  "pip", "pip3", "pytest", "mypy", "npm", "pnpm", "yarn", "docker", "podman", "kubectl", "cmake", "ninja",
  "ruff", "black", "eslint", "prettier", "tsc", "cargo", "rg", "ag", "ack", "set", "read", "export", "declare", "local",
  "typeset", "readonly", "test", "[", "cd", "pushd", "popd", "kill", "wait", "type", "which", "umask", "exit", "return",
  "shift", "true", "false", ":", "getopts", "ls", "bash", "sh", "zsh", "dash", "python", "python3", "ssh", "shellcheck",
  "prettier", "jest", "vitest", "mocha", "webpack", "rollup", "vite", "esbuild", "babel", "stylelint", "biome",
  "flake8", "pylint", "isort", "pre-commit", "gunicorn", "uvicorn", "htop", "netstat", "ss", "dig", "host",
])

/** vi and its kin run an ex command given as `+CMD` (`vim '+!rm x'`), `-c`, `--cmd` or a script given with `-S`. */
const VI: ReadonlySet<string> = new Set(["vi", "vim", "nvim", "view", "vimdiff", "gvim", "rvim", "evim"])

/** A program core knows nothing about: opaque when it is handed a command line (`-c CODE`, `--eval CODE`). */
const unknown = (name: string, words: ReadonlyArray<Word>): Inner => {
  if (VI.has(name) && words.slice(1).some((word) => /^(\+.|-S|-u|-s$)/.test(word.value ?? word.text))) {
    return opaque(`${name} is given editor commands, which can run programs`)
  }
  if (NOT_CODE.has(name) || Operands.isFileCommand(name)) return NOTHING
  for (const word of words.slice(1)) {
    const value = word.value ?? word.text
    if (value === "--") break
    if (CODE_OPTIONS.test(value)) return opaque(`${name} ${value.replace(/=.*$/s, "")} may run code or a command core cannot read`)
  }
  return NOTHING
}

/**
 * Programs that run commands of their own language, from their arguments or their input, which core does not
 * read: schedulers, terminal multiplexers, and interpreters whose languages reach the shell (`dc`'s `!`, `ed`'s `!`,
 * sqlite3's `.shell`, psql's `\!`).
 */
const RUNS_ITS_OWN: ReadonlySet<string> = new Set([
  "capsh", "at", "batch", "crontab", "tmux", "screen", "tclsh", "wish", "expect", "pwsh", "julia", "R", "guile", "sbcl", "irb",
  "jshell", "dc", "ed", "ex", "sqlite3", "psql", "mysql", "gdb", "lldb", "osascript", "nix-shell", "xonsh", "elvish",
  "nu", "tcsh", "csh", "busybox-sh", "rc", "es", "yash", "posh", "oksh", "loksh", "ansible", "ansible-playbook",
  "hyperfine", "bwrap", "proot", "schroot", "systemd-nspawn", "machinectl", "firejail-shell", "byobu", "zellij",
  "sg", "newgrp", "login", "xterm", "konsole", "gnome-terminal", "alacritty", "kitty", "wezterm", "foot",
])

/** Short options of tar that run a command (`-I PROG`, `-F SCRIPT`), alone, in a group or with their value attached. */
const TAR_RUNS = /^-[A-Za-z]*[IF]/
/** Whether a word of tar's is an option that runs a command: short, or long by any start of its name. */
const tarRuns = (value: string): boolean =>
  TAR_RUNS.test(value) ||
  // `--checkpoint` is an option of its own, not a start of `--checkpoint-action`.
  (!/^--checkpoint(=|$)/.test(value) &&
    longOption(value, "to-command", "checkpoint-action", "use-compress-program", "info-script", "new-volume-script", "rsh-command"))

/**
 * make given code on its command line: `--eval TEXT` (`-E`, also in a group of short options), and a variable whose
 * value can run a command: one that expands (`X=$(shell …)`: make expands every exported variable for each recipe,
 * used or not), one set to a command's output (`X!=CMD`), one holding a command line (`CC='rm -f x'`, which a
 * recipe runs), or the shell recipes run in (`SHELL=`, `.SHELLFLAGS=`). Otherwise make runs its makefile's
 * recipes, which are files, and names no command (`make test` runs no `test`).
 */
const make = (words: ReadonlyArray<Word>): Inner => {
  // After `--`, no more options, but still variables (`make -- 'X!=CMD'`).
  let options = true
  for (const word of words.slice(1)) {
    const value = word.value
    const text = value ?? word.text
    if (text === "--") {
      options = false
      continue
    }
    if (options && (/^-[A-Za-z]*E/.test(text) || longOption(text, "eval"))) return opaque("make --eval runs make code core does not read")
    if ((options && text.startsWith("-")) || !text.includes("=")) continue
    if (value === undefined) return opaque("make is given a variable held in an expansion, which its recipes may run")
    const [, name, operator, assigned] = /^([^=]*?)(::?=|:::=|[!?+]?=)([\s\S]*)$/.exec(value) ?? []
    if (operator === "!=" || /^\s*\.?SHELL(FLAGS)?\s*$/.test(name ?? "") || /[$`\s;|&<>()]/.test(assigned ?? "")) {
      return opaque("make is given a variable whose value can run a command (its expansions and recipes)")
    }
  }
  return NOTHING
}

/** Commands whose own options say whether, and what, they run. */
const SPECIAL: Readonly<Record<string, (words: ReadonlyArray<Word>) => Inner | undefined>> = {
  make,
  gmake: make,
  remake: make,
  bmake: make,
  // `nix develop FLAKE -c CMD ARGS` and `nix shell PKGS -c CMD ARGS` run CMD; without -c, a shell of their own.
  nix: (words) => {
    if (!["develop", "shell"].includes(words[1]?.value ?? "")) return undefined
    const at = words.findIndex((word, index) => index > 1 && (word.value === "-c" || word.value === "--command"))
    if (at < 0) return words.some((word) => word.value === undefined) ? opaque("nix runs what an expansion names") : NOTHING
    return wrapped("nix", words.slice(at + 1))
  },
  // cmake's command mode runs programs it is handed in internal commands (`-E __run_co_compile --tidy=PROG`).
  cmake: (words) => (words[1]?.value === "-E" && (words[2]?.value ?? "").startsWith("__") ? opaque("cmake -E runs programs an internal command is handed") : undefined),
  go: (words) => (words.some((word) => GO_RUNS.test(word.value ?? word.text)) ? opaque("go is told to run a program of its own choosing") : undefined),
  // `--config KEY=VALUE` can name the runner, linker or wrapper cargo runs (`target.x86_64-unknown-linux-gnu.runner`).
  cargo: (words) =>
    words.some((word) => /^--config(=|$)/.test(word.value ?? word.text)) ? opaque("cargo --config can name a program cargo runs") : undefined,
  tar: (words) =>
    words.slice(1).some((word) => tarRuns(word.value ?? word.text)) ||
    // The traditional first word, letters without a dash (`tar cIf PROG a.tar d`).
    /^[A-Za-z]*[IF]/.test(words[1]?.value ?? words[1]?.text ?? "")
      ? opaque("tar is told to run a command")
      : NOTHING,
  npm: (words) =>
    ["exec", "x"].includes(words[1]?.value ?? "") && has(split(words.slice(1), ["-p", "--package"]).options, ["-c", "--call"])
      ? opaque("npm exec -c runs a command line core cannot read")
      : undefined,
  man: (words) =>
    words.slice(1).some((word) => /^-[A-Za-z]*[PH]/.test(word.value ?? word.text) || longOption(word.value ?? word.text, "pager", "html"))
      ? opaque("man is told which program to run")
      : NOTHING,
  // `hash -p PATH NAME` makes NAME run PATH; `enable` loads or hides builtins; either changes what a name runs.
  hash: (words) => (words.slice(1).some((word) => /^-[A-Za-z]*p/.test(word.value ?? word.text)) ? opaque("hash -p changes which program a command name runs") : NOTHING),
  enable: (words) => (words.length > 1 ? opaque("enable changes which builtins a command name runs") : NOTHING),
  shopt: (words) =>
    words.some((word) => (word.value ?? word.text) === "expand_aliases") ? opaque("shopt expand_aliases makes aliases run in place of commands") : NOTHING,
  // ssh runs its command line on the other host, and some options run local commands too.
  ssh: (words) => {
    if (sshLike(words, "")) return opaque("ssh is told to run a local command")
    const { operands } = split(words, ["-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-p", "-Q", "-R", "-S", "-W", "-w", "-B", "-P"])
    if (words.some((word) => /proxycommand|localcommand|permitlocalcommand|match\s+exec|knownhostscommand/i.test(word.value ?? word.text))) {
      return opaque("ssh is told to run a local command")
    }
    return operands.length > 1 ? opaque("ssh runs a command line on another host") : NOTHING
  },
  // `parallel CMD ::: ARGS` runs CMD through a shell, once per argument; without CMD, its input lines are commands.
  parallel: (words) => {
    const end = words.findIndex((word) => /^:::+\+?$|^::::\+?$/.test(word.value ?? ""))
    const { operands } = split(end === -1 ? words : words.slice(0, end), [
      "-j", "--jobs", "-S", "--sshlogin", "-a", "--arg-file", "--colsep", "-d", "--delimiter", "-E", "-I", "--replace",
      "-n", "-N", "-L", "--delay", "--timeout", "--joblog", "--results", "--tmpdir", "--workdir", "--halt", "--memfree", "--load",
    ])
    if (operands.length === 0) return opaque("parallel runs commands read from its input")
    if (end === -1 || words[end]!.value!.startsWith("::::")) return opaque("parallel runs a command with arguments read from its input")
    const args = words.slice(end + 1)
    // Each argument in turn, in place of {} or after the command line.
    if (!literal(operands) || !literal(args)) return opaque("parallel runs a command line held in an expansion")
    const line = joined(operands)
    return { commands: [], code: args.map((arg) => (line.includes("{}") ? line.replaceAll("{}", arg.value!) : `${line} ${arg.value!}`)), opaque: undefined }
  },
  // sed's `e` command and the `e` flag of `s` run the pattern space as a command; `w` and `r` touch files (./sed).
  sed: (words) =>
    Sed.runs(words.slice(1).map((word) => word.value))
      ? opaque("sed may run commands (its e command or s///e) or read or write files (r, w) core cannot check, or its script is not on the line")
      : NOTHING,
  git: (words) => {
    // Global options come before the subcommand; -c and the like set configuration that can run commands, but for
    // an alias given so, which is read as what it stands for.
    let index = 1
    const aliases = new Map<string, string>()
    const globals: Array<Word> = [words[0]!]
    for (; index < words.length; index++) {
      const value = words[index]!.value ?? words[index]!.text
      const alias = value === "-c" ? /^alias\.([^=]+)=(.*)$/is.exec(words[index + 1]?.value ?? "") : null
      if (alias !== null) {
        aliases.set(alias[1]!.toLowerCase(), alias[2]!)
        globals.push(words[index]!, words[index + 1]!)
        index++
        continue
      }
      if (value === "-c" || /^--(config-env|exec-path)/.test(value)) {
        return opaque("git is given configuration that can run commands (aliases, pagers, hooks)")
      }
      globals.push(words[index]!)
      if (["-C", "--git-dir", "--work-tree", "--namespace"].includes(value)) globals.push(words[++index]!)
      else if (!value.startsWith("-")) break
    }
    const subcommand = words[index]?.value
    // `git pus[h]` is `git push` to bash once a file named push exists (the model can make one).
    if (words[index]?.glob === true) return opaque(`git's subcommand ${words[index]!.text} is a pattern bash expands to a file's name`)
    // Code git runs here runs with these aliases too (a git in it may use one): read, and asked besides.
    const coded = (lines: ReadonlyArray<string>): Inner => ({
      commands: [],
      code: lines,
      opaque: aliases.size === 0 ? undefined : "git runs code with aliases given by -c, which a git in that code may use",
    })
    if (subcommand !== undefined && aliases.has(subcommand.toLowerCase())) {
      // As git expands one: `!…` is a shell command line, given the arguments after it; anything else is git's
      // words in its place, whose first may be an alias again.
      let tail = words.slice(index + 1)
      let name = subcommand
      const seen = new Set<string>()
      for (let aliased = aliases.get(name.toLowerCase()); aliased !== undefined; aliased = aliases.get(name.toLowerCase())) {
        if (seen.has(name.toLowerCase())) return opaque("a git alias that expands to itself")
        seen.add(name.toLowerCase())
        if (aliased.startsWith("!")) return coded([aliased.slice(1)])
        const split = aliasWords(aliased)
        if (split === undefined || split.length === 0) return opaque("a git alias core cannot read word by word")
        const [first, ...more] = split
        name = first!
        tail = [...more.map((part): Word => ({ text: part, value: part, glob: false, tilde: false })), ...tail]
      }
      // With the aliases given still before it (its subcommand is none of them), so that what it runs knows them.
      const named: Word = { text: name, value: name, glob: false, tilde: false }
      return { commands: [[...globals.slice(0, -1), named, ...tail]], code: [], opaque: undefined }
    }
    const rest = words.slice(index + 1).map((word) => word.value ?? word.text)
    if (rest.some((value) => (/^-u(=|$)/.test(value) || longOption(value, "upload-pack", "receive-pack", "exec")) && subcommand !== "rebase")) {
      return opaque("git is told to run a command of its own choosing on the other side")
    }
    // A URL of the ext transport is a command line git runs (where GIT_ALLOW_PROTOCOL or config lets it).
    if (rest.some((value) => /^ext::/i.test(value))) return opaque("an ext:: URL is a command line git runs")
    if (subcommand === "rebase" && rest.some((value) => /^-x(=|$)|^-[A-Za-z]*x/.test(value) || longOption(value, "exec"))) {
      // Each command line it runs after a commit, read as code where it is written out.
      const unread = opaque("git rebase --exec runs a command line core cannot read")
      const lines: Array<string> = []
      for (let at = index + 1; at < words.length; at++) {
        const value = words[at]!.value
        if (value === "--") break
        if (value === "-x" || (value !== undefined && !value.includes("=") && longOption(value, "exec"))) {
          const line = words[++at]?.value
          if (line === undefined) return unread
          lines.push(line)
          continue
        }
        const long = value === undefined ? undefined : /^--([a-z-]+)=(.*)$/s.exec(value)
        const attached =
          value === undefined ? undefined : long !== null && long !== undefined && longOption(`--${long[1]}`, "exec") ? long[2] : /^-x(.+)$/s.exec(value)?.[1]
        if (attached !== undefined) lines.push(attached)
        // Flags run together with x (`-ix`), or a word held in an expansion: not read.
        else if (value === undefined || /^-[A-Za-z]+x/.test(value)) return unread
      }
      return coded(lines)
    }
    if (subcommand === "difftool" && rest.some((value) => /^-x(=|$)/.test(value) || longOption(value, "extcmd"))) {
      return opaque("git difftool --extcmd runs a command line core cannot read")
    }
    if ((subcommand === "diff" || subcommand === "log" || subcommand === "show") && rest.includes("--ext-diff")) {
      return opaque("git --ext-diff runs a configured command")
    }
    if (subcommand === "grep") {
      // The pager it opens the files in is code for a shell (`-O'sh -c …'`, also in a group of short options).
      const pagers = rest.filter((value) => /^-[A-Za-z]*O/.test(value) || longOption(value, "open-files-in-pager"))
      const code = pagers.map((value) => (value.startsWith("--") ? /^[^=]*=([\s\S]+)$/.exec(value)?.[1] : /^-[A-Za-z]*?O([\s\S]+)$/.exec(value)?.[1]))
      if (pagers.length > 0) {
        const given = code.filter((line) => line !== undefined)
        return given.length === code.length && !words.some((word) => word.value === undefined) ? coded(given) : opaque("git grep -O runs a pager core cannot read")
      }
    }
    if (subcommand === "submodule" && rest.includes("foreach")) {
      // The command line it runs in each submodule, read as code where it is one word written out.
      const line = words.slice(index + 2 + rest.indexOf("foreach")).filter((word) => !/^(--recursive|-q|--quiet)$/.test(word.value ?? ""))
      return line.length === 1 && line[0]!.value !== undefined ? coded([line[0]!.value]) : opaque("git submodule foreach runs code core cannot read")
    }
    if (subcommand === "filter-branch") return opaque("git filter-branch runs code core cannot read")
    // Subcommands whose arguments are a command line they run: remote-ext's second, the web server and browser
    // instaweb and web--browse start, and the hooks and programs of daemon and send-email.
    if (subcommand === "remote-ext") return opaque("git remote-ext runs the command line it is given")
    if (subcommand === "instaweb" || subcommand === "web--browse") return opaque(`git ${subcommand} starts a program it is told of`)
    if (subcommand === "daemon" && rest.some((value) => longOption(value, "access-hook"))) return opaque("git daemon --access-hook runs a command")
    if (subcommand === "send-email" && rest.some((value) => sendsByCommand(value))) {
      return opaque("git send-email is told to run a command")
    }
    if (subcommand === "config" && rest.filter((value) => !value.startsWith("-")).length > 1 && !rest.some((value) => /^--(get|list|unset)/.test(value))) {
      return opaque("git config can set commands (aliases, pagers, hooks) that later git commands run")
    }
    // What pushes by another name is a push too: a rule about `git push` holds for it.
    const pushed = PUSHES[subcommand ?? ""] ?? (subcommand === "subtree" && words[index + 1]?.value === "push" ? 2 : undefined)
    if (pushed !== undefined) {
      return { commands: [[...words.slice(0, index), { ...words[index]!, text: "push", value: "push" }, ...words.slice(index + pushed)]], code: [], opaque: undefined }
    }
    return undefined
  },
  // compgen -W expands its word list as bash would a line, command substitutions and all.
  compgen: (words) =>
    words.slice(1).some((word) => /^-[A-Za-z]*[CF]/.test(word.value ?? word.text)) ||
    words.slice(1).some((word, index) => /^-[A-Za-z]*W$/.test(words[index]?.value ?? "") && /[$`]/.test(word.value ?? word.text))
      ? opaque("compgen -C, -F or -W with an expansion runs a command")
      : NOTHING,
  // rsync's remote shell (`-e CMD`, `--rsh`) and the program it starts on the other side are commands.
  rsync: (words) => {
    const commands: Array<ReadonlyArray<Word>> = []
    for (let index = 1; index < words.length; index++) {
      const value = words[index]!.value ?? words[index]!.text
      if (value === "--") break
      if (/^--rsync-path(=|$)/.test(value)) return opaque("rsync is told which program to start on the other side")
      const attached = /^--rsh=(.*)$/s.exec(value)?.[1] ?? /^-[A-Za-z]*e(.+)$/s.exec(value)?.[1]
      if (attached === undefined && !/^(--rsh|-[A-Za-z]*e)$/.test(value)) continue
      const shell = attached === undefined ? words[++index] : { ...words[index]!, value: words[index]!.value === undefined ? undefined : attached }
      // A plain command line (`-e 'ssh -p 2222'`) is split into words, never given to a shell: checked as that command.
      if (shell?.value === undefined || !/^[\w./=:,@%+ -]+$/.test(shell.value)) return opaque("rsync is told to run a remote shell core cannot read")
      commands.push(shell.value.trim().split(/ +/).map((part) => ({ text: part, value: part, glob: false, tilde: false })))
    }
    return commands.length === 0 ? undefined : { commands, code: [], opaque: undefined }
  },
  scp: (words) => (sshLike(words, "S") ? opaque("scp is told to run a local command") : undefined),
  sftp: (words) => (sshLike(words, "SD") ? opaque("sftp is told to run a local command") : undefined),
  // Options of otherwise plain programs that name a program to run.
  zip: (words) => (words.slice(1).some((word) => /^-TT(=|$)/.test(word.value ?? word.text) || longOption(word.value ?? word.text, "unzip-command")) ? opaque("zip is told which command tests the archive") : undefined),
  sort: (words) => (words.slice(1).some((word) => longOption(word.value ?? word.text, "compress-program")) ? opaque("sort is told which program compresses its temporary files") : undefined),
  wget: (words) => (words.slice(1).some((word) => longOption(word.value ?? word.text, "use-askpass")) ? opaque("wget is told which program asks for a password") : undefined),
  sdiff: (words) => (words.slice(1).some((word) => longOption(word.value ?? word.text, "diff-program")) ? opaque("sdiff is told which diff program to run") : undefined),
  socat: (words) => (words.slice(1).some((word) => /^(EXEC|SYSTEM)[:,]/i.test(word.value ?? word.text)) ? opaque("socat runs a command as one end of its connection") : undefined),
  // `less '+!cmd'` runs cmd; a lesskey file can set LESSOPEN, an input preprocessor.
  less: (words) =>
    words.slice(1).some((word) => /^\+|^-k/.test(word.value ?? word.text) || longOption(word.value ?? word.text, "lesskey-file", "lesskey-src", "lesskey-content"))
      ? opaque("less is given commands or key bindings that can run a program")
      : NOTHING,
  // npx runs the program named after its options (a wrapper: ./arity), or with -c a command line.
  npx: (words) =>
    has(split(words, ["-p", "--package"]).options, ["-c", "--call"]) ? opaque("npx -c runs a command line core cannot read") : undefined,
  mapfile: (words) => (words.slice(1).some((word) => /^-[A-Za-z]*C/.test(word.value ?? word.text)) ? opaque("mapfile -C runs a callback") : undefined),
  readarray: (words) => (words.slice(1).some((word) => /^-[A-Za-z]*C/.test(word.value ?? word.text)) ? opaque("readarray -C runs a callback") : undefined),
}

/**
 * Whether an ssh-family command is told to run a local program: `-o ProxyCommand=…` and the like, a config file
 * of the line's choosing (`-F`), or one of `letters`, options naming the program to run (`scp -S prog`).
 */
const sshLike = (words: ReadonlyArray<Word>, letters: string): boolean =>
  words.slice(1).some(
    (word) =>
      /proxycommand|localcommand|permitlocalcommand|match\s+exec|knownhostscommand/i.test(word.value ?? word.text) ||
      /^-[A-Za-z]*F/.test(word.value ?? word.text) ||
      (letters !== "" && new RegExp(`^-[A-Za-z]*[${letters}]`).test(word.value ?? word.text)),
  )

/**
 * A git alias's words as git splits them (split_cmdline): apart at white space outside quotes, single and double
 * quotes taken off, a backslash keeping the next character (in double quotes too); undefined for an unclosed quote.
 */
const aliasWords = (text: string): Array<string> | undefined => {
  const parts: Array<string> = []
  let current = ""
  let started = false
  let quote: string | undefined
  for (let index = 0; index < text.length; index++) {
    const character = text[index]!
    if (quote !== undefined) {
      if (character === quote) quote = undefined
      else if (character === "\\" && quote === '"' && index + 1 < text.length) current += text[++index]
      else current += character
    } else if (character === "'" || character === '"') {
      quote = character
      started = true
    } else if (character === "\\" && index + 1 < text.length) {
      current += text[++index]
      started = true
    } else if (/\s/.test(character)) {
      if (started || current !== "") parts.push(current)
      current = ""
      started = false
    } else {
      current += character
    }
  }
  if (quote !== undefined) return undefined
  if (started || current !== "") parts.push(current)
  return parts
}

/**
 * Whether `value` may be one of the long options `names`, as getopt (and git's option parser) takes it: written
 * whole or as any start of its name (`--exe` is `--exec`, `--compress` is `--compress-program`), with or without
 * `=VALUE`. A start that other options share too is taken as one of `names`: the program refuses it as ambiguous.
 */
const longOption = (value: string, ...names: ReadonlyArray<string>): boolean => {
  const given = /^--([a-z][a-z0-9-]*)(=|$)/.exec(value)?.[1]
  return given !== undefined && names.some((name) => name.startsWith(given))
}

/** An option of git send-email that names a program it runs, spelled out or shortened (`--to` is an option of its own). */
const sendsByCommand = (value: string): boolean => {
  const given = /^--([a-z-]+)(=|$)/.exec(value)?.[1]
  return given !== undefined && given.length > 2 && ["to-cmd", "cc-cmd", "header-cmd", "sendmail-cmd", "smtp-server"].some((name) => name.startsWith(given))
}

/** go's flags that run a program of their own around what it builds or tests (`go test -exec PROG`). */
const GO_RUNS = /^--?(exec|toolexec|vettool)(=|$)/

/** git's subcommands that push under another name, with how many words name them (`subtree push` is two). */
const PUSHES: Readonly<Record<string, number>> = { "send-pack": 1, "http-push": 1 }

/**
 * Wrappers that change nothing about what the command they run may do to the Location (they only time it, detach
 * it, lower its priority or set its environment): a shell under one is as transparent as the shell alone.
 */
const NEUTRAL: ReadonlySet<string> = new Set(["env", "nohup", "command", "exec", "time", "nice", "timeout", "stdbuf"])

/** Options of a neutral wrapper that do change something (`env -C DIR` moves where paths lead, `-S` splits text). */
const NOT_NEUTRAL = /^(-[A-Za-z]*[CSvV]|--chdir|--split-string|-a)/

/** The command a neutral wrapper runs, when there is one reading of it; undefined for any other command. */
export const neutral = (words: ReadonlyArray<Word>): ReadonlyArray<Word> | undefined => {
  const name = basename(words[0]!.value!)
  if (!NEUTRAL.has(name)) return undefined
  const found = Arity.wrapperOf(words, name)
  if (found === undefined) return undefined
  const indexes = Arity.wrappedIndexes(words, found.wrapper, found.length)
  if (indexes.length !== 1) return undefined
  const index = indexes[0]!
  if (words.slice(1, index).some((word) => word.value === undefined || NOT_NEUTRAL.test(word.value))) return undefined
  const inner = words.slice(index)
  return inner[0]?.value === undefined || inner[0].value === "" ? undefined : inner
}

/**
 * Whether the command is only a shell running literal code (`bash -lc 'ls .'`, `env bash -c '…'`): then it is
 * checked as that code's commands, each in its own right, and not as itself.
 */
export const transparent = (words: ReadonlyArray<Word>): boolean => {
  let current = words
  for (let next = neutral(current); next !== undefined; next = neutral(current)) current = next
  const inner = of(current)
  return inner.unwrapped === true && inner.opaque === undefined
}
