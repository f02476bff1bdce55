// Replaying a recorded call through the HTTP API, attacked as a hostile host or model would: the same ids asked by
// another agent (a `plan` denied `read`) or under another tool name, as JSON and as an event stream, and the same
// ids in another Location served by the same sidecar. A record is only ever its own call's.

import { expect, test } from "bun:test"
import { realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { tempDir } from "../support/temp"
import { EventReader, inProcess } from "./support"

const SECRET = "token=sk_live_77aa"
const CONFIG = JSON.stringify({ permission: { "*": "allow" }, agents: { plan: { permission: { read: "deny" } } } })

test("a call id replayed by another agent or tool is a conflict, as JSON and as events; another Location runs its own", async () => {
  const other = tempDir()
  writeFileSync(join(other, "notes.txt"), "other notes\n")
  writeFileSync(join(other, "core.json"), CONFIG)
  const sidecar = await inProcess({ "notes.txt": `${SECRET}\n`, "core.json": CONFIG }, { roots: [other] })
  const ids = { sessionID: "ses_shared", toolCallID: "call_0" }

  const build = await sidecar.turn()
  const first = await sidecar.settle(build.turnID, { name: "read", input: { filePath: "notes.txt" }, ...ids })
  expect(JSON.stringify(first.body)).toContain(SECRET)

  const plan = await sidecar.turn("plan")
  for (const [name, input] of [["list", {}], ["read", { filePath: "notes.txt" }]] as const) {
    const answer = await sidecar.settle(plan.turnID, { name, input, ...ids })
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ tool: name, status: "error", error: { kind: "conflict" } })
    expect(JSON.stringify(answer.body)).not.toContain(SECRET)
    expect(answer.headers.get("x-core-replayed")).toBeNull()
  }
  const streamed = await sidecar.fetch("POST", `/v1/turns/${plan.turnID}/calls`, {
    body: { ...ids, assistantMessageID: "msg", name: "read", input: { filePath: "notes.txt" } },
    headers: { accept: "text/event-stream" },
  })
  expect(streamed.headers.get("x-core-replayed")).toBeNull()
  const settlement = await new EventReader(streamed).until("settlement")
  expect(settlement.data).toMatchObject({ status: "error", error: { kind: "conflict" } })
  expect(JSON.stringify(settlement.data)).not.toContain(SECRET)

  // The same ids in another Location are that Location's own call, which runs.
  const elsewhere = { "x-core-location": realpathSync(other) }
  const there = await sidecar.turn(undefined, elsewhere)
  const own = await sidecar.settle(there.turnID, { name: "read", input: { filePath: "notes.txt" }, ...ids }, elsewhere)
  expect(own.headers.get("x-core-replayed")).toBeNull()
  expect(JSON.stringify(own.body)).toContain("other notes")
  expect(JSON.stringify(own.body)).not.toContain(SECRET)
  const recorded = await sidecar.json("GET", `/v1/settlements/${ids.sessionID}/${ids.toolCallID}`, { headers: elsewhere })
  expect(JSON.stringify(recorded.body)).toContain("other notes")
  // And the first Location's record is still the first caller's.
  const replay = await sidecar.settle(build.turnID, { name: "read", input: { filePath: "notes.txt" }, ...ids })
  expect(replay.headers.get("x-core-replayed")).toBe("true")
  expect(JSON.stringify(replay.body)).toContain(SECRET)
})
