// Machine-readable output reaches a slow reader whole: the process waits for stdout to drain before it exits
// (DESIGN §6). The reader here waits before its first read, as a busy host or a pipe into a slow consumer does.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { binary } from "../support/binary"
import { echoTool } from "../support/tools"
import { core, exec, IMPORTS, sandbox, type Settlement } from "./fixture"

const BYTES = 3_000_000

const BIG = `${IMPORTS}
export default Tool.make({
  description: "Answer many bytes",
  input: Schema.Struct({ bytes: Schema.Int }),
  output: Schema.String,
  execute: (input) => Effect.succeed("x".repeat(input.bytes)),
})
`

/** Runs `core ARGS | (sleep 2; cat > FILE)` and answers what the reader got and core's exit code. */
const throughSlowReader = async (env: Record<string, string>, args: ReadonlyArray<string>, into: string) => {
  const quoted = [await binary(), ...args].map((arg) => `'${arg.replaceAll("'", "'\\''")}'`).join(" ")
  const shell = Bun.spawn(["bash", "-c", `set -o pipefail; ${quoted} | { sleep 2; cat > '${into}'; }`], {
    env: { ...process.env, ...env },
    stdout: "ignore",
    stderr: "pipe",
  })
  const [code, stderr] = await Promise.all([shell.exited, new Response(shell.stderr).text()])
  return { code, stderr, stdout: await Bun.file(into).text() }
}

/** A tool file that logs with the console as it loads and as it runs. */
const LOUD = `${IMPORTS}
console.log("loud at import")
console.info({ loud: "info" })
console.table([{ loud: "table" }])
export default Tool.make({
  description: "Talks on stdout",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.sync(() => {
    console.log("loud in execute")
    console.dir({ loud: "dir" })
    return "done"
  }),
})
`

describe("stdout", () => {
  // A tool's console.log came before the settlement's JSON on stdout: every host parsing it failed.
  test("holds only what core prints: what a tool file logs goes to stderr", async () => {
    const box = sandbox({ "tools/loud.ts": LOUD })
    const executed = await exec(box, "loud", {})
    expect((JSON.parse(executed.stdout) as Settlement).content).toEqual([{ type: "text", text: "done" }])
    for (const said of ["loud at import", "loud: \"info\"", "loud: \"table\"", "loud in execute", "loud: \"dir\""]) {
      expect([said, executed.stderr.includes(said)]).toEqual([said, true])
    }
    const listed = await core(box, ["tools", "--json", "--location", box.location])
    expect((JSON.parse(listed.stdout) as Array<{ name: string }>).map((definition) => definition.name)).toContain("loud")
    const plain = await core(box, ["tools", "--location", box.location])
    expect(plain.stdout).not.toContain("loud at import")
    expect(plain.stdout).toContain("Talks on stdout")
  }, 60_000)

  test("a multi-megabyte settlement arrives complete at a reader that waits before reading", async () => {
    const box = sandbox({
      "tools/big.ts": BIG,
      "core.json": JSON.stringify({ output: { maxBytes: 10 * BYTES, maxLines: 1_000_000 } }),
    })
    const into = join(box.data, "stdout.json")
    const args = ["exec", "big", "--input", JSON.stringify({ bytes: BYTES }), "--location", box.location]
    const result = await throughSlowReader(box.env, args, into)
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    expect(result.stdout.length).toBeGreaterThan(2 * BYTES)
    const settlement = JSON.parse(result.stdout)
    expect(settlement.status).toBe("success")
    expect(settlement.structured).toBe("x".repeat(BYTES))
    expect(settlement.outputs).toEqual([])
  }, 60_000)

  test("core tools --json arrives complete at a reader that waits before reading", async () => {
    // Enough tools that the definitions outgrow a pipe's buffer.
    const files: Record<string, string> = {}
    for (let index = 0; index < 200; index++) {
      files[`tools/t${index}.ts`] = echoTool({ description: "A tool with a long description. ".repeat(20) })
    }
    const box = sandbox(files)
    const into = join(box.data, "tools.json")
    const result = await throughSlowReader(box.env, ["tools", "--json", "--location", box.location], into)
    expect(result.code).toBe(0)
    expect(result.stdout.length).toBeGreaterThan(65_536)
    const names = (JSON.parse(result.stdout) as Array<{ name: string }>).map((definition) => definition.name)
    expect(names).toContain("t199")
  }, 60_000)
})
