// Plugins in the sidecar, in process (DESIGN §12): one installation per Location however many first requests race
// for it, hot reload of a plugin file (its Scope closed before a fresh installation; older turns stale; the
// Location's tools/*.ts still win), and every plugin Scope closed when a Location is let go or the sidecar stops.

import { describe, expect, test } from "bun:test"
import { readFileSync, watch, writeFileSync } from "node:fs"
import { join } from "node:path"
import { IMPORTS, inProcess, sandbox } from "./support"

/** A plugin registering `greet`, logging each installation and release to `<location>/plugin.log`. */
const plugin = (reply: string) => `import { Plugin, Tool } from "@core/tool"
import { Effect, Schema } from "effect"
import { appendFileSync } from "node:fs"
import { join } from "node:path"
const log = (line: string) => appendFileSync(join(import.meta.dir, "..", "plugin.log"), line + "\\n")
export default Plugin.make({
  install: Effect.gen(function* () {
    const tools = yield* Plugin.Tools
    yield* Effect.acquireRelease(Effect.sync(() => log("install ${reply}")), () => Effect.sync(() => log("release ${reply}")))
    yield* tools.register({
      greet: Tool.make({
        description: "Greet",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () => Effect.succeed("${reply}"),
      }),
      plugged: Tool.make({
        description: "Plugged",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () => Effect.succeed("plugged ${reply}"),
      }),
    })
  }),
})
`

/** Resolves once `<directory>/plugin.log` has `lines` lines, watching the directory for the write. */
const changedTo = (directory: string, lines: number) =>
  new Promise<void>((resolve) => {
    const watcher = watch(directory, () => {
      if (logOf(directory).length >= lines) {
        watcher.close()
        resolve()
      }
    })
    if (logOf(directory).length >= lines) {
      watcher.close()
      resolve()
    }
  })

const logOf = (directory: string): ReadonlyArray<string> =>
  readFileSync(join(directory, "plugin.log"), "utf8").trim().split("\n")

describe("plugins in the sidecar", () => {
  test("concurrent first requests for a Location install its plugins once", async () => {
    const other = sandbox({ "plugins/greeter.ts": plugin("v1") })
    const sidecar = await inProcess({}, { roots: [other.location] })
    const headers = { "x-core-location": other.location }
    const turns = await Promise.all(Array.from({ length: 12 }, () => sidecar.turn(undefined, headers)))
    for (const turn of turns) expect(turn.definitions.map((definition) => definition.name)).toContain("greet")
    const settled = await sidecar.settle(turns[3]!.turnID, { name: "greet", input: {} }, headers)
    expect(settled.body.structured).toBe("v1")
    expect(logOf(other.location)).toEqual(["install v1"])
    await sidecar.close()
    expect(logOf(other.location)).toEqual(["install v1", "release v1"])
  })

  test("a changed plugin file is installed afresh after its Scope closes; older turns see its tools stale", async () => {
    const sidecar = await inProcess(
      {
        "plugins/greeter.ts": plugin("v1"),
        "tools/greet.ts": `${IMPORTS}export default Tool.make({ description: "Greet from tools", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("tool") })\n`,
      },
      { watch: true },
    )
    const events = await sidecar.events()
    const old = await sidecar.turn()
    expect((await sidecar.settle(old.turnID, { name: "plugged", input: {} })).body.structured).toBe("plugged v1")
    expect((await sidecar.settle(old.turnID, { name: "greet", input: {} })).body.structured).toBe("tool")

    writeFileSync(join(sidecar.box.location, "plugins/greeter.ts"), plugin("v2"))
    const changed = await events.until("tools.changed")
    expect((changed.data as { files: Array<string> }).files).toContain(join(sidecar.box.location, "plugins/greeter.ts"))
    expect(logOf(sidecar.box.location)).toEqual(["install v1", "release v1", "install v2"])

    const stale = await sidecar.settle(old.turnID, { name: "plugged", input: {} })
    expect(stale.body.error.kind).toBe("stale")
    const fresh = await sidecar.turn()
    expect((await sidecar.settle(fresh.turnID, { name: "plugged", input: {} })).body.structured).toBe("plugged v2")
    // The Location's own tool file still wins over the reinstalled plugin's tool of the same name.
    expect((await sidecar.settle(fresh.turnID, { name: "greet", input: {} })).body.structured).toBe("tool")
    await events.close()
    await sidecar.close()
    expect(logOf(sidecar.box.location)).toEqual(["install v1", "release v1", "install v2", "release v2"])
  })

  test("a plugin file that now fails to install is a diagnostic, and its tools go", async () => {
    const sidecar = await inProcess({ "plugins/greeter.ts": plugin("v1") }, { watch: true })
    const events = await sidecar.events()
    writeFileSync(
      join(sidecar.box.location, "plugins/greeter.ts"),
      `import { Plugin } from "@core/tool"\nimport { Effect } from "effect"\nexport default Plugin.make({ install: Effect.die("broken") })\n`,
    )
    const diagnostic = await events.until("diagnostic")
    expect(diagnostic.data).toEqual({ file: join(sidecar.box.location, "plugins/greeter.ts"), message: expect.stringContaining("failed to install") })
    const turn = await sidecar.turn()
    expect(turn.definitions.map((definition) => definition.name)).not.toContain("plugged")
    expect(logOf(sidecar.box.location)).toEqual(["install v1", "release v1"])
    await events.close()
    await sidecar.close()
  })

  test("a Location let go closes its plugin Scopes", async () => {
    const other = sandbox({ "plugins/greeter.ts": plugin("v1") })
    const third = sandbox()
    let now = 0
    const sidecar = await inProcess({}, { roots: [other.location, third.location], locations: { max: 0, now: () => now } })
    await sidecar.turn(undefined, { "x-core-location": other.location })
    expect(logOf(other.location)).toEqual(["install v1"])
    now += 1000
    await sidecar.turn(undefined, { "x-core-location": third.location })
    // Letting go runs beside the request that caused it: wait for its release line.
    await changedTo(other.location, 2)
    expect(logOf(other.location)).toEqual(["install v1", "release v1"])
    await sidecar.close()
    // Shutting down finds nothing more to release: the let-go Location released its plugin once, and only once.
    expect(logOf(other.location)).toEqual(["install v1", "release v1"])
  })

  test("$CORE_HOME's plugins install in each Location before the Location's own", async () => {
    const sidecar = await inProcess({ "plugins/greeter.ts": plugin("own") }, { home: { "plugins/greeter.ts": plugin("home") } })
    const turn = await sidecar.turn()
    expect((await sidecar.settle(turn.turnID, { name: "greet", input: {} })).body.structured).toBe("own")
    expect(logOf(sidecar.box.home)).toEqual(["install home"])
    expect(logOf(sidecar.box.location)).toEqual(["install own"])
    await sidecar.close()
    expect(logOf(sidecar.box.home)).toEqual(["install home", "release home"])
  })
})
