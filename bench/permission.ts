// Permission costs: evaluating 100 resources against 1,000 rules (last match wins, wildcards), by `Rule.evaluate` and
// by the ruleset compiled once as the permission service keeps it, and the share of an in-process settle (memory
// store) taken by the permission assert that allows it, all measured in this run.
// Target: the assert adds under 10% to the settle it guards.

import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Layer, ManagedRuntime, Schema, Scope } from "effect"
import { Kernel } from "../src/host/kernel"
import type { Agent } from "../src/permission/agent"
import { Permission } from "../src/permission/permission"
import { Rule } from "../src/permission/rule"
import { Registry } from "../src/registry/registry"
import { Settler } from "../src/settlement/settler"
import { Approvals } from "../src/store/approvals"
import { Store } from "../src/store/store"
import { Tool } from "../src/tool/tool"
import { cleanup, duration, main, progress, ratio, type Report, summarize } from "./measure"

const RULES = 1_000
const RESOURCES = 100
const ROUNDS = 200
const CALLS = 5_000
const TARGET_SHARE = 0.1
const ASSERT_BATCH = 50

/** 1,000 rules over 20 actions with literal, prefix, suffix and `?` patterns, as a large core.json would have. */
const ruleset = (): Array<Agent.SourcedRule> =>
  Array.from({ length: RULES }, (_, index) => {
    const action = `tool${index % 20}`
    const shapes = [`src/dir${index}/*`, `*.ext${index}`, `cmd${index} *`, `file${index}?.txt`, `exact/path/${index}`]
    return {
      action: index % 97 === 0 ? "*" : action,
      resource: shapes[index % shapes.length]!,
      effect: (["allow", "deny", "ask"] as const)[index % 3]!,
      source: { file: "core.json", path: `permission.${action}` },
    }
  })

const resources = Array.from({ length: RESOURCES }, (_, index) =>
  index % 4 === 0 ? `src/dir${index * 7}/main.ts` : index % 4 === 1 ? `notes.ext${index * 3}` : `cmd${index} --flag value`,
)

/**
 * The same decisions by `Rule.evaluate` over the plain ruleset and by the ruleset compiled once (`Rule.compile`, as
 * the permission service keeps each agent's), in alternating rounds.
 */
const evaluation = (rules: ReadonlyArray<Agent.SourcedRule>) => {
  const compiled = Rule.compile(rules)
  const plain: Array<number> = []
  const precompiled: Array<number> = []
  for (let round = 0; round < ROUNDS; round++) {
    const action = `tool${round % 20}`
    let started = performance.now()
    for (const resource of resources) Rule.evaluate(rules, action, resource)
    plain.push(performance.now() - started)
    started = performance.now()
    for (const resource of resources) compiled.find(action, resource)
    precompiled.push(performance.now() - started)
  }
  return { plain: summarize(plain), compiled: summarize(precompiled) }
}

const echo = Tool.make({
  description: "echo",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(input.text),
})

