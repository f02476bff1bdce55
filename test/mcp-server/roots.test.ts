// `core mcp` without --location finds its Location as an MCP server should: the client's roots (followed when they
// change), else the working directory, but never `/` or the home, which it refuses on stderr with how to name one.
// The official SDK client over stdio, core run from source.

import { afterEach, describe, expect, test } from "bun:test"
import { pathToFileURL } from "node:url"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ListRootsRequestSchema, ToolListChangedNotificationSchema, type Root } from "@modelcontextprotocol/sdk/types.js"
import { sandbox, type Sandbox } from "../cli/fixture"

const MAIN = join(import.meta.dir, "../../src/cli/main.ts")

const open: Array<Client> = []
afterEach(async () => {
  for (const client of open.splice(0)) await client.close()
})

const envOf = (box: Sandbox) => ({ PATH: process.env.PATH ?? "", HOME: box.home, ...box.env })

/** An SDK client of `core mcp` (no --location) started in `cwd`; with `roots`, a client that lists them. */
const connect = async (box: Sandbox, cwd: string, roots?: { list: Array<Root> }) => {
  const transport = new StdioClientTransport({ command: process.execPath, args: [MAIN, "mcp"], cwd, env: envOf(box), stderr: "pipe" })
  let stderr = ""
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const client = new Client({ name: "test", version: "1.0.0" }, { capabilities: roots === undefined ? {} : { roots: { listChanged: true } } })
  if (roots !== undefined) client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: roots.list }))
  const closed = new Promise<void>((resolve) => {
    client.onclose = () => resolve()
  })
  await client.connect(transport)
  open.push(client)
  return { client, closed, stderr: () => stderr }
}

/** What `read` answers for marker.txt in the Location served. */
const marker = async (client: Client) => {
  const result = await client.callTool({ name: "read", arguments: { filePath: "marker.txt" } })
  return (result.content as Array<{ type: string; text?: string }>).map((part) => part.text ?? "").join("\n")
}

/** `core mcp` (no --location) in `cwd` as a raw client without roots: its exit code and stderr. */
const refusedIn = async (box: Sandbox, cwd: string) => {
  const child = Bun.spawn([process.execPath, MAIN, "mcp"], { cwd, env: envOf(box), stdin: "pipe", stdout: "pipe", stderr: "pipe" })
  const initialize = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
  child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: initialize })}\n`)
  child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`)
  child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })}\n`)
  child.stdin.flush()
  const code = await child.exited
  const stdout = await new Response(child.stdout).text()
  return { code, stdout, stderr: await new Response(child.stderr).text() }
}

describe("core mcp without --location", () => {
  test("started in / by a client without roots, it refuses on stderr, exits 2 and lists no tool of /", async () => {
    const box = sandbox()
    const { code, stdout, stderr } = await refusedIn(box, "/")
    expect(code).toBe(2)
    expect(stderr).toContain("not serving the root directory /")
    expect(stderr).toContain("--location")
    // Only the initialize answer went out: tools/list of / never was.
    expect(stdout.trim().split("\n")).toHaveLength(1)
    expect(JSON.parse(stdout).id).toBe(0)
  })

  test("started in the home directory, it refuses the same way", async () => {
    const box = sandbox()
    const { code, stderr } = await refusedIn(box, envOf(box).HOME)
    expect(code).toBe(2)
    expect(stderr).toContain(`not serving the home directory`)
  })

  test("started in / by a client with roots, it serves the first root that is a local directory", async () => {
    const box = sandbox({ "marker.txt": "root A" })
    // A root that is a file, and one that does not exist, are passed over.
    const roots = {
      list: [
        { uri: pathToFileURL(join(box.location, "marker.txt")).href },
        { uri: pathToFileURL(join(box.location, "missing")).href },
        { uri: pathToFileURL(box.location).href },
      ],
    }
    const { client } = await connect(box, "/", roots)
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("read")
    expect(await marker(client)).toContain("root A")
  })

  test("a change of roots is followed: tools/list_changed, then the new root is served", async () => {
    const first = sandbox({ "marker.txt": "root A" })
    const second = sandbox({ "marker.txt": "root B" })
    const roots = { list: [{ uri: pathToFileURL(first.location).href }] }
    const { client } = await connect(first, "/", roots)
    expect(await marker(client)).toContain("root A")
    const changed = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()))
    roots.list = [{ uri: pathToFileURL(second.location).href }]
    await client.sendRootsListChanged()
    await changed
    expect(await marker(client)).toContain("root B")
  })

  test("a client that supports roots but gives none, in /, is refused and told so", async () => {
    const box = sandbox()
    const { closed, stderr } = await connect(box, "/", { list: [] })
    await closed
    expect(stderr()).toContain("supports roots but gave none")
  })

  test("a root naming / or the home is passed over, as the directory core started in would be: the next root is served, or none", async () => {
    const box = sandbox({ "marker.txt": "the project" })
    const home = envOf(box).HOME
    const { client } = await connect(box, "/", {
      list: [{ uri: "file:///" }, { uri: pathToFileURL(home).href }, { uri: pathToFileURL(box.location).href }],
    })
    expect(await marker(client)).toContain("the project")
    // Only / and the home, started in /: refused, as a client without roots is.
    const refused = await connect(box, "/", { list: [{ uri: "file:///" }, { uri: pathToFileURL(`${home}/`).href }] })
    await refused.closed
    expect(refused.stderr()).toContain("gave none that is a local directory other than / and the home")
  })

  test("a change of roots to / is not followed: the Location served stays", async () => {
    const box = sandbox({ "marker.txt": "root A" })
    const roots = { list: [{ uri: pathToFileURL(box.location).href }] }
    const { client } = await connect(box, "/", roots)
    expect(await marker(client)).toContain("root A")
    roots.list = [{ uri: "file:///" }]
    await client.sendRootsListChanged()
    // The list is asked for again; once it is answered, a call still reads the first Location.
    await Bun.sleep(500)
    expect(await marker(client)).toContain("root A")
    const listed = await client.callTool({ name: "list", arguments: { path: "." } })
    expect(JSON.stringify(listed.content)).not.toContain("etc/")
  })

  test("a client without roots started in a project directory gets that directory", async () => {
    const box = sandbox({ "marker.txt": "the cwd" })
    const { client } = await connect(box, box.location)
    expect(await marker(client)).toContain("the cwd")
  })
})
