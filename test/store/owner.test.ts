import { describe, expect, test } from "bun:test"
import { hostname } from "node:os"
import { Owner } from "../../src/store/owner"

describe("Owner", () => {
  test("this process is alive", () => {
    expect(Owner.current.startsWith(`${hostname()}:${process.pid}:`)).toBe(true)
    expect(Owner.isAlive(Owner.current)).toBe(true)
  })

  test("a running process is alive and one that has exited is not", async () => {
    const child = Bun.spawn(["sleep", "30"])
    const start = (await Bun.file(`/proc/${child.pid}/stat`).text()).split(") ")[1]!.split(" ")[19]
    const owner = `${hostname()}:${child.pid}:${start}`
    expect(Owner.isAlive(owner)).toBe(true)
    // The same pid with another start time is a different (reused) process.
    expect(Owner.isAlive(`${hostname()}:${child.pid}:1`)).toBe(false)
    child.kill()
    await child.exited
    expect(Owner.isAlive(owner)).toBe(false)
  })

  test("a process on another host or an unreadable identity counts as not running", () => {
    expect(Owner.isAlive(`not-${hostname()}:${process.pid}:1`)).toBe(false)
    expect(Owner.isAlive("")).toBe(false)
    expect(Owner.isAlive(`${hostname()}:abc:1`)).toBe(false)
  })
})
