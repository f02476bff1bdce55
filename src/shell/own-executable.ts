export * as OwnExecutable from "./own-executable"

// How core runs its own code again in a helper process (a command's supervisor and its starter, the HTML converter).
// Compiled, that is the very file this process was started from, reached through the kernel's link to it
// (`/proc/self/exe`), never through its path: core's executable may lie in a Location (a project that builds or
// vendors core), where a model's command can rename another file onto that path (`mv x bin/core`) while core runs,
// and a helper started by the path would run that file outside the sandbox. The link still leads to the file core
// started from after it was replaced or deleted (an upgrade under a running sidecar gets its own version's helpers
// too). From source, Bun on a source file beside the caller: a development setup. Imports nothing: the entry loads it
// before anything else.

import { existsSync, openSync } from "node:fs"

/** Whether this process is the compiled executable (its modules live in Bun's embedded file system). */
export const compiled = (): boolean => import.meta.path.startsWith("/$bunfs/")

let executable: string | undefined

/**
 * The file this process was started from, as a path that keeps leading to it: `/proc/self/exe`, which the new
 * process resolves while it is still a copy of this one (as Bun starts it). Not `/proc/<pid>/exe`: /proc refuses it
 * to a process of a user who may not trace this one (core made itself undumpable), and in a PID namespace of its
 * own (a sandboxed command's supervisor) this process's pid names another. Its own path where /proc is missing.
 */
const own = (): string => (executable ??= existsSync("/proc/self/exe") ? "/proc/self/exe" : process.execPath)

/**
 * The arguments that start this core's code again: the executable alone when compiled (its entry reads the
 * helper's flag), else Bun on `source` (the helper's source file, absolute). `at`: through another program that
 * holds `descriptor()` as its descriptor `at`.
 */
export const argv = (source: string, at?: number): ReadonlyArray<string> =>
  compiled() ? [at === undefined ? own() : `/proc/self/fd/${at}`] : [process.execPath, source]

let held: number | null | undefined

/**
 * A descriptor of this process's executable, opened once and kept (close-on-exec), for a start through another
 * program that execs core itself (`unshare`: its /proc/self/exe is its own, and from the user namespace it makes,
 * /proc refuses it this process's): that program is handed it, and execs `/proc/self/fd/N`. Undefined from source,
 * or where the file cannot be read.
 */
export const descriptor = (): number | undefined => {
  if (held === undefined) {
    try {
      held = compiled() ? openSync("/proc/self/exe", "r") : null
    } catch {
      held = null
    }
  }
  return held ?? undefined
}
