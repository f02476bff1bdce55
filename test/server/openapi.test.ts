// The OpenAPI document as client generators read it: numbers as numbers, definitions as open objects, the JSON and
// event-stream forms of a call as separate operations, each event stream typed by its data, response headers,
// servers; `redocly lint` finds no error; and clients generated with @hey-api/openapi-ts, and with openapi-typescript
// for openapi-fetch, type-check a small program each (with tsc) and then run it against the sidecar in process.

import { describe, expect, test } from "bun:test"
import Ajv2020 from "ajv/dist/2020"
import { cpSync, existsSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { ApiDocument } from "../../src/server/api-document"
import { tempDir } from "../support/temp"
import { echoTool, REPEATING } from "../support/tools"
import { EventReader, HOST, TOKEN, callBody, inProcess } from "./support"

const BIN = join(import.meta.dir, "../../node_modules/.bin")
/** The generator's own package (it prints with TypeScript 5's compiler API), installed by the root's postinstall. */
const GENERATOR = join(import.meta.dir, "generator")
const GENERATOR_INSTALL = "npm ci --prefix test/server/generator"

const ECHO = echoTool({ ...REPEATING, progress: { message: "echoing" } })

const walk = (value: unknown, visit: (node: Record<string, any>) => void): void => {
  if (Array.isArray(value)) return value.forEach((item) => walk(item, visit))
  if (typeof value !== "object" || value === null) return
  visit(value as Record<string, any>)
  for (const child of Object.values(value)) walk(child, visit)
}

describe("the OpenAPI document for generators", () => {
  test("numbers are numbers, free-form objects take any keys, and the served document names its own server", async () => {
    const sidecar = await inProcess()
    const document = (await sidecar.json("GET", "/v1/openapi.json")).body
    expect(JSON.stringify(document)).not.toContain('"Infinity"')
    const { schemas } = document.components
    expect(schemas.Settlement.properties.outputs.items.properties.bytes).toEqual({ type: "number" })
    expect(schemas.Definition.properties.inputSchema).toMatchObject({ type: "object", additionalProperties: {} })
    walk(document, (node) => {
      if (node.type === "object" && !("properties" in node)) expect(node).toHaveProperty("additionalProperties")
    })
    expect(document.servers).toEqual([{ url: `http://${HOST}`, description: "This server" }])
    // The document on its own (no request) describes where core serve listens.
    expect(ApiDocument.openapi().servers).toEqual([expect.objectContaining({ url: "http://127.0.0.1:{port}" })])
  })

  // The document was made once, with the Host of the first request that read it: every later reader got that one.
  test("each request's own Host names the server, whichever came first", async () => {
    const sidecar = await inProcess()
    const read = async (host: string) =>
      (await (
        await sidecar.handler(new Request(`http://${host}/v1/openapi.json`, { headers: { host, authorization: `Bearer ${TOKEN}` } }))
      ).json()) as { servers: ReadonlyArray<unknown> }
    const local = HOST.replace("127.0.0.1", "localhost")
    expect((await read(local)).servers).toEqual([{ url: `http://${local}`, description: "This server" }])
    expect((await read(HOST)).servers).toEqual([{ url: `http://${HOST}`, description: "This server" }])
  })

  test("the JSON and event-stream forms of a call are separate operations; each event stream is typed by its data", async () => {
    const sidecar = await inProcess()
    const { paths } = (await sidecar.json("GET", "/v1/openapi.json")).body
    const json = paths["/v1/turns/{turnID}/calls"].post.responses["200"]
    expect(Object.keys(json.content)).toEqual(["application/json"])
    expect(json.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/CallSettlement" })
    const stream = paths["/v1/turns/{turnID}/calls/stream"].post.responses["200"]
    expect(Object.keys(stream.content)).toEqual(["text/event-stream"])
    const data = stream.content["text/event-stream"].schema
    expect(data.anyOf.map((branch: any) => branch.$ref.split("/").pop())).toEqual(["Progress", "PermissionRequest", "HostCall", "CallSettlement", "Error"])
    expect(data.description).toContain("`settlement` (CallSettlement)")
    expect(paths["/v1/events"].get.responses["200"].content["text/event-stream"].schema.description).toContain("`call.settled`")
  })

  test("response headers: X-Core-Replayed on calls, Content-Range on ranges", async () => {
    const sidecar = await inProcess()
    const { paths } = (await sidecar.json("GET", "/v1/openapi.json")).body
    expect(paths["/v1/turns/{turnID}/calls"].post.responses["200"].headers["X-Core-Replayed"].schema).toEqual({
      type: "string",
      enum: ["true"],
    })
    expect(paths["/v1/turns/{turnID}/calls/stream"].post.responses["200"].headers).toHaveProperty("X-Core-Replayed")
    const output = paths["/v1/outputs/{id}"].get.responses
    expect(output["206"].headers).toHaveProperty("Content-Range")
    expect(output["416"].headers).toHaveProperty("Content-Range")
    expect(output["200"].headers).toHaveProperty("Accept-Ranges")
    // The structured part is served as JSON, whole or by range: the document says so beside the text.
    for (const status of ["200", "206"]) expect(Object.keys(output[status].content)).toEqual(["text/plain; charset=utf-8", "application/json"])
    // Whole, it is any JSON value (it was typed a string, so a generated client took an object for one); a range of
    // it is bytes that may not parse.
    const whole = new Ajv2020({ strict: false }).compile(output["200"].content["application/json"].schema)
    for (const value of [{ items: [1] }, [1, 2], "text", 3, null, true]) expect({ value, valid: whole(value) }).toEqual({ value, valid: true })
    expect(output["206"].content["application/json"].schema).toMatchObject({ type: "string", format: "binary" })
  })

  test("redocly lint reports no error", async () => {
    const file = join(tempDir("core-openapi-"), "openapi.json")
    writeFileSync(file, JSON.stringify(ApiDocument.openapi()))
    const lint = Bun.spawn([join(BIN, "redocly"), "lint", "--format", "json", file], { stdout: "pipe", stderr: "pipe" })
    const [code, stdout] = await Promise.all([lint.exited, new Response(lint.stdout).text()])
    const report = JSON.parse(stdout) as { totals: { errors: number }; problems: Array<{ message: string; severity: string }> }
    expect(report.problems.filter((problem) => problem.severity === "error")).toEqual([])
    expect(report.totals.errors).toBe(0)
    expect(code).toBe(0)
  })
})

describe("POST /v1/turns/{turnID}/calls/stream", () => {
  test("answers the call as events without an Accept header, and a replay with only its settlement", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const { turnID } = await sidecar.turn()
    const body = callBody({ name: "echo", input: { text: "hi" }, toolCallID: "call_stream" })
    const first = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls/stream`, { body })
    expect(first.headers.get("content-type")).toStartWith("text/event-stream")
    const events = await new EventReader(first).rest()
    expect(events.map((event) => event.event)).toEqual(["progress", "settlement"])
    expect(events[1]!.data).toMatchObject({ status: "success", structured: "hi" })
    const again = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls/stream`, { body })
    expect(again.headers.get("x-core-replayed")).toBe("true")
    expect((await new EventReader(again).rest()).map((event) => event.event)).toEqual(["settlement"])
  })
})


