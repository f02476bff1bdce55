// The tests' shared latch and the gate tool that waits at it: requests are held until the test releases the latch
// and answered at once after; `entered` resolves as tools arrive; closing releases whoever still waits; a gate
// tool's call waits at the latch in the sidecar, runs on once released, and cancelling it ends its wait.

import { describe, expect, test } from "bun:test"
import { inProcess, runs } from "../server/support"
import { Latch } from "./latch"
import { gateTool } from "./tools"

describe("Latch", () => {
  test("holds every request until released, counts arrivals, and answers later ones at once", async () => {
    await using latch = Latch.open()
    let answered = 0
    const first = fetch(latch.url).then((response) => (answered++, response.text()))
    const second = fetch(latch.url).then((response) => (answered++, response.text()))
    await latch.entered(2)
    expect(latch.arrivals()).toBe(2)
    expect(answered).toBe(0)
    latch.release()
    expect(await Promise.all([first, second])).toEqual(["open", "open"])
    expect(await (await fetch(latch.url)).text()).toBe("open")
    expect(latch.arrivals()).toBe(3)
  })

  test("closing releases whoever still waits, then stops the server", async () => {
    await using latch = Latch.open()
    const waiting = fetch(latch.url).then((response) => response.text())
    await latch.entered()
    await latch.close()
    expect(await waiting).toBe("open")
    await expect(fetch(latch.url)).rejects.toThrow()
  })
})

describe("gateTool", () => {
  test("a call waits at the latch until it is released, then answers; it records its run", async () => {
    await using latch = Latch.open()
    const sidecar = await inProcess({ "tools/gate.ts": gateTool(latch, { record: "gate", progress: { message: "waiting" } }) })
    const { turnID } = await sidecar.turn()
    let settled = false
    const call = sidecar.settle(turnID, { name: "gate", input: {} }).then((answer) => ((settled = true), answer))
    await latch.entered()
    expect(runs(sidecar.box, "gate")).toBe(1)
    expect(settled).toBe(false)
    latch.release()
    expect((await call).body).toMatchObject({ status: "success", structured: "opened" })
  })

  test("cancelling the call ends its wait: it settles cancelled while the latch stays shut", async () => {
    await using latch = Latch.open()
    const sidecar = await inProcess({ "tools/gate.ts": gateTool(latch) })
    const { turnID } = await sidecar.turn()
    const call = sidecar.settle(turnID, { name: "gate", input: {}, sessionID: "ses_gate", toolCallID: "call_gate" })
    await latch.entered()
    expect((await sidecar.json("POST", "/v1/calls/ses_gate/call_gate/cancel")).status).toBe(202)
    expect((await call).body.status).toBe("cancelled")
  })
})
