export * as Config from "./config"

// `core.json` (DESIGN §7): reads `<location>/core.json` and `<home>/core.json`, checks each against one schema,
// lowers permission maps to ordered rules that remember where they came from, and merges the two files (the
// Location's wins). A file that does not parse or check is refused with the first problem in document order; this
// module never guesses a value and never decides what a rule permits.

import { existsSync, statSync } from "node:fs"
import { join, resolve } from "node:path"
import type { Node } from "jsonc-parser"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { FileText } from "../permission/file-text"
import type { Rule } from "../permission/rule"
import { Document } from "./document"

export const FILE_NAME = "core.json"

// Schemas: the `expected` annotation on a schema (or on its last check) is what an error says was expected.

export const EffectWord = Schema.Literals(["allow", "deny", "ask"]).annotate({
  expected: '"allow", "deny" or "ask"',
})

/** `action -> effect`, or `action -> { resource pattern -> effect }`; later entries win. */
export const Permission = Schema.Record(
  Schema.String,
  Schema.Union([EffectWord, Schema.Record(Schema.String, EffectWord)]).annotate({
    expected: '"allow", "deny", "ask" or an object mapping resource patterns to one of them',
  }),
)
export type Permission = typeof Permission.Type

export const AgentName = Schema.String.check(
  Schema.isPattern(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, {
    expected: 'an agent name (a letter, then up to 63 letters, digits, "_" or "-")',
  }),
)

export const Agent = Schema.Struct({
  permission: Schema.optionalKey(Permission),
  description: Schema.optionalKey(Schema.String),
})

const integerAtLeast = (minimum: number) =>
  Schema.Int.check(Schema.isGreaterThanOrEqualTo(minimum, { expected: `an integer of at least ${minimum}` }))

/**
 * The longest wait a timer can hold: 2^31 - 1 ms (24.8 days). A longer one fires at once (JavaScript's timers keep a
 * 32-bit delay): a `shell.timeoutMs` of 1e12 timed every command out after a millisecond, saying it had run 1e12 ms.
 */
export const MAX_TIMER_MS = 2_147_483_647

/** A duration in milliseconds: an integer from `minimum` to MAX_TIMER_MS. */
const millisecondsAtLeast = (minimum: number) =>
  Schema.Int.check(
    Schema.isBetween(
      { minimum, maximum: MAX_TIMER_MS },
      { expected: `an integer number of milliseconds from ${minimum} to ${MAX_TIMER_MS} (24.8 days)` },
    ),
  )

export const Output = Schema.Struct({
  maxLines: Schema.optionalKey(integerAtLeast(8)),
  maxBytes: Schema.optionalKey(integerAtLeast(1024)),
  previewBytes: Schema.optionalKey(integerAtLeast(1024)),
  /** What one session's managed outputs may hold (bytes); past it, further outputs are answered without being kept. */
  maxSessionBytes: Schema.optionalKey(integerAtLeast(1_048_576)),
  /** Image parts over these are resized and re-encoded before they reach a model (bytes; pixels on the long side). */
  image: Schema.optionalKey(
    Schema.Struct({
      maxBytes: Schema.optionalKey(integerAtLeast(16_384)),
      maxDimension: Schema.optionalKey(integerAtLeast(64)),
    }),
  ),
  retentionDays: Schema.optionalKey(
    Schema.Finite.check(Schema.isGreaterThan(0, { expected: "a number greater than 0" })),
  ),
})
export type Output = typeof Output.Type

const PATHS_EXPECTED = 'an array of paths, like ["~/.ssh/known_hosts", "/opt/data"]'
const Paths = Schema.Array(Schema.String.check(Schema.isMinLength(1, { expected: "a non-empty path" })))
  .annotate({ expected: PATHS_EXPECTED })