/** A small host written against the generated client: types checked by tsc, then run against the sidecar. */
const PROGRAM = `import { createClient } from "./client/client"
import { coreCreateTurn, coreSettle, coreSettleStream } from "./client/sdk.gen"
import type { Definition, Provider } from "./client/types.gen"

export const run = async (fetch: typeof globalThis.fetch, base: string, token: string) => {
  const client = createClient({ baseUrl: base, fetch, headers: { authorization: \`Bearer \${token}\` } })
  const turn = await coreCreateTurn({ client, body: { provider: "anthropic" }, throwOnError: true })
  const provider: Provider | undefined = turn.data.provider
  // A definition's schemas are open objects: a host may build one.
  const own: Definition = { name: "x", description: "", inputSchema: { type: "object" }, outputSchema: {} }
  // @ts-expect-error providers are a closed set
  const wrong: Provider = "cohere"
  const call = { sessionID: "ses_gen", assistantMessageID: "msg_gen", name: "echo", input: { text: "hi", times: 2 } }
  const settled = await coreSettle({
    client,
    path: { turnID: turn.data.turnID },
    body: { ...call, toolCallID: "call_json" },
    throwOnError: true,
  })
  const status: "success" | "error" | "declined" | "cancelled" = settled.data.status
  const bytes: number = settled.data.outputs[0]?.bytes ?? 0
  const events: Array<string> = []
  const { stream } = await coreSettleStream({
    client,
    path: { turnID: turn.data.turnID },
    body: { ...call, toolCallID: "call_stream" },
    // A stream may open with an SSE comment (a call with nothing to say yet), which this client reports as an unnamed event.
    onSseEvent: (event) => { if (event.event !== undefined) events.push(String(event.event)) },
  })
  let streamed: unknown
  for await (const data of stream) if ("status" in data) streamed = data.structured
  return { provider, own, wrong, status, bytes, structured: settled.data.structured, result: settled.data.result, events, streamed }
}
`

