// Recorded calls through the compiled binary, attacked as a hostile model would: replaying a call id recorded for
// one agent or tool to another, and reusing a host's call ids (`call_0`, `call_1`) in another Location that shares
// the data directory. A record belongs to its Location, agent and tool; nothing else ever gets it.

import { describe, expect, test } from "bun:test"
import { mkdirSync, writeFileSync } from "node:fs"
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
