export * as Discovery from "./discovery"

// Loads `<dir>/tools/*.ts` into a registry (DESIGN §4): the default export under the file's base name, every
// other exported tool `x` under `<base>_<x>`. Each file is checked (syntax, imports) and loaded on its own; one
// that fails becomes a diagnostic naming the file and the reason, and never hides the others.

import { readdirSync, statSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { Closure } from "../permission/closure"
import type { Registry } from "../registry/registry"
import { Modules } from "../author/modules"
import type { Tool } from "../tool/tool"
import * as Internal from "../tool/internal"

export interface Diagnostic {
  readonly file: string
  readonly message: string
}

export interface Loaded {
  readonly file: string
  readonly names: ReadonlyArray<string>
}

export interface Result {
  readonly loaded: ReadonlyArray<Loaded>
  readonly diagnostics: ReadonlyArray<Diagnostic>
}

/** Files that live beside tools without being tools. */
const IGNORED = /\.(test|spec|d)\.ts$/

/** Whether a file name in a `tools/` folder names a tool file. */
export const isToolFileName = (name: string): boolean => name.endsWith(".ts") && !IGNORED.test(name)

/** The tool files of a directory's `tools/` folder (or another), sorted; none when it has no such folder. */
export const toolFiles = (directory: string, within = "tools"): ReadonlyArray<string> => {
  const folder = join(directory, within)
  let names: Array<string>
  try {
    names = readdirSync(folder, { withFileTypes: true })
      .filter((entry) => (entry.isFile() || entry.isSymbolicLink()) && isToolFileName(entry.name))
      .map((entry) => entry.name)
  } catch {
    return []
  }
  return names
    .sort()
    .map((name) => join(folder, name))
}

const message = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "message" in cause ? String(cause.message) : String(cause)

/**
 * Where in `file` an error thrown as it loaded was raised, from the first frame of its stack in that file (a throw
 * at the top level, a `Tool.make` given what it refuses): " at line L, column C", or "" when its stack names no
 * line there.
 */
const lineIn = (cause: unknown, file: string): string => {
  const stack = typeof cause === "object" && cause !== null && "stack" in cause ? String(cause.stack) : ""
  for (const line of stack.split("\n")) {
    const at = line.indexOf(`${file}:`)
    if (at === -1) continue
    const place = /^:(\d+):(\d+)/.exec(line.slice(at + file.length))
    if (place !== null) return ` at line ${place[1]}, column ${place[2]}`
  }
  return ""
}

/** Bun's transpiler reports syntax errors as build messages, usually gathered in an aggregate. */
type BuildMessage = { readonly message?: string; readonly position?: { line?: number; column?: number } | null }

/** The first syntax error a transpiler failure holds: its words and (1-based) line and column, when known. */
const syntaxErrorOf = (cause: unknown) => {
  const first = ((cause as { errors?: ReadonlyArray<BuildMessage> } | undefined)?.errors?.[0] ?? cause) as BuildMessage
  const position = first.position
  return {
    reason: message(first),
    position:
      position?.line === undefined || position.line === null
        ? undefined
        : { line: position.line, column: position.column ?? 1 },
  }
}

/** Why an import is not allowed in a tool file, or undefined when it is. */
const importProblem = (specifier: string, file: string): string | undefined => {
  if (specifier.startsWith(".") || specifier.startsWith("/")) return undefined
  if (specifier.startsWith("node:") || specifier.startsWith("bun:") || specifier === "bun") return undefined
  if (Modules.isServed(specifier)) return undefined
  // node:module is loaded only for the rare bare specifier that is not one of ours.
  if ((require("node:module") as typeof import("node:module")).isBuiltin(specifier)) return undefined
  if (specifier.startsWith("@core/")) {
    return `imports "${specifier}", which is not public; tools may import only "${Modules.SDK_SPECIFIER}" from core`
  }
  if (specifier.startsWith("effect/internal/") || /^effect\/[^/]+\/internal\//.test(specifier)) {
    return `imports "${specifier}", one of Effect's internal modules; import its public module instead`
  }
  if (specifier.startsWith("effect/")) {
    return (
      `imports "${specifier}", which this core does not include; tools can import "effect", every top-level ` +
      `module ("effect/Schema", "effect/Stream", ...) and ${Modules.SUBPACKAGES.map((name) => `"effect/${name}"`).join(", ")}`
    )
  }
  try {
    Bun.resolveSync(specifier, dirname(file))
    return undefined
  } catch {
    return `imports "${specifier}", which cannot be found from ${dirname(file)}; install it there (npm install ${specifier})`
  }
}

/** The `name: tool` record a module contributes, named after its file. */
export const recordOf = (file: string, exports: Record<string, unknown>): Record<string, Tool.Any> => {
  const base = basename(file, ".ts")
  const record: Record<string, Tool.Any> = {}
  for (const [exportName, value] of Object.entries(exports)) {
    if (!Internal.has(value)) continue
    record[exportName === "default" ? base : `${base}_${exportName}`] = value as Tool.Any
  }
  return record
}

/**
 * Why one tool file did not load; the message names the reason (and where, for a syntax error), the file is in
 * `file`, and a syntax error's `position` (1-based line and column). Not `line` and `column` fields: Bun gives every
 * error those, pointing into core.
 */
export class LoadError extends Schema.TaggedError<LoadError>()("Discovery.LoadError", {
  file: Schema.String,
  message: Schema.String,
  position: Schema.optionalKey(Schema.Struct({ line: Schema.Int, column: Schema.Int })),
}) {}

/** How long a tool file may take to load (a top-level await that never settles must not hang core). */
export const LOAD_TIMEOUT_MS = 10_000

export interface FileOptions {
  readonly timeoutMs?: number
  /**
   * Imports the file's current content under this tag instead of the copy Bun's module cache holds (hot reload).
   * The same tag answers the same module instance again.
   */
  readonly version?: string
}

/**
 * Checks one file's syntax and imports (as tool files are checked) and imports it; answers its exports, or fails
 * with LoadError naming the reason. Plugin files load through here too. Only once the installed gate lets it: in
 * core, while no command of the file's Location (the folder above its `tools/` or `plugins/`) runs in any core
 * process sharing the data directory (what one planted, the file or a module it imports, is taken out when it ends,
 * and must never be imported meanwhile).
 */
export const importModule = (file: string, options: FileOptions = {}) => gate(dirname(dirname(file)), file, importChecked(file, options))

type Gate = <A, R>(location: string, file: string, load: Effect.Effect<A, LoadError, R>) => Effect.Effect<A, LoadError, R>

/** How an import waits its turn: as installed by the host floor (the shell's LoadGate); at once where none is (the author kit). */
let gate: Gate = (_location, _file, load) => load

/** Installs how every import waits its turn (`importModule`). */
export const gateImports = (installed: Gate): void => {
  gate = installed
}

const importChecked = Effect.fnUntraced(function* (file: string, options: FileOptions = {}) {
  Modules.install()
  const timeoutMs = options.timeoutMs ?? LOAD_TIMEOUT_MS
  const fail = (reason: string) => new LoadError({ file, message: reason })
  // Taken before reading: the scan is remembered for the file's import closure (what core protects) under them.
  const stats = (() => {
    try {
      return statSync(file, { throwIfNoEntry: false })
    } catch {
      return undefined
    }
  })()
  const source = yield* Effect.tryPromise({
    try: () => Bun.file(file).text(),
    catch: (cause) => fail(`cannot be read: ${message(cause)}`),
  })
  const imports = yield* Effect.try({
    try: () => Closure.scan(file, source, stats),
    catch: (cause) => {
      const { reason, position } = syntaxErrorOf(cause)
      return position === undefined
        ? fail(`syntax error: ${reason}`)
        : new LoadError({
            file,
            message: `syntax error at line ${position.line}, column ${position.column}: ${reason}`,
            position,
          })
    },
  })
  for (const path of imports) {
    const problem = importProblem(path, file)
    if (problem !== undefined) return yield* fail(problem)
  }
  const exports = yield* Effect.tryPromise({
    try: () =>
      import(options.version === undefined ? file : `${file}?v=${encodeURIComponent(options.version)}`) as Promise<
        Record<string, unknown>
      >,
    catch: (cause) => fail(`failed to load${lineIn(cause, file)}: ${message(cause)}`),
  }).pipe(
    Effect.timeoutOrElse({
      duration: timeoutMs,
      orElse: () =>
        Effect.fail(fail(`did not finish loading within ${timeoutMs / 1000} s (a top-level await that never settles?)`)),
    }),
  )
  return exports
})

/**
 * Checks one tool file's syntax and imports, imports it and answers the tools it exports, named after the file;
 * fails with LoadError naming the reason. Registers nothing.
 */
export const importFile = Effect.fnUntraced(function* (file: string, options: FileOptions = {}) {
  const exports = yield* importModule(file, options)
  const fail = (reason: string) => new LoadError({ file, message: reason })
  const record = recordOf(file, exports)
  if (Object.keys(record).length === 0) {
    return yield* fail(
      "exports no tool; export a value made with Tool.make (the default export is named after the file). Code the " +
        "tools share goes in a folder of tools/ (tools/lib/), whose files are not loaded as tools",
    )
  }
  return record
})

/**
 * Loads one tool file into the current Scope through `tools`: checks its syntax and imports, imports it and
 * registers what it exports. Answers the names it registered; closing the Scope removes exactly them.
 */
export const loadFile = Effect.fnUntraced(function* (file: string, tools: Registry.Tools, options: FileOptions = {}) {
  const record = yield* importFile(file, options)
  yield* tools
    .register(record)
    .pipe(Effect.mapError((error) => new LoadError({ file, message: error.message })))
  return Object.keys(record)
})

/** The file among `diagnostics` whose tools would include `name` (`git.ts` gives `git` and `git_*`), if any. */
export const diagnosticFor = (
  diagnostics: ReadonlyArray<Diagnostic>,
  name: string,
): Diagnostic | undefined =>
  diagnostics.findLast((diagnostic) => {
    const base = basename(diagnostic.file, ".ts")
    return name === base || name.startsWith(`${base}_`)
  })

export interface LoadOptions {
  readonly timeoutMs?: number
  /** The Scope a file's registration lives in, so it can be unloaded alone; by default the current Scope. */
  readonly scopeOf?: (file: string) => Scope.Scope
  /** The version to import a file under (see FileOptions); by default the cached module. */
  readonly versionOf?: (file: string) => string | undefined
}

/** Loads every tool file of `directory/tools` into the current Scope (or each file's own) through `tools`. */
export const load = Effect.fn("Discovery.load")(function* (
  directory: string,
  tools: Registry.Tools,
  options: LoadOptions = {},
) {
  Modules.install()
  const current = yield* Scope.Scope
  const loaded: Array<Loaded> = []
  const diagnostics: Array<Diagnostic> = []
  const definedBy = new Map<string, string>()
  for (const file of toolFiles(directory)) {
    const version = options.versionOf?.(file)
    const fileOptions: FileOptions = {
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(version === undefined ? {} : { version }),
    }
    const scope = options.scopeOf?.(file) ?? current
    const result = yield* Effect.result(loadFile(file, tools, fileOptions).pipe(Scope.provide(scope)))
    if (result._tag === "Failure") {
      diagnostics.push({ file, message: result.failure.message })
      continue
    }
    loaded.push({ file, names: result.success })
    // Two files of one folder yielding the same name (git.ts exporting `status`, and git_status.ts): the later
    // file wins, as registrations do, but never silently.
    for (const name of result.success) {
      const earlier = definedBy.get(name)
      if (earlier !== undefined) {
        diagnostics.push({ file, message: `defines ${name}, which ${basename(earlier)} also defines; this file's wins` })
      }
      definedBy.set(name, file)
    }
  }
  return { loaded, diagnostics } satisfies Result
})
