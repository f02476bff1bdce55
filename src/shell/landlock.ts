export * as Landlock from "./landlock"

// The OS sandbox of a command: Landlock, through raw system calls (./native). `granted` works out, in core, which
// directories to grant (./sandbox says which a command may read and write); `restrict` applies them to the calling
// thread (Landlock and no_new_privs are per thread: the thread that then spawns the command is the restricted one,
// and the command inherits its domain). Landlock is allow-only, so a directory to hide that lies inside one to grant is handled by
// granting the granted directory's other entries instead (see `granted`). `prepare` builds the rules every call
// shares ahead of the call. `denyConnect` adds a network layer that keeps a command off core's own TCP ports.
// Nothing here decides permissions.

import { type Dirent, existsSync, readdirSync, realpathSync, statSync } from "node:fs"
import { basename, dirname, join, resolve, sep } from "node:path"
import { Native } from "./native"

const SYS_CREATE_RULESET = 444
const SYS_ADD_RULE = 445
const SYS_RESTRICT_SELF = 446
const CREATE_RULESET_VERSION = 1
const RULE_PATH_BENEATH = 1

const EXECUTE = 1n << 0n
const WRITE_FILE = 1n << 1n
const READ_FILE = 1n << 2n
const READ_DIR = 1n << 3n
const MAKE_CHAR = 1n << 6n
const MAKE_BLOCK = 1n << 11n
const TRUNCATE = 1n << 14n
const IOCTL_DEV = 1n << 15n
/** The rights that apply to a file (the others are about a directory's entries). */
const FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
const READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR
/** Device files: read, write and truncate (`> /dev/null`) existing ones, and their ioctls; never make new ones. */
const DEVICE_RIGHTS = READ_RIGHTS | WRITE_FILE | TRUNCATE | IOCTL_DEV
/**
 * LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET and LANDLOCK_SCOPE_SIGNAL (ABI 6): no connection to an abstract Unix socket
 * made outside the domain (X11's, a desktop's, a daemon's), and no signal to a process outside it, core and the
 * supervisor included.
 */
const SCOPE_SIGNAL = 1n << 1n
const SCOPES = (1n << 0n) | SCOPE_SIGNAL
/** Device files are never made, wherever a command may write: a new one would reach a disk or memory directly. */
const NEVER = MAKE_CHAR | MAKE_BLOCK

/** System directories every command may read and run programs from (never written). */
export const SYSTEM_READABLE: ReadonlyArray<string> = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/etc",
  "/opt",
  "/proc",
  "/sys",
  "/run",
  "/var",
  "/nix",
  "/snap",
]

/**
 * The devices a command may read and write, where they exist: the sinks and sources every program uses, its
 * terminal, new terminals of its own (`/dev/ptmx`, `/dev/pts`). Not the rest of /dev, which a command run by root
 * would reach too: disks (`/dev/sda`, `/dev/loop0`: the whole filesystem, raw), the consoles and what they show
 * (`/dev/tty1`, `/dev/vcs`), input devices (what the user types), the kernel's log, fuse, the loop and device-mapper
 * controls. GPUs' compute devices (`gpuDevices`) are added to these.
 */
export const DEVICES: ReadonlyArray<string> = [
  "/dev/null",
  "/dev/zero",
  "/dev/full",
  "/dev/random",
  "/dev/urandom",
  "/dev/tty",
  "/dev/ptmx",
  "/dev/pts",
]

/** The compute devices of the GPUs there are (NVIDIA's, AMD's ROCm, DRM render nodes), for a command that trains or infers. */
const gpuDevices = (): Array<string> => {
  const named = (directory: string, pattern: RegExp) => {
    try {
      return readdirSync(directory).filter((name) => pattern.test(name)).map((name) => join(directory, name))
    } catch {
      return []
    }
  }
  return [...named("/dev", /^(nvidia.*|kfd)$/), ...named("/dev/dri", /^renderD\d+$/)]
}

/** The device grants (`DEVICES` and the GPUs' that exist), but for the `hidden` directories. */
export const devices = (hidden: ReadonlyArray<string> = []): Array<string> => granted([...DEVICES, ...gpuDevices()], hidden)

