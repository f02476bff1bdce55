// Calls through the sidecar in process: event streams (the call's own and the Location's), permission asks
// answered over HTTP, cancellation, duplicates joining a running call, clients that go away, operational failures.

import { describe, expect, test } from "bun:test"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Exit, PubSub, Scope } from "effect"
import { Events } from "../../src/host/events"
import { hostPids } from "../shell/processes"
import { Latch } from "../support/latch"
import { echoTool, gateTool } from "../support/tools"
import { callBody, EventReader, IMPORTS, inProcess, isDead, runs } from "./support"

/** Reports progress, then waits at `latch`; records each run. */
const GATE = (latch: Latch.Interface) => gateTool(latch, { record: "gate", progress: { message: "waiting", metadata: { step: 1 } } })

const ECHO = echoTool({ record: "echo" })

type EventsOf = Events.Server

const ASK_ECHO = '{ "permission": { "echo": "ask" } }'

describe("a call's event stream", () => {
  test("streams progress as it comes, then one settlement, and the Location's events say the same", async () => {
    await using latch = Latch.open()
    const sidecar = await inProcess({ "tools/gate.ts": GATE(latch) })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    const response = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: callBody({ name: "gate", input: {}, toolCallID: "call_stream" }),
      headers: { accept: "text/event-stream" },
    })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toBe("text/event-stream")
    const stream = new EventReader(response)
    expect(await stream.next()).toEqual({ event: "progress", data: { message: "waiting", metadata: { step: 1 } } })
    latch.release()
    const rest = await stream.rest()
    expect(rest).toEqual([{ event: "settlement", data: expect.objectContaining({ status: "success", structured: "opened" }) }])

    const started = await events.until("call.started")
    expect(started.data).toEqual({ sessionID: "ses_test", toolCallID: "call_stream", tool: "gate", turnID })
    expect((await events.until("call.progress")).data).toMatchObject({ toolCallID: "call_stream", message: "waiting" })
    const settled = await events.until("call.settled")
    expect(settled.data).toMatchObject({ toolCallID: "call_stream", replayed: false, settlement: { status: "success" } })
    await events.close()
  })

  test("a recorded call is replayed on the stream with X-Core-Replayed, without running", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const { turnID } = await sidecar.turn()
    await sidecar.settle(turnID, { name: "echo", input: { text: "once" }, toolCallID: "call_r" })
    const response = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: callBody({ name: "echo", input: { text: "once" }, toolCallID: "call_r" }),
      headers: { accept: "text/event-stream" },
    })
    expect(response.headers.get("x-core-replayed")).toBe("true")
    expect(await new EventReader(response).rest()).toEqual([
      { event: "settlement", data: expect.objectContaining({ status: "success", structured: "once" }) },
    ])
    expect(runs(sidecar.box, "echo")).toBe(1)
  })
})

/** Reports progress `CHATTER` times as fast as it can, then answers "done". */
const CHATTER = 10_000
const CHATTY = `${IMPORTS}
export default Tool.make({
  description: "Reports progress, then finishes",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: (_, context) =>
    Effect.gen(function* () {
      for (let step = 1; step <= ${CHATTER}; step++) yield* context.progress({ message: String(step) })
      return "done"
    }),
})
`

describe("a call's event stream read by nobody", () => {
  test("keeps a bounded number of the latest events, and always the settlement", async () => {
    const sidecar = await inProcess({ "tools/chatty.ts": CHATTY })
    const { turnID } = await sidecar.turn()
    const response = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: callBody({ name: "chatty", input: {}, toolCallID: "call_unread" }),
      headers: { accept: "text/event-stream" },
    })
    // Not read until the call has settled: a replay of it answers only once it has.
    const replay = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: callBody({ name: "chatty", input: {}, toolCallID: "call_unread" }),
    })
    expect(((await replay.json()) as { status: string }).status).toBe("success")
    const events = await new EventReader(response).rest()
    const progress = events.filter((event) => event.event === "progress").map((event) => Number(event.data.message))
    // The stream read a few ahead before nobody read it; of the rest, the oldest went and the latest stayed, in order.
    expect(progress.length).toBeLessThan(CHATTER / 2)
    expect(progress.every((step, index) => index === 0 || step > progress[index - 1]!)).toBe(true)
    // The buffer's last place holds the settlement.
    const kept = Events.BUFFER - 1
    expect(progress.slice(-kept)).toEqual(Array.from({ length: kept }, (_, index) => CHATTER - kept + 1 + index))
    expect(events.at(-1)).toEqual({ event: "settlement", data: expect.objectContaining({ status: "success", structured: "done" }) })
  })
})

