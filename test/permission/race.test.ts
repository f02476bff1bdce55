// The directory-swap race: while a tool runs, another process keeps swapping a directory on the tool's path for a
// symlink to a directory outside the Location. Whatever the timing, nothing outside may be read, written, edited,
// patched, searched, listed or left behind (temp files included): each call either works inside or fails as a
// model-visible result (never an operational failure).

import { afterAll, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { Builtins } from "../../src/builtin/builtins"
import { ReadTracking } from "../../src/builtin/read-tracking"
import { Kernel } from "../../src/host/kernel"
import { Reads } from "../../src/store/reads"
import { Asks } from "../../src/cli/asks"
import { Location } from "../../src/location/location"
import { Permission } from "../../src/permission/permission"
import type { Settlement } from "../../src/settlement/settlement"
import { Settler } from "../../src/settlement/settler"
import { Shell } from "../../src/shell/producer"
import { Approvals } from "../../src/store/approvals"
import { Store } from "../../src/store/store"
import { tempDir } from "../support/temp"

/** Calls per tool. */
const RUNS = 200

const RACER = `
const { renameSync } = require("node:fs")
const [d, real, alt] = process.argv.slice(2)
for (;;) {
  try { renameSync(d, real); renameSync(alt, d); renameSync(d, alt); renameSync(real, d) } catch {}
}
`

const racers: Array<Bun.Subprocess> = []
afterAll(() => {
  for (const racer of racers) racer.kill(9)
})

/** A Location whose d/ is swapped, again and again, for a symlink to outside/d. */
const arena = () => {
  const root = realpathSync(tempDir("core-race-"))
  const directory = join(root, "project")
  const outside = join(root, "outside", "d")
  const inside = join(directory, "d")
  mkdirSync(inside, { recursive: true })
  mkdirSync(outside, { recursive: true })
  writeFileSync(join(inside, "file.txt"), "inside AAA\n")
  writeFileSync(join(outside, "file.txt"), "OUTSIDE AAA\n")
  writeFileSync(join(outside, "outside-only.txt"), "x")
  for (let index = 0; index < RUNS; index++) {
    writeFileSync(join(inside, `del-${index}.txt`), "inside\n")
    writeFileSync(join(outside, `del-${index}.txt`), "outside\n")
  }
  symlinkSync(outside, join(directory, "d.alt"))
  const start = () => {
    const script = join(root, "racer.js")
    writeFileSync(script, RACER)
    const racer = Bun.spawn([process.execPath, script, inside, join(directory, "d.real"), join(directory, "d.alt")], {
      stdio: ["ignore", "ignore", "ignore"],
    })
    racers.push(racer)
    return racer
  }
  return { directory, outside, start }
}

/** Settles `count` calls made by `input(i)` in one Location while the racer runs; answers what each settled as. */
const race = (tool: string, input: (index: number) => unknown) => {
  const world = arena()
  const permission = Permission.layer({ project: world.directory, dataDir: join(world.directory, "..", "data") }).pipe(
    Layer.provide(Approvals.layerMemory),
  )
  const kernel = Kernel.layer({ store: Store.layerMemory, outputsDirectory: tempDir(), permission })
  const layer = Location.layer(world.directory, Builtins.layer.pipe(
      Layer.provide(Shell.layer(undefined)),
      Layer.provide(Reads.layerMemory),
      Layer.provide(Layer.succeed(ReadTracking.Required, false)),
    )).pipe(
    Layer.provideMerge(kernel),
  )
  const program = Effect.gen(function* () {
    // Leaving the Location is asked; nobody is there to approve it.
    yield* Asks.answer(yield* Permission.Service, { yes: false, interactive: false })
    const turn = yield* (yield* Settler.Service).materialize()
    const racer = world.start()
    const settled: Array<Settlement.Info> = []
    for (let index = 0; index < RUNS; index++) {
      const { settlement } = yield* turn.settle({
        sessionID: "ses_race",
        agent: "build",
        assistantMessageID: "msg",
        toolCallID: `call_${index}`,
        name: tool,
        input: input(index),
      })
      settled.push(settlement)
    }
    racer.kill(9)
    yield* Effect.promise(() => racer.exited)
    return settled
  })
  return Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(layer)) as Effect.Effect<Array<Settlement.Info>, unknown>).then(
    (settled) => ({ ...world, settled }),
  )
}

