export * as Skills from "./skills"

// Skills: directories holding a SKILL.md (frontmatter `name` and `description`, then instructions in Markdown),
// found in a Location's `.core/skills/`, `.opencode/skills/`, `.opencode/skill/` and `.claude/skills/` (so skills
// written for other agents work) and in `$CORE_HOME/skills/`. A name found twice keeps the first by that order, the
// Location's before the home's. What is wrong with a skill (no frontmatter, a bad line, a missing or invalid name or
// description, a clash, a directory leading out of the Location) is a diagnostic naming its file; the rest load.
// Pure discovery and parsing over the file system: no registry, no permission.

import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs"
import { join, relative, sep } from "node:path"
import { Boundary } from "../permission/boundary"
import { FileText } from "../permission/file-text"
import { Protected } from "../permission/protected"
import type { Discovery } from "./discovery"

/** Where a Location's skills are, in order of precedence (relative to the Location); protected as core.json is. */
export const LOCATION_ROOTS = Protected.SKILL_FOLDERS
/** Where `$CORE_HOME`'s skills are, relative to it. */
export const HOME_ROOT = "skills"
export const FILE_NAME = "SKILL.md"

/** A skill's name: lowercase letters and digits in words joined by single hyphens. */
export const NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/
export const MAX_NAME_CHARS = 64
export const MAX_DESCRIPTION_CHARS = 1_024
/** A SKILL.md larger than this is not read. */
export const MAX_FILE_BYTES = 1024 * 1024
/** Files listed per skill; the rest are counted. */
export const MAX_LISTED_FILES = 100
/** Directories looked into per skill when listing its files. */
const MAX_WALKED_DIRECTORIES = 200

export interface Skill {
  readonly name: string
  readonly description: string
  /** The SKILL.md, by the path it was found at. */
  readonly file: string
  /** The skill's directory, where it really is. */
  readonly directory: string
  readonly scope: "location" | "home"
}

export interface Found {
  /** By name, in order of discovery. */
  readonly skills: ReadonlyArray<Skill>
  readonly diagnostics: ReadonlyArray<Discovery.Diagnostic>
}

export interface Parsed {
  readonly name: string
  readonly description: string
  readonly body: string
}

/** A SKILL.md's frontmatter and body, or what is wrong with it. */
export const parse = (text: string): { readonly _tag: "Parsed"; readonly parsed: Parsed } | { readonly _tag: "Invalid"; readonly message: string } => {
  const invalid = (message: string) => ({ _tag: "Invalid" as const, message })
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/)
  if (lines[0]?.trimEnd() !== "---") {
    return invalid("no frontmatter: SKILL.md must start with a line `---`, then `name:` and `description:` lines, then `---`")
  }
  const end = lines.findIndex((line, index) => index > 0 && line.trimEnd() === "---")
  if (end === -1) return invalid("the frontmatter is not closed: add a line `---` after its last key")
  const values = new Map<string, string>()
  for (let index = 1; index < end; ) {
    const line = lines[index]!
    if (line.trim() === "" || line.trimStart().startsWith("#")) {
      index++
      continue
    }
    const entry = keyValue(line)
    if (entry === undefined) {
      return invalid(`frontmatter line ${index + 1} is not \`key: value\`: ${JSON.stringify(line.slice(0, 80))}`)
    }
    const [key, raw] = entry
    // The lines indented under this key: a block scalar's text, a plain value's continuation, or a nested value.
    const nested: Array<string> = []
    index++
    while (index < end && (lines[index]!.trim() === "" || /^\s/.test(lines[index]!))) nested.push(lines[index++]!)
    while (nested.length > 0 && nested[nested.length - 1]!.trim() === "") nested.pop()
    if (key !== "name" && key !== "description") continue
    if (values.has(key)) return invalid(`\`${key}\` is given twice in the frontmatter`)
    const value = scalar(raw, nested)
    if (value === undefined) return invalid(`\`${key}\` must be text (a quoted or plain value, or a | or > block)`)
    values.set(key, value)
  }
  const name = values.get("name")
  const description = values.get("description")
  if (name === undefined) return invalid("the frontmatter has no `name`")
  if (name === "") return invalid("the frontmatter's `name` is empty")
  if (name.length > MAX_NAME_CHARS || !NAME.test(name)) {
    return invalid(
      `the name ${JSON.stringify(name.slice(0, 80))} is not a skill name: lowercase letters and digits, words joined by ` +
        `single hyphens, at most ${MAX_NAME_CHARS} characters (e.g. pdf-forms)`,
    )
  }
  if (description === undefined) return invalid("the frontmatter has no `description`")
  if (description.trim() === "") return invalid("the frontmatter's `description` is empty: say when the skill applies")
  if (description.length > MAX_DESCRIPTION_CHARS) {
    return invalid(`the description has ${description.length} characters; at most ${MAX_DESCRIPTION_CHARS}`)
  }
  const body = lines.slice(end + 1).join("\n").replace(/^\n+/, "").trimEnd()
  return { _tag: "Parsed", parsed: { name, description: description.trim(), body } }
}

