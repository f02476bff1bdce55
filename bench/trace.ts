// What tracing costs a settle: the trivial echo tool settled in process through core's Settler, with no tracer
// (none, the default: no OTEL_EXPORTER_OTLP_ENDPOINT), and with spans exported over OTLP/HTTP protobuf to a local
// receiver in another process (exporting). Made measurable on a loaded machine by pairing: each round runs blocks in
// A B B A order (none, other, other, none), so drift within a round cancels; the figure is the median of the rounds'
// ratios with a distribution-free 95% interval, beside the ratio of all B time to all A time (which spreads the
// batches' encoding and sending over every call). A block holds more calls than one batch of spans, so each B block
// pays for its share of the sending. Off (no exporter installed) runs the same code as none but for one check per
// settle and a branch per step; that work is timed alone in a loop, and an A/A pair of two untraced settlers shows
// the noise floor any ratio here stands on. What recording a settle's spans costs the calling thread is timed alone
// too (the steadiest figure on a loaded machine): the rest of exporting's cost is the settler's and the sending's.

import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Layer, ManagedRuntime, Schema, Scope, Tracer } from "effect"
import { Telemetry } from "../src/cli/telemetry"
import { Kernel } from "../src/host/kernel"
import { Otlp } from "../src/host/otlp"
import { Registry } from "../src/registry/registry"
import { Settler } from "../src/settlement/settler"
import { Spans } from "../src/settlement/spans"
import { SqliteStore } from "../src/store/sqlite-store"
import { Store } from "../src/store/store"
import { Tool } from "../src/tool/tool"
import { cleanup, duration, firstLine, main, median, progress, type Report } from "./measure"

const WARMUP_CALLS = 1_500
/** Paired rounds per comparison; each runs 4 blocks (A B B A). */
const ROUNDS = 60
/** Calls per block: 7 spans each, so a block ends more than one batch of spans (Otlp.MAX_BATCH_SPANS). */
const CALLS_PER_BLOCK = 80
const CHECK_ITERATIONS = 200_000
/** Steps of a settle that branch on the check when tracing is off (decode, permission, execute, bound, 2 records). */
const STEPS = 6
const SPANS_PER_SETTLE = 7
const OFF_TARGET = 1.01
const ON_TARGET = 1.05
const INPUT = { text: "hello" }

const echo = Tool.make({
  description: "Echo text back",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(input.text),
})

interface Side {
  readonly label: string
  readonly call: () => Promise<void>
  readonly close: () => Promise<void>
}

/** The OTLP receiver, in its own process so receiving costs the settling process nothing. */
const RECEIVER = `
const server = Bun.serve({ port: 0, hostname: "127.0.0.1", async fetch(request) { await request.arrayBuffer(); return new Response("{}") } })
console.log(server.port)
`

let counter = 0

const side = async (label: string, dataDir: string, store: Layer.Layer<Store.Service, Store.StoreError>, tracer?: Layer.Layer<never>): Promise<Side> => {
  const kernel = Kernel.layer({ store, outputsDirectory: join(dataDir, label.replace(/\W+/g, "_")) })
  const runtime = ManagedRuntime.make(tracer === undefined ? kernel : Layer.merge(kernel, tracer))
  const registration = Effect.runSync(Scope.make())
  const turn = await runtime.runPromise(
    Effect.gen(function* () {
      yield* (yield* Registry.Service).tools.register({ echo }).pipe(Scope.provide(registration))
      return yield* (yield* Settler.Service).materialize()
    }),
  )
  return {
    label,
    call: async () => {
      const { settlement } = await runtime.runPromise(
        turn.settle({
          sessionID: "ses_trace",
          agent: "build",
          assistantMessageID: "msg_trace",
          toolCallID: `call_${counter++}`,
          name: "echo",
          input: INPUT,
        }),
      )
      if (settlement.status !== "success") throw new Error(`settled ${settlement.status}`)
    },
    close: async () => {
      await Effect.runPromise(Scope.close(registration, Exit.void))
      await runtime.dispose()
    },
  }
}

const cpuMs = () => {
  const used = process.cpuUsage()
  return (used.user + used.system) / 1000
}

/** The calling thread's CPU time alone (not the collector's or the HTTP client's threads). */
const threadMs = () => {
  const used = process.threadCpuUsage()
  return (used.user + used.system) / 1000
}