const textOf = (settlement: Settlement.Info) =>
  settlement.content.map((part) => (part.type === "text" ? part.text : "")).join("\n") + JSON.stringify(settlement.structured)

/** Temp files anywhere outside the Location. */
const strayTemps = (outside: string) => readdirSync(outside).filter((name) => name.includes(".core-"))

// Quiet the answerer's notes (each declined ask writes a line to stderr).
const quiet = <A>(run: () => Promise<A>): Promise<A> => {
  const write = process.stderr.write
  process.stderr.write = (() => true) as typeof process.stderr.write
  return run().finally(() => {
    process.stderr.write = write
  })
}

describe(`the directory-swap race, ${RUNS} calls per tool`, () => {
  test("read never returns a file outside", async () => {
    const { settled } = await quiet(() => race("read", () => ({ filePath: "d/file.txt" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("OUTSIDE"))).toEqual([])
    expect(settled.some((settlement) => settlement.status === "success")).toBe(true)
  }, 120_000)

  test("write never creates a file (or a temp file) outside", async () => {
    const { outside, settled } = await quiet(() => race("write", (index) => ({ filePath: `d/new-${index}.txt`, content: "x" })))
    expect(readdirSync(outside).filter((name) => name.startsWith("new-"))).toEqual([])
    expect(strayTemps(outside)).toEqual([])
    expect(settled.some((settlement) => settlement.status === "success")).toBe(true)
  }, 120_000)

  test("edit never changes a file outside", async () => {
    const { outside, settled } = await quiet(() =>
      race("edit", () => ({ filePath: "d/file.txt", oldString: "AAA", newString: "AAA+" })),
    )
    expect(readFileSync(join(outside, "file.txt"), "utf8")).toBe("OUTSIDE AAA\n")
    expect(strayTemps(outside)).toEqual([])
    expect(settled.some((settlement) => settlement.status === "success")).toBe(true)
  }, 120_000)

  test("apply_patch never adds or deletes a file outside", async () => {
    const patch = (index: number) =>
      `*** Begin Patch\n*** Add File: d/p-${index}.txt\n+x\n*** Delete File: d/del-${index}.txt\n*** End Patch`
    const { outside, settled } = await quiet(() => race("apply_patch", (index) => ({ patchText: patch(index) })))
    expect(readdirSync(outside).filter((name) => name.startsWith("p-"))).toEqual([])
    const deleted = Array.from({ length: RUNS }, (_, index) => `del-${index}.txt`).filter(
      (name) => !existsSync(join(outside, name)),
    )
    expect(deleted).toEqual([])
    expect(strayTemps(outside)).toEqual([])
    expect(settled.some((settlement) => settlement.status === "success")).toBe(true)
  }, 120_000)

  test("grep never searches a directory outside", async () => {
    const { settled } = await quiet(() => race("grep", () => ({ pattern: "AAA", path: "d" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("OUTSIDE"))).toEqual([])
    expect(settled.some((settlement) => settlement.status === "success")).toBe(true)
  }, 120_000)

  test("grep of one file never searches a file outside", async () => {
    const { settled } = await quiet(() => race("grep", () => ({ pattern: "AAA", path: "d/file.txt" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("OUTSIDE"))).toEqual([])
    expect(settled.some((settlement) => settlement.status === "success")).toBe(true)
  }, 120_000)

  test("glob never finds files outside", async () => {
    const { settled } = await quiet(() => race("glob", () => ({ pattern: "*", path: "d" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("outside-only"))).toEqual([])
    expect(settled.some((settlement) => settlement.status === "success")).toBe(true)
  }, 120_000)

  test("list never lists a directory outside", async () => {
    const { settled } = await quiet(() => race("list", () => ({ path: "d" })))
    expect(settled.filter((settlement) => textOf(settlement).includes("outside-only"))).toEqual([])
    expect(settled.some((settlement) => settlement.status === "success")).toBe(true)
  }, 120_000)
})
