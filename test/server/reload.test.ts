// Hot reload in process: the sidecar watches each served Location's tools/*.ts and core.json, and CORE_HOME's. A
// changed tool file is registered afresh (turns that advertised it see it as stale); a file that no longer loads is
// reported and unregistered; a changed core.json rebuilds the Location's services (old turns are gone), and an
// invalid one is reported while the last good one stays. Every wait is on an event.

import { describe, expect, test } from "bun:test"
import { rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Latch } from "../support/latch"
import { gateTool } from "../support/tools"
import { IMPORTS, inProcess } from "./support"

const tool = (reply: string) => `${IMPORTS}
export default Tool.make({
  description: "Answer ${reply}",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed("${reply}"),
})
`

/** Reports progress, then waits at `latch`. */
const GATE = (latch: Latch.Interface) => gateTool(latch, { progress: { message: "waiting" } })

const names = (definitions: Array<{ name: string }>) => definitions.map((definition) => definition.name)

describe("hot reload of tool files", () => {
  test("a changed tool file is registered afresh: old turns get stale for it, new turns run the new code", async () => {
    const sidecar = await inProcess({ "tools/hello.ts": tool("v1"), "tools/other.ts": tool("other") }, { watch: true })
    const events = await sidecar.events()
    const old = await sidecar.turn()
    expect((await sidecar.settle(old.turnID, { name: "hello", input: {} })).body.structured).toBe("v1")

    writeFileSync(join(sidecar.box.location, "tools/hello.ts"), tool("v2"))
    const changed = await events.until("tools.changed")
    expect(changed.data).toEqual({ reason: "tools", files: [join(sidecar.box.location, "tools/hello.ts")] })

    const stale = await sidecar.settle(old.turnID, { name: "hello", input: {} })
    expect(stale.body.error).toEqual({ kind: "stale", message: expect.any(String) })
    expect((await sidecar.settle(old.turnID, { name: "other", input: {} })).body.structured).toBe("other")
    const fresh = await sidecar.turn()
    expect((await sidecar.settle(fresh.turnID, { name: "hello", input: {} })).body.structured).toBe("v2")
    await events.close()
  })

  test("a file that now fails to load is a diagnostic and loses its registration; a new file appears", async () => {
    const sidecar = await inProcess({ "tools/hello.ts": tool("v1") }, { watch: true })
    const events = await sidecar.events()
    const old = await sidecar.turn()

    writeFileSync(join(sidecar.box.location, "tools/hello.ts"), "export default {{ broken")
    const diagnostic = await events.until("diagnostic")
    expect(diagnostic.data).toEqual({ file: join(sidecar.box.location, "tools/hello.ts"), message: expect.stringContaining("syntax error") })
    await events.until("tools.changed")
    expect(names((await sidecar.turn()).definitions)).not.toContain("hello")
    expect((await sidecar.settle(old.turnID, { name: "hello", input: {} })).body.error.kind).toBe("stale")
    expect(sidecar.log.some((line) => line.includes("hello.ts") && line.includes("syntax error"))).toBe(true)

    writeFileSync(join(sidecar.box.location, "tools/added.ts"), tool("added"))
    await events.until("tools.changed", (data) => data.files.some((file: string) => file.endsWith("added.ts")))
    const turn = await sidecar.turn()
    expect((await sidecar.settle(turn.turnID, { name: "added", input: {} })).body.structured).toBe("added")

    rmSync(join(sidecar.box.location, "tools/added.ts"))
    await events.until("tools.changed", (data) => data.files.some((file: string) => file.endsWith("added.ts")))
    expect(names((await sidecar.turn()).definitions)).not.toContain("added")
    await events.close()
  })

  test("a change to CORE_HOME's tools reaches every Location's turns", async () => {
    const sidecar = await inProcess({}, { home: { "tools/shared.ts": tool("home v1") }, watch: true })
    const events = await sidecar.events()
    const old = await sidecar.turn()
    expect((await sidecar.settle(old.turnID, { name: "shared", input: {} })).body.structured).toBe("home v1")
    writeFileSync(join(sidecar.box.home, "tools/shared.ts"), tool("home v2"))
    expect((await events.until("tools.changed")).data.files).toEqual([join(sidecar.box.home, "tools/shared.ts")])
    expect((await sidecar.settle(old.turnID, { name: "shared", input: {} })).body.error.kind).toBe("stale")
    expect((await sidecar.settle((await sidecar.turn()).turnID, { name: "shared", input: {} })).body.structured).toBe("home v2")
    await events.close()
  })

  test("a tool file too deep for the transpiler is a diagnostic, and reload goes on", async () => {
    const sidecar = await inProcess({ "tools/hello.ts": tool("v1") }, { watch: true })
    const events = await sidecar.events()
    writeFileSync(join(sidecar.box.location, "tools/hello.ts"), `export default ${"[".repeat(50_000)}`)
    const diagnostic = await events.until("diagnostic")
    expect(diagnostic.data.file).toBe(join(sidecar.box.location, "tools/hello.ts"))
    await events.until("tools.changed")
    writeFileSync(join(sidecar.box.location, "tools/hello.ts"), tool("v2"))
    await events.until("tools.changed", (data) => data.files.some((file: string) => file.endsWith("hello.ts")))
    const turn = await sidecar.turn()
    expect((await sidecar.settle(turn.turnID, { name: "hello", input: {} })).body.structured).toBe("v2")
    await events.close()
  })
})

