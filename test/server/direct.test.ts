// A call's JSON settlement answered without the router (src/server/direct.ts) against the same request answered by
// the router, on one real sidecar: the same status, headers and body for every outcome and every refusal, and the
// requests the direct path must leave to the router do reach it.

import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Api } from "../../src/server/api"
import { Direct } from "../../src/server/direct"
import { Respond } from "../../src/server/respond"
import { Router } from "../../src/server/router"
import { Security } from "../../src/server/security"
import { echoTool } from "../support/tools"
import { callBody, HOST, IMPORTS, inProcess, PORT, runs, TOKEN } from "./support"

const BIG = `${IMPORTS}
export default Tool.make({
  description: "Print many lines",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed(Array.from({ length: 50 }, (_, i) => "line " + i).join("\\n")),
})
`

/** The sidecar answering through both paths, and how many requests took the direct one. */
const both = async (files: Record<string, string> = {}) => {
  const sidecar = await inProcess({ "tools/echo.ts": echoTool({ record: "echo" }), "tools/big.ts": BIG, ...files })
  const held = { count: 0, released: 0 }
  const counting = {
    ...sidecar.sidecar,
    locations: {
      ...sidecar.sidecar.locations,
      hold: (directory: string) => {
        held.count++
        const hold = sidecar.sidecar.locations.hold(directory)
        if (hold === undefined) return undefined
        let released = false
        return {
          served: hold.served,
          release: () => {
            if (!released) held.released++
            released = true
            hold.release()
          },
        }
      },
    },
  }
  const make = (direct: boolean) =>
    Router.make({
      sidecar: counting,
      version: "test",
      checkToken: Security.tokenChecker(TOKEN),
      checkHost: Security.hostChecker("127.0.0.1", PORT),
      roots: [realpathSync(sidecar.box.location)],
      log: (line) => sidecar.log.push(line),
      direct,
    })
  const direct = make(true)
  const routed = make(false)
  const { turnID } = await sidecar.turn()
  return { sidecar, direct, routed, turnID, held }
}

interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

const read = async (response: Response): Promise<Answer> => ({
  status: response.status,
  headers: Object.fromEntries([...response.headers.entries()].sort()),
  body: await response.text(),
})

/** The same request through both handlers: `make` builds it, given a suffix that keeps call ids apart. */
const compare = async (
  handlers: { direct: Router.WebHandler; routed: Router.WebHandler },
  make: (suffix: string) => Request,
) => {
  const direct = await read(await handlers.direct.handler(make("dq7")))
  const routed = await read(await handlers.routed.handler(make("rq7")))
  return { direct, routed }
}

const post = (path: string, body: string | undefined, headers: Record<string, string> = {}) =>
  new Request(`http://${HOST}${path}`, {
    method: "POST",
    headers: { host: HOST, authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body }),
  })

/** The ids a call's answer repeats, made alike in both answers. */
const alike = (answer: Answer, suffix: string): Answer => ({ ...answer, body: answer.body.replaceAll(`_${suffix}`, "_X") })

