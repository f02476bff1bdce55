export * as Sockets from "./sockets"

// The Unix sockets a sandboxed command may reach. Landlock does not mediate connect() to a socket file, so by default
// a seccomp filter refuses the command any new Unix socket (socket(AF_UNIX), and io_uring, which could make one out
// of the filter's sight), while socketpair() and pipes work: nothing outside (ssh-agent, D-Bus, X11, Docker) is
// reachable. Where core.json grants sockets (`shell.sockets`), Unix sockets are allowed and every other socket file
// the kernel lists as bound is covered in the command's mount namespace. The starter (./starter) applies both; nothing here
// decides permissions. Apart from the sandbox, wherever a command is kept off core's TCP ports (Landlock's network
// rules), `refuseUnmediated` refuses it the stream sockets those rules do not see: Multipath TCP, which falls back
// to plain TCP against core's listener (a command reached `core serve` with it), and SMC, which does too.

import { readFileSync, realpathSync } from "node:fs"
import { homedir } from "node:os"
import { isAbsolute } from "node:path"
import { Landlock } from "./landlock"
import { Native } from "./native"

const { AUDIT_ARCH, X32_BIT, RET_ALLOW, RET_ERRNO, NR, ARCH } = Native.Seccomp
const SYS_IO_URING_SETUP = 425
const AF_UNIX = 1
const AF_INET = 2
const AF_INET6 = 10
const AF_SMC = 43
const IPPROTO_MPTCP = 262
const EACCES = 13
const ENOSYS = 38
const EPROTONOSUPPORT = 93
const EAFNOSUPPORT = 97

/** A filter's first steps: a system call of another architecture or ABI (32-bit, x32), which it could not read, is ENOSYS. */
const native = (arch: number): ReadonlyArray<Native.Step> => [
  { load: ARCH },
  { equals: arch, otherwise: "nosys" },
  { load: NR },
  { equals: X32_BIT, atLeast: true, then: "nosys" },
  // io_uring can make a socket out of the filter's sight.
  { equals: SYS_IO_URING_SETUP, then: "nosys" },
]

/** The filter, built once: struct sock_fprog and the instructions it points to (kept, so they stay in memory). */
let built: { readonly fprog: Uint8Array; readonly program: Uint8Array } | undefined

/**
 * Builds the filter `refuse` installs, ahead of the command (the starter does it while it waits for its order).
 * Undefined on an architecture core has no system call numbers for.
 */
export const prepare = (): typeof built => {
  const numbers = Native.numbers
  if (built !== undefined || numbers === undefined) return built
  const program = Native.assemble([
    ...native(AUDIT_ARCH[process.arch as keyof typeof AUDIT_ARCH]),
    { equals: numbers.socket, otherwise: "allow" },
    { load: Native.argument(0) },
    { equals: AF_UNIX, then: "deny" },
    { label: "allow", returns: RET_ALLOW },
    { label: "deny", returns: RET_ERRNO | EACCES },
    { label: "nosys", returns: RET_ERRNO | ENOSYS },
  ])
  return (built = { fprog: Native.filterProgram(program), program })
}

/**
 * Refuses the calling thread (and every process it spawns afterwards) socket(AF_UNIX, ...) with EACCES and
 * io_uring with ENOSYS; a system call of another ABI (32-bit, x32) gets ENOSYS. Needs no_new_privs, which the
 * supervisor sets. Answers undefined, or why it could not.
 */
export const refuse = (): string | undefined => {
  const filter = prepare()
  return filter === undefined ? "no system call numbers for this architecture" : Native.installFilter(filter.fprog)
}

/** The filter `refuseUnmediated` installs, built once. */
let builtUnmediated: typeof built

/**
 * Refuses the calling thread (and every process it spawns afterwards) the stream sockets Landlock's TCP rules do not
 * mediate: socket(AF_INET or AF_INET6, ..., IPPROTO_MPTCP) with EPROTONOSUPPORT (programs that ask for Multipath TCP
 * then use TCP, which the rules see), socket(AF_SMC) with EAFNOSUPPORT, and io_uring (which can make either) with
 * ENOSYS; a system call of another ABI gets ENOSYS. Needs no_new_privs. Answers undefined, or why it could not.
 */
