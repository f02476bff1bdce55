// The registry at scale, 10,000 registered tools. Materializing a turn (Settler.materialize, which captures the
// registry): first after registering them all (every definition derived), after a registration change with the
// definitions cache warm, and with nothing changed. Then registering and closing N one-tool scopes for N = 1k to
// 10k, per scope, to show the cost stays linear. No peer: the figures stand against the targets.

import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Layer, ManagedRuntime, Schema, Scope } from "effect"
import { Kernel } from "../src/host/kernel"
import { Registry } from "../src/registry/registry"
import { Settler } from "../src/settlement/settler"
import { Store } from "../src/store/store"
import { Tool } from "../src/tool/tool"
import { cleanup, duration, main, median, progress, ratio, type Report, summarize } from "./measure"

const TOOLS = 10_000
const MATERIALIZE_RUNS = 5
const CHANGES_PER_RUN = 20
const UNCHANGED_PER_RUN = 1_000
const SCOPE_SIZES = [1_000, 2_000, 5_000, 10_000] as const
const SCOPE_RUNS = 5
const TARGET_WARM_MS = 5
/** Per-scope cost at the largest size within this factor of the smallest counts as linear. */
const LINEARITY_FACTOR = 2

/** Tools with their own schemas (a description each), as separately written tool files would have. */
const makeTools = (count: number, prefix: string): Array<Tool.Any> =>
  Array.from({ length: count }, (_, index) =>
    Tool.make({
      description: `Tool ${prefix}${index}: echo text back`,
      input: Schema.Struct({ text: Schema.String.annotate({ description: `Text for ${prefix}${index}` }) }),
      output: Schema.String,
      execute: (input) => Effect.succeed(input.text),
    }),
  )

const nameOf = (index: number) => `tool_${String(index).padStart(5, "0")}`

const timed = <A>(body: () => A): [A, number] => {
  const started = performance.now()
  const result = body()
  return [result, performance.now() - started]
}

interface MaterializeRun {
  readonly make: number
  readonly register: number
  readonly first: number
  readonly afterRegister: Array<number>
  readonly afterClose: Array<number>
  readonly unchanged: Array<number>
}

/** One fresh kernel with 10,000 fresh tools registered in one scope, then the three kinds of materialization. */
const materializeRun = async (dataDir: string, run: number): Promise<MaterializeRun> => {
  const [tools, make] = timed(() => makeTools(TOOLS, `r${run}_`))
  const extras = makeTools(CHANGES_PER_RUN, `r${run}_extra_`)
  const runtime = ManagedRuntime.make(
    Kernel.layer({ store: Store.layerMemory, outputsDirectory: join(dataDir, "outputs") }),
  )
  try {
    const { registry, settler } = await runtime.runPromise(
      Effect.gen(function* () {
        return { registry: yield* Registry.Service, settler: yield* Settler.Service }
      }),
    )
    // A turn's definitions are derived when first read, so each timed materialize reads them, as a host does.
    const materialize = () => {
      const turn = Effect.runSync(settler.materialize())
      if (turn.definitions.length === 0) throw new Error("no definitions")
      return turn
    }
    const scope = Effect.runSync(Scope.make())
    const record = Object.fromEntries(tools.map((tool, index) => [nameOf(index), tool]))
    const [, register] = timed(() => Effect.runSync(registry.tools.register(record).pipe(Scope.provide(scope))))
    const [catalog, first] = timed(materialize)
    if (catalog.definitions.length !== TOOLS) throw new Error(`expected ${TOOLS} definitions, got ${catalog.definitions.length}`)

    const afterRegister: Array<number> = []
    const afterClose: Array<number> = []
    const unchanged: Array<number> = []
    for (const [index, extra] of extras.entries()) {
      // One more tool file registered in its own scope (a new definition), then that scope closed (all cached).
      const overlay = Effect.runSync(Scope.make())
      Effect.runSync(registry.tools.register({ [`extra_${index}`]: extra }).pipe(Scope.provide(overlay)))
      afterRegister.push(timed(materialize)[1])
      Effect.runSync(Scope.close(overlay, Exit.void))
      afterClose.push(timed(materialize)[1])
    }
    for (let index = 0; index < UNCHANGED_PER_RUN; index++) unchanged.push(timed(materialize)[1])
    Effect.runSync(Scope.close(scope, Exit.void))
    return { make, register, first, afterRegister, afterClose, unchanged }
  } finally {
    await runtime.dispose()
  }
}

/** Registers `count` tools, each in its own new scope, then closes every scope; answers both durations. */
const scopesRun = async (pool: ReadonlyArray<Tool.Any>, count: number) => {
  const runtime = ManagedRuntime.make(Registry.layer.pipe(Layer.provideMerge(Registry.applicationLayer)))
  const registry = runtime.runSync(
    Effect.gen(function* () {
      return yield* Registry.Service
    }),
  )
  Bun.gc(true)
  const [scopes, register] = timed(() =>
    Effect.runSync(
      Effect.gen(function* () {
        const scopes: Array<Scope.Closeable> = []
        for (let index = 0; index < count; index++) {
          const scope = yield* Scope.make()
          yield* registry.tools.register({ [nameOf(index)]: pool[index]! }).pipe(Scope.provide(scope))
          scopes.push(scope)
        }
        return scopes
      }),
    ),
  )
  const [, close] = timed(() =>
    Effect.runSync(
      Effect.gen(function* () {
        for (const scope of scopes) yield* Scope.close(scope, Exit.void)
      }),
    ),
  )
  const left = registry.capture().definitions.length
  if (left !== 0) throw new Error(`${left} tools still registered after closing every scope`)
  await runtime.dispose()
  return { register, close }
}

