export * as LoadGate from "./load-gate"

// Commands and loads of one Location's configuration, across every core process sharing a data directory: a command
// a guard watches (./guard) may plant core's configuration in its Location (a `tools/` where there was none, a file a
// tool imports), which its guard takes out once it has ended; no core process may load that Location's
// configuration meanwhile, or it would run the planted code outside the sandbox. A command holds the Location's lock
// shared from before it starts until its guard has undone what it left; a load (core.json read, a tool or plugin
// file imported) holds it exclusive, so it runs only while no command of the Location runs anywhere. A load waits
// for a moment when none runs: it never holds back commands (a sidecar's calls) while it waits. Locks are flock(2)s
// on files in `$CORE_DATA_DIR/guards/`, out of every command's reach; a process that dies lets go of its own. Where
// they cannot be had (no libc, an unwritable data directory), commands and loads go on without them.
//
// A core process that dies while its command runs (SIGKILL) lets go of the lock before its guard has undone what the
// command left. Its guard's record says what it found; a load that finds such a record of its Location, with paths no
// longer as noted, is refused (`Stale`) until a person has looked (Guard.stale).

import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { closeSync, constants, mkdirSync, openSync } from "node:fs"
import { join } from "node:path"
import { Protected } from "../permission/protected"
import { Guard } from "./guard"
import { Landlock } from "./landlock"
import { Native } from "./native"

const LOCK_SH = 1
/** How soon a lock held elsewhere is tried again, at first and at most (the wait doubles in between). */
const FIRST_POLL_MS = 2
const LAST_POLL_MS = 100

/** The directory of the locks (and of the guards' notes) for the data directory `env` names. */
export const directoryOf = (env: Readonly<Record<string, string | undefined>> = process.env): string =>
  join(Protected.directoriesOf(env).dataDir, "guards")

const digest = (key: string): string => new Bun.CryptoHasher("sha256").update(key).digest("hex").slice(0, 32)

const open = (path: string): number | undefined => {
  try {
    return openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600)
  } catch {
    return undefined
  }
}

/**
 * The lock of `key` (a real directory), opened; undefined where it cannot be. One file per Location ever guarded or
 * loaded, kept (removing a lock file another core may be about to take would give two cores two locks), in a folder
 * of their own: the guards' notes beside it are read at every command.
 */
const lockOf = (key: string, directory: string): number | undefined => {
  const locks = join(directory, "locks")
  try {
    mkdirSync(locks, { recursive: true, mode: 0o700 })
  } catch {
    return undefined
  }
  return open(join(locks, `${digest(key)}.lock`))
}

/**
 * Takes `operation` on `fd`, trying again while another open file holds it; false where flock fails otherwise. Stops
 * trying once `signal` aborts, rejecting with its reason.
 */
const take = async (fd: number, operation: number, signal?: AbortSignal): Promise<boolean> => {
  for (let wait = FIRST_POLL_MS; ; wait = Math.min(LAST_POLL_MS, wait * 2)) {
    if (signal?.aborted) throw signal.reason
    const code = Native.flock(fd, operation | Native.LOCK_NB)
    if (code !== Native.EWOULDBLOCK) return code === 0
    await new Promise((resolve) => setTimeout(resolve, wait))
  }
}

/**
 * Holds the locks of `keys` (the Locations a guarded command may reach, real paths) shared, once no load of them
 * is under way; answers how to let them go (once the command's guard has undone what it left). Given up (`signal`
 * aborts) while it waits, it holds none and rejects; aborted once it holds them, it lets them go: its caller gave up
 * before it took them (an Effect's promise aborts only while it waits for it). Otherwise a cancelled command would
 * hold its Location's lock, and every later load of the Location in any core wait, for as long as this process lived.
 */
export const command = async (keys: ReadonlyArray<string>, directory: string = directoryOf(), signal?: AbortSignal): Promise<() => void> => {
  const held: Array<number> = []
  const letGo = () => {
    for (const fd of held.splice(0)) closeSync(fd)
  }
  for (const key of keys) {
    const lock = lockOf(key, directory)
    if (lock === undefined) continue
    try {
      await take(lock, LOCK_SH, signal)
    } catch (cause) {
      closeSync(lock)
      letGo()
      throw cause
    }
    held.push(lock)
  }
  signal?.addEventListener("abort", letGo, { once: true })
  return letGo
}

/** Holds `key`'s lock exclusive (reading its configuration: core.json, a tool or plugin file) once no command of it runs. */
const load = async (key: string, directory: string): Promise<() => void> => {
  const lock = lockOf(key, directory)
  if (lock === undefined) return () => {}
  try {
    await take(lock, Native.LOCK_EX)
  } catch (cause) {
    closeSync(lock)
    throw cause
  }
  return () => closeSync(lock)
}

/**
 * A load refused: a core process died while a command of the Location ran, and what its guard found is no longer
 * there (`file`: the Location; `message` says what changed, and what a person does about it).
 */
export class Stale extends Data.TaggedError("LoadGate.Stale")<{ readonly file: string; readonly message: string }> {}

/**
 * `effect` (a load of `key`'s configuration) run once no command of `key` runs in any core process, and none starts
 * meanwhile; refused with `Stale` where a dead core's command may have left what it planted.
 */
export const loading = <A, E, R>(key: string, effect: Effect.Effect<A, E, R>, directory: string = directoryOf()): Effect.Effect<A, E | Stale, R> =>
  Effect.acquireUseRelease(
    Effect.promise(() => load(key, directory)),
    () =>
      Effect.suspend((): Effect.Effect<A, E | Stale, R> => {
        const location = Landlock.real(key)
        const found = Guard.stale(directory, location)
        return found.length === 0 ? effect : Effect.fail(new Stale({ file: location, message: Guard.staleMessage(location, found) }))
      }),
    (release) => Effect.sync(release),
  )
