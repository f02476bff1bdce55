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

  test("an owner on this kernel and PID namespace is known gone once its process ends, whatever its host name", async () => {
    const machine = Owner.current.split(":").slice(4).join(":")
    expect(machine).not.toBe("")
    const child = Bun.spawn(["sleep", "30"])
    const start = (await Bun.file(`/proc/${child.pid}/stat`).text()).split(") ")[1]!.split(" ")[19]
    // Another host name on the same kernel (a shared data directory between namespaces of one machine).
    const owner = `another-host:${child.pid}:${start}:0123456789ab:${machine}`
    expect(Owner.isGone(owner)).toBe(false)
    child.kill()
    await child.exited
    expect(Owner.isGone(owner)).toBe(true)
    expect(Owner.isGone(Owner.current)).toBe(false)
  })

  test("an owner on this kernel and PID namespace runs here while its process runs, stopped or not; never this process", async () => {
    const machine = Owner.current.split(":").slice(4).join(":")
    const child = Bun.spawn(["sleep", "30"])
    const start = (await Bun.file(`/proc/${child.pid}/stat`).text()).split(") ")[1]!.split(" ")[19]
    const owner = `another-host:${child.pid}:${start}:0123456789ab:${machine}`
    expect(Owner.runsHere(owner)).toBe(true)
    child.kill("SIGSTOP")
    expect(Owner.runsHere(owner)).toBe(true)
    // The same pid with another start time is a different (reused) process; another machine cannot be checked.
    expect(Owner.runsHere(`another-host:${child.pid}:1:0123456789ab:${machine}`)).toBe(false)
    expect(Owner.runsHere(`another-host:${child.pid}:${start}:0123456789ab:another-boot/4026531836`)).toBe(false)
    expect(Owner.runsHere(`another-host:${child.pid}::0123456789ab:${machine}`)).toBe(false)
    expect(Owner.runsHere(Owner.current)).toBe(false)
    // What a prune keeps: those, and this very process (its lease lapsed while the machine slept).
    expect([owner, Owner.current, `another-host:${child.pid}:1:0123456789ab:${machine}`].map(Owner.stillRuns)).toEqual([true, true, false])
    child.kill("SIGKILL")
    child.kill("SIGCONT")
    await child.exited
    expect(Owner.runsHere(owner)).toBe(false)
  })

  test("an owner on another kernel or PID namespace, or with no machine, is never known gone: its lease tells", () => {
    expect(Owner.isGone(`${hostname()}:999999999:1:0123456789ab:another-boot/4026531836`)).toBe(false)
    expect(Owner.isGone(`${hostname()}:999999999:1:0123456789ab`)).toBe(false)
    expect(Owner.isGone(`${hostname()}:999999999:1`)).toBe(false)
    expect(Owner.isGone("")).toBe(false)
  })
})
