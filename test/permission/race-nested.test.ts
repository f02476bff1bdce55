// The directory-swap race one level deeper: the directory a search starts from stays where it was checked (it is
// held open), but rg walks the tree below it by path, so a directory inside it (d/sub) swapped for a symlink to
// outside during the walk would lead rg outside the Location. Where the kernel has Landlock, rg runs confined to
// reading beneath the searched directory, so that swap can lead it nowhere: no call may show anything from outside.

import { afterEach, describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { Landlock } from "../../src/shell/landlock"
import { arena, endRacers, quiet, race, textOf } from "./race-arena"

afterEach(endRacers)

/** Calls per tool. */
const RUNS = 200

/** d/sub and its outside twin, with enough entries that rg's walk takes a moment. */
const world = () =>
  arena("d/sub", (inside, outside) => {
    for (let index = 0; index < 20; index++) {
      writeFileSync(join(inside, "..", `sibling-${index}.txt`), "inside AAA\n")
      writeFileSync(join(inside, `inside-${index}.txt`), "inside AAA\n")
      writeFileSync(join(outside, `outside-only-${index}.txt`), "OUTSIDE AAA\n")
    }
  })

const escapes = (settled: ReadonlyArray<Parameters<typeof textOf>[0]>) =>
  settled.filter((settlement) => /OUTSIDE|outside-only/.test(textOf(settlement))).length

const landlock = Landlock.abi() > 0
if (!landlock) console.warn("race-nested: this kernel has no Landlock; rg is not confined, so these tests are skipped")

describe.skipIf(!landlock)(`a directory swapped below the searched one, ${RUNS} calls per tool`, () => {
  test("grep never shows a line from outside", async () => {
    const { settled, after } = await quiet(() => race(world(), "grep", RUNS, () => ({ pattern: "AAA", path: "d" })))
    expect(escapes(settled)).toBe(0)
    expect(after.status).toBe("success")
    expect(textOf(after)).toContain("inside-19.txt")
  }, 300_000)

  test("glob never finds a file outside", async () => {
    const { settled, after } = await quiet(() => race(world(), "glob", RUNS, () => ({ pattern: "**/*.txt", path: "d" })))
    expect(escapes(settled)).toBe(0)
    expect(after.status).toBe("success")
    expect(textOf(after)).toContain("inside-19.txt")
  }, 300_000)

  test("list never lists a directory outside", async () => {
    const { settled, after } = await quiet(() => race(world(), "list", RUNS, () => ({ path: "." })))
    expect(escapes(settled)).toBe(0)
    expect(after.status).toBe("success")
    expect(textOf(after)).toContain("inside-19.txt")
  }, 300_000)
})