describe("a call answered without the router", () => {
  test("answers success, a replay and every refusal as the router does, byte for byte", async () => {
    const { direct, routed, turnID, held } = await both()
    const calls = `/v1/turns/${turnID}/calls`
    const cases: Array<[string, (suffix: string) => Request]> = [
      ["success", (s) => post(calls, JSON.stringify(callBody({ name: "echo", input: { text: "hi" }, toolCallID: `call_${s}` })))],
      ["unknown tool", (s) => post(calls, JSON.stringify(callBody({ name: "nope", input: {}, toolCallID: `call_u_${s}` })))],
      ["invalid input", (s) => post(calls, JSON.stringify(callBody({ name: "echo", input: { text: 1 }, toolCallID: `call_i_${s}` })))],
      ["not JSON", () => post(calls, "{")],
      ["not an object", () => post(calls, "[1]")],
      ["missing fields", () => post(calls, JSON.stringify({ name: "echo" }))],
      ["an extra field", (s) => post(calls, JSON.stringify({ ...callBody({ name: "echo", input: {}, toolCallID: `c_${s}` }), extra: 1 }))],
      ["NUL in input", (s) => post(calls, JSON.stringify(callBody({ name: "echo", input: { text: "a\u0000" }, toolCallID: `n_${s}` })))],
      ["unknown turn", () => post("/v1/turns/turn_nope/calls", JSON.stringify(callBody({ name: "echo", input: {} })))],
      ["empty body", () => post(calls, "")],
      ["a number JSON cannot hold", (s) => post(calls, `{"sessionID":"s","assistantMessageID":"m","toolCallID":"inf_${s}","name":"echo","input":{"text":1e400}}`)],
      ["an empty id", (s) => post(calls, JSON.stringify(callBody({ name: "echo", input: {}, toolCallID: "", sessionID: `e_${s}` })))],
      ["a lone surrogate in an id", (s) => post(calls, JSON.stringify(callBody({ name: "echo", input: {}, toolCallID: `ls_${s}\ud800` })))],
    ]
    for (const [name, make] of cases) {
      const answers = await compare({ direct, routed }, make)
      expect({ name, ...alike(answers.direct, "dq7") }).toEqual({ name, ...alike(answers.routed, "rq7") })
    }
    // Each was answered directly: a Location was held for each.
    expect(held.count).toBe(cases.length)

    // A replay of a recorded call: marked as such either way.
    const again = (s: string) => post(calls, JSON.stringify(callBody({ name: "echo", input: { text: "hi" }, toolCallID: `call_${s}` })))
    const replays = await compare({ direct, routed }, again)
    expect(replays.direct.headers["x-core-replayed"]).toBe("true")
    expect(alike(replays.direct, "dq7")).toEqual(alike(replays.routed, "rq7"))
  })

  // bun:sqlite keeps strings as UTF-8, a lone surrogate as U+FFFD: "p\ud800" and "p\udfff" were one record, and a call
  // under the second answered the first's settlement without running. Such ids are refused; "p\ufffd" is its own.
  test("an id with a lone surrogate is refused with 400 on both paths, and never answers another call's record", async () => {
    const { direct, routed, turnID } = await both()
    const calls = `/v1/turns/${turnID}/calls`
    const call = (toolCallID: string, text: string) => post(calls, JSON.stringify(callBody({ name: "echo", input: { text }, toolCallID })))
    for (const handler of [direct, routed]) {
      for (const id of ["p\ud800", "p\udc00x", "\udfff"]) {
        const answer = await handler.handler(call(id, "lone"))
        expect([id, answer.status]).toEqual([id, 400])
        // Refused as half of a character anywhere in a body is, naming the id.
        expect(await answer.text()).toContain("toolCallID holds half of a character")
      }
    }
    const replacement = await read(await direct.handler(call("p\ufffd", "whole")))
    expect(replacement.status).toBe(200)
    expect(replacement.headers["x-core-replayed"]).toBeUndefined()
    expect(JSON.parse(replacement.body)).toMatchObject({ callID: "p\ufffd", structured: "whole" })
  })

  // Postgres keeps no NUL in text, and the journal kept "s\0x"/"y" and "s"/"x\0y" as one call: such ids are refused
  // (as a NUL anywhere in a call's body is).
  // A call under an id longer than the routes take ran, but its cancel and its settlement's route answered "No route".
  test("an id longer than a route's path takes is refused with 400 on both paths; the longest that fits is named by its route", async () => {
    const { direct, routed, turnID } = await both()
    const calls = `/v1/turns/${turnID}/calls`
    // "é" is 6 characters escaped (%C3%A9): 682 of them are 4,092, 683 are 4,098.
    for (const handler of [direct, routed]) {
      for (const ids of [{ sessionID: "é".repeat(683), toolCallID: "y" }, { sessionID: "s", toolCallID: "x".repeat(4097) }]) {
        const answer = await handler.handler(post(calls, JSON.stringify({ ...callBody({ name: "echo", input: { text: "long" } }), ...ids })))
        expect(answer.status).toBe(400)
        expect(await answer.text()).toContain("characters escaped for a URL path")
      }
    }
    const fits = "é".repeat(682)
    const settled = await direct.handler(post(calls, JSON.stringify({ ...callBody({ name: "echo", input: { text: "fits" } }), sessionID: fits, toolCallID: "z" })))
    expect(settled.status).toBe(200)
    const looked = await routed.handler(
      new Request(`http://${HOST}/v1/settlements/${encodeURIComponent(fits)}/z`, { headers: { host: HOST, authorization: `Bearer ${TOKEN}` } }),
    )
    expect(looked.status).toBe(200)
    expect(JSON.parse(await looked.text())).toMatchObject({ structured: "fits" })
  })

  test("an id holding a NUL is refused with 400 on both paths", async () => {
    const { direct, routed, turnID } = await both()
    const calls = `/v1/turns/${turnID}/calls`
    for (const handler of [direct, routed]) {
      for (const ids of [{ sessionID: "s\u0000x", toolCallID: "y" }, { sessionID: "s", toolCallID: "x\u0000y" }]) {
        const answer = await handler.handler(post(calls, JSON.stringify({ ...callBody({ name: "echo", input: { text: "nul" } }), ...ids })))
        expect([ids, answer.status]).toEqual([ids, 400])
        expect(await answer.text()).toContain("holds a NUL character")
      }
    }
  })

  // Read as text, bytes that are not UTF-8 were U+FFFD each: "id\xe9" and "id\xe8" were one call, and the second
  // answered the first's settlement (another command's output) without running. Such a body is refused, whether its
  // length is declared or it comes in chunks.
  test("a body that is not UTF-8 is refused with 400 on both paths, declared or chunked, and runs nothing", async () => {
    const { sidecar, direct, routed, turnID } = await both()
    const calls = `/v1/turns/${turnID}/calls`
    const bytes = (id: number) =>
      Buffer.concat([
        Buffer.from(`{"sessionID":"s","assistantMessageID":"m","toolCallID":"id`),
        Buffer.from([id]),
        Buffer.from(`","name":"echo","input":{"text":"bytes"}}`),
      ])
    const request = (body: Uint8Array, chunked: boolean) =>
      new Request(`http://${HOST}${calls}`, {
        method: "POST",
        headers: { host: HOST, authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: chunked ? new Blob([body]).stream() : body,
      })
    for (const handler of [direct, routed]) {
      for (const chunked of [false, true]) {
        for (const id of [0xe9, 0xe8, 0xff]) {
          const answer = await handler.handler(request(bytes(id), chunked))
          expect([chunked, id, answer.status]).toEqual([chunked, id, 400])
          expect(await answer.text()).toContain("not valid UTF-8")
        }
      }
    }
    expect(runs(sidecar.box, "echo")).toBe(0)
    // The same call in UTF-8 runs.
    const whole = await direct.handler(request(Buffer.from(`{"sessionID":"s","assistantMessageID":"m","toolCallID":"idé","name":"echo","input":{"text":"bytes"}}`), false))
    expect(whole.status).toBe(200)
    expect(runs(sidecar.box, "echo")).toBe(1)
  })

  test("an operational failure is the router's 500, logged", async () => {
    const { sidecar, direct, routed, turnID } = await both({ "core.json": '{ "output": { "maxLines": 10 } }' })
    // The outputs directory is a file: keeping the full output fails.
    writeFileSync(join(sidecar.box.data, "outputs"), "")
    const calls = `/v1/turns/${turnID}/calls`
    const answers = await compare({ direct, routed }, (s) =>
      post(calls, JSON.stringify(callBody({ name: "big", input: {}, toolCallID: `big_${s}` }))),
    )
    expect(answers.direct.status).toBe(500)
    expect(JSON.parse(answers.direct.body).error.kind).toBe("operational")
    expect(answers.direct.headers).toEqual(answers.routed.headers)
    expect(sidecar.log.filter((line) => line.startsWith("core: operational failure")).length).toBeGreaterThanOrEqual(2)
  })

  test("refusals and other Locations are left to the router, answered the same", async () => {
    const { sidecar, direct, routed, turnID, held } = await both()
    const calls = `/v1/turns/${turnID}/calls`
    const body = (s: string) => JSON.stringify(callBody({ name: "echo", input: { text: "x" }, toolCallID: `left_${s}` }))
    const cases: Array<[string, (suffix: string) => Request]> = [
      ["no token", (s) => post(calls, body(s), { authorization: "" })],
      ["wrong token", (s) => post(calls, body(s), { authorization: "Bearer wrong" })],
      ["foreign Host", (s) => post(calls, body(s), { host: "evil.example:4321" })],
      ["declared too large", () => new Request(`http://${HOST}${calls}`, {
        method: "POST",
        headers: { host: HOST, authorization: `Bearer ${TOKEN}`, "content-length": String(11 * 1024 * 1024) },
        body: "{}",
      })],
      ["a Location that is not allowed", (s) => post(calls, body(s), { "x-core-location": "/" })],
      ["an escaped turn id", (s) => post(`/v1/turns/${turnID.slice(0, 2)}%5F${turnID.slice(3)}/calls`, body(s))],
      ["a GET", () => new Request(`http://${HOST}${calls}`, { headers: { host: HOST, authorization: `Bearer ${TOKEN}` } })],
    ]
    for (const [name, make] of cases) {
      const answers = await compare({ direct, routed }, make)
      expect({ name, ...alike(answers.direct, "dq7") }).toEqual({ name, ...alike(answers.routed, "rq7") })
    }
    expect(held.count).toBe(0)
    expect(sidecar.log.filter((line) => line.includes("operational"))).toEqual([])
  })

  test("a call naming its Location (the serve's own, another built one, through a symlink) is answered directly as the router answers it; one not built yet is the router's", async () => {
    const { sidecar, direct, routed, turnID, held } = await both()
    const root = realpathSync(sidecar.box.location)
    const other = join(root, "other")
    mkdirSync(join(other, "tools"), { recursive: true })
    writeFileSync(join(other, "tools", "shout.ts"), echoTool({ record: "shout" }))
    const linked = join(root, "linked")
    symlinkSync(other, linked)
    const named = (location: string) => ({ "x-core-location": location })
    // Not built yet: left to the router, which builds it (its first turn), on either path.
    const turn = await routed.handler(post("/v1/turns", "{}", named(other)))
    expect(turn.status).toBe(200)
    const otherTurn = ((await turn.json()) as { turnID: string }).turnID
    const fresh = join(root, "fresh")
    mkdirSync(fresh)
    const unbuilt = await direct.handler(post("/v1/turns/turn_nope/calls", JSON.stringify(callBody({ name: "shout", input: {} })), named(fresh)))
    expect(unbuilt.status).toBe(404)
    expect(((await unbuilt.json()) as Api.ErrorBody).error.message).toContain(`in ${fresh}:`)
    held.count = 0
    held.released = 0
    const body = (s: string, name = "shout") => JSON.stringify(callBody({ name, input: { text: "x" }, toolCallID: `named_${s}` }))
    const cases: Array<[string, (suffix: string) => Request]> = [
      ["another Location", (s) => post(`/v1/turns/${otherTurn}/calls`, body(s), named(other))],
      ["the same, a replay", (s) => post(`/v1/turns/${otherTurn}/calls`, body(s), named(other))],
      ["through a symlink", (s) => post(`/v1/turns/${otherTurn}/calls`, body(`l_${s}`), named(linked))],
      ["as an event stream", (s) => post(`/v1/turns/${otherTurn}/calls`, body(`e_${s}`), { ...named(other), accept: "text/event-stream" })],
      ["the serve's own, named", (s) => post(`/v1/turns/${turnID}/calls`, body(`o_${s}`, "echo"), named(sidecar.box.location))],
      ["the serve's turn in another Location", (s) => post(`/v1/turns/${turnID}/calls`, body(`t_${s}`, "echo"), named(other))],
      ["a tool of the serve's own Location", (s) => post(`/v1/turns/${otherTurn}/calls`, body(`w_${s}`, "echo"), named(other))],
    ]
    const answers: Record<string, Answer> = {}
    for (const [name, make] of cases) {
      const both = await compare({ direct, routed }, make)
      expect({ name, ...alike(both.direct, "dq7") }).toEqual({ name, ...alike(both.routed, "rq7") })
      answers[name] = both.direct
    }
    expect(JSON.parse(answers["another Location"]!.body).status).toBe("success")
    expect(answers["the same, a replay"]!.headers["x-core-replayed"]).toBe("true")
    expect(answers["through a symlink"]!.status).toBe(200)
    expect(answers["as an event stream"]!.body).toStartWith("event: settlement\ndata: ")
    expect(JSON.parse(answers["the serve's own, named"]!.body).status).toBe("success")
    expect(answers["the serve's turn in another Location"]!.status).toBe(404)
    expect(JSON.parse(answers["a tool of the serve's own Location"]!.body).error.kind).toBe("unknown")
    // Every one of them was taken directly, in the Location it named (and by the router for its event stream, as it
    // holds one), and let go once answered.
    expect(held.count).toBe(cases.length + 1)
    expect(held.released).toBe(held.count)
    expect(sidecar.log.filter((line) => line.includes("operational"))).toEqual([])
  })

  test("an event stream is answered as the router answers it, a replay too, and lets go of its Location once over", async () => {
    const { sidecar, direct, routed, turnID, held } = await both()
    const calls = `/v1/turns/${turnID}/calls`
    const sse = { accept: "text/event-stream" }
    const body = (s: string) => JSON.stringify(callBody({ name: "echo", input: { text: "x" }, toolCallID: `sse_${s}` }))
    const fresh = await compare({ direct, routed }, (s) => post(calls, body(s), sse))
    expect(fresh.direct.headers["content-type"]).toBe("text/event-stream")
    expect(fresh.direct.headers["x-core-replayed"]).toBeUndefined()
    // Settled at once: the events are the stream's first chunk (a call with nothing to say yet opens with a comment).
    expect(fresh.direct.body).toStartWith("event: settlement\ndata: ")
    expect(alike(fresh.direct, "dq7")).toEqual(alike(fresh.routed, "rq7"))
    const replay = await compare({ direct, routed }, (s) => post(calls, body(s), sse))
    expect(replay.direct.headers["x-core-replayed"]).toBe("true")
    expect(alike(replay.direct, "dq7")).toEqual(alike(replay.routed, "rq7"))
    // `/calls/stream` (as core exec forwards a call), whatever the Accept header says.
    const streamed = await compare({ direct, routed }, (s) => post(`${calls}/stream`, body(`st_${s}`)))
    expect(streamed.direct.headers["content-type"]).toBe("text/event-stream")
    expect(streamed.direct.body).toStartWith("event: settlement\ndata: ")
    expect(alike(streamed.direct, "dq7")).toEqual(alike(streamed.routed, "rq7"))
    // Refusals of a stream's call are JSON, as the router answers them.
    const unknownTurn = await compare({ direct, routed }, (s) => post("/v1/turns/turn_nope/calls", body(s), sse))
    expect(unknownTurn.direct.status).toBe(404)
    expect(unknownTurn.direct).toEqual(unknownTurn.routed)
    const notJson = await compare({ direct, routed }, () => post(calls, "{", sse))
    expect(notJson.direct.status).toBe(400)
    expect(notJson.direct).toEqual(notJson.routed)
    // The direct path held the Location for each, the router for each stream; each was let go once it was over.
    expect(held.count).toBe(5 + 3)
    expect(held.released).toBe(held.count)
    expect(sidecar.log.filter((line) => line.includes("operational"))).toEqual([])
  })

  test("a body without a declared length is read counting: settled within the limit, 413 past it", async () => {
    const { direct, routed, turnID, held } = await both()
    const calls = `/v1/turns/${turnID}/calls`
    /** A chunked body of `text`, in pieces of 1 MiB. */
    const chunked = (text: string) => {
      const bytes = new TextEncoder().encode(text)
      const stream = new ReadableStream({
        start(controller) {
          for (let at = 0; at < bytes.length; at += 1024 * 1024) controller.enqueue(bytes.subarray(at, at + 1024 * 1024))
          controller.close()
        },
      })
      return new Request(`http://${HOST}${calls}`, { method: "POST", headers: { host: HOST, authorization: `Bearer ${TOKEN}` }, body: stream })
    }
    const small = await compare({ direct, routed }, (s) => chunked(JSON.stringify(callBody({ name: "echo", input: { text: "c" }, toolCallID: `ch_${s}` }))))
    expect(JSON.parse(small.direct.body).status).toBe("success")
    expect(alike(small.direct, "dq7")).toEqual(alike(small.routed, "rq7"))
    const huge = JSON.stringify(callBody({ name: "echo", input: { text: "x".repeat(11 * 1024 * 1024) } }))
    const large = await compare({ direct, routed }, () => chunked(huge))
    expect(large.direct.status).toBe(413)
    expect(large.direct).toEqual(large.routed)
    expect(held.count).toBe(2)
  })

  test("a call's body read without the schema is what the schema decodes; anything else is left to the schema", () => {
    const call = { sessionID: "s", assistantMessageID: "m", toolCallID: "c", name: "echo" }
    const bodies = [
      JSON.stringify({ ...call, input: { text: "hi", nested: [1, -0, null, true, { deep: [2.5] }] } }),
      JSON.stringify({ input: "first", ...call }),
      `{"sessionID":"s","assistantMessageID":"m","toolCallID":"c","name":"echo","input":[1,{"a":-1e400}]}`,
      `{"sessionID":"s","assistantMessageID":"m","toolCallID":"c","name":"echo","input":{"__proto__":{"x":1}}}`,
      `{"sessionID":"s","assistantMessageID":"m","toolCallID":"c","name":"echo","input":{},"__proto__":{}}`,
      JSON.stringify({ ...call, input: {}, extra: 1 }),
      JSON.stringify({ ...call }),
      JSON.stringify({ ...call, sessionID: "", input: {} }),
      JSON.stringify({ ...call, toolCallID: 7, input: {} }),
      JSON.stringify({ ...call, name: null, input: {} }),
      JSON.stringify({ ...call, input: null }),
    ]
    for (const body of bodies) {
      expect({ body, ...Respond.decode(body, Api.CallRequest, { plain: Direct.plainCall }) }).toEqual({
        body,
        ...Respond.decode(body, Api.CallRequest),
      })
    }
    // The well-formed ones were read without the schema; the others were not.
    expect(bodies.map((body) => Direct.plainCall(JSON.parse(body)) !== undefined)).toEqual([
      true, true, false, true, false, false, false, false, false, false, true,
    ])
  })

  test("a turn is answered as the router answers it, every refusal too, in the Location it names", async () => {
    const { sidecar, direct, routed, held } = await both()
    const turns = (body: string | undefined, headers: Record<string, string> = {}) => () => post("/v1/turns", body, headers)
    const cases: Array<[string, () => Request]> = [
      ["no body", turns(undefined)],
      ["an empty body", turns("")],
      ["{}", turns("{}")],
      ["an agent", turns(JSON.stringify({ agent: "plan" }))],
      ["a provider", turns(JSON.stringify({ provider: "anthropic" }))],
      ["an unknown agent", turns(JSON.stringify({ agent: "nobody" }))],
      ["an unknown provider", turns(JSON.stringify({ provider: "nope" }))],
      ["an empty agent", turns(JSON.stringify({ agent: "" }))],
      ["an extra field", turns(JSON.stringify({ agnet: "plan" }))],
      ["not JSON", turns("{")],
      ["not an object", turns("[]")],
      ["a NUL", turns(JSON.stringify({ agent: "a\u0000" }))],
      ["its own Location, named", turns("{}", { "x-core-location": sidecar.box.location })],
    ]
    // Each turn has an id of its own: the rest of the answer is the same.
    const sameBut = (answer: Answer) => ({ ...answer, body: answer.body.replace(/"turnID":"[^"]+"/, '"turnID":"T"') })
    const statuses: Record<string, number> = {}
    for (const [name, make] of cases) {
      const answers = await compare({ direct, routed }, make)
      expect({ name, ...sameBut(answers.direct) }).toEqual({ name, ...sameBut(answers.routed) })
      statuses[name] = answers.direct.status
    }
    expect(statuses).toEqual({
      "no body": 200,
      "an empty body": 200,
      "{}": 200,
      "an agent": 200,
      "a provider": 200,
      "an unknown agent": 400,
      "an unknown provider": 400,
      "an empty agent": 400,
      "an extra field": 400,
      "not JSON": 400,
      "not an object": 400,
      "a NUL": 400,
      "its own Location, named": 200,
    })
    // Every one was answered directly, and the Location let go once it was.
    expect(held.count).toBe(cases.length)
    expect(held.released).toBe(held.count)
    // A turn made directly is the Location's: a call through it settles.
    const made = (await (await direct.handler(post("/v1/turns", "{}"))).json()) as { turnID: string }
    const settled = await direct.handler(post(`/v1/turns/${made.turnID}/calls`, JSON.stringify(callBody({ name: "echo", input: { text: "t" }, toolCallID: "via_direct_turn" }))))
    expect(((await settled.json()) as { status: string }).status).toBe("success")
    expect(sidecar.log.filter((line) => line.includes("operational"))).toEqual([])
  })

  test("recognizes only the plain calls path, /v1/turns and /mcp", () => {
    expect(Direct.isTurns("http://h:1/v1/turns")).toBe(true)
    expect(Direct.isTurns("http://h:1/v1/turns/")).toBe(false)
    expect(Direct.isTurns("http://h:1/v1/turns?agent=plan")).toBe(false)
    expect(Direct.isTurns("http://h:1/v1/turnsx")).toBe(false)
    expect(Direct.isTurns("http://h:1/x/v1/turns")).toBe(false)
    expect(Direct.turnOf("http://h:1/v1/turns/turn_abc/calls")).toBe("turn_abc")
    expect(Direct.turnOf("http://h:1/v1/turns/turn_abc/calls?x=1")).toBeUndefined()
    expect(Direct.turnOf("http://h:1/v1/turns//calls")).toBeUndefined()
    expect(Direct.turnOf("http://h:1/v1/turns/a/b/calls")).toBeUndefined()
    expect(Direct.turnOf("http://h:1/v1/turns/a%2Fb/calls")).toBeUndefined()
    expect(Direct.turnOf("http://h:1/x/v1/turns/a/calls")).toBeUndefined()
    expect(Direct.turnOf("http://h:1/v1/turns/a/calls/")).toBeUndefined()
    expect(Direct.turnOf(`http://h:1/v1/turns/${"a".repeat(4097)}/calls`)).toBeUndefined()
    expect(Direct.isMcp("http://h:1/mcp")).toBe(true)
    expect(Direct.isMcp("http://h:1/mcp?agent=plan")).toBe(true)
    expect(Direct.isMcp("http://h:1/mcpx")).toBe(false)
    expect(Direct.isMcp("http://h:1/mcp/")).toBe(false)
    expect(Direct.isMcp("http://h:1/v1/mcp")).toBe(false)
  })
})
