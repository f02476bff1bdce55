// `@core/client`'s host tools against the compiled binary: registering shipped and own tools, performing a delegated
// call from the call's own stream (`onHostCall`), a failure thrown there read by the model, answering from another
// connection after a reconnect (`hostCalls`, `answerHostCall`), refusals as typed errors, and removal.

import { afterAll, describe, expect, test } from "bun:test"
import { Core, CoreError, type HostCall } from "@core/client"
import { binary } from "../support/binary"
import { sandbox } from "../cli/fixture"

const opened: Array<Core> = []
afterAll(async () => {
  for (const core of opened.splice(0)) await core.close()
})

const QUESTION = { questions: [{ question: "Which port?", options: [{ label: "8080" }, { label: "3000" }] }] }

describe("@core/client host tools", () => {
  test("registers question and its own tool, performs their calls from the call's stream, and removes one", async () => {
    const box = sandbox()
    const core = await Core.spawn({ command: await binary(), location: box.location, env: { ...process.env, ...box.env }, stderr: "ignore" })
    opened.push(core)
    const registered = await core.registerHostTools({
      enable: ["question"],
      tools: [
        {
          name: "open_ticket",
          description: "Open a ticket in the host's tracker",
          inputSchema: { type: "object", properties: { title: { type: "string" } }, required: ["title"] },
          outputSchema: { type: "object", properties: { ticket: { type: "integer" } }, required: ["ticket"] },
        },
      ],
    })
    expect(registered.map((tool) => tool.name)).toEqual(["question", "open_ticket"])
    expect((await core.hostTools()).map((tool) => tool.name)).toEqual(["question", "open_ticket"])

    const session = core.session({ watch: false })
    expect((await session.definitions()).map((definition) => definition.name)).toEqual(expect.arrayContaining(["question", "open_ticket"]))
    const seen: Array<HostCall> = []
    const answered = await session.call(
      { name: "question", input: QUESTION },
      {
        onHostCall: (call) => {
          seen.push(call)
          return { output: { answers: [["3000"]] } }
        },
      },
    )
    expect(seen).toEqual([expect.objectContaining({ name: "question", input: QUESTION, sessionID: session.id })])
    expect(answered).toMatchObject({ status: "success", structured: { answers: [["3000"]] } })

    // A host that throws: the model reads its message as the tool's failure.
    const failed = await session.call(
      { name: "open_ticket", input: { title: "Flaky test" } },
      {
        onHostCall: () => {
          throw new Error("The tracker refused the ticket: project is archived.")
        },
      },
    )
    expect(failed).toMatchObject({
      status: "error",
      error: { kind: "failure", message: "open_ticket: The tracker refused the ticket: project is archived." },
    })

    // Removing it: the session's turn goes stale, and a second removal finds nothing.
    expect(await core.removeHostTool("open_ticket")).toBe(true)
    expect(await core.removeHostTool("open_ticket")).toBe(false)
    const stale = await session.call({ name: "open_ticket", input: { title: "x" } }, { onHostCall: () => ({ output: { ticket: 1 } }) })
    expect(stale.error?.kind).toBe("stale")
    expect((await session.definitions()).some((definition) => definition.name === "open_ticket")).toBe(false)
    session.close()
  })

  test("a host that reconnects lists what waits and answers it; a bad answer and a second one are typed refusals", async () => {
    const box = sandbox()
    const core = await Core.spawn({ command: await binary(), location: box.location, env: { ...process.env, ...box.env }, stderr: "ignore" })
    opened.push(core)
    await core.registerHostTools({ enable: ["question"] })
    const bad = await core.registerHostTools({ enable: ["nope"] }).catch((error) => error)
    expect(bad).toBeInstanceOf(CoreError)
    expect(bad).toMatchObject({ status: 400, kind: "bad_request" })
    const shadow = await core
      .registerHostTools({ tools: [{ name: "read", description: "x", inputSchema: { type: "object" } }] })
      .catch((error) => error)
    expect(shadow).toMatchObject({ status: 409, kind: "conflict" })

    const events = await core.events()
    const session = core.session({ watch: false })
    // Settled as JSON: nothing on this connection answers the host call.
    const pending = session.call({ name: "question", input: QUESTION, toolCallID: "call_reconnect" })
    for await (const event of events) if (event.event === "host_call") break
    events.close()

    const other = Core.connect({ url: core.url, token: core.token })
    const [waiting] = await other.hostCalls()
    expect(waiting).toMatchObject({ name: "question", toolCallID: "call_reconnect", input: QUESTION })
    const invalid = await other.answerHostCall(waiting!.id, { output: { answers: "8080" } }).catch((error) => error)
    expect(invalid).toMatchObject({ status: 400, kind: "bad_request" })
    await other.answerHostCall(waiting!.id, { output: { answers: [["8080"]] } })
    const twice = await other.answerHostCall(waiting!.id, { output: { answers: [["3000"]] } }).catch((error) => error)
    expect(twice).toMatchObject({ status: 409, kind: "conflict" })
    expect(await pending).toMatchObject({ status: "success", structured: { answers: [["8080"]] } })
    session.close()
  })
})
