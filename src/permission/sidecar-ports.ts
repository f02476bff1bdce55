export * as SidecarPorts from "./sidecar-ports"

// The TCP ports every `core serve` of this user on this machine listens on, kept in one folder of the user's own:
// no sandboxed command of any core may connect to one of them (../shell/supervised). A command that reached another
// sidecar's API with a token it found (a host's `curl -H "Authorization: Bearer …"` shows it to every process of
// the user in /proc) could answer that sidecar's asks itself. A serve adds each port as it listens and takes it out
// as it exits; one killed leaves it until a core finds its process gone. The folder is out of the commands' reach
// (../shell/sandbox's hidden places) and protected from the file tools (./protected).

import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"

/** Where the user's folder goes without a home the system knows: memory every process shares, which commands never see. */
const SHARED = "/dev/shm"

/** The home /etc/passwd gives the user of `uid` (not $HOME, which each process may set apart), if any. */
const passwdHome = (uid: number): string | undefined => {
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const fields = line.split(":")
      if (fields.length >= 7 && fields[2] === String(uid)) return fields[5]!.startsWith("/") && fields[5] !== "/" ? fields[5] : undefined
    }
  } catch {
    // No /etc/passwd: the shared place below.
  }
  return undefined
}

let found: string | null | undefined

/**
 * The folder, the same for every core of this user whatever its environment: under the home /etc/passwd gives the
 * user, which no other user can make first (not under $HOME or $TMPDIR, which each process may set apart, and not
 * in /tmp: a place there that no command may reach keeps commands from having /tmp whole, ../shell/sandbox); for a
 * user without one, in /dev/shm, of which a command sees only an empty one of its own. Undefined where neither is.
 */
export const folder = (): string | undefined => {
  if (found !== undefined) return found ?? undefined
  const uid = process.getuid?.()
  const home = uid === undefined ? undefined : passwdHome(uid)
  found =
    uid === undefined
      ? null
      : home !== undefined && existsSync(home)
        ? join(home, ".local", "state", "core", "sidecar-ports")
        : existsSync(SHARED)
          ? join(SHARED, `core-${uid}`, "sidecar-ports")
          : null
  return found ?? undefined
}

/** An entry's name: the serve's pid and the port. */
const ENTRY = /^(\d+)-(\d+)$/

/**
 * `path` made where it is missing, and whether it is then a folder of `uid`'s alone: the folder (no one else may
 * enter it) and the one holding it (no one else may write it: another user's folder there could have this one
 * replaced at will). Another user's folder found there in its place (made first, in /dev/shm) is refused.
 */
export const ownFolder = (path: string, uid: number): boolean => {
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 })
    for (const [each, mask] of [[join(path, ".."), 0o022], [path, 0o077]] as const) {
      const stats = lstatSync(each)
      if (!stats.isDirectory() || stats.uid !== uid || (stats.mode & mask) !== 0) return false
    }
    return true
  } catch {
    return false
  }
}

/** The folder once made and checked to be the user's alone, or undefined. */
const usable = (): string | undefined => {
  const path = folder()
  const uid = process.getuid?.()
  return uid !== undefined && path !== undefined && ownFolder(path, uid) ? path : undefined
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (cause) {
    // Another user's process (EPERM) is alive too.
    return (cause as { code?: unknown }).code === "EPERM"
  }
}

/** The entries this process added, taken out as it exits. */
const added = new Set<string>()

/** Records that this process listens on `port`; answers why it could not, or undefined. */
export const register = (port: number): string | undefined => {
  const path = usable()
  if (path === undefined) {
    const where = folder()
    return where === undefined ? `this system has no home for the user and no ${SHARED}` : `${where} is not a folder of this user's alone`
  }
  const entry = join(path, `${process.pid}-${port}`)
  try {
    writeFileSync(entry, "", { mode: 0o600 })
  } catch (cause) {
    return String((cause as Error).message ?? cause)
  }
  if (added.size === 0) process.once("exit", () => added.forEach((each) => unlinkQuietly(each)))
  added.add(entry)
  return undefined
}

const unlinkQuietly = (path: string) => {
  try {
    unlinkSync(path)
  } catch {
    // gone already
  }
}

/** The ports the user's running sidecars listen on; entries of processes gone are taken out. */
export const live = (): ReadonlyArray<number> => {
  const path = usable()
  if (path === undefined) return []
  let names: ReadonlyArray<string>
  try {
    names = readdirSync(path)
  } catch {
    return []
  }
  const ports: Array<number> = []
  for (const name of names) {
    const found = ENTRY.exec(name)
    if (found === null) continue
    const port = Number(found[2])
    if (!alive(Number(found[1]))) unlinkQuietly(join(path, name))
    else if (port > 0 && port < 65_536) ports.push(port)
  }
  return ports
}
