// The sidecar's HTTP surface in process (DESIGN §8): routes, request and response bodies, and every refusal with
// its status and error body. Requests go straight to the web handler; no socket is opened.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Api } from "../../src/server/api"
import { Respond } from "../../src/server/respond"
import { tempDir } from "../support/temp"
import { echoTool } from "../support/tools"
import { callBody, HOST, IMPORTS, inProcess, RAN, runs, sweeper, TOKEN } from "./support"

const ECHO = echoTool()

const COUNT = `${IMPORTS}${RAN}
export default Tool.make({
  description: "Count a call",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.sync(() => { ran("count"); return "counted" }),
})
`

const BIG = `${IMPORTS}
export default Tool.make({
  description: "Print many numbered lines",
  input: Schema.Struct({ lines: Schema.Finite }),
  output: Schema.String,
  execute: (input) => Effect.succeed(Array.from({ length: input.lines }, (_, i) => "line " + i).join("\\n")),
})
`

const expectError = (answer: { status: number; body: any }, status: number, kind: Api.ErrorKind) => {
  expect(answer.status).toBe(status)
  expect(answer.body).toEqual({ error: { kind, message: expect.any(String) } })
  expect(answer.body.error.message.length).toBeGreaterThan(10)
}

describe("the sidecar's routes", () => {
  test("health answers ok and the version without a token", async () => {
    const sidecar = await inProcess()
    const response = await sidecar.handler(new Request(`http://${HOST}/v1/health`, { headers: { host: HOST } }))
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ ok: true, version: "test" })
  })

  test("a turn advertises the Location's tools with JSON Schemas, and a call through it answers the settlement", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const { turnID, definitions } = await sidecar.turn()
    expect(turnID).toMatch(/^turn_/)
    const echo = definitions.find((definition) => definition.name === "echo")
    expect(echo).toEqual({
      name: "echo",
      description: "Echo text back",
      inputSchema: expect.objectContaining({ type: "object" }),
      outputSchema: { type: "string" },
    })
    const answer = await sidecar.settle(turnID, { name: "echo", input: { text: "hi" }, toolCallID: "call_1" })
    expect(answer.status).toBe(200)
    expect(answer.headers.get("x-core-replayed")).toBeNull()
    expect(answer.body).toEqual({
      tool: "echo",
      callID: "call_1",
      status: "success",
      content: [{ type: "text", text: "hi" }],
      structured: "hi",
      outputs: [],
    })
  })

  test("settling the same call again replays the record with X-Core-Replayed and runs nothing", async () => {
    const sidecar = await inProcess({ "tools/count.ts": COUNT })
    const { turnID } = await sidecar.turn()
    const first = await sidecar.settle(turnID, { name: "count", input: {}, toolCallID: "call_once" })
    const again = await sidecar.settle((await sidecar.turn()).turnID, { name: "count", input: {}, toolCallID: "call_once" })
    expect(again.status).toBe(200)
    expect(again.headers.get("x-core-replayed")).toBe("true")
    expect(again.body).toEqual(first.body)
    expect(runs(sidecar.box, "count")).toBe(1)
  })

  test("model-visible errors are settlements (200), not HTTP errors", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const { turnID } = await sidecar.turn()
    const unknown = await sidecar.settle(turnID, { name: "ecko", input: {} })
    expect(unknown.status).toBe(200)
    expect(unknown.body.error).toEqual({ kind: "unknown", message: expect.stringContaining('Did you mean "echo"') })
    const invalid = await sidecar.settle(turnID, { name: "echo", input: { text: 3 } })
    expect(invalid.status).toBe(200)
    expect(invalid.body.error.kind).toBe("invalid_input")
  })

  test("the agent's rules filter the turn's catalog, and an unknown agent is a 400 naming the known ones", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO, "core.json": '{ "agents": { "quiet": { "permission": { "echo": "deny" } } } }' })
    const names = (await sidecar.turn("quiet")).definitions.map((definition) => definition.name)
    expect(names).not.toContain("echo")
    expect((await sidecar.turn()).definitions.map((definition) => definition.name)).toContain("echo")
    const unknown = await sidecar.json("POST", "/v1/turns", { body: { agent: "nobody" } })
    expectError(unknown, 400, "bad_request")
    expect(unknown.body.error.message).toContain("build, plan, quiet")
    // An unknown provider names the ones there are, as the CLI does (it said "Expected Provider").
    const provider = await sidecar.json("POST", "/v1/turns", { body: { provider: "cohere" } })
    expectError(provider, 400, "bad_request")
    expect(provider.body.error.message).toContain("one of openai, openai-strict, anthropic, gemini")
  })

  test("a call's agent is the turn's: the plan agent's edit is denied through its turn", async () => {
    const sidecar = await inProcess()
    const { turnID } = await sidecar.turn("plan")
    const answer = await sidecar.settle(turnID, { name: "write", input: { path: "a.txt", content: "x" } })
    expect(answer.status).toBe(200)
    expect(answer.body.status).toBe("error")
  })

  test("GET /v1/settlements answers the recorded settlement, and 404 for a call never made", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const { turnID } = await sidecar.turn()
    const settled = await sidecar.settle(turnID, { name: "echo", input: { text: "kept" }, sessionID: "ses_a", toolCallID: "call_a" })
    const recorded = await sidecar.json("GET", "/v1/settlements/ses_a/call_a")
    expect(recorded.status).toBe(200)
    expect(recorded.body).toEqual(settled.body)
    expectError(await sidecar.json("GET", "/v1/settlements/ses_a/call_never"), 404, "not_found")
  })

  test("an unknown turn is a 404 that says to materialize again", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const answer = await sidecar.settle("turn_unknown", { name: "echo", input: { text: "x" } })
    expectError(answer, 404, "not_found")
    expect(answer.body.error.message).toContain("POST /v1/turns")
  })

  test("a managed output is served in full, and by byte range (206), with 416 past its end", async () => {
    const sidecar = await inProcess({ "tools/big.ts": BIG, "core.json": '{ "output": { "maxLines": 10 } }' })
    const { turnID } = await sidecar.turn()
    const settled = await sidecar.settle(turnID, { name: "big", input: { lines: 100 } })
    const [ref] = settled.body.outputs
    const full = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n")
    const whole = await sidecar.fetch("GET", `/v1/outputs/${ref.id}`)
    expect(whole.status).toBe(200)
    expect(whole.headers.get("accept-ranges")).toBe("bytes")
    expect(await whole.text()).toBe(full)
    const part = await sidecar.fetch("GET", `/v1/outputs/${ref.id}`, { headers: { range: "bytes=5-10" } })
    expect(part.status).toBe(206)
    expect(part.headers.get("content-range")).toBe(`bytes 5-10/${full.length}`)
    expect(await part.text()).toBe(full.slice(5, 11))
    const tail = await sidecar.fetch("GET", `/v1/outputs/${ref.id}`, { headers: { range: "bytes=-6" } })
    expect(await tail.text()).toBe(full.slice(-6))
    const past = await sidecar.fetch("GET", `/v1/outputs/${ref.id}`, { headers: { range: `bytes=${full.length}-` } })
    expect(past.status).toBe(416)
    expect(past.headers.get("content-range")).toBe(`bytes */${full.length}`)
    expect(((await past.json()) as any).error.message).toContain("past the end")
    const emptySuffix = await sidecar.json("GET", `/v1/outputs/${ref.id}`, { headers: { range: "bytes=-0" } })
    expectError(emptySuffix, 416, "bad_request")
    expect(emptySuffix.body.error.message).toContain("empty suffix")
    expect(emptySuffix.body.error.message).not.toContain("past the end")
    // A range this server does not read as one (spaces inside) is ignored: the whole content, once marked.
    const spaced = await sidecar.fetch("GET", `/v1/outputs/${ref.id}`, { headers: { range: "bytes= 1 - 2" } })
    expect(spaced.status).toBe(200)
    expect(spaced.headers.get("accept-ranges")).toBe("bytes")
    expect(await spaced.text()).toBe(full)
    expectError(await sidecar.json("GET", "/v1/outputs/out_00000000_0000000000000000"), 404, "not_found")
  })

  test("expired managed outputs are swept when the sidecar starts", async () => {
    const expired = "out_00000000_0123456789abcdef"
    const fresh = "out_00000001_0123456789abcdef"
    const sidecar = await inProcess({}, {
      before: (box) => {
        mkdirSync(join(box.data, "outputs"), { recursive: true })
        for (const id of [expired, fresh]) writeFileSync(join(box.data, "outputs", id), "kept output")
        const longAgo = new Date(Date.now() - 8 * 24 * 60 * 60 * 1000)
        utimesSync(join(box.data, "outputs", expired), longAgo, longAgo)
      },
    })
    expect(existsSync(join(sidecar.box.data, "outputs", expired))).toBe(false)
    expect(existsSync(join(sidecar.box.data, "outputs", fresh))).toBe(true)
    expect(await (await sidecar.fetch("GET", `/v1/outputs/${fresh}`)).text()).toBe("kept output")
  })

  test("the retention sweep runs again and again while serving, without a restart", async () => {
    const outputs = (box: { data: string }) => join(box.data, "outputs")
    const expire = (path: string) => {
      const longAgo = new Date(Date.now() - 8 * 24 * 60 * 60 * 1000)
      utimesSync(path, longAgo, longAgo)
    }
    const sweeps = sweeper()
    const sidecar = await inProcess({}, { nextSweep: sweeps.next })
    mkdirSync(outputs(sidecar.box), { recursive: true })
    const kept = join(outputs(sidecar.box), "out_00000002_0123456789abcdef")
    writeFileSync(kept, "fresh")
    for (const id of ["out_00000003_0123456789abcdef", "out_00000004_0123456789abcdef"]) {
      // Each expires only after the server started (and after the previous sweep): only a later sweep removes it.
      const path = join(outputs(sidecar.box), id)
      writeFileSync(path, "old")
      expire(path)
      expect(existsSync(path)).toBe(true)
      await sweeps.sweep()
      expect(existsSync(path)).toBe(false)
      expect(existsSync(kept)).toBe(true)
    }
  })

  test("another Location with an invalid core.json is a 400, and is served once it is fixed", async () => {
    const other = tempDir("core-other-")
    writeFileSync(join(other, "core.json"), '{ "permission": 3 }')
    const sidecar = await inProcess({}, { roots: [other] })
    const refused = await sidecar.json("POST", "/v1/turns", { body: {}, headers: { "x-core-location": other } })
    expectError(refused, 400, "bad_request")
    expect(refused.body.error.message).toContain("core.json")
    writeFileSync(join(other, "core.json"), "{}")
    expect((await sidecar.json("POST", "/v1/turns", { body: {}, headers: { "x-core-location": other } })).status).toBe(200)
  })

  test("the OpenAPI 3.1 document describes exactly the served routes, derived from their schemas", async () => {
    const sidecar = await inProcess()
    const answer = await sidecar.json("GET", "/v1/openapi.json")
    expect(answer.status).toBe(200)
    const document = answer.body
    expect(document.openapi).toBe("3.1.0")
    const documented = Object.entries(document.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
      .sort()
    const served = Object.values(Api.ENDPOINTS)
      .map((endpoint) => `${endpoint.method} ${endpoint.path.replaceAll(/:(\w+)/g, "{$1}")}`)
      .sort()
    expect(documented).toEqual(served)
    expect(documented).toContain("POST /v1/turns/{turnID}/calls")
    expect(document.components.schemas.CallRequest.required).toEqual(["sessionID", "assistantMessageID", "toolCallID", "name", "input"])
    expect(document.components.schemas.Settlement.properties.status.enum).toEqual(["success", "error", "declined", "cancelled"])
    expect(document.paths["/v1/health"].get.security).toEqual([])
    expect(document.paths["/v1/turns"].post.security).toEqual([{ bearer: [] }])
    expect(document.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" })
  })

  test("the OpenAPI document names X-Core-Location where it is honoured, every status a route answers, and each schema once", async () => {
    const sidecar = await inProcess()
    const document = (await sidecar.json("GET", "/v1/openapi.json")).body
    const operations = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ route: `${method.toUpperCase()} ${path}`, operation })),
    )
    for (const { route, operation } of operations) {
      const headers = (operation.parameters ?? []).filter((parameter: any) => parameter.in === "header").map((parameter: any) => parameter.name)
      const statuses = Object.keys(operation.responses)
      for (const status of ["403", "405", "413", "500"]) expect({ route, has: statuses.includes(status) }).toEqual({ route, has: true })
      const guarded = route !== "GET /v1/health"
      expect({ route, location: headers.includes("x-core-location") }).toEqual({ route, location: guarded })
      for (const status of ["400", "401"]) expect({ route, has: statuses.includes(status) }).toEqual({ route, has: guarded })
    }
    const output = document.paths["/v1/outputs/{id}"].get
    expect(Object.keys(output.responses)).toEqual(expect.arrayContaining(["200", "206", "404", "416"]))
    expect(output.parameters.map((parameter: any) => parameter.name)).toContain("range")
    // Every reference resolves, and no schema is kept twice under a derived name.
    const names = Object.keys(document.components.schemas)
    expect(names.filter((name) => /_\d+$/.test(name))).toEqual([])
    const refs = [...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((match) => match[1])
    expect(refs.filter((name) => !names.includes(name!))).toEqual([])
    expect(document.components.schemas.CallSettled.properties.settlement).toEqual({ $ref: "#/components/schemas/Settlement" })
    // The terminal event of a call that ended operationally is documented with its fields.
    expect(Object.keys(document.components.schemas.CallFailed.properties).sort()).toEqual(["message", "sessionID", "tool", "toolCallID"])
    expect(JSON.stringify(document.paths["/v1/events"].get)).toContain("call.failed")
    expect(document.components.schemas.Error.properties.error.properties.kind.enum).toContain("invalid_input")
  })
})

