// What the connection guard of `core serve` costs per request: the same small server (bench/guard-peer.ts) as
// Bun.serve on a loopback port, as Bun.serve on a unix socket behind the guard, and behind a bare relay (the extra hop
// alone), each in a process of its own; this process is the client. Small GETs at 1 and 32 in flight on kept-alive
// connections, small GETs on a new connection each, 10 MB downloads and 1 MB uploads. Blocks of each side alternate;
// the ratio is guard / direct. Throughput on 2 shared cores depends on how the client and the server are scheduled;
// the server's CPU per request (all its threads, from /proc/<pid>/task/*/schedstat, read around each block) does
// not, and shows what the guard adds and how much of that is the hop.
// With `--base BINARY` (a core built from a revision without the guard), it also settles a trivial tool through
// `core serve` of that binary and of this tree, at 1 and 32 calls in flight: calls/s, this tree / base.

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BIG_BYTES } from "./guard-peer"
import { buildCore, cleanup, ECHO_TOOL, firstLine, main, megabytes, progress, ratio, type Report, summarize } from "./measure"

const ROUNDS = 5

interface Side {
  readonly label: string
  readonly url: string
  readonly pid: number
  readonly close: () => void
}

/** The CPU time a process's threads have run, in milliseconds (nanoseconds in schedstat); a thread gone is left out. */
const cpuMs = (pid: number): number => {
  let total = 0
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]) / 1e6
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return total
}

const MODES = ["direct", "relay", "guard"] as const

const start = async (mode: (typeof MODES)[number]): Promise<Side> => {
  // The peer's socket directory, made here: the peer is killed, so removing it is ours.
  const directory = mkdtempSync(join(tmpdir(), "core-bench-guard-"))
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "guard-peer.ts"), mode, directory], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
  })
  const close = () => {
    child.kill()
    cleanup([directory])
  }
  try {
    const { url } = JSON.parse(await firstLine(child, `the ${mode} peer`)) as { url: string }
    return { label: mode, url, pid: child.pid, close }
  } catch (cause) {
    close()
    throw cause
  }
}

interface Load {
  readonly name: string
  /** Units per request (requests, or megabytes moved). */
  readonly unit: string
  readonly per: number
  readonly requests: number
  readonly inFlight: number
  readonly send: (url: string) => Promise<void>
}

const upload = new Uint8Array(1_000_000).fill(32)

const LOADS: ReadonlyArray<Load> = [
  { name: "GET small, kept alive, 1 in flight", unit: "req/s", per: 1, requests: 2_000, inFlight: 1, send: (url) => get(`${url}/small`) },
  { name: "GET small, kept alive, 32 in flight", unit: "req/s", per: 1, requests: 8_000, inFlight: 32, send: (url) => get(`${url}/small`) },
  { name: "GET small, a new connection each", unit: "req/s", per: 1, requests: 1_000, inFlight: 1, send: (url) => get(`${url}/small`, { keepalive: false }) },
  { name: "GET 10 MB", unit: "MB/s", per: BIG_BYTES / 1e6, requests: 20, inFlight: 1, send: (url) => get(`${url}/big`) },
  {
    name: "POST 1 MB (echoed)",
    unit: "MB/s",
    per: 2,
    requests: 100,
    inFlight: 1,
    send: (url) => get(`${url}/echo`, { method: "POST", body: upload }),
  },
]

