export * as Namespace from "./namespace"

// The private mount namespace of one command, in which core's own configuration in its Location is mounted
// read-only (./guard says which paths), and /dev/shm and /dev/pts are empty ones of its own. Used by the supervisor
// and the starter only, before Landlock (which forbids mounting). It needs CAP_SYS_ADMIN over its mount namespace:
// core run by root has it; otherwise core starts the supervisor in a user namespace of its own (./supervised,
// through `unshare --user --map-current-user --mount --keep-caps`), which maps only the user's own uid and gid and
// gives the supervisor that capability there alone (as ambient, which its starter inherits).
// Bun cannot enter a user namespace itself: the kernel allows that only to a process with a single thread.

import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs"
import { release } from "node:os"
import { join } from "node:path"
import { Credentials } from "../permission/credentials"
import { Landlock } from "./landlock"
import { Native } from "./native"

/** Whether this supervisor can make a mount namespace (it holds CAP_SYS_ADMIN over its own). */
export type Way = "mount" | "none"

const ENOENT = 2

/**
 * Mounts each of `paths` read-only onto itself, in a mount namespace of this thread's own (nothing propagates
 * out), after binding each of `pinned` (folders holding some of them: a Location's git directory) onto itself as it
 * is, writable: a mount point cannot be renamed (EBUSY), so a command cannot move the folder away and make another
 * in its place. A path that does not exist is skipped. Answers undefined, or why it could not (then some or none of
 * the paths are read-only; the command still runs).
 */
export const protect = (way: Way, paths: ReadonlyArray<string>, pinned: ReadonlyArray<string> = []): string | undefined => {
  if (way === "none") return "this process cannot make a mount namespace"
  const unshared = Native.unshare(Native.CLONE_NEWNS)
  if (unshared !== 0) return `unshare(CLONE_NEWNS) failed (errno ${unshared})`
  const privately = Native.mount(null, "/", Native.MS_REC | Native.MS_PRIVATE)
  if (privately !== 0) return `making the mounts private failed (errno ${privately})`
  for (const path of pinned) {
    const bound = Native.mount(path, path, Native.MS_BIND | Native.MS_REC)
    if (bound !== 0 && bound !== ENOENT) return `binding ${path} failed (errno ${bound})`
  }
  for (const path of paths) {
    const flags = Native.mountFlags(path)
    const bound = Native.mount(path, path, Native.MS_BIND | Native.MS_REC)
    if (bound === ENOENT) continue
    if (bound !== 0) return `binding ${path} failed (errno ${bound})`
    const remounted = Native.mount(null, path, Native.MS_REMOUNT | Native.MS_BIND | Native.MS_RDONLY | flags)
    if (remounted !== 0) return `making ${path} read-only failed (errno ${remounted})`
  }
  // Run by root, the command would otherwise hold CAP_SYS_ADMIN and could unmount them (Landlock, where applied,
  // forbids it too). Run by another user, it holds no capability (the supervisor clears its ambient ones).
  Native.prctl(Native.PR_CAPBSET_DROP, Native.CAP_SYS_ADMIN)
  return undefined
}

/** mount_setattr(2): its number (the same on every architecture core runs on), its flags, struct mount_attr's bit. */
const SYS_MOUNT_SETATTR = 442
const AT_FDCWD = -100
const AT_RECURSIVE = 0x8000
const MOUNT_ATTR_RDONLY = 1n

/**
 * Makes every mount read-only but at `writable` (real paths: the command's write grants), in a mount namespace of
 * this thread's own: each of them is bound onto itself (with what is mounted beneath it, which stays as it was) and
 * made writable again. Landlock governs reading, writing, making and removing files, not a file's mode, owner,
 * times or extended attributes: without this, a command could chmod, chown, touch or setfattr whatever it can
 * reach, past its grants: run by root, make a program of the system set-user-ID root, or close core's data
 * directory to core; run by any user, open their `~/.ssh/id_rsa` to every user. A read-only mount refuses all of
 * that (EROFS), and still lets devices be read and written. A place read-only already (a read-only filesystem)
 * stays so. Answers undefined, or why it could not: the caller must then not run the command.
 */
