// core's MCP server without processes or transports in the way: the SDK's Client calls a trivial echo tool through
// the SDK's in-memory linked transport pair, against core's MCP session (as `core mcp` composes it, on the durable
// SQLite store and on the memory store) and against the SDK's own McpServer. The figures split bench/mcp.ts's gap:
// what core's pipeline adds per call, apart from the pipes and sockets and the scheduling of three processes on a
// loaded machine, and what durable recording costs within it. Blocks of each side alternate in rotating order.

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { Effect, Exit, Scope } from "effect"
import { z } from "zod"
import { Runtime } from "../src/cli/runtime"
import { Sidecar } from "../src/host/sidecar"
import { Mcp } from "../src/mcp-server/mcp"
import { Store } from "../src/store/store"
import { cleanup, duration, ECHO_TOOL, main, progress, ratio, type Report, summarize } from "./measure"

const ROUNDS = 6
const CALLS_PER_BLOCK = 500
const WARMUP_CALLS = 1_000
const INPUT = { text: "hello" }

interface Side {
  readonly label: string
  readonly client: Client
}

const linked = async (label: string, connect: (transport: InMemoryTransport) => Promise<void>): Promise<Side> => {
  const [serverEnd, clientEnd] = InMemoryTransport.createLinkedPair()
  await connect(serverEnd)
  const client = new Client({ name: "bench", version: "1.0.0" })
  await client.connect(clientEnd)
  return { label, client }
}

export const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-mcp-inprocess-"))
  const scope = Effect.runSync(Scope.make())
  const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(Scope.provide(effect, scope))
  try {
    const location = join(root, "location")
    mkdirSync(join(location, "tools"), { recursive: true })
    writeFileSync(join(location, "tools", "echo.ts"), ECHO_TOOL)
    const environment = { dataDir: join(root, "data"), home: join(root, "home") }

    const core = async (label: string, store: typeof Store.layerMemory | undefined) => {
      const sidecar = await run(
        Effect.gen(function* () {
          const primary = yield* Runtime.prepare("mcp", environment, location)
          return yield* Sidecar.make({ environment, primary, watch: false, log: () => {}, ...(store === undefined ? {} : { store }) })
        }),
      )
      const session = await run(
        Mcp.session(
          { served: sidecar.primary, calls: sidecar.calls, outputs: sidecar.outputs },
          { agent: "build", sessionID: `ses_${label.length}_${Date.now()}`, name: "core", version: "bench", note: () => {} },
        ),
      )
      // Connected as `core mcp` and `/mcp` connect it: a plain call is answered by the session itself.
      return linked(label, session.connect)
    }
    const sdkServer = new McpServer({ name: "bench", version: "1.0.0" })
    sdkServer.registerTool("echo", { description: "Echo text back", inputSchema: { text: z.string() } }, async ({ text }) => ({
      content: [{ type: "text", text }],
    }))
    const sdk = await linked("SDK McpServer", (transport) => sdkServer.connect(transport))
    const durable = await core("core (SQLite)", undefined)
    const memory = await core("core (memory store)", Store.layerMemory)
    const sides = [sdk, durable, memory]

    const call = async (side: Side) => {
      const result = await side.client.callTool({ name: "echo", arguments: INPUT })
      if (result.isError === true) throw new Error(`${side.label}: the call failed: ${JSON.stringify(result)}`)
    }
    progress(`mcp-inprocess: ${WARMUP_CALLS} warm-up calls per side`)
    for (const side of sides) for (let index = 0; index < WARMUP_CALLS; index++) await call(side)
    const latencies = sides.map(() => [] as Array<number>)
    for (let round = 0; round < ROUNDS; round++) {
      progress(`mcp-inprocess: round ${round + 1}/${ROUNDS}`)
      for (let offset = 0; offset < sides.length; offset++) {
        const index = (round + offset) % sides.length
        Bun.gc(true)
        for (let count = 0; count < CALLS_PER_BLOCK; count++) {
          const begun = performance.now()
          await call(sides[index]!)
          latencies[index]!.push(performance.now() - begun)
        }
      }
    }
    const summaries = latencies.map(summarize)
    for (const side of sides) await side.client.close()
    return {
      name: "mcp-inprocess: core's MCP session vs the SDK's McpServer, in process",
      about: "The SDK Client over the SDK's in-memory transport pair; one call in flight; no processes, pipes or sockets.",
      tables: [
        {
          title: `1 call in flight (${ROUNDS} rounds of ${CALLS_PER_BLOCK} calls per side)`,
          columns: ["side", "p50", "p99", "IQR", "p50 / SDK", "p50 − SDK"],
          rows: sides.map((side, index) => [
            side.label,
            duration(summaries[index]!.p50),
            duration(summaries[index]!.p99),
            `${duration(summaries[index]!.q1)} – ${duration(summaries[index]!.q3)}`,
            ratio(summaries[index]!.p50 / summaries[0]!.p50),
            duration(summaries[index]!.p50 - summaries[0]!.p50),
          ]),
        },
      ],
      targets: [],
      notes: [
        "the difference between the SQLite and the memory rows is durable recording (law 12): an intent committed " +
          "before the tool runs and the settlement after, plus the lookup that makes a retry a replay",
        "bench/mcp.ts holds the target (over stdio and HTTP, processes apart); this split says where core's part of it goes",
      ],
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
