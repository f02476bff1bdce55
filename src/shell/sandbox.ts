export * as Sandbox from "./sandbox"

// What a sandboxed command may touch, and the per-call temp directory that makes it sound. Writes: the Location,
// the directories approved for the call, and a temp directory. Reads: those, the system directories programs need
// (Landlock.SYSTEM_READABLE), and the programs on PATH (each PATH directory's parent, so a tool's own files next to
// its bin/ come along). Never $CORE_HOME or $CORE_DATA_DIR, wherever they lie: Landlock grants are carved around
// them (./landlock). When the system temp directory holds one of them (as in tests), the command gets a fresh
// temp directory of its own (TMPDIR) instead of all of it.

import { mkdtempSync, rmSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { dirname, join, resolve, sep } from "node:path"
import { Landlock } from "./landlock"

/** What the caller decides: where the command runs and what was approved for this call. */
export interface Policy {
  /** The Location: read and written. */
  readonly location: string
  /** Directories approved through external_directory for this call: read and written. */
  readonly approved: ReadonlyArray<string>
  /**
   * Whether a person approved, for this call, a change to core's configuration in the Location (core.json,
   * tools/, plugins/, .core/): then the command may change it. Otherwise it is read-only to the command.
   */
  readonly configuration?: boolean
  /**
   * The other Locations this core serves: their configuration is guarded from the command as the Location's is
   * (a command may reach them through the Location, an approved directory or the temp directory).
   */
  readonly others?: ReadonlyArray<string>
}

/** The directories no command may read or write: core's home and data directory (as core resolves them). */
export const hidden = (env: Readonly<Record<string, string | undefined>> = process.env): ReadonlyArray<string> => [
  resolve(env.CORE_HOME || join(homedir(), ".config/core")),
  resolve(env.CORE_DATA_DIR || join(homedir(), ".local/share/core")),
]

const within = (root: string, path: string): boolean =>
  path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)

/** The directories a PATH makes readable: each entry's parent, or the entry itself where its parent is `/` or home. */
const programs = (path: string | undefined): ReadonlyArray<string> => {
  const home = homedir()
  return (path ?? "")
    .split(":")
    .filter((entry) => entry.startsWith("/"))
    .map((entry) => {
      const real = Landlock.real(entry)
      const parent = dirname(real)
      return parent === "/" || parent === home || parent === dirname(home) ? real : parent
    })
}

/** How long the grants that do not depend on the call are reused: a new PATH directory is readable after that. */
const FIXED_MS = 5_000

interface Fixed {
  readonly key: string
  readonly at: number
  readonly secret: ReadonlyArray<string>
  readonly system: string
  readonly read: ReadonlyArray<string>
  readonly devices: ReadonlyArray<string>
}

let cached: Fixed | undefined

/**
 * The grants that depend only on PATH and core's directories (system and PATH directories, devices, real paths
 * looked up one by one): a few milliseconds to work out, so reused for a moment.
 */
const fixed = (path: string | undefined): Fixed => {
  const homes = hidden(process.env)
  const key = [path ?? "", ...homes, tmpdir()].join("\0")
  const now = performance.now()
  if (cached !== undefined && cached.key === key && now - cached.at < FIXED_MS) return cached
  const secret = homes.map(Landlock.real)
  cached = {
    key,
    at: now,
    secret,
    system: Landlock.real(tmpdir()),
    read: Landlock.granted([...Landlock.SYSTEM_READABLE, ...programs(path)], secret),
    devices: Landlock.granted(["/dev"], secret),
  }
  return cached
}

export interface Prepared {
  readonly grants: Landlock.Grants
  /** Variables the command gets (TMPDIR when it has a temp directory of its own). */
  readonly env: Readonly<Record<string, string>>
  /** Removes the per-call temp directory, if one was made. */
  readonly cleanup: () => void
}

/** The grants of one call, making its temp directory when the system one cannot be granted whole. */
export const prepare = (policy: Policy, env: Readonly<Record<string, string | undefined>>): Prepared => {
  const { secret, system, read, devices } = fixed(env.PATH)
  let temporary: string | undefined
  if (secret.some((dir) => within(system, dir))) temporary = mkdtempSync(join(system, "core-call-"))
  const grants = { read, devices, write: Landlock.granted([policy.location, ...policy.approved, temporary ?? system], secret) }
  return {
    grants,
    env: temporary === undefined ? {} : { TMPDIR: temporary, TMP: temporary, TEMP: temporary },
    cleanup: () => {
      if (temporary !== undefined) rmSync(temporary, { recursive: true, force: true })
    },
  }
}
