export * as Sockets from "./sockets"

// The Unix sockets a sandboxed command may reach. Landlock does not mediate connect() to a socket file, so by default
// a seccomp filter refuses the command any new Unix socket (socket(AF_UNIX), and io_uring, which could make one out
// of the filter's sight), while socketpair() and pipes work: nothing outside (ssh-agent, D-Bus, X11, Docker) is
// reachable. Where core.json grants sockets (`shell.sockets`), Unix sockets are allowed and every other socket file
// the kernel lists as bound is covered in the command's mount namespace. The starter (./starter) applies both; nothing here
// decides permissions.

import { readFileSync, realpathSync } from "node:fs"
import { homedir } from "node:os"
import { isAbsolute, sep } from "node:path"
import { Native } from "./native"

const { AUDIT_ARCH, X32_BIT, RET_ALLOW, RET_ERRNO, LD_ABS, JEQ, JGE, RET, NR, ARCH } = Native.Seccomp
const SYS_IO_URING_SETUP = 425
const AF_UNIX = 1
const EACCES = 13
const ENOSYS = 38
/** The offset of the first argument in struct seccomp_data. */
const ARG0 = 16

/** One BPF instruction: struct sock_filter { u16 code; u8 jt; u8 jf; u32 k }. */
const instruction = (view: DataView, at: number, code: number, jt: number, jf: number, k: number) => {
  view.setUint16(at * 8, code, true)
  view.setUint8(at * 8 + 2, jt)
  view.setUint8(at * 8 + 3, jf)
  view.setUint32(at * 8 + 4, k >>> 0, true)
}

/** The filter, built once: struct sock_fprog and the instructions it points to (kept, so they stay in memory). */
let built: { readonly fprog: Uint8Array; readonly program: Uint8Array } | undefined

/**
 * Builds the filter `refuse` installs, ahead of the command (the starter does it while it waits for its order).
 * Undefined on an architecture core has no system call numbers for.
 */
export const prepare = (): typeof built => {
  const numbers = Native.numbers
  if (built !== undefined || numbers === undefined) return built
  const arch = AUDIT_ARCH[process.arch as keyof typeof AUDIT_ARCH]
  const program = new Uint8Array(11 * 8)
  const view = new DataView(program.buffer)
  // Jump offsets count the instructions skipped: to ALLOW (8), DENY (9), NOSYS (10).
  instruction(view, 0, LD_ABS, 0, 0, ARCH)
  instruction(view, 1, JEQ, 0, 8, arch)
  instruction(view, 2, LD_ABS, 0, 0, NR)
  instruction(view, 3, JGE, 6, 0, X32_BIT)
  instruction(view, 4, JEQ, 5, 0, SYS_IO_URING_SETUP)
  instruction(view, 5, JEQ, 0, 2, numbers.socket)
  instruction(view, 6, LD_ABS, 0, 0, ARG0)
  instruction(view, 7, JEQ, 1, 0, AF_UNIX)
  instruction(view, 8, RET, 0, 0, RET_ALLOW)
  instruction(view, 9, RET, 0, 0, RET_ERRNO | EACCES)
  instruction(view, 10, RET, 0, 0, RET_ERRNO | ENOSYS)
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

const within = (root: string, path: string): boolean =>
  path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)

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
