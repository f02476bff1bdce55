// What a Location let go leaves behind: nothing. Once it is let go (beyond the bound), its services, its
// generation's settler and permission service and its watchers are gone, so garbage collection frees all of it;
// a watcher, a fiber or a subscription left running would keep it reachable. Memory then follows the Locations
// kept, not every Location ever served (bench/serve-locations.ts measures it).

import { expect, test } from "bun:test"
import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { tempDir } from "../support/temp"
import { echoTool } from "../support/tools"
import { inProcess } from "./support"

/** Collects garbage until `ref` is cleared, yielding to the event loop between tries (closing is forked). */
const collected = async (ref: WeakRef<object>): Promise<boolean> => {
  for (let attempt = 0; attempt < 200 && ref.deref() !== undefined; attempt++) {
    await new Promise((resolve) => setImmediate(resolve))
    Bun.gc(true)
  }
  return ref.deref() === undefined
}

test("a Location let go is freed whole: its services, generation and watchers leave nothing reachable", async () => {
  const roots = realpathSync(tempDir("core-locations-"))
  for (const name of ["a", "b", "c"]) {
    mkdirSync(join(roots, name, "tools"), { recursive: true })
    writeFileSync(join(roots, name, "tools", "echo.ts"), echoTool())
  }
  const sidecar = await inProcess({}, { roots: [roots], watch: true, locations: { max: 1 } })
  const open = async (name: string) => {
    const headers = { "x-core-location": join(roots, name) }
    const turn = await sidecar.turn(undefined, headers)
    const settled = await sidecar.settle(turn.turnID, { name: "echo", input: { text: name } }, headers)
    expect(settled.body.status).toBe("success")
    // An event stream opened and closed again: its subscription must go with it.
    const events = await sidecar.events(headers)
    await events.close()
    return turn.turnID
  }
  const a = join(roots, "a")
  const turnID = await open("a")
  // Scoped so that nothing of `a` stays on this test's stack.
  const refs = (() => {
    const served = sidecar.sidecar.locations.all().find((candidate) => candidate.directory === a)!
    const generation = served.turn(turnID)!.generation
    return { served: new WeakRef(served), settler: new WeakRef(generation.settler), permission: new WeakRef(generation.permission) }
  })()
  await open("b")
  await open("c")
  expect(sidecar.sidecar.locations.all().map((served) => served.directory)).not.toContain(a)
  expect(await collected(refs.served)).toBe(true)
  expect(await collected(refs.settler)).toBe(true)
  expect(await collected(refs.permission)).toBe(true)
  // Built afresh on its next request, and working.
  await open("a")
})

test("a Location kept stays reachable while it is kept", async () => {
  const roots = realpathSync(tempDir("core-locations-"))
  mkdirSync(join(roots, "a", "tools"), { recursive: true })
  writeFileSync(join(roots, "a", "tools", "echo.ts"), echoTool())
  const sidecar = await inProcess({}, { roots: [roots], watch: true, locations: { max: 1 } })
  const a = join(roots, "a")
  await sidecar.turn(undefined, { "x-core-location": a })
  const ref = new WeakRef(sidecar.sidecar.locations.all().find((candidate) => candidate.directory === a)!)
  for (let attempt = 0; attempt < 5; attempt++) {
    await new Promise((resolve) => setImmediate(resolve))
    Bun.gc(true)
  }
  expect(ref.deref()?.directory).toBe(a)
})
