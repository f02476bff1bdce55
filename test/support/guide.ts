// A guide's checked samples: each ```ts block follows a `<!-- check: PATH -->` line naming its file. They are written
// into a workspace made by the compiled `core init`, where tsc must pass and `core test` (bun test, by the Bun inside
// core) must run every sample test and pass. Shared by the tests of each guide that makes that promise.

import { expect } from "bun:test"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { run, type Run } from "./binary"
import { tempDir } from "./temp"

const ROOT = join(import.meta.dir, "../..")

export interface Sample {
  readonly path: string
  readonly code: string
}

/** The marked samples in order, and how many ```ts blocks the guide has in all. */
export const samples = (markdown: string): { readonly marked: ReadonlyArray<Sample>; readonly blocks: number } => {
  const marked = [...markdown.matchAll(/^<!-- check: (\S+) -->\n```ts\n([\s\S]*?)^```$/gm)].map((match) => ({
    path: match[1]!,
    code: match[2]!,
  }))
  return { marked, blocks: [...markdown.matchAll(/^```ts$/gm)].length }
}

export const spawn = async (command: ReadonlyArray<string>, cwd: string): Promise<Run> => {
  const child = Bun.spawn([...command], { cwd, stdout: "pipe", stderr: "pipe" })
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  return { code, stdout, stderr }
}

/** Every marked sample of `guide` is a file, each once, and there is at least one. */
export const expectMarked = (guide: string): void => {
  const { marked, blocks } = samples(guide)
  expect(marked.length).toBe(blocks)
  expect(marked.length).toBeGreaterThan(0)
  expect(new Set(marked.map((sample) => sample.path)).size).toBe(marked.length)
}

/**
 * Writes `guide`'s samples into a workspace made by `core init` (without the kit's example, whose tests would count
 * as the guide's), then checks that they type-check and that `core test` runs every sample test and passes. Answers
 * the workspace.
 */
export const expectSamplesPass = async (guide: string): Promise<string> => {
  const directory = join(tempDir("core-docs-"), "workspace")
  const prepared = await run(["init", directory])
  expect(prepared.stderr).toBe("")
  expect(prepared.code).toBe(0)
  rmSync(join(directory, "tools/example.ts"))
  rmSync(join(directory, "tools/example.test.ts"))
  const { marked } = samples(guide)
  for (const sample of marked) {
    mkdirSync(dirname(join(directory, sample.path)), { recursive: true })
    writeFileSync(join(directory, sample.path), sample.code)
  }

  const typed = await spawn([join(ROOT, "node_modules/.bin/tsc"), "--noEmit", "-p", directory], ROOT)
  expect(typed.stdout + typed.stderr).toBe("")
  expect(typed.code).toBe(0)

  const tested = await run(["test"], { cwd: directory })
  const output = tested.stdout + tested.stderr
  if (tested.code !== 0) throw new Error(`core test failed in ${directory}:\n${output}`)
  for (const sample of marked.filter((sample) => sample.path.endsWith(".test.ts"))) {
    expect(output).toContain(sample.path)
  }
  expect(output).toContain(" 0 fail")
  expect(output).not.toContain("(skip)")
  return directory
}
