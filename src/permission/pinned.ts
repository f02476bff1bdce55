export * as Pinned from "./pinned"

// File operations pinned to the place the Location boundary checked: a path is checked once (./boundary answers
// its real path, with no symlink in it), and a directory or file opened later for it is proved to be that same
// place through the kernel's own record of the open descriptor (/proc/self/fd). Creating, renaming and removing
// then go through the pinned directory's descriptor, so swapping a directory on the path for a symlink after the
// check cannot lead anything (a temp file included) outside. Linux only; it decides no permissions.

import { closeSync, constants, lstatSync, openSync, readlinkSync } from "node:fs"
import type { FileHandle } from "node:fs/promises"
import { basename, dirname, join } from "node:path"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/**
 * node:fs/promises, loaded on first use: it costs milliseconds of start-up, and every core that settles in process
 * imports this module.
 */
const fsp = (): typeof import("node:fs/promises") => require("node:fs/promises")

/** The error code of a path that no longer leads where it was checked. */
export const MOVED = "EMOVED"

/** A path that no longer leads where it was checked: a directory on it was replaced after the check. */
export class Moved extends Error {
  readonly code = MOVED
  constructor(readonly path: string, readonly now: string) {
    super(`${path} no longer leads where it was checked (it now leads to ${now})`)
  }
}

const where = (fd: number): string => readlinkSync(`/proc/self/fd/${fd}`)

/** A refusal to follow a symlink found where the checked path had none is reported as Moved; others as they are. */
const replaced = (real: string, cause: unknown): unknown => {
  const code = typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
  if (code !== "ELOOP" && code !== "ENOTDIR") return cause
  try {
    if (lstatSync(real, { throwIfNoEntry: false })?.isSymbolicLink() === true) return new Moved(real, readlinkSync(real))
  } catch {
    // the path changed again: the original refusal stands
  }
  return cause
}

/** A directory held open: names under it are reached through its descriptor, never through its path again. */
export interface Directory {
  /** The real path it was opened as (and proved to be). */
  readonly path: string
  /**
   * The path of `name` inside it, through the descriptor (`/proc/self/fd/N/name`); the directory itself for "".
   * Throws (EBADF) once it is closed.
   */
  readonly at: (name: string) => string
  /** Closes it; closing again does nothing. */
  readonly close: () => Promise<void>
}

/** Opens `handle`'s file and fails with Moved unless it is `real` now. */
const prove = async (handle: FileHandle, real: string): Promise<FileHandle> => {
  let now: string
  try {
    now = where(handle.fd)
  } catch (cause) {
    await handle.close()
    throw cause
  }
  // A file replaced by a rename since it was opened (another writer's atomic replace) is still the one that was at
  // `real`: the kernel names it `real (deleted)`. Anything else was reached through a path that changed.
  if (now !== real && now !== `${real} (deleted)`) {
    await handle.close()
    throw new Moved(real, now)
  }
  return handle
}

/**
 * Opens the directory at `real` (a real path, as ./boundary answers it) and proves it is there. Fails with the
 * system's error (ENOENT, ENOTDIR, ELOOP for a symlink in its place...) or Moved. Done synchronously: three
 * system calls cost less than handing them to the thread pool.
 */
export const directory = async (real: string): Promise<Directory> => {
  let fd: number
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
  } catch (cause) {
    throw replaced(real, cause)
  }
  let now: string
  try {
    now = where(fd)
  } catch (cause) {
    closeSync(fd)
    throw cause
  }
  if (now !== real) {
    closeSync(fd)
    throw new Moved(real, now)
  }
  const base = `/proc/self/fd/${fd}`
  // Once closed, its descriptor's number may name another file: nothing may be reached through it any more.
  let closed = false
  return {
    path: real,
    at: (name) => {
      if (closed) throw Object.assign(new Error(`${real} is no longer held open`), { code: "EBADF" })
      return name === "" ? base : `${base}/${name}`
    },
    close: async () => {
      if (closed) return
      closed = true
      closeSync(fd)
    },
  }
}

/** Runs `use` with the directory at `real` held open, closing it after. */
export const within = async <A>(real: string, use: (directory: Directory) => Promise<A>): Promise<A> => {
  const held = await directory(real)
  try {
    return await use(held)
  } finally {
    await held.close()
  }
}

/**
 * Opens the file at `real` with `flags` (never following a symlink in its place) and proves it is there: no
 * directory on its path was swapped for a symlink. The caller closes it.
 */
export const openFile = async (real: string, flags: number, mode?: number): Promise<FileHandle> => {
  let handle: FileHandle
  try {
    handle = await fsp().open(real, flags | constants.O_NOFOLLOW, mode)
  } catch (cause) {
    throw replaced(real, cause)
  }
  return prove(handle, real)
}

/** Creates `name` exclusively in a held directory (never following a symlink), with `mode` before the umask. */
export const create = (held: Directory, name: string, mode: number): Promise<FileHandle> =>
  fsp().open(held.at(name), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode)

/** Renames `from` to `to`, both names in one held directory. */
export const renameIn = (held: Directory, from: string, to: string): Promise<void> => fsp().rename(held.at(from), held.at(to))

/** Removes the file at `real` through its directory, proved to be where it was checked. */
export const remove = (real: string): Promise<void> => within(dirname(real), (held) => fsp().unlink(held.at(basename(real))))

/** Removes the empty directory at `real` through its parent, proved to be where it was checked. */
export const removeDirectory = (real: string): Promise<void> =>
  within(dirname(real), (held) => fsp().rmdir(held.at(basename(real))))

/**
 * Creates the directory at `real` and any missing ones above it, each inside its proved parent, so none is made
 * outside through a swapped symlink. Answers those it created, deepest first.
 */
export const makeDirectories = async (real: string): Promise<ReadonlyArray<string>> => {
  const missing: Array<string> = []
  let existing = real
  let held: Directory | undefined
  for (;;) {
    try {
      held = await directory(existing)
      break
    } catch (cause) {
      const code = typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
      const parent = dirname(existing)
      if (code !== "ENOENT" || parent === existing) throw cause
      missing.unshift(basename(existing))
      existing = parent
    }
  }
  const created: Array<string> = []
  try {
    for (const name of missing) {
      const next = join(held.path, name)
      try {
        await fsp().mkdir(held.at(name))
        created.unshift(next)
      } catch (cause) {
        if (!(typeof cause === "object" && cause !== null && "code" in cause && cause.code === "EEXIST")) throw cause
      }
      const child = await directory(next)
      await held.close()
      held = child
    }
  } finally {
    await held.close()
  }
  return created
}

/** Holds the directory at `real` open (see `directory`) for the life of the scope. */
export const hold = (real: string): Effect.Effect<Directory, unknown, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({ try: () => directory(real), catch: (cause) => cause }),
    (held) => Effect.promise(() => held.close()),
  )

/**
 * For a program run in a held directory (its working directory given as `at("")`) on the path ".": turns a path it
 * printed ("./a/b") back into the real path under `real` ("/real/a/b"). Other bytes are left as they are.
 */
export const underneath = (real: string): ((printed: Uint8Array) => Uint8Array) => {
  const base = Buffer.from(real.endsWith("/") ? real.slice(0, -1) : real)
  return (printed) => (printed[0] === 0x2e && printed[1] === 0x2f ? Buffer.concat([base, printed.subarray(1)]) : printed)
}
