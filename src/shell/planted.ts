export * as Planted from "./planted"

// Commands that plant code the user's own git runs later, outside any sandbox: a git setting naming a program
// (`core.hooksPath`, `core.fsmonitor`, `alias.x = !cmd`, a filter or textconv driver, an included config file),
// hooks installed from a template, and writes into `.git/hooks`, `.git/config` or `.git/info/attributes`. Such a
// change is asked of a person each time, as core's own configuration is. Pure: it reads words and paths.

import { basename } from "node:path"
import type { Words } from "./words"

type Word = Words.Word

/** What a person is told such a change would change. */
export const WHAT = "code that git runs for the user outside the sandbox (hooks, commands in git's configuration)"

/**
 * git settings whose value is a program, a command line, hooks or more configuration: git runs them for whoever
 * next runs git here (the user, their editor), outside any sandbox.
 */
const CODE_KEYS = new RegExp(
  "^(" +
    [
      "core\\.(hookspath|fsmonitor|sshcommand|pager|editor|askpass|gitproxy|alternaterefscommand|attributesfile|excludesfile|worktree)",
      "alias\\..+",
      "filter\\..+",
      "diff\\..+\\.(textconv|command)",
      "diff\\.external",
      "merge\\..+\\.driver",
      "include\\.path",
      "includeif\\..+",
      "credential\\..*helper",
      "sequence\\.editor",
      "pager\\..+",
      "gpg\\.(.+\\.)?program",
      "uploadpack\\.packobjectshook",
      "remote\\..+\\.(uploadpack|receivepack|proxy|vcs)",
      "protocol\\..+",
      "url\\..+",
      "submodule\\..+\\.update",
      "(web|browser|man|difftool|mergetool|sendemail)\\..*(cmd|path|browser|tool|smtpserver)",
      "instaweb\\..+",
      "http\\..*(proxy|sslcainfo|cookiefile)",
      "fetch\\.fsck.*|transfer\\.fsck.*|receive\\.fsck.*",
      "init\\.templatedir",
      "safe\\.directory",
      "interactive\\.difffilter",
      "trailer\\..+\\.(command|cmd)",
      "imap\\.tunnel",
      "guitool\\..+",
      "gpg\\.ssh\\.(defaultkeycommand|allowedsignersfile)",
      "ssh\\.variant",
      "tar\\..+\\.command",
      "hook\\..+",
      "svn\\.authorsprog",
      "git-p4\\..+",
      "lfs\\.(extension|customtransfer)\\..+",
      "lfs\\.standalonetransferagent",
    ].join("|") +
    ")$",
  // A subsection may hold any character but a line feed and NUL (a carriage return, U+2028): `.` matches them too.
  "s",
)

/** git config options that take a value and are not the key. */
const CONFIG_VALUED = ["-f", "--file", "--blob", "--type", "--default", "--comment", "--value"]

/** git config actions that read, or remove, and plant nothing. */
const CONFIG_READS = /^--(get|get-all|get-regexp|get-urlmatch|get-color|get-colorbool|list|show-origin|show-scope|unset|unset-all|remove-section|name-only|null|includes|no-includes|fixed-value)$|^-[lz]$/

/** The key a `git config …` call (its words after `config`) sets, if it sets one. */
const setKey = (args: ReadonlyArray<Word>): string | undefined | "unknown" => {
  const operands: Array<Word> = []
  let action: string | undefined
  for (let index = 0; index < args.length; index++) {
    const value = args[index]!.value
    if (value === undefined) return "unknown"
    if (CONFIG_VALUED.includes(value)) {
      index++
      continue
    }
    if (value.startsWith("-")) {
      if (CONFIG_READS.test(value)) action = "read"
      else if (value === "-e" || value === "--edit") return "unknown"
      continue
    }
    operands.push(args[index]!)
  }
  // `git config set KEY VALUE` (git 2.46) and the older `git config KEY VALUE`.
  const [first, ...rest] = operands
  if (first?.value === "set") return rest.length >= 2 ? rest[0]!.value : undefined
  if (["get", "list", "unset", "remove-section", "rename-section"].includes(first?.value ?? "")) return undefined
  if (first?.value === "edit") return "unknown"
  return action === undefined && operands.length >= 2 ? first!.value : undefined
}

/** `git -c KEY=VALUE` and `--config KEY=VALUE` of clone: the keys set. */
const keyOf = (assignment: string): string => assignment.split("=")[0]!.toLowerCase()

/**
 * What the git command `words` (a command with a literal name) would plant for the user's own git, or undefined
 * when it plants nothing: `git config core.hooksPath x`, `git init --template=DIR`, `git clone -c alias.x=!cmd`.
 */
export const git = (words: ReadonlyArray<Word>): string | undefined => {
  if (basename(words[0]!.value!) !== "git") return undefined
  let index = 1
  for (; index < words.length; index++) {
    const value = words[index]!.value ?? ""
    if (["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"].includes(value)) index++
    else if (!value.startsWith("-")) break
  }
  const subcommand = words[index]?.value
  const args = words.slice(index + 1)
  if (subcommand === "config") {
    const key = setKey(args)
    if (key === "unknown") return "git config with a key or action known only when it runs"
    if (key !== undefined && CODE_KEYS.test(key.toLowerCase())) return `git config ${key}`
    return undefined
  }
  if (subcommand === "init" || subcommand === "clone") {
    for (let at = 0; at < args.length; at++) {
      const value = args[at]!.value ?? args[at]!.text
      if (/^--template(=|$)/.test(value)) return `git ${subcommand} --template, which installs hooks`
      if (subcommand === "clone" && /^(-c|--config)$/.test(value)) {
        const setting = args[at + 1]?.value
        if (setting === undefined || CODE_KEYS.test(keyOf(setting))) return `git clone ${value} ${args[at + 1]?.text ?? ""}`.trim()
      }
      const attached = /^--config=(.*)$/s.exec(value)?.[1]
      if (subcommand === "clone" && attached !== undefined && CODE_KEYS.test(keyOf(attached))) return `git clone --config ${attached}`
    }
  }
  return undefined
}

