// Turns Bun's runtime transpiler cache off for this process before anything is transpiled at run time (imported first
// by ./dispatch). Bun loads a cached module back by its source's hash alone, from a folder a command may be able to
// write (`$XDG_CACHE_HOME/bun/@t@` in the temporary folder): a planted entry ran inside core, outside the sandbox.
// Bun reads BUN_RUNTIME_TRANSPILER_CACHE_PATH from the C environment, which `process.env` does not reach: libc's
// setenv sets it, and a command's environment stays as it was.

import { dlopen, FFIType, ptr } from "bun:ffi"

const NAME = Buffer.from("BUN_RUNTIME_TRANSPILER_CACHE_PATH\0")
const OFF = Buffer.from("0\0")

let off = false
for (const library of ["libc.so.6", "libc.so", "libSystem.B.dylib"]) {
  try {
    const opened = dlopen(library, { setenv: { args: [FFIType.ptr, FFIType.ptr, FFIType.i32], returns: FFIType.i32 } })
    off = opened.symbols.setenv(ptr(NAME), ptr(OFF), 1) === 0
    opened.close()
    break
  } catch {
    // the next name: glibc, musl and macOS name it differently
  }
}
// Said, not hidden: where it stays on, a person can turn it off from outside.
if (!off && process.env.BUN_RUNTIME_TRANSPILER_CACHE_PATH !== "0") {
  process.stderr.write(
    "core: warning: could not turn off Bun's transpiler cache (no libc to set BUN_RUNTIME_TRANSPILER_CACHE_PATH); " +
      "start core with BUN_RUNTIME_TRANSPILER_CACHE_PATH=0 in its environment.\n",
  )
}
