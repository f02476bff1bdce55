export * as Evaluation from "./evaluation"

// Where bash evaluates text as code besides running commands: arithmetic (whose array subscripts expand command
// substitutions), prompt expansion, indirection and namerefs, compound assignments re-read by `declare`, and
// variables other programs run as code. Each such place in a line is reported as opaque to the walk's sink when
// what it evaluates could hold code. Pure: it reads tree-sitter nodes and words and decides nothing.

import type { Node } from "web-tree-sitter"
import type { Words } from "./words"

type Word = Words.Word

/** Where what is found goes: the walk's collector. */
export interface Sink {
  /** The outermost command whose code string is being read, if any: what is asked about. */
  readonly within: string | undefined
  /** Variables whose value the line itself makes a number, so evaluating them as arithmetic runs nothing. */
  readonly numeric: ReadonlySet<string>
  /** The text being read (the line, or the code a command runs). */
  readonly line: string
  readonly opaque: Array<{ readonly resource: string; readonly reason: string }>
}


/**
 * Special parameters that always hold a number. Any other variable evaluated as arithmetic may hold an expression
 * such as `x[$(rm y)]`, whose subscript bash expands, running the command.
 */
const NUMERIC_SPECIALS: ReadonlySet<string> = new Set(["#", "?", "$", "!"])

/** `[[ a -eq b ]]` evaluates both sides as arithmetic. */
const ARITHMETIC_TESTS: ReadonlySet<string> = new Set(["-eq", "-ne", "-lt", "-le", "-gt", "-ge"])

/** Commands after which no variable's value can be vouched for: they set variables from text core cannot see. */
const SETS_FROM_TEXT: ReadonlySet<string> = new Set(["source", ".", "eval", "read", "mapfile", "readarray", "getopts", "declare", "typeset", "local", "export", "printf", "let", "set"])

/** The statement an arithmetic context belongs to, for the check that asks about it. */
const STATEMENTS: ReadonlySet<string> = new Set([
  "command",
  "test_command",
  "variable_assignment",
  "declaration_command",
  "c_style_for_statement",
  "compound_statement",
  "redirected_statement",
])

const statementOf = (node: Node): string => {
  for (let current: Node | null = node; current !== null; current = current.parent) {
    if (STATEMENTS.has(current.type)) return current.text
  }
  return node.text
}

