// Host tools through `core serve` (the compiled binary on a loopback port), driven over HTTP as a host would: a host
// that never answers (timeout), a host that answers twice (refused), a delegated call cancelled, a host that
// reconnects and finds what waits, and a serve killed with -9 while a call waits for its host (interrupted on
// replay, and the host is not asked again).

import { describe, expect, test } from "bun:test"
import { EventReader, sandbox, serve, type Served } from "./support"

const QUESTION = {
  questions: [{ question: "Deploy now?", options: [{ label: "Yes" }, { label: "No", description: "Wait for review" }] }],
}

/** Starts a streamed call and answers with its stream once the call's `host_call` has come. */
const startDelegated = async (server: Served, turnID: string, name: string, input: unknown, toolCallID: string) => {
  const response = await server.fetch("POST", `/v1/turns/${turnID}/calls`, {
    body: { sessionID: "ses_serve", assistantMessageID: "msg", toolCallID, name, input },
    headers: { accept: "text/event-stream" },
  })
  expect(response.status).toBe(200)
  const stream = new EventReader(response)
  const hostCall = await stream.next()
  expect(hostCall).toMatchObject({ event: "host_call", data: { name, toolCallID, input } })
  return { stream, id: hostCall.data.id as string }
}

describe("host tools in core serve", () => {
  test("answered once; answered twice is a 409; an unknown id a 404; a host that reconnects finds what waits", async () => {
    const box = sandbox()
    const server = await serve(box)
    expect((await server.json("POST", "/v1/host-tools", { body: { enable: ["question"] } })).status).toBe(200)
    const { turnID } = await server.turn()
    const { stream, id } = await startDelegated(server, turnID, "question", QUESTION, "call_twice")
    // A host that lost its event stream asks what waits for it.
    expect((await server.json("GET", "/v1/host-calls")).body).toEqual([expect.objectContaining({ id, name: "question", input: QUESTION })])
    const first = await server.json("POST", `/v1/host-calls/${id}/result`, { body: { output: { answers: [["No"]] } } })
    expect(first.status).toBe(200)
    const second = await server.json("POST", `/v1/host-calls/${id}/result`, { body: { output: { answers: [["Yes"]] } } })
    expect(second.status).toBe(409)
    expect(second.body.error.kind).toBe("conflict")
    expect((await server.json("POST", "/v1/host-calls/hc_unknown/result", { body: { output: {} } })).status).toBe(404)
    const [settlement] = await stream.rest()
    expect(settlement).toMatchObject({ event: "settlement", data: { status: "success", structured: { answers: [["No"]] } } })
    expect(settlement!.data.content[0].text).toContain('"Deploy now?" = "No"')
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)
  })

  test("a host that never answers: the call fails at its timeout with a message for the model; a late answer is a 409", async () => {
    const box = sandbox()
    const server = await serve(box)
    const ping = {
      name: "ping_host",
      description: "Ask the host whether it is there",
      inputSchema: { type: "object", properties: {} },
      timeoutMs: 200,
    }
    expect((await server.json("POST", "/v1/host-tools", { body: { tools: [ping] } })).status).toBe(200)
    const { turnID } = await server.turn()
    const { stream, id } = await startDelegated(server, turnID, "ping_host", {}, "call_timeout")
    const [settlement] = await stream.rest()
    expect(settlement).toMatchObject({
      event: "settlement",
      data: { status: "error", error: { kind: "failure", message: expect.stringContaining("the host did not answer within 200 ms") } },
    })
    const late = await server.json("POST", `/v1/host-calls/${id}/result`, { body: { output: "here" } })
    expect(late.status).toBe(409)
    expect(late.body.error.message).toContain("timed out")
    expect((await server.json("GET", "/v1/settlements/ses_serve/call_timeout")).body.status).toBe("error")
    server.child.kill("SIGTERM")
    await server.exited()
  })

  test("cancel of a delegated call settles it cancelled and refuses the host's answer after", async () => {
    const box = sandbox()
    const server = await serve(box)
    await server.json("POST", "/v1/host-tools", { body: { enable: ["task"] } })
    const { turnID } = await server.turn()
    const { stream, id } = await startDelegated(server, turnID, "task", { description: "Research", prompt: "Find it." }, "call_cancel")
    expect((await server.json("POST", "/v1/calls/ses_serve/call_cancel/cancel")).status).toBe(202)
    const [settlement] = await stream.rest()
    expect(settlement).toMatchObject({ event: "settlement", data: { status: "cancelled" } })
    const late = await server.json("POST", `/v1/host-calls/${id}/result`, { body: { output: "found" } })
    expect(late.status).toBe(409)
    expect(late.body.error.message).toContain("was cancelled")
    expect((await server.json("GET", "/v1/settlements/ses_serve/call_cancel")).body.status).toBe("cancelled")
    server.child.kill("SIGTERM")
    await server.exited()
  })

  test("kill -9 while a call waits for its host: after a restart the call replays interrupted and the host is not asked again", async () => {
    const box = sandbox()
    const server = await serve(box)
    await server.json("POST", "/v1/host-tools", { body: { enable: ["question"] } })
    const { turnID } = await server.turn()
    await startDelegated(server, turnID, "question", QUESTION, "call_kill")
    server.child.kill("SIGKILL")
    await server.exited()

    const restarted = await serve(box)
    // Host tools live as long as the serve: a restarted one has none until the host registers them again.
    expect((await restarted.json("GET", "/v1/host-tools")).body).toEqual([])
    await restarted.json("POST", "/v1/host-tools", { body: { enable: ["question"] } })
    const events = await restarted.events()
    const replay = await restarted.settle((await restarted.turn()).turnID, {
      name: "question",
      input: QUESTION,
      sessionID: "ses_serve",
      toolCallID: "call_kill",
      assistantMessageID: "msg",
    })
    expect(replay.headers.get("x-core-replayed")).toBe("true")
    expect(replay.body.error).toEqual({ kind: "interrupted", message: expect.any(String) })
    for (;;) {
      const event = await events.next()
      expect(event.event).not.toBe("host_call")
      if (event.event !== "call.settled") continue
      expect(event.data).toMatchObject({ toolCallID: "call_kill", replayed: true })
      break
    }
    await events.close()
    expect((await restarted.json("GET", "/v1/host-calls")).body).toEqual([])
    restarted.child.kill("SIGTERM")
    expect((await restarted.exited()).code).toBe(0)
  })
})
