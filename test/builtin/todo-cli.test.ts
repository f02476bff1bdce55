// todowrite and todoread through the compiled binary: `core exec` calls in separate processes share a session's
// list through the durable store; another session, and another Location with the same data directory, see none of
// it; replaying a recorded todowrite writes nothing; a malformed list exits 1 and writes nothing.

import { describe, expect, test } from "bun:test"
import { core, exec, sandbox } from "../cli/fixture"
import { tempDir } from "../support/temp"

const LIST = [
  { content: "Read the code", status: "completed", priority: "low" },
  { content: "Fix the bug", status: "in_progress", priority: "high" },
]

const structuredOf = (stdout: string) => JSON.parse(stdout).structured

describe("core exec todowrite / todoread", () => {
  test("a list written in one process is read in the next by the same session, and only by it", async () => {
    const box = sandbox()
    const written = await exec(box, "todowrite", { todos: LIST }, ["--session", "ses_1"])
    expect(written.code).toBe(0)
    expect(JSON.parse(written.stdout).content[0].text).toBe(
      "Todo list updated: 2 items (1 in_progress, 1 completed)\n1. [x] Read the code (low)\n2. [>] Fix the bug (high)",
    )
    const read = await exec(box, "todoread", {}, ["--session", "ses_1"])
    expect(read.code).toBe(0)
    expect(structuredOf(read.stdout)).toEqual({ todos: LIST })
    const other = await exec(box, "todoread", {}, ["--session", "ses_2"])
    expect(structuredOf(other.stdout)).toEqual({ todos: [] })
    expect(JSON.parse(other.stdout).content[0].text).toContain("empty (no todos)")
  })

  test("another Location sharing the data directory does not see the list", async () => {
    const box = sandbox()
    await exec(box, "todowrite", { todos: LIST }, ["--session", "ses_1"])
    const elsewhere = tempDir("core-loc-other-")
    const read = await core(box, ["exec", "todoread", "--input", "{}", "--location", elsewhere, "--session", "ses_1"])
    expect(read.code).toBe(0)
    expect(structuredOf(read.stdout)).toEqual({ todos: [] })
  })

  test("replaying a recorded todowrite answers its record and writes nothing", async () => {
    const box = sandbox()
    await exec(box, "todowrite", { todos: LIST }, ["--session", "s", "--call", "c1"])
    await exec(box, "todowrite", { todos: [] }, ["--session", "s", "--call", "c2"])
    const replayed = await exec(box, "todowrite", { todos: LIST }, ["--session", "s", "--call", "c1"])
    expect(replayed.code).toBe(0)
    expect(structuredOf(replayed.stdout)).toEqual({ todos: LIST })
    expect(structuredOf((await exec(box, "todoread", {}, ["--session", "s"])).stdout)).toEqual({ todos: [] })
  })

  test("a malformed list exits 1 as invalid input and leaves the list as it was", async () => {
    const box = sandbox()
    await exec(box, "todowrite", { todos: LIST }, ["--session", "s"])
    const refused = await exec(box, "todowrite", { todos: [{ content: "", status: "pending" }] }, ["--session", "s"])
    expect(refused.code).toBe(1)
    expect(JSON.parse(refused.stdout).error.kind).toBe("invalid_input")
    expect(structuredOf((await exec(box, "todoread", {}, ["--session", "s"])).stdout)).toEqual({ todos: LIST })
  })
})