/** What a command may touch: every path is absolute and real (symlinks followed). */
export interface Grants {
  readonly read: ReadonlyArray<string>
  readonly write: ReadonlyArray<string>
  readonly devices: ReadonlyArray<string>
}

let detected: number | undefined

/** The Landlock ABI version of this kernel, or 0 when Landlock is missing or disabled. */
export const abi = (): number => {
  if (detected !== undefined) return detected
  if (process.platform !== "linux" || !Native.available()) return (detected = 0)
  const version = Native.syscall(SYS_CREATE_RULESET, 0, 0, CREATE_RULESET_VERSION)
  return (detected = version > 0 ? version : 0)
}

/** Whether `path` is `root` or lies under it. */
export const within = (root: string, path: string): boolean =>
  path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)

/** The real path of `path`, or of its nearest existing ancestor joined with the rest. */
export const real = (path: string): string => {
  const absolute = resolve(path)
  try {
    return realpathSync(absolute)
  } catch {
    const parent = dirname(absolute)
    return parent === absolute ? absolute : join(real(parent), basename(absolute))
  }
}

/**
 * The paths to grant so that `root` is covered except every `hidden` directory: `root` itself when nothing hidden
 * lies inside it; otherwise each of its entries, recursing only into the one that leads to a hidden directory.
 * The directories on the way to a hidden one get no rule of their own, so nothing can be created or listed
 * directly in them (the price of hiding a directory inside a granted one), while everything else in them stays
 * granted. Nothing under a hidden directory is ever granted.
 */
const cover = (root: string, hidden: ReadonlyArray<string>, into: Array<string>): void => {
  if (hidden.some((dir) => within(dir, root))) return
  if (!hidden.some((dir) => within(root, dir))) {
    if (existsSync(root)) into.push(root)
    return
  }
  let entries: Array<Dirent>
  try {
    entries = readdirSync(root, { withFileTypes: true })
  } catch {
    return
  }
  // A link is not what it names: granting it would grant its target (/dev/stderr names the pipe core writes to, which
  // no rule can be made for), and its target is granted or not by where it is.
  for (const entry of entries) if (!entry.isSymbolicLink()) cover(join(root, entry.name), hidden, into)
}

/** The paths to grant so that `paths` are covered but none of the `hidden` directories (real paths). */
export const granted = (paths: ReadonlyArray<string>, hidden: ReadonlyArray<string>): Array<string> => {
  const into: Array<string> = []
  for (const path of new Set(paths.map(real))) cover(path, hidden, into)
  return into
}

/** LANDLOCK_ACCESS_FS_REFER (ABI 2): linking or renaming a file into another directory. */
const REFER = 1n << 13n

/** The filesystem rights this ABI can restrict: every right it knows, so each is denied unless granted. */
const handledFs = (version: number): bigint => {
  let rights = (1n << 13n) - 1n // ABI 1: execute … make_sym
  if (version >= 2) rights |= REFER
  if (version >= 3) rights |= TRUNCATE
  if (version >= 5) rights |= IOCTL_DEV
  return rights
}

/** A file or directory already held open (O_PATH) by the caller, granted read (and execute) beneath it. */
export interface Held {
  readonly fd: number
  readonly directory: boolean
}

/** A new filesystem ruleset handling every right `version` knows (and its scopes from ABI 6): its fd, or -errno. */
const create = (version: number): number => {
  const attr = new DataView(new ArrayBuffer(24))
  attr.setBigUint64(0, handledFs(version), true)
  attr.setBigUint64(8, 0n, true)
  attr.setBigUint64(16, version >= 6 ? SCOPES : 0n, true)
  const size = version >= 6 ? 24 : version >= 4 ? 16 : 8
  return Native.syscall(SYS_CREATE_RULESET, Native.address(new Uint8Array(attr.buffer)), size, 0)
}

