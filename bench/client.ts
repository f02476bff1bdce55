// The TypeScript client's own overhead per call: a trivial echo tool settled through `core serve` (the compiled
// binary, durable store, one turn, a fresh call id per call, one call in flight) with `@core/client` and with bare
// `fetch` sending the same request, as JSON and as an event stream. The server's work is the same on every side, so
// the ratio of p50s is what the client adds. Calls of each side interleave one by one, in shuffled order.

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Core } from "@core/client"
import { buildCore, cleanup, ECHO_TOOL, duration, main, progress, ratio, type Report, summarize } from "./measure"

const ROUNDS = 7
const CALLS = 400
const WARMUP_CALLS = 1_000
const TARGET = 1.1
const INPUT = { text: "hello" }

interface Side {
  readonly label: string
  readonly call: (index: number) => Promise<void>
}

const expectSuccess = (label: string, settlement: { status?: string }) => {
  if (settlement.status !== "success") throw new Error(`${label}: ${JSON.stringify(settlement)}`)
}

const sides = (core: Core, turnID: string): ReadonlyArray<Side> => {
  const headers = { authorization: `Bearer ${core.token}`, "content-type": "application/json" }
  const endpoint = `${core.url}/v1/turns/${turnID}/calls`
  const body = (prefix: string, index: number) => ({
    sessionID: "ses_bench",
    assistantMessageID: "msg_bench",
    toolCallID: `${prefix}_${index}`,
    name: "echo",
    input: INPUT,
  })
  const session = core.session({ sessionID: "ses_bench", watch: false })
  return [
    {
      label: "fetch, JSON",
      call: async (index) => {
        const response = await fetch(endpoint, { method: "POST", headers, body: JSON.stringify(body("fj", index)) })
        expectSuccess("fetch, JSON", (await response.json()) as { status?: string })
      },
    },
    {
      label: "@core/client settle, JSON",
      call: async (index) => expectSuccess("client, JSON", await core.settle(turnID, body("cj", index))),
    },
    {
      label: "@core/client session.call, JSON",
      call: async (index) => expectSuccess("session, JSON", await session.call({ name: "echo", input: INPUT, toolCallID: `sj_${index}`, assistantMessageID: "msg_bench" })),
    },
    {
      label: "fetch, event stream",
      call: async (index) => {
        const response = await fetch(endpoint, {
          method: "POST",
          headers: { ...headers, accept: "text/event-stream" },
          body: JSON.stringify(body("fs", index)),
        })
        const text = await response.text()
        const data = /event: settlement\ndata: (.*)\n/.exec(text)?.[1]
        expectSuccess("fetch, event stream", JSON.parse(data ?? "{}"))
      },
    },
    {
      label: "@core/client settle, event stream",
      call: async (index) => expectSuccess("client, event stream", await core.settle(turnID, body("cs", index), { stream: true })),
    },
  ]
}

const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-client-"))
  let core: Core | undefined
  try {
    progress("client: building the binary (build.ts --outfile)")
    const binary = await buildCore(join(root, "core"))
    const location = join(root, "location")
    mkdirSync(join(location, "tools"), { recursive: true })
    writeFileSync(join(location, "tools", "echo.ts"), ECHO_TOOL)
    core = await Core.spawn({
      command: binary,
      location,
      env: { ...process.env, CORE_DATA_DIR: join(root, "data"), CORE_HOME: join(root, "home") },
      stderr: "ignore",
    })
    const { turnID } = await core.materialize()
    const all = sides(core, turnID)
    const counters = all.map(() => 0)
    const run = async (index: number, count: number, samples?: Array<number>) => {
      for (let call = 0; call < count; call++) {
        const begun = performance.now()
        await all[index]!.call(counters[index]!++)
        samples?.push(performance.now() - begun)
      }
    }
    progress(`client: ${WARMUP_CALLS} warm-up calls per side`)
    for (const index of all.keys()) await run(index, WARMUP_CALLS)
    // Calls of every side interleave one by one, in an order shuffled per call (so no side always follows the same
    // other, whose connection state it would inherit), and the machine's noise falls on each side alike; each
    // round's p50 per side, so a noisy round shows as spread rather than skewing the figure.
    let seed = 0x2545f491
    const random = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32)
    const order = [...all.keys()]
    const p50s = all.map((): Array<number> => [])
    const pooled = all.map((): Array<number> => [])
    for (let round = 0; round < ROUNDS; round++) {
      progress(`client: round ${round + 1}/${ROUNDS} (${CALLS} calls per side)`)
      Bun.gc(true)
      const samples = all.map((): Array<number> => [])
      for (let call = 0; call < CALLS; call++) {
        for (let at = order.length - 1; at > 0; at--) {
          const other = Math.floor(random() * (at + 1))
          ;[order[at], order[other]] = [order[other]!, order[at]!]
        }
        for (const index of order) await run(index, 1, samples[index])
      }
      for (const index of all.keys()) {
        p50s[index]!.push(summarize(samples[index]!).p50)
        pooled[index]!.push(...samples[index]!)
      }
    }
    const p50 = p50s.map((rounds) => summarize(rounds))
    const whole = pooled.map((samples) => summarize(samples))
    const jsonRatio = p50[1]!.p50 / p50[0]!.p50
    const sessionRatio = p50[2]!.p50 / p50[0]!.p50
    const streamRatio = p50[4]!.p50 / p50[3]!.p50
    return {
      name: "client: @core/client overhead per call",
      about:
        `A trivial tool through core serve (compiled, durable store), one call in flight, ${ROUNDS} rounds of ${CALLS} ` +
        `calls per side interleaved one by one in shuffled order: @core/client against bare fetch sending the same request.`,
      tables: [
        {
          title: "latency per call",
          columns: ["side", "p50 (median of rounds)", "round p50s (min – max)", "p99 (pooled)", "ratio to fetch"],
          rows: all.map((side, index) => [
            side.label,
            duration(p50[index]!.p50),
            `${duration(p50[index]!.min)} – ${duration(p50[index]!.max)}`,
            duration(whole[index]!.p99),
            ratio(p50[index]!.p50 / p50[index < 3 ? 0 : 3]!.p50),
          ]),
        },
      ],
      targets: [
        { measure: "client settle (JSON) p50 / fetch p50", value: ratio(jsonRatio), target: `≤ ${ratio(TARGET)}`, met: jsonRatio <= TARGET },
        { measure: "client session.call (JSON) p50 / fetch p50", value: ratio(sessionRatio), target: `≤ ${ratio(TARGET)}`, met: sessionRatio <= TARGET },
        { measure: "client settle (event stream) p50 / fetch p50", value: ratio(streamRatio), target: `≤ ${ratio(TARGET)}`, met: streamRatio <= TARGET },
      ],
      notes: [
        "every call is a fresh (sessionID, toolCallID), recorded durably by core; the server's work is the same on " +
          "every side, so the ratio is the client's own cost (building the request, parsing JSON or the event stream)",
        "fetch, event stream reads the whole body as text and finds the settlement with a regular expression; the " +
          "client parses each event as it arrives",
      ],
    }
  } finally {
    await core?.close()
    cleanup([root])
  }
}

await main(measure)
