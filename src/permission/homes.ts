export * as Homes from "./homes"

// The homes of the system's other users, where their credential stores are (./credentials): every home the user
// database names (service accounts' too: postgres at /var/lib/postgresql, www-data at /var/www) and every folder in
// /home, as real paths (Fedora Atomic's /home is a link to /var/home; one user's home may be a link elsewhere).

import { readdirSync, readFileSync, realpathSync } from "node:fs"
import { join } from "node:path"

/** The most homes looked into. */
const MAX_HOMES = 1_024

/** Directories /etc/passwd names as homes that are none: a user without one, or a system directory. */
const NO_HOME = new Set(["/", "/nonexistent", "/dev/null", "/bin", "/sbin", "/usr/bin", "/usr/sbin", "/dev", "/proc", "/var/empty"])

/** The homes `passwd` (the text of /etc/passwd) names: the sixth field of each line, absolute and not NO_HOME. */
export const named = (passwd: string): ReadonlyArray<string> => {
  const homes = new Set<string>()
  for (const line of passwd.split("\n")) {
    const home = line.split(":")[5]?.trim()
    if (home !== undefined && home.startsWith("/") && !NO_HOME.has(home.replace(/\/+$/, "") || "/")) homes.add(home)
  }
  return [...homes]
}

const realOf = (path: string): string | undefined => {
  try {
    return realpathSync(path)
  } catch {
    return undefined
  }
}

/**
 * Every home of the system's users that exists, as real paths (the user's own among them). Read anew each time (a
 * user added while core runs is seen): callers keep it for a while (a Location's permission service, the sandbox's
 * grants).
 */
export const all = (): ReadonlyArray<string> => {
  let passwd = ""
  try {
    passwd = readFileSync("/etc/passwd", "utf8")
  } catch {
    // No user database to read: /home alone.
  }
  let listed: ReadonlyArray<string> = []
  try {
    listed = readdirSync("/home").map((name) => join("/home", name))
  } catch {
    // No /home.
  }
  const real = [...named(passwd), ...listed, "/root"].slice(0, MAX_HOMES).flatMap((home) => realOf(home) ?? [])
  return [...new Set(real)].filter((home) => home !== "/" && !NO_HOME.has(home))
}

/** The homes of the system's other users: `all` but `home` (a real path). */
export const others = (home: string): ReadonlyArray<string> => all().filter((other) => other !== home)
