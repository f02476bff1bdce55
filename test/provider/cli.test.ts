// `core tools --json --provider P` and `core check --provider P` end to end, on the compiled binary: the catalog in
// a provider's tool shape; every tool of a Location linted against a provider's rules, exit 1 naming each tool and
// construct the provider cannot take; usage errors for an unknown provider or a NAME with --provider.

import { describe, expect, test } from "bun:test"
import { core, IMPORTS, sandbox } from "../cli/fixture"
import * as Rules from "./rules"

const RECORD = `${IMPORTS}
export default Tool.make({
  description: "Label things",
  input: Schema.Struct({ labels: Schema.Record(Schema.String, Schema.String) }),
  output: Schema.String,
  execute: () => Effect.succeed("ok"),
})
`

describe("core tools --provider", () => {
  test("--json prints the catalog as the provider's tools, each accepted by its rules", async () => {
    const box = sandbox()
    const result = await core(box, ["tools", "--json", "--provider", "gemini", "--location", box.location])
    expect(result.code).toBe(0)
    const tools = JSON.parse(result.stdout) as Array<any>
    expect(tools.map((tool) => tool.name)).toContain("bash")
    for (const tool of tools) expect([tool.name, Rules.gemini(tool)]).toEqual([tool.name, []])
  })

  test("a tool the provider cannot take is exit 1 naming it, and an unknown provider a usage error", async () => {
    const box = sandbox({ "tools/labels.ts": RECORD })
    const refused = await core(box, ["tools", "--json", "--provider", "openai-strict", "--location", box.location])
    expect(refused.code).toBe(1)
    expect(refused.stdout).toBe("")
    expect(refused.stderr).toContain("cannot be offered to openai-strict models (labels)")
    const unknown = await core(box, ["tools", "--provider", "cohere", "--location", box.location])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('unknown provider "cohere"')
  })
})

describe("core check --provider", () => {
  test("every tool fits: exit 0 with no problems", async () => {
    const box = sandbox()
    const result = await core(box, ["check", "--provider", "anthropic", "--location", box.location])
    expect(result.code).toBe(0)
    const report = JSON.parse(result.stdout)
    expect(report.provider).toBe("anthropic")
    expect(report.tools).toBeGreaterThanOrEqual(8)
    expect(report.problems).toEqual([])
  })

  test("a tool that does not fit: exit 1, the problem as JSON and in words", async () => {
    const box = sandbox({ "tools/labels.ts": RECORD, "core.json": JSON.stringify({ permission: { labels: "deny" } }) })
    // Hidden from every agent by a rule, it is still linted: the check is of the Location's tools.
    const result = await core(box, ["check", "--provider", "gemini", "--location", box.location])
    expect(result.code).toBe(1)
    expect(JSON.parse(result.stdout).problems).toEqual([
      {
        kind: "provider",
        tool: "labels",
        path: "labels",
        construct: "a record (an object whose keys are not listed in advance)",
        reason: expect.stringContaining("Gemini"),
      },
    ])
    expect(result.stderr).toContain("labels: input `labels` is a record")
    const usage = await core(box, ["check", "read", "--provider", "gemini", "--location", box.location])
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain("it takes no NAME")
  })
})
