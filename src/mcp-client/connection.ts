export * as Connection from "./connection"

// One configured MCP server as the Location sees it: connecting (a process core starts, or a streamable HTTP
// URL), registering the server's tools as `<server>_<tool>` in a scope the connection owns, registering them again
// in a fresh scope on `list_changed` or a reconnect (so turns made before see them as stale), and calling them with
// a per-call timeout, progress and cancellation. Whatever the server does (crash, hang, garbage, protocol errors),
// a call ends as a model-visible failure naming the server; nothing here ever fails operationally or hangs.

import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import type { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv-provider.js"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import type { Config } from "../config/config"
import { ProviderDialect } from "../provider/provider-dialect"
import type { Registry } from "../registry/registry"
import { Described } from "../tool/described"
import { Nesting } from "../contract/nesting"
import { Json } from "../config/json"
import { ToolName } from "../tool/tool-name"
import { Tool } from "../tool/tool"
import { McpContent } from "./mcp-content"
import { JsonRpc } from "./json-rpc"
import { McpClientHttp } from "./mcp-client-http"
import { McpSdk } from "./mcp-sdk"
import { SchemaCost } from "./schema-cost"
import { McpClientStdio } from "./mcp-client-stdio"
import { Secrets } from "./secrets"

/** How long one request to a server (connecting, listing, a call) may take unless `timeoutMs` says otherwise. */
export const DEFAULT_TIMEOUT_MS = 60_000
/** After a failed connection, how long before listing tries it again (a call always tries at once). */
export const RETRY_AFTER_MS = 5_000
/** The least time between two listings after list_changed: a server that announces it in a loop is listed this often. */
export const RELIST_MS = 1_000
/**
 * The most tools of one server core offers, and the most pages of tools/list it asks for: a server paging forever
 * (a `nextCursor` on every page) held `core tools` and every call of the Location, its memory growing by the page.
 */
export const MAX_TOOLS = 1_000
export const MAX_PAGES = 100
/** The longest description of a server's tool core offers: a model reads every description at every turn. */
export const MAX_DESCRIPTION_CHARS = 10_000
/**
 * The most JSON a server's tool's input and output schemas may make together: a model reads them at every turn too,
 * and what a schema's own descriptions say is not bounded by MAX_DESCRIPTION_CHARS (one server's tools of 10 MiB
 * schemas each held a gigabyte in core).
 */
export const MAX_SCHEMA_CHARS = 64 * 1_024
/**
 * The most one server's tools may make together (descriptions and schemas): each within its bounds, a thousand of
 * them made every turn's catalog 69 MB, built in half a minute.
 */
export const MAX_SERVER_CHARS = 1_024 * 1_024
/**
 * The most content parts of one result core reads: each file part past what an output shows inline is kept as a
 * file of its own (Output.MAX_INLINE_FILES), and a server's 250,000 of them would be as many files on disk.
 */
export const MAX_CONTENT_PARTS = 1_000

export type Status = "idle" | "connecting" | "connected" | "failed" | "closed"

/** What `core mcp list` shows of a server. */
export interface State {
  readonly name: string
  readonly kind: "stdio" | "http"
  /** The command line or the URL. */
  readonly target: string
  readonly status: Status
  /** The core names of the tools registered from it, in the server's order. */
  readonly tools: ReadonlyArray<string>
  /** Tools core could not offer, each naming the tool and why. */
  readonly problems: ReadonlyArray<string>
  /** Why the last connection failed or ended. */
  readonly error?: string
  readonly pid?: number
  /** Lines on the server's stdout that were not JSON-RPC and were skipped. */
  readonly ignoredLines?: number
}

export interface Options {
  readonly entry: Config.McpEntry
  /** The Location's directory: a server core starts serves it, from a directory outside it (./launch). */
  readonly directory: string
  readonly tools: Registry.Tools
  /** Whether another registration already has this name (a built-in, a tool file, another server). */
  readonly taken: (name: string) => boolean
  /** Called after the server's tools were registered again. */
  readonly onChange: () => void
  readonly version: string
}

/** The server's hints about a tool's effects, as core declares them; none when the server gave none. */
const annotationsOf = (tool: McpTool): { readonly annotations?: Tool.Annotations } => {
  const hints = tool.annotations
  if (hints === undefined) return {}
  const annotations: { -readonly [K in keyof Tool.Annotations]: boolean } = {}
  if (typeof hints.readOnlyHint === "boolean") annotations.readOnly = hints.readOnlyHint
  if (typeof hints.destructiveHint === "boolean") annotations.destructive = hints.destructiveHint
  if (typeof hints.idempotentHint === "boolean") annotations.idempotent = hints.idempotentHint
  if (typeof hints.openWorldHint === "boolean") annotations.openWorld = hints.openWorldHint
  return Object.keys(annotations).length === 0 ? {} : { annotations }
}

/** Keywords whose value maps names to schemas (the names are not keywords). */
const SCHEMA_MAPS: ReadonlySet<string> = new Set(["properties", "$defs", "definitions", "dependentSchemas"])
/** Keywords whose value is data, not schemas. */
const DATA: ReadonlySet<string> = new Set(["const", "enum", "default", "examples"])

/**
 * Throws unless `pattern` is a regular expression (as JSON Schema's unicode one or as a plain one, which servers
 * written in other languages often mean). Compiling never runs it on any input.
 */
const compile = (pattern: string): void => {
  for (const flags of ["u", ""]) {
    try {
      new RegExp(pattern, flags)
      return
    } catch {}
  }
  throw new SyntaxError(`the pattern ${JSON.stringify(pattern)} is not a regular expression`)
}

/** How many characters of JSON a tool's schemas make; past what JSON.stringify reaches, more than any bound. */
const schemaChars = (tool: McpTool): number => {
  try {
    return JSON.stringify(tool.inputSchema).length + (tool.outputSchema === undefined ? 0 : JSON.stringify(tool.outputSchema).length)
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

/** The most values an `enum` core checks may list (see `checkable`). */
const MAX_ENUM = 64

/**
 * A server's JSON Schema for core's own checks (of a model's input, of the server's structured result) without what
 * can cost far more than the value's size on the thread every Location core serves shares: its regular expressions
 * (`pattern`, `patternProperties`; one the server wrote may backtrack for seconds on a string of the model's or the
 * server's choosing), `uniqueItems` (a validator compares every item with every other: 26 s for 200,000 numbers)
 * and an `enum` of more than MAX_ENUM values (each item compared with each value). The server still checks them;
 * the model still reads them. A pattern that does not compile makes the schema unusable (it throws), as it would if
 * core checked it.
 */
const checkable = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(checkable)
  if (typeof node !== "object" || node === null) return node
  const patterned = "patternProperties" in node
  return Object.fromEntries(
    Object.entries(node).flatMap(([key, value]): Array<[string, unknown]> => {
      if (key === "pattern" && typeof value === "string") {
        compile(value)
        return []
      }
      if (key === "uniqueItems" || (key === "enum" && Array.isArray(value) && value.length > MAX_ENUM)) return []
      if (key === "patternProperties") {
        // Its names are patterns; its schemas may hold patterns of their own.
        for (const [pattern, schema] of Object.entries(typeof value === "object" && value !== null ? value : {})) {
          compile(pattern)
          checkable(schema)
        }
        return []
      }
      // Keys the patterns allowed are not refused for lack of them.
      if (patterned && key === "additionalProperties") return []
      if (DATA.has(key)) return [[key, value]]
      if (SCHEMA_MAPS.has(key) && typeof value === "object" && value !== null && !Array.isArray(value)) {
        return [[key, Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, checkable(schema)]))]]
      }
      return [[key, checkable(value)]]
    }),
  )
}

