// Plugins (DESIGN §12). What a hook adds to a settle: an echo settled in process (in-memory store, the strictest
// case, where the pipeline is cheapest) with no-op hooks (one before, one after, one of each) against the same
// pipeline without hooks. Made measurable on a loaded machine by pairing: each of many rounds runs short blocks in
// A B B A order (baseline, hooked, hooked, baseline), so drift within a round cancels, and the figure is the median
// of the rounds' ratios, with a distribution-free 95% interval for it. A second pipeline without hooks, paired the
// same way (A/A), gives the noise floor. Target: each hook under 5% of a settle. Then installing 100 plugin files
// into a fresh Location (import, install, register: time and resident memory), beside loading 100 tool files of
// the same tools through discovery, the peer a plugin replaces.

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Layer, ManagedRuntime, Schema, Scope } from "effect"
import { Kernel } from "../src/host/kernel"
import { Discovery } from "../src/location/discovery"
import { Permission } from "../src/permission/permission"
import { Plugins } from "../src/plugin/plugins"
import { Registry } from "../src/registry/registry"
import { Hooks } from "../src/settlement/hooks"
import { Settler } from "../src/settlement/settler"
import { Approvals } from "../src/store/approvals"
import { Store } from "../src/store/store"
import * as Internal from "../src/tool/internal"
import { Tool } from "../src/tool/tool"
import { Projection } from "../src/settlement/projection"
import { cleanup, duration, main, megabytes, median, progress, ratio, type Report, summarize } from "./measure"

const WARMUP_CALLS = 2_000
/** Paired rounds per hooked variant; each runs 4 blocks (A B B A). */
const ROUNDS = 400
const CALLS_PER_BLOCK = 25
const TARGET_PER_HOOK = 0.05
const ISOLATED_ITERATIONS = 50_000
const PLUGINS = 100
const INSTALL_RUNS = 5

const echo = Tool.make({
  description: "Echo text back",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(input.text),
})

interface Variant {
  readonly label: string
  readonly hooks: number
  readonly call: (index: number) => Promise<void>
  readonly close: () => Promise<void>
}

/** A kernel with `echo` registered and `entries` added to its hook table. */
const variant = async (label: string, entries: ReadonlyArray<Hooks.Entry>, dataDir: string): Promise<Variant> => {
  const runtime = ManagedRuntime.make(Kernel.layer({ store: Store.layerMemory, outputsDirectory: join(dataDir, label.replace(/\W+/g, "_")) }))
  const registration = Effect.runSync(Scope.make())
  const turn = await runtime.runPromise(
    Effect.gen(function* () {
      yield* (yield* Registry.Service).tools.register({ echo }).pipe(Scope.provide(registration))
      const table = yield* Hooks.Current
      for (const entry of entries) table!.add(entry)
      return yield* (yield* Settler.Service).materialize()
    }),
  )
  const session = `ses_${label.replace(/\W+/g, "_")}`
  return {
    label,
    hooks: entries.reduce((count, entry) => count + Object.keys(entry.hooks).length, 0),
    call: async (index) => {
      const { settlement } = await Effect.runPromise(
        turn.settle({ sessionID: session, agent: "build", assistantMessageID: "msg", toolCallID: `call_${index}`, name: "echo", input: { text: "hi" } }),
      )
      if (settlement.status !== "success") throw new Error(`${label}: ${JSON.stringify(settlement)}`)
    },
    close: async () => {
      await Effect.runPromise(Scope.close(registration, Exit.void))
      await runtime.dispose()
    },
  }
}

const BEFORE: Hooks.Entry = { plugin: "before", hooks: { "tool.execute.before": () => Effect.void } }
const AFTER: Hooks.Entry = { plugin: "after", hooks: { "tool.execute.after": () => Effect.void } }

/**
 * What the hooks' own code costs, apart from the rest of a settle and from the machine's noise: the before and
 * after steps of the settler with no hook and with one no-op hook, run synchronously, per call (median of rounds).
 */
