// A command running in one core process plants core's configuration in its Location (a tools/ file where there was
// none): it is taken out when the command ends, and until then another core process on the same data directory
// loads nothing of that Location's configuration (exec waits, serve holds its hot reload), rather than run the
// planted tool outside the sandbox. Through the compiled binary, as two hosts' core exec would run.

import { beforeAll, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { sandbox, settlementOf } from "./fixture"
import { binary, run } from "../support/binary"
import { aliveIn } from "../shell/processes"
import { serve } from "../server/support"
import { tempDir } from "../support/temp"

beforeAll(async () => {
  await binary()
}, 300_000)

/** The pid of the core exec running a command whose Location is `location` (its --location argument). */
const runningCore = (location: string): number => {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0")
      if (argv[1] === "exec" && argv.includes(location) && argv.includes("bash")) return Number(entry)
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no core exec of ${location} is running`)
}

const until = async (path: string): Promise<void> => {
  while (!existsSync(path)) await Bun.sleep(10)
}

/**
 * A Location, the environment two non-forwarding execs share, a marker a planted tool writes when imported, and a
 * script (out of the line: core cannot read it, so it is asked, and --yes approves it) made by `body` of the marker.
 */
const scene = (body: (marker: string) => string) => {
  const box = sandbox({ "notes.txt": "hello\n" })
  const env = { ...box.env, CORE_EXEC_FORWARD: "0" }
  const marker = join(tempDir("core-marker-"), "loaded")
  const script = join(tempDir("core-script-"), "plant.sh")
  writeFileSync(script, body(JSON.stringify(marker)))
  const command = () =>
    run(["exec", "bash", "--input", JSON.stringify({ command: `sh ${script}` }), "--location", box.location, "--yes"], { env })
  return { box, env, marker, command }
}

describe("while a command runs, no other core process loads the Location's configuration", () => {
  test("core exec elsewhere waits for the command to end, and the tool it planted never runs", async () => {
    const { box, env, marker, command } = scene(
      (marker) =>
        `mkdir -p tools\nprintf '%s\\n' 'require("node:fs").writeFileSync(${marker}, "x")' 'export default 1' > tools/pwn.ts\ntouch planted.flag\nsleep 2\n`,
    )
    const planting = command().then((result) => ({ result, at: performance.now() }))
    await until(join(box.location, "planted.flag"))

    const listed = await run(["exec", "list", "--input", "{}", "--location", box.location], { env })
    const listedAt = performance.now()
    const planted = await planting
    // It waited for the command (and its guard's undoing) to end, then loaded the Location as it was.
    expect(listedAt).toBeGreaterThanOrEqual(planted.at)
    expect(listed.code).toBe(0)
    expect(settlementOf(listed).status).toBe("success")
    expect(existsSync(marker)).toBe(false)
    expect(planted.result.code).toBe(0)
    expect(JSON.stringify(settlementOf(planted.result).structured)).toContain(join(box.location, "tools"))
    expect(existsSync(join(box.location, "tools"))).toBe(false)
  }, 60_000)

  // The plant there and gone again, over and over: a load that only looked before reading was beaten 4 times in 25.
  test("a command planting and removing a tool over and over never has it imported by another core process", async () => {
    const { box, env, marker, command } = scene(
      (marker) =>
        `touch started.flag\nend=$(( $(date +%s) + 3 ))\nwhile [ $(date +%s) -lt $end ]; do\n  mkdir -p tools\n  printf '%s\\n' 'require("node:fs").appendFileSync(${marker}, "x")' 'export default 1' > tools/pwn.ts\n  sleep 0.02\n  rm -rf tools\n  sleep 0.02\ndone\n`,
    )
    let done = false
    const flapping = command().finally(() => (done = true))
    await until(join(box.location, "started.flag"))
    // Two hosts' worth of calls, one after another for as long as the command runs (dozens, where nothing holds them).
    const listings = await Promise.all(
      Array.from({ length: 2 }, async () => {
        const codes: Array<number> = []
        do codes.push((await run(["exec", "list", "--input", "{}", "--location", box.location], { env })).code)
        while (!done)
        return codes
      }),
    )
    expect((await flapping).code).toBe(0)
    expect(listings.flat().every((code) => code === 0)).toBe(true)
    expect(existsSync(marker)).toBe(false)
  }, 60_000)

  test("a core serve of the Location holds its hot reload while a command of it runs in another core process, and reloads after", async () => {
    const { box, marker, command } = scene(
      (marker) =>
        `mkdir -p tools\nprintf '%s\\n' 'require("node:fs").writeFileSync(${marker}, "x")' 'import { Tool } from "@core/tool"' 'import { Effect, Schema } from "effect"' 'export default Tool.make({ description: "p", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("p") })' > tools/pwn.ts\nsleep 3\n`,
    )
    const server = await serve(box)
    const planted = await command()
    expect(planted.code).toBe(0)
    expect(existsSync(join(box.location, "tools"))).toBe(false)
    // Past a reload's quiet period, and the lock's next try.
    await Bun.sleep(1_000)
    expect(existsSync(marker)).toBe(false)
    expect((await server.turn()).definitions.map((definition: { name: string }) => definition.name)).not.toContain("pwn")
    // A tool a person adds afterwards is loaded as ever: the reload was held, not stopped.
    mkdirSync(join(box.location, "tools"), { recursive: true })
    writeFileSync(
      join(box.location, "tools", "mine.ts"),
      'import { Tool } from "@core/tool"\nimport { Effect, Schema } from "effect"\nexport default Tool.make({ description: "m", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("m") })\n',
    )
    for (let tries = 0; tries < 50; tries++) {
      if ((await server.turn()).definitions.some((definition: { name: string }) => definition.name === "mine")) break
      await Bun.sleep(100)
    }
    expect((await server.turn()).definitions.map((definition: { name: string }) => definition.name)).toContain("mine")
  }, 60_000)

  /** Runs the scene's command, kills its core once the command has made `made.flag`, then lists in the Location. */
  const killedOnceMade = async ({ box, env, command }: ReturnType<typeof scene>) => {
    const killed = command()
    await until(join(box.location, "made.flag"))
    process.kill(runningCore(box.location), "SIGKILL")
    await killed
    return run(["exec", "list", "--input", "{}", "--location", box.location], { env })
  }

  test("a core killed while its command's plant stands: no core loads the Location until a person has looked", async () => {
    const { box, env, marker, command } = scene(
      (marker) =>
        `mkdir -p tools\nprintf '%s\\n' 'require("node:fs").writeFileSync(${marker}, "x")' 'export default 1' > tools/pwn.ts\necho $$ > command.pid\ntouch planted.flag\nsleep 30\n`,
    )
    // A serve of the Location, loaded before: its hot reload of the planted file is refused as well.
    const server = await serve(box)
    const killed = command()
    await until(join(box.location, "planted.flag"))
    const core = runningCore(box.location)
    process.kill(core, "SIGKILL")
    await killed
    // Its supervisor ends the command; nothing undoes the plant.
    const commandPid = Number(readFileSync(join(box.location, "command.pid"), "utf8"))
    for (let tries = 0; tries < 100 && aliveIn(box.location, commandPid); tries++) await Bun.sleep(50)
    expect(aliveIn(box.location, commandPid)).toBe(false)
    expect(existsSync(join(box.location, "tools", "pwn.ts"))).toBe(true)
    const guards = join(box.data, "guards")
    const records = () => readdirSync(guards).filter((name) => name.endsWith(".json"))
    expect(records()).toHaveLength(1)

    await server.stderrUntil((stderr) => stderr.includes("core will not load"), "the reload refused")
    expect(existsSync(marker)).toBe(false)
    expect((await server.turn()).definitions.map((definition: { name: string }) => definition.name)).not.toContain("pwn")

    const refused = await run(["exec", "list", "--input", "{}", "--location", box.location], { env })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain(`core will not load ${box.location}: a command that core process ${core} ran here`)
    expect(refused.stderr).toContain(`${join(box.location, "tools")} is no longer what it was`)
    expect(refused.stderr).toContain(`then remove ${join(guards, records()[0]!)} and start core again`)
    expect(existsSync(marker)).toBe(false)
    // Another Location loads, and the record stays for this one.
    expect((await run(["exec", "list", "--input", "{}", "--location", tempDir("core-other-")], { env })).code).toBe(0)
    expect(records()).toHaveLength(1)

    // The person takes the plant out and the record away: the Location loads.
    rmSync(join(box.location, "tools"), { recursive: true })
    rmSync(join(guards, records()[0]!))
    const listed = await run(["exec", "list", "--input", "{}", "--location", box.location], { env })
    expect(listed.code).toBe(0)
    expect(existsSync(marker)).toBe(false)
  }, 60_000)

  // The note named the .git of the folders above the Location, not the Location's own where it had none: a repository
  // a killed core's command made there (its config's fsmonitor run by the user's next git status) went unseen.
  test("a core killed while its command made the Location a repository: no core loads it until a person has looked", async () => {
    const made = scene(() => "git init -q .\nprintf '[core]\\n\\tfsmonitor = touch planted\\n' >> .git/config\ntouch made.flag\nsleep 30\n")
    const { box } = made
    const refused = await killedOnceMade(made)
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain(`${join(box.location, ".git")} is no longer what it was`)
  }, 60_000)

  // A repository the command made deeper in the Location, or added at a gitlink of the Location's (the user's next
  // `git status` at the root runs its fsmonitor), is stripped of what git runs when the command ends: not when core
  // is killed first. The note names the repositories it found; one found since stands in the way.
  test("a core killed while its command made a nested repository, or added one at a gitlink: no core loads it", async () => {
    for (const add of [false, true]) {
      const made = scene(
        () =>
          `git init -q vendor/lib\nprintf '[core]\\n\\tfsmonitor = touch planted\\n' >> vendor/lib/.git/config\n` +
          `${add ? "git -C vendor/lib -c user.name=m -c user.email=m@x commit -q --allow-empty -m i\ngit add vendor/lib\n" : ""}touch made.flag\nsleep 30\n`,
      )
      const { box } = made
      expect(Bun.spawnSync(["git", "init", "-q"], { cwd: box.location }).exitCode).toBe(0)
      const refused = await killedOnceMade(made)
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain(`${join(box.location, "vendor/lib")} is no longer what it was`)
    }
  }, 60_000)

  // A parent that does not reap at once (a container's pid 1 that never does) leaves the killed core a zombie: it
  // keeps its start time in /proc, but no longer its lock.
  test("a core killed and not yet reaped counts as dead: its plant is refused as well", async () => {
    const { box, env, marker } = scene(() => "")
    const script = join(tempDir("core-script-"), "plant.sh")
    writeFileSync(
      script,
      `mkdir -p tools\nprintf '%s\\n' 'require("node:fs").writeFileSync(${JSON.stringify(marker)}, "x")' 'export default 1' > tools/pwn.ts\ntouch planted.flag\nsleep 30\n`,
    )
    const exec = [await binary(), "exec", "bash", "--input", JSON.stringify({ command: `sh ${script}` }), "--location", box.location, "--yes"]
    // The core's parent execs into a sleep, which never reaps it.
    const parent = Bun.spawn(["sh", "-c", `"$@" >/dev/null 2>&1 & exec sleep 60`, "sh", ...exec], {
      env: { ...process.env, ...env },
      stdout: "ignore",
      stderr: "ignore",
    })
    try {
      await until(join(box.location, "planted.flag"))
      const core = runningCore(box.location)
      process.kill(core, "SIGKILL")
      for (let tries = 0; tries < 100 && !/\) Z /.test(readFileSync(`/proc/${core}/stat`, "latin1")); tries++) await Bun.sleep(20)
      expect(readFileSync(`/proc/${core}/stat`, "latin1")).toMatch(/\) Z /)
      const refused = await run(["exec", "list", "--input", "{}", "--location", box.location], { env })
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain(`core will not load ${box.location}: a command that core process ${core} ran here`)
      expect(existsSync(marker)).toBe(false)
    } finally {
      parent.kill("SIGKILL")
    }
  }, 60_000)

  test("a core killed while its command ran, leaving everything as it was: its record goes and the Location loads", async () => {
    const { box, env, command } = scene(() => "touch started.flag\nsleep 30\n")
    const killed = command()
    await until(join(box.location, "started.flag"))
    process.kill(runningCore(box.location), "SIGKILL")
    await killed
    const guards = join(box.data, "guards")
    expect(readdirSync(guards).filter((name) => name.endsWith(".json"))).toHaveLength(1)
    const listed = await run(["exec", "list", "--input", "{}", "--location", box.location], { env })
    expect(listed.code).toBe(0)
    expect(readdirSync(guards).filter((name) => name.endsWith(".json"))).toEqual([])
  }, 60_000)
})