describe("the Location's events", () => {
  test("reach their subscribers; the calls' events are published only while a subscriber reads them", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const { turnID } = await sidecar.turn()
    const served = sidecar.sidecar.primary
    const scope = Effect.runSync(Scope.make())
    const taken = (subscription: PubSub.Subscription<EventsOf>) =>
      Effect.runPromise(PubSub.takeAll(subscription)).then((events) => events.map((event) => event.event))
    try {
      // A subscriber of everything but the calls' events (an MCP session): a call publishes nothing for it.
      const rest = await Effect.runPromise(Scope.provide(served.subscribe({ calls: false }), scope))
      expect(served.listened()).toBe(false)
      await sidecar.settle(turnID, { name: "echo", input: { text: "unheard" }, toolCallID: "call_unheard" })
      await Effect.runPromise(served.publish({ event: "tools.changed", data: { reason: "tools", files: [] } }))
      expect(await taken(rest)).toEqual(["tools.changed"])
      // Once one reads them, every subscriber gets them, in order with the rest.
      const all = await Effect.runPromise(Scope.provide(served.subscribe(), scope))
      expect(served.listened()).toBe(true)
      await sidecar.settle(turnID, { name: "echo", input: { text: "heard" }, toolCallID: "call_heard" })
      await Effect.runPromise(served.publish({ event: "tools.changed", data: { reason: "tools", files: [] } }))
      expect(await taken(all)).toEqual(["call.started", "call.settled", "tools.changed"])
      expect(await taken(rest)).toEqual(["call.started", "call.settled", "tools.changed"])
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
    // Every subscriber gone; a new one gets the calls' events again.
    expect(served.listened()).toBe(false)
    const events = await sidecar.events()
    await sidecar.settle(turnID, { name: "echo", input: { text: "again" }, toolCallID: "call_again" })
    expect((await events.until("call.settled")).data).toMatchObject({ toolCallID: "call_again" })
  })
})

