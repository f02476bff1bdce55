// Directories named for the process that made them (src/shell/process-dirs.ts): the next core making one in the same
// place removes those whose process is gone, and only those: never one of a live process, of another machine or PID
// namespace (a data directory shared over NFS), of another user, a link, or a name core did not make.

import { describe, expect, test } from "bun:test"
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { ProcessDirs } from "../../src/shell/process-dirs"
import { tempDir } from "../support/temp"

/** The pid of a process that has ended (and was reaped). */
const deadPid = async (): Promise<number> => {
  const child = Bun.spawn(["true"])
  await child.exited
  return child.pid
}

describe("ProcessDirs", () => {
  test("makes a private directory named for this process and machine", () => {
    const parent = tempDir("core-dirs-")
    const made = ProcessDirs.make(parent, "core-call-")
    const name = made.slice(parent.length + 1)
    expect(name).toMatch(new RegExp(`^core-call-${process.pid}-${ProcessDirs.machine()}[A-Za-z0-9]{6}$`))
    expect(statSync(made).mode & 0o777).toBe(0o700)
  })

  test("the machine is this boot's and this PID namespace's: 8 hex digits, the same every time", () => {
    expect(ProcessDirs.machine()).toMatch(/^[0-9a-f]{8}$/)
    expect(ProcessDirs.machine()).toBe(ProcessDirs.machine())
  })

  test("removes what a gone process of this machine left, whole; keeps everything else", async () => {
    const parent = tempDir("core-dirs-")
    const machine = ProcessDirs.machine()
    const dead = await deadPid()
    const other = machine === "00000000" ? "11111111" : "00000000"
    const sleeper = Bun.spawn(["sleep", "30"])
    try {
      const plant = (name: string) => {
        mkdirSync(join(parent, name, "inner"), { recursive: true })
        writeFileSync(join(parent, name, "inner", "file"), "left")
        return name
      }
      const gone = plant(`core-call-${dead}-${machine}abc123`)
      const kept = [
        // A process that still runs, and this one.
        plant(`core-call-${sleeper.pid}-${machine}abc123`),
        plant(`core-call-${process.pid}-${machine}abc123`),
        // Another host's or container's: its pid says nothing here.
        plant(`core-call-${dead}-${other}abc123`),
        // A name without a machine (a core before this one, or another program's).
        plant(`core-call-${dead}-abc123`),
        // Another prefix.
        plant(`core-cache-${dead}-${machine}abc123`),
        plant(`x-core-call-${dead}-${machine}abc123`),
      ]
      // A link named as core names its directories: removed would be the link at most, never what it points to.
      const target = plant("target")
      symlinkSync(join(parent, target), join(parent, `core-call-${dead}-${machine}link12`))
      // A file so named.
      writeFileSync(join(parent, `core-call-${dead}-${machine}file12`), "mine")
      // Another user's (root can make one).
      const foreign = process.getuid?.() === 0 ? plant(`core-call-${dead}-${machine}other1`) : undefined
      if (foreign !== undefined) chownSync(join(parent, foreign), 65534, 65534)

      expect(ProcessDirs.sweep(parent, "core-call-")).toBe(1)
      expect(existsSync(join(parent, gone))).toBe(false)
      for (const name of [...kept, target, `core-call-${dead}-${machine}link12`, `core-call-${dead}-${machine}file12`]) {
        expect({ name, kept: existsSync(join(parent, name)) }).toEqual({ name, kept: true })
      }
      expect(readFileSync(join(parent, target, "inner", "file"), "utf8")).toBe("left")
      if (foreign !== undefined) expect(existsSync(join(parent, foreign))).toBe(true)
    } finally {
      sleeper.kill("SIGKILL")
      await sleeper.exited
    }
  })

  test("a prefix is matched as written, not as a pattern", async () => {
    const parent = tempDir("core-dirs-")
    const dead = await deadPid()
    const machine = ProcessDirs.machine()
    mkdirSync(join(parent, `serveX${dead}-${machine}abc123`))
    mkdirSync(join(parent, `serve.${dead}-${machine}abc123`))
    expect(ProcessDirs.sweep(parent, "serve.")).toBe(1)
    expect(readdirSync(parent)).toEqual([`serveX${dead}-${machine}abc123`])
  })

  test("a place that cannot be read is swept of nothing, and making a directory there fails as mkdtemp does", () => {
    const missing = join(tempDir("core-dirs-"), "missing")
    expect(ProcessDirs.sweep(missing, "core-call-")).toBe(0)
    expect(() => ProcessDirs.make(missing, "core-call-")).toThrow(/ENOENT/)
  })

  test("the first directory made in a place sweeps it; later ones do not read it again", async () => {
    const parent = tempDir("core-dirs-")
    const dead = await deadPid()
    const machine = ProcessDirs.machine()
    mkdirSync(join(parent, `core-cache-${dead}-${machine}first1`))
    ProcessDirs.make(parent, "core-cache-")
    expect(existsSync(join(parent, `core-cache-${dead}-${machine}first1`))).toBe(false)
    // Left after this process swept the place: kept until the next core's first directory there.
    mkdirSync(join(parent, `core-cache-${dead}-${machine}later1`))
    ProcessDirs.make(parent, "core-cache-")
    expect(existsSync(join(parent, `core-cache-${dead}-${machine}later1`))).toBe(true)
  })
})