/** A turn of the event loop, as each call to a server gets (a loop of awaited settles alone never yields one). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

/** One block of calls, each in its own turn of the event loop: wall and process CPU time per call, in ms. */
const block = async (one: Side) => {
  const wall = performance.now()
  const cpu = cpuMs()
  const thread = threadMs()
  for (let i = 0; i < CALLS_PER_BLOCK; i++) {
    await one.call()
    await turn()
  }
  return {
    wall: (performance.now() - wall) / CALLS_PER_BLOCK,
    cpu: (cpuMs() - cpu) / CALLS_PER_BLOCK,
    thread: (threadMs() - thread) / CALLS_PER_BLOCK,
  }
}

/** The median of `ratios` and a distribution-free 95% interval for it (order statistics around the middle). */
const medianInterval = (ratios: ReadonlyArray<number>) => {
  const sorted = [...ratios].sort((a, b) => a - b)
  const half = 0.98 * Math.sqrt(sorted.length)
  const at = (index: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(index)))]!
  return { median: median(sorted), low: at(sorted.length / 2 - half), high: at(sorted.length / 2 + half) }
}

interface Paired {
  readonly label: string
  readonly wall: ReturnType<typeof medianInterval>
  readonly cpu: ReturnType<typeof medianInterval>
  /** All B time over all A time. */
  readonly wallTotal: number
  readonly cpuTotal: number
  /** The calling thread's CPU: all B over all A. */
  readonly threadTotal: number
  readonly base: number
  readonly baseCpu: number
}

/** `b` against `a` in A B B A rounds. */
const paired = async (label: string, a: Side, b: Side): Promise<Paired> => {
  const wallRatios: Array<number> = []
  const cpuRatios: Array<number> = []
  const sums = { a: 0, b: 0, aCpu: 0, bCpu: 0, aThread: 0, bThread: 0 }
  const base: Array<number> = []
  const baseCpu: Array<number> = []
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 10 === 0) {
      progress(`trace: ${label}, rounds ${round + 1}-${Math.min(ROUNDS, round + 10)}/${ROUNDS}`)
      Bun.gc(true)
    }
    const a1 = await block(a)
    const b1 = await block(b)
    const b2 = await block(b)
    const a2 = await block(a)
    wallRatios.push((b1.wall + b2.wall) / (a1.wall + a2.wall))
    cpuRatios.push((b1.cpu + b2.cpu) / (a1.cpu + a2.cpu))
    sums.a += a1.wall + a2.wall
    sums.b += b1.wall + b2.wall
    sums.aCpu += a1.cpu + a2.cpu
    sums.bCpu += b1.cpu + b2.cpu
    sums.aThread += a1.thread + a2.thread
    sums.bThread += b1.thread + b2.thread
    base.push(a1.wall, a2.wall)
    baseCpu.push(a1.cpu, a2.cpu)
  }
  return {
    label,
    wall: medianInterval(wallRatios),
    cpu: medianInterval(cpuRatios),
    wallTotal: sums.b / sums.a,
    cpuTotal: sums.bCpu / sums.aCpu,
    threadTotal: sums.bThread / sums.aThread,
    base: median(base),
    baseCpu: median(baseCpu),
  }
}

/** The check a settle makes when tracing is off, and its per-step branches, timed in a loop inside one fiber. */
const checkCost = (): Promise<number> =>
  Effect.runPromise(
    Effect.sync(() => {
      let kept = 0
      const started = performance.now()
      for (let i = 0; i < CHECK_ITERATIONS; i++) {
        const traced = Spans.tracing()
        for (let step = 0; step < STEPS; step++) if (traced) kept++
      }
      if (kept !== 0) throw new Error("tracing was on")
      return (performance.now() - started) / CHECK_ITERATIONS
    }),
  )

/** Settles per block when a settle's spans are timed alone, and blocks. */
const ALONE_SETTLES = 100
const ALONE_BLOCKS = 200
const ALONE_STEPS = ["Settler.decode", "Settler.permission", "Settler.record", "Settler.execute", "Settler.bound", "Settler.record"] as const

/**
 * A settle's spans as core's exporter records them on the calling thread, timed alone: the settle span begun, its six
 * steps (each with the clock reading at its end, as the settler reads it) and its end, blocks of ALONE_SETTLES in a
 * loop, each block waiting for the sending thread to have sent it; the median block's time per settle.
 */
