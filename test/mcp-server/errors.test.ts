// `core mcp` refusing a request as the client reads it: once (the message carried "MCP error -32602: " in front of
// itself, which the client's SDK adds again), with the JSON-RPC code MCP gives the case, in one line of words (a
// tools/call whose params the schema refuses was an internal error whose message was the schema's issues as JSON).

import { afterEach, describe, expect, test } from "bun:test"
import { existsSync } from "node:fs"
import { join } from "node:path"
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

// A tool name is kept with its call's record: one no store keeps as it is was an internal error on Postgres (a NUL),
// or kept as U+FFFD there, so that the same call sent again was a conflict with another tool (a lone surrogate).
describe("core mcp: a tool name no store keeps as it is", () => {
  test("a NUL or a lone surrogate is invalid params, the same each time; a long name settles unknown, kept bounded", async () => {
    const client = await connectStdio(sandbox(), open)
    for (const name of ["to\u0000ol", "to\ud800ol"]) {
      for (const attempt of [1, 2]) {
        const refused = await refusal(client, "tools/call", { name, arguments: {}, _meta: { sessionID: "s", toolCallID: "c" } })
        expect([attempt, refused.code]).toEqual([attempt, ErrorCode.InvalidParams])
        expect(refused.message).toContain(name.includes("\u0000") ? "holds a NUL character" : "is not well-formed Unicode")
      }
    }
    const long = await client.callTool({ name: "r".repeat(1_000_000), arguments: {}, _meta: { sessionID: "s", toolCallID: "long" } })
    expect(long.isError).toBe(true)
    expect(long.content).toEqual([
      {
        type: "text",
        text: expect.stringMatching(/^Unknown tool "r{192}…\(1000000 characters, sha256 [0-9a-f]{64}\)"; nothing ran\./),
      },
    ])
    expect(JSON.stringify(long).length).toBeLessThan(3_000)
  })
})

// `core exec` and the HTTP API refuse a NUL character in a call's input before anything runs or is recorded; over
// MCP the tool ran with it (a write made the file).
describe("core mcp: a NUL character in a call's input", () => {
  test("is refused as invalid input naming where, and nothing runs: answered directly or through the SDK's dispatch", async () => {
    const box = sandbox()
    const client = await connectStdio(box, open)
    const progress: Array<unknown> = []
    // Served once: a plain call after it is answered by the session itself, past the SDK's dispatch.
    expect((await client.callTool({ name: "list", arguments: {} })).isError).toBeUndefined()
    for (const [file, options] of [["direct.txt", undefined], ["dispatched.txt", { onprogress: (update: unknown) => progress.push(update) }]] as const) {
      const result = await client.callTool({ name: "write", arguments: { filePath: file, content: "a\u0000b" } }, undefined, options)
      const settlement = (result._meta as Record<string, { status: string }>)["core/settlement"]
      expect([file, result.isError, settlement?.status]).toEqual([file, true, "error"])
      expect(result.content).toEqual([
        { type: "text", text: "Invalid input for write: content holds a NUL character (\\u0000), which no tool accepts; remove it and call it again." },
      ])
      expect(existsSync(join(box.location, file))).toBe(false)
    }
    // Half of a character too, which no file can hold.
    const half = await client.callTool({ name: "write", arguments: { filePath: "half.txt", content: "a\ud83d" } })
    expect(half.isError).toBe(true)
    expect(half.content).toEqual([
      {
        type: "text",
        text:
          "Invalid input for write: content holds half of a character (the UTF-16 surrogate \\ud83d at position 1, " +
          "without its other half), which no tool accepts; send whole characters and call it again.",
      },
    ])
    expect(existsSync(join(box.location, "half.txt"))).toBe(false)
  })
})
