export * as OwnExecutable from "./own-executable"

// How core runs its own code again in a helper process (a command's supervisor and its starter, the HTML converter).
// Compiled, that is the very file this process was started from, reached through the kernel's link to it
// (`/proc/self/exe`, which the new process resolves as the copy of this one it still is), never through its path: core's executable may lie in a Location (a project that builds or
// vendors core), where a model's command can rename another file onto that path (`mv x bin/core`) while core runs,
// and a helper started by the path would run that file outside the sandbox. The link still leads to the file core
// started from after it was replaced or deleted (an upgrade under a running sidecar gets its own version's helpers
// too). From source, Bun on a source file beside the caller: a development setup. Imports nothing: the entry loads it
// before anything else.

import { existsSync } from "node:fs"

/** Whether this process is the compiled executable (its modules live in Bun's embedded file system). */
export const compiled = (): boolean => import.meta.path.startsWith("/$bunfs/")

let executable: string | undefined

/**
 * The file this process was started from, as a path that keeps leading to it: `/proc/self/exe` on Linux. Not
 * `/proc/<pid>/exe`: in a PID namespace of its own (a sandboxed command's supervisor) this process's pid names
 * another process in /proc.
 */
const own = (): string => (executable ??= existsSync("/proc/self/exe") ? "/proc/self/exe" : process.execPath)

/**
 * The arguments that start this core's code again: the executable alone when compiled (its entry reads the
 * helper's flag), else Bun on `source` (the helper's source file, absolute).
 */
export const argv = (source: string): ReadonlyArray<string> => (compiled() ? [own()] : [process.execPath, source])
