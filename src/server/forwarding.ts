export * as Forwarding from "./forwarding"

// What `core serve` leaves in its private socket directory so that `core exec` of the same data directory can
// forward its call here instead of loading a Location of its own (docs/serve.md, "core exec forwards"): a record
// naming the unix socket Bun.serve answers on, a token of its own for it, the serve's version, executable, Locations,
// a digest of the environment it runs with, and its umask. Only the user can write it (0600 in a 0700 directory of the 0700
// data directory); exec checks that again before trusting it. Imports nothing of core: exec reads it before
// loading Effect.

import { renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"

/** The record's file name, beside `http.sock` in the serve's socket directory. */
export const FILE_NAME = "serve.json"
/** The socket Bun.serve answers on, in the same directory. */
export const SOCKET_NAME = "http.sock"
/** The prefix of a serve's socket directory in the data directory: `serve-<pid>-<random>`. */
export const DIRECTORY_PATTERN = /^serve-(\d+)-[A-Za-z0-9]+$/

/**
 * Variables that differ between two shells of one person without changing what a call does, left out of the
 * environment's digest: the shell's own bookkeeping, the serve's token, and the switch that forces exec in process.
 */
const IGNORED = new Set(["PWD", "OLDPWD", "SHLVL", "_", "CORE_TOKEN", "CORE_EXEC_FORWARD"])

export interface Record {
  readonly version: string
  readonly pid: number
  /** The executable the serve runs (the core binary, or bun running core's source). */
  readonly execPath: string
  /** The serve's address as its ready line gives it: requests on the socket name it as their Host. */
  readonly url: string
  /** A bearer token for requests from exec, besides the serve's own. */
  readonly token: string
  /** The serve's --location (a real directory). */
  readonly location: string
  /** The real directories under which it serves other Locations (X-Core-Location), the --location first. */
  readonly roots: ReadonlyArray<string>
  /** The digest of the serve's environment (see `environmentDigest`). */
  readonly environment: string
  /** The serve's umask: what its commands create is as private as exec's own would be only where they agree. */
  readonly umask: number
}

/** A digest of every variable of `env` but the IGNORED ones: equal when a call would see the same environment. */
export const environmentDigest = (env: Readonly<{ [name: string]: string | undefined }>): string => {
  const entries = Object.entries(env)
    .filter(([name, value]) => value !== undefined && !IGNORED.has(name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return new Bun.CryptoHasher("sha256").update(JSON.stringify(entries)).digest("hex")
}

/** Writes `record` into the socket directory, whole (a reader never sees half of it), readable by the user alone. */
export const write = (directory: string, record: Record): void => {
  const temporary = join(directory, `${FILE_NAME}.tmp`)
  writeFileSync(temporary, JSON.stringify(record), { mode: 0o600 })
  renameSync(temporary, join(directory, FILE_NAME))
}