/** The variables evaluated in an arithmetic context (not inside a command substitution, which is walked as code). */
const evaluated = (node: Node, into: Array<string>): Array<string> => {
  switch (node.type) {
    case "command_substitution":
    case "process_substitution":
      return into
    case "variable_name":
    case "special_variable_name":
      into.push(node.text)
      return into
    case "word":
      // A bare name is a variable; anything else but a number is evaluated in ways core does not follow.
      if (!/^(0[xX][0-9a-fA-F]+|\d+(#[0-9A-Za-z@_]+)?)$/.test(node.text)) into.push(/^[A-Za-z_][A-Za-z0-9_]*$/.test(node.text) ? node.text : "*")
      return into
    case "raw_string":
    case "ansi_c_string":
    case "string_content":
      // Quoting keeps nothing from arithmetic: `'x[$(cmd)]'` is evaluated as the text it holds, subscript and all.
      if (!/^(\$?'|")?[\d\s]*'?$/.test(node.text)) into.push("*")
      return into
  }
  for (const child of node.namedChildren) if (child !== null) evaluated(child, into)
  return into
}

/** Makes the statement opaque when `nodes` evaluate a variable whose value the line does not make a number. */
const arithmetic = (nodes: ReadonlyArray<Node | null>, owner: Node, collector: Sink): void => {
  const names = nodes.flatMap((node) => (node === null ? [] : evaluated(node, [])))
  const unsafe = names.find((name) => !NUMERIC_SPECIALS.has(name) && !collector.numeric.has(name))
  if (unsafe === undefined) return
  collector.opaque.push({
    resource: collector.within ?? statementOf(owner),
    reason: `it evaluates ${unsafe === "*" ? "text" : `$${unsafe}`} as arithmetic, and a value such as x[$(cmd)] runs cmd`,
  })
}

/**
 * Whether a word names an array element by something other than a number (`a[$i]`, `'a[$(cmd)]'`): a `[`, then up to
 * the next `]` a character other than a digit, a space, `@` or `*`. Each try starts at the text's start or just after a
 * `]` and takes the first `[` and the first such character, so no character is read by more than one try: the model
 * writes the word, and the form that let every `[` take every split took a minute on 10,000 `[`.
 */
const subscripted = (text: string): boolean => /(?:^|\])[^[\]]*\[[\d\s@*]*[^\d\s\]@*][^\]]*\]/.test(text)

/**
 * Variables the line only ever sets to numbers (`i=0`, `for ((i=0; i<3; i++))`) and never reads from text: their
 * value cannot hold code when evaluated.
 */
export const numericNames = (root: Node): ReadonlySet<string> => {
  const numeric = new Set<string>()
  const tainted = new Set<string>()
  let everything = false
  const visit = (node: Node, inArithmetic: boolean): void => {
    switch (node.type) {
      case "variable_assignment": {
        const name = node.childForFieldName("name")
        const value = node.childForFieldName("value")
        if (name !== null && name.type === "variable_name") {
          const isNumber = value !== null && (value.type === "number" || value.type === "arithmetic_expansion" || /^\d+$/.test(value.text))
          ;(isNumber || inArithmetic ? numeric : tainted).add(name.text)
        }
        break
      }
      case "for_statement": {
        const variable = node.childForFieldName("variable")
        if (variable !== null) tainted.add(variable.text)
        break
      }
      case "command_name":
        if (SETS_FROM_TEXT.has(node.text)) everything = true
        break
      case "word":
        if (!inArithmetic) {
          const name = /^([A-Za-z_][A-Za-z0-9_]*)([=[]|$)/.exec(node.text)?.[1]
          if (name !== undefined) tainted.add(name)
        }
        break
    }
    const arithmeticHere =
      inArithmetic || node.type === "arithmetic_expansion" || node.type === "c_style_for_statement" || (node.type === "compound_statement" && node.child(0)?.type === "((")
    for (const child of node.children) if (child !== null) visit(child, arithmeticHere && child.type !== "do_group")
  }
  visit(root, false)
  // Inside arithmetic, `i++` and `i += 2` keep a number a number; an assignment there is always numeric.
  return everything ? new Set() : new Set([...numeric].filter((name) => !tainted.has(name)))
}

/** Checks what a node evaluates as arithmetic, or which array subscripts it names, before it is walked. */
export const evaluates = (node: Node, collector: Sink): void => {
  switch (node.type) {
    case "arithmetic_expansion":
      arithmetic([node], node, collector)
      return
    case "compound_statement":
      if (node.child(0)?.type === "((") arithmetic([node], node, collector)
      return
    case "c_style_for_statement":
      arithmetic(["initializer", "condition", "update"].flatMap((field) => node.childrenForFieldName(field)), node, collector)
      return
    case "subscript": {
      const index = node.childForFieldName("index")
      if (index !== null && !["@", "*"].includes(index.text)) arithmetic([index], node, collector)
      return
    }
    case "command_substitution":
      // The grammar reads `$((x))` in a heredoc as a substitution of a subshell; bash evaluates it as arithmetic.
      if (/^\$\(\([\s\S]*\)\)$/.test(node.text)) {
        collector.opaque.push({ resource: collector.within ?? statementOf(node), reason: "it evaluates text as arithmetic, and a value such as x[$(cmd)] runs cmd" })
      }
      return
    case "array":
      arraySubscripts(node, collector)
      return
    case "expansion": {
      // `${v@P}` expands v's value as a prompt, which runs the command substitutions it holds.
      if (/@P\}$/.test(node.text)) {
        collector.opaque.push({ resource: collector.within ?? statementOf(node), reason: "${…@P} expands a value as a prompt, which runs the commands it holds" })
        return
      }
      // `${!name}` expands the variable named by name's value, subscript and all.
      if (node.child(1)?.type === "!" && !/^\$\{![A-Za-z_][A-Za-z0-9_]*[@*]\}$/.test(node.text)) {
        collector.opaque.push({ resource: collector.within ?? statementOf(node), reason: "it expands a variable named by another's value, whose subscript can run commands" })
        return
      }
      // `${x:offset:length}`: both are arithmetic.
      const colon = node.children.findIndex((child) => child?.type === ":")
      if (colon !== -1) arithmetic(node.children.slice(colon + 1).filter((child) => child?.isNamed === true), node, collector)
      return
    }
    case "binary_expression": {
      const operator = node.childForFieldName("operator") ?? node.children.find((child) => child?.type === "test_operator") ?? null
      // Only `[[ ]]` evaluates them; `[ ]` and `test` want plain integers.
      let test: Node | null = node.parent
      while (test !== null && test.type !== "test_command") test = test.parent
      if (operator !== null && ARITHMETIC_TESTS.has(operator.text) && test?.text.startsWith("[[") === true) {
        arithmetic(node.namedChildren.filter((child) => child !== null && child.id !== operator.id), node, collector)
      }
      return
    }
    case "unary_expression": {
      // `[[ -v 'a[$(cmd)]' ]]` expands the subscript.
      const operator = node.children.find((child) => child?.type === "test_operator")
      if (operator?.text === "-v" && node.namedChildren.some((child) => child !== null && (subscripted(child.text) || /[$`]/.test(child.text)))) {
        collector.opaque.push({ resource: collector.within ?? statementOf(node), reason: "-v evaluates an array subscript" })
      }
      return
    }
  }
}

/**
 * Variables whose value a program later runs as code or loads (`GIT_EXTERNAL_DIFF='rm x' git diff`,
 * `PS4='$(rm x)' bash -x`, `BASH_ENV`, `LD_PRELOAD`, `LD_LIBRARY_PATH=.` with a `libc.so.6` the line wrote, the
 * `GCONV_PATH` iconv loads modules from, `GOFLAGS=-toolexec=…`, `RUSTC_WRAPPER`, a cargo target's runner), or lets it (`GIT_ALLOW_PROTOCOL=ext`: an `ext::` URL is a command line):
 * setting one hides what runs.
 */
const CODE_VARIABLES =
  /^(BASH_FUNC_[^=]*|BASH_CMDS|BASH_ALIASES|POSIXLY_CORRECT|BASH_ENV|ENV|PROMPT_COMMAND|PS[0-4]|SHELLOPTS|BASHOPTS|LD_PRELOAD|LD_AUDIT|LD_LIBRARY_PATH|GCONV_PATH|DYLD_INSERT_LIBRARIES|DYLD_LIBRARY_PATH|GIT_(EXTERNAL_DIFF|SSH|SSH_COMMAND|EDITOR|SEQUENCE_EDITOR|PAGER|ASKPASS|PROXY_COMMAND|EXEC_PATH|CONFIG_[A-Z_0-9]+|CONFIG|CONFIG_GLOBAL|CONFIG_SYSTEM|TEMPLATE_DIR|DIR|ALLOW_PROTOCOL|PROTOCOL_FROM_USER)|EDITOR|VISUAL|PAGER|MANPAGER|MANOPT|ZDOTDIR|LESS|LESSOPEN|LESSCLOSE|LESSKEY|LESSKEYIN|LESSKEY_SRC|LESSKEY_CONTENT|SYSTEMD_PAGER|SYSTEMD_EDITOR|SUDO_EDITOR|FCEDIT|[A-Z_]*ASKPASS|PERL5OPT|PERL5DB|NODE_OPTIONS|RUBYOPT|PYTHONSTARTUP|PYTHONINSPECT|BROWSER|MAKEFLAGS|MFLAGS|MAKEFILES|TAR_OPTIONS|SSH_ORIGINAL_COMMAND|GOFLAGS|RUSTFLAGS|CARGO_ENCODED_RUSTFLAGS|CARGO_BUILD_RUSTFLAGS|RUSTC_WRAPPER|RUSTC_WORKSPACE_WRAPPER|CARGO_BUILD_RUSTC_WRAPPER|CARGO_TARGET_[A-Z0-9_]+_(RUNNER|LINKER))(\[|\+?=)/

/**
 * bash's own integer variables: a value given to one is evaluated as arithmetic, so `OPTIND='a[$(cmd)]'` runs cmd
 * (as `read RANDOM`, `for OPTIND in …` and `mapfile -t OPTIND` do).
 */
const INTEGER_SPECIALS =
  /^(OPTIND|OPTERR|RANDOM|SRANDOM|SECONDS|LINENO|HISTCMD|BASHPID|BASH_SUBSHELL|EPOCHSECONDS|EPOCHREALTIME)$/

/** Whether `name` is a variable whose value bash or a program runs as code or evaluates (the names above). */
const evaluatedName = (name: string): boolean => INTEGER_SPECIALS.test(name) || CODE_VARIABLES.test(`${name}=`)

/**
 * Variables that say where programs read their configuration from (which may run code: git's `core.fsmonitor` in
 * `$HOME/.gitconfig`), or where `cd` leads: setting one takes what runs, or where, out of the line's text.
 */
const PLACE_VARIABLES = /^(HOME|XDG_CONFIG_HOME|CDPATH)(\[|\+?=)/

/**
 * Variables naming a file a program writes to (git's traces: `GIT_TRACE=/path` appends to that file; the dynamic
 * loader's `LD_DEBUG_OUTPUT=PATH`, written as PATH.PID, and `LD_PROFILE_OUTPUT`, the folder of its profiles).
 */
const FILE_VARIABLES = /^(GIT_TRACE[A-Z0-9_]*|LD_DEBUG_OUTPUT|LD_PROFILE_OUTPUT)(\[|\+?=)/

/** The variables setting one of which makes a statement opaque, with what the reason says of it. */
const NAMED: ReadonlyArray<readonly [RegExp, string]> = [
  [CODE_VARIABLES, "holds code or a command that other programs run"],
  [PLACE_VARIABLES, "says where programs read configuration that can run code, or where cd leads"],
  [FILE_VARIABLES, "names a file the program writes, which the edit rules cannot see"],
]

/** Makes the statement opaque when it sets a variable some program runs as code, or one bash evaluates. */
export const codeVariables = (assignments: ReadonlyArray<string>, resource: string, collector: Sink): void => {
  for (const [names, says] of NAMED) {
    const found = assignments.find((assignment) => names.test(assignment))
    if (found === undefined) continue
    collector.opaque.push({ resource, reason: `${found.split(/\+?=/)[0]} ${says}` })
    return
  }
  const integer = assignments
    .map((assignment) => /^([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=(.*)$/s.exec(assignment))
    .find((parts) => parts !== null && INTEGER_SPECIALS.test(parts[1]!) && !/^\d*$/.test(parts[2]!))
  if (integer !== undefined && integer !== null) {
    collector.opaque.push({ resource, reason: `${integer[1]} is an integer variable of bash's: the value given to it is evaluated as arithmetic` })
  }
}

/**
 * Commands that set a variable from text core cannot see (`read NAME`, `mapfile NAME`, `printf -v NAME`,
 * `getopts OPTS NAME`): opaque when NAME is one bash evaluates or a program runs (`read PS4 <<< '$(cmd)'`).
 */
const SETTERS: ReadonlySet<string> = new Set(["read", "mapfile", "readarray", "printf", "getopts"])



/**
 * `a=([i]=v …)`: in an indexed array each subscript is evaluated as arithmetic (`[$x]=1` with x holding
 * `b[$(cmd)]` runs cmd); the grammar gives such an element as plain words. An associative array's keys (declared
 * `-A` in the same statement) are not evaluated.
 */
const arraySubscripts = (node: Node, collector: Sink): void => {
  const declaration = node.parent?.parent
  if (declaration?.type === "declaration_command" && declaration.children.some((child) => child !== null && /^-[A-Za-z]*A/.test(child.text))) return
  for (const element of node.namedChildren) {
    // To the last `]=` of the element: bash finds a subscript's end past the brackets and quotes inside it
    // (`['b[$(cmd)]']=1`), and a subscript read too long is only looked at more warily.
    const subscript = element === null ? undefined : /^\[(.*)\]\+?=/s.exec(element.text)?.[1]
    if (subscript === undefined) continue
    const names = subscript.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []
    const unsafe = /\$[({]|`/.test(subscript) || names.some((name) => !collector.numeric.has(name))
    if (unsafe) {
      collector.opaque.push({
        resource: collector.within ?? statementOf(node),
        reason: `it evaluates the array subscript [${subscript}] as arithmetic, and a value such as x[$(cmd)] runs cmd`,
      })
      return
    }
  }
}

/** Declaration builtins that may assign to an array. */
const DECLARES: ReadonlySet<string> = new Set(["declare", "typeset", "local", "readonly"])

/**
 * What in a line can make a name an array: the names it gives a list or a subscript (`a=(…)`, `a+=(…)`, `a[0]=`),
 * the names after an option cluster ending in `a` or `A` (`declare -a a`, `local -A m`), and whether it reads
 * into arrays (mapfile, readarray, read -a).
 */
interface ArrayMakers {
  readonly names: ReadonlySet<string>
  readonly reads: boolean
}

/**
 * Each line's ArrayMakers, read once: testing the line again for each name a declaration assigns took time in the
 * line's length times its names, and the model writes both (seconds for `declare` and 10,000 assignments).
 */
const arrayMakersOf = new WeakMap<Sink, ArrayMakers>()

const arrayMakers = (collector: Sink): ArrayMakers => {
  const known = arrayMakersOf.get(collector)
  if (known !== undefined) return known
  const names = new Set<string>()
  for (const match of collector.line.matchAll(/(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*(?=\+?=\(|\[)/g)) names.add(match[0])
  for (const match of collector.line.matchAll(/-[A-Za-z]*[aA]\s+(\w+)/g)) names.add(match[1]!)
  const makers = { names, reads: /mapfile|readarray|read\s+-[A-Za-z]*a/.test(collector.line) }
  arrayMakersOf.set(collector, makers)
  return makers
}

/**
 * `declare a=$x` (or `"a=(…)"`) re-reads the value as a compound assignment when `a` is an array, which evaluates
 * the command substitutions in it: opaque when the statement, or the line, can make the name an array.
 */
export const compoundDeclaration = (words: ReadonlyArray<Word>, resource: string, collector: Sink): void => {
  if (!DECLARES.has(words[0]!.value!)) return
  const args = words.slice(1)
  const arrays = args.some((word) => /^-[A-Za-z]*[aA]/.test(word.value ?? ""))
  for (const word of args) {
    const name = /^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=/.exec((word.value ?? word.text).replace(/^["']/, ""))?.[1]
    if (name === undefined) continue
    const quoted = /^["']/.test(word.text) && /^[^=]*=\(/.test(word.value ?? "") && /[$`]/.test(word.value ?? word.text)
    const value = word.text.slice(word.text.indexOf("=") + 1)
    const madeArray = arrays || arrayMakers(collector).names.has(name) || arrayMakers(collector).reads
    // `a=(…)` written out is parsed with the line (its subscripts are checked as arithmetic); only a value that
    // becomes a string first is re-read.
    const literalArray = !/^["']/.test(word.text) && value.startsWith("(")
    if (quoted || (!literalArray && /[$`]/.test(value) && madeArray)) {
      collector.opaque.push({ resource, reason: `${words[0]!.value} re-reads the value of ${name} as an array, which runs the commands it holds` })
      return
    }
  }
}

/** Builtins that evaluate what they are given as arithmetic, or a variable name's subscript: opaque when they might. */
export const evaluatingCommand = (words: ReadonlyArray<Word>, resource: string, collector: Sink): void => {
  const name = words[0]!.value!
  const args = words.slice(1)
  if (SETTERS.has(name)) {
    const set = args.find((word) => word.value !== undefined && evaluatedName(word.value.replace(/\[.*$/s, "")))
    if (set !== undefined) {
      collector.opaque.push({ resource, reason: `${name} sets ${set.value}, whose value bash evaluates or a program runs` })
      return
    }
  }
  const flags = args.filter((word) => /^[-+][A-Za-z]+$/.test(word.value ?? "")).map((word) => word.value!)
  const opaque = (reason: string) => collector.opaque.push({ resource, reason })
  if (name === "let" && args.some((word) => word.value === undefined || !/^[\d\s+\-*/%()<>=!&|^~?:]*$/.test(word.value))) {
    opaque("let evaluates variables as arithmetic, and a value such as x[$(cmd)] runs cmd")
  } else if (["declare", "typeset", "local", "readonly", "export"].includes(name) && flags.some((flag) => /[in]/.test(flag))) {
    opaque(`${name} -i or -n makes later values evaluated as arithmetic or as names, which can run commands`)
  } else if (
    ["unset", "printf", "read", "declare", "typeset", "local", "readonly", "export", "test", "[", "mapfile", "readarray", "getopts", "wait"].includes(name) &&
    (args.some((word) => subscripted(word.value ?? word.text)) || namesFromExpansion(name, args))
  ) {
    opaque(`${name} is given a variable name whose subscript is evaluated, which can run commands`)
  }
}

/** Whether a builtin is given a variable name held in an expansion (`unset "$x"`, `printf -v "$x"`, `test -v "$x"`). */
const namesFromExpansion = (name: string, args: ReadonlyArray<Word>): boolean => {
  const expanded = (word: Word | undefined) => word !== undefined && /[$`]/.test(word.text)
  switch (name) {
    case "printf":
    case "wait":
      return args.some((word, index) => word.value === "-v" || word.value === "-p" ? expanded(args[index + 1]) : false)
    case "test":
    case "[":
      return args.some((word, index) => word.value === "-v" && expanded(args[index + 1]))
    case "unset":
    case "read":
    case "mapfile":
    case "readarray":
      return args.some((word) => !(word.value ?? "").startsWith("-") && word.value === undefined && /^["']?\$/.test(word.text))
    default:
      // declare and the like: the name before `=`.
      return args.some((word) => /[$`]/.test(word.text.split("=")[0]!))
  }
}

