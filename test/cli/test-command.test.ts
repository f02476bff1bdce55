// `core test` end to end: a workspace made by the compiled `core init` is tested by the binary alone, with no bun
// on the PATH (core acts as Bun), as an author who installed only core would; and `core init` inside another
// package gives the workspace a package.json of its own, so `npm install` there never changes the outer one.

import { beforeAll, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { binary, type Run } from "../support/binary"
import { tempDir } from "../support/temp"

const SLOW = 60_000
const { version: VERSION } = (await Bun.file(join(import.meta.dir, "../../package.json")).json()) as { version: string }

/** A PATH with `core` (a link to the built binary) and the system's programs, and no bun anywhere on it. */
const bareEnv = async (): Promise<Record<string, string>> => {
  const bin = tempDir("core-path-")
  symlinkSync(await binary(), join(bin, "core"))
  const PATH = `${bin}:/usr/bin:/bin`
  expect(Bun.which("bun", { PATH })).toBeNull()
  return { PATH, HOME: tempDir("core-home-"), CORE_HOME: tempDir("core-home-"), CORE_DATA_DIR: tempDir("core-data-") }
}

/** Runs `core ARGS` found through the PATH of `env` (only it: nothing of this test runner's environment). */
const core = async (args: ReadonlyArray<string>, cwd: string, env: Record<string, string>): Promise<Run> => {
  const child = Bun.spawn(["core", ...args], { cwd, env, stdout: "pipe", stderr: "pipe" })
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  return { code, stdout, stderr }
}

beforeAll(async () => {
  await binary()
}, 300_000)

describe("core test", () => {
  test("`core init ws && cd ws && core test` passes with no bun on the PATH", async () => {
    const env = await bareEnv()
    const parent = tempDir("core-ws-")
    const made = await core(["init", "ws"], parent, env)
    expect(made.code).toBe(0)
    expect(made.stdout).toContain("Run `core test` there")
    const tested = await core(["test"], join(parent, "ws"), env)
    expect(tested.stderr).toContain("4 pass")
    expect(tested.stderr).toContain(" 0 fail")
    expect(tested.code).toBe(0)
  }, SLOW)

  test("passes its arguments to bun test and exits with its code: a failing test file fails the run", async () => {
    const env = await bareEnv()
    const directory = join(tempDir("core-ws-"), "ws")
    expect((await core(["init", directory], "/", env)).code).toBe(0)
    writeFileSync(
      join(directory, "tools/broken.test.ts"),
      `import { expect, test } from "bun:test"\ntest("a broken expectation", () => expect(1).toBe(2))\n`,
    )
    const all = await core(["test"], directory, env)
    expect(all.code).toBe(1)
    expect(all.stderr).toContain("(fail) a broken expectation")

    const filtered = await core(["test", "tools/example.test.ts"], directory, env)
    expect(filtered.stderr).not.toContain("broken")
    expect(filtered.code).toBe(0)
  }, SLOW)

  test("a test that starts process.execPath gets a Bun, and core on the PATH still answers as core", async () => {
    const env = await bareEnv()
    const directory = join(tempDir("core-ws-"), "ws")
    expect((await core(["init", directory], "/", env)).code).toBe(0)
    writeFileSync(
      join(directory, "tools/spawn.test.ts"),
      `import { expect, test } from "bun:test"
test("process.execPath runs TypeScript", () => {
  const child = Bun.spawnSync([process.execPath, "-e", "console.log(Bun.version)"])
  expect(child.stdout.toString().trim()).toBe(Bun.version)
})
`,
    )
    const tested = await core(["test"], directory, env)
    expect(tested.stderr).toContain(" 0 fail")
    expect(tested.code).toBe(0)
  }, SLOW)

  test("outside a workspace it warns that there is no .core/ and says to run core init", async () => {
    const env = await bareEnv()
    const directory = tempDir("core-plain-")
    writeFileSync(join(directory, "plain.test.ts"), `import { test } from "bun:test"\ntest("plain", () => {})\n`)
    const tested = await core(["test"], directory, env)
    expect(tested.stderr).toContain("no .core/ here or above")
    expect(tested.stderr).toContain("core init")
    expect(tested.code).toBe(0)
  }, SLOW)

  test("a .core/ from another core is named with the command to update it", async () => {
    const env = await bareEnv()
    const directory = join(tempDir("core-ws-"), "ws")
    expect((await core(["init", directory], "/", env)).code).toBe(0)
    writeFileSync(join(directory, ".core/VERSION"), "0.0.1\n")
    const tested = await core(["test"], directory, env)
    expect(tested.stderr).toContain(`is from core 0.0.1, this is core ${VERSION}; run \`core init --update\``)
    expect(tested.code).not.toBe(0)
  }, SLOW)

  test("SIGTERM sent to core alone ends the test run it started, and core exits 130", async () => {
    const env = await bareEnv()
    const directory = join(tempDir("core-ws-"), "ws")
    expect((await core(["init", directory], "/", env)).code).toBe(0)
    writeFileSync(
      join(directory, "tools/hang.test.ts"),
      `import { test } from "bun:test"
test("never ends", async () => {
  console.log("running " + process.pid)
  await new Promise(() => {})
}, 600_000)
`,
    )
    const child = Bun.spawn(["core", "test", "tools/hang.test.ts"], { cwd: directory, env, stdout: "pipe", stderr: "ignore" })
    // Wait for the test to be running: it prints its process id first.
    const reader = child.stdout.getReader()
    let text = ""
    while (!/running \d+\n/.test(text)) {
      const chunk = await reader.read()
      if (chunk.done) throw new Error(`core test ended before its test ran:\n${text}`)
      text += new TextDecoder().decode(chunk.value)
    }
    const runner = Number(/running (\d+)\n/.exec(text)![1])
    expect(runner).not.toBe(child.pid)
    child.kill("SIGTERM")
    expect(await child.exited).toBe(130)
    const stat = `/proc/${runner}/stat`
    const state = existsSync(stat) ? readFileSync(stat, "utf8").split(") ")[1]!.charAt(0) : "gone"
    expect(["gone", "Z"]).toContain(state)
  }, SLOW)

  test("--help prints its usage and runs no tests", async () => {
    const env = await bareEnv()
    const result = await core(["test", "--help"], tempDir(), env)
    expect(result.code).toBe(0)
    expect(result.stdout).toStartWith("Usage: core test [ARGS...]")
  })
})

describe("core init inside another package", () => {
  test("writes the workspace a package.json of its own and says why; the outer package.json is unchanged", async () => {
    const env = await bareEnv()
    const outer = tempDir("core-pkg-")
    const outerJson = `{ "name": "outer", "dependencies": {} }\n`
    writeFileSync(join(outer, "package.json"), outerJson)
    mkdirSync(join(outer, "src"))
    const made = await core(["init", "my-tools"], join(outer, "src"), env)
    expect(made.code).toBe(0)
    const directory = join(outer, "src/my-tools")
    expect(made.stdout).toContain("wrote package.json")
    expect(made.stdout).toContain(`inside the package of ${join(outer, "package.json")}`)
    expect(JSON.parse(readFileSync(join(directory, "package.json"), "utf8"))).toEqual({ private: true })
    expect(readFileSync(join(outer, "package.json"), "utf8")).toBe(outerJson)
    // npm's own rule: the nearest package.json above the tool files is the one `npm install` changes.
    const tested = await core(["test"], directory, env)
    expect(tested.code).toBe(0)
  }, SLOW)

  test("a workspace with its own package.json, or outside any package, gets none written", async () => {
    const env = await bareEnv()
    const own = tempDir("core-pkg-")
    const ownJson = `{ "name": "own" }\n`
    writeFileSync(join(own, "package.json"), ownJson)
    const inOwn = await core(["init"], own, env)
    expect(inOwn.code).toBe(0)
    expect(inOwn.stdout).not.toContain("package.json")
    expect(readFileSync(join(own, "package.json"), "utf8")).toBe(ownJson)

    const alone = join(tempDir("core-ws-"), "ws")
    const made = await core(["init", alone], "/", env)
    expect(made.code).toBe(0)
    expect(existsSync(join(alone, "package.json"))).toBe(false)
  }, SLOW)
})
