// What `core serve` tells its operator and its hosts about the calls it settled, on the default SQLite store:
// one stderr line per settled call, ask and reply (inputs and ask resources at debug only), and
// `GET /v1/settlements` listing the request's Location's recorded calls and never another's.

import { describe, expect, test } from "bun:test"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { run } from "../support/binary"
import { location, sandbox, serve, type Served } from "./support"

/** A bash call the Location's rules ask about, answered `once` by the host as soon as it is asked. */
const askedCall = async (server: Served, turnID: string, toolCallID: string, command: string) => {
  const events = await server.events()
  try {
    const settling = server.settle(turnID, { name: "bash", input: { command, description: "say it" }, sessionID: "ses_ask", toolCallID })
    const asked = await events.until("permission.asked", (data) => data.sessionID === "ses_ask")
    expect((await server.json("POST", `/v1/permissions/${asked.data.id}/reply`, { body: { reply: "once" } })).status).toBe(200)
    return await settling
  } finally {
    await events.close()
  }
}

describe("core serve's per-call log", () => {
  test("info: one line per settled call, ask and reply, without inputs or resources; the ready line is untouched", async () => {
    const box = sandbox({ "core.json": JSON.stringify({ permission: { bash: "ask" } }), "a.txt": "hi\n" })
    const server = await serve(box)
    const { turnID } = await server.turn()
    const ok = await server.settle(turnID, { name: "read", input: { filePath: "a.txt" }, sessionID: "ses_1", toolCallID: "call_ok" })
    expect(ok.body.status).toBe("success")
    const unknown = await server.settle(turnID, { name: "nope", input: { secret: "TOPSECRET" }, sessionID: "ses_1", toolCallID: "call\nforged" })
    expect(unknown.body.error.kind).toBe("unknown")
    const asked = await askedCall(server, turnID, "call_ask", "echo HIDDEN_RESOURCE")
    expect(asked.body.status).toBe("success")
    // A replay is told too, as such.
    await server.settle(turnID, { name: "read", input: { filePath: "a.txt" }, sessionID: "ses_1", toolCallID: "call_ok" })
    await server.stderrUntil((stderr) => (stderr.match(/^core: call /gm) ?? []).length >= 4, "four call lines")

    const lines = server.stderr().split("\n").filter((line) => /^core: (call|ask|reply) /.test(line))
    const directory = location(box)
    expect(lines[0]).toMatch(
      new RegExp(`^core: call tool=read call=call_ok session=ses_1 agent=build status=success duration_ms=\\d+ location=${directory}$`),
    )
    // Ids from a client are quoted, so a newline in one cannot forge a line.
    expect(lines[1]).toMatch(/^core: call tool=nope call="call\\nforged" session=ses_1 agent=build status=error error=unknown duration_ms=\d+ location=/)
    expect(lines).toContainEqual(expect.stringMatching(/^core: ask id=\S+ call=call_ask session=ses_ask action=bash location=\S+$/))
    expect(lines).toContainEqual(expect.stringMatching(/^core: reply id=\S+ session=ses_ask reply=once location=\S+$/))
    expect(lines).toContainEqual(expect.stringMatching(/^core: call tool=bash call=call_ask session=ses_ask agent=build status=success /))
    expect(lines).toContainEqual(expect.stringMatching(/^core: call tool=read call=call_ok .* replayed=true /))
    expect(server.stderr()).not.toContain("TOPSECRET")
    expect(server.stderr()).not.toContain("HIDDEN_RESOURCE")

    server.child.kill("SIGTERM")
    const { code, stdout } = await server.exited()
    expect(code).toBe(0)
    expect(stdout.split("\n").filter((line) => line !== "")).toEqual([JSON.stringify({ url: server.url, token: server.token })])
  })

  // The settlement kept a long name bounded, but the log line and the call's events carried it whole: one call named
  // with 5 MB wrote 5 MB to the operator's log and to every event listener.
  test("a tool name longer than any tool's is shown as the settlement keeps it: in the log line and the events", async () => {
    const server = await serve(sandbox())
    const { turnID } = await server.turn()
    const events = await server.events()
    try {
      const name = "z".repeat(1_000_000)
      const settled = await server.settle(turnID, { name, input: {}, sessionID: "ses_long", toolCallID: "call_long" })
      const kept = settled.body.tool as string
      expect(kept).toMatch(/^z{192}…\(1000000 characters, sha256 [0-9a-f]{64}\)$/)
      expect((await events.until("call.started", (data) => data.toolCallID === "call_long")).data.tool).toBe(kept)
      await server.stderrUntil((stderr) => stderr.includes("call=call_long"), "the call line")
      const line = server.stderr().split("\n").find((text) => text.includes("call=call_long"))!
      expect(line).toContain(`tool=${JSON.stringify(kept)}`)
      expect(server.stderr().length).toBeLessThan(5_000)
    } finally {
      await events.close()
    }
    server.child.kill("SIGTERM")
    await server.exited()
  })

  test("debug adds each call's input and each ask's resources; warn leaves the calls out", async () => {
    const box = sandbox({ "core.json": JSON.stringify({ permission: { bash: "ask" } }) })
    const debug = await serve(box, ["--log-level", "debug"])
    const { turnID } = await debug.turn()
    await debug.settle(turnID, { name: "nope", input: { visible: "AT_DEBUG" }, toolCallID: "call_1" })
    await askedCall(debug, turnID, "call_2", "echo SHOWN_RESOURCE")
    await debug.stderrUntil((stderr) => stderr.includes("core: call tool=bash"), "the bash call line")
    expect(debug.stderr()).toMatch(/^core: call tool=nope .* input="\{\\"visible\\":\\"AT_DEBUG\\"\}"$/m)
    // Replayed, the line names no input: what the request sent is not what the recorded call ran.
    await debug.settle(turnID, { name: "nope", input: { visible: "NOT_RUN" }, toolCallID: "call_1" })
    await debug.stderrUntil((stderr) => stderr.includes("replayed=true"), "the replayed call line")
    expect(debug.stderr()).not.toContain("NOT_RUN")
    expect(debug.stderr()).toMatch(/^core: ask .* resources=.*SHOWN_RESOURCE/m)
    debug.child.kill("SIGTERM")
    await debug.exited()

    const quiet = await serve(box, ["--log-level", "warn"])
    const turn = await quiet.turn()
    await quiet.settle(turn.turnID, { name: "nope", input: {}, toolCallID: "call_3" })
    quiet.child.kill("SIGTERM")
    const { stderr } = await quiet.exited()
    expect(stderr).not.toContain("core: call ")
  })

  // An operational failure is written at error level with the call's ids and the failure's stack: neither may forge
  // a line of core's own, nor drive the operator's terminal, whatever the client put in the ids.
  test("an operational failure's lines quote the call's ids and indent its stack: nothing forges a line or drives a terminal", async () => {
    const box = sandbox({
      "tools/die.ts": `import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"
export default Tool.make({ description: "dies", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.die(new Error("broke\\ncore: call tool=read call=forged2 status=success")) })
`,
    })
    const server = await serve(box, ["--log-level", "error"])
    const { turnID } = await server.turn()
    const forged = "d2)\ncore: call tool=bash call=forged session=x agent=build status=success duration_ms=1 location=/etc\u001b]0;owned\u0007\u009b31m\u2028\n("
    const died = await server.settle(turnID, { name: "die", input: {}, sessionID: "ses_d", toolCallID: forged })
    expect(died.status).toBe(500)
    await server.stderrUntil((stderr) => stderr.includes("core: operational failure: "), "the operational failure's line")
    const stderr = server.stderr()
    expect(stderr).toContain("core: operational failure settling die (")
    // The one call line is the call's own, its ids quoted on it.
    const calls = stderr.split("\n").filter((line) => line.startsWith("core: call "))
    expect(calls).toHaveLength(1)
    expect(calls[0]).toStartWith(String.raw`core: call tool=die call="d2)\ncore: call tool=bash call=forged`)
    expect(stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/)
    // The tool's own message is in the stack, on an indented line of its own.
    expect(stderr).toMatch(/\n {2,}core: call tool=read call=forged2 status=success/)
  })

  // A tool file's name may be the model's (a folder not yet served), and its load error the file's own words: a
  // warning must not drive the operator's terminal nor forge a line of core's own.
  test("a load warning escapes the file's name and message: nothing forges a line or drives a terminal", async () => {
    const box = sandbox({
      "tools/x\u001b[2J\ncore: call tool=read call=c9 status=success.ts": "export default 1\n",
      "tools/boom.ts": 'throw new Error("boom\\u001b]0;owned\\u0007\\ncore: call tool=read call=c8 status=success")\n',
    })
    const server = await serve(box)
    await server.turn()
    await server.stderrUntil((stderr) => (stderr.match(/^core: warning: /gm) ?? []).length >= 2, "two warnings")
    const stderr = server.stderr()
    expect(stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/)
    expect(stderr.split("\n").filter((line) => line.startsWith("core: call "))).toEqual([])
    expect(stderr).toContain("x\\u001b[2J\n  core: call tool=read call=c9 status=success.ts")
    expect(stderr).toContain("boom\\u001b]0;owned\\u0007\n  core: call tool=read call=c8 status=success")
  })

  test("an unknown --log-level is a usage error", async () => {
    const box = sandbox()
    const result = await run(["serve", "--location", box.location, "--log-level", "loud"], { env: box.env })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain("--log-level must be one of error, warn, info, debug")
  })
})

