// The HTTP sidecar against the MCP TypeScript SDK over HTTP: a trivial echo tool settled through `core serve` (the
// compiled binary, durable SQLite store, a fresh call id per call, one turn reused) and called through the SDK's
// web-standard streamable HTTP transport inside Bun.serve with one reused session and JSON responses (its strongest
// configuration; bench/serve-mcp-peer.ts). Both servers run in processes of their own; this process is the client,
// at 1 and 32 calls in flight. MCP is driven two ways, with its SDK Client and with bare JSON-RPC over fetch, and
// the stronger of the two is the peer for the targets. Blocks of each side alternate in rotating order. With
// `--base BINARY` (a compiled core of an earlier build) that build is one more side, measured in the same rounds.

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { buildCore, cleanup, ECHO_TOOL, duration, main, megabytes, progress, ratio, type Report, rss, spawnServer, type Summary, summarize, versionOf } from "./measure"

const CONCURRENCIES = [1, 32] as const
const ROUNDS = 5
const CALLS = { 1: 1_000, 32: 4_000 } as const
const WARMUP_CALLS = 2_000
const TARGET_THROUGHPUT = 2
const TARGET_P50 = 0.5
const INPUT = { text: "hello" }

interface Side {
  readonly label: string
  readonly pid: number
  /** One call, resolved once its result is in hand. */
  readonly call: (index: number) => Promise<void>
  readonly close: () => Promise<void>
}

/**
 * A client of a sidecar that printed `ready`: one turn, then each call with a fresh call id; `named` sends each request
 * with `X-Core-Location` naming that Location (as a host serving many does), on a sidecar another side owns.
 */
const sidecarSide = async (label: string, child: Bun.Subprocess, ready: Record<string, string>, named?: string): Promise<Side> => {
  const headers = {
    authorization: `Bearer ${ready.token}`,
    "content-type": "application/json",
    ...(named === undefined ? {} : { "x-core-location": named }),
  }
  const turn = await fetch(`${ready.url}/v1/turns`, { method: "POST", headers, body: "{}" })
  const { turnID } = (await turn.json()) as { turnID: string }
  const endpoint = `${ready.url}/v1/turns/${turnID}/calls`
  return {
    label,
    pid: child.pid,
    call: async (index) => {
      const response = await fetch(endpoint, {
        method: "POST",
        headers,
        body: JSON.stringify({
          sessionID: named === undefined ? "ses_bench" : "ses_bench_named",
          assistantMessageID: "msg_bench",
          toolCallID: `call_${index}`,
          name: "echo",
          input: INPUT,
        }),
      })
      const settlement = (await response.json()) as { status?: string }
      if (response.status !== 200 || settlement.status !== "success") {
        throw new Error(`${label} answered ${response.status}: ${JSON.stringify(settlement)}`)
      }
    },
    close: async () => {
      if (named !== undefined) return
      child.kill("SIGTERM")
      await child.exited
    },
  }
}

/** `--base BINARY`: a compiled core (an earlier build) measured as one more side, for a side-by-side comparison. */
const baseBinary = (): string | undefined => {
  const at = process.argv.indexOf("--base")
  return at < 0 ? undefined : process.argv[at + 1]
}

const coreSides = async (root: string): Promise<{ durable: Side; named: Side; memory: Side; base: Side | undefined }> => {
  const binary = join(root, "core")
  progress("serve: building the binary (build.ts --outfile)")
  await buildCore(binary)
  const location = join(root, "location")
  mkdirSync(join(location, "tools"), { recursive: true })
  writeFileSync(join(location, "tools", "echo.ts"), ECHO_TOOL)
  const env = { ...process.env, CORE_DATA_DIR: join(root, "data"), CORE_HOME: join(root, "home") }
  const durable = await spawnServer([binary, "serve", "--location", location], env)
  const memory = await spawnServer(
    [process.execPath, join(import.meta.dir, "serve-memory-peer.ts"), location],
    { ...env, CORE_DATA_DIR: join(root, "data-memory") },
  )
  const baseBuild = baseBinary()
  const base =
    baseBuild === undefined ? undefined : await spawnServer([baseBuild, "serve", "--location", location], { ...env, CORE_DATA_DIR: join(root, "data-base") })
  return {
    durable: await sidecarSide("core serve (SQLite)", durable.child, durable.ready),
    named: await sidecarSide("core serve (SQLite), X-Core-Location", durable.child, durable.ready, location),
    memory: await sidecarSide("core sidecar, memory store*", memory.child, memory.ready),
    base: base === undefined ? undefined : await sidecarSide("core serve (SQLite), base build", base.child, base.ready),
  }
}