export const Shell = Schema.Struct({
  timeoutMs: Schema.optionalKey(millisecondsAtLeast(1)),
  maxTimeoutMs: Schema.optionalKey(millisecondsAtLeast(1)),
  maxCaptureBytes: Schema.optionalKey(integerAtLeast(1)),
  inactivityTimeoutMs: Schema.optionalKey(millisecondsAtLeast(1)),
  /** Commands one session runs at once; its further calls wait their turn. */
  maxRunning: Schema.optionalKey(integerAtLeast(1)),
  /** The OS sandbox of commands: on where the kernel has Landlock (`auto`), always (`required`), or never (`off`). */
  sandbox: Schema.optionalKey(Schema.Literals(["auto", "required", "off"]).annotate({ expected: '"auto", "required" or "off"' })),
  /** Socket files (or directories of them) outside the Location sandboxed commands may connect to; `$VAR` and `~` expand. */
  sockets: Schema.optionalKey(Schema.Array(Schema.String.check(Schema.isMinLength(1, { expected: "a non-empty path" })))),
  /** More the sandbox grants or hides (`~/x`, absolute, or relative to the Location); a deny wins over a grant. */
  allowRead: Schema.optionalKey(Paths),
  allowWrite: Schema.optionalKey(Paths),
  denyRead: Schema.optionalKey(Paths),
})
export type Shell = typeof Shell.Type

export const Editing = Schema.Struct({
  /** write, edit: refuse a file the session never read or that changed since it read it (default true). */
  readBeforeWrite: Schema.optionalKey(Schema.Boolean),
})
export type Editing = typeof Editing.Type

/** A server's name prefixes its tools' names (`<server>_<tool>`), so it leaves room for "_" and one character. */
export const McpServerName = Schema.String.check(
  Schema.isPattern(/^[A-Za-z][A-Za-z0-9-]{0,61}$/, {
    expected: 'an MCP server name (a letter, then up to 61 letters, digits or "-")',
  }),
)

const COMMAND_EXPECTED = 'a command as an array of strings, like ["npx", "-y", "some-server"]'
const SERVER_EXPECTED =
  'either "command" (a server core starts, with "env") or "url" (a streamable HTTP server, with "headers")'

/**
 * One MCP server: a command core starts and speaks to over stdio (with `env`), or a streamable HTTP `url` (with
 * `headers`); `timeoutMs` bounds each call. One struct rather than a union, so a mistake is reported at its key.
 */
export const McpServer = Schema.Struct({
  command: Schema.optionalKey(
    Schema.Array(Schema.String.check(Schema.isMinLength(1, { expected: "a non-empty string" })))
      .annotate({ expected: COMMAND_EXPECTED })
      .check(Schema.isMinLength(1, { expected: COMMAND_EXPECTED })),
  ),
  env: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  url: Schema.optionalKey(
    Schema.String.check(Schema.isPattern(/^https?:\/\/\S+$/, { expected: "an http:// or https:// URL" })),
  ),
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  /** How long one call may take before it fails (default 60 s). */
  timeoutMs: Schema.optionalKey(millisecondsAtLeast(1)),
}).check(
  Schema.makeFilter(
    (server) =>
      server.command !== undefined
        ? server.url === undefined && server.headers === undefined
        : server.url !== undefined && server.env === undefined,
    { expected: SERVER_EXPECTED },
  ),
)
export type McpServer = typeof McpServer.Type

/** MCP servers whose tools the Location offers as `<server>_<tool>`. */
export const Mcp = Schema.Record(McpServerName, McpServer)
export type Mcp = typeof Mcp.Type

/** The whole of a `core.json`. Every key is optional; unknown keys are refused. */
export const File = Schema.Struct({
  $schema: Schema.optionalKey(Schema.String),
  permission: Schema.optionalKey(Permission),
  agents: Schema.optionalKey(Schema.Record(AgentName, Agent)),
  output: Schema.optionalKey(Output),
  shell: Schema.optionalKey(Shell),
  editing: Schema.optionalKey(Editing),
  mcp: Schema.optionalKey(Mcp),
})
export type File = typeof File.Type

