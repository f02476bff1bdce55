// A session's todo list as hosts see it: GET /v1/sessions/{id}/todos and the todo.updated event, in process and
// from `core serve`; another Location served by the same sidecar (same data directory) sees none of it; a replayed
// todowrite writes and announces nothing.

import { describe, expect, test } from "bun:test"
import { inProcess, sandbox, serve } from "./support"

const LIST = [
  { content: "Plan", status: "completed", priority: "high" },
  { content: "Build", status: "in_progress" },
]
const STORED = [
  { content: "Plan", status: "completed", priority: "high" },
  { content: "Build", status: "in_progress", priority: "medium" },
]

describe("todos over HTTP (in process)", () => {
  test("a written list is announced as todo.updated and served per session; another session's is empty", async () => {
    const sidecar = await inProcess()
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    const settled = await sidecar.settle(turnID, { name: "todowrite", input: { todos: LIST }, sessionID: "ses_a" })
    expect(settled.body.status).toBe("success")
    const updated = await events.until("todo.updated")
    expect(updated.data).toEqual({ sessionID: "ses_a", todos: STORED })
    await events.close()

    const answer = await sidecar.json("GET", "/v1/sessions/ses_a/todos")
    expect(answer.status).toBe(200)
    expect(answer.body).toEqual({ sessionID: "ses_a", todos: STORED })
    expect((await sidecar.json("GET", "/v1/sessions/ses_b/todos")).body).toEqual({ sessionID: "ses_b", todos: [] })
  })

  test("a session id with slashes and spaces is one path segment, answered as given", async () => {
    const sidecar = await inProcess()
    const { turnID } = await sidecar.turn()
    const session = "a/b c"
    await sidecar.settle(turnID, { name: "todowrite", input: { todos: LIST }, sessionID: session })
    const answer = await sidecar.json("GET", `/v1/sessions/${encodeURIComponent(session)}/todos`)
    expect(answer.body).toEqual({ sessionID: session, todos: STORED })
  })

  test("another Location of the same sidecar (same store) has its own lists and hears none of this one's events", async () => {
    const other = sandbox()
    const sidecar = await inProcess({}, { roots: [other.location] })
    const headers = { "x-core-location": other.location }
    const otherEvents = await sidecar.events(headers)
    const { turnID } = await sidecar.turn()
    await sidecar.settle(turnID, { name: "todowrite", input: { todos: LIST }, sessionID: "ses_same" })
    expect((await sidecar.json("GET", "/v1/sessions/ses_same/todos", { headers })).body.todos).toEqual([])

    const otherTurn = await sidecar.turn(undefined, headers)
    const mine = [{ content: "Theirs", status: "pending" }]
    await sidecar.settle(otherTurn.turnID, { name: "todowrite", input: { todos: mine }, sessionID: "ses_same" }, headers)
    // The first event the other Location hears is its own write.
    expect((await otherEvents.until("todo.updated")).data.todos).toEqual([{ content: "Theirs", status: "pending", priority: "medium" }])
    await otherEvents.close()
    expect((await sidecar.json("GET", "/v1/sessions/ses_same/todos")).body.todos).toEqual(STORED)
  })

  test("replaying a todowrite call writes nothing again: the later list stays, and no todo.updated is sent", async () => {
    const sidecar = await inProcess()
    const { turnID } = await sidecar.turn()
    await sidecar.settle(turnID, { name: "todowrite", input: { todos: LIST }, sessionID: "s", toolCallID: "c1" })
    await sidecar.settle(turnID, { name: "todowrite", input: { todos: [] }, sessionID: "s", toolCallID: "c2" })
    const events = await sidecar.events()
    const replayed = await sidecar.settle(turnID, { name: "todowrite", input: { todos: LIST }, sessionID: "s", toolCallID: "c1" })
    expect(replayed.headers.get("x-core-replayed")).toBe("true")
    expect((await sidecar.json("GET", "/v1/sessions/s/todos")).body.todos).toEqual([])
    // The replay's call.settled comes, and no todo.updated before it.
    const seen: Array<string> = []
    for (;;) {
      const next = await events.next()
      seen.push(next.event)
      if (next.event === "call.settled") break
    }
    expect(seen).not.toContain("todo.updated")
    await events.close()
  })

  test("a malformed list is invalid input: nothing is written or announced", async () => {
    const sidecar = await inProcess()
    const { turnID } = await sidecar.turn()
    const events = await sidecar.events()
    const refused = await sidecar.settle(turnID, { name: "todowrite", input: { todos: [{ content: "x", status: "doing" }] }, sessionID: "s" })
    expect(refused.body.error.kind).toBe("invalid_input")
    const seen: Array<string> = []
    for (;;) {
      const next = await events.next()
      seen.push(next.event)
      if (next.event === "call.settled") break
    }
    expect(seen).not.toContain("todo.updated")
    await events.close()
    expect((await sidecar.json("GET", "/v1/sessions/s/todos")).body.todos).toEqual([])
  })

  test("the route needs the token", async () => {
    const sidecar = await inProcess()
    const answer = await sidecar.json("GET", "/v1/sessions/s/todos", { headers: { authorization: "Bearer wrong" } })
    expect(answer.status).toBe(401)
  })
})

describe("todos from core serve", () => {
  test("a list written through the binary's sidecar is served and outlives the server", async () => {
    const box = sandbox()
    const first = await serve(box)
    const { turnID } = await first.turn()
    expect((await first.settle(turnID, { name: "todowrite", input: { todos: LIST }, sessionID: "ses_bin" })).body.status).toBe("success")
    first.child.kill("SIGTERM")
    await first.exited()
    const second = await serve(box)
    expect((await second.json("GET", "/v1/sessions/ses_bin/todos")).body).toEqual({ sessionID: "ses_bin", todos: STORED })
    second.child.kill("SIGTERM")
    await second.exited()
  })
})
