// The directory-swap race: while a tool runs, another process keeps swapping a directory on the tool's path for a
// symlink to a directory outside the Location. Whatever the timing, nothing outside may be read, written, edited,
// patched, searched, listed or left behind (temp files included): each call either works inside or fails as a
// model-visible result (never an operational failure).

import { afterEach, describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { Settlement } from "../../src/contract/settlement"
import { arena, endRacers, quiet, race as settle, textOf } from "./race-arena"

afterEach(endRacers)

/** Calls per tool. */
const RUNS = 200

/** Rounds of RUNS calls at most, until some call meets a swap (a loaded machine may not run the racer meanwhile). */
const ROUNDS = 5

/**
 * Settles RUNS calls of `tool` in a Location whose d/ is swapped, again and again, for a symlink to outside/d; more
 * rounds in the same Location, up to ROUNDS, while no call met a swap. Every round's calls are answered, and what is
 * inside and outside afterwards is what all of them left.
 */
const race = async (tool: string, input: (index: number) => unknown) => {
  const world = arena("d", (inside, outside) => {
    // One more than the raced calls: apply_patch's call after the race deletes one too.
    for (let index = 0; index <= RUNS; index++) {
      writeFileSync(join(inside, `del-${index}.txt`), "inside\n")
      writeFileSync(join(outside, `del-${index}.txt`), "outside\n")
    }
  })
  const settled: Array<Settlement.Info> = []
  for (let round = 1; ; round++) {
    const result = await settle(world, tool, RUNS, input)
    settled.push(...result.settled)
    if (felt(result.settled) || round === ROUNDS) return { ...world, ...result, settled }
  }
}

/**
 * Whether every raced call settled as something the model reads: a success, a model-visible failure (the directory
 * was missing, replaced or refused) or a declined ask to leave the Location. How many succeed depends on how the
 * racer's swaps fall, which a quiet machine can time so that none does; that the tool works at all is shown by the
 * call made once the racer is stopped.
 */
const visible = (settled: ReadonlyArray<Settlement.Info>) =>
  settled.filter(
    (settlement) =>
      settlement.status !== "success" &&
      settlement.status !== "declined" &&
      !(settlement.status === "error" && settlement.error?.kind === "failure"),
  )

/** Whether the race was felt: some raced call met a swapped or missing directory rather than succeeding. */
const felt = (settled: ReadonlyArray<Settlement.Info>) => settled.some((settlement) => settlement.status !== "success")

/** Temp files anywhere outside the Location. */
const strayTemps = (outside: string) => readdirSync(outside).filter((name) => name.includes(".core-"))

describe(`the directory-swap race, ${RUNS} calls per tool`, () => {
  test("read never returns a file outside", async () => {
    const { settled, after } = await quiet(() => race("read", () => ({ filePath: "d/file.txt" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("OUTSIDE"))).toEqual([])
    expect(visible(settled)).toEqual([])
    expect(felt(settled)).toBe(true)
    // A link swapped for a folder between its look and its reading is looked at again, not shown as the system's
    // error (`EINVAL: invalid argument, readlink`).
    expect(settled.map(textOf).filter((text) => text.includes("readlink"))).toEqual([])
    expect(textOf(after)).toContain("inside AAA")
  }, 120_000)

  test("write never creates a file (or a temp file) outside", async () => {
    const { inside, outside, settled, after } = await quiet(() =>
      race("write", (index) => ({ filePath: `d/new-${index}.txt`, content: "x" })),
    )
    expect(readdirSync(outside).filter((name) => name.startsWith("new-"))).toEqual([])
    expect(strayTemps(outside)).toEqual([])
    expect(visible(settled)).toEqual([])
    expect(felt(settled)).toBe(true)
    expect(after.status).toBe("success")
    expect(readFileSync(join(inside, `new-${RUNS}.txt`), "utf8")).toBe("x")
  }, 120_000)

  test("edit never changes a file outside", async () => {
    const { inside, outside, settled, after } = await quiet(() =>
      race("edit", () => ({ filePath: "d/file.txt", oldString: "AAA", newString: "AAA+" })),
    )
    expect(readFileSync(join(outside, "file.txt"), "utf8")).toBe("OUTSIDE AAA\n")
    expect(strayTemps(outside)).toEqual([])
    expect(visible(settled)).toEqual([])
    expect(felt(settled)).toBe(true)
    expect(after.error).toBeUndefined()
    expect(readFileSync(join(inside, "file.txt"), "utf8")).toStartWith("inside AAA+")
  }, 120_000)

  test("apply_patch never adds or deletes a file outside", async () => {
    const patch = (index: number) =>
      `*** Begin Patch\n*** Add File: d/p-${index}.txt\n+x\n*** Delete File: d/del-${index}.txt\n*** End Patch`
    const { inside, outside, settled, after } = await quiet(() =>
      race("apply_patch", (index) => ({ patchText: patch(index) })),
    )
    expect(readdirSync(outside).filter((name) => name.startsWith("p-"))).toEqual([])
    const deleted = Array.from({ length: RUNS }, (_, index) => `del-${index}.txt`).filter(
      (name) => !existsSync(join(outside, name)),
    )
    expect(deleted).toEqual([])
    expect(strayTemps(outside)).toEqual([])
    expect(visible(settled)).toEqual([])
    expect(felt(settled)).toBe(true)
    expect(after.status).toBe("success")
    expect(existsSync(join(inside, `p-${RUNS}.txt`))).toBe(true)
    expect(existsSync(join(inside, `del-${RUNS}.txt`))).toBe(false)
  }, 120_000)

  test("grep never searches a directory outside", async () => {
    const { settled, after } = await quiet(() => race("grep", () => ({ pattern: "AAA", path: "d" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("OUTSIDE"))).toEqual([])
    expect(visible(settled)).toEqual([])
    expect(felt(settled)).toBe(true)
    expect(after.status).toBe("success")
    expect(textOf(after)).toContain("inside AAA")
  }, 120_000)

  test("grep of one file never searches a file outside", async () => {
    const { settled, after } = await quiet(() => race("grep", () => ({ pattern: "AAA", path: "d/file.txt" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("OUTSIDE"))).toEqual([])
    expect(visible(settled)).toEqual([])
    expect(felt(settled)).toBe(true)
    expect(after.status).toBe("success")
    expect(textOf(after)).toContain("inside AAA")
  }, 120_000)

  test("glob never finds files outside", async () => {
    const { settled, after } = await quiet(() => race("glob", () => ({ pattern: "*", path: "d" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("outside-only"))).toEqual([])
    expect(visible(settled)).toEqual([])
    expect(felt(settled)).toBe(true)
    // What is inside d: file.txt and the del- files, and not outside-only.txt.
    expect(after.structured).toMatchObject({ total: RUNS + 2 })
  }, 120_000)

  test("list never lists a directory outside", async () => {
    const { settled, after } = await quiet(() => race("list", () => ({ path: "d" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("outside-only"))).toEqual([])
    expect(visible(settled)).toEqual([])
    expect(felt(settled)).toBe(true)
    expect(after.structured).toMatchObject({ total: RUNS + 2 })
  }, 120_000)
})