export const refuseUnmediated = (): string | undefined => {
  const numbers = Native.numbers
  if (numbers === undefined) return "no system call numbers for this architecture"
  builtUnmediated ??= (() => {
    const program = Native.assemble([
      ...native(AUDIT_ARCH[process.arch as keyof typeof AUDIT_ARCH]),
      { equals: numbers.socket, otherwise: "allow" },
      { load: Native.argument(0) },
      { equals: AF_SMC, then: "family" },
      { equals: AF_INET, then: "inet" },
      { equals: AF_INET6, otherwise: "allow" },
      // The protocol is an int: the kernel reads the low word alone.
      { label: "inet", load: Native.argument(2) },
      { equals: IPPROTO_MPTCP, then: "protocol" },
      { label: "allow", returns: RET_ALLOW },
      { label: "protocol", returns: RET_ERRNO | EPROTONOSUPPORT },
      { label: "family", returns: RET_ERRNO | EAFNOSUPPORT },
      { label: "nosys", returns: RET_ERRNO | ENOSYS },
    ])
    return { fprog: Native.filterProgram(program), program }
  })()
  return Native.installFilter(builtUnmediated.fprog)
}

const { within } = Landlock

/** The real path of `path`, or undefined when it is gone. */
const realOf = (path: string): string | undefined => {
  try {
    return realpathSync(path)
  } catch {
    return undefined
  }
}

/** The socket files bound now (real paths), as /proc/net/unix lists them: absolute paths only, once each. */
export const bound = (): ReadonlyArray<string> => {
  let table: string
  try {
    table = readFileSync("/proc/net/unix", "latin1")
  } catch {
    return []
  }
  const found = new Set<string>()
  for (const line of table.split("\n").slice(1)) {
    // Num RefCount Protocol Flags Type St Inode Path: the path is all that follows the seventh field.
    const path = line.trim().split(/\s+/).slice(7).join(" ")
    if (!path.startsWith("/")) continue
    const real = realOf(path)
    if (real !== undefined) found.add(real)
  }
  return [...found]
}

/**
 * Covers with /dev/null every socket file bound now that lies outside `reachable` (real paths: the granted sockets
 * or directories, the Location, the approved directories), in a mount namespace of this thread's own, so a connect()
 * to one is refused. Needs CAP_SYS_ADMIN over its mount namespace and must come before Landlock, which forbids
 * mounting. Answers undefined, or why it could not (then some or none are covered).
 */
export const hide = (reachable: ReadonlyArray<string>): string | undefined => {
  const unshared = Native.unshare(Native.CLONE_NEWNS)
  if (unshared !== 0) return `unshare(CLONE_NEWNS) failed (errno ${unshared})`
  const privately = Native.mount(null, "/", Native.MS_REC | Native.MS_PRIVATE)
  if (privately !== 0) return `making the mounts private failed (errno ${privately})`
  for (const path of bound()) {
    if (reachable.some((root) => within(root, path))) continue
    // A socket removed since it was listed is nothing to cover.
    Native.mount("/dev/null", path, Native.MS_BIND)
  }
  return undefined
}

/** `$NAME`, `${NAME}` and a leading `~` in `entry`, from `env`; undefined when a variable is unset or empty. */
const expand = (entry: string, env: Readonly<Record<string, string | undefined>>): string | undefined => {
  let unset = false
  const expanded = entry
    .replace(/^~(?=\/|$)/, homedir())
    .replace(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g, (_, braced?: string, bare?: string) => {
      const value = env[braced ?? bare ?? ""]
      if (value === undefined || value === "") unset = true
      return value ?? ""
    })
  return unset || !isAbsolute(expanded) ? undefined : expanded
}

/**
 * What a command's supervisor keeps reachable, given the sockets core.json grants (`shell.sockets`, expanded from
 * core's environment; an entry naming an unset variable or a relative path grants nothing): the granted paths and the
 * command's own writable directories. Undefined when nothing is granted: the command then gets no Unix socket at all.
 */
export const reachable = (
  granted: ReadonlyArray<string> | undefined,
  own: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ReadonlyArray<string> | undefined => {
  const paths = (granted ?? []).flatMap((entry) => {
    const path = expand(entry, env)
    return path === undefined ? [] : [realOf(path) ?? path]
  })
  return paths.length === 0 ? undefined : [...paths, ...own.map((path) => realOf(path) ?? path)]
}
