// `core mcp` refusing a request as the client reads it: once (the message carried "MCP error -32602: " in front of
// itself, which the client's SDK adds again), with the JSON-RPC code MCP gives the case, in one line of words (a
// tools/call whose params the schema refuses was an internal error whose message was the schema's issues as JSON).

import { afterEach, describe, expect, test } from "bun:test"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import { z } from "zod"
import { sandbox } from "../cli/fixture"
import { connectStdio } from "./stdio-client"

const open: Array<Client> = []
afterEach(async () => {
  for (const client of open.splice(0)) await client.close()
})

/** The error a raw request is refused with (`params` as sent, whatever their shape). */
const refusal = async (client: Client, method: string, params: unknown): Promise<McpError> => {
  try {
    await client.request({ method, params } as never, z.any())
  } catch (error) {
    if (error instanceof McpError) return error
    throw error
  }
  throw new Error(`${method} was answered`)
}

describe("core mcp: refused requests", () => {
  test("an unknown prompt or resource is said once, with its code", async () => {
    const client = await connectStdio(sandbox(), open)
    const prompt = await refusal(client, "prompts/get", { name: "nosuch" })
    expect(prompt.code).toBe(ErrorCode.InvalidParams)
    expect(prompt.message).toBe('MCP error -32602: Unknown prompt "nosuch"; this Location has no skills')
    const resource = await refusal(client, "resources/read", { uri: "core://nosuch" })
    expect(resource.message).toBe("MCP error -32002: Unknown resource core://nosuch: core serves managed outputs as core://outputs/ID")
  })

  test("a tools/call whose name or arguments have the wrong type is invalid params, in one line naming the place", async () => {
    const client = await connectStdio(sandbox(), open)
    const name = await refusal(client, "tools/call", { name: 5, arguments: {} })
    expect(name.code).toBe(ErrorCode.InvalidParams)
    expect(name.message).toBe("MCP error -32602: Invalid params for tools/call: params.name: Invalid input: expected string, received number")
    const input = await refusal(client, "tools/call", { name: "read", arguments: "x" })
    expect(input.code).toBe(ErrorCode.InvalidParams)
    expect(input.message).toContain("params.arguments:")
    expect(input.message).not.toContain("\n")
    // The session goes on: a well-formed call after them is answered.
    expect((await client.callTool({ name: "nosuch", arguments: {} })).isError).toBe(true)
  })
})
