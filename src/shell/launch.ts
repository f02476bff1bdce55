// The per-call supervisor's entry: imported first by the compiled CLI's entry, so that `core __supervise PID
// [isolate]` runs the supervisor (./supervisor) before any other module of core is initialised, and never returns
// to them; from source, run directly (`bun launch.ts __supervise PID [isolate]`). Anything else passes straight
// through. With `isolate` and without CAP_SYS_ADMIN, it first enters a user and a mount namespace of its own, so
// that the supervisor can mount paths read-only for its command: the kernel allows that only to a process with a
// single thread, so it happens here, before any module is loaded (from source, loading one starts the transpiler's
// threads), with nothing but Bun's built-in modules.

import type { Namespace } from "./namespace"

const CAP_SYS_ADMIN = 21n
const CLONE_NEWNS = 0x20000
const CLONE_NEWUSER = 0x10000000

/** How the supervisor can make a mount namespace (see ./namespace). */
const enter = async (): Promise<Namespace.Way> => {
  if (process.platform !== "linux") return "none"
  const { readFileSync, writeFileSync } = await import("node:fs")
  const status = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync("/proc/self/status", "latin1"))
  if (status !== null && ((BigInt(`0x${status[1]}`) >> CAP_SYS_ADMIN) & 1n) === 1n) return "mount"
  const { dlopen, FFIType } = await import("bun:ffi")
  let unshare: (flags: number) => number
  try {
    unshare = dlopen("libc.so.6", { unshare: { args: [FFIType.i32], returns: FFIType.i32 } }).symbols.unshare
  } catch {
    return "none"
  }
  const uid = process.getuid?.() ?? 0
  const gid = process.getgid?.() ?? 0
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) !== 0) return "none"
  try {
    writeFileSync("/proc/self/setgroups", "deny")
    writeFileSync("/proc/self/uid_map", `${uid} ${uid} 1`)
    writeFileSync("/proc/self/gid_map", `${gid} ${gid} 1`)
  } catch {
    // In the namespace with no ids mapped, it would act as nobody: better not run at all.
    process.exit(70)
  }
  return "user"
}

if (process.argv[2] === "__supervise") {
  const way = process.argv[4] === "isolate" ? await enter() : "none"
  const { Supervisor } = await import("./supervisor")
  await Supervisor.main(Number(process.argv[3]), way)
}

export {}