// Errors

export class ConfigError extends Schema.TaggedError<ConfigError>()("Config.ConfigError", {
  /** Absolute path of the file. */
  file: Schema.String,
  /** Key path inside the file, like `permission.bash["rm *"]`; "" for the file itself or its top level. */
  path: Schema.String,
  expected: Schema.String,
  found: Schema.String,
  line: Schema.optionalKey(Schema.Number),
  column: Schema.optionalKey(Schema.Number),
  message: Schema.String,
}) {}

// Results

/** A rule lowered from a file, with the file and key path that wrote it. */
export interface SourcedRule extends Rule.Rule {
  readonly source: { readonly file: string; readonly path: string }
}

export interface AgentRules {
  readonly description?: string
  readonly rules: ReadonlyArray<SourcedRule>
}

/** One file, checked: its decoded content and its syntax tree (which alone keeps keys in document order). */
export interface Parsed {
  readonly file: string
  readonly content: File
  readonly tree: Node
}

/** An MCP server as configured, with the file that configured it. */
export interface McpEntry {
  readonly name: string
  readonly server: McpServer
  readonly file: string
}

/** What a configuration sets, lowered: rules in order, MCP servers, agents, and the other settings. */
interface Settings {
  readonly rules: ReadonlyArray<SourcedRule>
  readonly mcp?: ReadonlyArray<McpEntry>
  readonly agents: ReadonlyMap<string, AgentRules>
  readonly output: Output
  readonly shell: Shell
  readonly editing?: Editing
}

/** One file, lowered. */
export interface Lowered extends Settings {
  readonly file: string
}

/**
 * Both files together; `files` lists those that existed, in the order they apply (later wins). The rules are
 * core's default for each MCP server's tools (`<server>_*` asks), then the files' rules in order; the MCP servers
 * are by name, in document order, a server the Location names replacing the home's of that name.
 */
export interface Resolved extends Settings {
  readonly files: ReadonlyArray<string>
  /**
   * `output.retentionDays` as each file sets it: the operator's (`$CORE_HOME/core.json`) is every Location's that
   * sets none; the Location's own is that Location's alone (`output.retentionDays` is the one that applies to it).
   */
  readonly retentionDays: { readonly operator?: number; readonly location?: number }
}

export interface LoadOptions {
  /** The Location's directory. */
  readonly location: string
  /** The core home directory (`$CORE_HOME`). */
  readonly home: string
}

const failure = (file: string, text: string | undefined, problem: Document.Problem): ConfigError => {
  const path = Document.formatPath(problem.path)
  const at = text !== undefined && problem.offset !== undefined ? Document.position(text, problem.offset) : undefined
  const where = at === undefined ? file : `${file}:${at.line}:${at.column}`
  // Without text, the problem is the file itself (it could not be read), not a place in it.
  const subject = path !== "" ? `${path}: ` : text === undefined ? "" : "the top level: "
  const detail = problem.syntax ? `syntax error: ${problem.syntax}` : `${subject}expected ${problem.expected}, found ${problem.found}`
  return new ConfigError({
    file,
    path,
    expected: problem.expected,
    found: problem.found,
    ...(at === undefined ? {} : at),
    message: `${where}: ${detail}${problem.hint === undefined ? "" : ` (${problem.hint})`}`,
  })
}

const decode = Schema.decodeUnknownResult(File)
const DECODE_OPTIONS = { errors: "all", reportInput: true, onExcessProperty: "error" } as const

/** Parses and checks the text of one `core.json` (comments and trailing commas allowed). */
export const parseText = (file: string, text: string): Result.Result<Parsed, ConfigError> => {
  const read = Document.read(text)
  if (read._tag === "Syntax") return Result.fail(failure(file, text, read.problem))
  const decoded = decode(read.value, DECODE_OPTIONS)
  const issues = Result.isFailure(decoded) ? Document.fromIssue(decoded.failure.issue, read.tree) : []
  const first = Document.earliest([...read.duplicates, ...issues])
  if (first !== undefined) return Result.fail(failure(file, text, first))
  if (Result.isFailure(decoded)) {
    return Result.fail(failure(file, text, { path: [], expected: "a valid core.json", found: String(decoded.failure) }))
  }
  return Result.succeed({ file, content: decoded.success, tree: read.tree })
}

