// Supervisor starts wait their turn (Supervised.MAX_STARTING at once, process-wide), so a burst of commands never
// leaves core without a processor, and the sessions waiting take turns; a start cancelled while it waits starts nothing, and every waiting start runs.
// A supervisor that cannot be started at all is an error that leaves no pipe of its stdio open in core.

import { expect, test } from "bun:test"
import { existsSync, readdirSync, readlinkSync } from "node:fs"
import { join } from "node:path"
import { Supervised } from "../../src/shell/supervised"
import { tempDir } from "../support/temp"

const touch = (file: string) => ({
  argv: ["sh", "-c", `touch ${file}`],
  cwd: "/",
  env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
  graceMs: 1000,
})

test.skipIf(!Supervised.launchable())("starts past the bound wait their turn and all run; one cancelled while waiting never starts", async () => {
  const directory = tempDir("core-starts-")
  const pool = Supervised.pool(undefined)
  const count = Supervised.MAX_STARTING + 3
  const starts = Array.from({ length: count }, (_, index) => {
    const controller = new AbortController()
    return { controller, file: join(directory, `ran-${index}`), run: undefined as Promise<Supervised.Run> | undefined }
  })
  for (const start of starts) start.run = pool.start(touch(start.file), start.controller.signal)
  // The bound's first starts hold every turn until their supervisors report; the last one waits, and is cancelled.
  const cancelled = starts.at(-1)!
  cancelled.controller.abort(new Error("cancelled while waiting"))
  await expect(cancelled.run!).rejects.toThrow("cancelled while waiting")
  const runs = await Promise.all(starts.slice(0, -1).map((start) => start.run!))
  const ended = await Promise.all(runs.map((run) => run.started.then(() => run.ended)))
  expect(ended.every((report) => report?.exitCode === 0)).toBe(true)
  for (const start of starts.slice(0, -1)) expect(existsSync(start.file)).toBe(true)
  expect(existsSync(cancelled.file)).toBe(false)
}, 60_000)

// One session's burst of commands does not hold another session's first one behind all of it: the owners waiting
// take turns, one start each (FIFO, the other's would start last).
test.skipIf(!Supervised.launchable())("owners waiting to start take turns: another's first command starts right after one of the burst", async () => {
  const directory = tempDir("core-starts-")
  const pool = Supervised.pool(undefined)
  const burst = Supervised.MAX_STARTING + 6
  const order: Array<string> = []
  const started = (owner: string, index: number) =>
    pool.start(touch(join(directory, `${owner}-${index}`)), new AbortController().signal, owner).then((run) => {
      order.push(owner)
      return run
    })
  const runs = [
    ...Array.from({ length: burst }, (_, index) => started("session-a", index)),
    started("session-b", 0),
    started("session-b", 1),
  ]
  const ended = await Promise.all((await Promise.all(runs)).map((run) => run.started.then(() => run.ended)))
  expect(ended.every((report) => report?.exitCode === 0)).toBe(true)
  // The bound's first starts are the burst's; then one more of it, and then the other session's first.
  expect(order.indexOf("session-b")).toBe(Supervised.MAX_STARTING + 1)
  expect(order.lastIndexOf("session-b")).toBe(Supervised.MAX_STARTING + 3)
  expect(order.filter((owner) => owner === "session-a")).toHaveLength(burst)
  for (let index = 0; index < burst; index++) expect(existsSync(join(directory, `session-a-${index}`))).toBe(true)
}, 60_000)

// A host's burst of calls across sessions (a thousand sessions, a command each) took every descriptor core had: the
// next commands, and the server's own connections, failed (EMFILE). Past Supervised.MAX_RUNNING (half the open-file
// limit, at 16 a command) a command waits until one ends, and is told so (nothing else showed it waiting).
const prlimit = Bun.which("prlimit")
test.skipIf(!Supervised.launchable() || prlimit === null)(`past the commands core runs at once, one waits until another ends${prlimit === null ? " (SKIPPED: no prlimit)" : ""}`, () => {
  const child = Bun.spawnSync([prlimit!, "--nofile=640", process.execPath, join(import.meta.dir, "running-child.ts"), tempDir("core-running-runs-"), tempDir("core-running-")], {
    env: process.env,
    timeout: 90_000,
  })
  const line = child.stdout.toString().trim().split("\n").pop() ?? ""
  expect(line.startsWith("{"), child.stderr.toString().slice(-600)).toBe(true)
  const outcome = JSON.parse(line)
  expect(outcome).toEqual({ bound: 20, limit: 640, before: 20, waited: 1, toldTheWaiting: true, last: true })
}, 120_000)

// A call cancelled right as its turn came (another start refused, and the caller's siblings interrupted with it)
// went on to launch its command, which nobody then stopped: it ran to its end, outside every bound.
test.skipIf(!Supervised.launchable())("a start given up as its turn comes starts nothing", async () => {
  const directory = tempDir("core-starts-")
  const pool = Supervised.pool(undefined)
  const held = Array.from({ length: Supervised.MAX_STARTING }, (_, index) =>
    pool.start(touch(join(directory, `first-${index}`)), new AbortController().signal, "session-a"),
  )
  const runs = await Promise.all(held)
  const controller = new AbortController()
  const late = join(directory, "late")
  const waiting = pool.start(
    { ...touch(late), argv: ["sh", "-c", `sleep 1; touch ${late}`] },
    controller.signal,
    "session-b",
  )
  // Right after the turn is granted (a first run's own callback on its start releases it), before the start goes on.
  for (const run of runs) void run.started.then(() => controller.abort(new Error("cancelled as its turn came")))
  await expect(waiting).rejects.toThrow("cancelled as its turn came")
  await Promise.all(runs.map((run) => run.ended))
  await Bun.sleep(1_500)
  expect(existsSync(late)).toBe(false)
}, 60_000)

/** How many of this process's descriptors are ends of pipes. */
const pipeEnds = () =>
  readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith("pipe:")
    } catch {
      return false
    }
  }).length

test.skipIf(!Supervised.launchable())("a supervisor that cannot be started is an error, and leaves none of its pipes open; the next start runs", async () => {
  const directory = tempDir("core-starts-")
  const pool = Supervised.pool(undefined)
  const before = pipeEnds()
  // From source, a supervisor is `bun launch.ts`: a Bun that is gone cannot be spawned.
  const bun = process.execPath
  Object.defineProperty(process, "execPath", { value: join(directory, "gone/bun"), configurable: true, writable: true })
  try {
    expect(() => Supervised.server(touch(join(directory, "server")))).toThrow("ENOENT")
    await expect(pool.start(touch(join(directory, "command")), new AbortController().signal)).rejects.toThrow("ENOENT")
  } finally {
    process.execPath = bun
  }
  expect(pipeEnds()).toBe(before)
  const run = await pool.start(touch(join(directory, "after")), new AbortController().signal)
  expect((await run.started.then(() => run.ended))?.exitCode).toBe(0)
  expect(existsSync(join(directory, "after"))).toBe(true)
  expect(existsSync(join(directory, "server")) || existsSync(join(directory, "command"))).toBe(false)
}, 60_000)
