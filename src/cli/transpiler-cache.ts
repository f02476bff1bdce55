// Turns off Bun's runtime transpiler cache for this process, before anything is transpiled at run time: imported
// first by ./dispatch, so every command but the few ./main answers (which transpile nothing) runs without it.
//
// Bun keeps the output of each module of 50 KB or more that it transpiles at run time (a Location's tool files and
// what they import, core's own search and checkpoint threads, started from source) in a cache folder, and loads an
// entry back when the source's hash and length match, without checking the code it holds. The folder is
// `$XDG_CACHE_HOME/bun/@t@`, else `~/.bun/install/cache/@t@`, else the system's temporary folder: places a command
// may write wherever XDG_CACHE_HOME points into the temporary folder or a granted one, or HOME is unset. A command
// that wrote an entry for the search thread's source had its code run in core, outside the sandbox, at the next
// grep. Bun reads BUN_RUNTIME_TRANSPILER_CACHE_PATH ("0": no cache) from the C environment when it first looks for
// the folder, which `process.env` does not reach: set with libc's setenv.

import { dlopen, FFIType, ptr } from "bun:ffi"

const NAME = Buffer.from("BUN_RUNTIME_TRANSPILER_CACHE_PATH\0")
const OFF = Buffer.from("0\0")

for (const library of ["libc.so.6", "libc.so", "libSystem.B.dylib"]) {
  try {
    const opened = dlopen(library, { setenv: { args: [FFIType.ptr, FFIType.ptr, FFIType.i32], returns: FFIType.i32 } })
    opened.symbols.setenv(ptr(NAME), ptr(OFF), 1)
    opened.close()
    break
  } catch {
    // the next name: glibc, musl and macOS name it differently
  }
}
