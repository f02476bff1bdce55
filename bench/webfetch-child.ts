// One process of bench/webfetch.ts (`bun bench/webfetch-child.ts MODE URL CALLS`), alone so its peak RSS is only
// this. MODE "webfetch" settles calls of the webfetch built-in (markdown) in a kernel whose rules open 127.0.0.1;
// MODE "bare" is the peer: `fetch` the URL and convert the same page with the same library (turndown, with its own
// DOM parse). One warm-up call of each, then CALLS timed calls. Prints one JSON line: each call's time, the RSS
// before the timed calls and the peak RSS (VmHWM) after them, and the size of the markdown.

import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import TurndownService from "turndown"
import { Builtins } from "../src/builtin/builtins"
import { Kernel } from "../src/host/kernel"
import { Location } from "../src/location/location"
import { Permission } from "../src/permission/permission"
import { Settler } from "../src/settlement/settler"
import { Shell } from "../src/shell/shell"
import { Approvals } from "../src/store/approvals"
import { Store } from "../src/store/store"

const peakRss = (): number => {
  if (!existsSync("/proc/self/status")) return process.resourceUsage().maxRSS * 1024
  const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))
  if (match === null) throw new Error("VmHWM missing from /proc/self/status")
  return Number(match[1]) * 1024
}

const [mode, url, callsArgument] = process.argv.slice(2)
const calls = Number(callsArgument)
if ((mode !== "webfetch" && mode !== "bare") || url === undefined || !Number.isSafeInteger(calls) || calls < 1) {
  throw new Error("usage: bun bench/webfetch-child.ts webfetch|bare URL CALLS")
}

const makeCall = async (): Promise<() => Promise<number>> => {
  if (mode === "bare") {
    const turndown = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" })
    turndown.remove(["script", "style"])
    return async () => {
      const response = await fetch(url)
      return turndown.turndown(await response.text()).length
    }
  }
  const directory = mkdtempSync(join(tmpdir(), "core-bench-webfetch-"))
  made.push(directory)
  const permission = Permission.layer({
    project: directory,
    configured: {
      rules: [{ action: "webfetch", resource: "http://127.0.0.1:*", effect: "allow", source: { file: "bench", path: "rules[0]" } }],
      agents: new Map(),
    },
  }).pipe(Layer.provide(Approvals.layerMemory))
  const kernel = Kernel.layer({ store: Store.layerMemory, outputsDirectory: join(directory, "outputs"), permission })
  const runtime = ManagedRuntime.make(
    Location.layer(directory, Builtins.layer.pipe(Layer.provide(Shell.layer()))).pipe(Layer.provideMerge(kernel)),
  )
  const turn = await runtime.runPromise(Effect.gen(function* () {
    return yield* (yield* Settler.Service).materialize()
  }))
  let id = 0
  return async () => {
    const { settlement } = await runtime.runPromise(
      turn.settle({ sessionID: "s", agent: "build", assistantMessageID: "m", toolCallID: `c${id++}`, name: "webfetch", input: { url } }),
    )
    if (settlement.status !== "success") throw new Error(`webfetch failed: ${JSON.stringify(settlement.error)}`)
    return (settlement.structured as { content?: string } | null)?.content?.length ?? settlement.outputs[0]?.bytes ?? 0
  }
}

/** The directories this run made, removed once it is measured. */
const made: Array<string> = []
const call = await makeCall()
await call()
Bun.gc(true)
const rssBase = process.memoryUsage.rss()
const times: Array<number> = []
let markdownChars = 0
for (let index = 0; index < calls; index++) {
  const started = performance.now()
  markdownChars = await call()
  times.push(performance.now() - started)
}
for (const directory of made) rmSync(directory, { recursive: true, force: true })
process.stdout.write(`${JSON.stringify({ times, rssBase, peakRss: peakRss(), markdownChars })}\n`)
