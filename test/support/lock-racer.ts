// One process going into a file's commit lock (FileLock.committing) at a given moment, as a core process making a
// change does: inside, it makes a marker file that only one process may hold at a time, and logs whether another
// was inside already. Run by test/builtin/file-lock.test.ts, several at once: `bun lock-racer.ts DIR ID START_MS`.

import { appendFileSync, closeSync, openSync, unlinkSync } from "node:fs"
import { Effect } from "effect"
import { FileLock } from "../../src/builtin/file-lock"

const [directory, id, start] = process.argv.slice(2) as [string, string, string]
while (Date.now() < Number(start)) await Bun.sleep(1)
const inside = Effect.promise(async () => {
  let overlap = false
  try {
    closeSync(openSync(`${directory}/inside`, "wx"))
  } catch {
    overlap = true
  }
  appendFileSync(`${directory}/log`, `${id} ${overlap ? "overlap" : "alone"}\n`)
  await Bun.sleep(150)
  if (!overlap) unlinkSync(`${directory}/inside`)
})
await Effect.runPromise(Effect.ignore(FileLock.committing([`${directory}/target.txt`], "target.txt", inside)))
