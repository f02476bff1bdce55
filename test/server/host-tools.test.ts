// Host tools through the sidecar in process: registering shipped and own definitions (and refusing bad ones),
// a delegated call announced on the Location's events and on the call's own stream, answered, failed, answered
// twice, answered with an output its schema refuses, timing out, cancelled, replaced and removed.

import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { tempDir } from "../support/temp"
import { callBody, EventReader, IMPORTS, inProcess, type InProcess } from "./support"

const QUESTION_INPUT = {
  questions: [
    {
      question: "Which database should the service use?",
      header: "Database",
      options: [{ label: "Postgres (Recommended)", description: "Already in production" }, { label: "SQLite" }],
    },
  ],
}

const LOOKUP = {
  name: "lookup",
  description: "Look a customer up in the host's CRM",
  inputSchema: { type: "object", properties: { email: { type: "string", format: "email" } }, required: ["email"] },
  outputSchema: { type: "object", properties: { plan: { type: "string" } }, required: ["plan"] },
}

/** Starts a call in the background and waits for its `host_call` on the Location's events. */
const delegated = async (sidecar: InProcess, turnID: string, name: string, input: unknown, toolCallID: string) => {
  const events = await sidecar.events()
  const settled = sidecar.settle(turnID, { name, input, toolCallID })
  const announced = await events.until("host_call", (data) => data.toolCallID === toolCallID)
  await events.close()
  return { settled, hostCall: announced.data }
}

describe("registering host tools", () => {
  test("shipped tools are enabled by name and offered in turns with their schemas; the host's own beside them", async () => {
    const sidecar = await inProcess()
    const registered = await sidecar.json("POST", "/v1/host-tools", { body: { enable: ["question", "task"], tools: [LOOKUP] } })
    expect(registered.status).toBe(200)
    expect(registered.body.map((tool: any) => tool.name)).toEqual(["question", "task", "lookup"])
    const { definitions } = await sidecar.turn()
    const byName = new Map(definitions.map((definition) => [definition.name, definition]))
    expect(byName.get("question")?.description).toContain("Ask the user one or more questions")
    expect(byName.get("question")?.inputSchema.required).toEqual(["questions"])
    expect(byName.get("task")?.inputSchema.properties.prompt.type).toBe("string")
    expect(byName.get("lookup")?.outputSchema).toEqual(LOOKUP.outputSchema)
    expect((await sidecar.json("GET", "/v1/host-tools")).body.map((tool: any) => tool.name)).toEqual(["question", "task", "lookup"])
  })

  test("a bad registration is a 400 naming what is wrong, and changes nothing", async () => {
    const sidecar = await inProcess()
    const cases: Array<[unknown, string]> = [
      [{ enable: ["ask_everyone"] }, '"ask_everyone" is not a shipped host tool'],
      [{ tools: [{ ...LOOKUP, name: "1lookup" }] }, '"1lookup" is not a valid tool name'],
      [{ tools: [{ ...LOOKUP, name: "x".repeat(65) }] }, "the limit is 64"],
      [{ tools: [{ ...LOOKUP, inputSchema: { type: "string" } }] }, 'inputSchema must have "type": "object"'],
      [{ tools: [{ ...LOOKUP, inputSchema: { type: "object", properties: { a: { type: "nope" } } } }] }, "lookup: inputSchema is not a usable JSON Schema"],
      [{ tools: [{ ...LOOKUP, outputSchema: { type: "object", required: "plan" } }] }, "lookup: outputSchema is not a usable JSON Schema"],
      [{ tools: [LOOKUP, LOOKUP] }, '"lookup" is given twice'],
      [{ enable: ["question"], tools: [{ ...LOOKUP, name: "question" }] }, '"question" is given twice'],
      [{}, "Nothing to register"],
      [{ tools: [{ ...LOOKUP, timeoutMs: 0 }] }, "timeoutMs"],
      [{ tools: [{ name: "lookup", inputSchema: { type: "object" } }] }, "description"],
    ]
    for (const [body, message] of cases) {
      const answer = await sidecar.json("POST", "/v1/host-tools", { body })
      expect({ body, status: answer.status, kind: answer.body.error.kind }).toEqual({ body, status: 400, kind: "bad_request" })
      expect(answer.body.error.message).toContain(message)
    }
    expect((await sidecar.json("GET", "/v1/host-tools")).body).toEqual([])
  })

  test("a host tool never shadows a tool of the Location: the whole registration is a 409", async () => {
    const sidecar = await inProcess()
    const answer = await sidecar.json("POST", "/v1/host-tools", { body: { tools: [LOOKUP, { ...LOOKUP, name: "bash" }] } })
    expect(answer.status).toBe(409)
    expect(answer.body.error).toEqual({
      kind: "conflict",
      message: '"bash" is already a tool of this Location (built-in, tool file, plugin or MCP server); choose another name',
    })
    expect((await sidecar.json("GET", "/v1/host-tools")).body).toEqual([])
    const { definitions } = await sidecar.turn()
    expect(definitions.filter((definition) => definition.name === "bash")).toHaveLength(1)
    expect(definitions.some((definition) => definition.name === "lookup")).toBe(false)
  })
})