describe("hot reload of core.json", () => {
  test("a changed core.json rebuilds the Location: its rules apply to new turns and old turns are gone", async () => {
    const sidecar = await inProcess({ "tools/hello.ts": tool("v1") }, { watch: true })
    const events = await sidecar.events()
    const old = await sidecar.turn()
    writeFileSync(join(sidecar.box.location, "core.json"), '{ "permission": { "hello": "deny" } }')
    const changed = await events.until("tools.changed")
    expect(changed.data).toEqual({ reason: "config", files: [join(sidecar.box.location, "core.json")] })
    expect(names((await sidecar.turn()).definitions)).not.toContain("hello")
    expect((await sidecar.settle(old.turnID, { name: "hello", input: {} })).status).toBe(404)
    await events.close()
  })

  test("a tool file changed together with core.json is loaded afresh by the rebuilt Location", async () => {
    const sidecar = await inProcess({ "tools/hello.ts": tool("v1") }, { watch: true })
    const events = await sidecar.events()
    writeFileSync(join(sidecar.box.location, "tools/hello.ts"), tool("v2"))
    writeFileSync(join(sidecar.box.location, "core.json"), '{ "permission": { "hello": "allow" } }')
    await events.until("tools.changed", (data) => data.reason === "config")
    const turn = await sidecar.turn()
    expect((await sidecar.settle(turn.turnID, { name: "hello", input: {} })).body.structured).toBe("v2")
    await events.close()
  })

  test("an invalid core.json is a diagnostic and the last good configuration stays", async () => {
    const sidecar = await inProcess({ "tools/hello.ts": tool("v1"), "core.json": '{ "permission": { "hello": "allow" } }' }, { watch: true })
    const events = await sidecar.events()
    const turn = await sidecar.turn()
    writeFileSync(join(sidecar.box.location, "core.json"), '{ "permission": { "hello": "sometimes" } }')
    const diagnostic = await events.until("diagnostic")
    expect(diagnostic.data.file).toBe(join(sidecar.box.location, "core.json"))
    expect(diagnostic.data.message).toContain("permission.hello")
    expect((await sidecar.settle(turn.turnID, { name: "hello", input: {} })).body.structured).toBe("v1")
    await events.close()
  })

  test("hostile core.json content (deep nesting, a NUL) is a located diagnostic each time, and reload goes on", async () => {
    const sidecar = await inProcess({ "tools/hello.ts": tool("v1"), "core.json": '{ "permission": { "hello": "allow" } }' }, { watch: true })
    const events = await sidecar.events()
    const file = join(sidecar.box.location, "core.json")
    writeFileSync(file, `{ "permission": ${"[".repeat(50_000)}`)
    const deep = await events.until("diagnostic")
    expect(deep.data).toEqual({ file, message: expect.stringContaining(`${file}:1:`) })
    expect(deep.data.message).toContain("nested deeper than")

    writeFileSync(file, '{ "permission": { "hello\\u0000": "deny" } }')
    const nul = await events.until("diagnostic")
    expect(nul.data.message).toContain("NUL character")

    writeFileSync(file, '{ "permission": { "hello": "deny" } }')
    await events.until("tools.changed", (data) => data.reason === "config")
    expect(names((await sidecar.turn()).definitions)).not.toContain("hello")
    await events.close()
  })

  test("a call running when core.json changes finishes, and its pending ask stays answerable", async () => {
    await using latch = Latch.open()
    const sidecar = await inProcess({ "tools/gate.ts": GATE(latch), "tools/hello.ts": tool("v1"), "core.json": '{ "permission": { "hello": "ask" } }' }, { watch: true })
    const events = await sidecar.events()
    const { turnID } = await sidecar.turn()
    const gated = sidecar.settle(turnID, { name: "gate", input: {} })
    await events.until("call.progress")
    const asking = sidecar.settle(turnID, { name: "hello", input: {} })
    const asked = await events.until("permission.asked")

    writeFileSync(join(sidecar.box.location, "core.json"), '{ "permission": { "hello": "ask", "gate": "allow" } }')
    await events.until("tools.changed")
    expect((await sidecar.json("GET", "/v1/permissions")).body.map((request: { id: string }) => request.id)).toEqual([asked.data.id])
    expect((await sidecar.json("POST", `/v1/permissions/${asked.data.id}/reply`, { body: { reply: "once" } })).status).toBe(200)
    expect((await asking).body.structured).toBe("v1")
    latch.release()
    expect((await gated).body.structured).toBe("opened")
    await events.close()
  })
})
