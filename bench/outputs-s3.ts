// Managed outputs in an S3-compatible object store against local files, in the same run: a 10 MB output kept
// (the local atomic write alone, and the write plus the put a host with CORE_OUTPUTS_URL makes), and read back
// (from this host's file, and from the store as another host reads it: a listing and a GET), whole and a 64 KiB
// range. The store is s3rver (npm) on 127.0.0.1 in a process of its own, through Bun's S3 client.

import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { ManagedOutputs } from "../src/output/managed-outputs"
import { ObjectStore } from "../src/output/object-store"
import { startS3 } from "../test/support/s3"
import { cleanup, duration, main, progress, ratio, type Report, summarize } from "./measure"

const OUTPUT_BYTES = 10 * 1024 * 1024
const RANGE_BYTES = 64 * 1024
const ROUNDS = 12
const WARM_UP = 2

const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-s3-"))
  const server = await startS3()
  try {
    const settings = ObjectStore.settings(server.url("bench"), server.env) as ObjectStore.Settings
    const remote = ObjectStore.make(settings)
    const local = ManagedOutputs.layer({ directory: join(root, "local") })
    const shared = ManagedOutputs.layer({ directory: join(root, "host-a"), remote })
    // Another host: its own (empty) directory, the same store, so every read goes to the store.
    const other = ManagedOutputs.layer({ directory: join(root, "host-b"), remote })
    const line = `${"0123456789abcdef".repeat(6)}\n`
    const text = line.repeat(Math.ceil(OUTPUT_BYTES / line.length)).slice(0, OUTPUT_BYTES)

    const timed = async <A>(run: () => Promise<A>): Promise<[number, A]> => {
      const started = performance.now()
      const value = await run()
      return [performance.now() - started, value]
    }
    const samples = { write: [] as Array<number>, put: [] as Array<number>, localGet: [] as Array<number>, s3Get: [] as Array<number>, localRange: [] as Array<number>, s3Range: [] as Array<number> }
    for (let round = 0; round < ROUNDS + WARM_UP; round++) {
      progress(`round ${round + 1} of ${ROUNDS + WARM_UP}`)
      const keep = (layer: typeof local) =>
        Effect.runPromise(Effect.flatMap(ManagedOutputs.Service, (outputs) => outputs.write({ text })).pipe(Effect.provide(layer)))
      const open = (layer: typeof local, id: string) =>
        Effect.runPromise(Effect.flatMap(ManagedOutputs.Service, (outputs) => outputs.open(id)).pipe(Effect.provide(layer)))
      const [write, kept] = await timed(() => keep(local))
      const [put, putKept] = await timed(() => keep(shared))
      if (putKept.unshared !== undefined) throw new Error(`the store did not take the output: ${putKept.unshared}`)
      const [localGet] = await timed(async () => (await (await open(local, kept.id)).content.arrayBuffer()).byteLength)
      const [s3Get, got] = await timed(async () => (await (await open(other, putKept.id)).content.arrayBuffer()).byteLength)
      if (got !== OUTPUT_BYTES) throw new Error(`read back ${got} bytes, not ${OUTPUT_BYTES}`)
      const middle = OUTPUT_BYTES / 2
      const [localRange] = await timed(async () => (await (await open(local, kept.id)).content.slice(middle, middle + RANGE_BYTES).arrayBuffer()).byteLength)
      const [s3Range] = await timed(async () => (await (await open(other, putKept.id)).content.slice(middle, middle + RANGE_BYTES).arrayBuffer()).byteLength)
      if (round < WARM_UP) continue
      samples.write.push(write)
      samples.put.push(put)
      samples.localGet.push(localGet)
      samples.s3Get.push(s3Get)
      samples.localRange.push(localRange)
      samples.s3Range.push(s3Range)
    }
    const write = summarize(samples.write)
    const put = summarize(samples.put)
    const localGet = summarize(samples.localGet)
    const s3Get = summarize(samples.s3Get)
    const localRange = summarize(samples.localRange)
    const s3Range = summarize(samples.s3Range)
    const row = (label: string, summary: ReturnType<typeof summarize>, base: ReturnType<typeof summarize>) => [
      label,
      duration(summary.p50),
      `${duration(summary.q1)} – ${duration(summary.q3)}`,
      ratio(summary.p50 / base.p50),
    ]
    return {
      name: "managed outputs: S3-compatible store against local files",
      about:
        `A ${OUTPUT_BYTES / 1024 / 1024} MB text output kept through ManagedOutputs.write, then opened by id and read ` +
        `whole and as a ${RANGE_BYTES / 1024} KiB range from its middle; ${ROUNDS} rounds after ${WARM_UP} warm-up ` +
        "rounds, each step timed alone. The store is s3rver on 127.0.0.1 (its own process, on this disk), reached " +
        "with Bun.S3Client; reads from the store are another host's (an empty directory of its own).",
      tables: [
        {
          title: "keep (put)",
          columns: ["", "p50", "IQR", "vs local"],
          rows: [row("local atomic write", write, write), row("local write + put to the store (CORE_OUTPUTS_URL)", put, write)],
        },
        {
          title: "read (get)",
          columns: ["", "p50", "IQR", "vs local"],
          rows: [
            row("whole, this host's file", localGet, localGet),
            row("whole, from the store (list + GET)", s3Get, localGet),
            row(`${RANGE_BYTES / 1024} KiB range, this host's file`, localRange, localRange),
            row(`${RANGE_BYTES / 1024} KiB range, from the store (list + ranged GET)`, s3Range, localRange),
          ],
        },
      ],
      targets: [],
      notes: [
        "a host with CORE_OUTPUTS_URL writes its local file first (what its tools read, and what keeps the output when the store is down), then streams the file to the store (in 16 MiB parts when larger)",
        "s3rver is a test server writing to the same disk; a real store adds the network's round trips and its own throughput",
      ],
    }
  } finally {
    await server.remove()
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
