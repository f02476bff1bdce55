// The MCP conformance suite (@modelcontextprotocol/conformance) against `/mcp`: every server scenario it has, with
// the ones core deliberately does not pass listed (with why) in test/fixtures/conformance/expected-failures.yml, so
// a regression, or a listed scenario that starts passing, fails this test. The fixture Location holds the tools the
// scenarios call. The suite's client can send no headers, so a loopback listener in front of the sidecar's web
// handler adds the bearer token; everything else (the Host check included) is the handler's own. The suite speaks
// only HTTP: stdio is covered by the SDK client tests beside this one.

import { expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { sandbox } from "../cli/fixture"
import { Security } from "../../src/server/security"
import { httpSidecar, TOKEN } from "./support"

const FIXTURE = join(import.meta.dir, "../fixtures/conformance")
const SUITE = join(import.meta.dir, "../../node_modules/@modelcontextprotocol/conformance/dist/index.js")

/** The fixture Location's files, copied into a sandbox (core keeps nothing in the repository). */
const fixtureFiles = (): Record<string, string> => {
  const files: Record<string, string> = { "core.json": readFileSync(join(FIXTURE, "core.json"), "utf8") }
  for (const name of readdirSync(join(FIXTURE, "tools"))) {
    files[`tools/${name}`] = readFileSync(join(FIXTURE, "tools", name), "utf8")
  }
  return files
}

test("every server scenario of the conformance suite passes, but those listed as not applying", async () => {
  let port = 0
  const served = await httpSidecar(sandbox(fixtureFiles()), {
    checkHost: (host) => Security.hostChecker("127.0.0.1", port)(host),
  })
  const listener = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: (request) => {
      const headers = new Headers(request.headers)
      headers.set("authorization", `Bearer ${TOKEN}`)
      return served.web.handler(new Request(request, { headers }))
    },
  })
  port = listener.port!
  try {
    const suite = Bun.spawn(
      [
        process.execPath,
        SUITE,
        "server",
        "--url",
        `http://localhost:${port}/mcp`,
        "--suite",
        "all",
        "--expected-failures",
        join(FIXTURE, "expected-failures.yml"),
      ],
      { stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } },
    )
    const [code, stdout, stderr] = await Promise.all([
      suite.exited,
      new Response(suite.stdout).text(),
      new Response(suite.stderr).text(),
    ])
    const summary = stdout.slice(stdout.indexOf("=== SUMMARY ==="))
    expect({ code, summary, stderr: stderr.slice(-2000) }).toMatchObject({ code: 0 })
    expect(summary).toContain("✓ tools-call-with-progress")
    expect(summary).toContain("✓ dns-rebinding-protection")
  } finally {
    await listener.stop(true)
    await served.close()
  }
}, 120_000)
