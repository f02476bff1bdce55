export * as Boundary from "./boundary"

// The Location boundary: the one resolver every path a tool touches goes through. It answers where a path really
// leads (symlinks followed, missing tails resolved through their nearest existing ancestor) and whether that is
// inside the Location; it never decides permissions. Callers operate on `real` or `requested`, never the raw input,
// since `..` is applied lexically before any link is followed.

import { lstatSync, readlinkSync, statSync } from "node:fs"
import { dirname, isAbsolute, join, parse, relative, resolve as resolvePath, sep } from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/** Symbolic links followed while resolving one path before it counts as a loop (Linux's own limit). */
export const MAX_SYMLINKS = 40

export class PathError extends Schema.TaggedError<PathError>()("Boundary.PathError", {
  /** The path as the caller gave it. */
  path: Schema.String,
  /** "protected": a place no tool may use that way (core's data directory, for reading). */
  reason: Schema.Literals(["invalid", "not_a_directory", "loop", "io", "protected"]),
  /** For "not_a_directory": the absolute path of the ancestor that is not a directory. */
  ancestor: Schema.optionalKey(Schema.String),
  message: Schema.String,
}) {}

export type Kind = "file" | "directory" | "other" | "missing"

export interface Options {
  /** The Location: an absolute directory. */
  readonly location: string
  /** Relative to the Location, or absolute. */
  readonly path: string
  /** Directories outside the Location that may still be read (such as the managed outputs directory). */
  readonly readableRoots?: ReadonlyArray<string>
}

export interface Resolved {
  /** Absolute and lexically normalised; symlinks untouched. */
  readonly requested: string
  /** Absolute with every symlink followed; a missing tail is joined onto its nearest existing ancestor's real path. */
  readonly real: string
  readonly exists: boolean
  readonly kind: Kind
  /** Whether `real` is the Location or under it. */
  readonly inside: boolean
  /** Inside, or under one of the readable roots. */
  readonly readable: boolean
  /** When outside: the directory `external_directory` is asked about. */
  readonly externalDirectory: string | undefined
  /** When outside: `<externalDirectory>/*`, the resource a permission check uses. */
  readonly pattern: string | undefined
  /**
   * Whether the path leads through a process's own view of /proc (`/proc/self/cwd/x`, `/dev/stdin`, a link to
   * `/proc/self/fd/0`): `real` is where it leads for core, and another process (a command) finds something else there.
   */
  readonly perProcess: boolean
}

/** Whether `path` is `root` or lies under it, compared segment by segment (so /x/app2 is not within /x/app). */
export const isWithin = (root: string, path: string): boolean => {
  const base = resolvePath(root)
  const target = resolvePath(path)
  return target === base || target.startsWith(base.endsWith(sep) ? base : base + sep)
}

interface Walked {
  readonly perProcess: boolean
  readonly real: string
  readonly kind: Kind
}

type Stop =
  | { readonly reason: "not_a_directory"; readonly at: string }
  | { readonly reason: "loop" }
  | { readonly reason: "io"; readonly detail: string }

const segmentsOf = (path: string): Array<string> => path.split(sep).filter((segment) => segment !== "" && segment !== ".")

const kindOf = (stats: { isDirectory(): boolean; isFile(): boolean }): Kind =>
  stats.isDirectory() ? "directory" : stats.isFile() ? "file" : "other"

const codeOf = (cause: unknown): unknown =>
  typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined

const detailOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/**
 * Follows an absolute path one segment at a time, as the kernel would, but tolerates a missing tail. Done by hand
 * rather than with realpath so that a dangling symlink still leads to its target: otherwise a link to a missing
 * file outside the Location would look like a new file inside it.
 */
/** A process's own directory under /proc: what is under it differs from one process to another. */
const PER_PROCESS = /^\/proc\/(self|thread-self|\d+)$/

const walk = (absolute: string): Result.Result<Walked, Stop> => {
  const root = parse(absolute).root
  const pending = segmentsOf(absolute.slice(root.length))
  let current = root
  let kind: Kind = "directory"
  let links = 0
  let perProcess = false
  while (pending.length > 0) {
    const segment = pending.shift()!
    if (kind === "file" || kind === "other") return Result.fail({ reason: "not_a_directory", at: current })
    if (segment === "..") {
      // Only link targets still hold "..": the real prefix of `current` is its parent on disk.
      current = dirname(current)
      if (kind === "missing") {
        try {
          lstatSync(current)
          kind = "directory"
        } catch {
          // still under a missing directory
        }
      }
      continue
    }
    const next = join(current, segment)
    perProcess ||= PER_PROCESS.test(next)
    if (kind === "missing") {
      current = next
      continue
    }
    let stats
    try {
      stats = lstatSync(next)
    } catch (cause) {
      if (codeOf(cause) !== "ENOENT") return Result.fail({ reason: "io", detail: detailOf(cause) })
      current = next
      kind = "missing"
      continue
    }
    if (stats.isSymbolicLink()) {
      links += 1
      if (links > MAX_SYMLINKS) return Result.fail({ reason: "loop" })
      let target
      try {
        target = readlinkSync(next)
      } catch (cause) {
        // No longer a link (a folder swapped in after the look, EINVAL): looked at again, as it is now.
        if (codeOf(cause) === "EINVAL" || codeOf(cause) === "ENOENT") {
          pending.unshift(segment)
          continue
        }
        return Result.fail({ reason: "io", detail: detailOf(cause) })
      }
      pending.unshift(...segmentsOf(target))
      if (isAbsolute(target)) current = parse(target).root
      continue
    }
    current = next
    kind = kindOf(stats)
  }
  return Result.succeed({ real: current, kind, perProcess })
}

