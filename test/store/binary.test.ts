// Recorded calls through the compiled binary, attacked as a hostile model would: replaying a call id recorded for
// one agent or tool to another, and reusing a host's call ids (`call_0`, `call_1`) in another Location that shares
// the data directory. A record belongs to its Location, agent and tool; nothing else ever gets it.

import { describe, expect, test } from "bun:test"
import { Database } from "bun:sqlite"
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { run } from "../support/binary"
import { tempDir } from "../support/temp"

const SECRET = "token=sk_live_4f1d"

const world = () => {
  const root = tempDir()
  const env = {
    CORE_DATA_DIR: join(root, "data"),
    CORE_HOME: join(root, "home"),
    HOME: join(root, "user"),
  }
  for (const directory of Object.values(env)) mkdirSync(directory, { recursive: true })
  const location = (name: string, file: string) => {
    const directory = join(root, name)
    mkdirSync(directory)
    writeFileSync(join(directory, "notes.txt"), file)
    // `plan` may not read; everything else is allowed.
    writeFileSync(
      join(directory, "core.json"),
      JSON.stringify({ permission: { "*": "allow" }, agents: { plan: { permission: { read: "deny" } } } }),
    )
    return directory
  }
  return { env, location }
}

const exec = (env: Record<string, string>, location: string, tool: string, input: object, ...flags: Array<string>) =>
  run(["exec", tool, "--input", JSON.stringify(input), "--location", location, "--session", "ses_1", "--call", "call_0", ...flags], {
    env,
  }).then((result) => ({ ...result, settlement: result.stdout === "" ? undefined : JSON.parse(result.stdout) }))

describe("core exec: a recorded call belongs to its Location, agent and tool", () => {
  test("an agent denied read does not get a read's record by replaying its call id through list, or through read", async () => {
    const { env, location } = world()
    const project = location("project", `${SECRET}\n`)
    const read = await exec(env, project, "read", { filePath: "notes.txt" })
    expect(read.code).toBe(0)
    expect(read.stdout).toContain(SECRET)

    for (const [tool, input, agent, other] of [
      ["list", {}, "plan", "another tool"],
      ["list", {}, "build", "another tool"],
      ["read", { filePath: "notes.txt" }, "plan", "another agent"],
    ] as const) {
      const replay = await exec(env, project, tool, input, "--agent", agent)
      expect(replay.code).toBe(1)
      expect(replay.stdout).not.toContain(SECRET)
      expect(replay.settlement).toMatchObject({ tool, status: "error", error: { kind: "conflict" } })
      expect(replay.settlement.error.message).toContain(other)
    }
    // The record is still the first caller's, and replays to it alone.
    const again = await exec(env, project, "read", { filePath: "notes.txt" })
    expect(again.stdout).toContain(SECRET)
  }, 120_000)

  test("another Location sharing the data directory runs its own call under the same ids, and replays its own", async () => {
    const { env, location } = world()
    const first = location("first", "first file\n")
    const second = location("second", "second file\n")
    expect((await exec(env, first, "read", { filePath: "notes.txt" })).stdout).toContain("first file")
    const own = await exec(env, second, "read", { filePath: "notes.txt" })
    expect(own.code).toBe(0)
    expect(own.stdout).toContain("second file")
    expect(own.stdout).not.toContain("first file")
    const replayed = await exec(env, second, "read", { filePath: "notes.txt" })
    expect(replayed.stdout).toContain("second file")
  }, 120_000)
})

