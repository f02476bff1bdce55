export * as Awk from "./awk"

// Whether an awk command line may write a file or run a command core cannot check: its program's output
// redirections (`print > "f"`, `printf … >> f`, `print | "cmd"`), a command it reads from (`"cmd" | getline`),
// `system(…)`, and gawk's directives and indirect calls (`@load`, `@f()`). The program is read as awk reads its
// arguments (`-F SEP`, `-v NAME=VALUE`, `--`, then the program) in one pass over its characters, strings and
// regular expressions skipped: a `>` is a redirection only inside a `print` or `printf` statement outside
// parentheses (`$1 > 5` and `print (a > b)` compare). Whatever cannot be read for certain (any other option, such
// as gawk's `-o`, `-p` and `-d`, which write files; a program held in an expansion) counts as writing.

/** Characters after which a `/` starts a regular expression rather than dividing. */
const BEFORE_REGEX = new Set(["", "(", ",", "{", "}", ";", "!", "~", "&", "|", "=", "<", ">", "?", ":", "\n", "+", "-", "*", "%", "^"])

/** Whether the awk program `program` may write a file or run a command. */
const programRuns = (program: string): boolean => {
  let depth = 0
  /** The depth of the `print` or `printf` statement under way, if one is. */
  let printing: number | undefined
  /** The last character outside spaces, strings and regular expressions (what a `/` follows). */
  let last = ""
  let index = 0
  while (index < program.length) {
    const char = program[index]!
    if (char === '"') {
      // A string: up to its closing quote, a backslash escaping the next character.
      index++
      while (index < program.length && program[index] !== '"') index += program[index] === "\\" ? 2 : 1
      index++
      last = '"'
      continue
    }
    if (char === "/" && BEFORE_REGEX.has(last)) {
      // A regular expression: up to its closing slash, outside a bracket expression, a backslash escaping.
      index++
      let bracket = false
      while (index < program.length && (program[index] !== "/" || bracket)) {
        if (program[index] === "\\") index++
        else if (program[index] === "[") bracket = true
        else if (program[index] === "]") bracket = false
        index++
      }
      index++
      last = "/"
      continue
    }
    if (char === "#") {
      while (index < program.length && program[index] !== "\n") index++
      continue
    }
    if (char === "@") return true
    if (/[A-Za-z_]/.test(char)) {
      let end = index
      while (end < program.length && /[A-Za-z0-9_]/.test(program[end]!)) end++
      const word = program.slice(index, end)
      if (word === "system") return true
      if (word === "print" || word === "printf") printing = depth
      index = end
      last = "a"
      continue
    }
    if (char === "(") depth++
    else if (char === ")") depth--
    else if (char === "|") {
      // `||` is or; a single `|` pipes (`print | "cmd"`, `"cmd" | getline`, gawk's `|&`).
      if (program[index + 1] !== "|") return true
      index += 2
      last = "|"
      continue
    } else if (char === ">" && printing !== undefined && depth <= printing) return true
    else if (char === ";" || char === "\n" || char === "{" || char === "}") printing = undefined
    if (char !== " " && char !== "\t") last = char
    index++
  }
  return false
}

/** Options whose value is a program file, or gawk's source file or extension to load: code in a file, as a script is. */
const FILES = new Set(["-f", "--file", "-i", "--include", "-l", "--load"])

/**
 * Whether `args` (awk's arguments, undefined where a word is known only when it runs) may write a file or run a
 * command by what they hold: the program written on the line (the first operand, or gawk's `-e`/`--source`
 * values). A program in a file (`-f FILE`, gawk's `-i`, `-l`) is code core cannot read, as a script is: left to the
 * sandbox, as running the script would be.
 */
export const runs = (args: ReadonlyArray<string | undefined>): boolean => {
  const programs: Array<string | undefined> = []
  let files = false
  let index = 0
  for (; index < args.length; index++) {
    const arg = args[index]
    if (arg === undefined) return true
    if (arg === "--") {
      index++
      break
    }
    if (!arg.startsWith("-") || arg === "-") break
    if (arg === "-F" || arg === "-v") index++
    else if (FILES.has(arg)) {
      files = true
      index++
    } else if (arg === "-e" || arg === "--source") programs.push(args[++index])
    else if (/^--(file|include|load)=/.test(arg)) files = true
    else if (arg.startsWith("--source=")) programs.push(arg.slice("--source=".length))
    else if (!/^-[Fv]./s.test(arg)) return true
  }
  if (!files && programs.length === 0) programs.push(args[index])
  return programs.some((program) => program === undefined || programRuns(program))
}