describe("permission asks over HTTP", () => {
  test("an ask appears on the call's stream, on /v1/events and in /v1/permissions; once lets the call run", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO, "core.json": ASK_ECHO })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    const response = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: callBody({ name: "echo", input: { text: "asked" }, sessionID: "ses_ask", toolCallID: "call_ask" }),
      headers: { accept: "text/event-stream" },
    })
    const stream = new EventReader(response)
    const asked = await stream.next()
    expect(asked).toEqual({
      event: "permission",
      data: { id: expect.any(String), sessionID: "ses_ask", toolCallID: "call_ask", action: "echo", resources: ["*"], save: ["*"] },
    })
    expect((await events.until("permission.asked")).data).toEqual(asked.data)
    const pending = await sidecar.json("GET", "/v1/permissions")
    expect(pending.body).toEqual([asked.data])
    expect(runs(sidecar.box, "echo")).toBe(0)

    const reply = await sidecar.json("POST", `/v1/permissions/${asked.data.id}/reply`, { body: { reply: "once" } })
    expect(reply).toMatchObject({ status: 200, body: { id: asked.data.id, reply: "once" } })
    expect(await stream.rest()).toEqual([{ event: "settlement", data: expect.objectContaining({ status: "success" }) }])
    expect((await events.until("permission.replied")).data).toEqual({ id: asked.data.id, sessionID: "ses_ask", reply: "once" })
    expect((await sidecar.json("GET", "/v1/permissions")).body).toEqual([])
    expect(runs(sidecar.box, "echo")).toBe(1)
    await events.close()
  })

  test("reject with a message fails the call with it; without one the call is declined", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO, "core.json": ASK_ECHO })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    for (const [reply, expected] of [
      [{ reply: "reject", message: "use the other tool" }, { status: "error", error: { kind: "failure", message: "use the other tool" } }],
      [{ reply: "reject" }, { status: "declined" }],
    ] as const) {
      const settling = sidecar.settle(turnID, { name: "echo", input: { text: "x" } })
      const asked = await events.until("permission.asked")
      expect((await sidecar.json("POST", `/v1/permissions/${asked.data.id}/reply`, { body: reply })).status).toBe(200)
      expect((await settling).body).toMatchObject(expected)
    }
    expect(runs(sidecar.box, "echo")).toBe(0)
    await events.close()
  })

  test("always saves the approval: the next call runs without asking", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO, "core.json": ASK_ECHO })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    const settling = sidecar.settle(turnID, { name: "echo", input: { text: "x" } })
    const asked = await events.until("permission.asked")
    await sidecar.json("POST", `/v1/permissions/${asked.data.id}/reply`, { body: { reply: "always" } })
    expect((await settling).body.status).toBe("success")
    expect((await sidecar.settle(turnID, { name: "echo", input: { text: "y" } })).body.status).toBe("success")
    expect(runs(sidecar.box, "echo")).toBe(2)
    await events.close()
  })

  test("replying to an unknown or already answered ask is a 404", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO, "core.json": ASK_ECHO })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    const settling = sidecar.settle(turnID, { name: "echo", input: { text: "x" } })
    const asked = await events.until("permission.asked")
    await sidecar.json("POST", `/v1/permissions/${asked.data.id}/reply`, { body: { reply: "once" } })
    await settling
    const again = await sidecar.json("POST", `/v1/permissions/${asked.data.id}/reply`, { body: { reply: "once" } })
    expect(again.status).toBe(404)
    expect(again.body.error.kind).toBe("not_found")
    // The miss names the id as it was sent, generation and all.
    expect(again.body.error.message).toContain(`No pending permission request ${asked.data.id} `)
    await events.close()
  })

  // An ask's id ends in the generation that asked it (".3"): read with Number(), "0x3", "3e0" and " 3" were that
  // generation too, so aliases of one ask answered it.
  test("an ask is answered by its own id only: a spelling of its serial another reading takes for a number is a 404", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO, "core.json": ASK_ECHO })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    const settling = sidecar.settle(turnID, { name: "echo", input: { text: "x" } })
    const asked = await events.until("permission.asked")
    const id = asked.data.id as string
    const [prefix, serial] = [id.slice(0, id.lastIndexOf(".")), id.slice(id.lastIndexOf(".") + 1)]
    for (const alias of [`${prefix}.0x${Number(serial).toString(16)}`, `${prefix}.${serial}e0`, `${prefix}.0${serial}`, `${prefix}.${serial}.0`]) {
      const answer = await sidecar.json("POST", `/v1/permissions/${encodeURIComponent(alias)}/reply`, { body: { reply: "once" } })
      expect([alias, answer.status]).toEqual([alias, 404])
    }
    expect(runs(sidecar.box, "echo")).toBe(0)
    expect((await sidecar.json("POST", `/v1/permissions/${id}/reply`, { body: { reply: "once" } })).status).toBe(200)
    expect((await settling).body.status).toBe("success")
    for (const id of ["per_unknown", "per_x.99", "nodot"]) {
      expect((await sidecar.json("POST", `/v1/permissions/${id}/reply`, { body: { reply: "once" } })).status).toBe(404)
    }
    await events.close()
  })
})

describe("cancelling", () => {
  test("cancel interrupts a running bash command, kills its process tree, and it settles cancelled, recorded", async () => {
    const sidecar = await inProcess()
    const { turnID } = await sidecar.turn()
    const response = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: callBody({
        name: "bash",
        input: { command: "sleep 300 & sleep 300 & echo pids $! $$; wait" },
        sessionID: "ses_cancel",
        toolCallID: "call_cancel",
      }),
      headers: { accept: "text/event-stream" },
    })
    const stream = new EventReader(response)
    const progress = await stream.until("progress", (data) => /pids \d+ \d+/.test(data.message))
    // As the command numbers them: its own PID namespace's, where it has one; the host's are what /proc shows here.
    const said = (/pids (\d+) (\d+)/.exec(progress.data.message) ?? []).slice(1).map(Number)
    const pids = hostPids(said, sidecar.box.location)
    expect(pids.every((pid) => !isDead(pid))).toBe(true)
    // `$!` is known as soon as the shell forks, before the child runs sleep: wait until it does, so the cancel
    // finds it named sleep.
    while (readFileSync(`/proc/${pids[0]}/comm`, "utf8") !== "sleep\n") await Bun.sleep(5)

    const cancel = await sidecar.json("POST", "/v1/calls/ses_cancel/call_cancel/cancel")
    expect(cancel).toMatchObject({ status: 202, body: { sessionID: "ses_cancel", toolCallID: "call_cancel", status: "cancelling" } })
    const [settlement] = await stream.rest()
    expect(settlement).toEqual({ event: "settlement", data: expect.objectContaining({ status: "cancelled", tool: "bash" }) })
    expect(pids.every(isDead)).toBe(true)
    // The settlement names what the cancel ended: the shell and both sleeps.
    // Named as the command numbered them, which is what the model saw.
    const [background, shell] = said
    const ended = (settlement!.data as { content: Array<{ text: string }> }).content[0]!.text
    expect(ended).toContain("Ended 3 processes it had started: ")
    expect(ended).toContain(`sleep (${background})`)
    expect(ended).toContain(`(${shell})`)
    const recorded = await sidecar.json("GET", "/v1/settlements/ses_cancel/call_cancel")
    expect(recorded.body).toMatchObject({ status: "cancelled", content: [{ type: "text", text: ended }] })
    expect((await sidecar.json("POST", "/v1/calls/ses_cancel/call_cancel/cancel")).status).toBe(404)
  })

  test("a call cancelled while it waits for a permission reply is recorded cancelled and never runs later", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO, "core.json": ASK_ECHO })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    const call = { name: "echo", input: { text: "x" }, sessionID: "ses_c", toolCallID: "call_waiting" }
    const settling = sidecar.settle(turnID, call)
    await events.until("permission.asked")
    expect((await sidecar.json("POST", "/v1/calls/ses_c/call_waiting/cancel")).status).toBe(202)
    expect((await settling).body.status).toBe("cancelled")
    expect((await sidecar.json("GET", "/v1/permissions")).body).toEqual([])
    const again = await sidecar.settle(turnID, call)
    expect(again.headers.get("x-core-replayed")).toBe("true")
    expect(again.body.status).toBe("cancelled")
    expect(runs(sidecar.box, "echo")).toBe(0)
    await events.close()
  })

  test("cancelling a call that is not running is a 404", async () => {
    const sidecar = await inProcess()
    const answer = await sidecar.json("POST", "/v1/calls/ses_none/call_none/cancel")
    expect(answer.status).toBe(404)
    expect(answer.body.error.kind).toBe("not_found")
  })
})

