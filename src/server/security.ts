export * as Security from "./security"

// The sidecar's checks before any route runs: the bearer token (compared in time that says nothing about it; one that
// could never match is refused at start), the Host header (a DNS-rebinding page reaches a loopback server under its own name,
// which is refused), and the Locations a request may name (only under the roots given at start, and each name only as
// the directory it first led to). Decisions; the HTTP layer turns them into answers.

import { closeSync, constants, openSync, readlinkSync, realpathSync, statSync } from "node:fs"
import { isAbsolute } from "node:path"
import { Boundary } from "../permission/boundary"

/** A fresh token: 32 random bytes, base64url. */
export const generateToken = (): string => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")

/**
 * Why `token` (from `$CORE_TOKEN`) could never match an `Authorization: Bearer <token>` header, or undefined when it
 * can: it must be visible ASCII without spaces (clients cannot send the rest byte for byte, and the header's
 * parser splits on whitespace).
 */
export const tokenProblem = (token: string): string | undefined => {
  const fix = "set it to visible ASCII characters without spaces, or unset it to have a token generated"
  if (token.trim() === "") return `CORE_TOKEN is empty or only whitespace; ${fix}`
  const space = token.search(/\s/)
  if (space !== -1) return `CORE_TOKEN contains whitespace (at character ${space + 1}); ${fix}`
  const other = token.search(/[^\x21-\x7e]/)
  if (other !== -1) return `CORE_TOKEN contains a control or non-ASCII character (at character ${other + 1}); ${fix}`
  return undefined
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i

/**
 * Whether `candidate` is `expected`, in time that depends on the candidate's length alone: every character of the
 * candidate is compared, with no early exit, against the expected one at that place (the expected wrapped around
 * when the candidate is longer), and the lengths are compared the same way.
 */
const same = (candidate: string, expected: string): boolean => {
  let difference = candidate.length ^ expected.length
  for (let index = 0; index < candidate.length; index++) {
    difference |= candidate.charCodeAt(index) ^ expected.charCodeAt(index % expected.length)
  }
  return difference === 0
}

/**
 * Checks `Authorization: Bearer <token>`. The comparison takes as long for any token sent of a length, right or
 * wrong wherever it differs, so its time says nothing about the token's content or length.
 */
export const tokenChecker = (token: string): ((authorization: string | undefined) => boolean) => {
  return (authorization) => {
    if (authorization === undefined) return false
    const match = BEARER.exec(authorization)
    if (match === null) return false
    return same(match[1]!, token)
  }
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"])

/** Whether `host` is a loopback address or name. */
export const isLoopback = (host: string): boolean => LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host)

const WILDCARD = new Set(["0.0.0.0", "::", ""])

/** `host:port` as it appears in a URL or a Host header (IPv6 in brackets). */
export const authority = (host: string, port: number): string => `${host.includes(":") ? `[${host}]` : host}:${port}`

/**
 * The Host header values a server bound to `host:port` accepts: the bound address itself, and `localhost` when it
 * is a loopback address. A wildcard bind accepts any IP literal or `localhost` with the port, never another name
 * (a rebinding attack arrives under a DNS name it controls).
 */
export const hostChecker = (host: string, port: number): ((header: string | undefined) => boolean) => {
  const allowed = new Set([authority(host, port).toLowerCase()])
  if (isLoopback(host)) {
    allowed.add(`localhost:${port}`)
    if (host === "localhost") {
      allowed.add(`127.0.0.1:${port}`)
      allowed.add(`[::1]:${port}`)
    }
  }
  if (!WILDCARD.has(host)) return (header) => header !== undefined && allowed.has(header.toLowerCase())
  const suffix = `:${port}`
  return (header) => {
    if (header === undefined) return false
    const value = header.toLowerCase()
    if (!value.endsWith(suffix)) return false
    const name = value.slice(0, -suffix.length)
    return name === "localhost" || /^\d+\.\d+\.\d+\.\d+$/.test(name) || /^\[[0-9a-f:.]+\]$/.test(name)
  }
}

export type LocationCheck =
  | { readonly _tag: "Allowed"; readonly directory: string }
  | { readonly _tag: "Invalid"; readonly message: string }
  | { readonly _tag: "Outside"; readonly message: string }
  | { readonly _tag: "Replaced"; readonly message: string }

/** How many names a server remembers the directory of, those used least recently forgotten first. */
export const REMEMBERED_NAMES = 10_000

/** Checks `X-Core-Location` names for one server, remembering the directory each name led to when first allowed. */
export interface LocationNames {
  readonly check: (requested: string) => LocationCheck
}

/**
 * Where `X-Core-Location` may point: an absolute, existing directory whose real path is one of `roots` (real paths)
 * or under one. The real path is the kernel's, of the directory the name leads to (as every program opening the name
 * reaches it: `..` after a symbolic link is the link target's parent). And a name allowed once must go on leading
 * to that real path, else it is refused: a command of a Location holding another served one (where no mount namespace
 * keeps that one in place) can rename it away and leave in its place a link to a folder of the model's, which a
 * request naming it would load, tools and all, into core. The guard puts it back once the command ends, and the name
 * is served again. A name is remembered as the kernel reads it (`a/sub/`, `a//sub` and `a/./sub` are `a/sub`). (Another directory moved to the very path is that Location's to the guard, which holds back its
 * loads while a command runs and undoes the move.) The roots are remembered from the start.
 */
export const locationNames = (roots: ReadonlyArray<string>): LocationNames => {
  const first = new Map<string, string>()
  const remember = (name: string, real: string) => {
    if (first.size >= REMEMBERED_NAMES) first.delete(first.keys().next().value!)
    first.set(name, real)
  }
  for (const root of roots) {
    const real = realDirectory(root)
    if (typeof real === "string") remember(spelled(root), real)
  }
  return {
    check: (requested) => {
      if (!isAbsolute(requested)) {
        return { _tag: "Invalid", message: `X-Core-Location must be an absolute directory, not "${requested}"` }
      }
      const real = realDirectory(requested)
      if (typeof real !== "string") return real
      if (!roots.some((root) => Boundary.isWithin(root, real))) {
        return {
          _tag: "Outside",
          message:
            `X-Core-Location ${requested} is not under an allowed root (${roots.join(", ")}); start core serve with ` +
            `--allow-root to allow it`,
        }
      }
      const name = spelled(requested)
      const before = first.get(name)
      if (before !== undefined && before !== real) {
        return {
          _tag: "Replaced",
          message:
            `X-Core-Location ${requested} now leads to ${real}, not to ${before} as when first served: it, or a folder ` +
            `on its way, was moved or replaced by a link since (a command running in a Location that holds it can do ` +
            `that). It is served again once it leads back there (core puts back what a command moved when the ` +
            `command ends); if you moved it yourself, restart core serve to serve it by that name`,
        }
      }
      // Moved to the newest end: the names used least recently are the ones forgotten.
      first.delete(name)
      remember(name, real)
      return { _tag: "Allowed", directory: real }
    },
  }
}

/**
 * A name as the kernel reads it, whatever way it is written: without empty and `.` components (`a//b`, `a/./b`,
 * `a/b/`, `a/b/.` are `a/b`). `..` stays: after a symbolic link it is the link target's parent, not the name's.
 */
const spelled = (name: string): string => `/${name.split("/").filter((part) => part !== "" && part !== ".").join("/")}`

/** Linux's O_PATH: a descriptor that names a file (here, a directory), without opening it for reading. */
const O_PATH = 0o10000000

const doesNotExist = (requested: string): LocationCheck => ({ _tag: "Invalid", message: `X-Core-Location ${requested} does not exist` })

/** Why `requested` (absolute) leads to no directory: it is not one, or does not exist (or is out of reach). */
const noDirectory = (requested: string): LocationCheck => {
  try {
    if (!statSync(requested).isDirectory()) return { _tag: "Invalid", message: `X-Core-Location ${requested} is not a directory` }
  } catch {
    // As missing.
  }
  return doesNotExist(requested)
}

/**
 * The real path of the directory `requested` (absolute) leads to, as the kernel has it: on Linux the directory is
 * opened (O_PATH) and its descriptor's path read back, three system calls whatever the depth of the path; elsewhere
 * `realpath`. Or why it leads to none.
 */
const realDirectory = (requested: string): string | LocationCheck => {
  if (process.platform !== "linux") {
    try {
      if (statSync(requested).isDirectory()) return realpathSync(requested)
    } catch {
      // Said below.
    }
    return noDirectory(requested)
  }
  let fd: number
  try {
    fd = openSync(requested, O_PATH | constants.O_DIRECTORY)
  } catch {
    return noDirectory(requested)
  }
  try {
    const real = readlinkSync(`/proc/self/fd/${fd}`)
    // Removed meanwhile, or outside this process's root: none.
    return real.startsWith("/") && !real.endsWith(" (deleted)") ? real : doesNotExist(requested)
  } catch {
    return doesNotExist(requested)
  } finally {
    closeSync(fd)
  }
}
