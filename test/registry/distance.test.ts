// Distance.edits, which every "did you mean" uses (tool names, input keys, file and skill names): the distance with
// a swap counted once, the same answer within a limit (past it, limit + 1) while computing only a band around the
// diagonal, and no character-by-character comparison of a string too long to be anyone's typing slip: a model's
// 9 MB tool name held the sidecar's thread for nine seconds.

import { describe, expect, test } from "bun:test"
import { Distance } from "../../src/registry/distance"
import { nearest } from "../../src/registry/registry"

/** Deterministic strings over a small alphabet, so near ones are common. */
const strings = (count: number): ReadonlyArray<string> => {
  let seed = 42
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31)
  return Array.from({ length: count }, () => Array.from({ length: next() % 12 }, () => "abcd"[next() % 4]).join(""))
}

/** The optimal string alignment distance by the whole table, as the definition reads: the test's own reference. */
const reference = (a: string, b: string): number => {
  const table = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = table[i]!
      row[j] = Math.min(table[i - 1]![j]! + 1, row[j - 1]! + 1, table[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, table[i - 2]![j - 2]! + 1)
    }
  }
  return table[a.length]![b.length]!
}

describe("Distance.edits", () => {
  test("counts an insertion, a deletion, a substitution and a swap of neighbours as one edit each", () => {
    expect(Distance.edits("language", "langauge")).toBe(1)
    expect(Distance.edits("read", "reads")).toBe(1)
    expect(Distance.edits("reads", "read")).toBe(1)
    expect(Distance.edits("read", "raed")).toBe(1)
    expect(Distance.edits("kitten", "sitting")).toBe(3)
    expect(Distance.edits("", "abc")).toBe(3)
  })

  test("within a limit, the same distance as without one, and limit + 1 for every one past it", () => {
    const all = strings(120)
    for (const a of all) {
      for (const b of all) {
        const full = reference(a, b)
        expect([a, b, Distance.edits(a, b)]).toEqual([a, b, full])
        for (const limit of [0, 1, 2, 3, 5]) {
          expect([a, b, limit, Distance.edits(a, b, limit)]).toEqual([a, b, limit, Math.min(full, limit + 1)])
        }
      }
    }
  })

  test("a string past MAX_COMPARED is as far as its length, compared without walking it", () => {
    const long = "q".repeat(9_000_000)
    const started = performance.now()
    expect(Distance.edits(long, "read")).toBe(long.length)
    expect(Distance.edits("r".repeat(Distance.MAX_COMPARED + 1), "r".repeat(Distance.MAX_COMPARED))).toBe(Distance.MAX_COMPARED + 1)
    // The registry's suggestions for a 9 MB unknown name: none, and at once (it took nine seconds).
    expect(nearest(long, ["read", "write", "bash", "grep", "glob", "list", "edit", "webfetch"])).toEqual([])
    expect(performance.now() - started).toBeLessThan(2_000)
  })
})
