// Plugins through the compiled binary (DESIGN §12): `@core/tool`'s Plugin served to plugin files, order and
// precedence ($CORE_HOME's plugins, the Location's, then tools/*.ts, also over a built-in's name), hooks in
// `core exec`, `core tools` and `core check`, diagnostics on stderr while the rest serves, the boundary and the
// shell producer as a plugin gets them, and every plugin Scope closed when `core exec` and `core serve` end.

import { beforeAll, describe, expect, test } from "bun:test"
import { existsSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { binary } from "../support/binary"
import { serve } from "../server/support"
import { core, exec, IMPORTS, sandbox, settlementOf, write } from "./fixture"

const PLUGIN_IMPORTS = `import { Plugin, Tool } from "@core/tool"
import { Effect, Schema } from "effect"
import { appendFileSync } from "node:fs"
import { join } from "node:path"
const log = (line: string) => appendFileSync(join(import.meta.dir, "..", "plugin.log"), line + "\\n")
`

/** A plugin registering `name` answering `reply`, logging its installation and release. */
const registering = (label: string, name: string, reply: string) => `${PLUGIN_IMPORTS}
export default Plugin.make({
  install: Effect.gen(function* () {
    const tools = yield* Plugin.Tools
    yield* Effect.acquireRelease(Effect.sync(() => log("install ${label}")), () => Effect.sync(() => log("release ${label}")))
    yield* tools.register({
      ${name}: Tool.make({ description: "Says ${reply}", input: Schema.Struct({ text: Schema.String }), output: Schema.String, execute: (input) => Effect.succeed("${reply} " + input.text) }),
    })
  }),
})
`

const HOOKS = `${PLUGIN_IMPORTS}
export default Plugin.make({
  install: Effect.succeed({
    tools: ["say*"],
    "tool.definition": (definition: Plugin.Definition) => ({ description: definition.description + " (audited)" }),
    "tool.execute.before": (call: Plugin.Before) =>
      (call.input as { text: string }).text === "forbidden"
        ? Effect.fail(new Plugin.Denied({ message: "The audit plugin refuses forbidden words." }))
        : (call.input as { text: string }).text === "crash"
          ? Effect.die("audit broke")
          : Effect.succeed({ input: { text: (call.input as { text: string }).text.toUpperCase() } }),
  }),
})
`

const logOf = (directory: string): ReadonlyArray<string> =>
  readFileSync(join(directory, "plugin.log"), "utf8").trim().split("\n")

beforeAll(async () => {
  await binary()
}, 300_000)

describe("plugins in core exec, tools and check", () => {
  test("order: $CORE_HOME's plugins, then the Location's by file name, then tools/*.ts; the latest wins", async () => {
    const box = sandbox(
      {
        "plugins/a.ts": registering("a", "say", "a"),
        "plugins/b.ts": registering("b", "say", "b"),
        "plugins/c.ts": registering("c", "shout", "c"),
        "tools/shout.ts": `${IMPORTS}export default Tool.make({ description: "Shout", input: Schema.Struct({ text: Schema.String }), output: Schema.String, execute: (input) => Effect.succeed("tool " + input.text) })\n`,
      },
      { "plugins/z.ts": registering("home", "say", "home") },
    )
    const said = await exec(box, "say", { text: "x" })
    expect(said.stderr).toBe("")
    expect(settlementOf(said).structured).toBe("b x")
    expect(settlementOf(await exec(box, "shout", { text: "x" })).structured).toBe("tool x")
    // core exec closes every plugin's Scope on its way out.
    expect(logOf(box.location)).toEqual(["install a", "install b", "install c", "release c", "release b", "release a"].concat(
      ["install a", "install b", "install c", "release c", "release b", "release a"],
    ))
    expect(logOf(box.home)).toEqual(["install home", "release home", "install home", "release home"])
  }, 60_000)

  test("hooks refuse, replace input and adjust definitions; core tools and core check say which apply", async () => {
    const box = sandbox({ "plugins/audit.ts": HOOKS, "plugins/say.ts": registering("say", "say", "said") })
    const replaced = await exec(box, "say", { text: "quiet" })
    expect(settlementOf(replaced).structured).toBe("said QUIET")

    const refused = await exec(box, "say", { text: "forbidden" })
    expect(refused.code).toBe(1)
    expect(settlementOf(refused).error).toEqual({ kind: "denied", message: "The audit plugin refuses forbidden words." })

    const crashed = await exec(box, "say", { text: "crash" })
    expect(crashed.code).toBe(3)
    expect(crashed.stdout).toBe("")
    expect(crashed.stderr).toContain("audit broke")

    const listed = await core(box, ["tools", "--json", "--location", box.location])
    const say = (JSON.parse(listed.stdout) as Array<{ name: string; description: string }>).find((tool) => tool.name === "say")
    expect(say!.description).toBe("Says said (audited)")
    const table = await core(box, ["tools", "--location", box.location])
    const row = table.stdout.split("\n").find((line) => line.startsWith("say "))
    expect(row).toContain("[hooks: audit: definition, before]")
    expect(table.stdout.split("\n").find((line) => line.startsWith("read "))).not.toContain("hooks")

    const checked = await core(box, ["check", "say", "--input", '{"text":"x"}', "--location", box.location])
    expect(JSON.parse(checked.stdout).hooks).toEqual([{ plugin: "audit", hooks: ["tool.definition", "tool.execute.before"] }])
  }, 60_000)

  test("a plugin that fails to load or install is a diagnostic on stderr naming the file; the rest serves", async () => {
    const box = sandbox({
      "plugins/syntax.ts": `import { Plugin } from "@core/tool"\nexport default Plugin.make({ install: (\n`,
      "plugins/throws.ts": `import { Plugin } from "@core/tool"\nimport { Effect } from "effect"\nexport default Plugin.make({ install: Effect.sync(() => { throw new Error("database is down") }) })\n`,
      "plugins/none.ts": `export const nothing = 1\n`,
      "plugins/ok.ts": registering("ok", "say", "ok"),
    })
    const listed = await core(box, ["tools", "--json", "--location", box.location])
    expect(listed.code).toBe(0)
    const lines = listed.stderr.trim().split("\n")
    expect(lines).toHaveLength(3)
    expect(lines.find((line) => line.includes("plugins/syntax.ts"))).toContain("syntax error")
    expect(lines.find((line) => line.includes("plugins/throws.ts"))).toContain("failed to install: database is down")
    expect(lines.find((line) => line.includes("plugins/none.ts"))).toContain("does not default-export a plugin")
    expect((JSON.parse(listed.stdout) as Array<{ name: string }>).map((tool) => tool.name)).toContain("say")
  }, 60_000)
})

describe("plugins against core's built-ins and the world", () => {
  test("a plugin's read wins over the built-in read in core exec, and a tools/read.ts beside it wins over the plugin", async () => {
    const box = sandbox({ "plugins/reader.ts": registering("reader", "read", "plugin") })
    const plugged = await exec(box, "read", { text: "x" })
    expect(settlementOf(plugged).structured).toBe("plugin x")
    write(box.location, {
      "tools/read.ts": `${IMPORTS}export default Tool.make({ description: "Read from tools", input: Schema.Struct({ text: Schema.String }), output: Schema.String, execute: (input) => Effect.succeed("tool " + input.text) })\n`,
    })
    const own = await exec(box, "read", { text: "x" })
    expect(settlementOf(own).structured).toBe("tool x")
  }, 60_000)

  test("an invalid name, a value not made by Tool.make and an installation that never finishes are diagnostics; the rest serves", async () => {
    const registeringRecord = (record: string) =>
      `${PLUGIN_IMPORTS}
const tool = Tool.make({ description: "Echo", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("echo") })
export default Plugin.make({ install: Effect.gen(function* () { yield* (yield* Plugin.Tools).register(${record}) }) })
`
    const box = sandbox({
      "plugins/badname.ts": registeringRecord(`{ "bad name": tool }`),
      "plugins/fake.ts": registeringRecord(`{ fake: {} as never }`),
      "plugins/hangs.ts": `${PLUGIN_IMPORTS}export default Plugin.make({ install: Effect.never })\n`,
      "plugins/ok.ts": registering("ok", "say", "ok"),
    })
    // The installation timeout is fixed at 10 s in core: this waits it out once.
    const listed = await core(box, ["tools", "--json", "--location", box.location])
    expect(listed.code).toBe(0)
    const lines = listed.stderr.trim().split("\n")
    expect(lines).toHaveLength(3)
    expect(lines.find((line) => line.includes("plugins/badname.ts"))).toContain("Invalid tool name")
    expect(lines.find((line) => line.includes("plugins/fake.ts"))).toContain('"fake" is not a tool made by Tool.make')
    expect(lines.find((line) => line.includes("plugins/hangs.ts"))).toContain("did not finish installing within 10 s")
    const names = (JSON.parse(listed.stdout) as Array<{ name: string }>).map((tool) => tool.name)
    expect(names).toContain("say")
    expect(names).toContain("read")
    expect(names).not.toContain("fake")
    expect(logOf(box.location)).toEqual(["install ok", "release ok"])
  }, 60_000)

  test("a plugin's Plugin.Boundary outside the Location is declined in core exec without a terminal", async () => {
    const box = sandbox({
      "plugins/peek.ts": `${PLUGIN_IMPORTS}
export default Plugin.make({
  install: Effect.gen(function* () {
    const tools = yield* Plugin.Tools
    const boundary = yield* Plugin.Boundary
    yield* tools.register({
      peek: Tool.make({
        description: "Read a file",
        input: Schema.Struct({ path: Schema.String }),
        output: Schema.String,
        checksPermissions: true,
        execute: (input, context) =>
          Effect.gen(function* () {
            const file = yield* boundary.authorize(context, { path: input.path, access: "read" })
            log("read " + file.path)
            return yield* Effect.promise(() => Bun.file(file.path).text())
          }),
      }),
    })
  }),
})
`,
    })
    const declined = await exec(box, "peek", { path: "/etc/hostname" })
    const settlement = settlementOf(declined)
    expect(settlement.status).toBe("declined")
    expect(settlement.structured).toBeNull()
    expect(JSON.stringify(settlement.content)).toContain("external_directory")
    expect(existsSync(join(box.location, "plugin.log"))).toBe(false)
  }, 60_000)

  test("a plugin's Plugin.Shell runs a real process in core exec, in the Location", async () => {
    const box = sandbox({
      "plugins/where.ts": `${PLUGIN_IMPORTS}
export default Plugin.make({
  install: Effect.gen(function* () {
    const tools = yield* Plugin.Tools
    const shell = yield* Plugin.Shell
    yield* tools.register({
      where: Tool.make({
        description: "Print the working directory",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () => shell.run({ argv: ["pwd"] }).pipe(Effect.map((ran) => ran.stdout.text.trim())),
      }),
    })
  }),
})
`,
    })
    const ran = await exec(box, "where", {})
    expect(settlementOf(ran).status).toBe("success")
    expect(settlementOf(ran).structured).toBe(realpathSync(box.location))
  }, 60_000)
})

describe("plugins in core serve", () => {
  test("racing first requests install once; a changed plugin reinstalls; shutdown closes every Scope before exit", async () => {
    const other = sandbox({ "plugins/p.ts": registering("other", "say", "other") })
    const box = sandbox({ "plugins/p.ts": registering("p1", "say", "p1") })
    const served = await serve(box, ["--allow-root", other.location])
    const headers = { "x-core-location": realpathSync(other.location) }
    const turns = await Promise.all(Array.from({ length: 8 }, () => served.turn(undefined, headers)))
    expect((await served.settle(turns[5]!.turnID, { name: "say", input: { text: "x" } }, headers)).body.structured).toBe("other x")
    expect(logOf(other.location)).toEqual(["install other"])

    const events = await served.events()
    const old = await served.turn()
    expect((await served.settle(old.turnID, { name: "say", input: { text: "x" } })).body.structured).toBe("p1 x")
    writeFileSync(join(box.location, "plugins/p.ts"), registering("p2", "say", "p2"))
    await events.until("tools.changed")
    await events.close()
    expect(logOf(box.location)).toEqual(["install p1", "release p1", "install p2"])
    expect((await served.settle(old.turnID, { name: "say", input: { text: "x" } })).body.error.kind).toBe("stale")

    served.child.kill("SIGTERM")
    const { code } = await served.exited()
    expect(code).toBe(0)
    expect(logOf(box.location)).toEqual(["install p1", "release p1", "install p2", "release p2"])
    expect(logOf(other.location)).toEqual(["install other", "release other"])
  }, 60_000)
})
