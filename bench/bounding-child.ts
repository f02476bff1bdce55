// One process of bench/bounding.ts (`bun bench/bounding-child.ts BYTES DIRECTORY [SHAPE] [ROOT]`), alone so its
// peak RSS is only this: generates a text of BYTES in memory (numbered 100-byte lines), bounds it once with the
// Output.bound of the source tree at ROOT (default: this one; the benchmark also passes an older tree to compare),
// times a bare Bun.write of the same text for reference, and prints one JSON line of timings and RSS figures.
// SHAPE `string`: a string output, the same text as content and structured; `object`: a shell-like output, the
// text as content and `{ output: text, exitCode }` as structured.

import { existsSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import type { ManagedOutputs as ManagedOutputsModule } from "../src/output/managed-outputs"
import type { Output as OutputModule } from "../src/output/output"

const LINE_BYTES = 100
const BLOCK_LINES = 10_000

/** Peak RSS in bytes: the kernel's high-water mark (VmHWM) where /proc has it, else getrusage's maxrss. */
const peakRss = (): number => {
  if (!existsSync("/proc/self/status")) return process.resourceUsage().maxRSS * 1024
  const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))
  if (match === null) throw new Error("VmHWM missing from /proc/self/status")
  return Number(match[1]) * 1024
}

/** `bytes` of numbered 100-byte lines: a 1 MB block of distinct lines, repeated. */
const generate = (bytes: number): string => {
  const lines: Array<string> = []
  for (let index = 0; index < BLOCK_LINES; index++) {
    lines.push(`line ${String(index).padStart(6, "0")}: ${"the quick brown fox jumps over the lazy dog ".repeat(3)}`.slice(0, LINE_BYTES - 1))
  }
  const block = `${lines.join("\n")}\n`
  const text = block.repeat(Math.ceil(bytes / block.length)).slice(0, bytes)
  // Flatten the rope now, so the bound below is not charged for building the string.
  if (text.indexOf("\u0000") !== -1) throw new Error("generated text holds a NUL")
  return text
}

const [bytesArgument, directory, shape = "string", root = join(import.meta.dir, "..")] = process.argv.slice(2)
const bytes = Number(bytesArgument)
if (!Number.isSafeInteger(bytes) || bytes <= 0 || directory === undefined || (shape !== "string" && shape !== "object")) {
  throw new Error("usage: bun bench/bounding-child.ts BYTES DIRECTORY [string|object] [ROOT]")
}
const { ManagedOutputs } = (await import(join(root, "src/output/managed-outputs.ts"))) as { ManagedOutputs: typeof ManagedOutputsModule }
const { Output } = (await import(join(root, "src/output/output.ts"))) as { Output: typeof OutputModule }

const runtime = ManagedRuntime.make(Output.layer().pipe(Layer.provide(ManagedOutputs.layer({ directory }))))
const output = await runtime.runPromise(
  Effect.gen(function* () {
    return yield* Output.Service
  }),
)

const rssBase = process.memoryUsage.rss()
const text = generate(bytes)
const rssWithText = process.memoryUsage.rss()
const started = performance.now()
// A string output: the settler hands the same string as content and as structured output. A shell-like one: the
// text as content, and a structured object holding it.
const structured = shape === "string" ? text : { output: text, exitCode: 0 }
const bounded = await Effect.runPromise(output.bound({ content: [{ type: "text", text }], structured }))
const boundMs = performance.now() - started
const peak = peakRss()

const kept = bounded.outputs.find((reference) => reference.bytes === bytes)
if (kept === undefined) {
  throw new Error(`expected a managed output of ${bytes} bytes, got ${JSON.stringify(bounded.outputs)}`)
}
const keptPath = join(directory, kept.id)
if (statSync(keptPath).size !== bytes) throw new Error(`managed output ${keptPath} is not ${bytes} bytes`)
const previewBytes = Buffer.byteLength(bounded.content.map((part) => (part.type === "text" ? part.text : "")).join(""))

const rawStarted = performance.now()
await Bun.write(join(directory, "raw-write"), text)
const rawWriteMs = performance.now() - rawStarted

await runtime.dispose()
const outputs = bounded.outputs.length
process.stdout.write(
  `${JSON.stringify({ bytes, boundMs, rawWriteMs, rssBase, rssWithText, peakRss: peak, previewBytes, outputs })}\n`,
)