/** Grants `rights` beneath the file or directory `fd` refers to (file rights only, for a file). */
const addHeld = (ruleset: number, version: number, fd: number, directory: boolean, rights: bigint, name: string): string | undefined => {
  const rule = new DataView(new ArrayBuffer(12))
  rule.setBigUint64(0, (directory ? rights : rights & FILE_RIGHTS) & handledFs(version), true)
  rule.setInt32(8, fd, true)
  const added = Native.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, Native.address(new Uint8Array(rule.buffer)))
  return added < 0 ? `landlock_add_rule failed for ${name} (errno ${-added})` : undefined
}

/** Grants `rights` beneath `path`; a path gone since the grants were worked out is skipped (nothing to grant). */
const addPath = (ruleset: number, version: number, path: string, rights: bigint): string | undefined => {
  let directory: boolean
  try {
    directory = statSync(path).isDirectory()
  } catch {
    return undefined
  }
  const fd = Native.open(path, Native.O_PATH | Native.O_CLOEXEC)
  if (fd < 0) return undefined
  try {
    return addHeld(ruleset, version, fd, directory, rights, path)
  } finally {
    Native.close(fd)
  }
}

/**
 * A ruleset readied ahead of the order that uses it: the grants every call shares (read beneath the system
 * directories, the devices), or those a supervisor expects its order to make (the last order's, which
 * the next one usually repeats). `restrict` takes it up only when the call grants at least those paths with those
 * rights (so it adds nothing the call's grants lack); it is used at most once.
 */
export interface Prepared {
  readonly ruleset: number
  readonly version: number
  readonly read: ReadonlySet<string>
  readonly devices: ReadonlySet<string>
  readonly write: ReadonlySet<string>
}

/**
 * Builds the ruleset of `grants` (by default the grants every sandboxed call shares, see `Prepared`), restricting
 * nothing; undefined where Landlock is missing or the kernel refuses. The rules are bound to the directories as
 * they are now, as any rule is to the directory it was made from.
 */
export const prepare = (
  version = abi(),
  grants: Grants = { read: granted(SYSTEM_READABLE, []), devices: devices(), write: [] },
): Prepared | undefined => {
  if (version < 1) return undefined
  const ruleset = create(version)
  if (ruleset < 0) return undefined
  const handled = handledFs(version)
  // Only what a rule was made for counts as done: a path missing now gets its rule when an order grants it.
  const made = { read: new Set<string>(), devices: new Set<string>(), write: new Set<string>() }
  const rules = [
    [grants.read, READ_RIGHTS, made.read],
    [grants.devices, DEVICE_RIGHTS, made.devices],
    [grants.write, handled & ~NEVER, made.write],
  ] as const
  for (const [paths, rights, done] of rules) {
    for (const path of paths) {
      if (!existsSync(path)) continue
      if (addPath(ruleset, version, path, rights) !== undefined) {
        Native.close(ruleset)
        return undefined
      }
      done.add(path)
    }
  }
  return { ruleset, version, ...made }
}

/** Drops a prepared ruleset that will not be used. */
export const discard = (prepared: Prepared): void => {
  Native.close(prepared.ruleset)
}

/** Whether every rule of `prepared` is one `grants` asks for, on this ABI. */
const covers = (prepared: Prepared, grants: Grants, version: number): boolean => {
  if (prepared.version !== version) return false
  const read = new Set(grants.read)
  const devices = new Set(grants.devices)
  const write = new Set(grants.write)
  for (const path of prepared.read) if (!read.has(path)) return false
  for (const path of prepared.devices) if (!devices.has(path)) return false
  for (const path of prepared.write) if (!write.has(path)) return false
  return true
}

/**
 * A ruleset of `grants` and read beneath each of `held` (rules made from the descriptors themselves, so no path is
 * looked up again): its descriptor, which the caller closes, or why it could not be made. It takes `prepared` over:
 * a prepared ruleset that `grants` covers is completed and answered instead of a new one; one it does not cover is
 * closed. Restricting nothing, it can be made by one thread and applied by another (`restrictSelf`).
 */