/** Lowers one permission map to rules in document order; `at` is the map's key path. */
const lowerPermission = (
  file: string,
  tree: Node,
  at: ReadonlyArray<string>,
  permission: Permission | undefined,
): Array<SourcedRule> => {
  if (permission === undefined) return []
  const rules: Array<SourcedRule> = []
  const rule = (action: string, resource: string, effect: Rule.Effect, path: ReadonlyArray<string>) =>
    rules.push({ action, resource, effect, source: { file, path: Document.formatPath(path) } })
  for (const action of Document.keysInOrder(tree, at)) {
    const value = permission[action]!
    if (typeof value === "string") {
      rule(action, "*", value, [...at, action])
      continue
    }
    for (const resource of Document.keysInOrder(tree, [...at, action])) {
      rule(action, resource, value[resource]!, [...at, action, resource])
    }
  }
  return rules
}

/** Lowers a checked file: top-level rules, per-agent rules, and the output and shell settings it sets. */
export const lower = (parsed: Parsed): Lowered => {
  const { file, content, tree } = parsed
  const agents = new Map<string, AgentRules>()
  for (const [name, agent] of Object.entries(content.agents ?? {})) {
    agents.set(name, {
      ...(agent.description === undefined ? {} : { description: agent.description }),
      rules: lowerPermission(file, tree, ["agents", name, "permission"], agent.permission),
    })
  }
  return {
    file,
    rules: lowerPermission(file, tree, ["permission"], content.permission),
    ...(content.mcp === undefined
      ? {}
      : { mcp: Document.keysInOrder(tree, ["mcp"]).map((name) => ({ name, server: content.mcp![name]!, file })) }),
    agents,
    output: content.output ?? {},
    shell: content.shell ?? {},
    ...(content.editing === undefined ? {} : { editing: content.editing }),
  }
}

/** Where the rule that makes an MCP server's tools ask comes from, for explaining a decision. */
export const MCP_DEFAULTS_SOURCE = "core defaults (MCP servers ask)"

const mcpDefault = (entry: McpEntry): SourcedRule => ({
  action: `${entry.name}_*`,
  resource: "*",
  effect: "ask",
  source: { file: MCP_DEFAULTS_SOURCE, path: `mcp.${entry.name}` },
})

/** The sandbox's path lists add up across the files (the home's denies hold in every Location). */
const SHELL_LISTS = ["allowRead", "allowWrite", "denyRead"] as const

const listsOf = (present: ReadonlyArray<Lowered>): Shell =>
  Object.fromEntries(
    SHELL_LISTS.flatMap((key) => {
      const paths = present.flatMap((lowered) => lowered.shell[key] ?? [])
      return paths.length === 0 ? [] : [[key, paths]]
    }),
  )