describe("GET /v1/settlements", () => {
  test("lists the request's Location's recorded calls with their details, by session and time, never another's", async () => {
    const box = sandbox({ "a.txt": "hi\n" })
    const other = join(box.location, "other")
    mkdirSync(other)
    const server = await serve(box, ["--allow-root", box.location])
    const { turnID } = await server.turn()
    await server.settle(turnID, { name: "read", input: { filePath: "a.txt" }, sessionID: "ses_1", toolCallID: "call_1", assistantMessageID: "msg_1" })
    await server.settle(turnID, { name: "nope", input: { n: 1 }, sessionID: "ses_2", toolCallID: "call_2" })
    const elsewhere = { "x-core-location": other }
    const otherTurn = await server.turn(undefined, elsewhere)
    await server.settle(otherTurn.turnID, { name: "list", input: {}, sessionID: "ses_1", toolCallID: "call_other" }, elsewhere)

    const all = await server.json("GET", "/v1/settlements")
    expect(all.status).toBe(200)
    expect(all.body.map((entry: any) => entry.toolCallID)).toEqual(["call_1", "call_2"])
    expect(all.body[0]).toMatchObject({
      sessionID: "ses_1",
      tool: "read",
      status: "success",
      agent: "build",
      location: location(box),
      messageID: "msg_1",
      input: { filePath: "a.txt" },
      inputTruncated: false,
      startedAt: expect.any(String),
      settledAt: expect.any(String),
      durationMs: expect.any(Number),
    })
    const session = await server.json("GET", "/v1/settlements?sessionID=ses_1")
    expect(session.body.map((entry: any) => entry.toolCallID)).toEqual(["call_1"])
    expect((await server.json("GET", "/v1/settlements?since=1h&limit=1")).body.map((entry: any) => entry.toolCallID)).toEqual(["call_2"])
    const theirs = await server.json("GET", "/v1/settlements?sessionID=ses_1", { headers: elsewhere })
    expect(theirs.body.map((entry: any) => entry.toolCallID)).toEqual(["call_other"])
    // A Location whose core.json broke cannot be served, but what was recorded of it can still be looked into,
    // as core log can: whether or not this serve had loaded it before.
    const broken = join(box.location, "broken")
    mkdirSync(broken)
    writeFileSync(join(broken, "core.json"), '{ "permission":')
    const unloaded = await server.json("GET", "/v1/settlements", { headers: { "x-core-location": broken } })
    expect({ status: unloaded.status, body: unloaded.body }).toEqual({ status: 200, body: [] })
    writeFileSync(join(other, "core.json"), '{ "permission":')
    const recorded = await server.json("GET", "/v1/settlements/ses_1/call_other", { headers: elsewhere })
    expect(recorded.status).toBe(200)
    expect((await server.json("GET", "/v1/settlements", { headers: { "x-core-location": "/etc" } })).status).toBe(403)

    for (const query of ["since=yesterday", "limit=0", "limit=abc", "sessionID="]) {
      const refused = await server.json("GET", `/v1/settlements?${query}`)
      expect(refused.status).toBe(400)
      expect(refused.body.error.kind).toBe("bad_request")
    }
    const unauthorized = await fetch(`${server.url}/v1/settlements`)
    expect(unauthorized.status).toBe(401)
    server.child.kill("SIGTERM")
    await server.exited()
  })
})