/**
 * Where an absolute path really leads, as `resolve` answers `real` (a dangling link followed to its target, a missing
 * tail joined on), or undefined where that cannot be told (a loop, a file used as a folder, an unreadable folder).
 */
export const realOf = (absolute: string): string | undefined => {
  const walked = walk(absolute)
  return Result.isSuccess(walked) ? walked.success.real : undefined
}

/** The shortest prefix of `requested` that exists and is not a directory, following links. */
const blockingAncestor = (requested: string): string | undefined => {
  const root = parse(requested).root
  let prefix = root
  for (const segment of segmentsOf(requested.slice(root.length))) {
    prefix = join(prefix, segment)
    try {
      if (!statSync(prefix).isDirectory()) return prefix
    } catch {
      return undefined
    }
  }
  return undefined
}

const failure = (path: string, location: string, requested: string, stop: Stop): PathError => {
  switch (stop.reason) {
    case "not_a_directory": {
      const ancestor = blockingAncestor(requested) ?? stop.at
      const shown = isWithin(location, ancestor) ? relative(location, ancestor) : ancestor
      let what = "is not a directory"
      try {
        if (statSync(ancestor).isFile()) what = "is a file, not a directory"
      } catch {
        // keep the general wording
      }
      return new PathError({
        path,
        reason: "not_a_directory",
        ancestor,
        message: `Cannot use ${path}: ${shown} ${what}. Use the file itself, or a path under a directory.`,
      })
    }
    case "loop":
      return new PathError({
        path,
        reason: "loop",
        message:
          `Cannot use ${path}: resolving it follows more than ${MAX_SYMLINKS} symbolic links, so a link points ` +
          `back at itself. Fix or remove the looping link, or use another path.`,
      })
    case "io":
      return new PathError({
        path,
        reason: "io",
        message: `Cannot use ${path}: ${stop.detail}. Check that the path and its directories can be read.`,
      })
  }
}

const invalid = (path: string, location: string): PathError | undefined => {
  if (path === "")
    return new PathError({
      path,
      reason: "invalid",
      message: `Cannot use an empty path. Give a file or directory, relative to ${location} or absolute.`,
    })
  if (path.includes("\0"))
    return new PathError({
      path,
      reason: "invalid",
      message: `Cannot use ${path.replaceAll("\0", "\\0")}: a path cannot contain a NUL byte. Remove it and try again.`,
    })
  return undefined
}

/**
 * The longest path the system takes, in bytes (Linux's PATH_MAX, its NUL included). A longer one names nothing a
 * program can open; walking it costs time in its number of parts squared (joining each onto the last), so a path
 * of 100,000 parts held the thread for half a minute.
 */
const MAX_PATH_BYTES = 4095

const tooLong = (path: string, absolute: string): PathError | undefined => {
  const bytes = Buffer.byteLength(absolute)
  if (bytes <= MAX_PATH_BYTES) return undefined
  return new PathError({
    path,
    reason: "invalid",
    message: `Cannot use a path of ${bytes} bytes: the system takes paths of at most ${MAX_PATH_BYTES} bytes. Give a shorter path.`,
  })
}

/** Where `path` really leads and whether that is inside the Location; fails only when no answer is possible. */
export const resolve = Effect.fn("Boundary.resolve")(function* (options: Options) {
  const location = resolvePath(options.location)
  // Before anything else reads it: its length is the model's to choose.
  if (options.path.length > 4 * MAX_PATH_BYTES) return yield* Effect.fail(tooLong(options.path, options.path)!)
  const rejected = invalid(options.path, location)
  if (rejected !== undefined) return yield* Effect.fail(rejected)
  const requested = resolvePath(location, options.path)
  const long = tooLong(options.path, requested)
  if (long !== undefined) return yield* Effect.fail(long)

  const home = walk(location)
  if (Result.isFailure(home)) return yield* Effect.fail(failure(options.location, location, location, home.failure))
  const walked = walk(requested)
  if (Result.isFailure(walked)) return yield* Effect.fail(failure(options.path, location, requested, walked.failure))

  const { real, kind, perProcess } = walked.success
  const inside = isWithin(home.success.real, real)
  // A root that cannot be resolved grants nothing.
  const readable =
    inside ||
    (options.readableRoots ?? []).some((root) => {
      const resolved = walk(resolvePath(root))
      return Result.isSuccess(resolved) && isWithin(resolved.success.real, real)
    })
  const externalDirectory = inside ? undefined : kind === "directory" ? real : dirname(real)
  const pattern =
    externalDirectory === undefined
      ? undefined
      : `${externalDirectory}${externalDirectory.endsWith(sep) ? "" : sep}*`
  const resolved: Resolved = { requested, real, exists: kind !== "missing", kind, inside, readable, externalDirectory, pattern, perProcess }
  return resolved
})
