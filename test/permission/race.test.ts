// The directory-swap race: while a tool runs, another process keeps swapping a directory on the tool's path for a
// symlink to a directory outside the Location. Whatever the timing, nothing outside may be read, written, edited,
// patched, searched, listed or left behind (temp files included): each call either works inside or fails as a
// model-visible result (never an operational failure).

import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { Settlement } from "../../src/settlement/settlement"
import { arena, quiet, race as settle, textOf } from "./race-arena"

/** Calls per tool. */
const RUNS = 200

/** Settles RUNS calls of `tool` in a Location whose d/ is swapped, again and again, for a symlink to outside/d. */
const race = (tool: string, input: (index: number) => unknown) => {
  const world = arena("d", (inside, outside) => {
    for (let index = 0; index < RUNS; index++) {
      writeFileSync(join(inside, `del-${index}.txt`), "inside\n")
      writeFileSync(join(outside, `del-${index}.txt`), "outside\n")
    }
  })
  return settle(world, tool, RUNS, input).then((settled) => ({ ...world, settled }))
}

/**
 * Whether the calls of a search tool did search: at least one succeeded, or (when the racer swapped faster than a
 * confined search could start, which a quiet machine can do every time) each was refused as a model-visible
 * result: the directory was replaced, or leaving the Location was asked and declined. Never an operational failure.
 */
const searched = (settled: ReadonlyArray<Settlement.Info>) =>
  settled.some((settlement) => settlement.status === "success") ||
  settled.every(
    (settlement) =>
      settlement.status === "declined" || (settlement.status === "error" && /removed or replaced/.test(textOf(settlement))),
  )

/** Temp files anywhere outside the Location. */
const strayTemps = (outside: string) => readdirSync(outside).filter((name) => name.includes(".core-"))

describe(`the directory-swap race, ${RUNS} calls per tool`, () => {
  test("read never returns a file outside", async () => {
    const { settled } = await quiet(() => race("read", () => ({ filePath: "d/file.txt" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("OUTSIDE"))).toEqual([])
    expect(settled.some((settlement) => settlement.status === "success")).toBe(true)
  }, 120_000)

  test("write never creates a file (or a temp file) outside", async () => {
    const { outside, settled } = await quiet(() => race("write", (index) => ({ filePath: `d/new-${index}.txt`, content: "x" })))
    expect(readdirSync(outside).filter((name) => name.startsWith("new-"))).toEqual([])
    expect(strayTemps(outside)).toEqual([])
    expect(settled.some((settlement) => settlement.status === "success")).toBe(true)
  }, 120_000)

  test("edit never changes a file outside", async () => {
    const { outside, settled } = await quiet(() =>
      race("edit", () => ({ filePath: "d/file.txt", oldString: "AAA", newString: "AAA+" })),
    )
    expect(readFileSync(join(outside, "file.txt"), "utf8")).toBe("OUTSIDE AAA\n")
    expect(strayTemps(outside)).toEqual([])
    expect(settled.some((settlement) => settlement.status === "success")).toBe(true)
  }, 120_000)

  test("apply_patch never adds or deletes a file outside", async () => {
    const patch = (index: number) =>
      `*** Begin Patch\n*** Add File: d/p-${index}.txt\n+x\n*** Delete File: d/del-${index}.txt\n*** End Patch`
    const { outside, settled } = await quiet(() => race("apply_patch", (index) => ({ patchText: patch(index) })))
    expect(readdirSync(outside).filter((name) => name.startsWith("p-"))).toEqual([])
    const deleted = Array.from({ length: RUNS }, (_, index) => `del-${index}.txt`).filter(
      (name) => !existsSync(join(outside, name)),
    )
    expect(deleted).toEqual([])
    expect(strayTemps(outside)).toEqual([])
    expect(settled.some((settlement) => settlement.status === "success")).toBe(true)
  }, 120_000)

  test("grep never searches a directory outside", async () => {
    const { settled } = await quiet(() => race("grep", () => ({ pattern: "AAA", path: "d" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("OUTSIDE"))).toEqual([])
    expect(searched(settled)).toBe(true)
  }, 120_000)

  test("grep of one file never searches a file outside", async () => {
    const { settled } = await quiet(() => race("grep", () => ({ pattern: "AAA", path: "d/file.txt" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("OUTSIDE"))).toEqual([])
    expect(searched(settled)).toBe(true)
  }, 120_000)

  test("glob never finds files outside", async () => {
    const { settled } = await quiet(() => race("glob", () => ({ pattern: "*", path: "d" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("outside-only"))).toEqual([])
    expect(searched(settled)).toBe(true)
  }, 120_000)

  test("list never lists a directory outside", async () => {
    const { settled } = await quiet(() => race("list", () => ({ path: "d" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("outside-only"))).toEqual([])
    expect(searched(settled)).toBe(true)
  }, 120_000)
})
