// The compiled `core` executable for end-to-end tests: built once per test run (per process) into a temp
// directory with the repository's build.ts, so tests never use a stale dist/core.

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const ROOT = join(import.meta.dir, "../..")

let built: Promise<string> | undefined
let builtIn: string | undefined

/** Removes the built binary (~130 MB); the test run's global hook (test/support/run-end.ts) calls it at the end. */
export const removeBuilt = (): void => {
  if (builtIn !== undefined) rmSync(builtIn, { recursive: true, force: true })
  builtIn = undefined
  built = undefined
}

/** The path of a freshly built `core` binary. */
export const binary = (): Promise<string> => {
  built ??= (async () => {
    const directory = mkdtempSync(join(tmpdir(), "core-bin-"))
    builtIn = directory
    const outfile = join(directory, "core")
    const build = Bun.spawn([process.execPath, join(ROOT, "build.ts"), "--outfile", outfile], {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "pipe",
    })
    const [code, stderr] = await Promise.all([build.exited, new Response(build.stderr).text()])
    if (code !== 0) throw new Error(`building core failed (exit ${code}):\n${stderr}`)
    return outfile
  })()
  return built
}

export interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs the binary to completion with the given arguments, environment additions and stdin. */
export const run = async (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly stdin?: string; readonly cwd?: string } = {},
): Promise<Run> => {
  const child = Bun.spawn([await binary(), ...args], {
    cwd: options.cwd ?? tmpdir(),
    env: { ...process.env, ...options.env },
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  })
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  return { code, stdout, stderr }
}
