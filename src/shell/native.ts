export * as Native from "./native"

// The few libc calls the shell needs that Bun does not offer (prctl, raw syscalls, open with O_PATH, waitpid,
// unshare and mount), through bun:ffi. Linux only. The library is opened on first use, so importing this module costs nothing; where
// libc cannot be opened, `available` is false and callers fall back to running without these protections.

import { dlopen, FFIType, ptr, read } from "bun:ffi"
import { closeSync, openSync, readdirSync, readFileSync, writeSync } from "node:fs"

export const PR_SET_PDEATHSIG = 1
export const PR_SET_DUMPABLE = 4
export const PR_CAPBSET_DROP = 24
export const PR_SET_CHILD_SUBREAPER = 36
export const CAP_SYS_PTRACE = 19
export const PR_SET_NO_NEW_PRIVS = 38
export const PR_CAP_AMBIENT = 47
export const PR_CAP_AMBIENT_CLEAR_ALL = 4
export const O_PATH = 0o10000000
export const O_CLOEXEC = 0o2000000
export const WNOHANG = 1
export const CLONE_NEWNS = 0x20000
export const CLONE_NEWPID = 0x20000000
export const CLONE_NEWIPC = 0x08000000
export const MS_RDONLY = 1
export const MS_NOSUID = 2
export const MS_NODEV = 4
export const MS_NOEXEC = 8
export const MS_REMOUNT = 32
export const MS_NOATIME = 1024
export const MS_NODIRATIME = 2048
export const MS_BIND = 4096
export const MS_REC = 16384
export const MS_PRIVATE = 1 << 18
export const MS_RELATIME = 1 << 21
const ST_RDONLY = 1
const ST_RELATIME = 4096
export const CAP_SYS_ADMIN = 21

/** System call numbers that differ between the architectures core runs on (Landlock's are the same on all). */
const NUMBERS = {
  x64: {
    capget: 125,
    capset: 126,
    seccomp: 317,
    socket: 41,
    memfdCreate: 319,
    fcntl: 72,
    inotifyInit1: 294,
    inotifyAddWatch: 254,
    inotifyRmWatch: 255,
    ppoll: 271,
    pipe2: 293,
    waitid: 247,
  },
  arm64: {
    capget: 90,
    capset: 91,
    seccomp: 277,
    socket: 198,
    memfdCreate: 279,
    fcntl: 25,
    inotifyInit1: 26,
    inotifyAddWatch: 27,
    inotifyRmWatch: 28,
    ppoll: 73,
    pipe2: 59,
    waitid: 95,
  },
} as const

/** close_range(2), the same number on every architecture core runs on. */
const SYS_CLOSE_RANGE = 436
const CLOSE_RANGE_CLOEXEC = 4
const F_SETFD = 2
const FD_CLOEXEC = 1
const SIG_SETMASK = 2
const SIG_DFL = 0

let ignored: ReadonlyArray<number> | undefined

/**
 * The signals this process ignores (SigIgn in /proc/self/status), read once: call it before a sandbox could keep
 * /proc from this process.
 */
export const ignoredSignals = (): ReadonlyArray<number> => {
  if (ignored !== undefined) return ignored
  let mask = 0n
  try {
    const match = /^SigIgn:\s*([0-9a-f]+)$/m.exec(readFileSync("/proc/self/status", "latin1"))
    if (match !== null) mask = BigInt(`0x${match[1]}`)
  } catch {
    // No /proc: nothing known to reset.
  }
  const signals: Array<number> = []
  for (let signal = 1; mask >> BigInt(signal - 1) !== 0n; signal++) if ((mask >> BigInt(signal - 1)) & 1n) signals.push(signal)
  return (ignored = signals)
}

/** This architecture's system call numbers, or undefined on one core has none for. */
export const numbers: (typeof NUMBERS)[keyof typeof NUMBERS] | undefined =
  process.arch === "x64" || process.arch === "arm64" ? NUMBERS[process.arch] : undefined

