// webfetch over `core mcp`: the official MCP SDK client calls it over stdio against a local Bun.serve, with a
// core.json rule opening 127.0.0.1, and reads the page as text content, redirects shown; without the rule
// the same call is an isError result saying why.

import { afterAll, describe, expect, test } from "bun:test"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { sandbox, type Sandbox } from "../cli/fixture"
import { webServer } from "../support/web-server"
import { connectStdio } from "./stdio-client"

const web = webServer()
const clients: Array<Client> = []
afterAll(async () => {
  for (const client of clients) await client.close()
  web.stop()
})

const connect = (box: Sandbox) => connectStdio(box, clients)

describe("webfetch over core mcp", () => {
  test("a page comes back as markdown text with its redirects; 127.0.0.1 without a rule is an error", async () => {
    const box = sandbox({ "core.json": JSON.stringify({ permission: { webfetch: { "http://127.0.0.1:*": "allow" } } }) })
    const client = await connect(box)
    const { tools } = await client.listTools()
    expect(tools.find((tool) => tool.name === "webfetch")?.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: true })
    const result = await client.callTool({ name: "webfetch", arguments: { url: web.url("/moved") } }, CallToolResultSchema)
    expect(result.isError).toBeFalsy()
    const text = (result.content as Array<{ text: string }>)[0]!.text
    expect(text).toStartWith(`URL: ${web.url("/article")}\nStatus: 200 OK\n`)
    expect(text).toContain("# Getting started")
    expect(text).toContain(`Redirects: ${web.url("/moved")} → (301) ${web.url("/hop")} → (302) ${web.url("/article")}`)

    const refused = await (await connect(sandbox())).callTool({ name: "webfetch", arguments: { url: web.url("/article") } }, CallToolResultSchema)
    expect(refused.isError).toBe(true)
    expect((refused.content as Array<{ text: string }>)[0]!.text).toContain("is a loopback address")
  })
})