const get = async (url: string, init: RequestInit = {}) => {
  const response = await fetch(url, init)
  await response.arrayBuffer()
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`)
}

/** Units per second of one block of `load` against `url`. */
const block = async (load: Load, url: string): Promise<number> => {
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: load.inFlight }, async () => {
      while (next < load.requests) {
        next++
        await load.send(url)
      }
    }),
  )
  return (load.requests * load.per) / ((performance.now() - started) / 1000)
}

/** `core serve` of `binary` on a one-tool Location; `call` settles the echo tool once. */
const serveSide = async (label: string, binary: string, root: string) => {
  const location = join(root, label, "location")
  mkdirSync(join(location, "tools"), { recursive: true })
  writeFileSync(join(location, "tools", "echo.ts"), ECHO_TOOL)
  const env = { ...process.env, CORE_DATA_DIR: join(root, label, "data"), CORE_HOME: join(root, label, "home") }
  const child = Bun.spawn([binary, "serve", "--location", location], { env, stdin: "ignore", stdout: "pipe", stderr: "ignore" })
  const ready = JSON.parse(await firstLine(child, `${binary} serve`)) as { url: string; token: string }
  const headers = { authorization: `Bearer ${ready.token}`, "content-type": "application/json" }
  const turn = await fetch(`${ready.url}/v1/turns`, { method: "POST", headers, body: "{}" })
  const { turnID } = (await turn.json()) as { turnID: string }
  let index = 0
  const call = async () => {
    const response = await fetch(`${ready.url}/v1/turns/${turnID}/calls`, {
      method: "POST",
      headers,
      body: JSON.stringify({ sessionID: "ses_bench", assistantMessageID: "msg_bench", toolCallID: `call_${index++}`, name: "echo", input: { text: "hello" } }),
    })
    const settlement = (await response.json()) as { status?: string }
    if (settlement.status !== "success") throw new Error(`${label} answered ${response.status}: ${JSON.stringify(settlement)}`)
  }
  return { label, call, close: () => child.kill() }
}

/** Calls/s of `core serve` built from this tree against `base`, at 1 and 32 calls in flight. */
const versusBase = async (base: string): Promise<Array<Array<string>>> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-guard-"))
  try {
    progress("building core from this tree")
    const current = await buildCore(join(root, "core"))
    const sides = [await serveSide("base", base, root), await serveSide("this tree", current, root)]
    const rows: Array<Array<string>> = []
    try {
      for (const [calls, inFlight] of [[500, 1], [2_000, 32]] as const) {
        progress(`core serve, ${inFlight} in flight`)
        const load: Load = { name: "", unit: "calls/s", per: 1, requests: calls, inFlight, send: () => Promise.resolve() }
        for (const side of sides) await block({ ...load, requests: calls / 5, send: side.call }, "")
        const samples = new Map<string, Array<number>>(sides.map((side) => [side.label, []]))
        for (let round = 0; round < ROUNDS + 2; round++) {
          const order = round % 2 === 0 ? sides : [...sides].reverse()
          for (const side of order) samples.get(side.label)!.push(await block({ ...load, send: side.call }, ""))
        }
        const [before, after] = sides.map((side) => summarize(samples.get(side.label)!))
        const range = (value: ReturnType<typeof summarize>) => `${value.p50.toFixed(0)} (${value.min.toFixed(0)}–${value.max.toFixed(0)})`
        rows.push([`core serve echo, ${inFlight} in flight`, range(before!), range(after!), "calls/s", ratio(after!.p50 / before!.p50)])
      }
    } finally {
      for (const side of sides) side.close()
    }
    return rows
  } finally {
    cleanup([root])
  }
}

await main(async (): Promise<Report> => {
  const baseFlag = process.argv.indexOf("--base")
  const base = baseFlag === -1 ? undefined : process.argv[baseFlag + 1]
  const sides: Array<Side> = []
  for (const mode of MODES) sides.push(await start(mode))
  try {
    const rows: Array<Array<string>> = []
    const cpuRows: Array<Array<string>> = []
    const ratios: Array<number> = []
    for (const load of LOADS) {
      progress(load.name)
      for (const side of sides) await block({ ...load, requests: Math.ceil(load.requests / 5) }, side.url)
      const samples = new Map<string, Array<number>>(sides.map((side) => [side.label, []]))
      /** The server's CPU per unit (per request, or per MB moved), in microseconds. */
      const cpu = new Map<string, Array<number>>(sides.map((side) => [side.label, []]))
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? sides : [...sides].reverse()
        for (const side of order) {
          const before = cpuMs(side.pid)
          samples.get(side.label)!.push(await block(load, side.url))
          cpu.get(side.label)!.push(((cpuMs(side.pid) - before) * 1000) / (load.requests * load.per))
        }
      }
      const [direct, relay, guard] = MODES.map((mode) => summarize(samples.get(mode)!))
      const [directCPU, relayCPU, guardCPU] = MODES.map((mode) => summarize(cpu.get(mode)!).p50)
      const fixed = (value: number) => (load.unit === "MB/s" ? megabytes(value * 1e6).replace(" MB", "") : value.toFixed(0))
      const range = (value: ReturnType<typeof summarize>) => `${fixed(value.p50)} (${fixed(value.min)}–${fixed(value.max)})`
      ratios.push(guard!.p50 / direct!.p50)
      rows.push([load.name, range(direct!), range(relay!), range(guard!), load.unit, ratio(relay!.p50 / direct!.p50), ratio(guard!.p50 / direct!.p50)])
      const micros = (value: number) => value.toFixed(1)
      cpuRows.push([
        load.name,
        micros(directCPU!),
        micros(relayCPU!),
        micros(guardCPU!),
        load.unit === "MB/s" ? "µs/MB" : "µs/req",
        micros(guardCPU! - relayCPU!),
        ratio(guardCPU! / directCPU!),
      ])
    }
    const serveRows = base === undefined ? [] : await versusBase(base)
    return {
      name: "the connection guard of core serve",
      about:
        "Bun.serve on a loopback port (direct) against Bun.serve on a unix socket behind a bare relay (relay) and behind the guard (guard), same handler, each in its own process; medians of 5 alternating blocks (min–max), and the server process's CPU per request or MB (median of the blocks).",
      tables: [
        { title: "throughput", columns: ["load", "direct", "relay", "guard", "unit", "relay / direct", "guard / direct"], rows },
        {
          title: "server CPU",
          columns: ["load", "direct", "relay", "guard", "unit", "guard − relay", "guard / direct"],
          rows: cpuRows,
        },
        ...(serveRows.length === 0
          ? []
          : [{ title: "core serve, base binary against this tree", columns: ["load", "base", "this tree", "unit", "this tree / base"], rows: serveRows }]),
      ],
      targets: [
        {
          measure: "guard / direct throughput, small GETs kept alive at 32 in flight",
          value: ratio(ratios[1]!),
          target: "≥ 0.75x",
          met: ratios[1]! >= 0.75,
        },
      ],
      notes: [
        "The relay passes bytes to the same unix socket server with nothing else: guard − relay is what the guard's own work (framing, the deadline, the limit) costs beyond the extra hop.",
        "A core serve call costs far more than these trivial answers, so its share there is smaller (see serve.ts).",
      ],
    }
  } finally {
    for (const side of sides) side.close()
  }
})
