// The MCP client configurations docs/mcp.md gives (Claude Desktop, Claude Code, Cursor, Gemini CLI, Codex,
// OpenCode): each block is read from the doc, its command must be the installed `core`, and core started with its
// arguments (in the project's directory, as those clients start it, with the doc's placeholder project path made
// real) serves the project to the official SDK client.

import { afterEach, describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { sandbox } from "../cli/fixture"

const ROOT = join(import.meta.dir, "../..")
const MAIN = join(ROOT, "src/cli/main.ts")
const DOC = readFileSync(join(ROOT, "docs/mcp.md"), "utf8")
const PLACEHOLDER = "/path/to/project"
const CLIENTS = ["claude-desktop", "claude-code", "cursor", "gemini-cli", "codex", "opencode"]

/** Each `<!-- mcp-config: NAME -->` block of the doc: its language and text. */
const blocks = (): Map<string, { readonly language: string; readonly text: string }> => {
  const found = new Map<string, { language: string; text: string }>()
  for (const match of DOC.matchAll(/<!-- mcp-config: ([a-z-]+) -->\n```(\w+)\n([\s\S]*?)\n```/g)) {
    found.set(match[1]!, { language: match[2]!, text: match[3]! })
  }
  return found
}

/** The command line a block makes its client run. */
const commandOf = (block: { readonly language: string; readonly text: string }): ReadonlyArray<string> => {
  if (block.language === "sh") {
    // claude mcp add NAME -- COMMAND ARGS...
    const words = block.text.trim().split(/\s+/)
    return words.slice(words.indexOf("--") + 1)
  }
  if (block.language === "toml") {
    const server = (Bun.TOML.parse(block.text) as any).mcp_servers.core
    return [server.command, ...server.args]
  }
  const config = JSON.parse(block.text)
  if (config.mcp !== undefined) {
    expect(config.mcp.core.type).toBe("local")
    return config.mcp.core.command
  }
  return [config.mcpServers.core.command, ...config.mcpServers.core.args]
}

const open: Array<Client> = []
afterEach(async () => {
  for (const client of open.splice(0)) await client.close()
})

describe("the MCP client configurations in docs/mcp.md", () => {
  test("there is one for each client", () => {
    expect([...blocks().keys()].sort()).toEqual([...CLIENTS].sort())
  })

  for (const name of CLIENTS) {
    test(`${name}: the installed core with arguments core mcp accepts serves the project`, async () => {
      const block = blocks().get(name)
      expect(block).toBeDefined()
      const [command, ...args] = commandOf(block!)
      expect(command).toBe("core")
      expect(args[0]).toBe("mcp")
      const box = sandbox({ "marker.txt": `served for ${name}` })
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [MAIN, ...args.map((arg) => (arg === PLACEHOLDER ? box.location : arg))],
        // Started in the project's directory, except where the doc names the project itself.
        cwd: args.includes(PLACEHOLDER) ? "/" : box.location,
        env: { PATH: process.env.PATH ?? "", HOME: box.home, ...box.env },
        stderr: "pipe",
      })
      const client = new Client({ name, version: "1.0.0" })
      await client.connect(transport)
      open.push(client)
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("read")
      const read = await client.callTool({ name: "read", arguments: { filePath: "marker.txt" } })
      expect(JSON.stringify(read.content)).toContain(`served for ${name}`)
    }, 60_000)
  }
})
