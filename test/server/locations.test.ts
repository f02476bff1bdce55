// Locations named by X-Core-Location are kept while used and let go after: idle too long, or beyond the bound (the
// least recently used first), never while a request holds one or a call runs in it, and never the serve's own.
// The clock is the test's.

import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Latch } from "../support/latch"
import { tempDir } from "../support/temp"
import { gateTool } from "../support/tools"
import { callBody, EventReader, inProcess, location, runs } from "./support"

/** Reports progress, then waits at `latch`; records each run. */
const GATE = (latch: Latch.Interface) => gateTool(latch, { record: "gate", progress: { message: "waiting" } })

const IDLE_MS = 1_000

/** A root with Locations `names` under it, each with `files`. */
const root = (names: ReadonlyArray<string>, files: Record<string, string> = {}) => {
  const directory = realpathSync(tempDir("core-locations-"))
  for (const name of names) {
    mkdirSync(join(directory, name, "tools"), { recursive: true })
    for (const [path, content] of Object.entries(files)) writeFileSync(join(directory, name, path), content)
  }
  return directory
}

const clock = () => {
  let now = 1_000_000
  return { now: () => now, advance: (ms: number) => void (now += ms) }
}

describe("Locations named by X-Core-Location", () => {
  test("one unused for the idle period is let go, its turns with it, and built afresh on its next request", async () => {
    const time = clock()
    const roots = root(["a"])
    const a = join(roots, "a")
    const sidecar = await inProcess({}, { roots: [roots], locations: { idleMs: IDLE_MS, now: time.now } })
    const kept = () => sidecar.sidecar.locations.all().map((served) => served.directory)
    const old = await sidecar.turn(undefined, { "x-core-location": a })
    const own = await sidecar.turn()
    expect(kept()).toEqual([location(sidecar.box), a])

    time.advance(IDLE_MS - 1)
    expect((await sidecar.json("GET", "/v1/permissions")).status).toBe(200)
    expect(kept()).toContain(a)
    time.advance(2)
    // Any request lets go of Locations unused too long; the serve's own is never let go.
    expect((await sidecar.json("GET", "/v1/permissions")).status).toBe(200)
    expect(kept()).toEqual([location(sidecar.box)])
    expect((await sidecar.settle(old.turnID, { name: "list", input: {} }, { "x-core-location": a })).status).toBe(404)
    expect((await sidecar.settle(own.turnID, { name: "list", input: {} })).status).toBe(200)

    const fresh = await sidecar.turn(undefined, { "x-core-location": a })
    expect((await sidecar.settle(fresh.turnID, { name: "list", input: {} }, { "x-core-location": a })).body.status).toBe("success")
    expect(kept()).toEqual([location(sidecar.box), a])
  })

  test("beyond the bound the least recently used is let go first", async () => {
    const roots = root(["a", "b", "c"])
    const [a, b, c] = ["a", "b", "c"].map((name) => join(roots, name))
    // A clock that does not move: uses within one millisecond must still be told apart.
    const sidecar = await inProcess({}, { roots: [roots], locations: { max: 2, now: () => 1_000 } })
    const kept = () => sidecar.sidecar.locations.all().map((served) => served.directory).sort()
    await sidecar.turn(undefined, { "x-core-location": a! })
    const turnB = await sidecar.turn(undefined, { "x-core-location": b! })
    await sidecar.turn(undefined, { "x-core-location": a! })
    await sidecar.turn(undefined, { "x-core-location": c! })
    expect(kept()).toEqual([location(sidecar.box), a!, c!].sort())
    expect((await sidecar.settle(turnB.turnID, { name: "list", input: {} }, { "x-core-location": b! })).status).toBe(404)
  })

  test("a Location is kept while an event stream is open on it or a call runs in it", async () => {
    await using latch = Latch.open()
    const roots = root(["a", "b"], { "tools/gate.ts": GATE(latch) })
    const [a, b] = [join(roots, "a"), join(roots, "b")]
    const sidecar = await inProcess({}, { roots: [roots], locations: { max: 0 } })
    const kept = () => sidecar.sidecar.locations.all().map((served) => served.directory)

    const events = await sidecar.events({ "x-core-location": a })
    const { turnID } = await sidecar.turn(undefined, { "x-core-location": b })
    // The call's client goes away once the call runs; the call goes on.
    const abort = new AbortController()
    const call = { name: "gate", input: {}, sessionID: "ses_kept", toolCallID: "call_kept" }
    const response = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: callBody(call),
      headers: { accept: "text/event-stream", "x-core-location": b },
      signal: abort.signal,
    })
    await new EventReader(response).until("progress")
    abort.abort()

    expect((await sidecar.json("GET", "/v1/permissions")).status).toBe(200)
    expect(kept()).toEqual([location(sidecar.box), a, b])
    latch.release()
    // Joining the call waits for its settlement; once it has one, the call no longer holds its Location.
    const joined = await sidecar.settle(turnID, call, { "x-core-location": b })
    expect(joined.body.structured).toBe("opened")
    expect(runs({ ...sidecar.box, location: b }, "gate")).toBe(1)
    expect((await sidecar.json("GET", "/v1/permissions")).status).toBe(200)
    expect(kept()).toEqual([location(sidecar.box), a])
    await events.close()
  })
})