/** Home first, then the Location: rules append (so the Location's win), settings override per key. */
export const merge = (home: Lowered | undefined, location: Lowered | undefined): Resolved => {
  const present = [home, location].filter((lowered): lowered is Lowered => lowered !== undefined)
  const agents = new Map<string, AgentRules>()
  for (const lowered of present) {
    for (const [name, agent] of lowered.agents) {
      const earlier = agents.get(name)
      const description = agent.description ?? earlier?.description
      agents.set(name, {
        ...(description === undefined ? {} : { description }),
        rules: [...(earlier?.rules ?? []), ...agent.rules],
      })
    }
  }
  const mcp = new Map<string, McpEntry>()
  for (const lowered of present) for (const entry of lowered.mcp ?? []) mcp.set(entry.name, entry)
  const operator = home?.output.retentionDays
  const own = location?.output.retentionDays
  return {
    files: present.map((lowered) => lowered.file),
    retentionDays: { ...(operator === undefined ? {} : { operator }), ...(own === undefined ? {} : { location: own }) },
    // An MCP server's tools ask by default, even where core's defaults allow everything; any rule a file writes
    // comes after, so `"github_*": "allow"` (or a broader allow) decides instead.
    rules: [...[...mcp.values()].map(mcpDefault), ...present.flatMap((lowered) => lowered.rules)],
    ...(mcp.size === 0 ? {} : { mcp: [...mcp.values()] }),
    agents,
    output: Object.assign(
      {},
      ...present.map((lowered) => lowered.output),
      // The image limits merge key by key, like the rest of output: the Location's maxBytes beside the home's maxDimension.
      present.some((lowered) => lowered.output.image !== undefined)
        ? { image: Object.assign({}, ...present.map((lowered) => lowered.output.image ?? {})) }
        : {},
    ),
    shell: Object.assign({}, ...present.map((lowered) => lowered.shell), listsOf(present)),
    ...(present.some((lowered) => lowered.editing !== undefined)
      ? { editing: Object.assign({}, ...present.map((lowered) => lowered.editing)) }
      : {}),
  }
}

/** The most a core.json may hold: a file past it is no configuration a person wrote. */
export const MAX_FILE_BYTES = 4 * 1024 * 1024

/** What a file that is not a regular one is, in words. */
const kindOf = (file: string): string => {
  try {
    const stats = statSync(file)
    if (stats.isDirectory()) return "a directory"
    if (stats.isFIFO()) return "a FIFO (a named pipe)"
    if (stats.isSocket()) return "a socket"
    if (stats.isCharacterDevice() || stats.isBlockDevice()) return "a device"
    return "a file that cannot be read"
  } catch (cause) {
    return cause instanceof Error ? cause.message : String(cause)
  }
}

/**
 * The text of a file, or undefined when there is none; anything else that stops the read is an error. Read as
 * FileText reads it (opened without waiting, only a regular file, never past MAX_FILE_BYTES, a file of /proc that
 * says size 0 included): a FIFO there held core in open(2) for good, deaf to SIGTERM, and a link to /dev/zero or
 * /proc/self/pagemap read until memory ran out.
 */
const readOptional = (file: string): Effect.Effect<string | undefined, ConfigError> =>
  Effect.suspend(() => {
    const text = FileText.read(file, MAX_FILE_BYTES)
    // A byte order mark, as some editors write, is not part of the JSON.
    if (typeof text === "string") return Effect.succeed(text.replace(/^\uFEFF/, ""))
    if (text === undefined && !existsSync(file)) return Effect.succeed(undefined)
    const found = text === FileText.LARGE ? `more than the ${MAX_FILE_BYTES} bytes a core.json may hold` : kindOf(file)
    return Effect.fail(failure(file, undefined, { path: [], expected: "a readable file", found }))
  })

const loadFile = (file: string): Effect.Effect<Lowered | undefined, ConfigError> =>
  readOptional(file).pipe(
    Effect.flatMap((text) => (text === undefined ? Effect.succeed(undefined) : Effect.map(Effect.fromResult(parseText(file, text)), lower))),
  )

/** Reads, checks and merges `<home>/core.json` and `<location>/core.json`; either may be missing. */
export const load: (options: LoadOptions) => Effect.Effect<Resolved, ConfigError> = Effect.fn("Config.load")(function* (
  options: LoadOptions,
) {
  const homeFile = resolve(join(options.home, FILE_NAME))
  const locationFile = resolve(join(options.location, FILE_NAME))
  // A Location that is the home directory has one file, not two: the operator's.
  if (homeFile === locationFile) return merge(yield* loadFile(homeFile), undefined)
  const location = yield* loadFile(locationFile)
  return merge(yield* loadFile(homeFile), location)
})