/** The compiler options a host's strict TypeScript project would use, checking `files` only. */
const tsconfig = (files: ReadonlyArray<string>) =>
  JSON.stringify({
    compilerOptions: {
      strict: true,
      noEmit: true,
      target: "ESNext",
      module: "Preserve",
      moduleResolution: "bundler",
      lib: ["ESNext", "DOM", "DOM.Iterable"],
      types: [],
      skipLibCheck: true,
    },
    files,
  })

/** Runs a generator's command line in `cwd` and answers its exit code and stderr. */
const runGenerator = async (args: ReadonlyArray<string>, cwd: string) => {
  const generate = Bun.spawn([process.execPath, ...args], { cwd, stdout: "pipe", stderr: "pipe" })
  const [code, stderr] = await Promise.all([generate.exited, new Response(generate.stderr).text()])
  return { code, stderr }
}

/** tsc on `project`: its exit code and what it printed (the errors). */
const typeCheck = async (project: string) => {
  const check = Bun.spawn([join(BIN, "tsc"), "-p", project], { stdout: "pipe", stderr: "pipe" })
  const [checked, out] = await Promise.all([check.exited, new Response(check.stdout).text()])
  return { checked, out }
}

/**
 * A small host written against openapi-fetch and the paths openapi-typescript generated: each answer is read
 * straight from `data`, no guard written by hand, so the JSON call must not be typed as a union with its stream.
 */
const FETCH_PROGRAM = `import createClient from "openapi-fetch"
import type { paths } from "./schema"

export const run = async (fetch: (request: Request) => Promise<Response>, base: string, token: string) => {
  const client = createClient<paths>({ baseUrl: base, fetch, headers: { authorization: \`Bearer \${token}\` } })
  const turn = await client.POST("/v1/turns", { body: { agent: "build" } })
  if (turn.data === undefined) throw new Error(JSON.stringify(turn.error))
  const turnID: string = turn.data.turnID
  const settled = await client.POST("/v1/turns/{turnID}/calls", {
    params: { path: { turnID } },
    body: { sessionID: "ses_fetch", assistantMessageID: "msg_fetch", toolCallID: "call_fetch", name: "echo", input: { text: "hi", times: 3 } },
  })
  if (settled.data === undefined) throw new Error(JSON.stringify(settled.error))
  const status: "success" | "error" | "declined" | "cancelled" = settled.data.status
  const structured: unknown = settled.data.structured
  const replayed: string | null = settled.response.headers.get("x-core-replayed")
  const missing = await client.POST("/v1/turns/{turnID}/calls", {
    params: { path: { turnID: "turn_missing" } },
    body: { sessionID: "ses_fetch", assistantMessageID: "msg_fetch", toolCallID: "call_missing", name: "echo", input: {} },
  })
  const kind: string | undefined = missing.error?.error.kind
  return { status, structured, replayed, kind }
}
`

