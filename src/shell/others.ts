export * as Others from "./others"

// What a sandboxed command may not change of a process other than its own. The kernel lets a process set the
// resource limits (prlimit) of every process of its user, and lower the priority, processor affinity and
// scheduling of every one that holds no capability it lacks; Landlock mediates none of these. So a command could
// give core a file size limit of 0 (core dies at its next write), its supervisor a descriptor limit of 0 (it then
// cannot find what the command hid, which outlives the call), or core the lowest priority and a single processor.
// A seccomp filter refuses these system calls aimed at any process but the caller (pid 0) with EPERM: `ulimit`,
// `nice`, `ionice` and `taskset` on the command itself still work, on another of its own processes they do not.
// The starter (./starter) installs it for every sandboxed command; nothing here decides permissions.

import { Native } from "./native"

/** The system calls that change another process's limits or scheduling, on each architecture core runs on. */
const CALLS = {
  x64: { prlimit64: 302, setpriority: 141, ioprioSet: 251, schedSetaffinity: 203, schedSetscheduler: 144, schedSetparam: 142, schedSetattr: 314 },
  arm64: { prlimit64: 261, setpriority: 140, ioprioSet: 30, schedSetaffinity: 122, schedSetscheduler: 119, schedSetparam: 118, schedSetattr: 274 },
} as const
/** setpriority's and ioprio_set's `which` naming every process of a user. */
const PRIO_USER = 2
const IOPRIO_WHO_USER = 3
const EPERM = 1
const ENOSYS = 38
const { AUDIT_ARCH, X32_BIT, RET_ALLOW, RET_ERRNO, LD_ABS, JEQ, JGE, RET, NR, ARCH } = Native.Seccomp
/** The offset in struct seccomp_data of an argument's low or high word. */
const argument = (index: number, high = false) => 16 + index * 8 + (high ? 4 : 0)

/** One BPF step, which a jump names by its label: a load, a comparison (jumping to the next step where it names none), or a return. */
type Step = { readonly label?: string } & (
  | { readonly load: number }
  | { readonly equals: number; readonly then?: string; readonly otherwise?: string; readonly atLeast?: boolean }
  | { readonly returns: number }
)

/** Assembles `steps` into BPF instructions (struct sock_filter { u16 code; u8 jt; u8 jf; u32 k }). */
const assemble = (steps: ReadonlyArray<Step>): Uint8Array => {
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
        ? [LD_ABS, 0, 0, step.load]
        : "equals" in step
          ? [step.atLeast ? JGE : JEQ, offset(step.then), offset(step.otherwise), step.equals]
          : [RET, 0, 0, step.returns]
    view.setUint16(index * 8, code, true)
    view.setUint8(index * 8 + 2, jt)
    view.setUint8(index * 8 + 3, jf)
    view.setUint32(index * 8 + 4, k >>> 0, true)
  })
  return program
}

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
 * resource limits, priority, I/O priority, processor affinity or scheduling, with EPERM; a system call of another
 * ABI (32-bit, x32), which the filter could not read, gets ENOSYS. Needs no_new_privs, which the starter sets.
 * Answers undefined, or why it could not.
 */
export const refuse = (): string | undefined => {
  const filter = prepare()
  return filter === undefined ? "no system call numbers for this architecture" : Native.installFilter(filter.fprog)
}
