// Two sidecars (`core serve`) serving one Location, with separate data directories and the same CORE_STORE_URL,
// as two hosts of a fleet: the same call posted to both runs once and both answer its settlement; a sidecar
// killed mid-call leaves the call to be answered `interrupted` by the other once its lease lapses, never run again.

import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { freshDatabase } from "../support/postgres"
import { tempDir } from "../support/temp"
import { callBody, EventReader, sandbox, serve } from "./support"

const fleet = async () => {
  const box = sandbox({ "core.json": JSON.stringify({ permission: { "*": "allow" } }) })
  const { pgbouncer } = await freshDatabase()
  const host = () => serve(box, [], { CORE_STORE_URL: pgbouncer, CORE_DATA_DIR: tempDir("core-data-"), CORE_LEASE_MS: "1500" })
  return { box, a: await host(), b: await host() }
}

const call = (command: string) => ({ name: "bash", input: { command }, sessionID: "wf_42", toolCallID: "step_1" })

const runs = (location: string) => readFileSync(join(location, "ran.txt"), "utf8").split("\n").filter((line) => line !== "")

describe("two sidecars sharing a Postgres store", () => {
  test("the same call posted to both runs once, and both answer the same settlement", async () => {
    const { box, a, b } = await fleet()
    const [turnA, turnB] = await Promise.all([a.turn(), b.turn()])
    const command = "echo ran >> ran.txt; sleep 1; echo done"
    const [fromA, fromB] = await Promise.all([a.settle(turnA.turnID, call(command)), b.settle(turnB.turnID, call(command))])
    expect(fromA.status).toBe(200)
    expect(fromB.status).toBe(200)
    expect(fromA.body).toMatchObject({ tool: "bash", callID: "step_1", status: "success" })
    expect(fromB.body).toEqual(fromA.body)
    // One of them ran it; the other answered what was recorded.
    expect([fromA.headers.get("x-core-replayed"), fromB.headers.get("x-core-replayed")].sort()).toEqual([null, "true"])
    expect(runs(box.location)).toEqual(["ran"])
  }, 120_000)

  test("a sidecar killed mid-call: the other answers interrupted once the lease lapses, and the call never runs again", async () => {
    const { box, a, b } = await fleet()
    const command = "echo ran >> ran.txt; echo running; sleep 20; echo done"
    const turnA = await a.turn()
    // Killed once the command is under way: its progress says it has run its first steps.
    const stream = new EventReader(
      await a.fetch("POST", `/v1/turns/${turnA.turnID}/calls`, { body: callBody(call(command)), headers: { accept: "text/event-stream" } }),
    )
    await stream.until("progress", (data) => String(data.message).includes("running"))
    a.child.kill("SIGKILL")
    await a.child.exited
    const turnB = await b.turn()
    const fromB = await b.settle(turnB.turnID, call(command))
    expect(fromB.status).toBe(200)
    expect(fromB.body).toMatchObject({ status: "error", error: { kind: "interrupted" } })
    const again = await b.settle(turnB.turnID, call(command))
    expect(again.body).toEqual(fromB.body)
    expect(runs(box.location)).toEqual(["ran"])
  }, 120_000)
})
