// In-process settle of a trivial echo tool (resolve, decode, execute, encode, project, bound, record), per call,
// against the MCP TypeScript SDK calling the same tool through its in-memory client/server pair. core runs with
// the durable SQLite store (what `core exec` and the sidecar use) and with the in-memory store, so the cost of
// durable recording shows, each on the immediate path (what a synchronous, allowed call takes) and on the fiber
// path alone (`Settler.Immediately` off), so what the immediate path saves shows too. Blocks of the sides are
// interleaved in rotating order, with a full GC between blocks, so drift and garbage on the noisy machine land on
// every side alike. `--base REV` adds the SQLite side (and its store stage) of that revision, imported from a
// worktree of it into this process and interleaved with the rest: before and after, in one run.

import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { Effect, Exit, Layer, ManagedRuntime, Schema, Scope } from "effect"
import { z } from "zod"
import { Kernel } from "../src/host/kernel"
import { Output } from "../src/output/output"
import { Registry } from "../src/registry/registry"
import type { Settlement } from "../src/contract/settlement"
import { Settler } from "../src/settlement/settler"
import { SqliteStore } from "../src/store/sqlite-store"
import { Store } from "../src/store/store"
import { Tool } from "../src/tool/tool"
import * as BaseTree from "./base-tree"
import { cleanup, duration, main, median, progress, ratio, type Report, type Summary, summarize } from "./measure"

/** The modules a core side is made of: this tree's, or a base revision's (the same names, from its worktree). */
interface Modules {
  readonly Kernel: typeof Kernel
  readonly Registry: typeof Registry
  readonly Settler: typeof Settler
  readonly SqliteStore: typeof SqliteStore
  readonly Tool: typeof Tool
}

const here: Modules = { Kernel, Registry, Settler, SqliteStore, Tool }

/** A base revision's modules, imported from its worktree at `root`. */
const modulesAt = async (root: string): Promise<Modules> => ({
  Kernel: (await import(join(root, "src/host/kernel.ts"))).Kernel,
  Registry: (await import(join(root, "src/registry/registry.ts"))).Registry,
  Settler: (await import(join(root, "src/settlement/settler.ts"))).Settler,
  SqliteStore: (await import(join(root, "src/store/sqlite-store.ts"))).SqliteStore,
  Tool: (await import(join(root, "src/tool/tool.ts"))).Tool,
})

const WARMUP_CALLS = 2_000
const ROUNDS = 10
const CALLS_PER_BLOCK = 1_000
const TARGET_RATIO = 1
const STAGE_ROUNDS = 5
const STAGE_ITERATIONS = 2_000
const INPUT = { text: "hello" }

interface Side {
  readonly label: string
  /** One call, awaited the way a host awaits it; resolves once the result is in hand. */
  readonly call: (index: number) => Promise<void>
  readonly close: () => Promise<void>
}

interface CoreSide extends Side {
  /** The side's own store and bounding services, for the stage breakdown. */
  readonly store: Store.Interface
  readonly output: Output.Interface
}

/** The installed version of a package, read from its package.json (its exports do not expose it). */
const versionOf = (name: string): string => {
  try {
    return JSON.parse(readFileSync(join(import.meta.dir, "..", "node_modules", name, "package.json"), "utf8")).version
  } catch {
    return "unknown"
  }
}

const echoOf = (modules: Modules) =>
  modules.Tool.make({
    description: "Echo text back",
    input: Schema.Struct({ text: Schema.String }),
    output: Schema.String,
    execute: (input) => Effect.succeed(input.text),
  })

/**
 * core's settler on real layers, with `echo` registered in a scope that stays open until `close`; on the fiber path
 * alone when `immediate` is false.
 */
