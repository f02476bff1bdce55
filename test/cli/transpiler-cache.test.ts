// Bun's runtime transpiler cache, off in the compiled core: Bun kept what it transpiled at run time (a tool file of
// 50 KB or more, core's own search thread started from source) in `$XDG_CACHE_HOME/bun/@t@` (or ~/.bun, or the
// temporary folder) and loaded an entry back by the source's hash alone. A command that may write there (a
// XDG_CACHE_HOME in the temporary folder) wrote an entry for the search thread and had its code run inside core, out
// of the sandbox, at the next grep: it read ~/.aws/credentials and wrote tools/x.ts.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { run } from "../support/binary"
import { tempDir } from "../support/temp"
import { IMPORTS } from "../support/tools"

/** Every file under `directory`, by its path there (none where it does not exist). */
const filesUnder = (directory: string): ReadonlyArray<string> =>
  existsSync(directory) ? (readdirSync(directory, { recursive: true, withFileTypes: true }) as Array<{ isFile(): boolean; parentPath: string; name: string }>).filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name)) : []

describe("Bun's transpiler cache", () => {
  test("core writes and reads no transpiler cache: not for its search thread, not for a large tool file", async () => {
    const root = tempDir("core-transpiler-cache-")
    const location = join(root, "location")
    mkdirSync(join(location, "tools"), { recursive: true })
    writeFileSync(join(location, "notes.txt"), "needle\n")
    // Past the 50 KB from which Bun caches a module it transpiles.
    writeFileSync(
      join(location, "tools", "big.ts"),
      `${IMPORTS}// ${"x".repeat(60 * 1024)}\nexport default Tool.make({ description: "Big", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("big") })\n`,
    )
    const home = join(root, "home")
    mkdirSync(home)
    const env = { HOME: home, XDG_CACHE_HOME: join(root, "cache"), CORE_DATA_DIR: join(root, "data"), CORE_HOME: join(root, "core-home"), CORE_EXEC_FORWARD: "0" }
    const grep = await run(["exec", "grep", "--input", '{"pattern":"needle"}', "--location", location], { env })
    expect({ code: grep.code, stderr: grep.stderr }).toEqual({ code: 0, stderr: "" })
    expect(grep.stdout).toContain("notes.txt")
    const big = await run(["exec", "big", "--input", "{}", "--location", location], { env })
    expect({ code: big.code, stderr: big.stderr }).toEqual({ code: 0, stderr: "" })
    expect(JSON.parse(big.stdout).structured).toBe("big")
    expect([...filesUnder(join(root, "cache")), ...filesUnder(join(home, ".bun"))]).toEqual([])
  }, 120_000)

  // `core test` runs the author's tests in a Bun of its own, which would otherwise cache a large tool file it loads.
  test("core test runs without it too", async () => {
    const root = tempDir("core-transpiler-cache-")
    const env = { HOME: root, XDG_CACHE_HOME: join(root, "cache"), CORE_DATA_DIR: join(root, "data"), CORE_HOME: join(root, "core-home") }
    const workspace = join(root, "ws")
    expect((await run(["init", workspace], { env })).code).toBe(0)
    writeFileSync(join(workspace, "tools", "big.test.ts"), `import { expect, test } from "bun:test"
// ${"x".repeat(60 * 1024)}
test("big", () => expect(1).toBe(1))
`)
    const tested = await run(["test", "tools/big.test.ts"], { env, cwd: workspace })
    expect(tested.stderr).toContain("1 pass")
    expect(tested.code).toBe(0)
    expect(filesUnder(join(root, "cache"))).toEqual([])
  }, 120_000)
})
