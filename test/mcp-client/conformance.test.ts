// The MCP conformance suite's client scenarios that apply to core's client (a tools-only client without
// elicitation, sampling or OAuth), run against core's settling path through ./conformance-client.ts. The
// scenarios left out, and why, are listed in docs/mcp-servers.md.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"

const RUNNER = join(import.meta.dir, "../../node_modules/@modelcontextprotocol/conformance/dist/index.js")
const CLIENT = `${process.execPath} ${join(import.meta.dir, "conformance-client.ts")}`

const scenario = async (name: string) => {
  // The runner needs a newer Node than some machines have; Bun runs it.
  const child = Bun.spawn([process.execPath, RUNNER, "client", "--command", CLIENT, "--scenario", name], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, NO_COLOR: "1" },
  })
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  return { code, output: `${stdout}\n${stderr}` }
}

describe("MCP conformance, client scenarios", () => {
  for (const name of ["initialize", "tools_call", "sse-retry"]) {
    test(`${name} passes`, async () => {
      const { code, output } = await scenario(name)
      expect(output).toContain("OVERALL: PASSED")
      expect(code).toBe(0)
    }, 60_000)
  }
})
