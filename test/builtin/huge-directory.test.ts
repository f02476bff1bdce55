// A directory of hundreds of thousands of entries (a model makes one with `touch` in its own Location) was listed,
// filtered and sorted by read in one stretch of 3 s, and by list sorted twice with a comparator per comparison: every
// session's calls and core serve's health waited for it on the thread they share. read now lists it on the thread
// pool and filters it in turns of the event loop, and both sort natively, once. What is checked is that read lets
// the event loop turn while it works (counted, not timed: a loaded machine slows both alike); the longest stretch
// each held the loop is printed.

import { expect, test } from "bun:test"
import { linkSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { harness, textOf } from "../support/builtin"
import { tempDir } from "../support/temp"

const ENTRIES = 150_000

/** How many times the event loop turned while `work` ran, and the longest it went without turning. */
const turnsDuring = async (work: () => Promise<unknown>) => {
  let turns = 0
  let last = performance.now()
  let longest = 0
  let running = true
  const turn = () => {
    if (!running) return
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
    turns++
    setImmediate(turn)
  }
  setImmediate(turn)
  try {
    await work()
  } finally {
    running = false
  }
  return { turns, longestMs: Math.round(Math.max(longest, performance.now() - last)) }
}

test(`read and list of a directory of ${ENTRIES.toLocaleString("en-US")} entries answer in order, without holding the event loop`, async () => {
  // Made before the Location is opened, so its watcher need not see each entry made; as hard links of one file,
  // which a filesystem makes many times faster than new files.
  const directory = tempDir("core-huge-")
  mkdirSync(join(directory, "big", "sub"), { recursive: true })
  // A file takes at most 65,000 links on ext4: one file per 50,000 entries.
  for (let index = 1; index <= ENTRIES; index++) {
    const source = join(directory, `source-${Math.floor(index / 50_000)}`)
    if (index % 50_000 === 0 || index === 1) writeFileSync(source, "")
    linkSync(source, join(directory, "big", `entry-${index}`))
  }
  const box = harness({ directory })

  let read: Awaited<ReturnType<typeof box.settle>> | undefined
  const reading = await turnsDuring(async () => (read = await box.settle("read", { filePath: "big" })))
  const lines = textOf(read!.settlement).split("\n")
  // Directories first, then files by UTF-16 code units: entry-1, entry-10, entry-100, ...
  expect(lines.slice(0, 4)).toEqual(["sub/", "entry-1", "entry-10", "entry-100"])
  expect(lines.at(-1)).toMatch(new RegExp(`^\\(Entries 1-\\d+ of ${ENTRIES + 1}\\. Use offset=\\d+ to see more\\.\\)$`))

  let list: Awaited<ReturnType<typeof box.settle>> | undefined
  const listing = await turnsDuring(async () => (list = await box.settle("list", { path: "big" })))
  // Files only (an empty folder is no file): by UTF-16 code units, as read orders them.
  const listed = textOf(list!.settlement).split("\n")
  expect(listed.slice(0, 4)).toEqual(["big/", "  entry-1", "  entry-10", "  entry-100"])
  console.log(listed.slice(-2))

  console.log(JSON.stringify({ entries: ENTRIES, read: reading, list: listing }))
  // Listed on the thread pool and filtered 10,000 entries a turn, read lets the loop turn (before: once, after a
  // stretch of 535 ms here; now over 100,000 times, the longest stretch 75 ms).
  expect(reading.turns).toBeGreaterThanOrEqual(ENTRIES / 10_000)
}, 120_000)
