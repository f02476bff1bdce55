// The arena of the directory-swap race tests: a Location in which a racer process swaps one directory, again and
// again, for a symlink to a directory outside, while tool calls are settled there one after another.

import { existsSync, lstatSync, mkdirSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { setPriority } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { Builtins } from "../../src/builtin/builtins"
import { ReadTracking } from "../../src/builtin/read-tracking"
import { Kernel } from "../../src/host/kernel"
import { Reads } from "../../src/store/reads"
import { Asks } from "../../src/cli/asks"
import { Location } from "../../src/location/location"
import { Permission } from "../../src/permission/permission"
import type { Settlement } from "../../src/contract/settlement"
import { Settler } from "../../src/settlement/settler"
import { Shell } from "../../src/shell/shell"
import { Approvals } from "../../src/store/approvals"
import { Store } from "../../src/store/store"
import { tempDir } from "../support/temp"

// Says "swapping" once it has been round the swap once, so that no call is settled before the race is on.
const RACER = `
const { renameSync, writeSync } = require("node:fs")
const [d, real, alt] = process.argv.slice(2)
let said = false
for (;;) {
  try { renameSync(d, real); renameSync(alt, d); renameSync(d, alt); renameSync(real, d) } catch {}
  if (!said) { writeSync(1, "swapping\\n"); said = true }
}
`

const racers: Array<Bun.Subprocess> = []

/**
 * Ends every racer started so far. Each file that races calls `afterEach(endRacers)` itself (a hook registered here
 * would belong to the first file importing this module alone): after each test, not each file, so a test that
 * timed out does not leave its racer taking a core from the next.
 */
export const endRacers = (): void => {
  for (const racer of racers.splice(0)) racer.kill(9)
}

export interface Arena {
  /** The Location. */
  readonly directory: string
  /** The directory outside that the swapped one's symlink leads to. */
  readonly outside: string
  /** The swapped directory inside the Location. */
  readonly inside: string
  /** Starts the racer; answers it once it is swapping. */
  readonly start: () => Promise<Bun.Subprocess>
  /**
   * Puts the swapped directory back where it was once the racer is stopped (it may stop halfway through a swap); a
   * directory a tool made in its place meanwhile (write makes missing parents) is moved aside.
   */
  readonly restore: () => void
}

/**
 * A Location whose `swapped` directory (a relative path, "d" or "d/sub") can be swapped, again and again, for a
 * symlink to outside/<name>. Both hold file.txt ("inside AAA" / "OUTSIDE AAA") and `fill` more files each.
 */
export const arena = (swapped: string, fill: (inside: string, outside: string) => void = () => {}): Arena => {
  const root = realpathSync(tempDir("core-race-"))
  const directory = join(root, "project")
  const inside = join(directory, swapped)
  const outside = join(root, "outside", swapped)
  mkdirSync(inside, { recursive: true })
  mkdirSync(outside, { recursive: true })
  writeFileSync(join(inside, "file.txt"), "inside AAA\n")
  writeFileSync(join(outside, "file.txt"), "OUTSIDE AAA\n")
  writeFileSync(join(outside, "outside-only.txt"), "OUTSIDE AAA\n")
  fill(inside, outside)
  symlinkSync(outside, `${inside}.alt`)
  const start = async () => {
    const script = join(root, "racer.js")
    writeFileSync(script, RACER)
    const racer = Bun.spawn([process.execPath, script, inside, `${inside}.real`, `${inside}.alt`], {
      stdio: ["ignore", "pipe", "ignore"],
    })
    // The lowest priority: it races on whatever processor time is left, never starving the tools it races.
    setPriority(racer.pid, 19)
    racers.push(racer)
    const { value } = await racer.stdout.getReader().read()
    if (value === undefined) throw new Error("the racer ended before it swapped")
    return racer
  }
  const restore = () => {
    const real = `${inside}.real`
    if (!existsSync(real)) return
    const now = lstatSync(inside, { throwIfNoEntry: false })
    // What an earlier round set aside goes first: a rename onto a directory that holds files fails.
    const aside = now?.isSymbolicLink() === true ? `${inside}.alt` : `${inside}.made`
    if (now !== undefined) {
      rmSync(aside, { recursive: true, force: true })
      renameSync(inside, aside)
    }
    renameSync(real, inside)
  }
  return { directory, outside, inside, start, restore }
}

/**
 * Settles `runs` calls made by `input(i)` in the arena's Location while the racer runs, then one more once the racer
 * is stopped and the arena restored; answers what each settled as (`after` is the last one). Leaving the Location
 * is asked, and nobody is there to approve it. A call that fails operationally rejects the whole race.
 */
export const race = (world: Arena, tool: string, runs: number, input: (index: number) => unknown) => {
  const permission = Permission.layer({ project: world.directory, dataDir: join(world.directory, "..", "data") }).pipe(
    Layer.provide(Approvals.layerMemory),
  )
  const kernel = Kernel.layer({ store: Store.layerMemory, outputsDirectory: tempDir(), permission })
  const layer = Location.layer(
    world.directory,
    Builtins.layer.pipe(
      Layer.provide(Shell.layer(undefined)),
      Layer.provide(Reads.layerMemory),
      Layer.provide(Layer.succeed(ReadTracking.Required, false)),
    ),
  ).pipe(Layer.provideMerge(kernel))
  const program = Effect.gen(function* () {
    yield* Asks.answer(yield* Permission.Service, { yes: false, interactive: false })
    const turn = yield* (yield* Settler.Service).materialize()
    const racer = yield* Effect.promise(() => world.start())
    const call = (index: number) =>
      turn
        .settle({
          sessionID: "ses_race",
          agent: "build",
          assistantMessageID: "msg",
          toolCallID: `call_${index}`,
          name: tool,
          input: input(index),
        })
        .pipe(Effect.map(({ settlement }) => settlement))
    const settled: Array<Settlement.Info> = []
    for (let index = 0; index < runs; index++) settled.push(yield* call(index))
    racer.kill(9)
    yield* Effect.promise(() => racer.exited)
    world.restore()
    const after = yield* call(runs)
    return { settled, after }
  })
  return Effect.runPromise(
    program.pipe(Effect.scoped, Effect.provide(layer)) as Effect.Effect<
      { readonly settled: Array<Settlement.Info>; readonly after: Settlement.Info },
      unknown
    >,
  )
}

/** Everything a settlement shows the model, text and structured. */
export const textOf = (settlement: Settlement.Info) =>
  settlement.content.map((part) => (part.type === "text" ? part.text : "")).join("\n") + JSON.stringify(settlement.structured)

/** Runs `run` with stderr quiet (each declined ask writes a line there). */
export const quiet = <A>(run: () => Promise<A>): Promise<A> => {
  const write = process.stderr.write
  process.stderr.write = (() => true) as typeof process.stderr.write
  return run().finally(() => {
    process.stderr.write = write
  })
}
