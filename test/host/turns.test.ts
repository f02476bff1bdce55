// The turn table's bound and idle expiry (with a clock the test moves).

import { describe, expect, test } from "bun:test"
import { Turns } from "../../src/host/turns"

describe("Turns.Cache", () => {
  test("a turn is found by its id until it goes unused for the idle period", () => {
    let now = 0
    const table = new Turns.Cache<string>({ idleMs: 100, now: () => now })
    const id = table.add((turnID) => turnID)
    now = 100
    expect(table.get(id)).toBe(id)
    now = 200
    expect(table.get(id)).toBe(id)
    now = 301
    expect(table.get(id)).toBeUndefined()
    expect(table.get("turn_unknown")).toBeUndefined()
  })

  test("beyond the bound the least recently used turn goes first", () => {
    let now = 0
    const table = new Turns.Cache<number>({ max: 3, now: () => now })
    const ids: Array<string> = []
    for (let index = 0; index < 3; index++) table.add((id) => (ids.push(id), index))
    now = 1
    expect(table.get(ids[0]!)).toBe(0)
    table.add(() => 3)
    expect(table.size).toBe(3)
    expect(table.get(ids[1]!)).toBeUndefined()
    expect(table.get(ids[0]!)).toBe(0)
    expect(table.get(ids[2]!)).toBe(2)
  })

  test("idle turns are dropped when new ones are added", () => {
    let now = 0
    const table = new Turns.Cache<number>({ idleMs: 10, now: () => now })
    for (let index = 0; index < 5; index++) table.add(() => index)
    now = 11
    table.add(() => 5)
    expect(table.size).toBe(1)
  })
})
