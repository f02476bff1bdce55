// Law 12 against a burst: calls cancelled while they wait their turn to be prepared (Preparing) were answered
// `cancelled` and recorded nothing, so the same ids posted again ran the call. Every cancelled call is recorded, and
// posting its ids again replays that record and runs nothing, through the compiled sidecar.

import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { sandbox, serve } from "./support"

const CALLS = 30

test(`${CALLS} concurrent calls cancelled while they wait their turn: each is recorded as it was answered, and never runs after`, async () => {
  const box = sandbox({ "core.json": JSON.stringify({ permission: { "*": "allow" } }) })
  const server = await serve(box)
  const { turnID } = await server.turn()
  expect((await server.settle(turnID, { name: "bash", input: { command: "true" } })).body.status).toBe("success")
  const call = (index: number, command: string) =>
    server.settle(turnID, { name: "bash", input: { command }, sessionID: "ses_burst", toolCallID: `call_${index}` })
  const first = Array.from({ length: CALLS }, (_, index) => call(index, `sleep 1; echo first-${index} >> runs.txt`))
  await Bun.sleep(150)
  const cancels = await Promise.all(
    Array.from({ length: CALLS }, (_, index) => server.json("POST", `/v1/calls/ses_burst/call_${index}/cancel`)),
  )
  const answered = await Promise.all(first)
  // Some may have ended before their cancel came; most were cancelled, many of them before they began.
  expect(answered.filter((answer) => answer.body.status === "cancelled").length).toBeGreaterThan(CALLS / 2)
  expect(cancels.every((cancel) => cancel.status === 202 || cancel.status === 404)).toBe(true)
  for (const [index, answer] of answered.entries()) {
    const recorded = await server.json("GET", `/v1/settlements/ses_burst/call_${index}`)
    expect([index, recorded.status, recorded.body.status]).toEqual([index, 200, answer.body.status])
    const again = await call(index, `echo again-${index} >> runs.txt`)
    expect([index, again.headers.get("x-core-replayed"), again.body.status]).toEqual([index, "true", answer.body.status])
  }
  await Bun.sleep(1_200)
  let runs = ""
  try {
    runs = readFileSync(join(box.location, "runs.txt"), "utf8")
  } catch {
    // no call ran to its end
  }
  expect(runs).not.toContain("again-")
}, 120_000)
