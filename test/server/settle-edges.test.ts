// What the settlement asks of the HTTP edge, in process: a tool whose execute is not an Effect is answered (500,
// operational, with the fix) over JSON and SSE and never hangs; a structured value dropped by the bound is served
// back with `?part=structured`.

import { describe, expect, test } from "bun:test"
import { EventReader, IMPORTS, inProcess } from "./support"

const PROMISE = `${IMPORTS}
export default Tool.make({
  description: "Returns a Promise instead of an Effect",
  input: Schema.Struct({}),
  output: Schema.String,
  // @ts-expect-error: the slip this test is about
  execute: async () => "never an Effect",
})
`

const ROWS = `${IMPORTS}
export default Tool.make({
  description: "Many rows, with a one-line summary for the model",
  input: Schema.Struct({ n: Schema.Finite }),
  output: Schema.Struct({ rows: Schema.Array(Schema.Finite) }),
  execute: (input) => Effect.succeed({ rows: Array.from({ length: input.n }, (_, i) => i) }),
  toModelOutput: ({ input }) => input.n + " rows",
})
`

describe("a tool whose execute returns a Promise", () => {
  test("is answered as an operational failure that says to use Effect.promise, not left hanging", async () => {
    const sidecar = await inProcess({ "tools/promised.ts": PROMISE })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    const answer = await sidecar.settle(turnID, { name: "promised", input: {}, sessionID: "ses_p", toolCallID: "call_p" })
    expect(answer.status).toBe(500)
    expect(answer.body.error.kind).toBe("operational")
    expect(answer.body.error.message).toContain("returned a Promise, not an Effect")
    expect(answer.body.error.message).toContain("Effect.promise")
    expect(answer.body.error.message).toContain("Effect.tryPromise")
    // Hosts watching /v1/events see the call end, with the same message.
    expect((await events.next()).event).toBe("call.started")
    expect(await events.next()).toMatchObject({
      event: "call.failed",
      data: { toolCallID: "call_p", tool: "promised", message: answer.body.error.message },
    })
    // Recorded as failed: settling it again replays as interrupted and runs nothing.
    const again = await sidecar.settle(turnID, { name: "promised", input: {}, sessionID: "ses_p", toolCallID: "call_p" })
    expect(again.status).toBe(200)
    expect(again.body.error.kind).toBe("interrupted")
    await sidecar.close()
  })

  test("over SSE, the stream ends with an error event carrying the same message", async () => {
    const sidecar = await inProcess({ "tools/promised.ts": PROMISE })
    const { turnID } = await sidecar.turn()
    const response = await sidecar.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: { sessionID: "ses_s", assistantMessageID: "msg_s", toolCallID: "call_s", name: "promised", input: {} },
      headers: { accept: "text/event-stream" },
    })
    const events = new EventReader(response)
    const event = await events.next()
    expect(event.event).toBe("error")
    expect(event.data.error.kind).toBe("operational")
    expect(event.data.error.message).toContain("Effect.promise")
    await sidecar.close()
  })
})

describe("GET /v1/outputs/{id}?part=structured", () => {
  test("serves the structured value the bound dropped, as JSON; the settlement says null", async () => {
    const sidecar = await inProcess({ "tools/rows.ts": ROWS, "core.json": '{ "output": { "maxBytes": 1024 } }' })
    const { turnID } = await sidecar.turn()
    const settled = await sidecar.settle(turnID, { name: "rows", input: { n: 2_000 } })
    expect(settled.body.content).toEqual([{ type: "text", text: "2000 rows" }])
    expect(settled.body.structured).toBeNull()
    const [ref] = settled.body.outputs
    const structured = await sidecar.fetch("GET", `/v1/outputs/${ref.id}?part=structured`)
    expect(structured.status).toBe(200)
    expect(structured.headers.get("content-type")).toContain("application/json")
    expect(await structured.json()).toEqual({ rows: Array.from({ length: 2_000 }, (_, i) => i) })
    const wrong = await sidecar.json("GET", `/v1/outputs/${ref.id}?part=everything`)
    expect(wrong.status).toBe(400)
    expect(wrong.body.error.message).toContain('"text" or "structured"')
    await sidecar.close()
  })
})
