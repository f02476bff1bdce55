export * as Awk from "./awk"

// Whether an awk command line may write a file or run a command core cannot check: its program's output
// redirections (`print > "f"`, `printf … >> f`, `print | "cmd"`), a command it reads from (`"cmd" | getline`),
// `system(…)`, and gawk's directives and indirect calls (`@load`, `@f()`). Read from the program's text as written,
// without telling strings, regular expressions and division apart (where a reader that tried could be led astray,
// `print /"/ > "f"`): a `|` that is not `||`, `system`, or `@` anywhere, and a `>` anywhere after a `print` or
// `printf` (a redirection can only follow one), count as writing; so `$1 > 5 { print }` only reads, and `{ print
// $1 " > " $2 }` errs towards a write. The arguments are read as awk reads them (`-F SEP`, `-v NAME=VALUE`, `--`,
// then the program); whatever cannot be read for certain (any other option, such as gawk's `-o`, `-p` and `-d`,
// which write files; a program held in an expansion) counts as writing.

/** The names awk is run by. */
export const NAMES: ReadonlySet<string> = new Set(["awk", "gawk", "mawk", "nawk"])

/** Whether the awk program `program` may write a file or run a command, by its text (see above). */
const programRuns = (program: string): boolean => {
  if (/@|system|(^|[^|])\|(?!\|)/.test(program)) return true
  const printing = program.search(/print/)
  return printing !== -1 && program.indexOf(">", printing) !== -1
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