const mcpSides = async (): Promise<{ sdk: Side; raw: Side; close: () => Promise<void> }> => {
  const { child, ready } = await spawnServer([process.execPath, join(import.meta.dir, "serve-mcp-peer.ts")], process.env)
  const url = ready.url!
  const transport = new StreamableHTTPClientTransport(new URL(url))
  const client = new Client({ name: "bench", version: "1.0.0" })
  await client.connect(transport)
  const session = transport.sessionId!
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-session-id": session,
    "mcp-protocol-version": transport.protocolVersion ?? "2025-06-18",
  }
  return {
    sdk: {
      label: "MCP SDK Client",
      pid: child.pid,
      call: async () => {
        const result = await client.callTool({ name: "echo", arguments: INPUT })
        if (result.isError === true) throw new Error(`MCP call failed: ${JSON.stringify(result)}`)
      },
      close: async () => {},
    },
    raw: {
      label: "MCP, JSON-RPC over fetch",
      pid: child.pid,
      call: async (index) => {
        const response = await fetch(url, {
          method: "POST",
          headers,
          body: JSON.stringify({ jsonrpc: "2.0", id: index, method: "tools/call", params: { name: "echo", arguments: INPUT } }),
        })
        const answer = (await response.json()) as { result?: { isError?: boolean } }
        if (response.status !== 200 || answer.result === undefined || answer.result.isError === true) {
          throw new Error(`MCP answered ${response.status}: ${JSON.stringify(answer)}`)
        }
      },
      close: async () => {},
    },
    close: async () => {
      await client.close()
      child.kill("SIGTERM")
      await child.exited
    },
  }
}

/** `count` calls with `concurrency` in flight: elapsed time and each call's latency. */
const block = async (side: Side, count: number, concurrency: number, next: { value: number }) => {
  const latencies: Array<number> = []
  let issued = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (issued < count) {
        issued++
        const index = next.value++
        const begun = performance.now()
        await side.call(index)
        latencies.push(performance.now() - begun)
      }
    }),
  )
  return { elapsed: performance.now() - started, latencies }
}

interface Measured {
  readonly throughputs: Array<number>
  readonly latencies: Array<number>
}

