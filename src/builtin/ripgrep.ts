export * as Ripgrep from "./ripgrep"

// The platform edge for ripgrep, which powers glob, grep and list: where the rg executable is, and running it.
// From source that is the @vscode/ripgrep package's binary. The compiled core embeds rg, but an embedded file
// cannot be executed in place, so it is extracted once (atomically) to `$CORE_DATA_DIR/bin` and reused after.
// rg runs under a time limit, killed on cancel, on timeout and by core's forced exit (./search-process). Where the
// kernel has Landlock it is confined to reading beneath the directory the caller checked and holds open (and the
// few files rg needs besides): a directory deeper in the tree swapped for a symlink while rg walks it then leads
// nowhere. Without Landlock it runs in its own process group in that held directory.
// This module knows nothing of tools or permissions: callers check paths before they search them.

import { chmodSync, linkSync, lstatSync, mkdirSync, realpathSync, renameSync, rmSync, statSync } from "node:fs"
import { homedir } from "node:os"
import { basename, dirname, join, resolve } from "node:path"
import * as Effect from "effect/Effect"
import { OwnExecutable } from "../shell/own-executable"
import { Shell } from "../shell/shell"
import { SearchProcess } from "./search-process"

/**
 * Flags every search shares: .gitignore (and .ignore) honoured even outside a git repository, hidden files
 * included, `.git` never entered, no user ripgrep config. Symbolic links are not followed (rg's default).
 */
export const COMMON_FLAGS: ReadonlyArray<string> = ["--no-config", "--hidden", "--no-require-git", "--glob=!.git"]

/** Directories every listing leaves out unless asked for by path: dependencies, VCS data, builds and caches. */
export const DEFAULT_IGNORED_DIRECTORIES: ReadonlyArray<string> = [
  "node_modules",
  ".git",
  ".hg",
  ".svn",
  "dist",
  "build",
  "target",
  "out",
  ".venv",
  "venv",
  "__pycache__",
  ".mypy_cache",
  ".pytest_cache",
  ".ruff_cache",
  ".tox",
  ".cache",
  ".next",
  ".nuxt",
  ".turbo",
  ".parcel-cache",
  ".gradle",
  ".idea",
  "coverage",
]

/** Where core keeps its data (DESIGN §9): extracted executables go under `bin/` there. */
const dataDirectory = (): string => resolve(process.env.CORE_DATA_DIR || join(homedir(), ".local/share/core"))

/**
 * The path of an executable copy of `embedded` under `directory`, named after the embedded file (whose name
 * carries a content hash, so a different rg gets a different file). An existing copy of the same size is reused;
 * otherwise it is written to a temporary name, made executable and linked into place, so a concurrent core or a
 * crash never leaves a partial executable under the final name. Where another core linked its copy first, that
 * one is used: replacing it would change the file under a core that is about to run it (its confinement grants
 * running that very file, and refused the one put in its place).
 */
export const extract = async (embedded: string, directory: string): Promise<string> => {
  const target = join(directory, basename(embedded).replace(/\.$/, ""))
  const size = statSync(embedded).size
  const usable = () => {
    try {
      const existing = statSync(target)
      return existing.isFile() && existing.size === size && (existing.mode & 0o111) !== 0
    } catch {
      return false
    }
  }
  if (usable()) return target
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  const temporary = `${target}.${process.pid}.${crypto.randomUUID()}.tmp`
  try {
    await Bun.write(temporary, Bun.file(embedded))
    // Executable by the user alone, like everything in the data directory.
    chmodSync(temporary, 0o700)
    try {
      linkSync(temporary, target)
    } catch (cause) {
      if ((cause as { code?: string }).code !== "EEXIST") throw cause
      // Another core's copy came first: it is used, unless it is not whole (an older core's, cut short), which goes.
      if (!usable()) renameSync(temporary, target)
    }
  } finally {
    rmSync(temporary, { force: true })
  }
  return target
}

const locate = async (): Promise<string> => {
  if (!OwnExecutable.compiled()) return (await import("@vscode/ripgrep")).rgPath
  // The build embeds this file (a literal specifier, so bun build sees it); only the compiled binary loads it.
  // @ts-expect-error: a `type: "file"` import answers the file's path, which TypeScript cannot know.
  const embedded: { readonly default: string } = await import("@vscode/ripgrep-linux-x64/bin/rg", { with: { type: "file" } })
  return extract(embedded.default, join(dataDirectory(), "bin"))
}

let located: Promise<string> | undefined

/**
 * The rg executable, found (and in the compiled binary extracted) once per process. Failing to extract it (an
 * unwritable data directory, a full disk) is an operational failure, not a tool result.
 */
export const executable: Effect.Effect<string> = Effect.promise(() => {
  located ??= locate().catch((cause: unknown) => {
    located = undefined
    throw cause
  })
  return located
})

