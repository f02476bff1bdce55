import { describe, expect, test } from "bun:test"
import { spawnSync } from "node:child_process"
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import * as Effect from "effect/Effect"
import { Config } from "../../src/config/config"
import { tempDir } from "../support/temp"

const directories = () => {
  const root = tempDir()
  const location = join(root, "site")
  const home = join(root, "home")
  mkdirSync(location)
  mkdirSync(home)
  return { location, home }
}

const load = (options: Config.LoadOptions) => Effect.runPromise(Config.load(options))
const loadFailure = (options: Config.LoadOptions) => Effect.runPromise(Effect.flip(Config.load(options)))

describe("Config.load", () => {
  test("resolves to nothing when neither file exists, nor either directory", async () => {
    const { location, home } = directories()
    expect(await load({ location, home })).toEqual({ files: [], rules: [], agents: new Map(), output: {}, shell: {}, retentionDays: {} })
    expect((await load({ location: join(location, "absent"), home: join(home, "absent") })).files).toEqual([])
  })

  test("reads both files and merges them, the Location's winning", async () => {
    const { location, home } = directories()
    writeFileSync(join(home, "core.json"), '{ "permission": { "*": "ask" }, "output": { "maxLines": 100, "maxBytes": 2048 } }')
    writeFileSync(
      join(location, "core.json"),
      '// this Location\n{ "permission": { "bash": { "*": "deny", "1": "allow" } }, "output": { "maxLines": 200, }, }',
    )
    const resolved = await load({ location, home })
    expect(resolved.files).toEqual([join(home, "core.json"), join(location, "core.json")])
    expect(resolved.rules).toEqual([
      { action: "*", resource: "*", effect: "ask", source: { file: join(home, "core.json"), path: 'permission["*"]' } },
      { action: "bash", resource: "*", effect: "deny", source: { file: join(location, "core.json"), path: 'permission.bash["*"]' } },
      { action: "bash", resource: "1", effect: "allow", source: { file: join(location, "core.json"), path: 'permission.bash["1"]' } },
    ])
    expect(resolved.output).toEqual({ maxLines: 200, maxBytes: 2048 })
  })

  test("ignores a byte order mark at the start of a file", async () => {
    const { location, home } = directories()
    writeFileSync(join(location, "core.json"), '\uFEFF{ "permission": { "deploy": "deny" } }')
    const resolved = await load({ location, home })
    expect(resolved.rules.map((rule) => [rule.action, rule.effect])).toEqual([["deploy", "deny"]])
  })

  test("reads only the file that exists", async () => {
    const { location, home } = directories()
    writeFileSync(join(home, "core.json"), '{ "shell": { "timeoutMs": 5000 } }')
    const resolved = await load({ location, home })
    expect(resolved.files).toEqual([join(home, "core.json")])
    expect(resolved.shell).toEqual({ timeoutMs: 5000 })
  })

  test("names files by absolute path even when given relative directories", async () => {
    const { location, home } = directories()
    writeFileSync(join(location, "core.json"), "{}")
    const resolved = await load({ location: relative(process.cwd(), location), home })
    expect(resolved.files).toEqual([join(location, "core.json")])
  })

  test("reads a Location that is the home directory once", async () => {
    const { location } = directories()
    writeFileSync(join(location, "core.json"), '{ "permission": { "read": "allow" } }')
    const resolved = await load({ location, home: location })
    expect(resolved.files).toEqual([join(location, "core.json")])
    expect(resolved.rules).toHaveLength(1)
  })

  test("fails naming the path when core.json is a directory", async () => {
    const { location, home } = directories()
    mkdirSync(join(location, "core.json"))
    const error = await loadFailure({ location, home })
    expect(error).toMatchObject({
      _tag: "Config.ConfigError",
      file: join(location, "core.json"),
      path: "",
      expected: "a readable file",
      found: "a directory",
    })
    expect(error.message).toBe(`${join(location, "core.json")}: expected a readable file, found a directory`)
  })

  // A FIFO there held core in open(2) for good, deaf to SIGTERM; a link to /dev/zero would read without end.
  test("fails at once, naming what it is, when core.json is a FIFO, a device or too large", async () => {
    const { location, home } = directories()
    const file = join(location, "core.json")
    expect(spawnSync("mkfifo", [file]).status).toBe(0)
    expect((await loadFailure({ location, home })).message).toBe(`${file}: expected a readable file, found a FIFO (a named pipe)`)
    rmSync(file)
    symlinkSync("/dev/zero", file)
    expect((await loadFailure({ location, home })).message).toBe(`${file}: expected a readable file, found a device`)
    rmSync(file)
    writeFileSync(file, `{"a":"${"x".repeat(Config.MAX_FILE_BYTES)}"}`)
    expect((await loadFailure({ location, home })).message).toBe(`${file}: expected a readable file, found more than the ${Config.MAX_FILE_BYTES} bytes a core.json may hold`)
    // A file of /proc says size 0 and holds gigabytes: it read until memory ran out; now it stops at the bound (or
    // at the first read the file refuses).
    rmSync(file)
    symlinkSync("/proc/self/pagemap", file)
    expect((await loadFailure({ location, home })).message).toMatch(
      /core\.json: expected a readable file, found (a file that cannot be read|more than the \d+ bytes a core\.json may hold)$/,
    )
    // In the home too.
    rmSync(file)
    expect(spawnSync("mkfifo", [join(home, "core.json")]).status).toBe(0)
    expect((await loadFailure({ location, home })).message).toBe(`${join(home, "core.json")}: expected a readable file, found a FIFO (a named pipe)`)
  })

  test("fails with the file, line and column when one file is malformed", async () => {
    const { location, home } = directories()
    writeFileSync(join(location, "core.json"), "{}")
    writeFileSync(join(home, "core.json"), '{\n  "output": { "maxLines": "lots" }\n}')
    const error = await loadFailure({ location, home })
    expect(error).toMatchObject({ file: join(home, "core.json"), path: "output.maxLines", line: 2, column: 27 })
    expect(error.message).toBe(`${join(home, "core.json")}:2:27: output.maxLines: expected an integer of at least 8, found "lots"`)
  })
})
