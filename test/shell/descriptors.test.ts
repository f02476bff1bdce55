// A host out of descriptors (a sidecar running a thousand commands at once, each holding a supervisor's pipes and
// sockets) failed the next command as a defect ("failed unexpectedly", EMFILE on a socketpair) rather than as a
// command the system could not start: the model was not told to wait and try again. Real processes, with the
// descriptor limit lowered by util-linux's prlimit and every descriptor but a few taken before the command.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { tempDir } from "../support/temp"

const CHILD = join(import.meta.dir, "descriptors-child.ts")
const prlimit = Bun.which("prlimit")

describe.skipIf(prlimit === null)(`a command when core is out of descriptors${prlimit === null ? " (SKIPPED: no prlimit)" : ""}`, () => {
  test("fails as one the system could not start, with every few descriptors left, never as a defect", () => {
    for (const spare of [0, 2, 4, 8]) {
      const cwd = tempDir("core-descriptors-")
      const child = Bun.spawnSync([prlimit!, "--nofile=256", process.execPath, CHILD, tempDir("core-descriptors-runs-"), cwd], {
        env: { ...process.env, SPARE: String(spare) },
      })
      const line = child.stdout.toString().trim().split("\n").pop() ?? ""
      const outcome = JSON.parse(line.startsWith("{") ? line : JSON.stringify({ crashed: child.stderr.toString().slice(-400) }))
      expect({ spare, defect: outcome.defect, crashed: outcome.crashed }).toEqual({ spare, defect: undefined, crashed: undefined })
      // Too few to start one: short of descriptors, or of them to look through the Location first.
      if (outcome.ran === undefined) expect(["EMFILE", "ENFILE", "EAGAIN", "ENOMEM", "EUNSEARCHED"]).toContain(outcome.failed)
    }
  }, 60_000)
})
