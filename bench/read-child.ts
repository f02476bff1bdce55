// One process of bench/read.ts (`bun bench/read-child.ts MODE FILE OFFSET`), alone so its peak RSS is only this.
// MODE "read" settles one call of the read built-in (offset OFFSET) in a kernel whose Location is the file's
// directory; MODE "whole" is the naive reference, reading the whole file as one string and numbering one page of
// it. Prints one JSON line: the time of the read, the RSS before it and the peak RSS (VmHWM) after it.

import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { Builtins } from "../src/builtin/builtins"
import { Kernel } from "../src/host/kernel"
import { Location } from "../src/location/location"
import { Permission } from "../src/permission/permission"
import { Settler } from "../src/settlement/settler"
import { Shell } from "../src/shell/shell"
import { Approvals } from "../src/store/approvals"
import { Store } from "../src/store/store"

/** Peak RSS in bytes: the kernel's high-water mark (VmHWM) where /proc has it, else getrusage's maxrss. */
const peakRss = (): number => {
  if (!existsSync("/proc/self/status")) return process.resourceUsage().maxRSS * 1024
  const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))
  if (match === null) throw new Error("VmHWM missing from /proc/self/status")
  return Number(match[1]) * 1024
}

const [mode, file, offsetArgument] = process.argv.slice(2)
const offset = Number(offsetArgument)
if ((mode !== "read" && mode !== "whole") || file === undefined || !Number.isSafeInteger(offset) || offset < 1) {
  throw new Error("usage: bun bench/read-child.ts read|whole FILE OFFSET")
}

const directory = dirname(file)
const permission = Permission.layer({ project: directory, configured: { rules: [], agents: new Map() } }).pipe(
  Layer.provide(Approvals.layerMemory),
)
const outputs = mkdtempSync(join(tmpdir(), "core-bench-read-out-"))
const kernel = Kernel.layer({
  store: Store.layerMemory,
  outputsDirectory: join(outputs, "outputs"),
  permission,
})
const runtime = ManagedRuntime.make(
  Location.layer(directory, Builtins.layer.pipe(Layer.provide(Shell.layer()))).pipe(Layer.provideMerge(kernel)),
)
const turn = await runtime.runPromise(
  Effect.gen(function* () {
    return yield* (yield* Settler.Service).materialize()
  }),
)
// Warm the settle path on a tiny call, so the measured one pays only for reading.
await runtime.runPromise(
  turn.settle({ sessionID: "s", agent: "build", assistantMessageID: "m", toolCallID: "warm", name: "read", input: { filePath: ".", limit: 1 } }),
)
Bun.gc(true)

const rssBase = process.memoryUsage.rss()
const started = performance.now()
let lines: number
if (mode === "read") {
  const { settlement } = await runtime.runPromise(
    turn.settle({
      sessionID: "s",
      agent: "build",
      assistantMessageID: "m",
      toolCallID: "read",
      name: "read",
      input: { filePath: basename(file), offset },
    }),
  )
  if (settlement.status !== "success") throw new Error(`read failed: ${JSON.stringify(settlement.error)}`)
  // The page and its structured form together may pass the model-output bound, which then keeps the structured
  // value as a managed output (structured: null); the page's text, head and tail, still shows its line numbers.
  const structured = settlement.structured as { readonly lines: number } | null
  lines =
    structured?.lines ??
    settlement.content.map((part) => (part.type === "text" ? part.text : "")).join("\n").match(/^\d+: /gm)?.length ??
    0
} else {
  const text = await Bun.file(file).text()
  const page = text.split("\n").slice(offset - 1, offset - 1 + 1_998)
  lines = page.map((line, index) => `${offset + index}: ${line}`).join("\n").split("\n").length
}
const readMs = performance.now() - started
const peak = peakRss()
await runtime.dispose()
rmSync(outputs, { recursive: true, force: true })
process.stdout.write(`${JSON.stringify({ readMs, rssBase, peakRss: peak, lines })}\n`)
