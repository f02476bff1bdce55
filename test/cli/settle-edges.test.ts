// What the settler promises, through the compiled `core exec`: a call interrupted at its permission prompt is
// recorded cancelled (settling it again runs nothing), and a tool whose execute is not an Effect is an
// operational failure (exit 3) whose message says what to write instead.

import { describe, expect, test } from "bun:test"
import { exec, IMPORTS, onTerminal, runs, sandbox, settlementOf } from "./fixture"
import { coreJson, recording } from "./permissions-fixture"

describe("a call interrupted at its permission prompt", () => {
  test("is recorded cancelled by the settler; the same session and call again replays it and runs nothing", async () => {
    const box = sandbox({ "tools/deploy.ts": recording("deploy"), ...coreJson({ permission: { deploy: "ask" } }) })
    const ids = ["--session", "ses_prompt", "--call", "call_prompt"]
    // On a pseudo-terminal, so core prompts; ^C typed there is SIGINT for core, as a person's would be.
    const terminal = await onTerminal(box, ["exec", "deploy", "--input", '{"target":"prod"}', "--location", box.location, ...ids])
    await terminal.until("[r]eject:")
    terminal.child.stdin.write("\x03")
    await terminal.child.stdin.flush()
    expect(await terminal.finished()).toBe(130)
    expect(terminal.screen()).toContain('"status": "cancelled"')

    const again = await exec(box, "deploy", { target: "prod" }, [...ids, "--yes"])
    expect(again.code).toBe(130)
    expect(settlementOf(again)).toMatchObject({ tool: "deploy", callID: "call_prompt", status: "cancelled" })
    expect(runs(box, "deploy")).toBe(0)
  })
})

describe("a tool whose execute does not return an Effect", () => {
  test("fails operationally (exit 3) with a message that says to use Effect.promise", async () => {
    const box = sandbox({
      "tools/promised.ts": `${IMPORTS}
export default Tool.make({
  description: "Returns a Promise",
  input: Schema.Struct({}),
  output: Schema.String,
  // @ts-expect-error: the slip under test
  execute: async () => "hi",
})
`,
    })
    const result = await exec(box, "promised", {})
    expect(result.code).toBe(3)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain("promised's execute returned a Promise, not an Effect")
    expect(result.stderr).toContain("Effect.promise")
    expect(result.stderr).not.toContain("Not a valid effect")
  })
})
