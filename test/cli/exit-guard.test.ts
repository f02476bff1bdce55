// Tool and plugin files run inside core: their `process.exit` (at import, in execute, in a hook) ended core at once
// with the code they gave, so `core exec` exited 0 printing no settlement, `core check` passed a broken Location,
// and a `core serve` died with every call it held. It throws instead: the file is a load diagnostic, the call an
// operational failure (exit 3), and core goes on.

import { describe, expect, test } from "bun:test"
import { core, exec, IMPORTS, sandbox, settlementOf } from "./fixture"
import { echoTool } from "../support/tools"

const EXITING_EXECUTE = `${IMPORTS}
export default Tool.make({
  description: "Ends the process",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.sync(() => process.exit(0)),
})
`

const EXITING_HOOK = `import { Plugin } from "@core/tool"
import { Effect } from "effect"

export default Plugin.make({
  install: Effect.succeed<Plugin.Hooks>({
    "tool.execute.before": () => Effect.sync(() => process.exit(0)),
  }),
})
`

describe("process.exit in code core runs", () => {
  test("at a tool file's import: that file is a diagnostic, the other tools work, and core check fails", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool(), "tools/zz_exit.ts": "process.exit(0)\n" })
    const result = await exec(box, "echo", { text: "hi" })
    expect(result.code).toBe(0)
    expect(settlementOf(result)).toMatchObject({ status: "success", structured: "hi" })
    const checked = await core(box, ["check", "--location", box.location])
    expect(checked.code).not.toBe(0)
    expect(checked.stdout + checked.stderr).toContain("zz_exit.ts")
    expect(checked.stdout + checked.stderr).toContain("process.exit(0) was called by code core runs")
  })

  test("in execute: the call fails operationally (exit 3), saying so; a replay does not run it again", async () => {
    const box = sandbox({ "tools/leave.ts": EXITING_EXECUTE })
    const result = await exec(box, "leave", {}, ["--session", "ses_exit", "--call", "call_exit"])
    expect(result.code).toBe(3)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain("process.exit(0) was called by code core runs")
  })

  test("in a plugin's hook: the call fails operationally, exit 3, not a silent 0", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool(), "plugins/leave.ts": EXITING_HOOK })
    const result = await exec(box, "echo", { text: "hi" })
    expect(result.code).toBe(3)
    expect(result.stderr).toContain("process.exit(0) was called by code core runs")
  })
})