const coreSide = async (
  label: string,
  storeLayer: Layer.Layer<Store.Service, Store.StoreError>,
  dataDir: string,
  immediate = true,
  modules: Modules = here,
): Promise<CoreSide> => {
  const { Kernel, Registry, Settler } = modules
  const runtime = ManagedRuntime.make(
    Kernel.layer({ store: storeLayer, outputsDirectory: join(dataDir, "outputs") }),
  )
  const registration = Effect.runSync(Scope.make())
  const { turn, store, output } = await runtime.runPromise(
    Effect.gen(function* () {
      yield* (yield* Registry.Service).tools.register({ echo: echoOf(modules) }).pipe(Scope.provide(registration))
      const turn = yield* (yield* Settler.Service).materialize()
      return { turn, store: yield* Store.Service, output: yield* Output.Service }
    }),
  )
  const session = `ses_${label.replace(/\W+/g, "_")}`
  return {
    label,
    store,
    output,
    call: async (index) => {
      const { settlement } = await Effect.runPromise(
        turn.settle({
          sessionID: session,
          agent: "build",
          assistantMessageID: "msg_bench",
          toolCallID: `call_${index}`,
          name: "echo",
          input: INPUT,
        }).pipe(Effect.provideService(Settler.Immediately, immediate)),
      )
      if (settlement.status !== "success") throw new Error(`core settled ${settlement.status}: ${JSON.stringify(settlement)}`)
    },
    close: async () => {
      await Effect.runPromise(Scope.close(registration, Exit.void))
      await runtime.dispose()
    },
  }
}

