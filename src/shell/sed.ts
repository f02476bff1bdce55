export * as Sed from "./sed"

// Whether a sed command line may run a command or touch a file core cannot check: its `e` command and the `e` flag
// of `s` run the pattern space as a shell command; `w`, `W` and the `w` flag write files; `r` and `R` read them. The
// scripts are read as GNU sed reads its arguments (`-e SCRIPT`, `-eSCRIPT`, `--expression=SCRIPT` and its
// abbreviations, clustered short options, else the first operand) and each is read command by command, in one pass:
// no regular expression backtracks over what a model wrote. Whatever cannot be read for certain (a script in a file,
// an option or a command this reader does not know, a script cut short) counts as running something.

/** GNU sed's long options, each with whether it takes a value (`=VALUE` or the next argument). */
const LONG: ReadonlyArray<readonly [name: string, value: "none" | "required" | "optional"]> = [
  ["expression", "required"],
  ["file", "required"],
  ["in-place", "optional"],
  ["line-length", "required"],
  ["null-data", "none"],
  ["zero-terminated", "none"],
  ["quiet", "none"],
  ["silent", "none"],
  ["regexp-extended", "none"],
  ["separate", "none"],
  ["sandbox", "none"],
  ["debug", "none"],
  ["posix", "none"],
  ["follow-symlinks", "none"],
  ["unbuffered", "none"],
  ["binary", "none"],
  ["help", "none"],
  ["version", "none"],
]

/** Short options that take no value. */
const SHORT_FLAGS = new Set(["n", "r", "E", "s", "u", "z", "b"])

/** The long option `name` names: itself, or the one option it is the start of (as getopt_long takes it). */
const longOption = (name: string) => {
  const exact = LONG.find(([option]) => option === name)
  if (exact !== undefined) return exact
  const starting = LONG.filter(([option]) => option.startsWith(name))
  return name !== "" && starting.length === 1 ? starting[0] : undefined
}

/**
 * Whether sed run with `args` (its arguments' values, after the command name; undefined: a word only known when
 * the line runs) may run a command or touch a file, or cannot be known not to.
 */
export const runs = (args: ReadonlyArray<string | undefined>): boolean => {
  const scripts: Array<string> = []
  let given = false
  let operand: string | undefined
  let options = true
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]
    if (arg === undefined) return true
    if (!options || !arg.startsWith("-") || arg === "-") {
      operand ??= arg
      continue
    }
    if (arg === "--") {
      options = false
      continue
    }
    if (arg.startsWith("--")) {
      const equals = arg.indexOf("=")
      const option = longOption(arg.slice(2, equals < 0 ? undefined : equals))
      if (option === undefined) return true
      const [name, takes] = option
      let value: string | undefined = equals < 0 ? undefined : arg.slice(equals + 1)
      if (takes === "none" && value !== undefined) return true
      if (takes === "required" && value === undefined) {
        value = args[++index]
        if (value === undefined) return true
      }
      // A script in a file cannot be read from the line.
      if (name === "file") return true
      if (name === "expression") {
        scripts.push(value!)
        given = true
      }
      continue
    }
    for (let at = 1; at < arg.length; at++) {
      const flag = arg[at]!
      if (SHORT_FLAGS.has(flag)) continue
      // -i takes its suffix only when attached: the rest of the cluster.
      if (flag === "i") break
      if (flag !== "e" && flag !== "f" && flag !== "l") return true
      const value = at + 1 < arg.length ? arg.slice(at + 1) : args[++index]
      if (value === undefined || flag === "f") return true
      if (flag === "e") {
        scripts.push(value)
        given = true
      }
      break
    }
  }
  // Without -e or --expression, the first operand is the script; with none at all, sed only prints its usage.
  if (!given) {
    if (operand === undefined) return false
    scripts.push(operand)
  }
  // sed joins its scripts with line feeds: read apart, and joined (a text command's line may go on into the next).
  return scripts.some(scriptRuns) || scriptRuns(scripts.join("\n"))
}

const isDigit = (char: string | undefined) => char !== undefined && char >= "0" && char <= "9"

