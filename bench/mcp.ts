// core's MCP server against the MCP TypeScript SDK's own McpServer, on the same transports, with the SDK's Client
// on both ends: a trivial echo tool called through `core mcp` over stdio and `core serve`'s `/mcp` over streamable
// HTTP (the compiled binary, durable SQLite store, a fresh call per request), and through McpServer over stdio
// (bench/mcp-sdk-stdio-peer.ts) and over its web-standard streamable HTTP transport in Bun.serve with one reused
// session and JSON responses (bench/serve-mcp-peer.ts, its strongest configuration). The same core server on the
// in-memory store (bench/mcp-memory-peer.ts) shows what durable recording costs. Every server runs in a process of
// its own, this process is the client, at 1 and 32 calls in flight; blocks of each side alternate in rotating order.

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { buildCore, cleanup, ECHO_TOOL, duration, main, megabytes, progress, ratio, type Report, rss, spawnServer, summarize, type Target, versionOf } from "./measure"

const CONCURRENCIES = [1, 32] as const
const ROUNDS = 5
const CALLS = { 1: 500, 32: 2_000 } as const
const WARMUP_CALLS = 1_000
/** core's MCP face at 1 in flight, durable recording on: p50 within this of the SDK server's on the same transport (1.2x is the stretch). */
const TARGET_P50 = 1.5
const INPUT = { text: "hello" }

/** One server as the benchmark drives it: an SDK Client connected to it. */
export interface Side {
  readonly label: string
  /** The server process, for its resident memory. */
  readonly pid: number
  /** One call, resolved once its result is in hand. */
  readonly call: () => Promise<void>
  readonly close: () => Promise<void>
}

/** A side calling `echo` through `client`. */
const sideOf = (label: string, pid: number, client: Client, close: () => Promise<void>): Side => ({
  label,
  pid,
  call: async () => {
    const result = await client.callTool({ name: "echo", arguments: INPUT })
    if (result.isError === true) throw new Error(`${label}: the call failed: ${JSON.stringify(result)}`)
  },
  close: async () => {
    await client.close()
    await close()
  },
})

/** An MCP server over stdio, started by the SDK's client transport as an MCP client starts one. */
export const stdioSide = async (label: string, argv: ReadonlyArray<string>, env: Record<string, string>): Promise<Side> => {
  const transport = new StdioClientTransport({ command: argv[0]!, args: argv.slice(1), env, stderr: "inherit" })
  const client = new Client({ name: "bench", version: "1.0.0" })
  await client.connect(transport)
  return sideOf(label, transport.pid!, client, async () => {})
}

/** An MCP server over streamable HTTP at `url`, one session for every call, with `headers` on each request. */
export const httpSide = async (
  label: string,
  child: Bun.Subprocess,
  url: string,
  headers: Record<string, string> = {},
): Promise<Side> => {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } })
  const client = new Client({ name: "bench", version: "1.0.0" })
  await client.connect(transport)
  return sideOf(label, child.pid, client, async () => {
    child.kill("SIGTERM")
    await child.exited
  })
}

/** `count` calls with `concurrency` in flight: elapsed time and each call's latency. */
export const block = async (side: Side, count: number, concurrency: number) => {
  const latencies: Array<number> = []
  let issued = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (issued < count) {
        issued++
        const begun = performance.now()
        await side.call()
        latencies.push(performance.now() - begun)
      }
    }),
  )
  return { elapsed: performance.now() - started, latencies }
}

/** core's MCP server over both transports: the compiled binary (durable) and from source on the memory store. */
const coreSides = async (root: string) => {
  const binary = join(root, "core")
  progress("mcp: building the binary (build.ts --outfile)")
  await buildCore(binary)
  const location = join(root, "location")
  mkdirSync(join(location, "tools"), { recursive: true })
  writeFileSync(join(location, "tools", "echo.ts"), ECHO_TOOL)
  const env = { PATH: process.env.PATH ?? "", HOME: root, CORE_DATA_DIR: join(root, "data"), CORE_HOME: join(root, "home") }
  const memoryEnv = { ...env, CORE_DATA_DIR: join(root, "data-memory") }
  const peer = join(import.meta.dir, "mcp-memory-peer.ts")
  const served = await spawnServer([binary, "serve", "--location", location], env)
  const servedMemory = await spawnServer([process.execPath, peer, "http", location], memoryEnv)
  const bearer = (ready: Record<string, string>) => ({ authorization: `Bearer ${ready.token}` })
  return {
    stdio: await stdioSide("core mcp (SQLite)", [binary, "mcp", "--location", location], env),
    http: await httpSide("core serve /mcp (SQLite)", served.child, `${served.ready.url}/mcp`, bearer(served.ready)),
    stdioMemory: await stdioSide("core mcp, memory store*", [process.execPath, peer, "stdio", location], memoryEnv),
    httpMemory: await httpSide("core /mcp, memory store*", servedMemory.child, `${servedMemory.ready.url}/mcp`, bearer(servedMemory.ready)),
  }
}

