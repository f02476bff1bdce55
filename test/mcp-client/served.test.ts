// MCP servers in a served Location (`core serve`): connected when the first turn is made, their tools in that
// turn, calls settled through the HTTP API, a server's own list_changed announced as tools.changed, a broken
// server reported as a diagnostic event, and every server process ended with the sidecar.

import { describe, expect, test } from "bun:test"
import { ProcessGroup } from "../../src/shell/process-group"
import { inProcess } from "../server/support"
import { BUN, FIXTURE } from "./support"

const coreJson = (servers: Record<string, unknown>) =>
  JSON.stringify({ mcp: servers, permission: { "fix_*": "allow" } })

describe("MCP servers in a served Location", () => {
  test("the first turn connects them; calls settle over the API; list_changed is announced; they end with the sidecar", async () => {
    const sidecar = await inProcess({ "core.json": coreJson({ fix: { command: [BUN, FIXTURE] } }) })
    const events = await sidecar.events()
    const first = await sidecar.turn()
    const names = first.definitions.map((definition: { name: string }) => definition.name)
    expect(names).toContain("fix_echo")
    expect(names).toContain("read")
    const echo = await sidecar.settle(first.turnID, { name: "fix_echo", input: { text: "served" } })
    expect(echo.body).toMatchObject({ status: "success", content: [{ type: "text", text: "echo: served" }] })

    await sidecar.settle(first.turnID, { name: "fix_grow", input: {} })
    const changed = await events.until("tools.changed")
    expect(changed.data).toEqual({ reason: "tools", files: [`${sidecar.box.location}/core.json`] })
    const stale = await sidecar.settle(first.turnID, { name: "fix_echo", input: { text: "again" } })
    expect(stale.body.error.kind).toBe("stale")
    const second = await sidecar.turn()
    expect(second.definitions.map((definition: { name: string }) => definition.name)).toContain("fix_extra")

    // A crash, then a call that starts the server again: registered afresh, announced the same way.
    const crashed = await sidecar.settle(second.turnID, { name: "fix_crash", input: {} })
    expect(crashed.body.error.message).toContain("exited with code 7")
    const restarted = await sidecar.settle(second.turnID, { name: "fix_echo", input: { text: "back" } })
    expect(restarted.body.content).toEqual([{ type: "text", text: "echo: back" }])
    expect((await events.until("tools.changed")).data.reason).toBe("tools")
    const third = await sidecar.turn()
    const pid = Number((await sidecar.settle(third.turnID, { name: "fix_pid", input: {} })).body.content[0].text)
    expect(ProcessGroup.stat(pid)?.state).not.toBe("Z")

    await events.close()
    await sidecar.close()
    const state = ProcessGroup.stat(pid)?.state
    expect(state === undefined || state === "Z").toBe(true)
  }, 30_000)

  test("a server that cannot start is a diagnostic event; the turn still offers the rest", async () => {
    const sidecar = await inProcess({ "core.json": coreJson({ ghost: { command: ["/nonexistent/server"] } }) })
    const events = await sidecar.events()
    const turn = await sidecar.turn()
    expect(turn.definitions.map((definition: { name: string }) => definition.name)).toContain("read")
    const diagnostic = await events.until("diagnostic")
    expect(diagnostic.data.message).toBe(
      'MCP server "ghost": command "/nonexistent/server" not found (check the path, or that it is installed and on PATH)',
    )
    expect(sidecar.log.join("\n")).toContain('MCP server "ghost"')
    await events.close()
    await sidecar.close()
  }, 30_000)
})