describe("duplicates and departures", () => {
  test("a duplicate of a running call joins it: it runs once and both get its settlement", async () => {
    await using latch = Latch.open()
    const sidecar = await inProcess({ "tools/gate.ts": GATE(latch) })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    const call = { name: "gate", input: {}, toolCallID: "call_twice" }
    const first = sidecar.settle(turnID, call)
    await events.until("call.progress")
    const second = sidecar.settle(turnID, call)
    latch.release()
    const [a, b] = await Promise.all([first, second])
    expect(a.body).toEqual(b.body)
    expect(a.body.status).toBe("success")
    // Neither answer is a settlement recorded before its request: the joiner waited for the running call.
    expect(a.headers.get("x-core-replayed")).toBeNull()
    expect(b.headers.get("x-core-replayed")).toBeNull()
    expect(runs(sidecar.box, "gate")).toBe(1)
    const recorded = await sidecar.settle(turnID, call)
    expect(recorded.headers.get("x-core-replayed")).toBe("true")
    expect(recorded.body).toEqual(a.body)
    await events.close()
  })

  test("a call posted again with SSE while its ask is pending gets that ask first, then its settlement", async () => {
    const sidecar = await inProcess({ "core.json": '{ "permission": { "bash": "ask" } }' })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    const call = { name: "bash", input: { command: "echo answered" }, sessionID: "ses_again", toolCallID: "call_again" }
    // The first request's client goes away (a network fault) while the call waits for a reply.
    const abort = new AbortController()
    const first = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: callBody(call),
      headers: { accept: "text/event-stream" },
      signal: abort.signal,
    })
    const asked = await new EventReader(first).until("permission")
    expect((await events.until("permission.asked")).data).toEqual(asked.data)
    abort.abort()

    const again = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: callBody(call),
      headers: { accept: "text/event-stream" },
    })
    expect(again.status).toBe(200)
    expect(again.headers.get("x-core-replayed")).toBeNull()
    const stream = new EventReader(again)
    expect(await stream.next()).toEqual({ event: "permission", data: asked.data })
    expect((await sidecar.json("POST", `/v1/permissions/${asked.data.id}/reply`, { body: { reply: "once" } })).status).toBe(200)
    const rest = await stream.rest()
    // The pending ask is sent once, not again from the live events.
    expect(rest.map((event) => event.event).filter((name) => name === "permission")).toEqual([])
    expect(rest.at(-1)).toEqual({ event: "settlement", data: expect.objectContaining({ status: "success" }) })
    expect(rest.at(-1)!.data.structured.stdout).toBe("answered\n")
    await events.close()
  })

  test("a client that goes away mid-call does not stop it: it settles and is recorded", async () => {
    await using latch = Latch.open()
    const sidecar = await inProcess({ "tools/gate.ts": GATE(latch) })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    const abort = new AbortController()
    const response = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: callBody({ name: "gate", input: {}, sessionID: "ses_gone", toolCallID: "call_gone" }),
      headers: { accept: "text/event-stream" },
      signal: abort.signal,
    })
    const stream = new EventReader(response)
    await stream.until("progress")
    abort.abort()
    await stream.close()
    latch.release()
    const settled = await events.until("call.settled", (data) => data.toolCallID === "call_gone")
    expect(settled.data.settlement.status).toBe("success")
    const recorded = await sidecar.json("GET", "/v1/settlements/ses_gone/call_gone")
    expect(recorded.body.structured).toBe("opened")
    await events.close()
  })
})