describe("a delegated call", () => {
  test("is announced with its input, listed while it waits, and settles with the host's answer as the model reads it", async () => {
    const sidecar = await inProcess()
    await sidecar.json("POST", "/v1/host-tools", { body: { enable: ["question"] } })
    const { turnID } = await sidecar.turn()
    const { settled, hostCall } = await delegated(sidecar, turnID, "question", QUESTION_INPUT, "call_q")
    expect(hostCall).toMatchObject({ sessionID: "ses_test", toolCallID: "call_q", name: "question", input: QUESTION_INPUT })
    expect(hostCall.id).toMatch(/^hc_/)
    expect(hostCall.deadline).toBeGreaterThan(Date.now())
    expect((await sidecar.json("GET", "/v1/host-calls")).body).toEqual([hostCall])

    const answered = await sidecar.json("POST", `/v1/host-calls/${hostCall.id}/result`, {
      body: { output: { answers: [["Postgres (Recommended)"]] } },
    })
    expect(answered).toMatchObject({ status: 200, body: { id: hostCall.id, status: "answered" } })
    const { body: settlement } = await settled
    expect(settlement).toMatchObject({ tool: "question", status: "success", structured: { answers: [["Postgres (Recommended)"]] } })
    expect(settlement.content).toEqual([
      {
        type: "text",
        text: 'The user answered:\n"Which database should the service use?" = "Postgres (Recommended)"\nGo on with these answers in mind.',
      },
    ])
    expect((await sidecar.json("GET", "/v1/host-calls")).body).toEqual([])

    // A second answer is refused, and an id no call had is unknown.
    const again = await sidecar.json("POST", `/v1/host-calls/${hostCall.id}/result`, { body: { output: { answers: [["SQLite"]] } } })
    expect(again.status).toBe(409)
    expect(again.body.error).toEqual({ kind: "conflict", message: `The delegated call ${hostCall.id} was answered already; this answer is not taken` })
    const unknown = await sidecar.json("POST", "/v1/host-calls/hc_nothing/result", { body: { output: {} } })
    expect(unknown.status).toBe(404)

    // Settling the same call again replays its record: the host is not asked again.
    const replay = await sidecar.settle(turnID, { name: "question", input: QUESTION_INPUT, toolCallID: "call_q" })
    expect(replay.headers.get("x-core-replayed")).toBe("true")
    expect(replay.body).toEqual(settlement)
  })

  test("an output its schema refuses is a 400 and the call goes on waiting; an error answer is the failure the model reads", async () => {
    const sidecar = await inProcess()
    await sidecar.json("POST", "/v1/host-tools", { body: { tools: [LOOKUP] } })
    const { turnID } = await sidecar.turn()
    const first = await delegated(sidecar, turnID, "lookup", { email: "a@example.com" }, "call_bad_output")
    const refused = await sidecar.json("POST", `/v1/host-calls/${first.hostCall.id}/result`, { body: { output: { plan: 3 } } })
    expect(refused.status).toBe(400)
    expect(refused.body.error.message).toContain("does not match lookup's output schema")
    expect(refused.body.error.message).toContain("still waits")
    const both = await sidecar.json("POST", `/v1/host-calls/${first.hostCall.id}/result`, {
      body: { output: { plan: "pro" }, error: { message: "no" } },
    })
    expect(both.status).toBe(400)
    expect((await sidecar.json("GET", "/v1/host-calls")).body.map((call: any) => call.id)).toEqual([first.hostCall.id])
    await sidecar.json("POST", `/v1/host-calls/${first.hostCall.id}/result`, { body: { output: { plan: "pro" } } })
    expect((await first.settled).body).toMatchObject({ status: "success", structured: { plan: "pro" }, content: [] })

    const second = await delegated(sidecar, turnID, "lookup", { email: "b@example.com" }, "call_error")
    await sidecar.json("POST", `/v1/host-calls/${second.hostCall.id}/result`, { body: { error: { message: "The CRM is down." } } })
    expect((await second.settled).body).toMatchObject({ status: "error", error: { kind: "failure", message: "lookup: The CRM is down." } })
    // An empty reason is said to be none, not shown as `lookup: `.
    const third = await delegated(sidecar, turnID, "lookup", { email: "c@example.com" }, "call_empty")
    await sidecar.json("POST", `/v1/host-calls/${third.hostCall.id}/result`, { body: { error: { message: " " } } })
    expect((await third.settled).body).toMatchObject({ error: { message: "lookup: it failed, and its host gave no reason" } })
  })

  test("an input its schema refuses never reaches the host", async () => {
    const sidecar = await inProcess()
    await sidecar.json("POST", "/v1/host-tools", { body: { enable: ["question"], tools: [LOOKUP] } })
    const { turnID } = await sidecar.turn()
    const events = await sidecar.events()
    const hostile = [
      ["question", { questions: [] }],
      ["question", { questions: [{ question: "Go?", options: [{ label: "yes" }] }] }],
      ["question", { questions: QUESTION_INPUT.questions, extra: "$(rm -rf ~)" }],
      ["lookup", { email: 42 }],
      ["lookup", "a@example.com"],
    ] as const
    for (const [name, input] of hostile) {
      const { body } = await sidecar.settle(turnID, { name, input })
      expect({ name, status: body.status, kind: body.error?.kind }).toEqual({ name, status: "error", kind: "invalid_input" })
    }
    const settled = await sidecar.settle(turnID, { name: "bash", input: { command: "true" } })
    expect(settled.body.status).toBe("success")
    // Nothing was announced before the last call's own events.
    for (;;) {
      const event = await events.next()
      expect(event.event).not.toBe("host_call")
      if (event.event === "call.settled" && event.data.settlement.tool === "bash") break
    }
    await events.close()
    expect((await sidecar.json("GET", "/v1/host-calls")).body).toEqual([])
  })

  test("a host that never answers: the call fails when its timeout passes, and a later answer is refused", async () => {
    const sidecar = await inProcess()
    await sidecar.json("POST", "/v1/host-tools", { body: { tools: [{ ...LOOKUP, timeoutMs: 50 }] } })
    const { turnID } = await sidecar.turn()
    const { settled, hostCall } = await delegated(sidecar, turnID, "lookup", { email: "a@example.com" }, "call_timeout")
    const { body } = await settled
    expect(body).toMatchObject({
      status: "error",
      error: { kind: "failure", message: "lookup: the host did not answer within 50 ms, so nothing came back. Go on without it, or call it again if it is still needed." },
    })
    const late = await sidecar.json("POST", `/v1/host-calls/${hostCall.id}/result`, { body: { output: { plan: "pro" } } })
    expect(late.status).toBe(409)
    expect(late.body.error.message).toContain("timed out")
  })

  test("cancelling a delegated call settles it cancelled, and the host's answer after is refused", async () => {
    const sidecar = await inProcess()
    await sidecar.json("POST", "/v1/host-tools", { body: { enable: ["task"] } })
    const { turnID } = await sidecar.turn()
    const input = { description: "Find the flaky test", prompt: "Run the suite three times and name the test that fails." }
    const { settled, hostCall } = await delegated(sidecar, turnID, "task", input, "call_cancel")
    const cancel = await sidecar.json("POST", "/v1/calls/ses_test/call_cancel/cancel")
    expect(cancel.status).toBe(202)
    expect((await settled).body).toMatchObject({ tool: "task", status: "cancelled" })
    const late = await sidecar.json("POST", `/v1/host-calls/${hostCall.id}/result`, { body: { output: "done" } })
    expect(late.status).toBe(409)
    expect(late.body.error.message).toContain("was cancelled")
    expect((await sidecar.json("GET", "/v1/host-calls")).body).toEqual([])
  })

  test("a streamed call carries its host_call, the host answers from the stream, and a task answers in text", async () => {
    const sidecar = await inProcess()
    await sidecar.json("POST", "/v1/host-tools", { body: { enable: ["task"] } })
    const { turnID } = await sidecar.turn()
    const input = { description: "Summarise", prompt: "Summarise README.md in one line." }
    const response = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: callBody({ name: "task", input, toolCallID: "call_streamed" }),
      headers: { accept: "text/event-stream" },
    })
    const stream = new EventReader(response)
    const first = await stream.next()
    expect(first).toMatchObject({ event: "host_call", data: { name: "task", toolCallID: "call_streamed", input } })
    // The same call posted again (a host that lost its connection) joins it, and is shown the call waiting at once.
    const joined = new EventReader(
      await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
        body: callBody({ name: "task", input, toolCallID: "call_streamed" }),
        headers: { accept: "text/event-stream" },
      }),
    )
    expect(await joined.next()).toEqual(first)
    await sidecar.json("POST", `/v1/host-calls/${first.data.id}/result`, { body: { output: "A tool runtime for agents." } })
    const settled = [
      {
        event: "settlement",
        data: expect.objectContaining({ status: "success", content: [{ type: "text", text: "A tool runtime for agents." }] }),
      },
    ]
    expect(await stream.rest()).toEqual(settled)
    expect(await joined.rest()).toEqual(settled)
  })
})

