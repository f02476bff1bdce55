// The folder where every core serve of the user records its ports, which every core keeps its commands off: made
// the user's alone, and refused (so that a serve warns of it) where another user made it first or may change it.

import { describe, expect, test } from "bun:test"
import { chmodSync, chownSync, mkdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { SidecarPorts } from "../../src/permission/sidecar-ports"
import { tempDir } from "../support/temp"

const ROOT = process.getuid?.() === 0
const uid = process.getuid?.() ?? 0

describe("SidecarPorts.ownFolder", () => {
  test("a missing folder is made the user's alone", () => {
    const path = join(tempDir("core-ports-"), "state", "core", "sidecar-ports")
    expect(SidecarPorts.ownFolder(path, uid)).toBe(true)
    expect(statSync(path).mode & 0o777).toBe(0o700)
  })

  test("a folder others may enter, or one in a folder others may write, is refused", () => {
    const open = join(tempDir("core-ports-"), "sidecar-ports")
    mkdirSync(open, { mode: 0o755 })
    chmodSync(open, 0o755)
    expect(SidecarPorts.ownFolder(open, uid)).toBe(false)
    const shared = tempDir("core-ports-")
    chmodSync(shared, 0o777)
    expect(SidecarPorts.ownFolder(join(shared, "sidecar-ports"), uid)).toBe(false)
  })

  test.skipIf(!ROOT)(`a folder another user made first in its place is refused${ROOT ? "" : " (SKIPPED: needs root to give a folder away)"}`, () => {
    const parent = join(tempDir("core-ports-"), `core-${uid}`)
    mkdirSync(parent, { mode: 0o700 })
    chownSync(parent, 65534, 65534)
    expect(SidecarPorts.ownFolder(join(parent, "sidecar-ports"), uid)).toBe(false)
    const squatted = join(tempDir("core-ports-"), "sidecar-ports")
    mkdirSync(squatted, { mode: 0o700 })
    chownSync(squatted, 65534, 65534)
    expect(SidecarPorts.ownFolder(squatted, uid)).toBe(false)
  })

  test("the folder is the same whatever $HOME and $TMPDIR say", async () => {
    const folder = SidecarPorts.folder()
    expect(folder).toMatch(/\/\.local\/state\/core\/sidecar-ports$|^\/dev\/shm\/core-\d+\/sidecar-ports$/)
    const module = join(import.meta.dir, "../../src/permission/sidecar-ports.ts")
    const child = Bun.spawn([process.execPath, "-e", `const { SidecarPorts } = await import(${JSON.stringify(module)}); console.log(SidecarPorts.folder())`], {
      env: { ...process.env, HOME: tempDir("core-home-"), TMPDIR: tempDir("core-tmp-") },
      stdout: "pipe",
    })
    expect((await new Response(child.stdout).text()).trim()).toBe(folder!)
  })
})
