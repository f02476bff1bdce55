// One MCP contract suite run against both of core's transports with the official SDK Client: `core mcp` over stdio
// (run from source) and `/mcp` over streamable HTTP (the sidecar's web handler in process, fed by the client's own
// fetch, no socket). Real Locations in temp directories, real processes checked in /proc.

import { afterEach, describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
  type ElicitResult,
} from "@modelcontextprotocol/sdk/types.js"
import { IMPORTS, runs, sandbox, type Sandbox } from "../cli/fixture"
import { coreJson, recording } from "../cli/permissions-fixture"
import { alive, hostPids } from "../shell/processes"
import { httpSidecar, httpTransport } from "./support"
import { BIG, GREET, HUGE, PICTURE, PIXEL, progressBefore, received } from "./tools"

const MAIN = join(import.meta.dir, "../../src/cli/main.ts")

const version = (n: number) => `${IMPORTS}
export default Tool.make({
  description: "Version ${n}",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed("v${n}"),
})
`

const textOf = (result: { readonly [key: string]: unknown }) =>
  (result.content as ReadonlyArray<{ type: string; text?: string }>)
    .filter((part) => part.type === "text")
    .map((part) => part.text)
    .join("\n")

interface Connected {
  readonly client: Client
  readonly box: Sandbox
}

interface Transport {
  readonly name: string
  /** Connects a client (with form elicitation when `answer` is given) to core serving `box`. */
  readonly connect: (box: Sandbox, answer?: ElicitResult) => Promise<Connected>
}

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const clientFor = (answer: ElicitResult | undefined) => {
  const client = new Client(
    { name: "test", version: "1.0.0" },
    answer === undefined ? {} : { capabilities: { elicitation: { form: {} } } },
  )
  if (answer !== undefined) client.setRequestHandler(ElicitRequestSchema, async () => answer)
  return client
}

const stdio: Transport = {
  name: "stdio (core mcp)",
  connect: async (box, answer) => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MAIN, "mcp", "--location", box.location],
      env: { PATH: process.env.PATH ?? "", HOME: box.home, ...box.env },
      stderr: "pipe",
    })
    const client = clientFor(answer)
    await client.connect(transport)
    cleanups.push(() => client.close())
    return { client, box }
  },
}

const http: Transport = {
  name: "streamable HTTP (/mcp)",
  connect: async (box, answer) => {
    const served = await httpSidecar(box)
    cleanups.push(served.close)
    const client = clientFor(answer)
    await client.connect(httpTransport(served.web.handler))
    cleanups.push(() => client.close())
    return { client, box }
  },
}

