// One process of bench/shell.ts (`bun bench/shell-child.ts MODE BYTES`), alone so its peak RSS is only this: reads
// BYTES of `head -c BYTES /dev/zero` either through the shell producer (MODE "producer": capture, group kill and
// all) or with a bare Bun.spawn reader loop that counts the bytes and keeps nothing (MODE "bare", the floor), and
// prints one JSON line: elapsed ms, bytes seen, RSS before and peak RSS.

import { existsSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { Effect } from "effect"
import { Shell } from "../src/shell/shell"

/** Peak RSS in bytes: the kernel's high-water mark (VmHWM) where /proc has it, else getrusage's maxrss. */
const peakRss = (): number => {
  if (!existsSync("/proc/self/status")) return process.resourceUsage().maxRSS * 1024
  const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))
  if (match === null) throw new Error("VmHWM missing from /proc/self/status")
  return Number(match[1]) * 1024
}

const [mode, bytesArgument] = process.argv.slice(2)
const bytes = Number(bytesArgument)
if ((mode !== "producer" && mode !== "bare") || !Number.isSafeInteger(bytes) || bytes <= 0) {
  throw new Error("usage: bun bench/shell-child.ts producer|bare BYTES")
}
const argv = ["head", "-c", String(bytes), "/dev/zero"]

const bare = async (): Promise<number> => {
  const child = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", detached: true })
  let seen = 0
  const reader = child.stdout.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    seen += value.byteLength
  }
  await child.exited
  return seen
}

const producer = async (): Promise<number> => {
  const shell = Shell.make()
  const result = await Effect.runPromise(shell.run({ argv, cwd: tmpdir() }))
  if (result.exitCode !== 0) throw new Error(`head exited ${result.exitCode}`)
  return result.stdout.seen
}

const rssBase = process.memoryUsage().rss
const started = performance.now()
const seen = mode === "bare" ? await bare() : await producer()
const ms = performance.now() - started
if (seen !== bytes) throw new Error(`read ${seen} bytes, expected ${bytes}`)
process.stdout.write(`${JSON.stringify({ ms, bytes: seen, rssBase, peakRss: peakRss() })}\n`)