const isolatedCosts = () => {
  const record = Internal.get(echo)!
  const empty = new Hooks.Chain()
  const one = new Hooks.Chain()
  one.add(BEFORE)
  one.add(AFTER)
  const call = { input: { text: "hi" }, output: "hi", content: [{ type: "text" as const, text: "hi" }] }
  const bodies = {
    beforeEmpty: () => Effect.runSync(Hooks.before(empty, "echo", record, call.input)),
    beforeOne: () => Effect.runSync(Hooks.before(one, "echo", record, call.input)),
    afterEmpty: () => Effect.runSync(Hooks.after(empty, "echo", call, Projection.decodeContent)),
    afterOne: () => Effect.runSync(Hooks.after(one, "echo", call, Projection.decodeContent)),
  }
  const rounds = new Map(Object.keys(bodies).map((key) => [key, [] as Array<number>]))
  for (const body of Object.values(bodies)) for (let i = 0; i < ISOLATED_ITERATIONS; i++) body()
  // Round-robin, so drift and garbage land on every body alike.
  for (let round = 0; round < 15; round++) {
    for (const [key, body] of Object.entries(bodies)) {
      const start = performance.now()
      for (let i = 0; i < ISOLATED_ITERATIONS / 5; i++) body()
      rounds.get(key)!.push((performance.now() - start) / (ISOLATED_ITERATIONS / 5))
    }
  }
  const [beforeEmpty, beforeOne, afterEmpty, afterOne] = ["beforeEmpty", "beforeOne", "afterEmpty", "afterOne"].map((key) =>
    median(rounds.get(key)!),
  ) as [number, number, number, number]
  return { before: beforeOne - beforeEmpty, after: afterOne - afterEmpty }
}

/** The median of `ratios` and a distribution-free 95% interval for it (order statistics around the middle). */
const medianInterval = (ratios: ReadonlyArray<number>) => {
  const sorted = [...ratios].sort((a, b) => a - b)
  const half = 0.98 * Math.sqrt(sorted.length)
  const at = (index: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(index)))]!
  return { median: median(sorted), low: at(sorted.length / 2 - half), high: at(sorted.length / 2 + half) }
}

/**
 * Per hooked variant, the ratio of its per-call time to the baseline's in each round (A B B A blocks, so linear
 * drift within the round cancels), in rotating variant order; and the baseline's own per-call times.
 */
const settleCosts = async (dataDir: string) => {
  const baseline = await variant("no hooks", [], dataDir)
  const variants = [
    await variant("no hooks (A/A)", [], dataDir),
    await variant("one before hook", [BEFORE], dataDir),
    await variant("one after hook", [AFTER], dataDir),
    await variant("before + after", [BEFORE, AFTER], dataDir),
  ]
  let counter = 0
  for (const side of [baseline, ...variants]) for (let i = 0; i < WARMUP_CALLS; i++) await side.call(counter++)
  const block = async (side: Variant) => {
    const start = performance.now()
    for (let i = 0; i < CALLS_PER_BLOCK; i++) await side.call(counter++)
    return (performance.now() - start) / CALLS_PER_BLOCK
  }
  const ratios = new Map(variants.map((side) => [side.label, [] as Array<number>]))
  const base: Array<number> = []
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 50 === 0) {
      progress(`settle rounds ${round + 1}-${Math.min(ROUNDS, round + 50)}/${ROUNDS}`)
      Bun.gc(true)
    }
    for (let offset = 0; offset < variants.length; offset++) {
      const side = variants[(round + offset) % variants.length]!
      const a1 = await block(baseline)
      const b1 = await block(side)
      const b2 = await block(side)
      const a2 = await block(baseline)
      ratios.get(side.label)!.push((b1 + b2) / (a1 + a2))
      base.push(a1, a2)
    }
  }
  for (const side of [baseline, ...variants]) await side.close()
  return { variants, ratios, base }
}

const pluginSource = (index: number) => `import { Plugin, Tool } from "@core/tool"
import { Effect, Schema } from "effect"
export default Plugin.make({
  install: Effect.gen(function* () {
    const tools = yield* Plugin.Tools
    const held = yield* Effect.acquireRelease(Effect.sync(() => ({ opened: ${index} })), () => Effect.void)
    yield* tools.register({
      p${index}: Tool.make({
        description: "Plugin tool ${index}",
        input: Schema.Struct({ text: Schema.String }),
        output: Schema.String,
        execute: (input) => Effect.succeed(input.text + held.opened),
      }),
    })
  }),
})
`