/**
 * A frontmatter line's key and its value trimmed (`key: value`, or `key:` alone), or undefined when the line is not
 * one. Read by hand, as a line a pattern like `:\s+(.*?)\s*$` tried for every split of its spaces took cubic time.
 */
const keyValue = (line: string): readonly [string, string] | undefined => {
  const key = /^[A-Za-z0-9_-]+:/.exec(line)?.[0]
  if (key === undefined) return undefined
  const rest = line.slice(key.length)
  if (rest !== "" && !/^\s/.test(rest)) return undefined
  const value = rest.trim()
  return /[\n\r\u2028\u2029]/.test(value) ? undefined : [key.slice(0, -1), value]
}

/** `text` less a trailing comment: the spaces and the `#` after them that no line break follows, and the rest. */
const uncommented = (text: string): string => {
  const last = Math.max(text.lastIndexOf("\n"), text.lastIndexOf("\r"), text.lastIndexOf("\u2028"), text.lastIndexOf("\u2029"))
  const comment = /\s#/g
  comment.lastIndex = Math.max(last, 0)
  const found = comment.exec(text)
  if (found === null) return text
  let start = found.index
  while (start > 0 && /\s/.test(text[start - 1]!)) start--
  return text.slice(0, start)
}

/**
 * A YAML scalar from a key's rest of line and its indented lines: 'single' or "double" quoted on one line, a `|` or
 * `>` block, or a plain value (its indented lines folded into it). Undefined for anything else (a list, a map).
 */
