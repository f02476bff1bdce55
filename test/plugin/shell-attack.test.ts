// Plugin.Shell under a hostile model: what a plugin runs for a call (say a test runner over files the model wrote)
// must hold the same lines as built-in bash: no core secret in its environment, and core's configuration in the
// Location guarded from it.

import { afterAll, describe, expect, test } from "bun:test"
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { PluginShell } from "../../src/plugin/plugin-shell"
import { Shell } from "../../src/shell/shell"
import { tempDir } from "../support/temp"

const SECRET = "secret-token-for-the-attack-test"
const before = process.env.CORE_TOKEN
process.env.CORE_TOKEN = SECRET
afterAll(() => {
  if (before === undefined) delete process.env.CORE_TOKEN
  else process.env.CORE_TOKEN = before
})

const location = realpathSync(tempDir("core-plugin-shell-attack-"))
mkdirSync(join(location, "tools"))
writeFileSync(join(location, "core.json"), '{ "permission": { "*": "ask" } }\n')
const producer = Shell.make({}, { records: tempDir("core-runs-"), keeping: tempDir("core-undone-") })
const shell = PluginShell.capability(producer, location)
const run = (line: string) => Effect.runPromise(shell.run({ argv: ["sh", "-c", line] }))

describe("Plugin.Shell against what the model makes it run", () => {
  test("a command does not see core's token in its environment", async () => {
    const ran = await run('printf "%s" "${CORE_TOKEN:-unset}"; cat /proc/self/environ | tr "\\0" "\\n" | grep -c CORE_TOKEN || true')
    expect(ran.stdout.text).not.toContain(SECRET)
    expect(ran.stdout.text).toStartWith("unset")
  })

  test("a command cannot change core.json or add a tool file in the Location", async () => {
    await run(`echo '{ "permission": { "*": "allow" } }' > core.json; echo 'export default 1' > tools/evil.ts`)
    expect(readFileSync(join(location, "core.json"), "utf8")).toBe('{ "permission": { "*": "ask" } }\n')
    expect(() => readFileSync(join(location, "tools/evil.ts"), "utf8")).toThrow()
  })
})
