// The provider mappings' cost per turn (DESIGN §14): preparing a catalog of 100 tools for each provider, with schemas
// like real tools' (optional properties, numeric bounds, nested structs, a union, a shared class), three ways: every
// definition new (the first turn after the tools were loaded), definitions unchanged but the catalog recaptured (a
// turn after some other tool changed), and the catalog unchanged. Also a settlement as each provider's result
// block. No peer: the figures stand against the target (≤ 1 ms per turn for 100 tools), for a turn after a catalog
// change and for the first turn after the tools loaded. `--base REV` also prepares the first turn with REV's mappings
// (imported from a git worktree of REV), alternating with this tree's run by run, and gives their ratio.

import { cpus, loadavg } from "node:os"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import { Provider } from "../src/provider/provider"
import type { Settlement } from "../src/contract/settlement"
import { Definition } from "../src/tool/definition"
import { Tool } from "../src/tool/tool"
import * as BaseTree from "./base-tree"
import { duration, main, ratio, summarize, type Report } from "./measure"

const TOOLS = 100
const RUNS = 30
const RESULT_CALLS = 10_000
const TARGET_MS = 1

class Range extends Schema.Class<Range>("Range")({ start: Schema.Int, end: Schema.Int }) {}

/** A tool with a schema of the kinds the built-ins and example tools use. */
const makeTool = (index: number): Tool.Any =>
  Tool.make({
    description: `Tool ${index}: does one thing to a file`,
    input: Schema.Struct({
      filePath: Schema.String.annotate({ description: "The file, relative to the Location" }),
      offset: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
      limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 2000 }))),
      mode: Schema.optionalKey(Schema.Literals(["fast", "exact", "fuzzy"])),
      ranges: Schema.optionalKey(Schema.Array(Range)),
      options: Schema.optionalKey(
        Schema.Struct({ ignoreCase: Schema.optionalKey(Schema.Boolean), context: Schema.optionalKey(Schema.Int) }),
      ),
      target: Schema.optionalKey(
        Schema.Union([
          Schema.Struct({ kind: Schema.Literal("line"), line: Schema.Int }),
          Schema.Struct({ kind: Schema.Literal("text"), text: Schema.String }),
        ]),
      ),
    }),
    output: Schema.String,
    execute: () => Effect.succeed(""),
  })

/** A fresh catalog: new tools, so every definition is derived and mapped for the first time. */
const freshCatalog = (run: number | string): ReadonlyArray<Definition.Definition> =>
  Array.from({ length: TOOLS }, (_, index) => Definition.of(makeTool(index), `tool_${run}_${index}`))

const time = (body: () => unknown): number => {
  const started = performance.now()
  body()
  return performance.now() - started
}

/** The process's CPU time spent in `body`, in milliseconds: what the work costs when it shares the machine. */
const cpuTime = (body: () => unknown): number => {
  const started = process.cpuUsage()
  body()
  const used = process.cpuUsage(started)
  return (used.user + used.system) / 1000
}

type Prepare = typeof Provider.prepare

const prepare = (definitions: ReadonlyArray<Definition.Definition>, provider: Provider.Name, mapping: Prepare = Provider.prepare) => {
  const result = mapping(definitions, provider)
  if (result._tag === "Failure") throw new Error(result.failure.message)
  return result.success
}

/** The first turn of a fresh catalog, prepared by `mapping`: the catalog derived, its garbage collected, then timed. */
const firstTurn = (run: number | string, provider: Provider.Name, mapping: Prepare): number => {
  const catalog = freshCatalog(run)
  Bun.gc(true)
  return time(() => prepare(catalog, provider, mapping))
}

const SETTLEMENT: Settlement.Info = {
  tool: "read",
  callID: "call_1",
  status: "success",
  content: [
    { type: "text", text: "line 1\nline 2\n".repeat(100) },
    { type: "file", mime: "image/png", uri: `data:image/png;base64,${"A".repeat(4000)}`, name: "a.png" },
  ],
  structured: null,
  outputs: [],
}

export const measure = async (): Promise<Report> => {
  const rev = BaseTree.revision()
  const tree = rev === undefined ? undefined : BaseTree.checkout(rev)
  try {
    const base: Prepare | undefined =
      tree === undefined ? undefined : (await import(join(tree.root, "src/provider/provider.ts"))).Provider.prepare
    return report(base, rev)
  } finally {
    tree?.remove()
  }
}