const scalar = (raw: string, nested: ReadonlyArray<string>): string | undefined => {
  const block = /^([|>])[+-]?$/.exec(raw)
  if (block !== null) {
    const indent = Math.min(...nested.filter((line) => line.trim() !== "").map((line) => line.length - line.trimStart().length))
    const text = nested.map((line) => line.slice(indent))
    return block[1] === "|" ? text.join("\n").trim() : text.map((line) => line.trim()).join(" ").replace(/\s+/g, " ").trim()
  }
  if (raw.startsWith('"')) {
    if (nested.length > 0) return undefined
    try {
      const value: unknown = JSON.parse(raw)
      return typeof value === "string" ? value : undefined
    } catch {
      return undefined
    }
  }
  if (raw.startsWith("'")) {
    if (nested.length > 0 || !/^'(?:[^']|'')*'$/.test(raw)) return undefined
    return raw.slice(1, -1).replaceAll("''", "'")
  }
  if (raw === "" && nested.length > 0) return undefined
  if (/^[[{&*!|>%@`-]/.test(raw) && raw !== "-" && !/^-[^\s]/.test(raw)) return undefined
  const folded = [raw, ...nested.map((line) => line.trim())].join(" ").trim()
  return uncommented(folded)
}

/** The skill directories under `root` (sorted by name), each with its SKILL.md. */
const candidates = (root: string): ReadonlyArray<{ readonly directory: string; readonly file: string }> => {
  let names: Array<string>
  try {
    names = readdirSync(root).sort()
  } catch {
    return []
  }
  return names
    .map((name) => ({ directory: join(root, name), file: join(root, name, FILE_NAME) }))
    .filter(({ file }) => {
      try {
        return statSync(file).isFile()
      } catch {
        return false
      }
    })
}

/** Reads one skill, or says what is wrong with it. */
const readSkill = (
  file: string,
  directory: string,
  scope: Skill["scope"],
  within: string | undefined,
): { readonly skill: Skill } | { readonly message: string } => {
  let real: string
  try {
    real = realpathSync(directory)
  } catch (cause) {
    return { message: `cannot be read: ${(cause as Error).message}` }
  }
  if (within !== undefined && !Boundary.isWithin(within, real)) {
    return { message: `its directory leads outside the Location (to ${real}); a Location's skills stay inside it` }
  }
  // Opened without waiting (a FIFO there held core for good) and read only within its bound.
  const text = FileText.read(file, MAX_FILE_BYTES)
  if (text === FileText.LARGE) return { message: `is over ${MAX_FILE_BYTES} bytes; a SKILL.md holds at most ${MAX_FILE_BYTES}` }
  if (text === undefined) return { message: "cannot be read: it is not a regular file, or reading it failed" }
  const result = parse(text)
  if (result._tag === "Invalid") return { message: result.message }
  const { name, description } = result.parsed
  return { skill: { name, description, file, directory: real, scope } }
}

/** The skills of a Location and of `$CORE_HOME`, with what is wrong with the others. */
export const discover = (location: string, home: string): Found => {
  const skills = new Map<string, Skill>()
  const diagnostics: Array<Discovery.Diagnostic> = []
  const roots = [
    ...LOCATION_ROOTS.map((root) => ({ root: join(location, root), scope: "location" as const })),
    { root: join(home, HOME_ROOT), scope: "home" as const },
  ]
  for (const { root, scope } of roots) {
    for (const { directory, file } of candidates(root)) {
      const found = readSkill(file, directory, scope, scope === "location" ? location : undefined)
      if ("message" in found) {
        diagnostics.push({ file, message: `skill not loaded: ${found.message}` })
        continue
      }
      const first = skills.get(found.skill.name)
      if (first === undefined) {
        skills.set(found.skill.name, found.skill)
        continue
      }
      // The Location's skill of a name replaces the home's, as its tools do; within one scope, a clash is reported
      // unless both say the same (one skill kept in two agents' folders).
      if (first.scope !== found.skill.scope || sameText(first.file, file)) continue
      diagnostics.push({
        file,
        message: `skill not loaded: another skill is named "${found.skill.name}" (${first.file}), which is used; rename one`,
      })
    }
  }
  return { skills: [...skills.values()], diagnostics }
}

const sameText = (left: string, right: string): boolean => {
  try {
    return readFileSync(left, "utf8") === readFileSync(right, "utf8")
  } catch {
    return false
  }
}

/** A skill's instructions: its SKILL.md's body as the file is now (it may have changed since discovery). */
export const body = (skill: Skill): { readonly _tag: "Body"; readonly body: string } | { readonly _tag: "Invalid"; readonly message: string } => {
  // Read in the directory as it was found, and only where the file really lies inside it.
  const file = resolveInside(skill, join(skill.directory, FILE_NAME))
  if (file === undefined || file.directory) return { _tag: "Invalid", message: `its ${FILE_NAME} is gone` }
  const text = FileText.read(file.real, MAX_FILE_BYTES)
  if (text === FileText.LARGE) return { _tag: "Invalid", message: `its ${FILE_NAME} is over ${MAX_FILE_BYTES} bytes` }
  if (text === undefined) return { _tag: "Invalid", message: `its ${FILE_NAME} cannot be read (not a regular file, or reading it failed)` }
  const result = parse(text)
  if (result._tag === "Invalid") return result
  if (result.parsed.name !== skill.name) return { _tag: "Invalid", message: `it is now named "${result.parsed.name}"` }
  return { _tag: "Body", body: result.parsed.body }
}

export interface Listed {
  /** Relative to the skill's directory, `/`-separated, with their sizes in bytes. */
  readonly files: ReadonlyArray<{ readonly path: string; readonly bytes: number }>
  /** Files beyond MAX_LISTED_FILES. */
  readonly more: number
}

/**
 * The files of a skill's directory other than its SKILL.md, by path (breadth first, sorted): regular files whose
 * real path stays inside the directory, none that `hidden` names (the user's read rules and credential stores).
 */
export const files = (skill: Skill, hidden: (real: string) => boolean): Listed => {
  const listed: Array<{ path: string; bytes: number }> = []
  let more = 0
  const queue = [skill.directory]
  for (let walked = 0; walked < queue.length && walked < MAX_WALKED_DIRECTORIES; walked++) {
    const directory = queue[walked]!
    let names: Array<string>
    try {
      names = readdirSync(directory).sort()
    } catch {
      continue
    }
    for (const name of names) {
      const path = join(directory, name)
      const resolved = resolveInside(skill, path)
      if (resolved === undefined || hidden(resolved.real)) continue
      if (resolved.directory) {
        if (!lstatSync(path).isSymbolicLink()) queue.push(path)
        continue
      }
      const shown = relative(skill.directory, path).split(sep).join("/")
      if (shown === FILE_NAME) continue
      if (listed.length < MAX_LISTED_FILES) listed.push({ path: shown, bytes: resolved.bytes })
      else more++
    }
  }
  return { files: listed, more }
}

/** Where a path under a skill's directory really is, if it stays inside it and is a file or directory. */
export const resolveInside = (
  skill: Skill,
  path: string,
): { readonly real: string; readonly directory: boolean; readonly bytes: number } | undefined => {
  try {
    const real = realpathSync(path)
    if (!Boundary.isWithin(skill.directory, real)) return undefined
    const stat = statSync(real)
    if (!stat.isFile() && !stat.isDirectory()) return undefined
    return { real, directory: stat.isDirectory(), bytes: stat.size }
  } catch {
    return undefined
  }
}
