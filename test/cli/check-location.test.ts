// `core check` with no tool name, through the compiled binary, as a CI job runs it: exit 0 for a sound Location;
// exit 1 naming every problem (a broken tool file, a plugin that fails, an MCP server that does not start, an
// invalid core.json, a tool a provider cannot take, a failing definition hook); the servers and their tools listed.

import { describe, expect, test } from "bun:test"
import { BUN, FIXTURE } from "../mcp-client/support"
import { echoTool } from "../support/tools"
import { core, IMPORTS, sandbox } from "./fixture"

const ECHO = echoTool()

interface Report {
  readonly location: string
  readonly provider?: string
  readonly tools: number
  readonly servers: ReadonlyArray<{ name: string; status: string; tools: ReadonlyArray<string> }>
  readonly problems: ReadonlyArray<{ kind: string; file?: string; message?: string; tool?: string }>
}

const check = async (box: ReturnType<typeof sandbox>, extra: ReadonlyArray<string> = []) => {
  const result = await core(box, ["check", "--location", box.location, ...extra])
  return { ...result, report: (result.stdout === "" ? undefined : JSON.parse(result.stdout)) as Report }
}

describe("core check of a whole Location", () => {
  test("a sound Location with its own tool: exit 0, no problems, nothing on stderr", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO, "core.json": `{ "permission": { "*": "allow" } }` })
    const result = await check(box)
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    expect(result.report.problems).toEqual([])
    expect(result.report.tools).toBeGreaterThanOrEqual(9)
    expect(result.report.servers).toEqual([])
  }, 60_000)

  test("a broken tool file is exit 1 naming the file and the reason; the sound ones do not count", async () => {
    const box = sandbox({
      "tools/echo.ts": ECHO,
      "tools/broken.ts": `${IMPORTS}\nexport default Tool.make({ description: "x", \n`,
      "tools/missing.ts": `import slug from "no-such-package-anywhere"\nexport default slug\n`,
    })
    const result = await check(box)
    expect(result.code).toBe(1)
    const files = result.report.problems.map((problem) => [problem.kind, problem.file?.split("/").pop()])
    expect(files.sort()).toEqual([
      ["tool", "broken.ts"],
      ["tool", "missing.ts"],
    ])
    expect(result.stderr).toContain("tools/broken.ts: ")
    expect(result.stderr).toContain("no-such-package-anywhere")
    expect(result.stderr).toContain("core check: 2 problems in ")
  }, 60_000)

  // A problem's message is the file's own words (a tool file that throws, an MCP server's stderr), and a file's
  // name may be the model's: neither may drive the terminal or pass for a line of core's own.
  test("a problem's file and message show escaped, its lines after the first indented; the report stays JSON", async () => {
    const box = sandbox({
      "tools/boom.ts": 'throw new Error("LOADFAIL\\u001b[31mRED\\u001b]52;c;SGVsbG8=\\u0007\\u009b31m\\u202eRTL\\ncore: check passed")\n',
      "tools/x\u001b[31m.ts": "export default 1\n",
    })
    const result = await check(box)
    expect(result.code).toBe(1)
    expect(result.stderr + result.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/)
    expect(result.stderr).toContain("LOADFAIL\\u001b[31mRED\\u001b]52;c;SGVsbG8=\\u0007\\u009b31m\\u202eRTL\n  core: check passed")
    expect(result.stderr).toContain("tools/x\\u001b[31m.ts: ")
    expect(result.stderr.split("\n").filter((line) => line.startsWith("core: check passed"))).toEqual([])
    expect(result.report.problems.map((problem) => problem.message).join("\n")).toContain("LOADFAIL\u001b[31mRED")
  }, 60_000)

  test("a plugin that fails to install, and one whose definition hook throws, are each a plugin problem", async () => {
    const box = sandbox({
      "plugins/throws.ts": `import { Plugin } from "@core/tool"\nimport { Effect } from "effect"\nexport default Plugin.make({ install: Effect.sync(() => { throw new Error("database is down") }) })\n`,
      "plugins/hook.ts": `import { Plugin } from "@core/tool"\nimport { Effect } from "effect"\nexport default Plugin.make({ install: Effect.succeed({ tools: ["read"], "tool.definition": () => { throw new Error("hook broke") } }) })\n`,
    })
    const result = await check(box)
    expect(result.code).toBe(1)
    expect(result.report.problems.map((problem) => problem.kind)).toEqual(["plugin", "plugin"])
    expect(result.stderr).toContain("failed to install: database is down")
    expect(result.stderr).toContain("hook broke")
  }, 60_000)

  test("MCP servers are connected and their tools listed; one that does not start is a problem naming it", async () => {
    const box = sandbox({
      "core.json": JSON.stringify({
        mcp: { fix: { command: [BUN, FIXTURE] }, ghost: { command: ["/nonexistent/server"] } },
      }),
    })
    const result = await check(box)
    expect(result.code).toBe(1)
    const [fix, ghost] = result.report.servers
    expect(fix).toMatchObject({ name: "fix", status: "connected" })
    expect(fix!.tools).toContain("fix_echo")
    expect(ghost).toEqual({ name: "ghost", status: "failed", tools: [] })
    expect(result.report.problems).toEqual([
      { kind: "mcp", file: expect.stringContaining("core.json"), message: expect.stringContaining('MCP server "ghost"') },
    ])
  }, 120_000)

  test("an invalid core.json is exit 1 naming the file, the key and what was expected", async () => {
    const box = sandbox({ "core.json": `{ "permission": { "bash": "sometimes" } }` })
    const result = await check(box)
    expect(result.code).toBe(1)
    expect(result.report.problems).toEqual([
      { kind: "config", file: expect.stringContaining("core.json"), message: expect.stringContaining("permission.bash") },
    ])
    // The shape --help promises, whatever the problem: a script reading .servers[] does not break.
    expect(result.report).toMatchObject({ location: box.location, tools: 0, servers: [] })
    expect(result.stderr).toContain("core.json")
  }, 60_000)

  test("with --provider, a tool the provider cannot take is a provider problem beside the others", async () => {
    const box = sandbox({
      "tools/labels.ts": `${IMPORTS}
export default Tool.make({
  description: "Label things",
  input: Schema.Struct({ labels: Schema.Record(Schema.String, Schema.String) }),
  output: Schema.String,
  execute: () => Effect.succeed("ok"),
})
`,
      "tools/broken.ts": "export default (\n",
    })
    const result = await check(box, ["--provider", "gemini"])
    expect(result.code).toBe(1)
    expect(result.report.provider).toBe("gemini")
    expect(result.report.problems.map((problem) => [problem.kind, problem.tool ?? problem.file?.split("/").pop()])).toEqual([
      ["tool", "broken.ts"],
      ["provider", "labels"],
    ])
    expect(result.stderr).toContain("labels: input `labels` is a record")
    // Without --provider no provider's rules apply.
    const unmapped = await check(box)
    expect(unmapped.report.problems.map((problem) => problem.kind)).toEqual(["tool"])
    expect(unmapped.report.provider).toBeUndefined()
  }, 60_000)

  test("usage errors: --input without NAME, NAME with --provider, an unknown provider, a missing Location", async () => {
    const box = sandbox()
    for (const [args, says] of [
      [["check", "--input", "{}", "--location", box.location], "NAME is required with --input"],
      [["check", "--agent", "plan", "--location", box.location], "--agent checks one call of that agent: core check NAME"],
      [["check", "read", "--provider", "gemini", "--location", box.location], "it takes no NAME"],
      [["check", "--provider", "cohere", "--location", box.location], 'unknown provider "cohere"'],
      [["check", "--location", `${box.location}/missing`], "does not exist"],
    ] as const) {
      const result = await core(box, args)
      expect([args, result.code]).toEqual([args, 2])
      expect(result.stderr).toContain(says)
      expect(result.stdout).toBe("")
    }
  }, 60_000)
})