/** Whether an assignment sets where `git init` and `git clone` copy hooks from (`GIT_TEMPLATE_DIR=./t`). */
export const template = (assignment: string): boolean => /^GIT_TEMPLATE_DIR\+?=/.test(assignment)

/** What gitPath looks for at a path's end; `.*` runs to the end, as a path without line breaks is tested. */
const GIT_TAIL = /(^|\/)\.git(\/(hooks(\/.*)?|config(\.worktree)?|commondir|info(\/attributes)?|info\/?))?$/i
/** The same after a line break, where only a `/` can begin it. */
const GIT_TAIL_AFTER_BREAK = /\/\.git(\/(hooks(\/.*)?|config(\.worktree)?|commondir|info(\/attributes)?|info\/?))?$/i

/**
 * Whether a path, as written, leads into what git runs or reads as configuration for the user: `.git/hooks`,
 * `.git/config`, `.git/config.worktree`, `.git/commondir` (where the hooks and config are), `.git/info/attributes`,
 * or the `.git`, `.git/info` directories holding them. Only what follows the
 * last line break can end such a path (`.` takes no line break), so only that is tested: the model writes the path,
 * and testing all of it read to the line break from every `/.git/hooks/` before it.
 */
export const gitPath = (value: string): boolean => {
  const normal = value.replace(/\/{2,}/g, "/").replace(/(^|\/)\.\//g, "$1").replace(/\/+$/, "")
  const lastBreak = Math.max(normal.lastIndexOf("\n"), normal.lastIndexOf("\r"), normal.lastIndexOf("\u2028"), normal.lastIndexOf("\u2029"))
  return lastBreak === -1 ? GIT_TAIL.test(normal) : GIT_TAIL_AFTER_BREAK.test(normal.slice(lastBreak + 1))
}

/**
 * Whether git configuration text sets a key that runs or loads code (CODE_KEYS), as git reads sections (`[core]`,
 * `[filter "x"]`, `[filter.x]`) and keys (`name = value`, a bare `name`, one after a section header on its line).
 * What it cannot read as configuration counts as running code: git may read it otherwise. `allowed`: keys (lower
 * case, `section.key`) the caller has checked itself.
 */
export const configRunsCode = (text: string, allowed?: (key: string) => boolean): boolean => withoutCode(text, allowed) !== text

/**
 * The git configuration text without the lines setting a key that runs or loads code (see `configRunsCode`), each
 * with the lines its value goes on to; every other line as it was, its line ends kept. Undefined where it cannot be
 * read as configuration.
 */
export const withoutCode = (text: string, allowed?: (key: string) => boolean): string | undefined => {
  let section = ""
  /** Inside a value continued from the line before (a backslash ending it), and whether inside its quotes. */
  let continued: { readonly quoted: boolean } | undefined
  /** Whether the value going on is a key's that runs code (its lines go with it). */
  let dropping = false
  const kept: Array<string> = []
  for (const part of text.split(/(?<=\n)/)) {
    const raw = part.replace(/\r?\n$/, "")
    if (continued !== undefined) {
      continued = valueGoesOn(raw.trimEnd(), continued.quoted)
      if (!dropping) kept.push(part)
      continue
    }
    dropping = false
    const line = raw.trim()
    if (line === "" || line.startsWith("#") || line.startsWith(";")) {
      kept.push(part)
      continue
    }
    let rest = line
    let header = ""
    if (line.startsWith("[")) {
      const found = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]/.exec(line)
      if (found === null) return undefined
      section = found[2] === undefined ? found[1]! : `${found[1]}.${found[2]}`
      rest = line.slice(found[0].length).trim()
      if (rest === "" || rest.startsWith("#") || rest.startsWith(";")) {
        kept.push(part)
        continue
      }
      header = found[0]
    }
    const key = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=|$|[#;])/.exec(rest)
    if (key === null || section === "") return undefined
    const name = `${section}.${key[1]}`.toLowerCase()
    const equals = /^[A-Za-z][A-Za-z0-9-]*\s*=/.exec(rest)
    if (equals !== null) continued = valueGoesOn(rest.slice(equals[0].length), false)
    if (CODE_KEYS.test(name) && allowed?.(name) !== true) {
      dropping = true
      // A key on its section's line: the section stays.
      if (header !== "") kept.push(`${header}\n`)
    } else kept.push(part)
  }
  return kept.join("")
}

/**
 * Whether a value's text (the rest of its line) goes on to the next line, as git reads it: only a backslash
 * ending it, outside a comment (`#` or `;` outside quotes ends the value; a backslash there is the comment's).
 * Answers the quotes it ends inside, which carry over; undefined where it ends on this line.
 */
const valueGoesOn = (text: string, quoted: boolean): { readonly quoted: boolean } | undefined => {
  for (let index = 0; index < text.length; index++) {
    const char = text[index]
    if (char === "\\") {
      if (index === text.length - 1) return { quoted }
      index++
    } else if (char === '"') quoted = !quoted
    else if (!quoted && (char === "#" || char === ";")) return undefined
  }
  return undefined
}