describe("core exec: a Location's own retention is its alone", () => {
  test("a Location's core.json sets its retention: its records are swept by it, another Location's stay by the operator's", async () => {
    const { env, location } = world()
    const victim = location("victim", "victim file\n")
    const sweeper = location("sweeper", "sweeper file\n")
    const config = JSON.parse(readFileSync(join(sweeper, "core.json"), "utf8"))
    writeFileSync(join(sweeper, "core.json"), JSON.stringify({ ...config, output: { retentionDays: 0.000001 } }))
    expect((await exec(env, victim, "read", { filePath: "notes.txt" })).code).toBe(0)
    expect((await exec(env, sweeper, "read", { filePath: "notes.txt" })).code).toBe(0)
    // Recorded in the store, where every process sharing it sweeps by it.
    const db = new Database(join(env.CORE_DATA_DIR, "core.db"))
    expect(db.query("SELECT location FROM retentions").all()).toEqual([{ location: realpathSync(sweeper) }])
    // The next exec sweeps (as if the last sweep were an hour ago).
    db.exec("UPDATE sweeps SET at = 0")
    db.close()
    await Bun.sleep(50)
    for (const directory of [victim, sweeper]) writeFileSync(join(directory, "notes.txt"), "changed\n")
    expect((await exec(env, sweeper, "list", {}, "--call", "call_sweep")).code).toBe(0)
    // The victim's record is kept by the operator's retention (seven days): its call replays.
    const replay = await exec(env, victim, "read", { filePath: "notes.txt" })
    expect(replay.stdout).toContain("victim file")
    expect(replay.stdout).not.toContain("changed")
    // The sweeper's own record went by its own: its call runs again.
    const again = await exec(env, sweeper, "read", { filePath: "notes.txt" })
    expect(again.stdout).toContain("changed")
  }, 120_000)

  test("the operator's $CORE_HOME/core.json sets it for every Location that sets none", async () => {
    const { env, location } = world()
    const project = location("project", "file\n")
    writeFileSync(join(env.CORE_HOME, "core.json"), JSON.stringify({ output: { retentionDays: 30 } }))
    const settled = await exec(env, project, "read", { filePath: "notes.txt" })
    expect(settled.code).toBe(0)
    expect(settled.stdout).toContain("file")
    const db = new Database(join(env.CORE_DATA_DIR, "core.db"))
    expect(db.query("SELECT location FROM retentions").all()).toEqual([])
    db.close()
  }, 120_000)
})

describe("core exec: a managed output is its Location's and its session's", () => {
  test("another Location's tools, or another session's, cannot read, list, glob or grep it; its own session reads it; a person's core output does", async () => {
    const { env, location } = world()
    const maker = location("maker", "maker\n")
    const prying = location("prying", "prying\n")
    const made = await exec(env, maker, "bash", { command: "seq 1 20000 | sed 's/^/secret-line-/'" }, "--call", "call_big")
    expect(made.code).toBe(0)
    const [kept] = made.settlement.outputs as Array<{ id: string }>
    expect(kept).toBeDefined()
    const preview = made.settlement.content[0].text as string
    const path = /kept in (\/\S+?)(?:[.:;,)]?\s|$)/.exec(preview)?.[1] ?? ""
    expect(path).toContain(kept!.id)
    const outputs = join(env.CORE_DATA_DIR, "outputs")
    expect(path.startsWith(`${outputs}/`)).toBe(true)

    const attempts: Array<[string, object]> = [
      ["read", { filePath: path }],
      ["list", { path: outputs }],
      ["list", { path: join(path, "..") }],
      ["glob", { pattern: "**/*", path: outputs }],
      ["grep", { pattern: "secret-line-19999", path: outputs }],
    ]
    for (const [index, [tool, input]] of attempts.entries()) {
      const attempt = await exec(env, prying, tool, input, "--call", `call_pry_${index}`)
      expect(attempt.stdout).not.toContain("secret-line-19999")
      // A listing never names the output (a refusal may repeat the path it was asked for).
      if (tool !== "read") expect(attempt.stdout).not.toContain(kept!.id)
      expect(attempt.code).not.toBe(0)
    }

    const own = await exec(env, maker, "read", { filePath: path, offset: 19_990 }, "--call", "call_own")
    expect(own.code).toBe(0)
    expect(own.stdout).toContain("secret-line-19999")
    // Another session of the same Location cannot read it, list it, or search it either.
    for (const [index, [tool, input]] of [
      ["read", { filePath: path, offset: 19_990 }],
      ["list", { path: join(path, "..") }],
      ["grep", { pattern: "secret-line-19999", path: join(path, "..") }],
    ].entries() as IterableIterator<[number, [string, object]]>) {
      const other = await run(
        ["exec", tool, "--input", JSON.stringify(input), "--location", maker, "--session", "ses_other", "--call", `call_other_${index}`],
        { env },
      )
      expect(other.stdout).not.toContain("secret-line-19999")
      expect(other.code).not.toBe(0)
    }
    // No command reads it, in its session or another: refused before anything is asked (it asked to leave the
    // Location, and an "always" saved the data directory's folder; the sandbox then refused the read).
    for (const session of ["ses_1", "ses_other"]) {
      const tail = await run(
        ["exec", "bash", "--input", JSON.stringify({ command: `tail -1 ${path}` }), "--location", maker, "--session", session, "--call", `call_tail_${session}`],
        { env },
      )
      expect(tail.stdout).not.toContain("secret-line-19999")
      expect([session, JSON.parse(tail.stdout).status, tail.stdout.includes("with a command")]).toEqual([session, "error", true])
    }
    const person = await run(["output", kept!.id], { env })
    expect(person.code).toBe(0)
    expect(person.stdout).toContain("secret-line-19999")
  }, 180_000)
})