export interface Options {
  /** Arguments after the executable; callers always end them with `--` and an explicit path. */
  readonly args: ReadonlyArray<string>
  /**
   * Only files matching this glob (gitignore syntax, relative to `cwd`: without a `/` it matches names at any
   * depth). rg's own `--glob` would override the ignore files and list ignored files that match, so it is given
   * to rg in a way that keeps them ignored: a name pattern as a file type, a path pattern as an ignore file
   * below .gitignore in precedence.
   */
  readonly select?: string
  /** The directory rg runs in: its globs match paths relative to it. */
  readonly cwd: string
  /**
   * The real path of the directory at `cwd` (which the caller holds open there, or which is that path itself):
   * where the kernel has Landlock, rg may read nothing outside it (but the ignore files of the directories above
   * it and the global git excludes file). Searches only beneath it: `args` name paths inside it.
   */
  readonly root?: string
  /** Called with each chunk of stdout, in order; a chunk is valid only during the call. */
  readonly onData: (chunk: Uint8Array) => void
  /** Called once stdout has ended. */
  readonly onEnd?: () => void
  /** How long the search may take; the shell's default timeout when absent. */
  readonly timeoutMs?: number
}

export interface Outcome {
  /** 0: something found; 1: nothing found; 2: an error (possibly after partial results). */
  readonly code: number
  /** What rg reported, one problem a line, without its `rg: ` prefix (and without `selectError`). */
  readonly problems: ReadonlyArray<string>
  /** Why rg could not parse the `select` glob, when it could not. */
  readonly selectError?: string
}

/** Splits stdout into records ended by `separator` (NUL for `--files --null`), for Options' onData and onEnd. */
export const records = (separator: number, onRecord: (record: Uint8Array) => void) => {
  let carry: Uint8Array | undefined
  const onData = (chunk: Uint8Array) => {
    let start = 0
    let end = chunk.indexOf(separator)
    if (carry !== undefined) {
      if (end === -1) {
        carry = concat(carry, chunk)
        return
      }
      const record = concat(carry, chunk.subarray(0, end))
      carry = undefined
      onRecord(record)
      start = end + 1
      end = chunk.indexOf(separator, start)
    }
    while (end !== -1) {
      onRecord(chunk.subarray(start, end))
      start = end + 1
      end = chunk.indexOf(separator, start)
    }
    // The stream may reuse its chunk, so a partial record is copied.
    if (start < chunk.length) carry = chunk.slice(start)
  }
  const onEnd = () => {
    if (carry !== undefined && carry.length > 0) onRecord(carry)
    carry = undefined
  }
  return { onData, onEnd }
}

export const concat = (left: Uint8Array, right: Uint8Array): Uint8Array => {
  const joined = new Uint8Array(left.length + right.length)
  joined.set(left)
  joined.set(right, left.length)
  return joined
}

/** The ignore files rg reads in each directory above the one it searches (with --no-require-git). */
const IGNORE_FILES = [".gitignore", ".ignore", ".rgignore", ".git/info/exclude"]

/**
 * The files outside `root` that rg reads to decide what to leave out: the ignore files of every directory above it
 * and the global git excludes file (rg's default place for it: a core.excludesFile set in ~/.gitconfig is not
 * read, since rg may not read ~/.gitconfig). Only regular files; the confinement grants each only if no symlink
 * leads to it.
 */
const ignoreFiles = (root: string): Array<string> => {
  const found: Array<string> = []
  const add = (path: string) => {
    if (lstatSync(path, { throwIfNoEntry: false })?.isFile() === true) found.push(path)
  }
  for (let directory = dirname(root); ; directory = dirname(directory)) {
    for (const name of IGNORE_FILES) add(join(directory, name))
    if (directory === dirname(directory)) break
  }
  const config = process.env.XDG_CONFIG_HOME || join(homedir(), ".config")
  try {
    add(join(realpathSync(config), "git", "ignore"))
  } catch {
    // no configuration directory
  }
  return found
}

let realExecutable: { readonly path: string; readonly real: string } | undefined

/** The real path of the rg executable, which the confined rg may read and run. */
const realOf = (rg: string): string => {
  if (realExecutable?.path !== rg) realExecutable = { path: rg, real: realpathSync(rg) }
  return realExecutable.real
}

