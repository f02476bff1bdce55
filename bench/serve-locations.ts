// What `core serve` holds as it serves more Locations: the compiled binary with `--allow-root` over 100 one-tool
// Locations, each opened by a turn and one call named with X-Core-Location, the serve's resident memory read from
// /proc after 1, 10, 32 (the bound of Locations kept) and 100 of them, then after every Location is opened again,
// six times over (each beyond the bound was let go and is built afresh). No target: the figures show whether memory
// follows the Locations kept or every Location ever served (a Location let go leaves only garbage:
// test/server/locations-memory.test.ts).

import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { buildCore, cleanup, duration, ECHO_TOOL, firstLine, main, megabytes, progress, type Report } from "./measure"

const LOCATIONS = 100
const KEPT = 32
const MARKS = [1, 10, KEPT, LOCATIONS]
/** Enough passes over every Location to tell a leak (growing with each) from garbage awaiting collection (level). */
const PASSES = 6

const rssOf = (pid: number): number => {
  const found = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  if (found === null) throw new Error("no VmRSS in /proc")
  return Number(found[1]) * 1024
}

const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-serve-locations-"))
  try {
    const binary = await buildCore(join(root, "core"))
    const roots = join(root, "roots")
    for (let index = 0; index < LOCATIONS; index++) {
      mkdirSync(join(roots, `l${index}`, "tools"), { recursive: true })
      writeFileSync(join(roots, `l${index}`, "tools", "echo.ts"), ECHO_TOOL)
    }
    const serve = Bun.spawn([binary, "serve", "--location", join(roots, "l0"), "--allow-root", roots, "--port", "0"], {
      env: { ...process.env, CORE_DATA_DIR: join(root, "data"), CORE_HOME: join(root, "home") },
      stdout: "pipe",
      stderr: "ignore",
    })
    try {
      const ready = JSON.parse(await firstLine(serve, "core serve")) as { url: string; token: string }
      const open = async (index: number) => {
        const headers = {
          authorization: `Bearer ${ready.token}`,
          "x-core-location": join(roots, `l${index}`),
          "content-type": "application/json",
        }
        const turn = (await (await fetch(`${ready.url}/v1/turns`, { method: "POST", headers, body: "{}" })).json()) as { turnID: string }
        const call = { sessionID: "ses_bench", assistantMessageID: "msg_bench", toolCallID: `call_${index}`, name: "echo", input: { text: "hi" } }
        const settled = (await (
          await fetch(`${ready.url}/v1/turns/${turn.turnID}/calls`, { method: "POST", headers, body: JSON.stringify(call) })
        ).json()) as { status?: string }
        if (settled.status !== "success") throw new Error(`a call in Location ${index} settled ${JSON.stringify(settled)}`)
      }
      const rows: Array<[string, number]> = [["started, no call", rssOf(serve.pid)]]
      /** Per pass over every Location: the time a Location's turn and call took, on average. */
      const passMs: Array<number> = []
      progress(`serve-locations: opening ${LOCATIONS} Locations`)
      for (let index = 0; index < LOCATIONS; index++) {
        await open(index)
        if (MARKS.includes(index + 1)) rows.push([`${index + 1} Location${index === 0 ? "" : "s"} opened`, rssOf(serve.pid)])
      }
      for (let pass = 1; pass <= PASSES; pass++) {
        progress(`serve-locations: opening them all again (${pass} of ${PASSES})`)
        const started = performance.now()
        for (let index = 0; index < LOCATIONS; index++) await open(index)
        passMs.push((performance.now() - started) / LOCATIONS)
        rows.push([`all ${LOCATIONS} opened again (${pass} of ${PASSES})`, rssOf(serve.pid)])
      }
      const base = rows[0]![1]
      return {
        name: "serve-locations: core serve's memory by Locations served",
        about:
          `The compiled core serve with --allow-root over ${LOCATIONS} one-tool Locations (a turn and one call each, named ` +
          `by X-Core-Location), its RSS from /proc; at most ${KEPT} other Locations are kept, the least recently used let go.`,
        tables: [
          {
            title: "core serve RSS",
            columns: ["after", "RSS", "over start", "turn and call, mean"],
            rows: rows.map(([label, bytes], index) => {
              const ms = passMs[index - (rows.length - PASSES)]
              return [label, megabytes(bytes), megabytes(bytes - base), ms === undefined ? "" : duration(ms)]
            }),
          },
        ],
        targets: [],
        notes: [
          "every Location let go leaves about a megabyte of garbage and nothing reachable (test/server/locations-memory.test.ts); " +
            "the collector lets it pile up to a few times the live heap before collecting, so RSS swings by tens of MB " +
            "from pass to pass and levels off rather than growing with every pass",
          "each new Location path imports its tool file as a module of its own, which stays in the module registry after " +
            "the Location is let go (the same path opened again reuses it)",
        ],
      }
    } finally {
      serve.kill()
      await serve.exited
    }
  } finally {
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