const measure = async (): Promise<Report> => {
  const dataDir = mkdtempSync(join(tmpdir(), "core-bench-permission-"))
  try {
    progress("permission: evaluating 100 resources against 1,000 rules")
    const rules = ruleset()
    evaluation(rules) // warm the pattern cache and the JIT
    const evaluated = evaluation(rules)

    progress("permission: settle and assert, interleaved")
    const configured = { rules: [{ action: "echo", resource: "*", effect: "allow" as const, source: { file: "core.json", path: "permission.echo" } }], agents: new Map() }
    const permission = Permission.layer({ project: dataDir, configured }).pipe(Layer.provide(Approvals.layerMemory))
    const runtime = ManagedRuntime.make(
      Kernel.layer({ store: Store.layerMemory, outputsDirectory: join(dataDir, "outputs"), permission }),
    )
    try {
      const { turn, assert } = await runtime.runPromise(
        Effect.gen(function* () {
          const scope = yield* Scope.make()
          yield* (yield* Registry.Service).tools.register({ echo }).pipe(Scope.provide(scope))
          const service = yield* Permission.Service
          return {
            turn: yield* (yield* Settler.Service).materialize(),
            assert: service.assert({
              sessionID: "s",
              agent: "build",
              source: { messageID: "m", callID: "c" },
              action: "echo",
              resources: ["*"],
              save: ["*"],
            }),
            close: Scope.close(scope, Exit.void),
          }
        }),
      )
      let id = 0
      const settleOnce = () =>
        turn.settle({ sessionID: "s", agent: "build", assistantMessageID: "m", toolCallID: `c${++id}`, name: "echo", input: { text: "hi" } })
      const settles: Array<number> = []
      const asserts: Array<number> = []
      for (let block = 0; block < 10; block++) {
        for (let call = 0; call < CALLS / 10; call++) {
          const started = performance.now()
          await runtime.runPromise(settleOnce())
          settles.push(performance.now() - started)
        }
        // Asserts run in batches inside one runtime entry, as they do inside a settle (no runPromise each).
        for (let batch = 0; batch < CALLS / 10 / ASSERT_BATCH; batch++) {
          const started = performance.now()
          await runtime.runPromise(
            Effect.gen(function* () {
              for (let index = 0; index < ASSERT_BATCH; index++) yield* assert
            }),
          )
          asserts.push((performance.now() - started) / ASSERT_BATCH)
        }
      }
      const settle = summarize(settles.slice(CALLS / 10))
      const asserted = summarize(asserts.slice(CALLS / 10 / ASSERT_BATCH))
      const share = asserted.p50 / (settle.p50 - asserted.p50)
      return {
        name: "permission",
        about:
          `${RESOURCES} resources decided against ${RULES.toLocaleString("en")} rules by Rule.evaluate and by the rules ` +
          `compiled once, as the permission service decides (${ROUNDS} rounds each, alternating); then ` +
          `${CALLS.toLocaleString("en")} in-process settles of a trivial tool (memory store) and as many allowing asserts, interleaved.`,
        tables: [
          {
            title: "rule evaluation",
            columns: ["case", "p50", "p99", "min / max"],
            rows: [
              [
                `${RESOURCES} resources × ${RULES.toLocaleString("en")} rules, Rule.evaluate`,
                duration(evaluated.plain.p50),
                duration(evaluated.plain.p99),
                `${duration(evaluated.plain.min)} / ${duration(evaluated.plain.max)}`,
              ],
              ["per resource (p50)", duration(evaluated.plain.p50 / RESOURCES), "", ""],
              [
                `${RESOURCES} resources × ${RULES.toLocaleString("en")} rules, compiled once`,
                duration(evaluated.compiled.p50),
                duration(evaluated.compiled.p99),
                `${duration(evaluated.compiled.min)} / ${duration(evaluated.compiled.max)}`,
              ],
              ["per resource (p50)", duration(evaluated.compiled.p50 / RESOURCES), "", ""],
            ],
          },
          {
            title: "settle and the assert inside it",
            columns: ["measure", "p50", "p99", "min / max"],
            rows: [
              ["settle (decode, assert, execute, encode, bound, record)", duration(settle.p50), duration(settle.p99), `${duration(settle.min)} / ${duration(settle.max)}`],
              ["permission assert that allows, alone (per assert, batches of 50)", duration(asserted.p50), duration(asserted.p99), `${duration(asserted.min)} / ${duration(asserted.max)}`],
            ],
          },
        ],
        targets: [
          {
            measure: "assert p50 / (settle p50 without it)",
            value: ratio(share),
            target: `< ${ratio(TARGET_SHARE)}`,
            met: share < TARGET_SHARE,
          },
        ],
        notes: ["the assert runs inside every settle; 'settle without it' is the settle p50 minus the assert p50"],
      }
    } finally {
      await runtime.dispose()
    }
  } finally {
    cleanup([dataDir])
  }
}

if (import.meta.main) await main(measure)