/** Each labelled set of samples as formatted table cells. */
const cases = (entries: ReadonlyArray<readonly [string, ReadonlyArray<number>]>) =>
  entries.map(([label, samples]) => {
    const summary = summarize(samples)
    return {
      label,
      samples: summary.n,
      p50: duration(summary.p50),
      p99: duration(summary.p99),
      extremes: `${duration(summary.min)} / ${duration(summary.max)}`,
    }
  })

export const measure = async (): Promise<Report> => {
  const dataDir = mkdtempSync(join(tmpdir(), "core-bench-registry-"))
  try {
    const runs: Array<MaterializeRun> = []
    for (let run = 0; run < MATERIALIZE_RUNS; run++) {
      progress(`registry: materialize with ${TOOLS} tools, run ${run + 1}/${MATERIALIZE_RUNS}`)
      Bun.gc(true)
      runs.push(await materializeRun(dataDir, run))
    }

    const pool = makeTools(Math.max(...SCOPE_SIZES), "pool_")
    const perScope = new Map<number, { register: Array<number>; close: Array<number> }>(
      SCOPE_SIZES.map((size) => [size, { register: [], close: [] }]),
    )
    await scopesRun(pool, SCOPE_SIZES[0]) // warm-up
    for (let run = 0; run < SCOPE_RUNS; run++) {
      progress(`registry: scopes ${SCOPE_SIZES.join(", ")}, run ${run + 1}/${SCOPE_RUNS}`)
      for (const size of run % 2 === 0 ? SCOPE_SIZES : [...SCOPE_SIZES].reverse()) {
        const { register, close } = await scopesRun(pool, size)
        perScope.get(size)!.register.push(register / size)
        perScope.get(size)!.close.push(close / size)
      }
    }

    const afterRegister = runs.flatMap((run) => run.afterRegister)
    const afterClose = runs.flatMap((run) => run.afterClose)
    const warm = summarize(afterRegister)
    const unchanged = summarize(runs.flatMap((run) => run.unchanged))
    const costOf = (size: number) => median(perScope.get(size)!.register) + median(perScope.get(size)!.close)
    const smallest = SCOPE_SIZES[0]
    const largest = SCOPE_SIZES[SCOPE_SIZES.length - 1]!
    const growth = costOf(largest) / costOf(smallest)

    return {
      name: `registry: ${TOOLS.toLocaleString("en")} tools`,
      about:
        `Settler.materialize on a kernel with ${TOOLS.toLocaleString("en")} registered tools (${MATERIALIZE_RUNS} ` +
        `fresh kernels); then N tools each registered in its own Scope and all scopes closed (${SCOPE_RUNS} runs per N).`,
      tables: [
        {
          title: "materialize with 10,000 tools",
          columns: ["case", "samples", "p50", "p99", "min / max"],
          rows: cases([
            ["first, right after registering (derives every definition)", runs.map((run) => run.first)],
            ["after registering one more tool (1 new definition, rest cached)", afterRegister],
            ["after closing that registration (all definitions cached)", afterClose],
            ["nothing changed since the last one (catalog cached)", runs.flatMap((run) => run.unchanged)],
          ]).map(({ label, samples, p50, p99, extremes }) => [label, String(samples), p50, p99, extremes]),
        },
        {
          title: "setting up 10,000 tools (for scale; not materialize)",
          columns: ["step", "p50", "min / max"],
          rows: cases([
            ["Tool.make x 10,000", runs.map((run) => run.make)],
            ["one register call with 10,000 names", runs.map((run) => run.register)],
          ]).map(({ label, p50, extremes }) => [label, p50, extremes]),
        },
        {
          title: "one scope per tool: register N, then close all (per scope, median of runs)",
          columns: ["N", "register", "close", "total", "total vs N=1k", "register+close, min / max of runs (whole N)"],
          rows: SCOPE_SIZES.map((size) => {
            const { register, close } = perScope.get(size)!
            const totals = register.map((value, index) => (value + close[index]!) * size)
            return [
              size.toLocaleString("en"),
              duration(median(register)),
              duration(median(close)),
              duration(costOf(size)),
              ratio(costOf(size) / costOf(smallest)),
              `${duration(Math.min(...totals))} / ${duration(Math.max(...totals))}`,
            ]
          }),
        },
      ],
      targets: [
        {
          measure: "materialize p50 after a registration change, definitions cached",
          value: duration(warm.p50),
          target: `≤ ${TARGET_WARM_MS} ms`,
          met: warm.p50 <= TARGET_WARM_MS,
        },
        {
          measure: "materialize p50 with nothing changed (catalog cached)",
          value: duration(unchanged.p50),
          target: `≤ ${TARGET_WARM_MS} ms`,
          met: unchanged.p50 <= TARGET_WARM_MS,
        },
        {
          measure: `scope register+close per scope, N=${largest.toLocaleString("en")} vs N=${smallest.toLocaleString("en")}`,
          value: ratio(growth),
          target: `≤ ${ratio(LINEARITY_FACTOR)} (linear)`,
          met: growth <= LINEARITY_FACTOR,
        },
      ],
      notes: [
        `per advertised tool: ${duration(warm.p50 / TOOLS)} to rebuild the catalog with its definition cached, ` +
          `${duration(median(runs.map((run) => run.first)) / TOOLS)} to derive its definition the first time`,
      ],
    }
  } finally {
    cleanup([dataDir])
  }
}

if (import.meta.main) await main(measure)