export const ruleset = (
  grants: Grants,
  version = abi(),
  held: ReadonlyArray<Held> = [],
  prepared?: Prepared,
): { readonly fd: number } | { readonly failed: string } => {
  if (version < 1) {
    if (prepared !== undefined) discard(prepared)
    return { failed: "Landlock is not available" }
  }
  const handled = handledFs(version)
  const ready = prepared !== undefined && covers(prepared, grants, version) ? prepared : undefined
  if (prepared !== undefined && ready === undefined) discard(prepared)
  const ruleset = ready?.ruleset ?? create(version)
  if (ruleset < 0) return { failed: `landlock_create_ruleset failed (errno ${-ruleset})` }
  const fail = (failed: string) => {
    Native.close(ruleset)
    return { failed }
  }
  for (const entry of held) {
    const failed = addHeld(ruleset, version, entry.fd, entry.directory, READ_RIGHTS, `descriptor ${entry.fd}`)
    if (failed !== undefined) return fail(failed)
  }
  const rules: ReadonlyArray<readonly [ReadonlyArray<string>, bigint, ReadonlySet<string> | undefined]> = [
    [grants.read, READ_RIGHTS, ready?.read],
    [grants.devices, DEVICE_RIGHTS, ready?.devices],
    [grants.write, handled & ~NEVER, ready?.write],
  ]
  for (const [paths, rights, done] of rules) {
    for (const path of paths) {
      if (done?.has(path)) continue
      const failed = addPath(ruleset, version, path, rights)
      if (failed !== undefined) return fail(failed)
    }
  }
  return { fd: ruleset }
}

/**
 * Restricts the calling thread (and every process it spawns afterwards) to `grants`, and read beneath each of
 * `held`. Answers undefined, or why it could not (then nothing was restricted, unless the last step failed, which
 * the kernel does not do in practice). With `apply` false, it builds the rules and drops them, restricting
 * nothing. It takes `prepared` over, as `ruleset` does.
 */
export const restrict = (
  grants: Grants,
  version = abi(),
  apply = true,
  held: ReadonlyArray<Held> = [],
  prepared?: Prepared,
): string | undefined => {
  const made = ruleset(grants, version, held, prepared)
  if ("failed" in made) return made.failed
  try {
    // Not applied: a dry run, which readies this code so that the real one is quicker.
    return apply ? restrictSelf(made.fd) : undefined
  } finally {
    Native.close(made.fd)
  }
}

/** Restricts the calling thread (and every process it spawns afterwards) to a ruleset (`ruleset`'s descriptor). */
const restrictSelf = (ruleset: number): string | undefined => {
  const privileged = Native.prctl(Native.PR_SET_NO_NEW_PRIVS, 1)
  if (privileged !== 0) return `prctl(PR_SET_NO_NEW_PRIVS) failed (errno ${privileged})`
  const restricted = Native.syscall(SYS_RESTRICT_SELF, ruleset, 0)
  return restricted < 0 ? `landlock_restrict_self failed (errno ${-restricted})` : undefined
}

/**
 * Grants REFER beneath `/` in `ruleset`, which handles it (and no other filesystem right). Landlock takes REFER as
 * handled, and denied, by every layer of a domain, even one made for ports alone: without this rule, such a layer
 * stacked with the command's filesystem layer made every rename and link into another directory fail with EXDEV
 * (`git mv`, `git branch -m`, `bun install`), whatever the filesystem layer granted. Only for a layer made after the
 * mounts: a domain handling a filesystem right may not mount.
 */
const referEverywhere = (ruleset: number): string | undefined => {
  const fd = Native.open("/", Native.O_PATH | Native.O_CLOEXEC)
  if (fd < 0) return `could not open / (errno ${-fd})`
  try {
    return addHeld(ruleset, 2, fd, true, REFER, "/")
  } finally {
    Native.close(fd)
  }
}

/**
 * Restricts the calling thread (and every process it spawns afterwards) to a domain of its own that keeps every
 * right but the signal scope (ABI 6): it can signal only the processes of its domain and of the domains nested in
 * it. Answers undefined, or why it could not. With `moves`, the layer also handles REFER and grants it beneath `/`,
 * so that the layers nested in it decide alone whether a file may be renamed or linked into another directory
 * (Landlock takes REFER as handled, and denied, by every layer of a domain that handles any filesystem right, and
 * one granting nothing refused every such move with EXDEV); the price is that a thread in it can no longer mount
 * (Landlock refuses mounts to a domain that handles any filesystem right), so it is made after the mounts.
 */