export const readOnlyOutside = (way: Way, writable: ReadonlyArray<string>): string | undefined => {
  if (way === "none") return "this process cannot make a mount namespace"
  const places = writable.filter((path) => existsSync(path) && !Native.mountedReadOnly(path))
  const unshared = Native.unshare(Native.CLONE_NEWNS)
  if (unshared !== 0) return `unshare(CLONE_NEWNS) failed (errno ${unshared})`
  const privately = Native.mount(null, "/", Native.MS_REC | Native.MS_PRIVATE)
  if (privately !== 0) return `making the mounts private failed (errno ${privately})`
  const attributes = new BigUint64Array([MOUNT_ATTR_RDONLY, 0n, 0n, 0n])
  const root = Buffer.from("/\0")
  const set = Native.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, Native.address(root), AT_RECURSIVE, Native.address(new Uint8Array(attributes.buffer)), attributes.byteLength)
  if (set < 0) return `making the mounts read-only failed (errno ${-set})`
  for (const path of places) {
    const flags = Native.mountFlags(path)
    const bound = Native.mount(path, path, Native.MS_BIND | Native.MS_REC)
    if (bound === ENOENT) continue
    if (bound !== 0) return `binding ${path} failed (errno ${bound})`
    const remounted = Native.mount(null, path, Native.MS_REMOUNT | Native.MS_BIND | flags)
    if (remounted !== 0) return `making ${path} writable failed (errno ${remounted})`
  }
  return undefined
}

/** Where POSIX shared memory and semaphores live (sem_open, shm_open: Python's multiprocessing, for one). */
export const SHARED_MEMORY = "/dev/shm"

/**
 * Mounts an empty tmpfs of this thread's own on /dev/shm, in a mount namespace of its own: the command may then
 * make semaphores and shared memory, while the host's /dev/shm (other programs' shared memory) stays out of its
 * reach. Answers undefined, or why it could not (then /dev/shm is left as it is, not writable to the command).
 */
export const privateSharedMemory = (way: Way): string | undefined => {
  if (way === "none") return "this process cannot make a mount namespace"
  const unshared = Native.unshare(Native.CLONE_NEWNS)
  if (unshared !== 0) return `unshare(CLONE_NEWNS) failed (errno ${unshared})`
  const privately = Native.mount(null, "/", Native.MS_REC | Native.MS_PRIVATE)
  if (privately !== 0) return `making the mounts private failed (errno ${privately})`
  const mounted = Native.mount("tmpfs", SHARED_MEMORY, Native.MS_NOSUID | Native.MS_NODEV, "tmpfs", "mode=1777")
  return mounted === 0 ? undefined : `mounting ${SHARED_MEMORY} failed (errno ${mounted})`
}

/**
 * Mounts a devpts instance of this thread's own on /dev/pts, with its ptmx on /dev/ptmx, in a mount namespace of
 * its own: the command may still open terminals of its own (`script`, `pty.openpty()`), while the user's terminals
 * (reading one steals what the user types there) are out of its sight. Answers undefined, or why it could not.
 */
export const privateTerminals = (way: Way): string | undefined => {
  if (way === "none") return "this process cannot make a mount namespace"
  const unshared = Native.unshare(Native.CLONE_NEWNS)
  if (unshared !== 0) return `unshare(CLONE_NEWNS) failed (errno ${unshared})`
  const privately = Native.mount(null, "/", Native.MS_REC | Native.MS_PRIVATE)
  if (privately !== 0) return `making the mounts private failed (errno ${privately})`
  const flags = Native.MS_NOSUID | Native.MS_NOEXEC
  const mounted = Native.mount("devpts", "/dev/pts", flags, "devpts", "newinstance,ptmxmode=0666,mode=0620")
  if (mounted !== 0) return `mounting /dev/pts failed (errno ${mounted})`
  const bound = Native.mount("/dev/pts/ptmx", "/dev/ptmx", Native.MS_BIND)
  return bound === 0 ? undefined : `binding /dev/ptmx failed (errno ${bound})`
}

/** The private host keys in /etc/ssh (ssh_host_*_key, not their .pub nor ssh_config). */
const hostKeys = (): ReadonlyArray<string> => {
  try {
    return readdirSync("/etc/ssh")
      .filter((name) => name.startsWith("ssh_host_") && !name.endsWith(".pub"))
      .map((name) => join("/etc/ssh", name))
  } catch {
    return []
  }
}

/**
 * The system's secrets that exist, as real paths (Credentials.SYSTEM, the user's podman logins and the host keys):
 * inside the directories every command reads (Landlock.SYSTEM_READABLE), a command run by root (whose
 * CAP_DAC_OVERRIDE passes their modes) could otherwise read them. Covered in the command's mount namespace
 * (`hideSystemSecrets`), not carved out of Landlock's grants: that would grant /etc entry by entry, bound to the
 * files as they were, and a file the system replaces by renaming (/etc/resolv.conf, /etc/passwd) would be
 * unreadable to commands.
 */
export const systemDenied = (): ReadonlyArray<string> => {
  // Rootless podman keeps the user's registry logins in the runtime directory.
  const runtime = `/run/user/${process.getuid?.() ?? 0}/containers`
  return [...new Set([...Credentials.SYSTEM, runtime, ...hostKeys()].filter((path) => existsSync(path)).map(Landlock.real))]
}