export const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-serve-"))
  const closers: Array<() => Promise<void>> = []
  try {
    const { durable: core, named, memory, base } = await coreSides(root)
    closers.push(core.close, memory.close)
    if (base !== undefined) closers.push(base.close)
    const mcp = await mcpSides()
    closers.push(mcp.close)
    // The targets compare core serve with the MCP sides; the memory-store sidecar shows what durability costs.
    const sides: ReadonlyArray<Side> = [core, mcp.sdk, mcp.raw, memory, named, ...(base === undefined ? [] : [base])]
    const counters = sides.map(() => ({ value: 0 }))
    const idle = { core: rss(core.pid), mcp: rss(mcp.sdk.pid) }

    progress(`serve: ${WARMUP_CALLS} warm-up calls per side`)
    for (const [index, side] of sides.entries()) await block(side, WARMUP_CALLS, 8, counters[index]!)

    const results = new Map<number, Array<Measured>>()
    for (const concurrency of CONCURRENCIES) {
      const measured = sides.map((): Measured => ({ throughputs: [], latencies: [] }))
      for (let round = 0; round < ROUNDS; round++) {
        progress(`serve: ${concurrency} in flight, round ${round + 1}/${ROUNDS} (${CALLS[concurrency]} calls per side)`)
        for (let offset = 0; offset < sides.length; offset++) {
          const index = (round + offset) % sides.length
          Bun.gc(true)
          const { elapsed, latencies } = await block(sides[index]!, CALLS[concurrency], concurrency, counters[index]!)
          measured[index]!.throughputs.push((CALLS[concurrency] / elapsed) * 1000)
          measured[index]!.latencies.push(...latencies)
        }
      }
      results.set(concurrency, measured)
    }
    const loaded = { core: rss(core.pid), mcp: rss(mcp.sdk.pid) }

    const tables = []
    const targets = []
    const notes: Array<string> = []
    for (const concurrency of CONCURRENCIES) {
      const measured = results.get(concurrency)!
      const throughput = measured.map((side) => summarize(side.throughputs))
      const latency = measured.map((side) => summarize(side.latencies))
      tables.push({
        title: `${concurrency} call${concurrency === 1 ? "" : "s"} in flight (${ROUNDS} rounds of ${CALLS[concurrency]} calls per side)`,
        columns: ["side", "calls/s (median)", "calls/s (min – max)", "p50", "p99", "IQR"],
        rows: sides.map((side, index) => [
          side.label,
          throughput[index]!.p50.toFixed(0),
          `${throughput[index]!.min.toFixed(0)} – ${throughput[index]!.max.toFixed(0)}`,
          duration(latency[index]!.p50),
          duration(latency[index]!.p99),
          `${duration(latency[index]!.q1)} – ${duration(latency[index]!.q3)}`,
        ]),
      })
      // The stronger MCP configuration is the peer: the higher throughput, and the lower p50.
      const [coreThroughput, ...mcpThroughput] = throughput.slice(0, 3) as [Summary, Summary, Summary]
      const [coreLatency, ...mcpLatency] = latency.slice(0, 3) as [Summary, Summary, Summary]
      const peerThroughput = Math.max(...mcpThroughput.map((summary) => summary.p50))
      const peerP50 = Math.min(...mcpLatency.map((summary) => summary.p50))
      notes.push(
        `${concurrency} in flight: core serve with X-Core-Location naming its Location / without, p50 ` +
          `${ratio(latency[4]!.p50 / coreLatency.p50)}, calls/s ${ratio(throughput[4]!.p50 / coreThroughput.p50)} (the same ` +
          `sidecar and store: what naming the Location costs a call)`,
      )
      const throughputRatio = coreThroughput.p50 / peerThroughput
      const p50Ratio = coreLatency.p50 / peerP50
      targets.push(
        {
          measure: `${concurrency} in flight: core calls/s / best MCP calls/s`,
          value: ratio(throughputRatio),
          target: `≥ ${ratio(TARGET_THROUGHPUT)}`,
          met: throughputRatio >= TARGET_THROUGHPUT,
        },
        {
          measure: `${concurrency} in flight: core p50 / best MCP p50`,
          value: ratio(p50Ratio),
          target: `≤ ${ratio(TARGET_P50)}`,
          met: p50Ratio <= TARGET_P50,
        },
      )
    }
    tables.push({
      title: "server resident memory (RSS)",
      columns: ["server", "idle after start", "after the load"],
      rows: [
        ["core serve", megabytes(idle.core), megabytes(loaded.core)],
        ["MCP peer (Bun.serve + SDK)", megabytes(idle.mcp), megabytes(loaded.mcp)],
      ],
    })
    notes.push(
      "* a reference, not a shipped configuration: core serve's own server (the connection guard, the router, a log " +
        "line per call) from source with the in-memory store (bench/serve-memory-peer.ts), so nothing is recorded " +
        "durably; the gap to core serve is law 12's cost (and the compiled binary's difference from source)",
      "core: every call is a fresh (sessionID, toolCallID), recorded durably (an intent and a settlement, each a line " +
        "appended to the store's journal, compacted into SQLite in batches), through one turn; the client is plain fetch " +
        "with the bearer token",
      "MCP: no output schema (so no output validation, which core does), nothing recorded; one session for all calls",
    )
    for (const close of closers.splice(0).reverse()) await close()

    return {
      name: "serve: trivial tool over HTTP",
      about:
        `core serve (compiled, Bun ${Bun.version}) vs MCP TypeScript SDK ${versionOf("@modelcontextprotocol/sdk")} ` +
        `(zod ${versionOf("zod")}) streamable HTTP in Bun.serve, each server in its own process, client here.`,
      tables,
      targets,
      notes,
    }
  } finally {
    for (const close of closers.reverse()) await close().catch(() => {})
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