for (const transport of [stdio, http]) {
  describe(`MCP over ${transport.name}`, () => {
    test("tools/list carries schemas and the declared annotations as hints, the built-ins' included", async () => {
      const { client } = await transport.connect(sandbox({ "tools/greet.ts": GREET }))
      const { tools } = await client.listTools()
      const byName = new Map(tools.map((tool) => [tool.name, tool]))
      expect(byName.get("greet")).toMatchObject({
        description: "Greets someone",
        inputSchema: { type: "object" },
        outputSchema: { type: "object" },
        annotations: { readOnlyHint: true, openWorldHint: false },
      })
      expect(byName.get("greet")?.annotations).not.toHaveProperty("destructiveHint")
      expect(byName.get("read")?.annotations).toEqual({ readOnlyHint: true, idempotentHint: true, openWorldHint: false })
      expect(byName.get("bash")?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: true })
      expect(byName.get("edit")?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true })
      // Every built-in says whether it writes.
      for (const name of ["read", "glob", "grep", "list", "write", "edit", "apply_patch", "bash"]) {
        expect([name, typeof byName.get(name)?.annotations?.readOnlyHint]).toEqual([name, "boolean"])
      }
    })

    test("a call settles with structured content and progress; an image stays an image", async () => {
      const { client, box } = await transport.connect(sandbox({ "tools/greet.ts": GREET, "tools/picture.ts": PICTURE }))
      await client.listTools()
      const messages = received(client)
      const progress: Array<string | undefined> = []
      const result = await client.callTool({ name: "greet", arguments: { who: "ada" } }, CallToolResultSchema, {
        onprogress: (update) => void progress.push(update.message),
      })
      expect(result.isError).toBeFalsy()
      expect(result.structuredContent).toEqual({ greeting: "hello ada", length: 9 })
      // Sent before the result, for this call (request 2: the listing was 1). The Client hands it on unless it read
      // both at once (see `received`).
      expect(progressBefore(messages, 2)).toEqual(["thinking about ada"])
      expect(progress.length).toBeLessThanOrEqual(1)
      expect(runs(box, "greet")).toBe(1)
      const picture = await client.callTool({ name: "picture", arguments: {} })
      expect(picture.content).toEqual([
        { type: "text", text: "a pixel:" },
        { type: "image", data: PIXEL, mimeType: "image/png" },
      ])
    })

    test("a large output links its managed output, and resources/read returns all of it", async () => {
      const { client } = await transport.connect(
        sandbox({ "tools/big.ts": BIG, ...coreJson({ output: { maxLines: 50, maxBytes: 4096 } }) }),
      )
      const result = await client.callTool({ name: "big", arguments: {} })
      const links = (result.content as Array<{ type: string; uri?: string }>).filter((part) => part.type === "resource_link")
      expect(links).toHaveLength(1)
      expect(links[0]!.uri).toMatch(/^core:\/\/outputs\/[^/]+$/)
      const read = await client.readResource({ uri: links[0]!.uri! })
      const text = (read.contents[0] as { text: string }).text
      expect(text.split("\n")).toHaveLength(5000)
      expect(text).toContain("line 4999")
      expect((await client.listResources()).resources).toEqual([])
    })

    test("a structured value kept out of the result is read back as JSON through its structured link", async () => {
      const { client } = await transport.connect(
        sandbox({ "tools/huge.ts": HUGE, ...coreJson({ output: { maxLines: 50, maxBytes: 4096 } }) }),
      )
      await client.listTools()
      const result = await client.callTool({ name: "huge", arguments: {} })
      expect(result.isError).toBeFalsy()
      const withheld = (result.structuredContent as Record<string, { uri: string }>)["core/withheld"]!
      expect(withheld.uri).toMatch(/^core:\/\/outputs\/[^/]+\/structured$/)
      const read = await client.readResource({ uri: withheld.uri })
      expect(read.contents[0]).toMatchObject({ mimeType: "application/json" })
      expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual({ text: "x".repeat(100000) })
    })

    test("resources/read of an unknown output or another URI is MCP's resource-not-found error", async () => {
      const { client } = await transport.connect(sandbox())
      await expect(client.readResource({ uri: "core://outputs/out_missing" })).rejects.toMatchObject({ code: -32002 })
      await expect(client.readResource({ uri: "file:///etc/passwd" })).rejects.toMatchObject({ code: -32002 })
      await expect(client.readResource({ uri: "core://outputs/../x/y" })).rejects.toMatchObject({ code: -32002 })
    })

    test("cancelling a bash call kills its sleep processes and records it cancelled", async () => {
      const box = sandbox({ ...coreJson({ permission: { bash: "allow" } }) })
      const { client } = await transport.connect(box)
      const abort = new AbortController()
      const call = {
        name: "bash",
        arguments: { command: "sleep 300 & sleep 300 & echo pids $! $$; wait" },
        _meta: { sessionID: "ses_host", toolCallID: "call_sleep" },
      }
      let pids: Array<number> = []
      const pending = client.callTool(call, CallToolResultSchema, {
        signal: abort.signal,
        onprogress: (update) => {
          const match = /pids (\d+) (\d+)/.exec(update.message ?? "")
          if (match === null) return
          // As the host numbers them (the command has a PID namespace of its own where core can give it one).
          pids = hostPids([Number(match[1]), Number(match[2])], box.location)
          expect(pids.every(alive)).toBe(true)
          abort.abort("enough")
        },
      })
      await expect(pending).rejects.toThrow()
      expect(pids).toHaveLength(2)
      // Replaying the call waits for its record: cancelled, its processes gone by then.
      const replay = await client.callTool(call)
      expect(replay._meta?.["core/settlement"]).toMatchObject({ status: "cancelled" })
      expect(pids.some(alive)).toBe(false)
    })

    test("a permission ask is put to the user as a form, and their answer decides", async () => {
      const files = { "tools/deploy.ts": recording("deploy"), ...coreJson({ permission: { deploy: "ask" } }) }
      const { client, box } = await transport.connect(sandbox(files), { action: "accept", content: { reply: "once" } })
      const result = await client.callTool({ name: "deploy", arguments: { target: "prod" } })
      expect(textOf(result)).toBe("deploy prod")
      expect(runs(box, "deploy")).toBe(1)
      const declining = await transport.connect(sandbox(files), { action: "decline" })
      const declined = await declining.client.callTool({ name: "deploy", arguments: { target: "prod" } })
      expect(declined._meta?.["core/settlement"]).toMatchObject({ status: "declined" })
      expect(runs(declining.box, "deploy")).toBe(0)
    })

    test("editing a tool file sends tools/list_changed; the new catalog and calls use the new tool", async () => {
      const { client, box } = await transport.connect(sandbox({ "tools/ver.ts": version(1) }))
      expect(textOf(await client.callTool({ name: "ver", arguments: {} }))).toBe("v1")
      const changed = new Promise<void>((resolve) => {
        client.setNotificationHandler(ToolListChangedNotificationSchema, async () => resolve())
      })
      writeFileSync(join(box.location, "tools/ver.ts"), version(2))
      await changed
      const { tools } = await client.listTools()
      expect(tools.find((tool) => tool.name === "ver")?.description).toBe("Version 2")
      expect(textOf(await client.callTool({ name: "ver", arguments: {} }))).toBe("v2")
    })

    test("changing core.json sends tools/list_changed, and the new rules filter the catalog and refuse calls", async () => {
      const { client, box } = await transport.connect(sandbox({ "tools/ver.ts": version(1) }))
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("ver")
      const changed = new Promise<void>((resolve) => {
        client.setNotificationHandler(ToolListChangedNotificationSchema, async () => resolve())
      })
      writeFileSync(join(box.location, "core.json"), JSON.stringify({ permission: { ver: "deny" } }))
      await changed
      expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain("ver")
      const refused = await client.callTool({ name: "ver", arguments: {} })
      expect(refused.isError).toBe(true)
    })

    test("_meta ids make a call replay: it runs once and answers the same", async () => {
      const { client, box } = await transport.connect(sandbox({ "tools/greet.ts": GREET }))
      const call = { name: "greet", arguments: { who: "bob" }, _meta: { sessionID: "ses_host", toolCallID: "call_7" } }
      const first = await client.callTool(call)
      const second = await client.callTool(call)
      expect(second.content).toEqual(first.content)
      expect(second._meta?.["core/settlement"]).toMatchObject({ callID: "call_7", status: "success" })
      expect(runs(box, "greet")).toBe(1)
      await client.callTool({ name: "greet", arguments: { who: "bob" } })
      expect(runs(box, "greet")).toBe(2)
    })
  })
}
