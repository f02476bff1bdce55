// `/mcp` in process for tests: the sidecar with MCP's streamable HTTP wired as `core serve` wires it, behind the
// real web handler, and an SDK client transport whose fetch hands Requests straight to that handler (no socket).

import { afterEach } from "bun:test"
import { realpathSync } from "node:fs"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Exit, Scope } from "effect"
import { Runtime } from "../../src/cli/runtime"
import { Sidecar } from "../../src/host/sidecar"
import { McpHttp } from "../../src/mcp-server/mcp-http"
import { Router } from "../../src/server/router"
import { Security } from "../../src/server/security"
import { type Sandbox, sandbox } from "../cli/fixture"

export const TOKEN = "test-token"
export const HOST = "127.0.0.1:4321"

/** The sidecar in process with `/mcp`, as `core serve` wires it; answers its web handler and how to close it. */
export const httpSidecar = async (
  box: Sandbox,
  options: {
    /** Extra roots `X-Core-Location` may name. */
    readonly roots?: ReadonlyArray<string>
    /** The Host check (default: the address 127.0.0.1:4321). */
    readonly checkHost?: (host: string | undefined) => boolean
    /** How many MCP sessions are kept and for how long, by which clock. */
    readonly sessions?: Pick<McpHttp.Options, "max" | "idleMs" | "now" | "direct">
  } = {},
) => {
  const roots = options.roots ?? []
  const environment = { dataDir: box.data, home: box.home }
  const scope = Effect.runSync(Scope.make())
  const log: Array<string> = []
  const { sidecar, mcp } = await Effect.runPromise(
    Effect.gen(function* () {
      const primary = yield* Runtime.prepare("serve", environment, box.location)
      const sidecar = yield* Sidecar.make({ environment, primary, watch: true, log: (line) => log.push(line) })
      const mcp = yield* McpHttp.make({ sidecar, version: "test", log: (line) => log.push(line), ...options.sessions })
      return { sidecar, mcp }
    }).pipe(Scope.provide(scope)),
  )
  // Each answer of the MCP edge, as it made it, before the router hands its body on.
  const answers: Array<Response> = []
  const web = Router.make({
    sidecar,
    mcp: { ...mcp, handle: (request) => mcp.handle(request).pipe(Effect.tap((answer) => Effect.sync(() => answers.push(answer)))) },
    version: "test",
    checkToken: Security.tokenChecker(TOKEN),
    checkHost: options.checkHost ?? Security.hostChecker("127.0.0.1", 4321),
    roots: [realpathSync(box.location), ...roots.map((root) => realpathSync(root))],
    log: (line) => log.push(line),
  })
  const close = async () => {
    await Effect.runPromise(sidecar.calls.cancelAll)
    await Effect.runPromise(mcp.closeAll)
    await web.dispose()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
  return { sidecar, mcp, web, log, answers, close }
}

/**
 * A client transport to `/mcp` whose requests go straight to `handler`: with the token (unless `token` is null),
 * `headers` on every request and `search` (say `?agent=plan`) on the URL.
 */
export const httpTransport = (
  handler: (request: Request) => Promise<Response>,
  options: { readonly token?: string | null; readonly headers?: Record<string, string>; readonly search?: string } = {},
) => {
  const token = options.token === undefined ? TOKEN : options.token
  return new StreamableHTTPClientTransport(new URL(`http://${HOST}/mcp${options.search ?? ""}`), {
    requestInit: { headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...options.headers } },
    fetch: (url, init) => {
      const request = new Request(url.toString(), init)
      // A Request made in process has no Host header; a real connection's would be the server's address.
      request.headers.set("host", HOST)
      return handler(request)
    },
  })
}

/** An `initialize` request as a client without the SDK sends it. */
export const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
}

/**
 * For a test file: `served` makes a Location of `files` served with `/mcp` in process, `connect` an SDK client of a
 * handler; both, and whatever else is pushed on `cleanups`, are closed after each test (the latest first).
 */
export const httpHarness = () => {
  const cleanups: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })
  const served = async (files: Record<string, string> = {}, options: Parameters<typeof httpSidecar>[1] = {}) => {
    const box = sandbox(files)
    const sidecar = await httpSidecar(box, options)
    cleanups.push(sidecar.close)
    return { box, ...sidecar }
  }
  const connect = async (handler: (request: Request) => Promise<Response>, options: Parameters<typeof httpTransport>[1] = {}) => {
    const transport = httpTransport(handler, options)
    const client = new Client({ name: "test", version: "1.0.0" })
    await client.connect(transport)
    cleanups.push(() => client.close())
    return { client, transport }
  }
  return { served, connect, cleanups }
}
