// core as an MCP client: a trivial tool of an MCP server (the fixture server's `echo`, over stdio) called through
// core's in-process host settling path (resolve, decode against the server's JSON Schema, permission, the MCP
// call, content mapping, bounding, durable SQLite recording) against the MCP SDK's own Client calling the same
// tool of the same server directly. A fourth side settles an in-process tool that answers after one turn of the event
// loop through the same in-memory host: the settling path's own cost, so what the MCP part of core's call adds over
// the SDK's shows apart from it. Blocks of the four sides rotate, so drift on the noisy machine lands on all.

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Effect, ManagedRuntime } from "effect"
import { Host } from "../src/host/host"
import { Permission } from "../src/permission/permission"
import { McpClient } from "../src/mcp-client/mcp-client"
import { Settler } from "../src/settlement/settler"
import { Store } from "../src/store/store"
import { cleanup, duration, main, progress, ratio, type Report, summarize } from "./measure"

const SERVER = [process.execPath, join(import.meta.dir, "../test/mcp-client/fixture-server.ts")]
const WARMUP_CALLS = 300
const ROUNDS = 8
const CALLS_PER_BLOCK = 250
/** core as an MCP client, settled and recorded: p50 within this of the SDK Client calling the same server directly. */
const TARGET_RATIO = 1.5
const INPUT = { text: "hello" }
/** The in-process tool: the echo, answered after one turn of the event loop as a reply from a process would be. */
const WAIT_TOOL = `import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"

export default Tool.make({
  description: "Echo text back after a turn of the event loop",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.promise(() => new Promise<string>((resolve) => setImmediate(() => resolve(input.text)))),
})
`

interface Side {
  readonly label: string
  readonly call: (index: number) => Promise<void>
  readonly close: () => Promise<void>
}

/** The SDK's Client on its stdio transport, calling the server's tool directly. */
const direct = async (): Promise<Side> => {
  const client = new Client({ name: "bench", version: "1.0.0" })
  await client.connect(new StdioClientTransport({ command: SERVER[0]!, args: SERVER.slice(1) }))
  return {
    label: "MCP SDK Client, direct",
    call: async () => {
      const result = await client.callTool({ name: "echo", arguments: INPUT })
      if (result.isError) throw new Error("the direct call failed")
    },
    close: () => client.close(),
  }
}

/** core's host settling path for a Location whose core.json connects the same server. */
const throughCore = async (root: string, durable: boolean, tool = "fix_echo"): Promise<Side> => {
  mkdirSync(root)
  const location = join(root, "location")
  mkdirSync(join(location, "tools"), { recursive: true })
  writeFileSync(join(location, "tools", "wait.ts"), WAIT_TOOL)
  mkdirSync(join(root, "home"))
  writeFileSync(join(location, "core.json"), JSON.stringify({ mcp: { fix: { command: SERVER } }, permission: { "fix_*": "allow", wait: "allow" } }))
  const environment = { dataDir: join(root, "data"), home: join(root, "home") }
  const prepared = await Effect.runPromise(Host.prepare(environment, location))
  const runtime = ManagedRuntime.make(Host.settlingLayer(environment, prepared, durable ? undefined : Store.layerMemory))
  const turn = await runtime.runPromise(
    Effect.gen(function* () {
      yield* (yield* McpClient.Service).ensure
      const rules = (yield* Permission.Service).rules("build")
      return yield* (yield* Settler.Service).materialize(rules)
    }),
  )
  return {
    label:
      tool !== "fix_echo"
        ? "core (host settling, in-memory store), in-process tool"
        : durable
          ? "core (host settling, SQLite recording)"
          : "core (host settling, in-memory store)",
    call: async (index) => {
      const { settlement } = await runtime.runPromise(
        turn.settle({ sessionID: "ses_bench", agent: "build", assistantMessageID: "m", toolCallID: `c${index}`, name: tool, input: INPUT }),
      )
      if (settlement.status !== "success") throw new Error(`the call through core failed: ${JSON.stringify(settlement)}`)
    },
    close: () => runtime.dispose(),
  }
}

const block = async (side: Side, start: number, samples: Array<number>) => {
  for (let index = 0; index < CALLS_PER_BLOCK; index++) {
    const begun = performance.now()
    await side.call(start + index)
    samples.push(performance.now() - begun)
  }
}

const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-mcp-client-"))
  try {
    const sides = [
      await direct(),
      await throughCore(join(root, "sqlite"), true),
      await throughCore(join(root, "memory"), false),
      await throughCore(join(root, "in-process"), false, "wait"),
    ]
    const samples = sides.map(() => [] as Array<number>)
    let counter = 0
    progress("warming up")
    for (const side of sides) for (let index = 0; index < WARMUP_CALLS; index++) await side.call(counter++)
    for (let round = 0; round < ROUNDS; round++) {
      progress(`round ${round + 1} of ${ROUNDS}`)
      const order = sides.map((_, offset) => (offset + round) % sides.length)
      for (const which of order) {
        Bun.gc(true)
        await block(sides[which]!, counter, samples[which]!)
        counter += CALLS_PER_BLOCK
      }
    }
    for (const side of sides) await side.close()
    const summaries = samples.map(summarize)
    const [sdk, core, memory, inProcess] = summaries
    const value = core!.p50 / sdk!.p50
    const withoutRecording = memory!.p50 / sdk!.p50
    return {
      name: "mcp-client: a server's tool through core vs the SDK Client directly",
      about:
        "One stdio MCP server's trivial echo tool, called sequentially: by the SDK Client directly, and through " +
        "core's in-process settling path (permission, JSON Schema input check, bounding, durable recording).",
      tables: [
        {
          title: `per call, ${ROUNDS} alternating blocks of ${CALLS_PER_BLOCK}`,
          columns: ["side", "p50", "q1", "q3", "p99"],
          rows: sides.map((side, index) => {
            const summary = summaries[index]!
            return [side.label, duration(summary.p50), duration(summary.q1), duration(summary.q3), duration(summary.p99)]
          }),
        },
      ],
      targets: [
        { measure: "core (SQLite) p50 / SDK Client p50", value: ratio(value), target: `≤ ${TARGET_RATIO}x`, met: value <= TARGET_RATIO },
        {
          measure: "core (in-memory store) p50 / SDK Client p50",
          value: ratio(withoutRecording),
          target: `≤ ${TARGET_RATIO}x`,
          met: withoutRecording <= TARGET_RATIO,
        },
      ],
      notes: [
        "Both sides talk to the same kind of server process over stdio; the server's own time is in both figures.",
        `core's extra per call: ${duration(core!.p50 - sdk!.p50)} at the median (settling, recording, content mapping).`,
        `Settling alone (the in-process tool): ${duration(inProcess!.p50)}; the MCP part of core's in-memory call ` +
          `(its p50 less that): ${duration(memory!.p50 - inProcess!.p50)}, against the SDK's whole call ` +
          `${duration(sdk!.p50)} (${ratio((memory!.p50 - inProcess!.p50) / sdk!.p50)}).`,
      ],
    }
  } finally {
    cleanup([root])
  }
}

await main(measure)
