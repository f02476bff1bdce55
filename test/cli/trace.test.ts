// OpenTelemetry traces (DESIGN §15) from the compiled binary to a local OTLP/HTTP receiver (Bun.serve taking POST
// /v1/traces): `core exec`'s spans arrive before it exits, with the standard variables honoured (endpoint, traces
// endpoint, headers, service name, protocol); `core serve` sends a server span per request with the call's spans
// under it. Spans never carry a call's input. An endpoint that is down changes nothing about the call (a line on
// stderr says what was not exported); a disabled SDK sends nothing.

import { afterAll, describe, expect, test } from "bun:test"
import { createServer } from "node:net"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { exec, sandbox } from "./fixture"
import { serve } from "../server/support"
import { binary } from "../support/binary"

interface Received {
  readonly path: string
  readonly contentType: string | null
  readonly headers: Headers
  readonly body: Uint8Array
  /** When it arrived (epoch ms). */
  readonly at: number
}

interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

/** A local OTLP/HTTP receiver: keeps every request it is sent. */
const receiver = () => {
  const received: Array<Received> = []
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      received.push({
        path: new URL(request.url).pathname,
        contentType: request.headers.get("content-type"),
        headers: request.headers,
        body: new Uint8Array(await request.arrayBuffer()),
        at: Date.now(),
      })
      return Response.json({})
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, received, stop: () => server.stop(true) }
}

const receivers: Array<{ stop: () => void }> = []
afterAll(() => receivers.forEach((one) => one.stop()))
const start = () => {
  const one = receiver()
  receivers.push(one)
  return one
}

/** The spans of JSON requests, with each one's resource attributes. */
const spansOf = (received: ReadonlyArray<Received>) =>
  received.flatMap((request) => {
    const data = JSON.parse(new TextDecoder().decode(request.body)) as {
      resourceSpans: Array<{ resource: { attributes: Span["attributes"] }; scopeSpans: Array<{ spans: Array<Span> }> }>
    }
    return data.resourceSpans.flatMap((resource) =>
      resource.scopeSpans.flatMap((scope) =>
        scope.spans.map((span): Span & { readonly resource: Span["attributes"] } => ({ ...span, resource: resource.resource.attributes })),
      ),
    )
  })

const attribute = (span: Pick<Span, "attributes">, key: string): unknown => {
  const value = span.attributes.find((entry) => entry.key === key)?.value
  return value === undefined ? undefined : Object.values(value)[0]
}

const byName = <S extends Span>(spans: ReadonlyArray<S>, name: string): Array<S> => spans.filter((span) => span.name === name)

const JSON_PROTOCOL = { OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }

describe("traces from core exec", () => {
  test("a call's spans reach the receiver before core exec exits, named and with the call's attributes", async () => {
    const otlp = start()
    const box = sandbox({ "a.txt": "hello\n" })
    const env = {
      ...JSON_PROTOCOL,
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=s%20ecret,x-team=core",
      OTEL_SERVICE_NAME: "agent-tools",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=ci,service.name=overridden",
    }
    const result = await exec({ ...box, env: { ...box.env, ...env } }, "read", { filePath: "a.txt" }, [
      "--session",
      "ses_t",
      "--call",
      "call_t",
    ])
    expect(result.code).toBe(0)
    // Already here when the process has exited: nothing is awaited after it.
    expect(otlp.received.length).toBeGreaterThan(0)
    expect(otlp.received.every((request) => request.path === "/v1/traces")).toBe(true)
    expect(otlp.received[0]!.contentType).toBe("application/json")
    expect(otlp.received[0]!.headers.get("x-api-key")).toBe("s ecret")
    expect(otlp.received[0]!.headers.get("x-team")).toBe("core")
    const spans = spansOf(otlp.received)
    const [settle] = byName(spans, "Settler.settle")
    expect(settle).toBeDefined()
    expect(attribute(settle!, "core.tool")).toBe("read")
    expect(attribute(settle!, "core.session")).toBe("ses_t")
    expect(attribute(settle!, "core.call")).toBe("call_t")
    expect(attribute(settle!, "core.agent")).toBe("build")
    expect(attribute(settle!, "core.status")).toBe("success")
    expect(Number(attribute(settle!, "core.output.bytes"))).toBeGreaterThan(0)
    expect(attribute({ attributes: settle!.resource }, "service.name")).toBe("agent-tools")
    expect(attribute({ attributes: settle!.resource }, "deployment.environment")).toBe("ci")
    expect(settle!.resource.filter((entry) => entry.key === "service.name")).toHaveLength(1)
    // Each step of the call is a span under the settle, in the same trace.
    for (const name of ["Settler.decode", "Settler.permission", "Settler.execute", "Settler.bound", "Settler.record"]) {
      const steps = byName(spans, name)
      expect({ name, found: steps.length > 0 }).toEqual({ name, found: true })
      for (const step of steps) expect({ name, parent: step.parentSpanId, trace: step.traceId }).toEqual({ name, parent: settle!.spanId, trace: settle!.traceId })
    }
    expect(attribute(byName(spans, "Settler.decode")[0]!, "core.input.valid")).toBe(true)
    expect(attribute(byName(spans, "Settler.execute")[0]!, "core.execute.outcome")).toBe("success")
    expect(byName(spans, "Settler.record").map((span) => attribute(span, "core.record")).sort()).toEqual(["intent", "settlement"])
    // The command is one trace: the settle sits under core exec's root span.
    const [root] = byName(spans, "core exec")
    expect(root?.parentSpanId).toBeUndefined()
    expect(settle!.traceId).toBe(root!.traceId)
  })

  test("spans sent from the sending thread while the call runs (batches of one) all arrive, the last before core exec exits", async () => {
    const otlp = start()
    const box = sandbox()
    const env = { ...box.env, ...JSON_PROTOCOL, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "1" }
    const result = await exec({ ...box, env }, "bash", { command: "sleep 1; echo slept", description: "wait" }, ["--call", "call_thread"])
    const exited = Date.now()
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout).status).toBe("success")
    // The spans of the steps before the command ran were sent while it slept: by the sending thread, as only it
    // sends before the command's end.
    expect(otlp.received[0]!.at).toBeLessThan(exited - 500)
    const spans = spansOf(otlp.received)
    // One span a request: the settle and its six steps among the command's, all in the command's trace.
    expect(otlp.received.length).toBe(spans.length)
    expect(
      spans
        .map((span) => span.name)
        .filter((name) => name.startsWith("Settler."))
        .sort(),
    ).toEqual(["Settler.bound", "Settler.decode", "Settler.execute", "Settler.permission", "Settler.record", "Settler.record", "Settler.settle"])
    const [root] = byName(spans, "core exec")
    const [settle] = byName(spans, "Settler.settle")
    expect(attribute(settle!, "core.call")).toBe("call_thread")
    expect(attribute(settle!, "core.status")).toBe("success")
    for (const span of spans) expect(span.traceId).toBe(root!.traceId)
  })

  test("a receiver that never answers holds core exec no longer than the flush bound, sending thread or not", async () => {
    const hanging = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Promise<Response>(() => {}) })
    receivers.push({ stop: () => hanging.stop(true) })
    const box = sandbox()
    // Built before anything is timed.
    await binary()
    for (const batch of ["1", "512"]) {
      const env = {
        ...box.env,
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${hanging.port}`,
        OTEL_EXPORTER_OTLP_TIMEOUT: "300",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: batch,
      }
      const started = performance.now()
      // Batches of one while a command sleeps: the sending thread holds requests in flight when exec ends.
      const result = batch === "1" ? await exec({ ...box, env }, "bash", { command: "sleep 0.5", description: "wait" }) : await exec({ ...box, env }, "list", {})
      // Bounded by the 300 ms flush (and the command's half second), far under the 10 s a request may take.
      expect({ batch, code: result.code, fast: performance.now() - started < 5_000 }).toEqual({ batch, code: 0, fast: true })
      expect(JSON.parse(result.stdout).status).toBe("success")
    }
  })

  test("a refused call's spans say what happened (error kind, the permission decision) and never hold its input", async () => {
    const otlp = start()
    const box = sandbox({ "core.json": JSON.stringify({ permission: { bash: { "*": "deny" } } }) })
    const env = { ...box.env, ...JSON_PROTOCOL, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/custom/traces` }
    const denied = await exec({ ...box, env }, "bash", { command: "echo SECRET_IN_COMMAND", description: "x" })
    expect(denied.code).toBe(1)
    const invalid = await exec({ ...box, env }, "read", { filePath: 42, token: "SECRET_IN_INPUT" })
    expect(invalid.code).toBe(1)
    // The traces endpoint is used as given.
    expect(otlp.received.map((request) => request.path)).toContain("/custom/traces")
    const spans = spansOf(otlp.received)
    const kinds = byName(spans, "Settler.settle").map((span) => attribute(span, "core.error.kind"))
    expect(kinds.sort()).toEqual(["denied", "invalid_input"])
    expect(byName(spans, "Settler.decode").map((span) => attribute(span, "core.input.valid"))).toContain(false)
    const text = otlp.received.map((request) => new TextDecoder().decode(request.body)).join("\n")
    expect(text).not.toContain("SECRET_IN_COMMAND")
    expect(text).not.toContain("SECRET_IN_INPUT")
  })

  test("by default spans are sent as OTLP protobuf", async () => {
    const otlp = start()
    const box = sandbox()
    const result = await exec({ ...box, env: { ...box.env, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url } }, "list", {})
    expect(result.code).toBe(0)
    expect(otlp.received[0]?.contentType).toBe("application/x-protobuf")
    // Protobuf keeps strings as they are: the span names are in the body.
    const body = otlp.received.map((request) => Buffer.from(request.body).toString("latin1")).join("")
    expect(body).toContain("Settler.settle")
    expect(body).toContain("Settler.execute")
  })

  test("an endpoint that is down leaves the call as it is; a disabled SDK sends nothing", async () => {
    // A port that was free a moment ago: nothing listens there.
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const port = (probe.address() as { port: number }).port
        probe.close(() => resolve(port))
      })
    })
    const box = sandbox()
    const down = await exec(
      { ...box, env: { ...box.env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${closed}`, OTEL_EXPORTER_OTLP_TIMEOUT: "300" } },
      "list",
      {},
    )
    expect(down.code).toBe(0)
    expect(JSON.parse(down.stdout).status).toBe("success")
    // The operator is told what was not exported, and nothing else.
    expect(down.stderr).toMatch(/^core: warning: (\d+) spans were not exported: \1 in requests that failed, or were not answered or sent by exit\n$/)

    const otlp = start()
    const disabled = await exec({ ...box, env: { ...box.env, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SDK_DISABLED: "true" } }, "list", {})
    expect(disabled.code).toBe(0)
    const none = await exec({ ...box, env: { ...box.env, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_EXPORTER: "none" } }, "list", {})
    expect(none.code).toBe(0)
    expect(otlp.received).toEqual([])

    const grpc = await exec(
      { ...box, env: { ...box.env, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" } },
      "list",
      {},
    )
    expect(grpc.code).toBe(0)
    expect(grpc.stderr).toContain("not exporting traces: core sends OTLP over HTTP")
    expect(otlp.received).toEqual([])
  })
})

describe("traces from core serve", () => {
  test("each request is a server span, with the call's settle span under it", async () => {
    const otlp = start()
    const box = sandbox({ "a.txt": "hi\n" })
    const server = await serve(box, [], { ...JSON_PROTOCOL, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: "100" })
    const { turnID } = await server.turn()
    const call = await server.settle(turnID, { name: "read", input: { filePath: "a.txt" }, sessionID: "ses_s", toolCallID: "call_s" })
    expect(call.body.status).toBe("success")
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)

    const spans = spansOf(otlp.received)
    // Server spans (kind 2), named by their method.
    const requests = spans.filter((span) => span.kind === 2)
    expect(requests.map((span) => [span.name, attribute(span, "http.request.method")])).toEqual([
      ["POST", "POST"],
      ["POST", "POST"],
    ])
    const [settle] = byName(spans, "Settler.settle")
    expect(attribute(settle!, "core.call")).toBe("call_s")
    // The settle's trace is the call request's.
    const callRequest = requests.find((span) => span.traceId === settle!.traceId)
    expect(callRequest).toBeDefined()
    expect(attribute(callRequest!, "url.path")).toBe(`/v1/turns/${turnID}/calls`)
    // The bearer token is never exported.
    const text = otlp.received.map((request) => new TextDecoder().decode(request.body)).join("\n")
    expect(text).not.toContain(server.token)
  })

  // A call answered as its event stream (`/calls/stream`, or `Accept: text/event-stream`) started without the
  // request's context: its settle spans were made by no tracer, and streamed calls were missing from traces.
  test("a call answered as its event stream has its settle span under its request, as a JSON call's", async () => {
    const otlp = start()
    const box = sandbox({ "a.txt": "hi\n" })
    const server = await serve(box, [], { ...JSON_PROTOCOL, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: "100" })
    const { turnID } = await server.turn()
    const body = { name: "read", input: { filePath: "a.txt" }, sessionID: "ses_e", assistantMessageID: "msg_e" }
    const asked = [
      ["call_stream", `/v1/turns/${turnID}/calls/stream`, {}],
      ["call_accept", `/v1/turns/${turnID}/calls`, { accept: "text/event-stream" }],
    ] as const
    for (const [toolCallID, path, headers] of asked) {
      const response = await server.fetch("POST", path, { body: { ...body, toolCallID }, headers })
      expect(await response.text()).toContain("event: settlement")
    }
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)

    const spans = spansOf(otlp.received)
    const requests = spans.filter((span) => span.kind === 2)
    for (const [toolCallID, path] of asked) {
      const settle = byName(spans, "Settler.settle").find((span) => attribute(span, "core.call") === toolCallID)
      expect({ toolCallID, found: settle !== undefined }).toEqual({ toolCallID, found: true })
      const request = requests.find((span) => span.traceId === settle!.traceId)
      expect(request === undefined ? undefined : attribute(request, "url.path")).toBe(path)
    }
  })

  // A session of /mcp is opened by one HTTP request (initialize) and used by the next: each tools/call was traced under
  // the initialize request, in its trace, long after it ended; the request that carried the call had nothing under it.
  test("each tools/call of an /mcp session sits under the HTTP request that carried it", async () => {
    const otlp = start()
    const box = sandbox({ "a.txt": "hi\n" })
    const server = await serve(box, [], { ...JSON_PROTOCOL, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: "100" })
    const headers = { accept: "application/json, text/event-stream", "content-type": "application/json" }
    const initialize = await server.fetch("POST", "/mcp", {
      headers,
      body: { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } },
    })
    expect(initialize.status).toBe(200)
    await initialize.text()
    const session = { ...headers, "mcp-session-id": initialize.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-06-18" }
    await (await server.fetch("POST", "/mcp", { headers: session, body: { jsonrpc: "2.0", method: "notifications/initialized" } })).text()
    for (const id of [2, 3]) {
      const called = await server.fetch("POST", "/mcp", {
        headers: session,
        body: { jsonrpc: "2.0", id, method: "tools/call", params: { name: "read", arguments: { filePath: "a.txt" } } },
      })
      expect(await called.text()).toContain("hi")
    }
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)

    const spans = spansOf(otlp.received)
    const posts = spans.filter((span) => span.kind === 2 && attribute(span, "url.path") === "/mcp")
    expect(posts).toHaveLength(4)
    const calls = byName(spans, "mcp tools/call")
    expect(calls).toHaveLength(2)
    // Each call's span is a child of its own request's: the third and fourth POSTs, in their traces.
    for (const [index, call] of calls.entries()) {
      const carrier = posts[2 + index]!
      expect({ traceId: call.traceId, parent: call.parentSpanId }).toEqual({ traceId: carrier.traceId, parent: carrier.spanId })
    }
  })
})

describe("traces from core mcp", () => {
  test("each tools/call is a server span with the call's settle span under it, sent by the time core mcp ends", async () => {
    const otlp = start()
    const box = sandbox({ "a.txt": "hi\n" })
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(import.meta.dir, "../../src/cli/main.ts"), "mcp", "--location", box.location],
      env: { PATH: process.env.PATH ?? "", HOME: box.home, ...box.env, ...JSON_PROTOCOL, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url },
      stderr: "pipe",
    })
    const client = new Client({ name: "test", version: "1.0.0" })
    await client.connect(transport)
    const result = await client.callTool({ name: "read", arguments: { filePath: "a.txt" }, _meta: { toolCallID: "call_mcp" } })
    expect(result.isError).toBeFalsy()
    const pid = transport.pid!
    const exited = new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        try {
          process.kill(pid, 0)
        } catch {
          clearInterval(poll)
          resolve()
        }
      }, 20)
    })
    await client.close()
    await exited

    const spans = spansOf(otlp.received)
    const [request] = byName(spans, "mcp tools/call")
    expect(request).toMatchObject({ kind: 2 })
    expect(attribute(request!, "core.tool")).toBe("read")
    expect(attribute(request!, "core.call")).toBe("call_mcp")
    const [settle] = byName(spans, "Settler.settle")
    expect(settle!.traceId).toBe(request!.traceId)
    expect(attribute(settle!, "core.status")).toBe("success")
  })
})
