export * as FileLock from "./file-lock"

// Keeps changes to one file from overlapping. Within a process, every change to a real path runs alone
// (`serialized`), so two parallel edit calls on one file apply one after the other, the second to the first's
// result. Across processes, the short step that checks a file is still what a change read and renames the new
// content over it runs under a lock file beside it (`committing`), so a core process can never replace content
// another one wrote after it read; a change that finds its file changed since its read is made again from a fresh
// read (`retried`). The per-process table is process-wide on purpose: two Locations, or two
// sessions, may change the same file.

import { constants } from "node:fs"
import { basename, dirname, join } from "node:path"
import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"
import { Pinned } from "../permission/pinned"
import { Native } from "../shell/native"
import { Owner } from "../store/owner"
import { Tool } from "../tool/tool"

/**
 * node:fs/promises, loaded on first use: it costs milliseconds of start-up, and every core that settles in process
 * imports this module.
 */
const fsp = (): typeof import("node:fs/promises") => require("node:fs/promises")

/** How long a change waits for another process's commit on the same file before it gives up. */
export const COMMIT_WAIT_MS = 10_000
/** Pause between attempts to take a commit lock another process holds. */
const RETRY_MS = 2

interface Held {
  readonly semaphore: Semaphore.Semaphore
  users: number
}

const held = new Map<string, Held>()

const lockOne = <A, E, R>(path: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      let entry = held.get(path)
      if (entry === undefined) {
        entry = { semaphore: Semaphore.makeUnsafe(1), users: 0 }
        held.set(path, entry)
      }
      entry.users++
      return entry
    }),
    (entry) => Semaphore.withPermits(entry.semaphore, 1)(effect),
    (entry) =>
      Effect.sync(() => {
        entry.users--
        if (entry.users === 0) held.delete(path)
      }),
  )

/** How many changes in this process hold `path` (a real path) or wait for it. */
export const holders = (path: string): number => held.get(path)?.users ?? 0

/**
 * Runs `effect` while no other change in this process holds any of `paths` (real paths). Paths are taken in
 * sorted order, so two changes that share several files cannot wait on each other forever.
 */
export const serialized = <A, E, R>(paths: ReadonlyArray<string>, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  [...new Set(paths)].sort().reduceRight<Effect.Effect<A, E, R>>((inner, path) => lockOne(path, inner), effect)

/** How often a change is made again when another process changed one of its files between its read and its commit. */
export const MAX_ATTEMPTS = 5

/** What an attempt at a change answers when a file changed since it was read: nothing was written, try again. */
export const CHANGED = "changed"

/**
 * Makes a change to the files at `paths` (`serialized`), from a fresh read each time: `attempt` (given its try,
 * 1-based) answers CHANGED when another process changed a file between its read and its commit, and the change is
 * made again, at most MAX_ATTEMPTS times in all; then it fails with `exhausted`.
 */
export const retried = <A, E, R>(
  paths: ReadonlyArray<string>,
  attempt: (tries: number) => Effect.Effect<A | typeof CHANGED, E, R>,
  exhausted: () => E,
): Effect.Effect<A, E, R> => {
  const from = (tries: number): Effect.Effect<A, E, R> =>
    attempt(tries).pipe(
      Effect.flatMap((result) =>
        result !== CHANGED ? Effect.succeed(result as A) : tries >= MAX_ATTEMPTS ? Effect.fail(exhausted()) : from(tries + 1),
      ),
    )
  return serialized(paths, Effect.suspend(() => from(1)))
}

/** The lock file that guards commits to `path`. */
export const lockPath = (path: string): string => join(dirname(path), `.${basename(path)}.core-lock`)

const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : undefined

/** A lock file taken: the directory it was made in, held open until it is removed through it, and the lock itself. */
interface Taken {
  readonly directory: Pinned.Directory
  readonly name: string
  /** The lock, open and flocked while it is held: a core judging it stale must take that flock first. */
  readonly handle: FileHandle
}

type FileHandle = Awaited<ReturnType<typeof Pinned.create>>

/** A lock file holds a process's identity, never more. */
const MAX_LOCK_BYTES = 4_096
/** How long a lock may stay empty (a core writes its identity right after making it) before it is taken as stale. */
const EMPTY_LOCK_MS = 2_000

/** The lock's path holds something no core made (a FIFO, a directory, a large file): waiting on it would be forever. */
class NotALock extends Error {
  constructor(readonly lock: string) {
    super(`${lock} is not a lock file core made`)
  }
}

/** Whether `handle` is still the file at `path` (nobody removed or replaced it since it was opened). */
const stillAt = async (path: string, handle: FileHandle): Promise<boolean> => {
  const [now, held] = await Promise.all([fsp().lstat(path).catch(() => undefined), handle.stat()])
  return now !== undefined && now.ino === held.ino && now.dev === held.dev
}

/**
 * Takes the lock file: answers it taken, or undefined when a live process holds it (a dead holder's lock is
 * removed). The lock is made, read and removed through its directory as checked (Pinned), and that directory
 * stays held until the lock is given back, so a directory on the path swapped for a symlink in between can
 * neither lead the lock elsewhere nor leave it behind.
 *
 * A lock is held open and flocked by the core holding it, and one judged stale is removed only by the core that
 * took its flock and found it still at its path: two cores that judged one stale lock together removed each
 * other's new lock after it (a delete decided on what was read), and went into the commit together.
 */
const tryTake = async (lock: string): Promise<Taken | undefined> => {
  const directory = await Pinned.directory(dirname(lock))
  const name = basename(lock)
  const path = directory.at(name)
  let made: FileHandle | undefined
  try {
    made = await Pinned.create(directory, name, 0o600)
  } catch (cause) {
    if (codeOf(cause) !== "EEXIST") {
      await directory.close()
      throw cause
    }
  }
  if (made !== undefined) {
    try {
      // A core judging it meanwhile holds its flock for a moment: taken a few tries later at most.
      for (let tries = 0; tries < 50 && Native.flock(made.fd, Native.LOCK_EX | Native.LOCK_NB) === Native.EWOULDBLOCK; tries++) {
        await Bun.sleep(1)
      }
      await made.writeFile(Owner.current)
      return { directory, name, handle: made }
    } catch (cause) {
      await fsp().unlink(path).catch(() => undefined)
      await made.close()
      await directory.close()
      throw cause
    }
  }
  try {
    await judge(lock, path)
    return undefined
  } finally {
    await directory.close()
  }
}

/**
 * Looks at the lock another holds at `path`, and removes it when it is stale: its holder gone, or left empty for
 * longer than a core takes to write it. Opened without waiting (a FIFO planted there blocked the read forever, in
 * a step no cancel could stop) and read only as a small regular file.
 */
const judge = async (lock: string, path: string): Promise<void> => {
  let handle: FileHandle
  try {
    handle = await fsp().open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW)
  } catch (cause) {
    const code = codeOf(cause)
    // Gone meanwhile: try again. A symbolic link (ELOOP) core never makes.
    if (code === "ENOENT") return
    if (code === "ELOOP") throw new NotALock(lock)
    throw cause
  }
  try {
    const stats = await handle.stat()
    if (!stats.isFile() || stats.size > MAX_LOCK_BYTES) throw new NotALock(lock)
    // Held by a live core (or judged by another right now): not stale.
    if (Native.flock(handle.fd, Native.LOCK_EX | Native.LOCK_NB) === Native.EWOULDBLOCK) return
    const buffer = Buffer.alloc(MAX_LOCK_BYTES)
    const { bytesRead } = await handle.read(buffer, 0, MAX_LOCK_BYTES, 0)
    const owner = buffer.subarray(0, bytesRead).toString("utf8")
    const stale = owner === "" ? Date.now() - stats.mtimeMs > EMPTY_LOCK_MS : !Owner.isAlive(owner)
    if (stale && (await stillAt(path, handle))) await fsp().unlink(path).catch(() => undefined)
  } finally {
    await handle.close()
  }
}

