// The executable's own surface (DESIGN §6): version, help for it and for each command, unknown commands.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { core, sandbox } from "./fixture"

const packageJson = (await Bun.file(join(import.meta.dir, "../../package.json")).json()) as { version: string }

describe("the core executable", () => {
  test("--version prints the package version and exits 0", async () => {
    const result = await core(sandbox(), ["--version"])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(`${packageJson.version}\n`)
    expect(result.stderr).toBe("")
  })

  test("--help prints usage naming every command and exits 0", async () => {
    const result = await core(sandbox(), ["--help"])
    expect(result.code).toBe(0)
    expect(result.stderr).toBe("")
    expect(result.stdout).toContain("Usage:")
    for (const command of ["core exec NAME", "core tools", "core output ID", "core mcp", "core check [--location DIR]", "core test [ARGS...]", "CORE_DATA_DIR", "CORE_HOME"]) {
      expect(result.stdout).toContain(command)
    }
  })

  for (const command of ["exec", "tools", "output", "mcp", "check", "init", "test"]) {
    for (const flag of ["--help", "-h"]) {
      test(`${command} ${flag} prints the command's usage and exits 0`, async () => {
        const result = await core(sandbox(), [command, flag])
        expect(result.code).toBe(0)
        expect(result.stderr).toBe("")
        expect(result.stdout).toStartWith(`Usage: core ${command}`)
      })
    }
  }

  test("exec --help documents the exit codes", async () => {
    const result = await core(sandbox(), ["exec", "--help"])
    for (const code of ["0", "1", "2", "3", "4", "130"]) expect(result.stdout).toMatch(new RegExp(`\\b${code}\\b`))
  })

  test("an unknown command exits 2 with a message on stderr and nothing on stdout", async () => {
    const result = await core(sandbox(), ["frobnicate", "--input", "{}"])
    expect(result.code).toBe(2)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain('unknown command "frobnicate"')
    expect(result.stderr).toContain("core --help")
  })

  test("no command at all exits 2 with the usage", async () => {
    const result = await core(sandbox(), [])
    expect(result.code).toBe(2)
    expect(`${result.stdout}${result.stderr}`).toContain("Usage:")
  })
})
