export * as McpRoots from "./mcp-roots"

// Where `core mcp` without `--location` serves (DESIGN §13): the first of the client's MCP roots that is a local
// directory, else the working directory; never `/` or the home, whether a root names it or the client started core
// there (desktop clients do: serving it would put the whole disk inside the Location). It asks the client and reads
// the disk; it serves nothing.

import { realpathSync, statSync } from "node:fs"
import { homedir } from "node:os"
import { fileURLToPath } from "node:url"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"

/** How long the client gets to list its roots. */
export const LIST_TIMEOUT_MS = 10_000

export type Located =
  | { readonly _tag: "Root"; readonly directory: string }
  | { readonly _tag: "Cwd"; readonly directory: string }
  | { readonly _tag: "Refused"; readonly message: string }

const homeOf = (): string => process.env.HOME ?? homedir()

const realDirectory = (path: string): string | undefined => {
  try {
    const real = realpathSync(path)
    return statSync(real).isDirectory() ? real : undefined
  } catch {
    return undefined
  }
}

/** What a directory is, when it is one core will not serve unasked: `/`, or the home. */
const unservable = (directory: string, home: string): string | undefined => {
  if (directory === "/") return "the root directory /"
  return directory === (realDirectory(home) ?? home) ? `the home directory ${directory}` : undefined
}

/** The first root that is a `file://` URI of a directory other than `/` and the home, as a real path. */
export const first = (roots: ReadonlyArray<{ readonly uri: string }>, home: string = homeOf()): string | undefined => {
  for (const root of roots) {
    if (!root.uri.startsWith("file://")) continue
    let path: string
    try {
      path = fileURLToPath(root.uri)
    } catch {
      continue
    }
    const directory = realDirectory(path)
    if (directory !== undefined && unservable(directory, home) === undefined) return directory
  }
  return undefined
}

/** Whether the client answers `roots/list`. */
export const supported = (server: Server): boolean => server.getClientCapabilities()?.roots !== undefined

/** The client's first root that core serves (`first`); undefined when it has none or cannot say. */
export const listed = async (server: Server, home: string = homeOf()): Promise<string | undefined> => {
  if (!supported(server)) return undefined
  try {
    const { roots } = await server.listRoots(undefined, { timeout: LIST_TIMEOUT_MS })
    return first(roots, home)
  } catch {
    return undefined
  }
}

/** Where to serve, asked of a client that has initialized: its roots, else `cwd` unless that is `/` or the home. */
export const locate = async (server: Server, cwd: string = process.cwd(), home: string = homeOf()): Promise<Located> => {
  const root = await listed(server, home)
  if (root !== undefined) return { _tag: "Root", directory: root }
  const directory = realDirectory(cwd) ?? cwd
  const what = unservable(directory, home)
  if (what === undefined) return { _tag: "Cwd", directory }
  const why = supported(server)
    ? "the MCP client supports roots but gave none that is a local directory other than / and the home"
    : "the MCP client gives no roots"
  return {
    _tag: "Refused",
    message:
      `core mcp: not serving ${what}: ${why}, and serving it would put the whole of it inside the Location.\n` +
      `Name the project to serve: core mcp --location /path/to/project (in the client's MCP config, add ` +
      `"--location", "/path/to/project" to the args), or start core mcp in the project's directory.\n`,
  }
}