const SYMBOLS = {
  prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
  syscall: { args: [FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64], returns: FFIType.i64 },
  open: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
  close: { args: [FFIType.i32], returns: FFIType.i32 },
  dup2: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  waitpid: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
  getppid: { args: [], returns: FFIType.i32 },
  kill: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  unshare: { args: [FFIType.i32], returns: FFIType.i32 },
  setns: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  mount: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.u64, FFIType.ptr], returns: FFIType.i32 },
  statvfs: { args: [FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  execve: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  signal: { args: [FFIType.i32, FFIType.u64], returns: FFIType.u64 },
  sigprocmask: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  getrlimit: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
  setrlimit: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
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

export const LOCK_EX = 2
export const LOCK_NB = 4
/** errno EWOULDBLOCK (EAGAIN on Linux): with LOCK_NB, another open file holds the flock. */
export const EWOULDBLOCK = 11
const EINTR = 4

/**
 * flock(fd, operation): 0, or the errno (EWOULDBLOCK: another open file holds it, with LOCK_NB); -1 where libc
 * cannot be opened. An interrupted wait is tried again.
 */
export const flock = (fd: number, operation: number): number => {
  const lib = libc()
  if (lib === null) return -1
  for (;;) {
    if (lib.flock(fd, operation) === 0) return 0
    const code = errno(lib)
    if (code !== EINTR) return code
  }
}

/** RLIMIT_NPROC, the same on x86-64 and arm64: how many processes and threads its user may have. */
export const RLIMIT_NPROC = 6

/**
 * Lowers this process's limit `resource`, soft and hard, to at most `bound` (a lower one stays as it is): 0 or the
 * errno. Lowered so, the hard limit cannot be raised again without CAP_SYS_RESOURCE.
 */
export const lowerLimit = (resource: number, bound: number): number => {
  const lib = libc()
  if (lib === null) return 38 // ENOSYS
  const limits = new BigUint64Array(2)
  if (lib.getrlimit(resource, ptr(limits)) !== 0) return errno(lib)
  const most = BigInt(bound)
  // RLIM_INFINITY is the largest unsigned value: any bound is below it.
  if (limits[1]! > most) limits[1] = most
  if (limits[0]! > limits[1]!) limits[0] = limits[1]!
  return lib.setrlimit(resource, ptr(limits)) === 0 ? 0 : errno(lib)
}

/** prctl(option, value); answers 0 or the errno. */
export const prctl = (option: number, value: number): number => {
  const lib = libc()
  if (lib === null) return -1
  return lib.prctl(option, value, 0, 0, 0) === 0 ? 0 : errno(lib)
}

/** A raw system call; answers its result, or minus the errno on failure. */
export const syscall = (number: number, a = 0, b = 0, c = 0, d = 0, e = 0): number => {
  const lib = libc()
  if (lib === null) return -38 // ENOSYS
  const result = Number(lib.syscall(number, a, b, c, d, e))
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

/** Marks descriptor `fd` close-on-exec (one a parent handed over has it cleared); answers 0 or minus the errno. */
export const closeOnExec = (fd: number): number => (numbers === undefined ? -38 : syscall(numbers.fcntl, fd, F_SETFD, FD_CLOEXEC))

/**
 * Points this process's stdout and stderr (`targets`) at /dev/null, letting go of whatever they were (pipes it
 * shares). With no targets it only opens and closes /dev/null: a warm-up, which has this code compiled.
 */
export const releaseOutput = (targets: ReadonlyArray<number> = [1, 2]): void => {
  const lib = libc()
  if (lib === null) return
  const fd = open("/dev/null", 2 /* O_RDWR */)
  if (fd < 0) return
  for (const target of targets) lib.dup2(fd, target)
  if (fd > 2) lib.close(fd)
}

/** dup2(from, to); answers 0 or the errno. */
export const dup2 = (from: number, to: number): number => {
  const lib = libc()
  if (lib === null) return 38
  return lib.dup2(from, to) === -1 ? errno(lib) : 0
}

/**
 * A pipe (pipe2, close-on-exec): its read and write ends, or minus the errno. What a command gets as its stdout and
 * stderr, rather than the socket Bun.spawn's "pipe" makes, which a program cannot open again by name
 * (`echo x > /dev/stderr` fails with ENXIO).
 */
export const pipe = (): readonly [read: number, write: number] | number => {
  if (numbers === undefined) return -38
  const ends = new Int32Array(2)
  const made = syscall(numbers.pipe2, address(new Uint8Array(ends.buffer)), O_CLOEXEC)
  return made < 0 ? made : [ends[0]!, ends[1]!]
}

/**
 * A file in memory holding `bytes`, read from its start: a command's stdin, as Bun.spawn gives one. Answers its
 * descriptor, or minus the errno.
 */
export const memoryFile = (bytes: Uint8Array): number => {
  if (numbers === undefined) return -38
  const fd = syscall(numbers.memfdCreate, address(Buffer.from("stdin\0")), 0)
  if (fd < 0) return fd
  try {
    // At an offset: the file's own position stays at its start, where the command reads from.
    if (bytes.length > 0) writeSync(fd, bytes, 0, bytes.length, 0)
    return fd
  } catch (cause) {
    close(fd)
    const code = typeof cause === "object" && cause !== null && "errno" in cause ? Number(cause.errno) : -5
    return code < 0 ? code : -code
  }
}

/**
 * NUL-ended copies of `values` and a NULL-ended array of pointers to them, as execve takes its argv and envp (`kept`
 * must stay alive while they are used). Pure: a starter calls it while it waits, so that the first use of
 * Buffer.from and ptr in a fresh process (a few tenths of a millisecond) is not on a command's path.
 */
export const cStrings = (values: ReadonlyArray<string>): { readonly kept: ReadonlyArray<Buffer>; readonly pointers: BigUint64Array } => {
  const kept = values.map((value) => Buffer.from(`${value}\0`))
  const pointers = new BigUint64Array(kept.length + 1)
  kept.forEach((value, index) => (pointers[index] = BigInt(ptr(value))))
  return { kept, pointers }
}

/** Marks every descriptor from 3 on close-on-exec: none reaches a program this process starts but as it hands it on. */
export const closeAllOnExec = (): void => {
  if (syscall(SYS_CLOSE_RANGE, 3, 0xffffffff, CLOSE_RANGE_CLOEXEC) < 0) {
    // Kernels before 5.11: one descriptor at a time.
    for (const entry of readdirSync("/proc/self/fd")) {
      const fd = Number(entry)
      if (fd > 2) closeOnExec(fd)
    }
  }
}

/**
 * Replaces this process with the program at `path` (execve), after what a process spawned afresh has: every
 * signal at its default and none blocked (a runtime ignores or blocks some, and an ignored signal stays ignored
 * across exec), and no descriptor but 0, 1 and 2 (the others are closed by the exec, so a failed one leaves them
 * open). Returns only on failure: the errno.
 */
export const execute = (path: string, argv: ReadonlyArray<string>, env: ReadonlyArray<string>): number => {
  const lib = libc()
  if (lib === null) return 38
  const file = Buffer.from(`${path}\0`)
  const args = cStrings(argv)
  const environment = cStrings(env)
  closeAllOnExec()
  // Only the ignored ones: a handled signal is reset by the exec itself, and resetting it before would leave the
  // runtime, still running until the exec, without a handler it relies on.
  for (const signal of ignoredSignals()) lib.signal(signal, SIG_DFL)
  lib.sigprocmask(SIG_SETMASK, ptr(new Uint8Array(128)), null)
  lib.execve(ptr(file), ptr(args.pointers), ptr(environment.pointers))
  const failed = errno(lib)
  // Kept alive until here: the pointers above point into them.
  void [args.kept, environment.kept]
  return failed
}

/** unshare(flags); answers 0 or the errno. */
export const unshare = (flags: number): number => {
  const lib = libc()
  if (lib === null) return 38
  return lib.unshare(flags) === 0 ? 0 : errno(lib)
}

/** This process's own PID namespace, held open to come back to after `spawnInPidNamespace` (opened on first use). */
let ownPidNamespace: number | undefined

/** Where `settleCollector` puts what it allocates: kept out of reach of the compiler's removal of unused objects. */
const made: Array<unknown> = []

/**
 * Leaves the engine's collector with nothing to do for a while: a collection run now to its end, then a few dozen
 * kilobytes allocated, at whose first allocations the engine finishes that collection on this thread (which can start
 * threads). What is allocated next is far inside the fresh budget: no collection starts or ends in it.
 */
const settleCollector = (): void => {
  Bun.gc(false)
  for (let index = 0; index < 1_000; index++) made.push({ index })
  made.length = 0
}

/**
 * `Bun.spawn(argv, options)` with the process started as the first process (its pid 1) of a new PID namespace:
 * this thread's children go into a new namespace for the spawn, and back into its own right after. Answers the
 * process and whether the new namespace was had: without CAP_SYS_ADMIN, the process starts in this namespace as usual.
 *
 * Between the two, this thread can start no thread: the kernel refuses one to a thread whose children's PID
 * namespace is not its own (EINVAL), and the JavaScript engine aborts the whole process when it cannot start a
 * thread it needs. It starts some on demand, from the thread that needs them, among them when a collection ends: the
 * first allocation after one finishes it on this thread (with the JIT off, no thread was started there). Bun.spawn
 * allocates, so a collection ending while the namespace was switched ended core (`panic: abort() called`: in core's
 * attack tests about one young process in fifty; in a process spawning in a loop, every time, within 700-850 spawns;
 * a collection forced just before, every time at once). So the collector is settled first (`settleCollector`), nothing
 * of core's runs there but the spawn (argv and options are made by the caller, the answer after the way back), and
 * what Bun.spawn allocates there is far inside the fresh budget.
 */
export const spawnInPidNamespace = <In extends Bun.SpawnOptions.Writable, Out extends Bun.SpawnOptions.Readable, Err extends Bun.SpawnOptions.Readable>(
  argv: Array<string>,
  options: Bun.SpawnOptions.OptionsObject<In, Out, Err>,
): { readonly value: Bun.Subprocess<In, Out, Err>; readonly namespace: boolean } => {
  const lib = libc()
  if (lib !== null && ownPidNamespace === undefined) {
    const fd = open("/proc/self/ns/pid", O_CLOEXEC)
    if (fd >= 0) ownPidNamespace = fd
  }
  if (lib === null || ownPidNamespace === undefined) return { value: Bun.spawn(argv, options), namespace: false }
  settleCollector()
  if (lib.unshare(CLONE_NEWPID) !== 0) return { value: Bun.spawn(argv, options), namespace: false }
  let spawned: Bun.Subprocess<In, Out, Err>
  try {
    spawned = Bun.spawn(argv, options)
  } finally {
    // Back, whatever happened: otherwise every later child of this thread would join that namespace (and none
    // could start once its first process had ended), and this thread could start no thread ever again.
    if (lib.setns(ownPidNamespace, CLONE_NEWPID) !== 0) throw new Error(`setns back to core's PID namespace failed (errno ${errno(lib)})`)
  }
  return { value: spawned, namespace: true }
}

const cString = (text: string) => ptr(Buffer.from(`${text}\0`))

/** mount(source, target, type, flags, data); answers 0 or the errno. */
export const mount = (source: string | null, target: string, flags: number, type?: string, data?: string): number => {
  const lib = libc()
  if (lib === null) return 38
  const result = lib.mount(
    source === null ? null : cString(source),
    cString(target),
    type === undefined ? null : cString(type),
    flags,
    data === undefined ? null : cString(data),
  )
  return result === 0 ? 0 : errno(lib)
}

/**
 * The per-mount flags of the mount holding `path` (nosuid, nodev, noexec and the access-time ones) as mount(2)
 * flags: a bind remount must keep them, and inside a user namespace the kernel refuses one that would drop them.
 */
export const mountFlags = (path: string): number => {
  const lib = libc()
  if (lib === null) return 0
  // struct statvfs on 64-bit Linux: eleven 8-byte fields and six ints; f_flag is the tenth field.
  const buffer = new Uint8Array(128)
  if (lib.statvfs(cString(path), ptr(buffer)) !== 0) return 0
  const flag = Number(new DataView(buffer.buffer).getBigUint64(72, true))
  const kept = flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
  return kept | (flag & ST_RELATIME ? MS_RELATIME : 0)
}

/** Whether the mount holding `path` is read-only (a read-only filesystem, or a mount made so); false when unknown. */
export const mountedReadOnly = (path: string): boolean => {
  const lib = libc()
  if (lib === null) return false
  const buffer = new Uint8Array(128)
  if (lib.statvfs(cString(path), ptr(buffer)) !== 0) return false
  return (Number(new DataView(buffer.buffer).getBigUint64(72, true)) & ST_RDONLY) !== 0
}

/** Whether this process holds `capability` in its effective set (from /proc/self/status). */
export const capable = (capability: number): boolean => {
  try {
    const match = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync("/proc/self/status", "latin1"))
    return match !== null && ((BigInt(`0x${match[1]}`) >> BigInt(capability)) & 1n) === 1n
  } catch {
    return false
  }
}

export const getppid = (): number => libc()?.getppid() ?? process.ppid

/** kill(pid, signal); answers 0 or the errno (ENOSYS without libc). */
export const kill = (pid: number, signal: number): number => {
  const lib = libc()
  if (lib === null) return 38
  return lib.kill(pid, signal) === 0 ? 0 : errno(lib)
}

/** Reaps one ended child without blocking: its pid, 0 when none has ended, or -1 when there is no child. */
export const reap = (pid = -1): number => libc()?.waitpid(pid, null, WNOHANG) ?? -1

/** waitid(2): which children (all), and its options: those that exited, left waitable (WNOHANG above). */
const P_ALL = 0
const WEXITED = 4
const WNOWAIT = 0x01000000
/** The siginfo_t waitid fills, and where its si_pid is (in 32-bit words). */
const childInfo = new Int32Array(32)
const childInfoBytes = new Uint8Array(childInfo.buffer)
const SI_PID = 4

/**
 * A child of this process that has ended and is not reaped yet, left so (the pid, which `reap` then takes); 0 when
 * none has ended, -1 when there is no child or the call cannot be made.
 */
export const endedChild = (): number => {
  if (numbers === undefined) return -1
  childInfo[SI_PID] = 0
  const result = syscall(numbers.waitid, P_ALL, 0, address(childInfoBytes), WEXITED | WNOHANG | WNOWAIT)
  return result < 0 ? -1 : childInfo[SI_PID]!
}

/**
 * The `struct sock_fprog` of a seccomp filter `program` (8 bytes per instruction): its length, padding, then the
 * program's address. `program` must stay referenced for as long as the struct is used.
 */
export const filterProgram = (program: Uint8Array): Uint8Array => {
  const fprog = new Uint8Array(16)
  const header = new DataView(fprog.buffer)
  header.setUint16(0, program.length / 8, true)
  header.setBigUint64(8, BigInt(address(program)), true)
  return fprog
}

const SECCOMP_SET_MODE_FILTER = 1

/**
 * What every seccomp filter here is written with: each architecture's audit number, the x32 bit, the filter's
 * answers, the BPF instructions used, and the offsets of the call's number and architecture in struct seccomp_data.
 */
export const Seccomp = {
  AUDIT_ARCH: { x64: 0xc000003e, arm64: 0xc00000b7 },
  /** x32 system calls on x86_64 carry this bit: refused, as no program core runs uses that ABI. */
  X32_BIT: 0x40000000,
  RET_ALLOW: 0x7fff0000,
  RET_ERRNO: 0x00050000,
  LD_ABS: 0x20,
  JEQ: 0x15,
  JGE: 0x35,
  RET: 0x06,
  NR: 0,
  ARCH: 4,
} as const

/** The offset in struct seccomp_data of an argument's low or high word. */
export const argument = (index: number, high = false) => 16 + index * 8 + (high ? 4 : 0)

/** One BPF step, which a jump names by its label: a load, a comparison (jumping to the next step where it names none), or a return. */
export type Step = { readonly label?: string } & (
  | { readonly load: number }
  | { readonly equals: number; readonly then?: string; readonly otherwise?: string; readonly atLeast?: boolean }
  | { readonly returns: number }
)

/** Assembles `steps` into BPF instructions (struct sock_filter { u16 code; u8 jt; u8 jf; u32 k }). */
export const assemble = (steps: ReadonlyArray<Step>): Uint8Array => {
  const at = new Map<string, number>()
  steps.forEach((step, index) => step.label !== undefined && at.set(step.label, index))
  const program = new Uint8Array(steps.length * 8)
  const view = new DataView(program.buffer)
  steps.forEach((step, index) => {
    const offset = (label: string | undefined) => {
      const skipped = label === undefined ? 0 : (at.get(label) ?? -1) - index - 1
      // BPF jumps only forward, and at most 255 steps.
      if (skipped < 0 || skipped > 255) throw new Error(`BPF: no jump from step ${index} to ${label}`)
      return skipped
    }
    const [code, jt, jf, k] =
      "load" in step
        ? [Seccomp.LD_ABS, 0, 0, step.load]
        : "equals" in step
          ? [step.atLeast ? Seccomp.JGE : Seccomp.JEQ, offset(step.then), offset(step.otherwise), step.equals]
          : [Seccomp.RET, 0, 0, step.returns]
    view.setUint16(index * 8, code, true)
    view.setUint8(index * 8 + 2, jt)
    view.setUint8(index * 8 + 3, jf)
    view.setUint32(index * 8 + 4, k >>> 0, true)
  })
  return program
}


/**
 * Installs the seccomp filter `fprog` (filterProgram) on the calling thread and every process it spawns afterwards.
 * Needs no_new_privs. Answers undefined, or why it could not.
 */
export const installFilter = (fprog: Uint8Array): string | undefined => {
  if (numbers === undefined) return "no system call numbers for this architecture"
  const installed = syscall(numbers.seccomp, SECCOMP_SET_MODE_FILTER, 0, address(fprog))
  return installed < 0 ? `seccomp(SECCOMP_SET_MODE_FILTER) failed (errno ${-installed})` : undefined
}

/** The address of a buffer, for system calls that take a struct. */
export const address = (bytes: Uint8Array): number => Number(ptr(bytes))

/**
 * Overwrites the values of `names` in this process's initial environment block, the memory that
 * /proc/<pid>/environ shows to other processes. Bun keeps its own copy of the environment (process.env and the
 * environment children inherit are unaffected), so this only hides the values from readers of /proc. Answers the
 * names it scrubbed.
 */
export const scrubEnvironment = (names: ReadonlyArray<string>): ReadonlyArray<string> => {
  let block: Buffer
  let start: number
  try {
    const stat = readFileSync("/proc/self/stat", "latin1")
    // env_start is field 50 of /proc/<pid>/stat; fields count from the state, field 3, after the name.
    start = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[47])
    block = readFileSync("/proc/self/environ")
  } catch {
    return []
  }
  const scrubbed: Array<string> = []
  let fd: number | undefined
  try {
    for (const name of names) {
      const key = Buffer.from(`${name}=`)
      let at = block.indexOf(key)
      while (at > 0 && block[at - 1] !== 0) at = block.indexOf(key, at + 1)
      if (at === -1) continue
      const value = at + key.length
      const end = block.indexOf(0, value)
      const length = (end === -1 ? block.length : end) - value
      if (length === 0) continue
      fd ??= openSync("/proc/self/mem", "r+")
      writeSync(fd, Buffer.alloc(length, "*"), 0, length, start + value)
      scrubbed.push(name)
    }
  } catch {
    // Not possible here (no /proc, or /proc/self/mem not writable): the values stay where they were.
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
  return scrubbed
}
