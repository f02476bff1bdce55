// Swaps two paths (renameat2 with RENAME_EXCHANGE) over and over, as a command running beside another may, until
// its stdin closes: `bun flip-child.ts A B`. Prints "flipping" once it has swapped them the first time.

import { dlopen, FFIType, ptr } from "bun:ffi"

const [a, b] = process.argv.slice(2) as [string, string]
const SYS_RENAMEAT2 = process.arch === "arm64" ? 276 : 316
const AT_FDCWD = -100
const RENAME_EXCHANGE = 2
const { symbols } = dlopen("libc.so.6", {
  syscall: { args: [FFIType.i64, FFIType.i64, FFIType.ptr, FFIType.i64, FFIType.ptr, FFIType.i64], returns: FFIType.i64 },
})
const from = Buffer.from(`${a}\0`)
const to = Buffer.from(`${b}\0`)
let open = true
process.stdin.on("close", () => (open = false))
process.stdin.on("end", () => (open = false))
process.stdin.resume()
const swap = () => symbols.syscall(SYS_RENAMEAT2, AT_FDCWD, ptr(from), AT_FDCWD, ptr(to), RENAME_EXCHANGE)
if (swap() !== 0n) throw new Error("renameat2 failed")
console.log("flipping")
// In bursts of an even number, letting the event loop see stdin close between them; then once more: as they were.
while (open) {
  for (let index = 0; index < 2_000; index++) swap()
  await Bun.sleep(0)
}
swap()