describe("refusals", () => {
  // (A lone surrogate cannot be written in a path: percent-encoded, it is not UTF-8, and such a path is a 404.)
  test("ids no store keeps (a NUL) in a path or the query are a 400, as in a call's body", async () => {
    const sidecar = await inProcess()
    for (const [method, path] of [
      ["GET", "/v1/settlements/a%00b/c"],
      ["GET", "/v1/settlements/a/c%00"],
      ["GET", "/v1/sessions/a%00b/todos"],
      ["GET", "/v1/settlements?sessionID=a%00b"],
      ["POST", "/v1/calls/a%00b/c/cancel"],
    ] as const) {
      const answer = await sidecar.json(method, path)
      expect({ path, status: answer.status, kind: (answer.body as any).error?.kind }).toEqual({ path, status: 400, kind: "bad_request" })
    }
  })

  test("a missing or wrong token is a 401 on every route but health", async () => {
    const sidecar = await inProcess()
    for (const [method, path] of [["POST", "/v1/turns"], ["GET", "/v1/permissions"], ["GET", "/v1/openapi.json"], ["GET", "/v1/nowhere"]] as const) {
      const none = await sidecar.handler(new Request(`http://${HOST}${path}`, { method, headers: { host: HOST } }))
      expect(none.status).toBe(401)
      expect(none.headers.get("www-authenticate")).toBe("Bearer")
      expect(((await none.json()) as any).error.kind).toBe("unauthorized")
      const wrong = await sidecar.json(method, path, { headers: { authorization: `Bearer ${TOKEN}x` } })
      expectError(wrong, 401, "unauthorized")
    }
    const basic = await sidecar.json("GET", "/v1/permissions", { headers: { authorization: `Basic ${TOKEN}` } })
    expectError(basic, 401, "unauthorized")
  })

  test("a Host other than the bound address is a 403 (DNS rebinding), even for health", async () => {
    const sidecar = await inProcess()
    for (const host of ["evil.example:4321", "127.0.0.1:9999", "localhost.evil:4321"]) {
      expectError(await sidecar.json("GET", "/v1/health", { headers: { host } }), 403, "forbidden")
    }
    for (const host of ["127.0.0.1:4321", "localhost:4321"]) {
      expect((await sidecar.json("GET", "/v1/health", { headers: { host } })).status).toBe(200)
    }
  })

  test("every request passes the Host check, then the token, before it is routed, even one whose path cannot be decoded", async () => {
    const sidecar = await inProcess()
    for (const path of ["/v1/outputs/%zz%", `/v1/settlements/${"x".repeat(5000)}/y`, "/v1/nothing", "/%"]) {
      const send = (headers: Record<string, string>) => sidecar.handler(new Request(`http://${HOST}${path}`, { headers }))
      const wrongHost = await send({ host: "evil.example:4321", authorization: `Bearer ${TOKEN}` })
      expect({ path, status: wrongHost.status }).toEqual({ path, status: 403 })
      expect(((await wrongHost.json()) as any).error.kind).toBe("forbidden")
      const noToken = await send({ host: HOST })
      expect({ path, status: noToken.status }).toEqual({ path, status: 401 })
      expect(((await noToken.json()) as any).error.kind).toBe("unauthorized")
      const routed = await send({ host: HOST, authorization: `Bearer ${TOKEN}` })
      expect({ path, status: routed.status }).toEqual({ path, status: 404 })
      const body = (await routed.json()) as any
      expect(body.error.kind).toBe("not_found")
      expect(body.error.message.length).toBeLessThan(400)
    }
  })

  test("HEAD answers what GET would without a body; health needs no token for any method", async () => {
    const sidecar = await inProcess()
    const head = (path: string, headers: Record<string, string>) =>
      sidecar.handler(new Request(`http://${HOST}${path}`, { method: "HEAD", headers: { host: HOST, ...headers } }))
    const health = await head("/v1/health", {})
    expect(health.status).toBe(200)
    expect(health.headers.get("content-type")).toBe("application/json")
    expect(Number(health.headers.get("content-length"))).toBeGreaterThan(0)
    expect(await health.text()).toBe("")
    expect((await head("/v1/permissions", {})).status).toBe(401)
    const pending = await head("/v1/permissions", { authorization: `Bearer ${TOKEN}` })
    expect(pending.status).toBe(200)
    expect(await pending.text()).toBe("")
    const events = await head("/v1/events", { authorization: `Bearer ${TOKEN}` })
    expect(events.status).toBe(200)
    expect(events.headers.get("content-type")).toBe("text/event-stream")
    expect(await events.text()).toBe("")
    expect((await head("/v1/turns", { authorization: `Bearer ${TOKEN}` })).status).toBe(405)
    expect((await head("/v1/nothing", { authorization: `Bearer ${TOKEN}` })).status).toBe(404)
    for (const method of ["DELETE", "POST", "PUT"]) {
      const answer = await sidecar.handler(new Request(`http://${HOST}/v1/health`, { method, headers: { host: HOST } }))
      expect({ method, status: answer.status, allow: answer.headers.get("allow") }).toEqual({ method, status: 405, allow: "GET, HEAD" })
      expect(((await answer.json()) as any).error.message).toContain("use GET")
    }
  })

  test("X-Core-Location must be an absolute existing directory (400) under an allowed root (403)", async () => {
    const allowed = tempDir("core-root-")
    mkdirSync(join(allowed, "project"))
    const sidecar = await inProcess({}, { roots: [allowed] })
    expectError(await sidecar.json("POST", "/v1/turns", { headers: { "x-core-location": "relative/dir" } }), 400, "bad_request")
    expectError(await sidecar.json("POST", "/v1/turns", { headers: { "x-core-location": join(allowed, "missing") } }), 400, "bad_request")
    expectError(await sidecar.json("POST", "/v1/turns", { headers: { "x-core-location": tempDir("core-elsewhere-") } }), 403, "forbidden")
    const inside = await sidecar.json("POST", "/v1/turns", { body: {}, headers: { "x-core-location": join(allowed, "project") } })
    expect(inside.status).toBe(200)
  })

  test("turns belong to their Location: a turn made for another Location is unknown here", async () => {
    const allowed = tempDir("core-root-")
    const sidecar = await inProcess({}, { roots: [allowed] })
    const other = await sidecar.turn(undefined, { "x-core-location": allowed })
    expect((await sidecar.settle(other.turnID, { name: "read", input: { path: "x" } })).status).toBe(404)
    const through = await sidecar.settle(other.turnID, { name: "list", input: {} }, { "x-core-location": allowed })
    expect(through.status).toBe(200)
  })

  test("an unknown route is a 404 and a known route with another method a 405", async () => {
    const sidecar = await inProcess()
    expectError(await sidecar.json("GET", "/v1/nothing/here"), 404, "not_found")
    expectError(await sidecar.json("GET", "/"), 404, "not_found")
    expectError(await sidecar.json("GET", "/v1/turns"), 405, "method_not_allowed")
    expectError(await sidecar.json("DELETE", "/v1/permissions"), 405, "method_not_allowed")
    expectError(await sidecar.json("PUT", "/v1/turns/turn_x/calls"), 405, "method_not_allowed")
    // HTTP asks a 405 to say which methods the route has.
    const refusals: ReadonlyArray<readonly [string, string, string]> = [["GET", "/v1/turns", "POST"], ["PUT", "/v1/turns/turn_x/calls", "POST"], ["DELETE", "/v1/permissions", "GET, HEAD"]]
    for (const [method, path, allow] of refusals) {
      const answer = await sidecar.json(method, path)
      expect({ path, status: answer.status, allow: answer.headers.get("allow") }).toEqual({ path, status: 405, allow })
    }
    expectError(await sidecar.json("GET", "/v1/outputs/%zz%"), 404, "not_found")
    const long = "x".repeat(2000)
    expectError(await sidecar.json("GET", `/v1/settlements/${long}/${long}`), 404, "not_found")
    // Routing comes before X-Core-Location: a bad one does not hide that the route is wrong.
    const elsewhere = { headers: { "x-core-location": "not/absolute" } }
    expectError(await sidecar.json("PUT", "/v1/turns", elsewhere), 405, "method_not_allowed")
    expectError(await sidecar.json("GET", "/v1/nothing/here", elsewhere), 404, "not_found")
    expectError(await sidecar.json("POST", "/v1/turns", elsewhere), 400, "bad_request")
  })

  test("malformed JSON, a body that is not an object, missing and wrong-typed fields are 400s saying what is wrong", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const { turnID } = await sidecar.turn()
    const path = `/v1/turns/${turnID}/calls`
    const truncated = await sidecar.json("POST", path, { body: '{"sessionID": "s", "name": ' })
    expectError(truncated, 400, "bad_request")
    expect(truncated.body.error.message).toContain("not valid JSON")
    expectError(await sidecar.json("POST", path, { body: "[1, 2]" }), 400, "bad_request")
    expectError(await sidecar.json("POST", path, { body: "" }), 400, "bad_request")
    const missing = await sidecar.json("POST", path, { body: { sessionID: "s", name: "echo" } })
    expectError(missing, 400, "bad_request")
    expect(missing.body.error.message).toContain("toolCallID")
    const wrong = await sidecar.json("POST", path, { body: { ...callBody({ name: "echo", input: {} }), sessionID: 7 } })
    expectError(wrong, 400, "bad_request")
    expect(wrong.body.error.message).toContain("sessionID")
    const empty = await sidecar.json("POST", path, { body: { ...callBody({ name: "echo", input: {} }), toolCallID: "" } })
    expectError(empty, 400, "bad_request")
    const extra = await sidecar.json("POST", path, { body: { ...callBody({ name: "echo", input: {} }), agent: "plan" } })
    expectError(extra, 400, "bad_request")
    expectError(await sidecar.json("POST", "/v1/turns", { body: { agent: 3 } }), 400, "bad_request")
    expectError(await sidecar.json("POST", "/v1/permissions/per_x/reply", { body: { reply: "maybe" } }), 400, "bad_request")
    // 90,000 unknown keys: twenty named (a long key cut), the rest counted; the answer was each of them.
    const keys: Record<string, number> = { [`k${"x".repeat(1_000)}`]: 0 }
    for (let index = 0; index < 90_000; index++) keys[`k${index}`] = index
    const many = await sidecar.json("POST", "/v1/turns", { body: keys })
    expectError(many, 400, "bad_request")
    expect(many.body.error.message).toContain("… and 89981 more")
    expect(many.body.error.message).toContain(`k${"x".repeat(199)}…`)
    expect(many.body.error.message.length).toBeLessThan(3_000)
    // 600,000 (under the body's limit): finding each of them held the sidecar's one thread for seconds; the first
    // is named alone.
    const million: Record<string, number> = {}
    for (let index = 0; index < 600_000; index++) million[`k${index}`] = 0
    const widest = await sidecar.json("POST", "/v1/turns", { body: million })
    expectError(widest, 400, "bad_request")
    expect(widest.body.error.message).toContain("k0")
    expect(widest.body.error.message).not.toContain("more")
    expect(widest.body.error.message.length).toBeLessThan(1_000)
  })

  test("deep JSON is a 400 on every body, however deep, closed or not; nesting up to the limit is served", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const { turnID } = await sidecar.turn()
    const path = `/v1/turns/${turnID}/calls`
    const unclosed = await sidecar.json("POST", path, { body: "[".repeat(50_000) })
    expectError(unclosed, 400, "bad_request")
    expect(unclosed.body.error.message).toContain("nested deeper than 128 levels at line 1, column 129")
    const deepInput = `{"sessionID":"s","assistantMessageID":"m","toolCallID":"c","name":"echo","input":${"[".repeat(100_000)}${"]".repeat(100_000)}}`
    expectError(await sidecar.json("POST", path, { body: deepInput }), 400, "bad_request")
    expectError(await sidecar.json("POST", "/v1/turns", { body: `{"agent":${"{\"a\":".repeat(50_000)}` }), 400, "bad_request")
    const limit = callBody({ name: "echo", input: {} })
    const nested = JSON.parse(`${"[".repeat(120)}1${"]".repeat(120)}`)
    const answer = await sidecar.json("POST", path, { body: { ...limit, input: { text: "deep", nested } } })
    // Served, not refused by depth: the tool's own schema says the extra key is invalid input.
    expect(answer.status).toBe(200)
    expect(answer.body.error.kind).toBe("invalid_input")
  })

  test("a NUL in a call's input is a 400 invalid_input before anything is recorded; elsewhere a bad_request", async () => {
    const sidecar = await inProcess({ "tools/count.ts": COUNT, "a.txt": "alpha\n" })
    const { turnID } = await sidecar.turn()
    const path = `/v1/turns/${turnID}/calls`
    for (const [name, input] of [
      ["grep", { pattern: "al\u0000pha" }],
      ["glob", { pattern: "*.txt\u0000" }],
      ["list", { path: "a\u0000" }],
      ["count", { ["k\u0000"]: 1 }],
    ] as const) {
      const body = callBody({ name, input, toolCallID: `call_nul_${name}` })
      const refused = await sidecar.json("POST", path, { body })
      expectError(refused, 400, "invalid_input")
      expect(refused.body.error.message).toMatch(/ input[.[]/)
      expect(refused.body.error.message).toContain("NUL character")
      // Nothing was recorded: the same call, sent right, runs and settles (never "interrupted").
      expect((await sidecar.json("GET", `/v1/settlements/ses_test/call_nul_${name}`)).status).toBe(404)
    }
    expect(runs(sidecar.box, "count")).toBe(0)
    const fixed = await sidecar.json("POST", path, { body: callBody({ name: "grep", input: { pattern: "alpha" }, toolCallID: "call_nul_grep" }) })
    expect(fixed.body.status).toBe("success")
    const elsewhere = await sidecar.json("POST", path, { body: callBody({ name: "count", input: {}, sessionID: "s\u0000" }) })
    expectError(elsewhere, 400, "bad_request")
    expect(elsewhere.body.error.message).toContain("sessionID holds a NUL character")
    // Half of a character, alike: in the input, invalid_input; elsewhere, the request's mistake.
    const half = await sidecar.json("POST", path, { body: callBody({ name: "count", input: { text: "\udc00" }, toolCallID: "call_half" }) })
    expectError(half, 400, "invalid_input")
    expect(half.body.error.message).toContain("input.text holds half of a character (the UTF-16 surrogate \\udc00 at position 0")
    expect((await sidecar.json("GET", "/v1/settlements/ses_test/call_half")).status).toBe(404)
    const halfElsewhere = await sidecar.json("POST", path, { body: callBody({ name: "count", input: {}, sessionID: "s\ud800" }) })
    expectError(halfElsewhere, 400, "bad_request")
    expect(halfElsewhere.body.error.message).toContain("sessionID holds half of a character")
    // A number JSON cannot carry (1e400 is read as Infinity, written back as null), alike.
    const infinite = await sidecar.json("POST", path, {
      body: JSON.stringify(callBody({ name: "count", input: {}, toolCallID: "call_inf" })).replace('"input":{}', '"input":{"n":[1,-1e400]}'),
    })
    expectError(infinite, 400, "invalid_input")
    expect(infinite.body.error.message).toContain("input.n[1] is a number beyond what JSON's numbers hold (read as -Infinity)")
    expect((await sidecar.json("GET", "/v1/settlements/ses_test/call_inf")).status).toBe(404)
    expect(runs(sidecar.box, "count")).toBe(0)
  })

  // Recorded, such a call could never be named again: its path read "." and ".." as steps
  // (/v1/settlements/s/.. is /v1/settlements/, answered with the list), so it could not be read back or cancelled.
  test("a call id or session id of . or .. is a 400 before anything runs", async () => {
    const sidecar = await inProcess({ "tools/count.ts": COUNT })
    const { turnID } = await sidecar.turn()
    for (const ids of [{ toolCallID: "." }, { toolCallID: ".." }, { sessionID: "." }, { sessionID: ".." }]) {
      const refused = await sidecar.json("POST", `/v1/turns/${turnID}/calls`, { body: callBody({ name: "count", input: {}, ...ids }) })
      expectError(refused, 400, "bad_request")
      expect(refused.body.error.message).toContain("other than \".\" and \"..\" (a URL path reads them as steps)")
    }
    expect(runs(sidecar.box, "count")).toBe(0)
  })

  test("a body over the size limit is a 413 with an error body", async () => {
    const sidecar = await inProcess()
    const big = JSON.stringify({ agent: "x".repeat(Respond.MAX_BODY_BYTES) })
    expectError(await sidecar.json("POST", "/v1/turns", { body: big }), 413, "payload_too_large")
    // Without a length up front (a streamed body), the limit still holds while reading.
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(big))
        controller.close()
      },
    })
    const answer = await sidecar.handler(
      new Request(`http://${HOST}/v1/turns`, {
        method: "POST",
        headers: { host: HOST, authorization: `Bearer ${TOKEN}` },
        body: stream,
      }),
    )
    expect(answer.status).toBe(413)
    expect(((await answer.json()) as any).error.kind).toBe("payload_too_large")
  })

  test("a body declared over the limit is a 413 on every route, before anything reads it, after the Host and token checks", async () => {
    const sidecar = await inProcess()
    const oversized = (headers: Record<string, string>) =>
      sidecar.handler(
        new Request(`http://${HOST}/v1/calls/ses_x/call_x/cancel`, {
          method: "POST",
          headers: { host: HOST, "content-length": String(Respond.MAX_BODY_BYTES + 1), ...headers },
        }),
      )
    const refused = await oversized({ authorization: `Bearer ${TOKEN}` })
    expect(refused.status).toBe(413)
    expect(((await refused.json()) as any).error).toEqual({ kind: "payload_too_large", message: expect.stringContaining("10 MiB") })
    expect((await oversized({})).status).toBe(401)
    expect((await oversized({ host: "evil.example:4321", authorization: `Bearer ${TOKEN}` })).status).toBe(403)
  })

  test("no CORS headers are sent; a preflight (which carries no token) is a 401", async () => {
    const sidecar = await inProcess()
    const preflight = await sidecar.handler(
      new Request(`http://${HOST}/v1/turns`, {
        method: "OPTIONS",
        headers: { host: HOST, origin: "http://evil.example", "access-control-request-method": "POST" },
      }),
    )
    expect(preflight.status).toBe(401)
    const authorized = await sidecar.fetch("OPTIONS", "/v1/turns", {
      headers: { origin: "http://evil.example", "access-control-request-method": "POST" },
    })
    expect(authorized.status).toBe(405)
    const health = await sidecar.fetch("GET", "/v1/health", { headers: { origin: "http://evil.example" } })
    for (const response of [preflight, authorized, health]) {
      for (const name of response.headers.keys()) expect(name.startsWith("access-control-")).toBe(false)
    }
  })
})