/** What covers each system secret covered so far: the device and inode its path shows once covered. */
export type Hidden = Map<string, string>

/** The device and inode `path` shows now ("gone" when it cannot be looked at). */
const shown = (path: string): string => {
  try {
    const stat = statSync(path)
    return `${stat.dev}:${stat.ino}`
  } catch {
    return "gone"
  }
}

/**
 * Covers each of the system's secrets (systemDenied) in a mount namespace of this thread's own: a directory with an
 * empty read-only tmpfs, a file with /dev/null read-only. The command, which can neither mount nor unmount, reads
 * nothing there. `hidden` holds what was covered before (by an earlier call, made ahead of the order): a secret
 * still showing its cover is left as it is; one that appeared since, or whose cover no longer shows at its path
 * (the system replaced the file by renaming, which takes a mount on it away), is covered now. Answers undefined, or
 * why it could not (then some or none are covered).
 */
export const hideSystemSecrets = (way: Way, hidden: Hidden = new Map()): string | undefined => {
  if (way === "none") return "this process cannot make a mount namespace"
  const secrets = systemDenied().filter((path) => hidden.get(path) === undefined || hidden.get(path) !== shown(path))
  if (secrets.length === 0) return undefined
  const unshared = Native.unshare(Native.CLONE_NEWNS)
  if (unshared !== 0) return `unshare(CLONE_NEWNS) failed (errno ${unshared})`
  const privately = Native.mount(null, "/", Native.MS_REC | Native.MS_PRIVATE)
  if (privately !== 0) return `making the mounts private failed (errno ${privately})`
  const flags = Native.MS_NOSUID | Native.MS_NODEV | Native.MS_NOEXEC
  for (const path of secrets) {
    let directory: boolean
    try {
      directory = statSync(path).isDirectory()
    } catch {
      continue
    }
    const covered = directory
      ? Native.mount("tmpfs", path, flags | Native.MS_RDONLY, "tmpfs", "size=4k,mode=0")
      : Native.mount("/dev/null", path, Native.MS_BIND) ||
        Native.mount(null, path, Native.MS_REMOUNT | Native.MS_BIND | Native.MS_RDONLY | Native.mountFlags(path))
    if (covered !== 0) return `covering ${path} failed (errno ${covered})`
    hidden.set(path, shown(path))
  }
  return undefined
}

/**
 * Mounts a fresh procfs on /proc in a mount namespace of this thread's own. Called by a supervisor that is the
 * first process of a PID namespace of its own: the new /proc shows that namespace only (procfs reflects the PID
 * namespace of the process that mounts it), so its command sees no process but its own and its supervisor, and no
 * other program's command line or environment. Answers undefined, or why it could not (then /proc stays the host's).
 */
export const ownProc = (way: Way): string | undefined => {
  if (way === "none") return "this process cannot make a mount namespace"
  const unshared = Native.unshare(Native.CLONE_NEWNS)
  if (unshared !== 0) return `unshare(CLONE_NEWNS) failed (errno ${unshared})`
  const privately = Native.mount(null, "/", Native.MS_REC | Native.MS_PRIVATE)
  if (privately !== 0) return `making the mounts private failed (errno ${privately})`
  const mounted = Native.mount("proc", "/proc", Native.MS_NOSUID | Native.MS_NODEV | Native.MS_NOEXEC, "proc")
  return mounted === 0 ? undefined : `mounting /proc failed (errno ${mounted})`
}

/**
 * Whether the kernel of `release` (os.release()) keeps `kernel.pid_max` for each PID namespace apart (Linux 6.14 and
 * later). Before, the sysctl is the whole machine's: written from a command's namespace, it would bound every
 * process of the machine.
 */
export const pidMaxPerNamespace = (release: string): boolean => {
  const [major, minor] = (/^(\d+)\.(\d+)/.exec(release) ?? []).slice(1).map(Number)
  if (major === undefined || minor === undefined) return false
  return major > 6 || (major === 6 && minor >= 14)
}

/**
 * Bounds the processes and threads of the PID namespace this process is the first process of (a command's
 * supervisor, as root) to `count` at once: its `kernel.pid_max` is set to `count + 1`, and the kernel allocates
 * the namespace's pids below it, so a fork past them fails with EAGAIN (a fork bomb stops there). The kernel does
 * not apply RLIMIT_NPROC to root; this bound it applies to every process of the namespace, root's too. The kernel
 * lets root of the namespace write it back, capabilities or not: what keeps a sandboxed command from it is its
 * /proc, read-only as every mount but the places it may write (Starter `apply`), and Landlock, which grants it no
 * write there. Per command: commands running at once each have their own. Answers undefined, or why it could not
 * (a kernel before 6.14, /proc/sys read-only, a machine whose least pid_max is above it: 8 per possible CPU): the
 * command then runs unbounded, as before.
 */