/** The MCP SDK's in-memory client/server pair with the same tool: a zod input schema and one text part back. */
const mcpSide = async (): Promise<Side> => {
  const server = new McpServer({ name: "bench", version: "1.0.0" })
  server.registerTool(
    "echo",
    { description: "Echo text back", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  )
  const client = new Client({ name: "bench", version: "1.0.0" })
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
  await server.connect(serverTransport)
  await client.connect(clientTransport)
  return {
    label: "MCP SDK (in-memory pair)",
    call: async () => {
      const result = await client.callTool({ name: "echo", arguments: INPUT })
      if (result.isError === true) throw new Error(`MCP call failed: ${JSON.stringify(result)}`)
    },
    close: async () => {
      await client.close()
      await server.close()
    },
  }
}

/** Runs `count` calls of one side, timing each; `next` numbers calls so every core call gets a fresh id. */
const block = async (side: Side, count: number, next: { value: number }, samples?: Array<number>) => {
  for (let i = 0; i < count; i++) {
    const index = next.value++
    const started = performance.now()
    await side.call(index)
    const elapsed = performance.now() - started
    samples?.push(elapsed)
  }
}

/** Median time of one `body`, each timed alone in a loop inside one fiber: a stage's cost without runtime entry. */
const perIteration = async (body: (index: number) => Effect.Effect<unknown, unknown>): Promise<number> => {
  const samples: Array<number> = []
  let next = 0
  for (let round = 0; round <= STAGE_ROUNDS; round++) {
    Bun.gc(true)
    const times = await Effect.runPromise(
      Effect.gen(function* () {
        const times: Array<number> = []
        for (let i = 0; i < STAGE_ITERATIONS; i++) {
          const started = performance.now()
          yield* body(next++)
          times.push(performance.now() - started)
        }
        return times
      }),
    )
    if (round > 0) samples.push(...times) // round 0 warms up
  }
  return median(samples)
}

const recordCycle = (store: Store.Interface, prefix: string) => (index: number) => {
  const key = { location: "/bench", sessionID: "ses_stages", toolCallID: `${prefix}_${index}` }
  const settlement: Settlement.Info = {
    tool: "echo",
    callID: key.toolCallID,
    status: "success",
    content: [{ type: "text", text: INPUT.text }],
    structured: INPUT.text,
    outputs: [],
  }
  // A fresh call's records on the immediate path: the intent, then the settlement (no lookup first: each write is
  // made only where no record is).
  return store.begin(key, "echo", "build").pipe(Effect.andThen(store.settle(key, settlement, { state: "owned" })))
}

/** Each stage of a core call measured alone, to show where the per-call time goes. */
const stages = async (durable: CoreSide, memory: CoreSide, base: CoreSide | undefined) => {
  const entries: Array<number> = []
  for (let round = 0; round <= STAGE_ROUNDS; round++) {
    for (let i = 0; i < STAGE_ITERATIONS; i++) {
      const started = performance.now()
      await Effect.runPromise(Effect.void)
      if (round > 0) entries.push(performance.now() - started)
    }
  }
  const inputJson = Schema.toCodecJson(Schema.Struct({ text: Schema.String }))
  const outputJson = Schema.toCodecJson(Schema.String)
  const options = { errors: "all", reportInput: true } as const
  return {
    entry: median(entries),
    codecs: await perIteration(() =>
      Schema.decodeUnknownEffect(inputJson)(INPUT, options).pipe(
        Effect.andThen((decoded) => Schema.encodeEffect(outputJson)(decoded.text, options)),
      ),
    ),
    bound: await perIteration(() => memory.output.bound({ content: [{ type: "text", text: INPUT.text }], structured: INPUT.text })),
    memoryStore: await perIteration(recordCycle(memory.store, "memory")),
    sqliteStore: await perIteration(recordCycle(durable.store, "sqlite")),
    baseSqliteStore: base === undefined ? Number.NaN : await perIteration(recordCycle(base.store, "sqlite_base")),
  }
}

const row = (label: string, summary: Summary, rounds: ReadonlyArray<number>) => {
  const spread = summarize(rounds)
  return [
    label,
    duration(summary.p50),
    duration(summary.p99),
    duration(summary.mean),
    `${duration(summary.q1)} – ${duration(summary.q3)}`,
    `${duration(summary.min)} / ${duration(summary.max)}`,
    `${duration(spread.min)} – ${duration(spread.max)}`,
  ]
}

export const measure = async (): Promise<Report> => {
  const dataDir = mkdtempSync(join(tmpdir(), "core-bench-settle-"))
  const rev = BaseTree.revision()
  const tree = rev === undefined ? undefined : BaseTree.checkout(rev)
  try {
    const durableSide = await coreSide("core, SQLite store", SqliteStore.layer(join(dataDir, "core.db")), dataDir)
    const memorySide = await coreSide("core, memory store", Store.layerMemory, dataDir)
    const sides: Array<Side> = [
      durableSide,
      memorySide,
      await coreSide("core, SQLite store, fiber path", SqliteStore.layer(join(dataDir, "fibers.db")), dataDir, false),
      await coreSide("core, memory store, fiber path", Store.layerMemory, dataDir, false),
      await mcpSide(),
    ]
    let baseSide: CoreSide | undefined
    if (tree !== undefined) {
      progress(`settle: the SQLite side of ${rev} from its worktree`)
      const modules = await modulesAt(tree.root)
      baseSide = await coreSide(
        `core, SQLite store (${rev})`,
        modules.SqliteStore.layer(join(dataDir, "base.db")),
        dataDir,
        true,
        modules,
      )
      sides.push(baseSide)
    }
    const counters = sides.map(() => ({ value: 0 }))
    const samples = sides.map((): Array<number> => [])
    const roundMedians = sides.map((): Array<number> => [])

    progress(`settle: ${WARMUP_CALLS} warm-up calls per side`)
    for (let part = 0; part < 4; part++) {
      for (const [index, side] of sides.entries()) await block(side, WARMUP_CALLS / 4, counters[index]!)
    }
    for (let round = 0; round < ROUNDS; round++) {
      progress(`settle: round ${round + 1}/${ROUNDS} (${CALLS_PER_BLOCK} calls per side)`)
      for (let offset = 0; offset < sides.length; offset++) {
        const index = (round + offset) % sides.length
        const roundSamples: Array<number> = []
        Bun.gc(true)
        await block(sides[index]!, CALLS_PER_BLOCK, counters[index]!, roundSamples)
        roundMedians[index]!.push(summarize(roundSamples).p50)
        samples[index]!.push(...roundSamples)
      }
    }
    progress("settle: stages of a core call, each alone")
    const stage = await stages(durableSide, memorySide, baseSide)
    for (const side of sides) await side.close()

    const summaries = samples.map(summarize)
    const [durable, memory, durableFibers, memoryFibers, mcp, base] = summaries as [Summary, Summary, Summary, Summary, Summary, Summary?]
    const targets = [
      { label: "core (SQLite) p50 / MCP p50", value: durable.p50 / mcp.p50 },
      { label: "core (SQLite) p99 / MCP p99", value: durable.p99 / mcp.p99 },
      { label: "core (memory) p50 / MCP p50", value: memory.p50 / mcp.p50 },
    ].map(({ label, value }) => ({ measure: label, value: ratio(value), target: `≤ ${ratio(TARGET_RATIO)}`, met: value <= TARGET_RATIO }))

    return {
      name: "settle: trivial tool, in process",
      about:
        `Per call, awaited from JS: core's Settler (${ROUNDS * CALLS_PER_BLOCK} calls, fresh call id each) vs the MCP ` +
        `TypeScript SDK ${versionOf("@modelcontextprotocol/sdk")} (zod ${versionOf("zod")}) Client.callTool over ` +
        `InMemoryTransport; ${WARMUP_CALLS} warm-up calls per side first.`,
      tables: [
        {
          title: "per-call latency",
          columns: ["side", "p50", "p99", "mean", "IQR", "min / max", "p50 of each round"],
          rows: sides.map((side, index) => row(side.label, summaries[index]!, roundMedians[index]!)),
        },
        {
          title: "ratios (core / MCP)",
          columns: ["core store, path", "p50", "p99", "mean"],
          rows: (
            [
              ["SQLite (durable), immediate", durable],
              ["memory, immediate", memory],
              ["SQLite (durable), fiber path", durableFibers],
              ["memory, fiber path", memoryFibers],
              ...(base === undefined ? [] : [[`SQLite (durable), immediate, ${rev}`, base] as const]),
            ] as const
          ).map(([label, side]) => [label, ratio(side.p50 / mcp.p50), ratio(side.p99 / mcp.p99), ratio(side.mean / mcp.mean)]),
        },
        {
          title: "where a core call's time goes (each stage timed alone, p50; approximate)",
          columns: ["stage", "p50"],
          rows: [
            ["entering the runtime from JS (Effect.runPromise)", duration(stage.entry)],
            ["input decode + output encode (JSON codecs, all errors)", duration(stage.codecs)],
            ["Output.bound of the 5-byte result (incl. its span)", duration(stage.bound)],
            ["store begin + settle (intent, settlement), memory", duration(stage.memoryStore)],
            ["store begin + settle (intent, settlement), SQLite", duration(stage.sqliteStore)],
            ...(base === undefined ? [] : [[`store begin + settle (intent, settlement), SQLite, ${rev}`, duration(stage.baseSqliteStore)]]),
            [
              "rest of the immediate path (memory-store p50 minus the above)",
              duration(memory.p50 - stage.entry - stage.codecs - stage.bound - stage.memoryStore),
            ],
          ],
        },
      ],
      targets,
      notes: [
        ...(base === undefined
          ? []
          : [
              `against ${rev} in the same run (its SQLite side interleaved with the others): p50 ${duration(durable.p50)} / ` +
                `${duration(base.p50)} = ${ratio(durable.p50 / base.p50)}, its ratio to MCP ${ratio(base.p50 / mcp.p50)}; ` +
                `store begin + settle ${duration(stage.sqliteStore)} / ${duration(stage.baseSqliteStore)}`,
            ]),
        `durable recording costs ${duration(durable.p50 - memory.p50)} per call at p50 (a started intent and a settlement, ` +
          `each a line appended to the store's journal under its lock, compacted into SQLite in batches)`,
        `the immediate path saves ${duration(durableFibers.p50 - durable.p50)} (SQLite) and ` +
          `${duration(memoryFibers.p50 - memory.p50)} (memory) per call at p50 over the fiber path, measured in the same run`,
        "MCP side: McpServer.registerTool with a zod input schema and no output schema (so no output validation, " +
          "which core does), Client.callTool, JSON-RPC over the SDK's in-memory transport, nothing recorded",
      ],
    }
  } finally {
    tree?.remove()
    cleanup([dataDir])
  }
}

if (import.meta.main) await main(measure)
