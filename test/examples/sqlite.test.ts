// The example `sqlite_query` plugin (examples/plugins/sqlite.ts), installed as core installs it: one read-only
// connection per Location, held across calls and closed exactly once with the plugin's Scope; queries answer rows,
// writes and bad SQL are model-visible failures; without the database the plugin is a diagnostic.

import { describe, expect, test } from "bun:test"
import { Database } from "bun:sqlite"
import { join } from "node:path"
import { location } from "../../src/sdk/testing"
import { openOn } from "../support/descriptors"
import { tempDir } from "../support/temp"

const PLUGIN = join(import.meta.dir, "../../examples/plugins/sqlite.ts")

/** A Location holding app.db with a few users. */
const project = (): string => {
  const directory = tempDir("core-sqlite-")
  const db = new Database(join(directory, "app.db"))
  db.run("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, email TEXT)")
  db.run("INSERT INTO users (name, email) VALUES ('Ada', 'ada@example.com'), ('Grace', NULL)")
  db.close()
  return directory
}

describe("sqlite_query", () => {
  test("answers rows through one connection held for the Location, closed once when it closes", async () => {
    const directory = project()
    const database = join(directory, "app.db")
    const loc = await location({ directory, plugins: [PLUGIN] })
    expect(loc.diagnostics).toEqual([])
    expect(openOn(database)).toBe(1)
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => loc.settle("sqlite_query", { sql: "SELECT name, email FROM users WHERE id = ?", params: [1] })),
    )
    expect(answers[0]!.structured).toEqual({ columns: ["name", "email"], rows: [["Ada", "ada@example.com"]] })
    expect(answers[0]!.content).toEqual([{ type: "text", text: "name\temail\nAda\tada@example.com" }])
    expect(openOn(database)).toBe(1)
    await loc.close()
    expect(openOn(database)).toBe(0)
  })

  test("a write or invalid SQL is a model-visible failure; the data is unchanged", async () => {
    const directory = project()
    await using loc = await location({ directory, plugins: [PLUGIN] })
    const write = await loc.settle("sqlite_query", { sql: "DELETE FROM users" })
    expect(write.status).toBe("error")
    expect(write.error?.kind).toBe("failure")
    expect(write.error?.message).toContain("readonly")
    const invalid = await loc.settle("sqlite_query", { sql: "SELEC 1" })
    expect(invalid.error?.message).toContain("SQLite refused the query")
    const count = await loc.settle("sqlite_query", { sql: "SELECT count(*) AS n FROM users" })
    expect(count.structured).toEqual({ columns: ["n"], rows: [[2]] })
    expect((await loc.settle("sqlite_query", { sql: "SELECT * FROM users WHERE id = 99" })).content).toEqual([
      { type: "text", text: "No rows (columns: id, name, email)." },
    ])
  })

  test("without app.db the plugin is a diagnostic naming the file, and registers nothing", async () => {
    await using loc = await location({ directory: tempDir("core-sqlite-none-"), plugins: [PLUGIN] })
    expect(loc.diagnostics).toHaveLength(1)
    expect(loc.diagnostics[0]!.message).toContain("app.db does not exist")
    expect((await loc.settle("sqlite_query", { sql: "SELECT 1" })).error?.kind).toBe("unknown")
  })
})