export const boundProcesses = (count: number): string | undefined => {
  if (process.pid !== 1) return "this process is not the first process of a PID namespace of its own"
  if (!pidMaxPerNamespace(release())) return `the kernel (${release()}) keeps one kernel.pid_max for the whole machine`
  try {
    writeFileSync("/proc/sys/kernel/pid_max", String(count + 1))
    return undefined
  } catch (cause) {
    return `writing kernel.pid_max failed: ${cause instanceof Error ? cause.message : String(cause)}`
  }
}

/** Paths the command must read nothing of (./covered): files, and directories covered whole. */
export interface Cover {
  readonly files: ReadonlyArray<string>
  readonly directories: ReadonlyArray<string>
  /** Folders holding them, which the command must not rename or remove (each above the ones below it). */
  readonly folders?: ReadonlyArray<string>
  /** Files and directories the command may read but not change (what the `edit` rules deny): bound read-only. */
  readonly frozen?: ReadonlyArray<string>
  /** An empty regular file only core can write, which each file is covered with. */
  readonly empty: string
}

/**
 * Covers each path of `cover` in a mount namespace of this thread's own: a file with `cover.empty` bound read-only
 * over it (the command reads it as empty, cannot write, rename or remove it: EROFS, EBUSY), a directory with an
 * empty read-only tmpfs; and binds each folder holding them onto itself first (a mount point cannot be renamed or
 * removed, EBUSY, nor anything renamed or linked across it, EXDEV; what is in it stays as writable as it was), and
 * binds each frozen path onto itself read-only (readable as it is; EROFS to change, EBUSY to rename or remove). A
 * path gone meanwhile is skipped. Answers undefined, or why it could not: the caller must then not run the command,
 * which would read what a rule denies.
 */
export const cover = (way: Way, { files, directories, folders = [], frozen = [], empty }: Cover): string | undefined => {
  if (files.length === 0 && directories.length === 0 && frozen.length === 0) return undefined
  if (way === "none") return "this process cannot make a mount namespace"
  const unshared = Native.unshare(Native.CLONE_NEWNS)
  if (unshared !== 0) return `unshare(CLONE_NEWNS) failed (errno ${unshared})`
  const privately = Native.mount(null, "/", Native.MS_REC | Native.MS_PRIVATE)
  if (privately !== 0) return `making the mounts private failed (errno ${privately})`
  // Before the covers: a folder bound later would show what is under it without them. Bound with what is mounted
  // under it (MS_REC): the read-only mounts that protect core's configuration and the git hooks (`protect`) go with
  // it; bound alone, the folder showed what they cover, writable.
  for (const path of folders) {
    const pinned = Native.mount(path, path, Native.MS_BIND | Native.MS_REC)
    if (pinned === ENOENT) continue
    if (pinned !== 0) return `pinning ${path} failed (errno ${pinned})`
  }
  // What the command may read but not change: bound onto itself (with what is mounted under it), then made
  // read-only, keeping the flags of the mount it lies in (a user namespace refuses a remount that drops them).
  for (const path of frozen) {
    const bound = Native.mount(path, path, Native.MS_BIND | Native.MS_REC)
    if (bound === ENOENT) continue
    if (bound !== 0) return `binding ${path} failed (errno ${bound})`
    const remounted = Native.mount(null, path, Native.MS_REMOUNT | Native.MS_BIND | Native.MS_RDONLY | Native.mountFlags(path))
    if (remounted !== 0) return `making ${path} read-only failed (errno ${remounted})`
  }
  const flags = Native.MS_NOSUID | Native.MS_NODEV | Native.MS_NOEXEC
  for (const path of directories) {
    const mounted = Native.mount("tmpfs", path, flags | Native.MS_RDONLY, "tmpfs", "size=4k,mode=0555")
    if (mounted === ENOENT) continue
    if (mounted !== 0) return `covering ${path} failed (errno ${mounted})`
  }
  if (files.length === 0) return undefined
  // The empty file bound read-only onto itself first: a bind takes the flags of the mount it binds from, so each
  // cover is then one mount, read-only from the start.
  const bound = Native.mount(empty, empty, Native.MS_BIND)
  if (bound !== 0) return `binding ${empty} failed (errno ${bound})`
  const remounted = Native.mount(null, empty, Native.MS_REMOUNT | Native.MS_BIND | Native.MS_RDONLY | Native.mountFlags(empty))
  if (remounted !== 0) return `making ${empty} read-only failed (errno ${remounted})`
  for (const path of files) {
    const covered = Native.mount(empty, path, Native.MS_BIND)
    if (covered === ENOENT) continue
    if (covered !== 0) return `covering ${path} failed (errno ${covered})`
  }
  return undefined
}