export const scopeSignals = (version = abi(), moves = false): string | undefined => {
  if (version < 6) return "this kernel's Landlock has no signal scope (ABI 6)"
  const attr = new DataView(new ArrayBuffer(24))
  if (moves) attr.setBigUint64(0, REFER, true)
  attr.setBigUint64(16, SCOPE_SIGNAL, true)
  const ruleset = Native.syscall(SYS_CREATE_RULESET, Native.address(new Uint8Array(attr.buffer)), 24, 0)
  if (ruleset < 0) return `landlock_create_ruleset failed (errno ${-ruleset})`
  try {
    return (moves ? referEverywhere(ruleset) : undefined) ?? restrictSelf(ruleset)
  } finally {
    Native.close(ruleset)
  }
}

/** LANDLOCK_ACCESS_NET_CONNECT_TCP (ABI 4). */
const CONNECT_TCP = 1n << 1n
const RULE_NET_PORT = 2
const PORTS = 65_536

/**
 * A ruleset that grants connecting over TCP to every port but `ports`, on any host (Landlock only grants: one rule
 * per other port): its descriptor (close-on-exec), or why it cannot be made (ABI below 4). Building it takes a
 * tenth of a second or more, so core builds it once for its ports and hands it to each supervisor (`restrictWith`),
 * rather than each building its own. Whoever holds it can add rules to it: it never reaches a command.
 */
export const connectRuleset = (ports: ReadonlyArray<number>, version = abi()): number | string => {
  if (version < 4) return "this kernel's Landlock has no network rules (ABI 4)"
  const attr = new DataView(new ArrayBuffer(16))
  // REFER, granted everywhere below: a layer for ports alone would refuse every rename into another directory.
  attr.setBigUint64(0, REFER, true)
  attr.setBigUint64(8, CONNECT_TCP, true)
  const ruleset = Native.syscall(SYS_CREATE_RULESET, Native.address(new Uint8Array(attr.buffer)), 16, 0)
  if (ruleset < 0) return `landlock_create_ruleset failed (errno ${-ruleset})`
  const everywhere = referEverywhere(ruleset)
  if (everywhere !== undefined) {
    Native.close(ruleset)
    return everywhere
  }
  const denied = new Set(ports)
  const bytes = new Uint8Array(16)
  const rule = new DataView(bytes.buffer)
  const address = Native.address(bytes)
  rule.setBigUint64(0, CONNECT_TCP, true)
  for (let port = 0; port < PORTS; port++) {
    if (denied.has(port)) continue
    rule.setUint32(8, port, true)
    const added = Native.syscall(SYS_ADD_RULE, ruleset, RULE_NET_PORT, address)
    if (added < 0) {
      Native.close(ruleset)
      return `landlock_add_rule failed for port ${port} (errno ${-added})`
    }
  }
  return ruleset
}

/**
 * Restricts the calling thread (and every process it spawns afterwards) to the ruleset `ruleset` (one of
 * `connectRuleset`): a layer of its own, which stacks under the filesystem layer `restrict` adds. Answers undefined,
 * or why it could not.
 */
export const restrictWith = (ruleset: number): string | undefined => restrictSelf(ruleset)

/**
 * Restricts the calling thread (and every process it spawns afterwards) from connecting over TCP to any of
 * `ports`, building the ruleset here (`connectRuleset`; a supervisor given core's uses `restrictWith`). Answers
 * undefined, or why it could not (ABI below 4).
 */
export const denyConnect = (ports: ReadonlyArray<number>, version = abi()): string | undefined => {
  const ruleset = connectRuleset(ports, version)
  if (typeof ruleset === "string") return ruleset
  try {
    return restrictSelf(ruleset)
  } finally {
    Native.close(ruleset)
  }
}