/** The SDK's McpServer with the same tool on the same transports. */
const sdkSides = async () => {
  const served = await spawnServer([process.execPath, join(import.meta.dir, "serve-mcp-peer.ts")], process.env)
  return {
    stdio: await stdioSide("SDK McpServer stdio", [process.execPath, join(import.meta.dir, "mcp-sdk-stdio-peer.ts")], {
      PATH: process.env.PATH ?? "",
    }),
    http: await httpSide("SDK McpServer HTTP", served.child, served.ready.url!),
  }
}

// core as an MCP client (core.json `mcp` servers) is measured with the same helpers (Side, stdioSide, httpSide,
// block, rss): a section for it belongs below this line, reporting into the same Report.

export const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-mcp-"))
  const closers: Array<() => Promise<void>> = []
  try {
    const core = await coreSides(root)
    closers.push(core.stdio.close, core.http.close, core.stdioMemory.close, core.httpMemory.close)
    const sdk = await sdkSides()
    closers.push(sdk.stdio.close, sdk.http.close)
    const transports = [
      { name: "stdio", core: core.stdio, sdk: sdk.stdio, memory: core.stdioMemory },
      { name: "streamable HTTP", core: core.http, sdk: sdk.http, memory: core.httpMemory },
    ] as const
    const sides: ReadonlyArray<Side> = transports.flatMap((transport) => [transport.core, transport.sdk, transport.memory])
    const idle = sides.map((side) => rss(side.pid))

    progress(`mcp: ${WARMUP_CALLS} warm-up calls per side`)
    for (const side of sides) await block(side, WARMUP_CALLS, 8)

    const results = new Map<number, Array<{ throughputs: Array<number>; latencies: Array<number> }>>()
    for (const concurrency of CONCURRENCIES) {
      const measured = sides.map(() => ({ throughputs: [] as Array<number>, latencies: [] as Array<number> }))
      for (let round = 0; round < ROUNDS; round++) {
        progress(`mcp: ${concurrency} in flight, round ${round + 1}/${ROUNDS} (${CALLS[concurrency]} calls per side)`)
        for (let offset = 0; offset < sides.length; offset++) {
          const index = (round + offset) % sides.length
          Bun.gc(true)
          const { elapsed, latencies } = await block(sides[index]!, CALLS[concurrency], concurrency)
          measured[index]!.throughputs.push((CALLS[concurrency] / elapsed) * 1000)
          measured[index]!.latencies.push(...latencies)
        }
      }
      results.set(concurrency, measured)
    }
    const loaded = sides.map((side) => rss(side.pid))

    const tables = []
    const targets: Array<Target> = []
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
      const p50Of = (side: Side) => latency[sides.indexOf(side)]!.p50
      const callsOf = (side: Side) => throughput[sides.indexOf(side)]!.p50
      tables.push({
        title: `${concurrency} in flight: core / SDK McpServer on the same transport`,
        columns: ["transport", "p50 (SQLite)", "p50 (memory*)", "calls/s (SQLite)", "calls/s (memory*)"],
        rows: transports.map((transport) => [
          transport.name,
          ratio(p50Of(transport.core) / p50Of(transport.sdk)),
          ratio(p50Of(transport.memory) / p50Of(transport.sdk)),
          ratio(callsOf(transport.core) / callsOf(transport.sdk)),
          ratio(callsOf(transport.memory) / callsOf(transport.sdk)),
        ]),
      })
      if (concurrency === 1) {
        for (const transport of transports) {
          const value = p50Of(transport.core) / p50Of(transport.sdk)
          targets.push({
            measure: `${transport.name}, 1 in flight, durable recording: core p50 / SDK McpServer p50`,
            value: ratio(value),
            target: `≤ ${ratio(TARGET_P50)}`,
            met: value <= TARGET_P50,
          })
        }
      }
    }
    tables.push({
      title: "server resident memory (RSS)",
      columns: ["server", "idle after start", "after the load"],
      rows: sides.map((side, index) => [side.label, megabytes(idle[index]!), megabytes(loaded[index]!)]),
    })
    const notes = [
      "* a reference, not a shipped configuration: the same MCP server from source with the in-memory store " +
        "(bench/mcp-memory-peer.ts), so nothing is recorded durably; its gap to the SQLite row is law 12's cost " +
        "(it also runs without the binary's bytecode)",
      "core: every request is a fresh call (the MCP session and the JSON-RPC id), recorded durably (an intent and a " +
        "settlement), settled against the catalog current at the call, with its result as core words it (_meta); " +
        "/mcp answers a call with JSON when nothing can reach the client during it (no progress token, a client that " +
        "cannot be asked), as here, and as an SSE stream otherwise",
      "SDK McpServer: zod input, no output schema, nothing recorded; over HTTP it answers with JSON (no stream), " +
        "its strongest configuration",
    ]
    for (const close of closers.splice(0).reverse()) await close()

    return {
      name: "mcp: trivial tool through MCP servers",
      about:
        `core mcp / core serve /mcp (compiled, Bun ${Bun.version}) vs MCP TypeScript SDK ` +
        `${versionOf("@modelcontextprotocol/sdk")} McpServer (zod ${versionOf("zod")}) over stdio and streamable ` +
        "HTTP, each server in its own process, the SDK Client here.",
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
