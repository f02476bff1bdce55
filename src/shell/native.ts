export * as Native from "./native"

// The few libc calls the shell needs that Bun does not offer (prctl, raw syscalls, open with O_PATH, waitpid),
// through bun:ffi. Linux only. The library is opened on first use, so importing this module costs nothing; where
// libc cannot be opened, `available` is false and callers fall back to running without these protections.

import { dlopen, FFIType, ptr, read } from "bun:ffi"

export const PR_SET_PDEATHSIG = 1
export const PR_SET_DUMPABLE = 4
export const PR_SET_CHILD_SUBREAPER = 36
export const PR_SET_NO_NEW_PRIVS = 38
export const O_PATH = 0o10000000
export const O_CLOEXEC = 0o2000000
export const WNOHANG = 1

const SYMBOLS = {
  prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
  syscall: { args: [FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64], returns: FFIType.i64 },
  open: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
  close: { args: [FFIType.i32], returns: FFIType.i32 },
  waitpid: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
  getppid: { args: [], returns: FFIType.i32 },
  __errno_location: { args: [], returns: FFIType.ptr },
} as const

type Library = ReturnType<typeof dlopen<typeof SYMBOLS>>["symbols"]

let opened: Library | null | undefined

const libc = (): Library | null => {
  if (opened !== undefined) return opened
  for (const name of ["libc.so.6", "libc.so"]) {
    try {
      opened = dlopen(name, SYMBOLS).symbols
      return opened
    } catch {
      // try the next name; musl and glibc name it differently
    }
  }
  opened = null
  return opened
}

/** Whether libc could be opened (Linux with glibc or musl). */
export const available = (): boolean => libc() !== null

const errno = (lib: Library): number => read.i32(lib.__errno_location()!, 0)

/** prctl(option, value); answers 0 or the errno. */
export const prctl = (option: number, value: number): number => {
  const lib = libc()
  if (lib === null) return -1
  return lib.prctl(option, value, 0, 0, 0) === 0 ? 0 : errno(lib)
}

/** A raw system call; answers its result, or minus the errno on failure. */
export const syscall = (number: number, a = 0, b = 0, c = 0, d = 0): number => {
  const lib = libc()
  if (lib === null) return -38 // ENOSYS
  const result = Number(lib.syscall(number, a, b, c, d))
  return result === -1 ? -errno(lib) : result
}

/** open(path, flags) for an O_PATH handle; answers the descriptor or minus the errno. */
export const open = (path: string, flags: number): number => {
  const lib = libc()
  if (lib === null) return -38
  const fd = lib.open(ptr(Buffer.from(`${path}\0`)), flags)
  return fd === -1 ? -errno(lib) : fd
}

export const close = (fd: number): void => {
  libc()?.close(fd)
}

export const getppid = (): number => libc()?.getppid() ?? process.ppid

/** Reaps one ended child without blocking: its pid, 0 when none has ended, or -1 when there is no child. */
export const reap = (pid = -1): number => libc()?.waitpid(pid, null, WNOHANG) ?? -1

/** The address of a buffer, for system calls that take a struct. */
export const address = (bytes: Uint8Array): number => Number(ptr(bytes))
