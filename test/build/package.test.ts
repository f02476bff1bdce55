// The npm packages a release publishes (build/package.ts), end to end: packed from the binary the other end-to-end
// tests use, installed with `npm install -g --prefix DIR` from the tarballs alone (offline), and run as `DIR/bin/core`
// with no Node and no Bun on the PATH.

import { beforeAll, describe, expect, test } from "bun:test"
import { cpSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Package from "../../build/package"
import { binary, type Run } from "../support/binary"
import { tempDir } from "../support/temp"

const { version: VERSION } = (await Bun.file(join(import.meta.dir, "../../package.json")).json()) as { version: string }
const PLATFORM = Package.platformPackage(process.platform, process.arch)

let tarballs: ReadonlyArray<{ readonly name: string; readonly file: string }> = []
let prefix = ""

const spawn = async (command: ReadonlyArray<string>, options: { cwd: string; env: Record<string, string> }): Promise<Run> => {
  const child = Bun.spawn([...command], { ...options, stdout: "pipe", stderr: "pipe" })
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  return { code, stdout, stderr }
}

/** A PATH holding only what the launcher uses (sh's builtins aside): no node, no bun, no core. */
const barePath = (): string => {
  const bin = tempDir("core-bare-")
  for (const program of ["sh", "uname", "readlink", "dirname"]) {
    const found = Bun.which(program)
    if (found === null) throw new Error(`${program} is not on this machine's PATH`)
    symlinkSync(found, join(bin, program))
  }
  return bin
}

/** Runs the installed `core` (through npm's bin link) with a bare PATH and a fresh home and data directory. */
const core = (args: ReadonlyArray<string>, cwd = tempDir()) =>
  spawn([join(prefix, "bin/core"), ...args], {
    cwd,
    env: { PATH: barePath(), HOME: tempDir("core-home-"), CORE_HOME: tempDir("core-home-"), CORE_DATA_DIR: tempDir("core-data-") },
  })

/** `tar -tzf` of a tarball: the paths it holds. */
const listing = async (file: string) =>
  (await spawn(["tar", "-tzf", file], { cwd: tempDir(), env: { PATH: process.env.PATH ?? "" } })).stdout.trim().split("\n").sort()

beforeAll(async () => {
  const out = join(tempDir("core-npm-"), "npm")
  tarballs = Package.write({ binary: await binary(), out })
  prefix = tempDir("core-prefix-")
  const installed = await spawn(
    ["npm", "install", "-g", "--prefix", prefix, "--offline", "--no-audit", "--no-fund", ...tarballs.map((t) => t.file)],
    { cwd: out, env: { ...(process.env as Record<string, string>), npm_config_update_notifier: "false" } },
  )
  if (installed.code !== 0) throw new Error(`npm install failed:\n${installed.stderr}`)
}, 600_000)

describe("npm run package", () => {
  test("writes the main package with the core bin and this platform's package with the executable", async () => {
    expect(tarballs.map((tarball) => tarball.name)).toEqual([Package.MAIN, PLATFORM])
    const [main, native] = tarballs
    expect(await listing(main!.file)).toEqual(["package/README.md", "package/bin/core", "package/package.json"])
    expect(await listing(native!.file)).toEqual(["package/bin/core", "package/package.json"])
    const installed = join(prefix, "lib/node_modules", Package.MAIN, "package.json")
    const manifest = (await Bun.file(installed).json()) as Record<string, unknown>
    expect(manifest.bin).toEqual({ core: "bin/core" })
    expect(manifest.optionalDependencies).toEqual({ [PLATFORM]: VERSION })
    const platform = (await Bun.file(join(prefix, "lib/node_modules", PLATFORM, "package.json")).json()) as Record<string, unknown>
    expect(platform.os).toEqual([process.platform])
    expect(platform.cpu).toEqual([process.arch])
  })

  test("npm install -g of the tarballs gives DIR/bin/core, which runs --version with no node or bun on the PATH", async () => {
    expect(readdirSync(join(prefix, "bin"))).toEqual(["core"])
    const result = await core(["--version"])
    expect(result.stderr).toBe("")
    expect(result.stdout).toBe(`${VERSION}\n`)
    expect(result.code).toBe(0)
  })

  test("the installed core settles a call: core exec list in a Location", async () => {
    const location = tempDir("core-loc-")
    mkdirSync(join(location, "src"))
    writeFileSync(join(location, "src/app.ts"), "export {}\n")
    const result = await core(["exec", "list", "--input", "{}", "--location", location])
    expect(result.code).toBe(0)
    const settlement = JSON.parse(result.stdout) as { status: string; content: Array<{ text: string }> }
    expect(settlement.status).toBe("success")
    expect(settlement.content[0]!.text).toContain("app.ts")
  })

  test("a link to the installed core elsewhere (a chain of links) still finds the executable", async () => {
    const bin = tempDir("core-links-")
    symlinkSync(join(prefix, "bin/core"), join(bin, "core"))
    symlinkSync("core", join(bin, "core-again"))
    const result = await spawn([join(bin, "core-again"), "--version"], { cwd: bin, env: { PATH: barePath() } })
    expect(result.stdout).toBe(`${VERSION}\n`)
    expect(result.code).toBe(0)
  })

  test("exit codes and stderr are the executable's own: an unknown command exits 2", async () => {
    const result = await core(["frobnicate"])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('unknown command "frobnicate"')
  })

  test("without its platform package the launcher names the package to install and exits 1", async () => {
    const alone = join(tempDir("core-alone-"), "core")
    cpSync(join(prefix, "lib/node_modules", Package.MAIN), alone, { recursive: true })
    const result = await spawn([join(alone, "bin/core"), "--version"], { cwd: alone, env: { PATH: barePath() } })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain(`the package ${PLATFORM} is not installed`)
  })
})