const spansAlone = async (settings: Otlp.Settings): Promise<number> => {
  // Sent every millisecond between blocks, so that each block's last spans need not wait for a full batch.
  const made = Otlp.make({ ...settings, exportIntervalMs: 1 })
  const settlement = { tool: "echo", callID: "call", status: "success", content: [{ type: "text", text: "hello" }], structured: "hello", outputs: [] } as const
  const exit = Exit.succeed({ settlement, replayed: false })
  const times: Array<number> = []
  // Calls as a settle has them, their ids read from JSON (a string built here would be made flat on first read).
  const calls: ReadonlyArray<Spans.Called> = JSON.parse(
    JSON.stringify(
      Array.from({ length: ALONE_SETTLES }, (_, index) => ({
        name: "echo",
        sessionID: "ses_trace",
        agent: "build",
        assistantMessageID: "msg_trace",
        toolCallID: `call_alone_${index}`,
      })),
    ),
  )
  try {
    for (let block = 0; block < ALONE_BLOCKS; block++) {
      const started = performance.now()
      for (let index = 0; index < ALONE_SETTLES; index++) {
        const trace = Spans.begin(calls[index]!, 16, made.tracer)
        let at = trace.originMs
        for (const name of ALONE_STEPS) trace.step(name, at, (at = performance.now()), undefined, Spans.RECORD, "intent")
        Spans.end(trace, exit)
      }
      times.push((performance.now() - started) / ALONE_SETTLES)
      const expected = (block + 1) * ALONE_SETTLES * SPANS_PER_SETTLE
      while (made.stats.sent + made.stats.dropped < expected) await Bun.sleep(1)
    }
  } finally {
    await made.close()
  }
  if (made.stats.dropped > 0) throw new Error(`the exporter dropped ${made.stats.dropped} spans timed alone`)
  return median(times.slice(ALONE_BLOCKS / 10))
}

/** The receiver's port: the first line it prints. */
const portOf = async (child: Bun.Subprocess<"ignore", "pipe", "inherit">): Promise<number> =>
  Number((await firstLine(child, "the OTLP receiver")).trim())

const ratioText = (value: number) => value.toFixed(3)
const interval = (found: ReturnType<typeof medianInterval>) => `${ratioText(found.low)} … ${ratioText(found.high)}`