describe("a client generated from the document", () => {
  test("openapi-typescript's types let an openapi-fetch client read a JSON call's status with no guard, and it settles in process", async () => {
    const cli = join(GENERATOR, "node_modules/openapi-typescript/bin/cli.js")
    const fetchClient = join(GENERATOR, "node_modules/openapi-fetch/package.json")
    expect({ installed: existsSync(cli) && existsSync(fetchClient), install: GENERATOR_INSTALL }).toEqual({
      installed: true,
      install: GENERATOR_INSTALL,
    })
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const work = tempDir("core-openapi-fetch-")
    const spec = join(work, "openapi.json")
    writeFileSync(spec, JSON.stringify((await sidecar.json("GET", "/v1/openapi.json")).body))
    const generated = await runGenerator([cli, spec, "-o", join(work, "schema.ts")], work)
    expect(generated).toEqual({ code: 0, stderr: expect.any(String) })
    symlinkSync(join(GENERATOR, "node_modules"), join(work, "node_modules"))
    writeFileSync(join(work, "program.ts"), FETCH_PROGRAM)
    writeFileSync(join(work, "tsconfig.json"), tsconfig(["program.ts"]))
    expect(await typeCheck(join(work, "tsconfig.json"))).toEqual({ checked: 0, out: "" })

    // What the types say is what is sent and answered.
    cpSync(join(work, "program.ts"), join(work, "program-run.ts"))
    const { run } = (await import(join(work, "program-run.ts"))) as { run: (...args: Array<unknown>) => Promise<Record<string, any>> }
    const send = (request: Request) => sidecar.handler(new Request(request, { headers: { ...Object.fromEntries(request.headers), host: HOST } }))
    expect(await run(send, `http://${HOST}`, TOKEN)).toEqual({ status: "success", structured: "hihihi", replayed: null, kind: "not_found" })
  }, 120_000)

  test("@hey-api/openapi-ts generates a client that type-checks and settles calls in process", async () => {
    const generator = join(GENERATOR, "node_modules/@hey-api/openapi-ts/dist/run.mjs")
    expect({ installed: existsSync(generator), install: GENERATOR_INSTALL }).toEqual({ installed: true, install: GENERATOR_INSTALL })
    const work = tempDir("core-openapi-client-")
    const spec = join(work, "openapi.json")
    writeFileSync(spec, JSON.stringify(ApiDocument.openapi()))
    expect(await runGenerator([generator, "-i", spec, "-o", join(work, "client")], work)).toEqual({
      code: 0,
      stderr: expect.any(String),
    })
    expect(existsSync(join(work, "client/sdk.gen.ts"))).toBe(true)
    writeFileSync(join(work, "program.ts"), PROGRAM)
    writeFileSync(join(work, "tsconfig.json"), tsconfig(["program.ts"]))
    expect(await typeCheck(join(work, "tsconfig.json"))).toEqual({ checked: 0, out: "" })

    // And what the types say is what is sent: the program runs against the sidecar.
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    cpSync(join(work, "program.ts"), join(work, "program-run.ts"))
    const { run } = (await import(join(work, "program-run.ts"))) as { run: (...args: Array<unknown>) => Promise<Record<string, any>> }
    const send = (request: Request) => sidecar.handler(new Request(request, { headers: { ...Object.fromEntries(request.headers), host: HOST } }))
    const outcome = await run(send, `http://${HOST}`, TOKEN)
    expect(outcome).toMatchObject({
      provider: "anthropic",
      status: "success",
      structured: "hihi",
      result: { type: "tool_result", tool_use_id: "call_json" },
      events: ["progress", "settlement"],
      streamed: "hihi",
    })
  }, 120_000)
})