const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/**
 * Whether a request failed because the connection closed under it: the SDK's own error, code -32000 with its own
 * words. -32000 is also JSON-RPC's first code for a server's errors, which a server answers with words of its own.
 */
const closedBelow = (cause: unknown): boolean => {
  const { McpError, ErrorCode } = McpSdk.load().types
  return cause instanceof McpError && cause.code === ErrorCode.ConnectionClosed && cause.message === `MCP error ${ErrorCode.ConnectionClosed}: Connection closed`
}

/** A server's tools as listed, and the problems of those left out. */
interface Listed {
  readonly tools: ReadonlyArray<McpTool>
  readonly problems: ReadonlyArray<string>
}

/** A listed tool by its name when it has one, else by its place in the listing. */
const toolLabel = (raw: unknown, index: number): string => {
  const name = typeof raw === "object" && raw !== null ? (raw as { name?: unknown }).name : undefined
  return typeof name === "string" ? JSON.stringify(name) : `#${index + 1} (no name)`
}

type Issues = ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>

/** What made a listed tool or a result invalid, in a line: where, and what was expected (three at most, each cut). */
const describeIssues = (issues: Issues): string =>
  issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length === 0 ? "" : `${issue.path.map(String).join(".")}: `}${String(issue.message).slice(0, 200)}`)
    .join("; ")

/** The issues of a schema's refusal (the SDK reads each result with its zod schemas), or undefined. */
const issuesOf = (cause: unknown): Issues | undefined => {
  const issues = typeof cause === "object" && cause !== null ? (cause as { issues?: unknown }).issues : undefined
  return Array.isArray(issues) ? (issues as Issues) : undefined
}

/** The errors the SDK's client raises itself when a result breaks the output schema its tool declared. */
const OUTPUT_CHECK = /Structured content does not match the tool's output schema|has an output schema but did not return structured content|Failed to validate structured content/

export class Server {
  readonly name: string
  private readonly options: Options
  private readonly timeoutMs: number
  /** The values core.json gives the server (env, headers) as it may quote them: what core says from it shows none. */
  private readonly spellings: ReadonlyArray<string>
  private status: Status = "idle"
  private error: string | undefined
  private failedAt = 0
  private client: Client | undefined
  private process: McpClientStdio.Process | undefined
  private connecting: Promise<void> | undefined
  /** The client being connected, until it is connected or has failed. */
  private opening: Client | undefined
  private scope: Scope.Closeable | undefined
  private registered: ReadonlyArray<string> = []
  private problems: ReadonlyArray<string> = []
  /** Whether the tools are being listed again after `list_changed`, and the client of one that came meanwhile. */
  private refreshing = false
  private refreshFor: Client | undefined
  /** When the tools were last listed again after list_changed (performance.now()). */
  private relistedAt = Number.NEGATIVE_INFINITY
  /** The tools of the registered listing, as JSON: a listing after list_changed that says the same changes nothing. */
  private listedAs: string | undefined
  /**
   * The last listing's tools as core made them (or why it could not), and their output schemas as checked, by their
   * JSON: a listing again after list_changed makes only what changed. A server changing one tool of a thousand
   * every second had every one's validators and schemas made again each time (core serve 60% busy, calls of every
   * Location waiting half a second behind it).
   */
  private madeAs = new Map<string, Tool.Any | string>()
  private outputsAs = new Map<string, { readonly schema: McpTool["outputSchema"] } | { readonly problem: string }>()

  constructor(options: Options) {
    this.options = options
    this.name = options.entry.name
    this.timeoutMs = options.entry.server.timeoutMs ?? DEFAULT_TIMEOUT_MS
    this.spellings = Secrets.spellingsOf(options.entry.server)
  }

  state(): State {
    const { server } = this.options.entry
    return {
      name: this.name,
      kind: server.command !== undefined ? "stdio" : "http",
      target: server.command !== undefined ? server.command.join(" ") : server.url!,
      status: this.status,
      tools: this.registered,
      problems: this.problems,
      ...(this.error === undefined ? {} : { error: this.error }),
      ...(this.process === undefined ? {} : { pid: this.process.pid, ignoredLines: this.process.ignoredLines }),
    }
  }

  /** Whether `ensure` has nothing to do: connected, closed, or failed too recently to retry. */
  ensured(): boolean {
    if (this.status === "failed") return Date.now() - this.failedAt < RETRY_AFTER_MS
    return this.status === "connected" || this.status === "closed"
  }

  /** Connects unless connected, or failed too recently (listing should not retry a broken server every turn). */
  ensure(): Promise<void> {
    if (this.status === "failed" && Date.now() - this.failedAt < RETRY_AFTER_MS) return Promise.resolve()
    return this.connect()
  }

  /** Connects unless connected; resolves either way (the state says how it went). */
  connect(): Promise<void> {
    if (this.status === "connected" || this.status === "closed") return Promise.resolve()
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined
      this.opening = undefined
    })
    return this.connecting
  }

  private async transport(): Promise<Transport | McpClientStdio.SpawnFailure> {
    const { server } = this.options.entry
    if (server.command !== undefined) {
      const started = await McpClientStdio.Process.spawn({
        command: server.command,
        location: this.options.directory,
        ...(server.env === undefined ? {} : { env: server.env }),
      })
      return started
    }
    return new (McpSdk.load().http.StreamableHTTPClientTransport)(new URL(server.url!), {
      // A server's answers are read in bounded messages, like a process's lines; its event stream is opened again at
      // a pace of core's.
      fetch: McpClientHttp.paced(McpClientHttp.bounded()),
      ...(server.headers === undefined ? {} : { requestInit: { headers: { ...server.headers } } }),
    })
  }

  private async open(): Promise<void> {
    this.status = "connecting"
    // Whatever the last process left in its group goes before another starts.
    await this.process?.close()
    let transport: Transport | McpClientStdio.SpawnFailure
    try {
      transport = await this.transport()
    } catch (cause) {
      // A URL the schema let through but the URL parser refuses.
      return this.fail(`cannot be reached: ${messageOf(cause)}`)
    }
    if (transport instanceof McpClientStdio.SpawnFailure) return this.fail(transport.message)
    // Closed while the server started: the Location is going away.
    if ((this.status as Status) === "closed") return void (await transport.close())
    this.process = transport instanceof McpClientStdio.Process ? transport : undefined
    const process = this.process
    const client = new (McpSdk.load().client.Client)({ name: "core", version: this.options.version }, { capabilities: {}, jsonSchemaValidator: McpSdk.validators() })
    this.opening = client
    // An announcement that comes before the first listing is registered (with the listing's answer, or meanwhile)
    // is acted on once it is: dropped, the server's new tools stayed unlisted until it announced again.
    let changedWhileOpening = false
    client.setNotificationHandler(McpSdk.load().types.ToolListChangedNotificationSchema, () => {
      if (this.client === client) this.refresh(client)
      else changedWhileOpening = true
    })
    client.onclose = () => this.ended(client)
    // Transport errors (a garbled line, a failed POST) surface through the request they break.
    client.onerror = () => undefined
    try {
      await client.connect(transport, { timeout: this.timeoutMs })
      const listed = await this.list(client)
      // Closed while connecting: the Location is going away.
      if ((this.status as Status) === "closed") {
        await client.close().catch(() => undefined)
        return await process?.close()
      }
      this.client = client
      this.status = "connected"
      this.error = undefined
      const reconnected = this.scope !== undefined
      this.register(listed)
      // Turns made before now see the server's tools as stale: a host tells its clients.
      if (reconnected) this.options.onChange()
      if (changedWhileOpening) this.refresh(client)
    } catch (cause) {
      await client.close().catch(() => undefined)
      await process?.close()
      this.fail(this.describe(cause, "connecting", undefined, false))
    }
  }

  private fail(error: string): void {
    if (this.status === "closed") return
    this.status = "failed"
    this.error = error
    this.failedAt = Date.now()
  }

  /** The connection ended under a connected client: the process exited or the HTTP session went away. */
  private ended(client: Client): void {
    if (this.client !== client) return
    this.client = undefined
    const how = this.process !== undefined ? `the server process ${this.process.describeExit()}` : "the connection closed"
    // Its tools stay registered: a call starts the server again.
    this.fail(how)
  }

  /**
   * The server's tools, each checked on its own: one that is not a valid MCP tool (an input schema that is not an
   * object, say) is left out with a problem naming it, and the rest are offered. The SDK's own listing refuses the
   * whole page for one such tool.
   */
  private async list(client: Client): Promise<Listed> {
    const tools: Array<McpTool> = []
    const problems: Array<string> = []
    const cursors = new Set<string>()
    let listed = 0
    /** What the tools offered so far make (MAX_SERVER_CHARS), and how many were left out past it. */
    let offered = 0
    let past = 0
    let cursor: string | undefined
    // One timeoutMs for the whole listing, not one a page: a server answering each page just in time, with a cursor
    // on each, held every turn of the Location for MAX_PAGES times as long.
    const deadline = Date.now() + this.timeoutMs
    const late = () => problems.push(`its tools/list pages took longer than ${this.timeoutMs} ms in all: the tools listed by then are offered, the rest not`)
    for (let pages = 0; ; pages++) {
      if (pages === MAX_PAGES || listed >= MAX_TOOLS) {
        problems.push(`it lists more than ${listed >= MAX_TOOLS ? `${MAX_TOOLS} tools` : `${MAX_PAGES} pages of tools`}: those listed first are offered, the rest not`)
        break
      }
      const left = deadline - Date.now()
      if (pages > 0 && left <= 0) {
        late()
        break
      }
      let page: Awaited<ReturnType<Client["request"]>>
      try {
        page = await client.request(
          { method: "tools/list", params: cursor === undefined ? {} : { cursor } },
          McpSdk.load().types.ResultSchema,
          { timeout: Math.max(1, left) },
        )
      } catch (cause) {
        // The first page is the listing: without it, the server is not usable. A later one late is the end of it.
        const { McpError, ErrorCode } = McpSdk.load().types
        if (pages === 0 || !(cause instanceof McpError && cause.code === ErrorCode.RequestTimeout)) throw cause
        late()
        break
      }
      const raws: ReadonlyArray<unknown> = Array.isArray(page.tools) ? page.tools.slice(0, MAX_TOOLS - listed) : []
      if (!Array.isArray(page.tools)) problems.push("its tools/list answer has no tools array")
      listed += Array.isArray(page.tools) ? page.tools.length : 0
      for (const [index, raw] of raws.entries()) {
        const checked = McpSdk.load().types.ToolSchema.safeParse(raw)
        if (!checked.success) {
          problems.push(`tool ${toolLabel(raw, index)}: not offered: ${describeIssues(checked.error.issues)}`)
          continue
        }
        const chars = schemaChars(checked.data)
        if (chars > MAX_SCHEMA_CHARS) {
          const size = Number.isFinite(chars) ? `are ${chars} characters of JSON, more than` : "nest too deep to be written as JSON, past"
          problems.push(`tool ${toolLabel(raw, index)}: not offered: its input and output schemas ${size} the ${MAX_SCHEMA_CHARS} core offers a model at every turn`)
          continue
        }
        const made = chars + (checked.data.description?.length ?? 0) + (checked.data.title?.length ?? 0)
        if (offered + made > MAX_SERVER_CHARS) {
          past++
          continue
        }
        offered += made
        tools.push(checked.data)
      }
      cursor = typeof page.nextCursor === "string" ? page.nextCursor : undefined
      if (cursor === undefined) break
      // A cursor answered before leads round the same pages again.
      if (cursors.has(cursor)) {
        problems.push("its tools/list pages lead back to a page listed before: the tools listed so far are offered")
        break
      }
      cursors.add(cursor)
    }
    if (past > 0) {
      problems.push(
        `${past} of its tools are not offered: with them, its tools' descriptions and schemas would make more than the ` +
          `${MAX_SERVER_CHARS} characters core offers a model from one server at every turn (those listed first are offered)`,
      )
    }
    // The client checks each call's structured result against the tool's output schema, as its own listing would,
    // but for what could stall it (`checkable`): a pattern the server wrote may backtrack for seconds on each string
    // of a result the server chose, `uniqueItems` compare every item of it with every other, on the thread every
    // Location's calls share.
    const usable: Array<McpTool> = []
    const checked: Array<McpTool> = []
    const outputs = new Map<string, { readonly schema: McpTool["outputSchema"] } | { readonly problem: string }>()
    for (const tool of tools) {
      if (tool.outputSchema === undefined) {
        usable.push(tool)
        checked.push(tool)
        continue
      }
      const key = JSON.stringify(tool.outputSchema)
      let output = outputs.get(key) ?? this.outputsAs.get(key)
      if (output === undefined) {
        try {
          const schema = checkable(tool.outputSchema) as McpTool["outputSchema"]
          const costly = SchemaCost.problem(schema)
          if (costly !== undefined) throw new Error(costly)
          McpSdk.validators().getValidator(schema as Parameters<AjvJsonSchemaValidator["getValidator"]>[0])
          output = { schema }
        } catch (cause) {
          output = { problem: messageOf(cause) }
        }
      }
      outputs.set(key, output)
      if ("problem" in output) {
        problems.push(`tool "${tool.name}": not offered: its output schema cannot be used: ${output.problem}`)
        continue
      }
      usable.push(tool)
      // The same schema object as before where it is unchanged: the client's validator compiles it once.
      checked.push({ ...tool, outputSchema: output.schema })
    }
    this.outputsAs = outputs
    ;(client as unknown as { cacheToolMetadata: (tools: ReadonlyArray<McpTool>) => void }).cacheToolMetadata(checked)
    return { tools: usable, problems }
  }

  /**
   * Lists the tools again after `list_changed`: one listing at a time, and notifications that arrive meanwhile make
   * one more afterwards, so a server flooding them costs a listing or two, not one each.
   */
  private refresh(client: Client): void {
    this.refreshFor = client
    if (this.refreshing) return
    this.refreshing = true
    void (async () => {
      for (let next = this.refreshFor; next !== undefined; next = this.refreshFor) {
        // A server announcing list_changed again after every listing is listed once a RELIST_MS at most.
        const wait = this.relistedAt + RELIST_MS - performance.now()
        if (wait > 0) await Bun.sleep(wait)
        next = this.refreshFor ?? next
        this.refreshFor = undefined
        this.relistedAt = performance.now()
        if (next === this.client && this.status === "connected") await this.relist(next)
      }
      this.refreshing = false
    })()
  }

  private async relist(client: Client): Promise<void> {
    try {
      const listed = await this.list(client)
      if (this.client !== client) return
      // The same tools as before: nothing changed, and turns made before stay current.
      if (JSON.stringify(listed.tools) === this.listedAs) return
      this.register(listed)
      this.options.onChange()
    } catch (cause) {
      this.problems = [...this.problems, `listing its tools again after list_changed failed: ${messageOf(cause)}`]
    }
  }

  /** Registers `tools` in a fresh scope, closing the previous one: turns made before see them as stale. */
  private register({ tools, problems: listing }: Listed): void {
    this.listedAs = JSON.stringify(tools)
    const previous = this.scope
    if (previous !== undefined) Effect.runSync(Scope.close(previous, Exit.void))
    const record: Record<string, Tool.Any> = {}
    const problems: Array<string> = [...listing]
    const madeAs = new Map<string, Tool.Any | string>()
    for (const tool of tools) {
      const name = `${this.name}_${tool.name}`
      const problem = this.problem(tool, name, record)
      if (problem !== undefined) {
        problems.push(`tool "${tool.name}": ${problem}`)
        continue
      }
      const key = JSON.stringify(tool)
      const made = madeAs.get(key) ?? this.madeAs.get(key) ?? this.make(tool, name)
      madeAs.set(key, made)
      if (typeof made === "string") problems.push(`tool "${tool.name}": ${made}`)
      else record[name] = made
    }
    this.madeAs = madeAs
    const scope = Effect.runSync(Scope.make())
    Effect.runSync(Scope.provide(this.options.tools.register(record), scope))
    this.scope = scope
    this.registered = Object.keys(record)
    this.problems = problems
  }

  private problem(tool: McpTool, name: string, record: Record<string, Tool.Any>): string | undefined {
    const invalid = ToolName.problem(name)
    if (invalid !== undefined) return `its core name "${name}" is not a valid tool name (${invalid})`
    if (Object.hasOwn(record, name)) return `the server lists "${tool.name}" twice`
    if (this.options.taken(name)) return `"${name}" is already a tool in this Location; the server's tool is not offered`
    return undefined
  }

  /** The core tool for one of the server's tools, or why there is none. */
  private make(tool: McpTool, name: string): Tool.Any | string {
    let validate: (input: unknown) => string | undefined
    try {
      // A validator of the tool's own: one shared would answer a schema's `$id` with whatever schema of that id it
      // compiled first (another server's, or this one's before list_changed), and would keep every schema forever.
      const inputSchema = checkable(tool.inputSchema)
      // Before it is compiled or probed: checking a value against it could stall core (SchemaCost).
      const costly = SchemaCost.problem(inputSchema)
      if (costly !== undefined) return `its input schema cannot be used: ${costly}`
      const validators = McpSdk.validators()
      const validator = validators.getValidator(inputSchema as Parameters<typeof validators.getValidator>[0])
      /** The validator's answer, or the message of what it threw. */
      const checked = (input: unknown): { readonly problem?: string; readonly broke?: string } => {
        try {
          const result = validator(input)
          return result.valid ? {} : { problem: result.errorMessage }
        } catch (cause) {
          // A schema that refers to itself without end (`{"$ref": "#"}`) recurses until the stack runs out.
          return { broke: messageOf(cause) }
        }
      }
      // Such a schema breaks on any input: it is left out at once rather than refuse every call.
      const probed = checked({})
      if (probed.broke !== undefined) return `its input schema cannot be used: it could not check an input (${probed.broke})`
      validate = (input) => {
        // A number JSON cannot carry passes a JSON Schema check (Infinity is a number, an integer, at least 0) but
        // would reach the server as null: checked as one value, sent as another.
        const infinite = Json.findInfinite(input)
        if (infinite !== undefined) return Json.describeBadValue(infinite)
        const { problem, broke } = checked(input)
        return broke === undefined ? problem : `the server's input schema could not check it (${broke})`
      }
    } catch (cause) {
      return `its input schema cannot be used: ${messageOf(cause)}`
    }
    const described = tool.description?.trim() || tool.title?.trim() || `${tool.name} (from the MCP server "${this.name}")`
    if (described.length > MAX_DESCRIPTION_CHARS) {
      return `its description is ${described.length} characters long, more than the ${MAX_DESCRIPTION_CHARS} core offers a model at every turn`
    }
    const description = described
    try {
      return Described.make<McpContent.Result>({
        description,
        // What is advertised is in core's dialect, as core's own tools are (each provider mapping then treats it
        // alike); the server's own schema, as it wrote it, checks the input.
        inputSchema: ProviderDialect.canonical(tool.inputSchema),
        ...(tool.outputSchema === undefined ? {} : { outputSchema: ProviderDialect.canonical(tool.outputSchema) }),
        ...annotationsOf(tool),
        validate,
        execute: (input, context) => this.call(tool.name, name, input as Record<string, unknown>, context),
        toModelOutput: ({ output }) => McpContent.parts(output),
        structured: (output) => output.structuredContent,
      })
    } catch (cause) {
      return messageOf(cause)
    }
  }

  /** One call of the server's tool `tool` (core's `name`): its result, or a failure naming the server. */
  call(
    tool: string,
    name: string,
    input: Record<string, unknown>,
    context: Tool.Context,
  ): Effect.Effect<McpContent.Result, Tool.Failure> {
    // One step of the fiber, and the request sent as it is taken: a call is the per-call hot path.
    return Effect.callback<McpContent.Result, Tool.Failure>((resume, signal) => {
      const failed = (cause: unknown) =>
        resume(Effect.fail(new Tool.Failure({ message: this.describe(cause, `calling ${tool}`, name) })))
      const request = () => {
        // Cancelled while the server was started (again): nothing is sent.
        if (signal.aborted) return
        const client = this.client
        if (client === undefined) return failed(new Unavailable(this.error ?? this.status))
        client
          .callTool({ name: tool, arguments: input }, undefined, {
            timeout: this.timeoutMs,
            signal,
            onprogress: (progress) => {
              const total = progress.total === undefined ? "" : `/${progress.total}`
              Effect.runFork(
                context.progress({
                  message: progress.message === undefined ? `${progress.progress}${total}` : Secrets.redact(progress.message, this.spellings),
                  metadata: { progress: progress.progress, ...(progress.total === undefined ? {} : { total: progress.total }) },
                }),
              )
            },
          })
          .then(
            (result) => resume(this.outcome(result, name)),
            (cause) => {
              // A call cancelled is refused by the client as aborted: the connection is as good as before.
              if (!signal.aborted) this.broken(client, cause)
              failed(cause)
            },
          )
      }
      // Connected is the usual case: no promise to wait for then.
      if (this.status === "connected") request()
      else this.connect().then(request, failed)
    })
  }

  /** A call's result as core's output, or the failure it says it is. */
  private outcome(result: unknown, name: string): Effect.Effect<McpContent.Result, Tool.Failure> {
    const output = result as McpContent.Result & { readonly isError?: boolean }
    if (!Array.isArray(output.content)) {
      return Effect.fail(new Tool.Failure({ message: `MCP server "${this.name}" answered ${name} without content, which core cannot read.` }))
    }
    if (output.content.length > MAX_CONTENT_PARTS) {
      return Effect.fail(
        new Tool.Failure({
          message:
            `MCP server "${this.name}" answered ${name} with ${output.content.length} content parts, more than the ` +
            `${MAX_CONTENT_PARTS} core reads of one result; the tool ran there, and its result is not used.`,
        }),
      )
    }
    // Nothing past this recurses into what a server sent (core's own JSON of it, the bounding, the store) but this.
    if (Nesting.tooDeep(output.content) || Nesting.tooDeep(output.structuredContent)) {
      return Effect.fail(
        new Tool.Failure({ message: `MCP server "${this.name}" answered ${name} with ${Nesting.TOO_DEEP}, which core does not read.` }),
      )
    }
    // The error channel MCP gives a tool: a server's words, which may quote what core.json gave it.
    if (output.isError === true) {
      return Effect.fail(new Tool.Failure({ message: Secrets.redact(McpContent.wellFormed(McpContent.text(output)), this.spellings) }))
    }
    // A number JSON cannot carry (a server's 1e400, read as Infinity) passed the output schema's check and would be
    // recorded and passed on as null, which the schema may not allow.
    const infinite = Json.findInfinite(output.structuredContent)
    if (infinite !== undefined) {
      return Effect.fail(
        new Tool.Failure({
          message:
            `MCP server "${this.name}" answered ${name} with a structured result holding a number JSON cannot carry ` +
            `(structuredContent${infinite.path.length === 0 ? "" : `.${infinite.path.map(String).join(".")}`} read as ${infinite.text}); ` +
            "the tool ran there, and its result is not used.",
        }),
      )
    }
    const content = McpContent.wellFormed(output.content)
    return Effect.succeed(
      output.structuredContent === undefined
        ? { content }
        : { content, structuredContent: McpContent.wellFormed(output.structuredContent) },
    )
  }

  /**
   * After a request failed: when it failed below the protocol (the HTTP session expired, the server went away, a
   * request could not be sent), the connection is dropped so that the next call connects afresh. An error the
   * server answered, or a timeout of one call, leaves it as it is.
   */
  private broken(client: Client, cause: unknown): void {
    const { McpError } = McpSdk.load().types
    // A result the SDK could not read (an unknown content type, an image that is not base64) was answered too: the
    // connection is as good as before, and the calls running on it go on.
    const answered = (cause instanceof McpError && !closedBelow(cause)) || issuesOf(cause) !== undefined
    if (!answered && this.client === client) {
      this.client = undefined
      this.fail(this.describe(cause, "calling a tool", undefined, false))
      void client.close().catch(() => undefined)
    }
  }

  /**
   * What went wrong with a request, in words a model (or a person) can act on: what the server or its transport said
   * may quote what core.json gave it (an error echoing the token it was sent), shown as `[redacted]`.
   */
  private describe(cause: unknown, doing: string, name?: string, named = true): string {
    // A server's JSON-RPC error message is its words, whole characters or not (McpContent.wellFormed).
    return Secrets.redact(McpContent.wellFormed(this.described(cause, doing, name, named)), this.spellings)
  }

  private described(cause: unknown, doing: string, name: string | undefined, named: boolean): string {
    // Without the server's name for its state, where the name is said beside it.
    const server = named ? `MCP server "${this.name}"` : "the server"
    if (cause instanceof Unavailable) return `${server} is not available (${cause.reason}); nothing ran. It is tried again on the next call.`
    const { McpError, ErrorCode } = McpSdk.load().types
    const { StreamableHTTPError } = McpSdk.load().http
    if (cause instanceof McpError && cause.code === ErrorCode.RequestTimeout) {
      const oversized = this.process?.oversized
      if (oversized !== undefined) {
        // Said of the first timeout after it (the call whose answer it was, most likely), not of every later one.
        this.process!.oversized = undefined
        return (
          `${server} gave no answer core could read within ${this.timeoutMs} ms while ${doing}: it sent a message of more ` +
          `than ${oversized} bytes, over the ${McpClientStdio.MAX_LINE_BYTES} bytes core reads from a server (likely ` +
          "this call's answer). Ask for less at once; a longer timeout will not help."
        )
      }
      return (
        `${server} did not answer within ${this.timeoutMs} ms while ${doing}; the request was cancelled. ` +
        `Try again, or raise "timeoutMs" for "${this.name}" in core.json if it needs longer.`
      )
    }
    if (closedBelow(cause)) {
      const how = this.process?.exit !== undefined ? `: the server process ${this.process.describeExit()}` : ""
      return `${server} closed the connection while ${doing}${how}. It is started again on the next call${name === undefined ? "" : ` to ${name}`}.`
    }
    const issues = issuesOf(cause)
    if (issues !== undefined) {
      return `${server} answered with a result core cannot read while ${doing} (${describeIssues(issues)}); the tool may have run there.`
    }
    // The SDK's own check of a result against the output schema the server declared: the server answered.
    if (cause instanceof McpError && OUTPUT_CHECK.test(cause.message)) {
      const detail = cause.message.replace(/^MCP error -?\d+: /, "")
      return `${server} answered with a result that breaks the output schema it declared while ${doing} (${detail.slice(0, 500)}); the tool ran there, and its result is not used.`
    }
    // An answer the transport dropped unread for its size.
    const tooLong = cause instanceof McpError ? JsonRpc.tooLongOf(cause) : undefined
    if (tooLong !== undefined) {
      return (
        `${server} answered with a message of ${megabytes(tooLong.length)} while ${doing}, over the ${megabytes(tooLong.limit)} core reads ` +
        "from a server; the tool ran there, and its result is not used. Ask for less at once; a longer timeout will not help."
      )
    }
    // An answer the transport could not take as JSON-RPC (a result that is no object, "error": null beside it).
    const malformed = cause instanceof McpError ? JsonRpc.malformedWhy(cause) : undefined
    if (malformed !== undefined) {
      return `${server} answered in a form core cannot read while ${doing} (not valid JSON-RPC: ${malformed}); the tool may have run there.`
    }
    // The server's own words, which may quote its configuration.
    if (cause instanceof McpError) return `${server} answered with an error while ${doing}: ${cause.message}`
    if (cause instanceof StreamableHTTPError && cause.code !== undefined) {
      return `${server} answered HTTP ${cause.code} while ${doing}: ${cause.message}`
    }
    if (this.process?.exit !== undefined) return `${server} stopped while ${doing}: the server process ${this.process.describeExit()}`
    return `${server} failed while ${doing}: ${messageOf(cause)}`
  }

  /** Removes its tools, ends the session and the server's process group. */
  async close(): Promise<void> {
    this.status = "closed"
    if (this.scope !== undefined) Effect.runSync(Scope.close(this.scope, Exit.void))
    this.scope = undefined
    const client = this.client
    this.client = undefined
    // A connection still being made is broken off, not waited for: its requests fail at once.
    await Promise.all([client?.close(), this.opening?.close(), this.process?.close()].map((done) => done?.catch(() => undefined)))
    await this.connecting
  }
}

/** A size in characters (bytes, for the JSON servers send) as a model reads it. */
const megabytes = (length: number): string => `${(length / (1024 * 1024)).toFixed(1)} MiB`

/** A call found the server not connected and could not connect it. */
class Unavailable extends Error {
  constructor(readonly reason: string) {
    super(reason)
  }
}