const toolSource = (index: number) => `import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"
export default Tool.make({
  description: "Tool file ${index}",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(input.text + ${index}),
})
`

/** A fresh Location with `count` files in `folder`, each from `source`. */
const locationWith = (root: string, folder: string, count: number, source: (index: number) => string): string => {
  const directory = mkdtempSync(join(root, "loc-"))
  mkdirSync(join(directory, folder))
  for (let index = 0; index < count; index++) {
    writeFileSync(join(directory, folder, `f${String(index).padStart(3, "0")}.ts`), source(index))
  }
  return directory
}

/** Installs PLUGINS plugin files (or loads as many tool files) into a fresh registry: time and RSS growth. */
const loadOnce = async (root: string, kind: "plugins" | "tools") => {
  const directory = locationWith(root, kind, PLUGINS, kind === "plugins" ? pluginSource : toolSource)
  const runtime = ManagedRuntime.make(
    Layer.mergeAll(Registry.layer, Permission.layer({ project: directory }).pipe(Layer.provide(Approvals.layerMemory)), Hooks.layer()).pipe(
      Layer.provideMerge(Registry.applicationLayer),
    ),
  )
  await runtime.runPromise(Effect.void)
  Bun.gc(true)
  const rss = process.memoryUsage().rss
  const scope = Effect.runSync(Scope.make())
  const start = performance.now()
  const count = await runtime.runPromise(
    Effect.gen(function* () {
      const registry = yield* Registry.Service
      if (kind === "tools") {
        const { loaded, diagnostics } = yield* Discovery.load(directory, registry.tools).pipe(Scope.provide(scope))
        if (diagnostics.length > 0) throw new Error(diagnostics[0]!.message)
        return loaded.length
      }
      const services: Plugins.Services = {
        directory,
        tools: registry.tools,
        permission: yield* Permission.Service,
        hooks: (yield* Hooks.Current)!,
      }
      const plugins = Plugins.make(services, undefined, scope)
      const diagnostics = yield* plugins.installAll
      if (diagnostics.length > 0) throw new Error(diagnostics[0]!.message)
      return plugins.installed().length
    }),
  )
  const ms = performance.now() - start
  if (count !== PLUGINS) throw new Error(`${kind}: ${count} loaded`)
  Bun.gc(true)
  const grown = process.memoryUsage().rss - rss
  const closeStart = performance.now()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  const closeMs = performance.now() - closeStart
  await runtime.dispose()
  return { ms, rss: grown, closeMs }
}

