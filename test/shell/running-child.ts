// Starts one command more than core runs at once (Supervised.MAX_RUNNING, worked out from the open-file limit the
// test set low with prlimit), each a `sleep`, and prints one JSON line: the bound, how many had started before one
// was stopped, and whether the last then started (`bun test/shell/running-child.ts DIR`).

import { join } from "node:path"
import { Supervised } from "../../src/shell/supervised"

const [directory] = process.argv.slice(2)
const pool = Supervised.pool(undefined)
const order = (index: number) => ({
  argv: ["sh", "-c", `touch ${join(directory!, `ran-${index}`)}; exec sleep 30`],
  cwd: "/",
  env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
  graceMs: 1000,
})
const runs: Array<Supervised.Run> = []
const starts = Array.from({ length: Supervised.MAX_RUNNING + 1 }, (_, index) =>
  pool.start(order(index), new AbortController().signal, `session-${index % 3}`).then((run) => {
    runs.push(run)
    return run
  }),
)
// Every start there is room for, up and running; the last one waits.
for (let waited = 0; runs.length < Supervised.MAX_RUNNING && waited < 30_000; waited += 50) await Bun.sleep(50)
await Promise.all(runs.map((run) => run.started))
await Bun.sleep(500)
const before = runs.length
// One ends: the waiting one takes its turn.
runs[0]!.stop()
const last = await Promise.race([Promise.all(starts).then(() => true), Bun.sleep(20_000).then(() => false)])
const started = last ? await runs.at(-1)!.started : undefined
for (const run of runs) run.stop()
await Promise.all(runs.map((run) => run.ended))
console.log(JSON.stringify({ bound: Supervised.MAX_RUNNING, limit: Supervised.openFileLimit(), before, last, kind: started?.kind }))
process.exit(0)