const report = (base: Prepare | undefined, rev: string | undefined): Report => {
  const rows: Array<Array<string>> = []
  const baseRows: Array<Array<string>> = []
  const firsts = new Map<Provider.Name, number>()
  const turns = new Map<Provider.Name, number>()
  for (const provider of Provider.NAMES) {
    // Warm the JIT on catalogs that are then thrown away.
    for (let run = 0; run < 5; run++) {
      prepare(freshCatalog(-run - 1), provider)
      if (base !== undefined) prepare(freshCatalog(`warm_base_${run}`), provider, base)
    }
    const first: Array<number> = []
    const baseFirst: Array<number> = []
    const firstCpu: Array<number> = []
    const recaptured: Array<number> = []
    const unchanged: Array<number> = []
    for (let run = 0; run < RUNS; run++) {
      // The base's first turn before this tree's in odd runs, after it in even ones.
      if (base !== undefined && run % 2 === 1) baseFirst.push(firstTurn(`base_${run}`, provider, base))
      const catalog = freshCatalog(run)
      // Deriving the catalog leaves garbage of its own: collected first, so its pause is not counted as mapping.
      Bun.gc(true)
      first.push(time(() => prepare(catalog, provider)))
      if (base !== undefined && run % 2 === 0) baseFirst.push(firstTurn(`base_${run}`, provider, base))
      const again = freshCatalog(run + RUNS)
      Bun.gc(true)
      firstCpu.push(cpuTime(() => prepare(again, provider)))
      const copy = [...catalog]
      recaptured.push(time(() => prepare(copy, provider)))
      unchanged.push(time(() => prepare(copy, provider)))
    }
    let block: unknown
    const results = time(() => {
      for (let call = 0; call < RESULT_CALLS; call++) block = Provider.result(provider, SETTLEMENT)
    })
    if (block === undefined) throw new Error("no result block")
    const summary = summarize(first)
    firsts.set(provider, summary.p50)
    turns.set(provider, summarize(recaptured).p50)
    rows.push([
      provider,
      `${duration(summary.p50)} (${duration(summary.q1)}–${duration(summary.q3)})`,
      duration(summarize(firstCpu).p50),
      duration(summarize(recaptured).p50),
      duration(summarize(unchanged).p50),
      duration(results / RESULT_CALLS),
    ])
    if (base !== undefined) {
      const other = summarize(baseFirst)
      baseRows.push([
        provider,
        duration(summary.p50),
        `${duration(other.p50)} (${duration(other.q1)}–${duration(other.q3)})`,
        ratio(summary.p50 / other.p50),
      ])
    }
  }
  return {
    name: "provider: preparing a turn's tools for a provider",
    about: `${TOOLS} tools with realistic schemas, ${RUNS} runs per provider; median (interquartile range)`,
    tables: [
      {
        title: `per turn of ${TOOLS} tools, and per settlement`,
        columns: ["provider", "every definition new", "(CPU time)", "recaptured", "unchanged", "result block"],
        rows,
      },
      ...(base === undefined
        ? []
        : [
            {
              title: `the first turn (every definition new), this tree against ${rev}, alternating run by run`,
              columns: ["provider", "this tree", `${rev}`, "this tree / base"],
              rows: baseRows,
            },
          ]),
    ],
    targets: Provider.NAMES.flatMap((provider) => [
      {
        measure: `${provider}: a turn of ${TOOLS} tools after a catalog change (definitions mapped before), p50`,
        value: duration(turns.get(provider)!),
        target: `≤ ${TARGET_MS} ms`,
        met: turns.get(provider)! <= TARGET_MS,
      },
      {
        measure: `${provider}: the first turn after ${TOOLS} tools loaded (every definition new), p50`,
        value: duration(firsts.get(provider)!),
        target: `≤ ${TARGET_MS} ms`,
        met: firsts.get(provider)! <= TARGET_MS,
      },
    ]),
    notes: [
      `load average at the end ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores: wall times grow with it, CPU ` +
        "time (from process.cpuUsage, 1 µs resolution, separate runs) much less",
      "every definition new excludes deriving the definitions themselves (JSON Schema from the Effect schemas, " +
        "measured by registry.ts); recaptured reuses each definition's mapping; unchanged reuses the prepared turn",
    ],
  }
}

if (import.meta.main) await main(measure)