describe("operational failures", () => {
  test("an output that cannot be kept is a 500 with kind operational, not a settlement", async () => {
    const BIG = `${IMPORTS}
export default Tool.make({
  description: "Print many lines",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed(Array.from({ length: 50 }, (_, i) => "line " + i).join("\\n")),
})
`
    const sidecar = await inProcess({ "tools/big.ts": BIG, "core.json": '{ "output": { "maxLines": 10 } }' })
    // The outputs directory is a file: keeping the full output fails.
    writeFileSync(join(sidecar.box.data, "outputs"), "")
    const { turnID } = await sidecar.turn()
    const answer = await sidecar.settle(turnID, { name: "big", input: {} })
    expect(answer.status).toBe(500)
    expect(answer.body).toEqual({ error: { kind: "operational", message: expect.any(String) } })
    expect(sidecar.log.some((line) => line.includes("operational"))).toBe(true)
    expect(existsSync(join(sidecar.box.data, "outputs"))).toBe(true)
  })
})

describe("terminal events", () => {
  const DIES = `${IMPORTS}
export default Tool.make({
  description: "Die",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.die(new Error("the tool broke")),
})
`
  const FAILS_UNTYPED = `${IMPORTS}
export default Tool.make({
  description: "Fail with an error that is not a Tool.Failure",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.fail(new Error("not a Tool.Failure")),
})
`

  test("a call that ends operationally is followed on /v1/events by call.failed with its message, JSON or SSE", async () => {
    const sidecar = await inProcess({ "tools/dies.ts": DIES, "tools/untyped.ts": FAILS_UNTYPED, "tools/echo.ts": ECHO })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()

    const json = await sidecar.settle(turnID, { name: "dies", input: {}, toolCallID: "call_dies" })
    expect(json.status).toBe(500)
    expect(await events.next()).toMatchObject({ event: "call.started", data: { toolCallID: "call_dies", tool: "dies" } })
    expect(await events.next()).toEqual({
      event: "call.failed",
      data: { sessionID: "ses_test", toolCallID: "call_dies", tool: "dies", message: json.body.error.message },
    })

    const response = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: callBody({ name: "untyped", input: {}, toolCallID: "call_untyped" }),
      headers: { accept: "text/event-stream" },
    })
    const own = await new EventReader(response).rest()
    expect(own).toEqual([{ event: "error", data: { error: { kind: "operational", message: expect.any(String) } } }])
    expect((await events.next()).event).toBe("call.started")
    const failed = await events.next()
    expect(failed).toEqual({
      event: "call.failed",
      data: { sessionID: "ses_test", toolCallID: "call_untyped", tool: "untyped", message: own[0]!.data.error.message },
    })

    // Settling again replays it: started, then settled (interrupted), never a call left open.
    const again = await sidecar.settle(turnID, { name: "dies", input: {}, toolCallID: "call_dies" })
    expect(again.body.error.kind).toBe("interrupted")
    expect((await events.next()).event).toBe("call.started")
    expect(await events.next()).toMatchObject({ event: "call.settled", data: { toolCallID: "call_dies", replayed: true } })
    await events.close()

    // The record stays the failure it was, for operators: its reason and when it ended (a replay overwrote it with
    // the interrupted settlement, its reason lost and its end moved to the replay). Asked for its settlement, the
    // sidecar says it failed, not that its core stopped.
    const listed = await sidecar.json("GET", "/v1/settlements?sessionID=ses_test")
    const record = (listed.body as ReadonlyArray<{ toolCallID: string; status: string; reason?: string }>).find((one) => one.toolCallID === "call_dies")
    expect(record).toMatchObject({ status: "failed", reason: expect.stringContaining("the tool broke") })
    const asked = await sidecar.json("GET", "/v1/settlements/ses_test/call_dies")
    expect(asked.status).toBe(404)
    expect(asked.body.error.message).toContain("failed operationally while it ran")
    expect(asked.body.error.message).not.toContain("its core stopped")
  })
})