/** Gives the lock back: removed only while it is still this core's own, then let go. */
const give = (taken: Taken): Effect.Effect<void> =>
  Effect.promise(async () => {
    const path = taken.directory.at(taken.name)
    try {
      if (await stillAt(path, taken.handle).catch(() => false)) await fsp().unlink(path).catch(() => undefined)
    } finally {
      await taken.handle.close().catch(() => undefined)
      await taken.directory.close().catch(() => undefined)
    }
  })

/**
 * Why the lock file beside `path` could not be made (`code`), naming the file it locks (a change may write many),
 * and what to do about it.
 */
const lockRefused = (path: string, code: string): string => {
  const directory = dirname(path)
  const advice =
    code === "EPERM"
      ? `the directory refuses new files whatever its mode: it is likely marked immutable (chattr +i; lsattr -d ${directory} shows it)`
      : code === "EROFS"
        ? "the directory is on a read-only file system"
        : code === "ENOSPC" || code === "EDQUOT"
          ? "the disk (or the user's quota) is full"
          : "check the directory's permissions"
  return `core could not create ${lockPath(path)}, the lock for ${path} (${code}). Nothing was changed; ${advice}.`
}

/**
 * Runs `effect` holding the commit lock of each of `paths` (sorted), waiting for other processes' commits. Keep
 * `effect` short: a check that the file is unchanged and a rename.
 */
export const committing = <A, E, R>(
  paths: ReadonlyArray<string>,
  shown: string,
  effect: Effect.Effect<A, E, R>,
): Effect.Effect<A, E | Tool.Failure, R> =>
  [...new Set(paths)].sort().reduceRight<Effect.Effect<A, E | Tool.Failure, R>>(
    (inner, path) =>
      Effect.acquireUseRelease(
        Effect.gen(function* () {
          const lock = lockPath(path)
          const deadline = Date.now() + COMMIT_WAIT_MS
          while (true) {
            const taken = yield* Effect.tryPromise({ try: () => tryTake(lock), catch: (cause) => cause }).pipe(
              Effect.catch((cause) => {
                if (cause instanceof NotALock) {
                  return Effect.fail(
                    new Tool.Failure({
                      message: `Cannot write ${shown}: the path of its lock file, ${lock}, holds something core did not make (not a small regular file). Nothing was changed; ask the user to remove it.`,
                    }),
                  )
                }
                const code = codeOf(cause)
                if (code === undefined) return Effect.die(cause)
                return Effect.fail(new Tool.Failure({ message: `Cannot write ${shown}: ${lockRefused(path, code)}` }))
              }),
            )
            if (taken !== undefined) return taken
            if (Date.now() > deadline) {
              return yield* new Tool.Failure({
                message: `Cannot write ${shown}: another core process has been writing it for over ${COMMIT_WAIT_MS / 1000} s (lock file ${lock}). Nothing was changed; try again, or remove the lock file if no core process is running.`,
              })
            }
            // The one wait a change makes before its commit: a cancel may end it, with nothing taken or changed.
            yield* Effect.interruptible(Effect.sleep(RETRY_MS))
          }
        }),
        () => inner,
        give,
      ),
    effect,
  )
