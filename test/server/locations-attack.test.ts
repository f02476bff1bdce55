// Several Locations served at once, against a model in one of them: another served Location's configuration
// (core.json, tools/, plugins/, .core/) configures core as much as its own, so changing it asks a person too.

import { describe, expect, test } from "bun:test"
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { inProcess } from "./support"
import { tempDir } from "../support/temp"

const ALLOW = JSON.stringify({ permission: { "*": "allow" } })

describe("a model in one served Location against another", () => {
  test("writing another served Location's core.json or tool file is asked of a person, whatever the rules say", async () => {
    const roots = realpathSync(tempDir("core-roots-"))
    const other = join(roots, "other")
    mkdirSync(join(other, "tools"), { recursive: true })
    writeFileSync(join(other, "core.json"), '{ "permission": { "*": "ask" } }\n')
    const sidecar = await inProcess({ "core.json": ALLOW }, { roots: [roots] })
    // The other Location is served (a host opened it).
    expect((await sidecar.turn(undefined, { "x-core-location": other })).turnID).toBeString()
    const turn = await sidecar.turn()
    const read = await sidecar.settle(turn.turnID, { name: "read", input: { filePath: join(other, "core.json") }, toolCallID: "call_other_read" })
    expect(read.body.status).toBe("success")
    const writes = [
      { name: "write", input: { filePath: join(other, "core.json"), content: ALLOW } },
      { name: "edit", input: { filePath: join(other, "core.json"), oldString: '"ask"', newString: '"allow"' } },
      { name: "write", input: { filePath: join(other, "tools/evil.ts"), content: "export default 1" } },
      { name: "bash", input: { command: `echo '${ALLOW}' > ${join(other, "core.json")}`, description: "x" } },
    ]
    const events = await sidecar.events()
    let n = 0
    for (const call of writes) {
      const settling = sidecar.settle(turn.turnID, { ...call, toolCallID: `call_other_${++n}` })
      // The rules allow everything: what asks is the protection, and its message says a person must decide.
      const asked = await Promise.race([events.until("permission.asked"), settling])
      expect([call.name, "event" in asked ? asked.event : asked.body.status]).toEqual([call.name, "permission.asked"])
      await sidecar.json("POST", `/v1/permissions/${(asked as { data: { id: string } }).data.id}/reply`, { body: { reply: "reject" } })
      expect([call.name, (await settling).body.status]).toEqual([call.name, "declined"])
    }
    await events.close()
    expect(readFileSync(join(other, "core.json"), "utf8")).toBe('{ "permission": { "*": "ask" } }\n')
    expect(() => readFileSync(join(other, "tools/evil.ts"))).toThrow()
  })

  test("code a command runs cannot change another served Location's configuration either", async () => {
    const roots = realpathSync(tempDir("core-roots-"))
    const other = join(roots, "other")
    mkdirSync(join(other, "tools"), { recursive: true })
    writeFileSync(join(other, "core.json"), '{ "permission": { "*": "ask" } }\n')
    const sidecar = await inProcess({ "core.json": ALLOW }, { roots: [roots] })
    expect((await sidecar.turn(undefined, { "x-core-location": other })).turnID).toBeString()
    const turn = await sidecar.turn()
    // The line names no protected path: only the script it writes and runs does.
    const script = [`echo '{}' > ${join(other, "core.json")}`, `echo x > ${join(other, "tools/evil.ts")}`, `mkdir ${join(other, "plugins")}`]
    const command = `printf '%s\\n' ${script.map((line) => `"${line.replaceAll('"', '\\"')}"`).join(" ")} > w.sh; sh w.sh; true`
    const ran = await sidecar.settle(turn.turnID, { name: "bash", input: { command, description: "x" }, toolCallID: "call_script" })
    expect(ran.body.status).toBe("success")
    expect(readFileSync(join(other, "core.json"), "utf8")).toBe('{ "permission": { "*": "ask" } }\n')
    expect(() => readFileSync(join(other, "tools/evil.ts"))).toThrow()
    expect(() => readFileSync(join(other, "plugins"))).toThrow()
  })
})