/** A name pattern: no slash, or only a leading `**` and slash; rg can select it as a file type. */
const NAME_PATTERN = /^(?:\*\*\/)?([^/:!#][^/:]*)$/

/**
 * A select glob as rg should read it. A leading `./` (as models often write) would match nothing in gitignore
 * syntax; it means "from the searched directory", which is what a leading `/` says there.
 */
const normalise = (glob: string): string => glob.replace(/^(?:\.\/+)+/, "/")

/**
 * Whether `select` (as Options.select reads it) takes the file at `path`, relative to where the search runs. rg
 * always searches a file it is given by name, whatever the globs, so a caller searching one file checks it here.
 * A name glob is matched against the file's name, a path glob against the whole path.
 */
export const selects = (select: string, path: string): boolean => {
  const glob = normalise(select)
  const name = NAME_PATTERN.exec(glob)?.[1]
  if (name !== undefined) return new Bun.Glob(name).match(basename(path))
  // A leading ! is literal here, as in `selection`, not Bun.Glob's negation.
  return new Bun.Glob(glob.replace(/^\//, "").replace(/^!/, "\\!")).match(path)
}

/** Ignore rules that leave only `glob`: everything ignored, directories entered, matching files kept. */
const selection = (glob: string): string =>
  // A leading # or ! would make a comment or a negation of the user's pattern: escaped, they are literal.
  `*\n!*/\n!${/^[#!]/.test(glob) ? "\\" : ""}${glob}\n`

/** Where rg reads the select rules from: its stdin, a pipe no other process can reach. */
const RULES = "/dev/stdin"

/**
 * Runs rg to completion, handing stdout to `onData` as it arrives (./search-process: confined to `root` where the
 * kernel has Landlock). Interrupting the fiber kills rg. A failure to start it is an operational failure.
 */
export const run = (options: Options): Effect.Effect<Outcome> =>
  Effect.gen(function* () {
    const rg = yield* executable
    const select = options.select === undefined ? undefined : normalise(options.select)
    if (select !== undefined && /[\r\n]/.test(select)) return { code: 2, problems: [], selectError: "a glob cannot contain a line break" }
    // A name pattern is selected as a file type (applied after the ignore rules, and the quicker of the two ways);
    // a path pattern as ignore rules below .gitignore in precedence.
    const name = select === undefined ? undefined : NAME_PATTERN.exec(select)?.[1]
    const args =
      select === undefined
        ? options.args
        : name !== undefined
          ? [`--type-add=coreselect:${name}`, "--type=coreselect", ...options.args]
          : [`--ignore-file=${RULES}`, ...options.args]
    const root = options.root
    const spawn: SearchProcess.Spawn = {
      argv: [rg, ...args],
      cwd: options.cwd,
      ...(select !== undefined && name === undefined ? { stdin: selection(select) } : {}),
      ...(root === undefined ? {} : { root, files: [realOf(rg), ...ignoreFiles(root)] }),
      onData: options.onData,
      timeoutMs: options.timeoutMs ?? Shell.limits().timeoutMs,
    }
    const ended = yield* Effect.acquireUseRelease(
      // A missing or unusable rg is core's fault, not the model's: an operational failure (a defect).
      Effect.promise(() => SearchProcess.start(spawn)),
      (running) => Effect.promise(() => running.ended),
      // However the search ends: on interruption, rg is gone before the fiber is.
      (running) => Effect.promise(() => (running.stop(), running.ended.catch(() => undefined))),
    )
    if (ended.kind === "moved") {
      // The directory was swapped since the caller checked it: the model may look again.
      return { code: 2, problems: [`${root} was removed or replaced while it was being searched: search it again`] }
    }
    options.onEnd?.()
    const stopped =
      ended.timedOutMs !== undefined
        ? [`the search took longer than ${ended.timedOutMs} ms and was stopped`]
        : ended.signal !== null
          ? [`rg was ended by ${ended.signal} before it finished: search again`]
          : []
    const all = [...stopped, ...problemsOf(ended.stderr)]
    const code = stopped.length === 0 ? (ended.exitCode ?? 2) : 2
    if (select === undefined) return { code, problems: all }
    if (name !== undefined) {
      const refused = code === 2 ? all.find((line) => line.startsWith("error parsing glob")) : undefined
      return refused === undefined ? { code, problems: all } : { code, problems: [], selectError: refused }
    }
    // rg warns about a rules line it cannot parse and goes on without it; here that means the glob was invalid.
    const prefix = `${RULES}: line 3: `
    const refused = all.find((line) => line.startsWith(prefix))
    const problems = all.filter((line) => !line.startsWith(RULES))
    return refused === undefined
      ? { code, problems }
      : { code, problems, selectError: refused.slice(prefix.length).replace("'!", "'") }
  })

/** The lines rg wrote to stderr, without its `rg: ` prefix, for showing to a model. */
const problemsOf = (stderr: string): ReadonlyArray<string> =>
  stderr
    .split("\n")
    .map((line) => line.replace(/^rg: /, "").trimEnd())
    .filter((line) => line !== "")

/**
 * Whether rg reported only trouble with particular paths (unreadable files or directories), which it reports
 * with the OS error and carries on past, rather than an argument it refused (a bad regex, say).
 */
export const onlyPathProblems = (problems: ReadonlyArray<string>): boolean =>
  problems.length > 0 && problems.every((line) => /\(os error \d+\)$/.test(line))

/** Escapes a literal file name for use as an rg glob. */
export const globEscape = (name: string): string => name.replace(/[\\*?[\]{}!]/g, (character) => `\\${character}`)

const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const lossy = new TextDecoder("utf-8", { ignoreBOM: true })

/**
 * Text of bytes rg printed (a path or a line): exact when it is UTF-8, else with U+FFFD for the bad bytes. For a
 * `prefix` of a longer text, a character cut off at its end is dropped rather than counted as bad.
 */
export const decode = (bytes: Uint8Array, prefix = false): { readonly text: string; readonly utf8: boolean } => {
  try {
    if (!prefix) return { text: strict.decode(bytes), utf8: true }
    return { text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes, { stream: true }), utf8: true }
  } catch {
    return { text: lossy.decode(bytes), utf8: false }
  }
}