const measure = async (): Promise<Report> => {
  const dataDir = mkdtempSync(join(tmpdir(), "core-bench-trace-"))
  const receiver = Bun.spawn([process.execPath, "-e", RECEIVER], { stdin: "ignore", stdout: "pipe", stderr: "inherit" })
  const sides: Array<Side> = []
  try {
    const port = await portOf(receiver)
    // What core exec and core serve would run with: the OTel variables read as core reads them.
    const exporting = Telemetry.settings(
      { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` },
      { exportIntervalMs: Otlp.EXPORT_INTERVAL_MS, flushMs: Otlp.EXIT_FLUSH_MS },
    )
    if (exporting === undefined || !("settings" in exporting)) throw new Error("the endpoint was not taken")
    const made: Array<Otlp.Made> = []
    const tracer = (): Layer.Layer<never> =>
      Layer.effect(
        Tracer.Tracer,
        Effect.map(Otlp.scoped(exporting.settings), (one) => {
          made.push(one)
          return one.tracer
        }),
      )
    const sqlite = (name: string) => SqliteStore.layer(join(dataDir, `${name}.db`))
    const none = await side("SQLite, none", dataDir, sqlite("none"))
    const noneAgain = await side("SQLite, none (A/A)", dataDir, sqlite("none-again"))
    const on = await side("SQLite, exporting", dataDir, sqlite("on"), tracer())
    const memoryNone = await side("memory, none", dataDir, Store.layerMemory)
    const memoryOn = await side("memory, exporting", dataDir, Store.layerMemory, tracer())
    sides.push(none, noneAgain, on, memoryNone, memoryOn)
    progress(`trace: ${WARMUP_CALLS} warm-up calls per side`)
    for (const one of sides) {
      for (let i = 0; i < WARMUP_CALLS; i++) {
        await one.call()
        await turn()
      }
    }

    const aa = await paired("SQLite: none (A/A)", none, noneAgain)
    const durable = await paired("SQLite: exporting", none, on)
    const memory = await paired("memory: exporting", memoryNone, memoryOn)
    const checks: Array<number> = []
    for (let round = 0; round < 5; round++) checks.push(await checkCost())
    const check = median(checks)
    const alone = await spansAlone(exporting.settings)
    for (const one of sides.splice(0)) await one.close()
    const stats = made.reduce(
      (sum, one) => ({ sent: sum.sent + one.stats.sent, dropped: sum.dropped + one.stats.dropped, requests: sum.requests + one.stats.requests }),
      { sent: 0, dropped: 0, requests: 0 },
    )
    if (stats.sent === 0) throw new Error("no span reached the receiver")

    const off = 1 + check / durable.base
    const offMemory = 1 + check / memory.base
    const noise = Math.max(Math.abs(aa.wall.low - 1), Math.abs(aa.wall.high - 1))
    const row = (found: Paired) => [
      found.label,
      duration(found.base),
      ratioText(found.wall.median),
      interval(found.wall),
      ratioText(found.wallTotal),
      ratioText(found.cpu.median),
      ratioText(found.cpuTotal),
      ratioText(found.threadTotal),
    ]
    return {
      name: "trace: what tracing costs a settle",
      about:
        `Per call, awaited from JS: the echo tool settled through core's Settler (SQLite store, as core exec and core ` +
        `serve run, and the memory store, the shortest settle), with no tracer and with core's OTLP exporter sending ` +
        `protobuf to a receiver in another process (${SPANS_PER_SETTLE} spans a settle, batches of ` +
        `${Otlp.MAX_BATCH_SPANS}). ${ROUNDS} paired rounds per comparison, each of 4 blocks of ${CALLS_PER_BLOCK} calls ` +
        `in A B B A order.`,
      tables: [
        {
          title: "settle time over a settle with no tracer (B / A)",
          columns: [
            "B",
            "A per call",
            "median of paired ratios",
            "95% interval",
            "all B / all A",
            "CPU: median",
            "CPU: all B / all A",
            "calling thread CPU: all B / all A",
          ],
          rows: [row(aa), row(durable), row(memory)],
        },
        {
          title: "exporting: a settle's spans on the calling thread, timed alone",
          columns: ["what", "per settle", "over none's settle (SQLite)", "over none's settle (memory)"],
          rows: [
            [
              `the settle span, ${STEPS} steps with their clock readings, its end`,
              duration(alone),
              `+${((alone / durable.base) * 100).toFixed(1)}%`,
              `+${((alone / memory.base) * 100).toFixed(1)}%`,
            ],
          ],
        },
        {
          title: "tracing off: what the instrumentation does when no tracer is installed",
          columns: ["what", "per settle", "off / none (SQLite)", "off / none (memory)"],
          rows: [[`the check and ${STEPS} branches`, duration(check), ratioText(off), ratioText(offMemory)]],
        },
      ],
      targets: [
        {
          measure: "tracing off / none, per settle (SQLite): the instrumentation's own work over a settle p50",
          value: `${ratioText(off)} (A/A noise floor ±${(noise * 100).toFixed(1)}%)`,
          target: `≤ ${ratioText(OFF_TARGET)}`,
          met: off <= OFF_TARGET,
        },
        {
          measure: `exporting / none, per settle (SQLite), median of ${ROUNDS} paired rounds, met only when its 95% interval is`,
          value:
            `${ratioText(durable.wall.median)} (95% ${interval(durable.wall)}; all B / all A ${ratioText(durable.wallTotal)}; ` +
            `CPU ${ratioText(durable.cpuTotal)}; calling thread ${ratioText(durable.threadTotal)})`,
          target: `≤ ${ratioText(ON_TARGET)}`,
          // Noise does not decide: a median under the target with an interval over it is not a result.
          met: durable.wall.high <= ON_TARGET,
        },
      ],
      notes: [
        `the exporter sent ${stats.sent} spans in ${stats.requests} requests and dropped ${stats.dropped}`,
        "off runs the settle none runs plus one check per call and one branch per step: the difference is far below " +
          "the A/A noise floor, so it is timed alone and added to none's p50",
        "memory store: the same spans over a settle a sixth as long, for scale; the targets are on the store core runs with",
        "a settle's spans timed alone: what recording them costs the calling thread, beside which the settler's own work " +
          "for a traced call (its steps' context with the settle span, the step boundaries it reads) and the batches handed on " +
          "to the sending thread make the rest of the calling thread's figure",
        "calling thread CPU: the settling thread's own time (process CPU also counts the collector's threads, the " +
          "exporter's sending thread, the HTTP client's and the store's checkpoint thread), the steadiest figure on a loaded machine",
      ],
    }
  } finally {
    for (const one of sides) await one.close()
    receiver.kill()
    cleanup([dataDir])
  }
}

if (import.meta.main) await main(measure)
