export * as Hints from "./hints"

// What the settler tells a model so it can correct itself: each schema issue by path, core's own tool for a name
// another product uses (`run_shell_command`, `str_replace_editor`), and the key an unknown input key was meant to
// be (`file_path` for `filePath`). Pure: it reads names and issues, never the registry.

import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { Distance } from "../registry/distance"

/** Names other agent products give their tools, by core's built-in that does the same job. */
const EQUIVALENTS: ReadonlyArray<readonly [core: string, others: ReadonlyArray<string>]> = [
  [
    "bash",
    [
      "run_shell_command", "shell", "run_command", "execute_command", "run_terminal_cmd", "terminal",
      "exec_command", "local_shell", "container_exec", "run_in_terminal", "execute_bash", "cmd",
    ],
  ],
  ["read", ["read_file", "view_file", "open_file", "cat", "view", "read_many_files", "file_read"]],
  [
    "edit",
    [
      "str_replace_editor", "str_replace_based_edit_tool", "str_replace", "replace", "edit_file", "multiedit",
      "replace_in_file", "search_replace", "file_edit", "replace_string_in_file",
    ],
  ],
  ["write", ["write_file", "create_file", "write_to_file", "file_write", "save_file", "new_file"]],
  ["apply_patch", ["apply_diff", "patch", "applypatch", "apply_unified_diff"]],
  ["glob", ["find_files", "file_search", "find_by_name", "list_files_glob", "find"]],
  ["grep", ["search_file_content", "grep_search", "search_files", "ripgrep", "rg", "codebase_search", "search"]],
  ["list", ["ls", "list_directory", "list_dir", "list_files", "dir"]],
]

const byOtherName: ReadonlyMap<string, string> = new Map(
  EQUIVALENTS.flatMap(([core, others]) => [...others.map((other) => [other, core] as const), [core, core] as const]),
)

/**
 * core's tool for a name another product uses (compared without case: `Bash`, `Read`), when `offered` has it
 * and it is not the very name asked for.
 */
export const equivalent = (name: string, offered: (name: string) => boolean): string | undefined => {
  const core = byOtherName.get(name.toLowerCase())
  return core !== undefined && core !== name && offered(core) ? core : undefined
}

/** A key spelled without case, `_` or `-`: `file_path`, `filepath` and `filePath` are the same. */
const normalize = (key: string) => key.toLowerCase().replace(/[_-]/g, "")

/**
 * How far `given` is from `known`: 0 for the same key spelled otherwise, 1 for a unit or prefix away; past `limit`,
 * `limit + 1` (only as far as a slip goes is worked out).
 */
const distance = (given: string, known: string, limit: number): number => {
  const a = normalize(given)
  const b = normalize(known)
  if (a === b) return 0
  if (a.length >= 3 && b.length >= 3 && (a.startsWith(b) || b.startsWith(a))) return 1
  return Math.min(limit + 1, Distance.edits(a, b, limit) + 1)
}

/**
 * The most unknown keys a likely key is looked for: an input of tens of thousands of keys, each compared with every
 * key the tool takes, held the thread every call shares for twenty seconds.
 */
const MAX_PAIRED_KEYS = 20

/**
 * For each unknown key, the known key it most likely meant (preferring keys the input left out), when one is
 * close enough to be a slip rather than another idea.
 */
export const intendedKeys = (
  unknown: ReadonlyArray<string>,
  known: ReadonlyArray<string>,
  given: ReadonlySet<string>,
): ReadonlyMap<string, string> => {
  const pairs = new Map<string, string>()
  for (const key of unknown.slice(0, MAX_PAIRED_KEYS)) {
    const most = Math.max(2, Math.floor(normalize(key).length / 3))
    let best: { key: string; score: number } | undefined
    for (const candidate of known) {
      // A key the input already has is a worse guess than one it left out.
      const score = distance(key, candidate, most) + (given.has(candidate) ? 2 : 0)
      if (best === undefined || score < best.score) best = { key: candidate, score }
    }
    if (best !== undefined && best.score <= most) pairs.set(key, best.key)
  }
  return pairs
}

const issueFormatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** What the top-level keys of an input mean to its tool's schema (`misspelledKeys`). */
export interface Keys {
  /** Unknown keys paired with the keys they likely meant. */
  readonly pairs: ReadonlyMap<string, string>
  /** The keys the schema names, said for an unknown key with no likely one (rather than its value, quoted back). */
  readonly known?: ReadonlyArray<string>
}

const NO_KEYS: Keys = { pairs: new Map() }

/** The most keys named for an unknown key. */
const MAX_NAMED_KEYS = 12

/** The most characters of an issue's path (its keys) said. */
const MAX_PATH_CHARS = 200

/** The most issues of an input described, one line each; the rest are counted. */
const MAX_ISSUES = 20

/** A schema error's issues, one line each by path; unknown keys named with the keys they meant, or the tool's keys. */
export const describeIssues = (error: unknown, keys: Keys = NO_KEYS): string => {
  if (!Schema.isSchemaError(error)) return String(error)
  const issues = issueFormatter(error.issue).issues
  const more = issues.length > MAX_ISSUES ? [`- … and ${issues.length - MAX_ISSUES} more issues like these`] : []
  return issues
    .slice(0, MAX_ISSUES)
    .map((issue) => {
      const whole = issue.path === undefined || issue.path.length === 0 ? "(root)" : issue.path.map(String).join(".")
      // A key is a model's text, of any length: quoted back cut.
      const path = whole.length > MAX_PATH_CHARS ? `${whole.slice(0, MAX_PATH_CHARS)}…` : whole
      const key = issue.path?.length === 1 ? String(issue.path[0]) : undefined
      const intended = key === undefined ? undefined : keys.pairs.get(key)
      if (intended !== undefined) return `- ${path}: unknown key; did you mean "${intended}"?`
      const { known } = keys
      if (key !== undefined && known !== undefined && !known.includes(key) && issue.message.startsWith("Unexpected key")) {
        const named = known.length === 0 ? "it takes none" : `its keys are ${known.slice(0, MAX_NAMED_KEYS).join(", ")}${known.length > MAX_NAMED_KEYS ? ", ..." : ""}`
        return `- ${path}: unknown key (${named})`
      }
      return `- ${path}: ${shortened(issue.message)}`
    })
    .concat(more)
    .join("\n")
}

/**
 * The most of one problem's words the model reads back: they quote the value given (a 300 KB pattern, 101 todo
 * items), which it sent and has; past this, only its start.
 */
const MAX_ISSUE_CHARS = 400

const shortened = (message: string): string => {
  if (message.length <= MAX_ISSUE_CHARS) return message
  // Never half a character: a high surrogate at the cut goes with its pair.
  const cut = /[\ud800-\udbff]/.test(message[MAX_ISSUE_CHARS - 1]!) ? MAX_ISSUE_CHARS - 1 : MAX_ISSUE_CHARS
  return `${message.slice(0, cut)}… [${message.length - cut} more characters of the value given]`
}

/**
 * The top-level keys of `input` the tool's input JSON Schema does not name, paired with the keys they meant, and
 * the keys it names.
 */
export const misspelledKeys = (input: unknown, schema: { readonly [key: string]: unknown }): Keys => {
  const properties = schema.properties
  if (typeof input !== "object" || input === null || Array.isArray(input)) return NO_KEYS
  if (typeof properties !== "object" || properties === null) return NO_KEYS
  const known = Object.keys(properties)
  const given = Object.keys(input)
  const unknown = given.filter((key) => !Object.hasOwn(properties, key))
  return unknown.length === 0 ? { pairs: new Map(), known } : { pairs: intendedKeys(unknown, known, new Set(given)), known }
}