/** Commands that take no argument. */
const PLAIN = new Set(["=", "d", "D", "g", "G", "h", "H", "n", "N", "p", "P", "x", "z", "F", "{", "}"])
/** Commands that may take a number: `q 5`, `l 80`. */
const COUNTED = new Set(["q", "Q", "l", "L"])
/** Commands that take a label or a version, up to `;` or the end of the line. */
const LABELLED = new Set([":", "b", "t", "T", "v"])
/** Commands that take text up to the end of the line (continued by a backslash before the line feed). */
const TEXT = new Set(["a", "i", "c"])
/** Commands that run something, or read or write a file. */
const RUNNING = new Set(["e", "w", "W", "r", "R"])

/** Whether the sed script `script` has a command or flag that runs something or touches a file, or cannot be read. */
export const scriptRuns = (script: string): boolean => {
  const length = script.length
  let at = 0
  const blanks = () => {
    while (at < length && (script[at] === " " || script[at] === "\t")) at++
  }
  /** Past a regular expression (or replacement) up to the unescaped `delimiter`; false if none closes it. */
  const delimited = (delimiter: string): boolean => {
    while (at < length) {
      const char = script[at]!
      if (char === "\\") at += 2
      else if (char === delimiter) {
        at++
        return true
      } else at++
    }
    return false
  }
  const digits = () => {
    while (isDigit(script[at])) at++
  }
  /** Past one address; "none" where none starts here, false where one is cut short. */
  const address = (): boolean | "none" => {
    const char = script[at]
    if (isDigit(char)) {
      digits()
      if (script[at] === "~") {
        at++
        digits()
      }
      return true
    }
    if (char === "$") {
      at++
      return true
    }
    if (char === "/" || char === "\\") {
      const delimiter = char === "/" ? "/" : script[at + 1]
      at += char === "/" ? 1 : 2
      if (delimiter === undefined || delimiter === "\n" || !delimited(delimiter)) return false
      while (script[at] === "I" || script[at] === "M") at++
      return true
    }
    return "none"
  }
  /** Past the rest of the line. */
  const line = () => {
    while (at < length && script[at] !== "\n") at++
  }

  while (true) {
    while (at < length && /[\s;]/.test(script[at]!)) at++
    if (at >= length) return false
    if (script[at] === "#") {
      line()
      continue
    }
    const first = address()
    if (first === false) return true
    if (first === true) {
      blanks()
      if (script[at] === ",") {
        at++
        blanks()
        if (script[at] === "+" || script[at] === "~") {
          at++
          if (!isDigit(script[at])) return true
          digits()
        } else if (address() !== true) return true
      }
    }
    blanks()
    while (script[at] === "!") {
      at++
      blanks()
    }
    const command = script[at++]
    if (command === undefined) return true
    if (RUNNING.has(command)) return true
    if (PLAIN.has(command)) {
      // `{` opens a block whose commands follow at once; `}` may be followed by another command likewise.
      if (command === "{" || command === "}") continue
    } else if (COUNTED.has(command)) {
      blanks()
      digits()
    } else if (LABELLED.has(command)) {
      while (at < length && script[at] !== ";" && script[at] !== "\n") at++
    } else if (TEXT.has(command)) {
      // One-line text (GNU) or text on the lines after `\`: never run, read to the end of its last line.
      while (at < length && script[at] !== "\n") at += script[at] === "\\" ? 2 : 1
      continue
    } else if (command === "s" || command === "y") {
      const delimiter = script[at++]
      if (delimiter === undefined || delimiter === "\n" || delimiter === "\\") return true
      if (!delimited(delimiter) || !delimited(delimiter)) return true
      if (command === "s") {
        // Flags: `e` runs the pattern space, `w FILE` writes it; anything unknown is not read further.
        while (at < length && !/[\s;}#]/.test(script[at]!)) {
          const flag = script[at]!
          if (flag === "e" || flag === "w") return true
          if (!/[gpiImM0-9]/.test(flag)) return true
          at++
        }
      }
    } else return true
    blanks()
    // A command ends at `;`, a line feed, a `}` or a comment; anything else is not a script this reader knows.
    if (at < length && !/[;\n}#]/.test(script[at]!)) return true
  }
}
