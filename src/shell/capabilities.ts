export * as Capabilities from "./capabilities"

// The capabilities a sandboxed command keeps when root runs it: the few a developer's build uses, every other one
// dropped from the bounding, effective, permitted and inheritable sets of the process it starts as (its starter,
// once its mounts are made), so no program the command runs can get one back. Run by another user, a command has
// none to drop. Decides nothing: the starter calls it.

import { readFileSync } from "node:fs"
import { Native } from "./native"

const CAP_SETPCAP = 8
const PR_CAPBSET_READ = 23
const LINUX_CAPABILITY_VERSION_3 = 0x20080522

/**
 * Kept, for what a root build does: CHOWN, DAC_OVERRIDE, FOWNER and FSETID (package managers and tar extracting
 * files owned by others, with their modes; root editing files whose mode leaves it out), KILL (a command's own
 * processes after they changed user), SETUID and SETGID (apt's download user, `su`/`runuser` in scripts; no program
 * gains more than root had), NET_BIND_SERVICE (a dev server on port 80). Everything else is dropped: MKNOD (device
 * files), SYS_RAWIO, SYS_MODULE, SYS_ADMIN, SYS_PTRACE, DAC_READ_SEARCH (open by handle, out of any Landlock rule),
 * NET_RAW and NET_ADMIN (sniffing and rerouting the host's traffic), SETPCAP and SETFCAP, and the rest.
 */
export const KEPT: ReadonlyArray<number> = [0, 1, 3, 4, 5, 6, 7, 10]

const keptMask = KEPT.reduce((mask, capability) => mask | (1n << BigInt(capability)), 0n)

let highest: number | undefined

/** The highest capability this kernel knows (read once). */
const last = (): number => {
  if (highest !== undefined) return highest
  try {
    return (highest = Number(readFileSync("/proc/sys/kernel/cap_last_cap", "latin1").trim()))
  } catch {
    return (highest = 63)
  }
}

/**
 * Drops every capability but `KEPT` from the calling thread: the bounding set first (it needs SETPCAP, dropped last),
 * then the effective and permitted sets; the inheritable set is emptied. Answers undefined, or why it could not do all of it (then the
 * thread holds no capability it did not hold before). With `apply` false, it only reads them (a warm-up, so that
 * the real one, on a command's path, runs compiled code).
 */
export const drop = (apply = true): string | undefined => {
  if (Native.numbers === undefined) return "no system call numbers for this architecture"
  let problem: string | undefined
  const option = apply ? Native.PR_CAPBSET_DROP : PR_CAPBSET_READ
  for (let capability = 0, top = last(); capability <= top; capability++) {
    if (KEPT.includes(capability) || capability === CAP_SETPCAP) continue
    // EPERM: this thread cannot change its bounding set (it holds no SETPCAP: not root); the sets below still go.
    const failed = Native.prctl(option, capability)
    if (failed !== 0 && apply) problem ??= `prctl(PR_CAPBSET_DROP, ${capability}) failed (errno ${failed})`
  }
  Native.prctl(option, CAP_SETPCAP)
  // struct __user_cap_header_struct { u32 version; int pid }, then two struct __user_cap_data_struct { u32
  // effective, permitted, inheritable }: the low 32 capabilities, then the high ones.
  const header = new DataView(new ArrayBuffer(8))
  header.setUint32(0, LINUX_CAPABILITY_VERSION_3, true)
  const data = new Uint8Array(24)
  const view = new DataView(data.buffer)
  const headerAddress = Native.address(new Uint8Array(header.buffer))
  const got = Native.syscall(Native.numbers.capget, headerAddress, Native.address(data))
  if (got < 0) return `capget failed (errno ${-got})`
  for (let half = 0; half < 2; half++) {
    const mask = Number((keptMask >> BigInt(32 * half)) & 0xffffffffn)
    for (const field of [0, 4]) view.setUint32(half * 12 + field, (view.getUint32(half * 12 + field, true) & mask) >>> 0, true)
    // Inheritable: none. Nothing a command runs needs one, and for root it would pass the bounding set by.
    view.setUint32(half * 12 + 8, 0, true)
  }
  if (!apply) return undefined
  const set = Native.syscall(Native.numbers.capset, headerAddress, Native.address(data))
  return set < 0 ? `capset failed (errno ${-set})` : problem
}
