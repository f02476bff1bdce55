// docs/plugins.md keeps its promise that every TypeScript sample is checked: each ```ts block follows a
// `<!-- check: PATH -->` line naming its file, and all of them are written into a workspace made by the compiled
// `core init`, where tsc must pass and `bun test` must run every sample test and pass; and the compiled core
// installs the sample plugins there.

import { beforeAll, expect, test } from "bun:test"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { dirname } from "node:path"
import { join } from "node:path"
import { binary, run, type Run } from "../support/binary"
import { tempDir } from "../support/temp"

const ROOT = join(import.meta.dir, "../..")
const GUIDE = await Bun.file(join(ROOT, "docs/plugins.md")).text()
const SLOW = 60_000

interface Sample {
  readonly path: string
  readonly code: string
}

/** The marked samples in order, and how many ```ts blocks the guide has in all. */
const samples = (markdown: string): { readonly marked: ReadonlyArray<Sample>; readonly blocks: number } => {
  const marked = [...markdown.matchAll(/^<!-- check: (\S+) -->\n```ts\n([\s\S]*?)^```$/gm)].map((match) => ({
    path: match[1]!,
    code: match[2]!,
  }))
  return { marked, blocks: [...markdown.matchAll(/^```ts$/gm)].length }
}

const spawn = async (command: ReadonlyArray<string>, cwd: string): Promise<Run> => {
  const child = Bun.spawn([...command], { cwd, stdout: "pipe", stderr: "pipe" })
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

test("every TypeScript sample in the guide is marked with the file it belongs to, each file once", () => {
  const { marked, blocks } = samples(GUIDE)
  expect(marked.length).toBe(blocks)
  expect(marked.length).toBeGreaterThan(0)
  expect(new Set(marked.map((sample) => sample.path)).size).toBe(marked.length)
})

test("the samples type-check and their tests pass in a workspace made by core init", async () => {
  const directory = join(tempDir("core-docs-"), "workspace")
  const prepared = await run(["init", directory])
  expect(prepared.stderr).toBe("")
  expect(prepared.code).toBe(0)
  // Only the guide's own files: the example's tests would count as the guide's.
  rmSync(join(directory, "tools/example.ts"))
  rmSync(join(directory, "tools/example.test.ts"))
  const { marked } = samples(GUIDE)
  for (const sample of marked) {
    mkdirSync(dirname(join(directory, sample.path)), { recursive: true })
    writeFileSync(join(directory, sample.path), sample.code)
  }

  const typed = await spawn([join(ROOT, "node_modules/.bin/tsc"), "--noEmit", "-p", directory], ROOT)
  expect(typed.stdout + typed.stderr).toBe("")
  expect(typed.code).toBe(0)

  const tested = await spawn([process.execPath, "test"], directory)
  const output = tested.stdout + tested.stderr
  if (tested.code !== 0) throw new Error(`bun test failed in ${directory}:\n${output}`)
  for (const sample of marked.filter((sample) => sample.path.endsWith(".test.ts"))) {
    expect(output).toContain(sample.path)
  }
  expect(output).toContain(" 0 fail")
  expect(output).not.toContain("(skip)")

  // core itself installs them: the tools they register are listed, the hooks shown, nothing reported.
  const listed = await run(["tools", "--location", directory], { env: { CORE_HOME: join(directory, ".home"), CORE_DATA_DIR: join(directory, ".data") } })
  expect(listed.stderr).toBe("")
  expect(listed.stdout).toMatch(/^notes\s+Read the project's notes/m)
  expect(listed.stdout).toMatch(/^bash\s.*\[hooks: guard: definition, before\]$/m)
}, SLOW)
