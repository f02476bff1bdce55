// No core process loads a Location's configuration while a guarded command of it runs, and no such command starts
// while a load is under way (LoadGate, shared and exclusive flocks on a file per Location). A command cancelled while
// it waited for a load took the lock anyway, later, and never let it go: every later load of the Location, in this
// core and any other sharing the data directory, waited for as long as the process lived.

import { expect, test } from "bun:test"
import { realpathSync } from "node:fs"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { LoadGate } from "../../src/shell/load-gate"
import { Shell } from "../../src/shell/shell"
import { tempDir } from "../support/temp"

test("a command cancelled while it waits for a load of its Location holds nothing: the next load goes ahead", async () => {
  const location = realpathSync(tempDir("core-gate-"))
  const guards = tempDir("core-gate-guards-")
  const shell = Shell.make({}, { records: tempDir("core-gate-runs-"), guards })
  let endLoad!: () => void
  const loaded = new Promise<void>((resolve) => (endLoad = resolve))
  const load = Effect.runFork(LoadGate.loading(location, Effect.promise(() => loaded), guards))
  await Bun.sleep(100)
  const command = Effect.runFork(shell.run({ argv: ["true"], cwd: location, owner: "s", sandbox: { location, approved: [] } }))
  await Bun.sleep(300)
  // Cancelled while it waits for the load to end.
  await Effect.runPromise(Fiber.interrupt(command))
  endLoad()
  await Effect.runPromise(Fiber.join(load))
  await Bun.sleep(300)
  const next = await Promise.race([
    Effect.runPromise(LoadGate.loading(location, Effect.succeed("loaded"), guards)),
    Bun.sleep(3_000).then(() => "still waiting after 3 s"),
  ])
  expect(next).toBe("loaded")
  // And a command that waited its turn and was not cancelled runs once the load has ended.
  const ran = await Effect.runPromise(shell.run({ argv: ["sh", "-c", "echo ran"], cwd: location, owner: "s", sandbox: { location, approved: [] } }))
  expect(ran.stdout.text).toBe("ran\n")
}, 30_000)