describe("replacing and removing host tools", () => {
  test("registering a name again replaces it: turns made before call it stale; removing it does the same", async () => {
    const sidecar = await inProcess()
    await sidecar.json("POST", "/v1/host-tools", { body: { tools: [LOOKUP] } })
    const before = await sidecar.turn()
    await sidecar.json("POST", "/v1/host-tools", { body: { tools: [{ ...LOOKUP, description: "Look a customer up (v2)" }] } })
    const stale = await sidecar.settle(before.turnID, { name: "lookup", input: { email: "a@example.com" } })
    expect(stale.body).toMatchObject({ status: "error", error: { kind: "stale" } })
    const after = await sidecar.turn()
    expect(after.definitions.find((definition) => definition.name === "lookup")?.description).toBe("Look a customer up (v2)")

    const removed = await sidecar.json("DELETE", "/v1/host-tools/lookup")
    expect(removed).toMatchObject({ status: 200, body: { name: "lookup", removed: true } })
    const gone = await sidecar.settle(after.turnID, { name: "lookup", input: { email: "a@example.com" } })
    expect(gone.body).toMatchObject({ status: "error", error: { kind: "stale" } })
    expect((await sidecar.turn()).definitions.some((definition) => definition.name === "lookup")).toBe(false)
    expect((await sidecar.json("DELETE", "/v1/host-tools/lookup")).status).toBe(404)
  })

  test("a call waiting when its host tool is removed still takes its answer", async () => {
    const sidecar = await inProcess()
    await sidecar.json("POST", "/v1/host-tools", { body: { tools: [LOOKUP] } })
    const { turnID } = await sidecar.turn()
    const { settled, hostCall } = await delegated(sidecar, turnID, "lookup", { email: "a@example.com" }, "call_removed")
    expect((await sidecar.json("DELETE", "/v1/host-tools/lookup")).status).toBe(200)
    expect((await sidecar.json("GET", "/v1/host-calls")).body.map((call: any) => call.id)).toEqual([hostCall.id])
    await sidecar.json("POST", `/v1/host-calls/${hostCall.id}/result`, { body: { output: { plan: "free" } } })
    expect((await settled).body).toMatchObject({ status: "success", structured: { plan: "free" } })
  })

  test("a rule denying a host tool hides it and refuses its calls; the host is never asked", async () => {
    const sidecar = await inProcess({ "core.json": '{ "permission": { "task": "deny" } }' })
    await sidecar.json("POST", "/v1/host-tools", { body: { enable: ["question", "task"] } })
    const { turnID, definitions } = await sidecar.turn()
    expect(definitions.some((definition) => definition.name === "task")).toBe(false)
    expect(definitions.some((definition) => definition.name === "question")).toBe(true)
    const { body } = await sidecar.settle(turnID, { name: "task", input: { description: "x", prompt: "y" } })
    expect(body.status).toBe("error")
    expect(["denied", "unknown"]).toContain(body.error.kind)
    expect((await sidecar.json("GET", "/v1/host-calls")).body).toEqual([])
  })
})

