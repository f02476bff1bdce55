// `core mcp` over stdio for the tests: the official SDK's stdio transport running core from source in a sandbox's
// Location, with its home and environment.

import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import type { Sandbox } from "../cli/fixture"

const MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname

/** A transport that starts `core mcp --location <box> ...extra` (stderr piped). */
export const stdioTransport = (box: Sandbox, extra: ReadonlyArray<string> = []): StdioClientTransport =>
  new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, "mcp", "--location", box.location, ...extra],
    env: { PATH: process.env.PATH ?? "", HOME: box.home, ...box.env },
    stderr: "pipe",
  })

/** A client connected to `core mcp` in `box`, added to `open` so the test file closes it. */
export const connectStdio = async (box: Sandbox, open: Array<Client>): Promise<Client> => {
  const client = new Client({ name: "test", version: "1.0.0" })
  await client.connect(stdioTransport(box))
  open.push(client)
  return client
}
