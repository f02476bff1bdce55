export * as Others from "./others"

// What a sandboxed command may not change of a process other than its own. The kernel lets a process set the
// resource limits (prlimit) of every process of its user, and lower the priority, processor affinity and
// scheduling of every one that holds no capability it lacks; Landlock mediates none of these. So a command could
// give core a file size limit of 0 (core dies at its next write), its supervisor a descriptor limit of 0 (it then
// cannot find what the command hid, which outlives the call), or core the lowest priority and a single processor.
// A seccomp filter refuses these system calls aimed at any process but the caller (pid 0) with EPERM: `ulimit`,
// `nice`, `ionice` and `taskset` on the command itself still work, on another of its own processes they do not.
// It refuses the kernel's keyrings too (add_key, request_key, keyctl): a root command read root's user keyring
// (Kerberos tickets, cached passphrases) and left keys in it that outlived the call. And where the command could not
// be given an IPC namespace of its own, `refuseIpc` refuses it System V IPC and POSIX message queues, which it would
// share with every process of the host (a user's shared memory read and written). The starter (./starter)
// installs them for every sandboxed command; nothing here decides permissions.

import { Native } from "./native"

/** The system calls that change another process's limits or scheduling, on each architecture core runs on. */
const CALLS = {
  x64: {
    prlimit64: 302,
    setpriority: 141,
    ioprioSet: 251,
    schedSetaffinity: 203,
    schedSetscheduler: 144,
    schedSetparam: 142,
    schedSetattr: 314,
    keys: [248, 249, 250],
  },
  arm64: {
    prlimit64: 261,
    setpriority: 140,
    ioprioSet: 30,
    schedSetaffinity: 122,
    schedSetscheduler: 119,
    schedSetparam: 118,
    schedSetattr: 274,
    keys: [217, 218, 219],
  },
} as const
/**
 * System V IPC (shmget, shmat, shmctl, shmdt, semget, semop, semctl, semtimedop, msgget, msgsnd, msgrcv, msgctl) and
 * POSIX message queues (mq_open, mq_unlink, mq_timedsend, mq_timedreceive, mq_notify, mq_getsetattr).
 */
const IPC_CALLS = {
  x64: [29, 30, 31, 67, 64, 65, 66, 220, 68, 69, 70, 71, 240, 241, 242, 243, 244, 245],
  arm64: [194, 196, 195, 197, 190, 193, 191, 192, 186, 189, 188, 187, 180, 181, 182, 183, 184, 185],
} as const
/** setpriority's and ioprio_set's `which` naming every process of a user. */
const PRIO_USER = 2
const IOPRIO_WHO_USER = 3
const EPERM = 1
const ENOSYS = 38
const { AUDIT_ARCH, X32_BIT, RET_ALLOW, RET_ERRNO, NR, ARCH } = Native.Seccomp
const { assemble, argument } = Native
/** The filter, built once: struct sock_fprog and the instructions it points to (kept, so they stay in memory). */
let built: { readonly fprog: Uint8Array; readonly program: Uint8Array } | undefined

/** Builds the filter `refuse` installs. Undefined on an architecture core has no system call numbers for. */
export const prepare = (): typeof built => {
  if (built !== undefined) return built
  const arch = process.arch === "x64" || process.arch === "arm64" ? process.arch : undefined
  if (arch === undefined) return undefined
  const calls = CALLS[arch]
  const program = assemble([
    { load: ARCH },
    { equals: AUDIT_ARCH[arch], otherwise: "nosys" },
    { load: NR },
    { equals: X32_BIT, atLeast: true, then: "nosys" },
    { equals: calls.prlimit64, then: "limit" },
    { equals: calls.setpriority, then: "priority" },
    { equals: calls.ioprioSet, then: "ioprio" },
    { equals: calls.schedSetaffinity, then: "self" },
    { equals: calls.schedSetscheduler, then: "self" },
    { equals: calls.schedSetparam, then: "self" },
    { equals: calls.schedSetattr, then: "self" },
    ...calls.keys.map((call): Native.Step => ({ equals: call, then: "deny" })),
    { returns: RET_ALLOW },
    // prlimit(pid, resource, new, old): another process's limits may be read, not set.
    { label: "limit", load: argument(0) },
    { equals: 0, then: "allow" },
    { load: argument(2) },
    { equals: 0, otherwise: "deny" },
    { load: argument(2, true) },
    { equals: 0, then: "allow", otherwise: "deny" },
    // setpriority(which, who, nice) and ioprio_set(which, who, class): the caller's own (who 0), not its user's.
    { label: "priority", load: argument(1) },
    { equals: 0, otherwise: "deny" },
    { load: argument(0) },
    { equals: PRIO_USER, then: "deny", otherwise: "allow" },
    { label: "ioprio", load: argument(1) },
    { equals: 0, otherwise: "deny" },
    { load: argument(0) },
    { equals: IOPRIO_WHO_USER, then: "deny", otherwise: "allow" },
    // sched_setaffinity, sched_setscheduler, sched_setparam, sched_setattr (pid, ...): the calling thread only.
    { label: "self", load: argument(0) },
    { equals: 0, then: "allow", otherwise: "deny" },
    { label: "allow", returns: RET_ALLOW },
    { label: "deny", returns: RET_ERRNO | EPERM },
    { label: "nosys", returns: RET_ERRNO | ENOSYS },
  ])
  return (built = { fprog: Native.filterProgram(program), program })
}

/**
 * Refuses the calling thread (and every process it spawns afterwards) the system calls that set another process's
 * resource limits, priority, I/O priority, processor affinity or scheduling, and the keyrings, with EPERM; a system call of another
 * ABI (32-bit, x32), which the filter could not read, gets ENOSYS. Needs no_new_privs, which the starter sets.
 * Answers undefined, or why it could not.
 */
export const refuse = (): string | undefined => {
  const filter = prepare()
  return filter === undefined ? "no system call numbers for this architecture" : Native.installFilter(filter.fprog)
}

/** The IPC filter, built once. */
let builtIpc: { readonly fprog: Uint8Array; readonly program: Uint8Array } | undefined

/**
 * Refuses the calling thread (and every process it spawns afterwards) System V IPC and POSIX message queues with
 * EPERM, for a command that shares the host's IPC namespace; a system call of another ABI gets ENOSYS. Needs
 * no_new_privs. Answers undefined, or why it could not.
 */
export const refuseIpc = (): string | undefined => {
  const arch = process.arch === "x64" || process.arch === "arm64" ? process.arch : undefined
  if (arch === undefined) return "no system call numbers for this architecture"
  builtIpc ??= (() => {
    const program = Native.assemble([
      { load: ARCH },
      { equals: AUDIT_ARCH[arch], otherwise: "nosys" },
      { load: NR },
      { equals: X32_BIT, atLeast: true, then: "nosys" },
      ...IPC_CALLS[arch].map((call): Native.Step => ({ equals: call, then: "deny" })),
      { returns: RET_ALLOW },
      { label: "deny", returns: RET_ERRNO | EPERM },
      { label: "nosys", returns: RET_ERRNO | ENOSYS },
    ])
    return { fprog: Native.filterProgram(program), program }
  })()
  return Native.installFilter(builtIpc.fprog)
}