describe("host tools and the Location", () => {
  test("they outlive a core.json reload; a tool file that takes a host tool's name wins, with a diagnostic", async () => {
    const sidecar = await inProcess({ "core.json": "{}", "tools/.keep": "" }, { watch: true })
    await sidecar.json("POST", "/v1/host-tools", { body: { enable: ["question"], tools: [LOOKUP] } })
    const events = await sidecar.events()
    writeFileSync(
      join(sidecar.box.location, "tools/lookup.ts"),
      `${IMPORTS}
export default Tool.make({
  description: "The Location's own lookup",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed("from the tool file"),
})
`,
    )
    await events.until("tools.changed", (data) => data.files.some((file: string) => file.endsWith("lookup.ts")))
    let turn = await sidecar.turn()
    expect(turn.definitions.find((definition) => definition.name === "lookup")?.description).toBe("The Location's own lookup")

    writeFileSync(join(sidecar.box.location, "core.json"), '{ "permission": { "bash": "ask" } }')
    const diagnostic = await events.until("diagnostic", (data) => data.message.includes('"lookup"'))
    expect(diagnostic.data.message).toBe('The host tool "lookup" is not offered: the Location now has a tool of that name')
    await events.until("tools.changed", (data) => data.reason === "config")
    await events.close()
    turn = await sidecar.turn()
    expect(turn.definitions.find((definition) => definition.name === "lookup")?.description).toBe("The Location's own lookup")
    const { settled, hostCall } = await delegated(sidecar, turn.turnID, "question", QUESTION_INPUT, "call_after_reload")
    await sidecar.json("POST", `/v1/host-calls/${hostCall.id}/result`, { body: { output: { answers: [["SQLite"]] } } })
    expect((await settled).body).toMatchObject({ status: "success", structured: { answers: [["SQLite"]] } })
  })

  test("they belong to their Location: another Location neither offers them nor takes answers to their calls", async () => {
    const roots = realpathSync(tempDir("core-host-tools-"))
    const other = join(roots, "other")
    mkdirSync(other)
    const sidecar = await inProcess({}, { roots: [roots] })
    await sidecar.json("POST", "/v1/host-tools", { body: { enable: ["question"] } })
    const elsewhere = { "x-core-location": other }
    expect((await sidecar.json("GET", "/v1/host-tools", { headers: elsewhere })).body).toEqual([])
    expect((await sidecar.turn(undefined, elsewhere)).definitions.some((definition) => definition.name === "question")).toBe(false)
    const { turnID } = await sidecar.turn()
    const { settled, hostCall } = await delegated(sidecar, turnID, "question", QUESTION_INPUT, "call_located")
    expect((await sidecar.json("GET", "/v1/host-calls", { headers: elsewhere })).body).toEqual([])
    const wrong = await sidecar.json("POST", `/v1/host-calls/${hostCall.id}/result`, {
      body: { output: { answers: [["SQLite"]] } },
      headers: elsewhere,
    })
    expect(wrong.status).toBe(404)
    await sidecar.json("POST", `/v1/host-calls/${hostCall.id}/result`, { body: { output: { answers: [["Postgres (Recommended)"]] } } })
    expect((await settled).body.structured).toEqual({ answers: [["Postgres (Recommended)"]] })
  })

  test("a host's answer is bounded like any tool's output: the model reads a preview, the whole is kept", async () => {
    const sidecar = await inProcess()
    await sidecar.json("POST", "/v1/host-tools", { body: { enable: ["task"] } })
    const { turnID } = await sidecar.turn()
    const { settled, hostCall } = await delegated(sidecar, turnID, "task", { description: "Dump", prompt: "Dump it all." }, "call_big")
    const big = Array.from({ length: 5000 }, (_, line) => `line ${line} of the sub-agent's long answer`).join("\n")
    await sidecar.json("POST", `/v1/host-calls/${hostCall.id}/result`, { body: { output: big } })
    const { body } = await settled
    expect(body.status).toBe("success")
    expect(body.outputs).toHaveLength(1)
    expect(body.structured).toBeNull()
    expect(body.content[0].text.length).toBeLessThan(big.length / 4)
    const whole = await sidecar.fetch("GET", `/v1/outputs/${body.outputs[0].id}`)
    expect(await whole.text()).toBe(big)
  })
})
