export * as McpSdk from "./mcp-sdk"

// The MCP SDK's client side, as the connections use it, loaded on first use: its modules build zod schemas and ajv
// at evaluation, which would cost every command's start (`core --version`, `core exec` of a built-in) although
// only a Location with MCP servers that a listing or call needs ever connects one.

/** The SDK modules a connection uses. */
export interface Modules {
  readonly client: typeof import("@modelcontextprotocol/sdk/client/index.js")
  readonly http: typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js")
  readonly stdio: typeof import("@modelcontextprotocol/sdk/client/stdio.js")
  readonly types: typeof import("@modelcontextprotocol/sdk/types.js")
  readonly ajv: typeof import("@modelcontextprotocol/sdk/validation/ajv-provider.js")
}

let loaded: Modules | undefined

/** The SDK's modules, evaluated the first time they are asked for. */
export const load = (): Modules =>
  (loaded ??= {
    client: require("@modelcontextprotocol/sdk/client/index.js"),
    http: require("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    stdio: require("@modelcontextprotocol/sdk/client/stdio.js"),
    types: require("@modelcontextprotocol/sdk/types.js"),
    ajv: require("@modelcontextprotocol/sdk/validation/ajv-provider.js"),
  })
