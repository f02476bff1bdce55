// Runs one command more than core runs at once (Supervised.MAX_RUNNING, worked out from the open-file limit the test
// set low with prlimit) through core's shell, each `touch`ing a file then sleeping, and prints one JSON line: the
// bound, how many had started before one was cancelled, which were told they wait (Shell.Request.onWait), and
// whether the last then started (`bun test/shell/running-child.ts RECORDS DIR`).

import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { Shell } from "../../src/shell/shell"
import { Supervised } from "../../src/shell/supervised"

const [records, directory] = process.argv.slice(2)
const shell = Shell.make({}, { records: records! })
const ran = () => readdirSync(directory!).length
const told: Array<number> = []
const fibers = Array.from({ length: Supervised.MAX_RUNNING + 1 }, (_, index) =>
  Effect.runFork(
    shell.run({
      argv: ["sh", "-c", `touch ${join(directory!, `ran-${index}`)}; exec sleep 30`],
      cwd: directory!,
      owner: `session-${index % 3}`,
      onWait: Effect.sync(() => told.push(index)),
    }),
  ),
)
// Every command there is room for, started; the last one waits.
for (let waited = 0; ran() < Supervised.MAX_RUNNING && waited < 30_000; waited += 50) await Bun.sleep(50)
await Bun.sleep(1_000)
const before = ran()
const waiting = fibers.findIndex((_, index) => !existsSync(join(directory!, `ran-${index}`)))
// One is cancelled: the waiting one takes its turn.
await Effect.runPromise(Fiber.interrupt(fibers[waiting === 0 ? 1 : 0]!))
for (let waited = 0; ran() < Supervised.MAX_RUNNING + 1 && waited < 20_000; waited += 50) await Bun.sleep(50)
const last = existsSync(join(directory!, `ran-${waiting}`))
await Effect.runPromise(Effect.forEach(fibers, Fiber.interrupt, { concurrency: "unbounded", discard: true }))
console.log(JSON.stringify({ bound: Supervised.MAX_RUNNING, limit: Supervised.openFileLimit(), before, waited: told.length, toldTheWaiting: told[0] === waiting, last }))
process.exit(0)
