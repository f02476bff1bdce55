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
  /** Ajv itself and its formats, to make the validator the SDK's provider runs with (Validators.provider). */
  readonly Ajv: typeof import("ajv").default
  readonly formats: typeof import("ajv-formats").default
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
    Ajv: require("ajv").default,
    formats: require("ajv-formats").default,
  })

/**
 * A JSON Schema validator as the SDK's own, but stopping at a value's first error: with every error collected (the
 * SDK's default), a server's result of a few million values each breaking its schema held gigabytes in core. It
 * logs nothing: Ajv's own logger wrote a schema's text (a server's: `unknown format "…" ignored`) to stderr as it
 * was, escape sequences and all, unattributed and twice.
 */
export const validators = (): InstanceType<Modules["ajv"]["AjvJsonSchemaValidator"]> => {
  const modules = load()
  const ajv = new modules.Ajv({ strict: false, validateFormats: true, validateSchema: false, allErrors: false, logger: false })
  modules.formats(ajv)
  return new modules.ajv.AjvJsonSchemaValidator(ajv)
}
