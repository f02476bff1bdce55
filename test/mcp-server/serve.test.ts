// `/mcp` end to end: the compiled `core serve` on a loopback port, the official SDK client over real HTTP with the
// token from the ready line; a call running when SIGTERM arrives is recorded cancelled and the server exits 0.

import { expect, test } from "bun:test"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { runs, sandbox } from "../cli/fixture"
import { serve } from "../server/support"
import { waitTool } from "../support/tools"

const WAIT = waitTool({ record: "wait", progress: { message: "waiting" }, annotations: { readOnly: true } })

test("core serve answers MCP at /mcp with its token; SIGTERM records a running call cancelled and exits 0", async () => {
  const box = sandbox({ "tools/wait.ts": WAIT })
  const served = await serve(box)
  const refused = await fetch(`${served.url}/mcp`, { method: "POST", body: "{}" })
  expect(refused.status).toBe(401)

  const transport = new StreamableHTTPClientTransport(new URL(`${served.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${served.token}` } },
  })
  const client = new Client({ name: "test", version: "1.0.0" })
  await client.connect(transport)
  const { tools } = await client.listTools()
  expect(tools.find((tool) => tool.name === "wait")?.annotations).toEqual({ readOnlyHint: true })

  const call = { name: "wait", arguments: {}, _meta: { sessionID: "ses_e2e", toolCallID: "call_term" } }
  let started!: () => void
  const running = new Promise<void>((resolve) => {
    started = resolve
  })
  const pending = client.callTool(call, CallToolResultSchema, { onprogress: () => started() })
  pending.catch(() => undefined)
  await running
  served.child.kill("SIGTERM")
  const { code } = await served.exited()
  expect(code).toBe(0)
  await client.close().catch(() => undefined)

  const again = await serve(box)
  const settlement = await again.json("GET", "/v1/settlements/ses_e2e/call_term")
  expect(settlement.body.status).toBe("cancelled")
  expect(runs(box, "wait")).toBe(1)
  again.child.kill("SIGTERM")
  await again.exited()
})
