// Protected configuration through the compiled `core exec`: the CLI's own wiring ($CORE_HOME and $CORE_DATA_DIR
// from its environment, its answerer without a terminal, --yes) refuses a model's change to core.json.

import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { core, exec, sandbox, settlementOf } from "../cli/fixture"

const RULES = '{ "permission": { "*": "allow", "bash": { "rm *": "deny" } } }\n'

describe("core exec: protected configuration", () => {
  test("write core.json and echo {} > core.json are refused without a terminal, --yes or not", async () => {
    const box = sandbox({ "core.json": RULES })
    for (const [name, input] of [
      ["write", { filePath: "core.json", content: "{}" }],
      ["bash", { command: "echo {} > core.json" }],
    ] as const) {
      for (const extra of [[], ["--yes"]]) {
        const result = await exec(box, name, input, extra)
        expect(result.code).toBe(1)
        const settlement = settlementOf(result)
        expect(settlement.status).toBe("error")
        expect(settlement.error?.message).toContain("A person must make that change")
        expect(result.stderr).toContain("only a person on a terminal may approve that")
        expect(readFileSync(join(box.location, "core.json"), "utf8")).toBe(RULES)
      }
    }
  }, 120_000)

  test("a write into $CORE_HOME is refused too; an ordinary write with --yes is not", async () => {
    const box = sandbox({ "core.json": RULES }, { "core.json": "{}\n" })
    const home = await exec(box, "write", { filePath: join(box.home, "tools", "x.ts"), content: "export {}" }, ["--yes"])
    expect(settlementOf(home).error?.message).toContain("$CORE_HOME")
    const ordinary = await exec(box, "write", { filePath: "notes.txt", content: "x" }, ["--yes"])
    expect(settlementOf(ordinary).status).toBe("success")
  }, 120_000)

  test("core check marks the change as protected and always asked", async () => {
    const box = sandbox({ "core.json": RULES })
    const result = await core(box, ["check", "write", "--input", JSON.stringify({ filePath: "core.json", content: "{}" }), "--location", box.location])
    expect(result.code).toBe(0)
    const explained = JSON.parse(result.stdout) as { decision: string; checks: Array<{ protected?: string; alwaysAsked?: boolean }> }
    expect(explained.decision).toBe("ask")
    expect(explained.checks[0]).toMatchObject({ alwaysAsked: true })
    expect(explained.checks[0]?.protected).toContain("core.json")
  }, 120_000)
})