const measure = async (): Promise<Report> => {
  const dataDir = mkdtempSync(join(tmpdir(), "core-bench-plugins-"))
  try {
    const { variants, ratios, base } = await settleCosts(dataDir)
    const isolated = isolatedCosts()
    const rows = variants.map((side) => {
      const interval = medianInterval(ratios.get(side.label)!)
      const percent = (value: number) => `${((value - 1) * 100).toFixed(1)}%`
      const per = (value: number) => (side.hooks === 0 ? "" : `${(((value - 1) / side.hooks) * 100).toFixed(1)}%`)
      return {
        side,
        interval,
        row: [side.label, percent(interval.median), `${percent(interval.low)} … ${percent(interval.high)}`, per(interval.median), per(interval.high)],
      }
    })
    const noise = rows.find((row) => row.side.hooks === 0)!.interval
    const noiseFloor = Math.max(Math.abs(noise.low - 1), Math.abs(noise.high - 1))

    const installs: Array<{ ms: number; rss: number; closeMs: number }> = []
    const loads: Array<{ ms: number; rss: number; closeMs: number }> = []
    for (let run = 0; run < INSTALL_RUNS; run++) {
      progress(`installing ${PLUGINS} plugins, run ${run + 1}/${INSTALL_RUNS}`)
      // Alternated, so drift lands on both.
      loads.push(await loadOnce(dataDir, "tools"))
      installs.push(await loadOnce(dataDir, "plugins"))
    }
    const installMs = median(installs.map((run) => run.ms))
    const loadMs = median(loads.map((run) => run.ms))
    const hooked = rows.filter((row) => row.side.hooks > 0)
    const perHook = Math.max(...hooked.map((row) => (row.interval.median - 1) / row.side.hooks))
    const perHookHigh = Math.max(...hooked.map((row) => (row.interval.high - 1) / row.side.hooks))
    const baseSummary = summarize(base)
    const settleP50 = baseSummary.p50
    const settleBest = baseSummary.min
    const isolatedWorst = Math.max(isolated.before, isolated.after)

    return {
      name: "plugins: hooks in a settle, installing 100 plugins",
      about:
        `An echo settled in process on the in-memory store, with no-op hooks against the same pipeline without ` +
        `hooks: ${ROUNDS} paired rounds per variant, each of 4 blocks of ${CALLS_PER_BLOCK} calls in A B B A order; the ` +
        `figure is the median of the rounds' ratios with a 95% interval; an A/A pair of two pipelines without hooks ` +
        `gives the noise floor. Then ${PLUGINS} plugin files ` +
        `installed into a fresh Location (checked import, install, register; one resource each) beside ${PLUGINS} ` +
        `tool files of the same tools loaded by discovery (median of ${INSTALL_RUNS} runs, fresh files each).`,
      tables: [
        {
          title: `settle per call over no hooks (baseline p50 ${duration(settleP50)}, fastest block ${duration(settleBest)})`,
          columns: ["variant", "median of paired ratios", "95% interval", "per hook", "per hook, upper bound"],
          rows: rows.map((row) => row.row),
        },
        {
          title: "one no-op hook's own cost, isolated (synchronous, per call)",
          columns: ["hook", "cost", "share of a settle p50", "share of the fastest settle block"],
          rows: (["before", "after"] as const).map((hook) => [
            `tool.execute.${hook}`,
            duration(isolated[hook]),
            `${((isolated[hook] / settleP50) * 100).toFixed(1)}%`,
            `${((isolated[hook] / settleBest) * 100).toFixed(1)}%`,
          ]),
        },
        {
          title: `${PLUGINS} files into a fresh Location`,
          columns: ["what", "time p50", "per file", "RSS growth p50", "close all p50"],
          rows: [
            [`${PLUGINS} plugins installed`, duration(installMs), duration(installMs / PLUGINS), megabytes(median(installs.map((run) => run.rss))), duration(median(installs.map((run) => run.closeMs)))],
            [`${PLUGINS} tool files loaded`, duration(loadMs), duration(loadMs / PLUGINS), megabytes(median(loads.map((run) => run.rss))), duration(median(loads.map((run) => run.closeMs)))],
          ],
        },
      ],
      targets: [
        {
          measure: "one hook's isolated cost / the fastest settle block without hooks, worst hook",
          value: `${((isolatedWorst / settleBest) * 100).toFixed(1)}%`,
          target: `< ${TARGET_PER_HOOK * 100}%`,
          met: isolatedWorst / settleBest < TARGET_PER_HOOK,
        },
        {
          measure: `settle cost per hook, worst variant, median of ${ROUNDS} paired rounds (in-memory store)`,
          value: `${(perHook * 100).toFixed(1)}% (95% upper bound ${(perHookHigh * 100).toFixed(1)}%, A/A noise floor ±${(noiseFloor * 100).toFixed(1)}%)`,
          target: `< ${TARGET_PER_HOOK * 100}%`,
          met: perHook < TARGET_PER_HOOK,
        },
      ],
      notes: [
        `installing ${PLUGINS} plugins vs loading ${PLUGINS} tool files: ${ratio(installMs / loadMs)} the time`,
        "a tool.execute.before hook also costs one read of the call's record before it runs (a recorded call runs no " +
          "hook, as on the fiber path): most of its share here, where the isolated cost above leaves it out",
        "with the durable SQLite store (core exec, core serve) a settle costs more, and so does that read: an after " +
          "hook's share is smaller there, a before hook's about the same",
      ],
    }
  } finally {
    cleanup([dataDir])
  }
}

if (import.meta.main) await main(measure)
