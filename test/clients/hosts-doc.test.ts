// docs/hosts.md keeps its samples true: each block after a `<!-- check: FILE -->` line is checked, TypeScript by
// the type checker against the real `@core/client` and `ai` (in a folder under dist/, so the repository's
// tsconfig paths and node_modules apply), Python by parsing it as Python 3.9 and importing what it imports.

import { expect, test } from "bun:test"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const ROOT = join(import.meta.dir, "../..")
const GUIDE = await Bun.file(join(ROOT, "docs/hosts.md")).text()

const samples = [...GUIDE.matchAll(/^<!-- check: (\S+) -->\n```(\w+)\n([\s\S]*?)^```$/gm)].map((match) => ({
  file: match[1]!,
  language: match[2]!,
  code: match[3]!,
}))

const run = async (command: ReadonlyArray<string>, cwd = ROOT) => {
  const child = Bun.spawn([...command], { cwd, stdout: "pipe", stderr: "pipe" })
  const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
  return { code, output: stdout + stderr }
}

test("every TypeScript and Python sample of docs/hosts.md is marked for checking", () => {
  const blocks = [...GUIDE.matchAll(/^```(ts|python)$/gm)].length
  expect(samples.map((sample) => sample.language).sort()).toEqual(["python", "ts", "ts", "ts"])
  expect(samples.length).toBe(blocks)
})

test("the TypeScript samples type-check against the client and the AI SDK", async () => {
  const directory = join(ROOT, "dist", `.hosts-samples-${process.pid}`)
  mkdirSync(directory, { recursive: true })
  try {
    const files = samples.filter((sample) => sample.language === "ts").map((sample) => sample.file)
    for (const sample of samples) if (sample.language === "ts") writeFileSync(join(directory, sample.file), sample.code)
    writeFileSync(join(directory, "tsconfig.json"), JSON.stringify({ extends: "../../tsconfig.json", include: files }))
    const result = await run([join(ROOT, "node_modules/.bin/tsc"), "--noEmit", "-p", join(directory, "tsconfig.json")])
    expect(result).toEqual({ code: 0, output: "" })
  } finally {
    rmSync(directory, { recursive: true, force: true })
  }
})

test("the Python sample parses as Python 3.9 and its imports exist", async () => {
  const sample = samples.find((each) => each.language === "python")!
  const imports = sample.code.split("\n").filter((line) => /^(from|import) /.test(line))
  const script = [
    "import ast, sys",
    "ast.parse(sys.argv[1], 'host.py', feature_version=(3, 9))",
    `sys.path.insert(0, ${JSON.stringify(join(ROOT, "clients/python"))})`,
    ...imports,
  ].join("\n")
  expect(await run(["python3", "-I", "-c", script, sample.code])).toEqual({ code: 0, output: "" })
})
