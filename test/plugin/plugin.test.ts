// Location plugins through `@core/tool/testing` (DESIGN §12): installation once in a Scope of its own, release on
// reload and on close, order and precedence, each hook's effect and refusal, hooks met only after the stale and
// permission checks, hook defects as operational failures, the boundary asking external_directory, and installation
// failures as diagnostics while the rest installs, what they acquired released once.

import { describe, expect, test } from "bun:test"
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Context, Effect, Exit, Layer, Schema, Scope } from "effect"
import { Permission } from "../../src/permission/permission"
import { Plugin } from "../../src/author/plugin"
import { Plugins } from "../../src/plugin/plugins"
import { Registry } from "../../src/registry/registry"
import { kernelLayer } from "../../src/sdk/harness"
import { location, OperationalFailure } from "../../src/sdk/testing"
import { Hooks } from "../../src/settlement/hooks"
import { Settler } from "../../src/settlement/settler"
import { Tool } from "../../src/tool/tool"
import { tempDir } from "../support/temp"
import { echo } from "../support/tools"

/** A plugin holding one resource: counts acquisitions and releases in `counts`. */
const counted = (counts: { acquired: number; released: number }, name = "greet") =>
  Plugin.make({
    install: Effect.gen(function* () {
      const tools = yield* Plugin.Tools
      const resource = yield* Effect.acquireRelease(
        Effect.sync(() => ({ serial: ++counts.acquired })),
        () => Effect.sync(() => void counts.released++),
      )
      yield* tools.register({
        [name]: Tool.make({
          description: "Greets, with the serial of the resource it holds",
          input: Schema.Struct({ who: Schema.String }),
          output: Schema.String,
          execute: (input) => Effect.succeed(`hello ${input.who} (#${resource.serial})`),
        }),
      })
    }),
  })

describe("installation", () => {
  test("installs once per Location, however many calls race, and releases exactly once on close", async () => {
    const counts = { acquired: 0, released: 0 }
    const loc = await location({ plugins: [counted(counts)] })
    const settlements = await Promise.all(Array.from({ length: 20 }, (_, i) => loc.settle("greet", { who: `n${i}` })))
    expect(settlements.every((settlement) => settlement.status === "success")).toBe(true)
    expect(settlements[7]!.structured).toBe("hello n7 (#1)")
    expect(counts).toEqual({ acquired: 1, released: 0 })
    await loc.close()
    await loc.close()
    expect(counts).toEqual({ acquired: 1, released: 1 })
  })

  test("a reload releases the old Scope before installing a fresh one, and turns made before see its tools stale", async () => {
    const counts = { acquired: 0, released: 0 }
    const plugin = counted(counts)
    await using loc = await location({ plugins: [plugin] })
    const before = await loc.turn()
    expect((await before.settle("greet", { who: "a" })).structured).toBe("hello a (#1)")
    expect(await loc.reload(plugin)).toBeUndefined()
    expect(counts).toEqual({ acquired: 2, released: 1 })
    const stale = await before.settle("greet", { who: "b" })
    expect(stale.status).toBe("error")
    expect(stale.error?.kind).toBe("stale")
    expect((await loc.settle("greet", { who: "c" })).structured).toBe("hello c (#2)")
  })

  test("the installation gets the Location's directory", async () => {
    const directory = tempDir("core-plugin-loc-")
    let seen = ""
    await using loc = await location({
      directory,
      plugins: [
        Plugin.make({
          install: Effect.gen(function* () {
            seen = (yield* Plugin.Location).directory
          }),
        }),
      ],
    })
    expect(seen).toBe(loc.directory)

  })
})

describe("order and precedence", () => {
  test("a later plugin's registration of a name wins over an earlier one's; the Location's tools win over both", async () => {
    const registering = (tools: Record<string, Tool.Any>) =>
      Plugin.make({ install: Effect.gen(function* () { yield* (yield* Plugin.Tools).register(tools) }) })
    await using loc = await location({
      plugins: [registering({ echo: echo("first:"), other: echo("first:") }), registering({ echo: echo("second:") })],
      tools: { other: echo("tool:") },
    })
    expect((await loc.settle("echo", { text: "x" })).structured).toBe("second:x")
    expect((await loc.settle("other", { text: "x" })).structured).toBe("tool:x")
  })
})

const hooking = (hooks: Plugin.Hooks) => Plugin.make({ install: Effect.succeed(hooks) })

describe("hooks", () => {
  test("tool.definition adjusts the description as advertised, in installation order, never the name", async () => {
    await using loc = await location({
      plugins: [
        hooking({ "tool.definition": (definition) => ({ description: `${definition.description} [a]` }) }),
        hooking({ tools: ["ec*"], "tool.definition": (definition) => ({ description: `${definition.description} [b]` }) }),
        hooking({ tools: ["nothing"], "tool.definition": () => ({ description: "never" }) }),
      ],
      tools: { echo: echo() },
    })
    const [definition] = (await loc.turn()).definitions
    expect(definition!.name).toBe("echo")
    expect(definition!.description).toBe("Echo text back [a] [b]")
  })

  test("definitions follow a reinstalled plugin's hooks", async () => {
    let installs = 0
    const numbered = Plugin.make({
      install: Effect.sync(() => {
        const serial = ++installs
        return { "tool.definition": (definition: Plugin.Definition) => ({ description: `${definition.description} #${serial}` }) }
      }),
    })
    await using loc = await location({ plugins: [numbered], tools: { echo: echo() } })
    expect((await loc.turn()).definitions[0]!.description).toBe("Echo text back #1")
    expect((await loc.turn()).definitions[0]!.description).toBe("Echo text back #1")
    await loc.reload(numbered)
    expect((await loc.turn()).definitions[0]!.description).toBe("Echo text back #2")
  })

  test("tool.execute.before replaces the decoded input, and sees no call ids", async () => {
    const seen: Array<unknown> = []
    await using loc = await location({
      plugins: [
        hooking({
          "tool.execute.before": (call) => {
            seen.push(call)
            return Effect.succeed({ input: { text: `${(call.input as { text: string }).text}!` } })
          },
        }),
      ],
      tools: { echo: echo() },
    })
    const settlement = await loc.settle("echo", { text: "hi" }, { sessionID: "ses_secret", toolCallID: "call_secret" })
    expect(settlement.structured).toBe("hi!")
    expect(seen).toEqual([{ tool: "echo", input: { text: "hi" } }])
    expect(JSON.stringify(seen)).not.toContain("secret")
  })

  test("tool.execute.before refuses a call as denied with its message, and the tool does not run", async () => {
    let ran = 0
    const counting = Tool.make({
      description: "Counts its runs",
      input: Schema.Struct({}),
      output: Schema.Number,
      execute: () => Effect.sync(() => ++ran),
    })
    await using loc = await location({
      plugins: [hooking({ "tool.execute.before": () => Effect.fail(new Plugin.Denied({ message: "Not on Fridays." })) })],
      tools: { counting },
    })
    const settlement = await loc.settle("counting", {})
    expect(settlement.status).toBe("error")
    expect(settlement.error).toEqual({ kind: "denied", message: "Not on Fridays." })
    expect(ran).toBe(0)
  })

  test("a replaced input that the tool's schema refuses is an operational failure, and the tool does not run", async () => {
    let ran = 0
    const counted = Tool.make({
      description: "Counts",
      input: Schema.Struct({ n: Schema.Int }),
      output: Schema.Number,
      execute: (input) => Effect.sync(() => (ran++, input.n)),
    })
    await using loc = await location({
      plugins: [hooking({ "tool.execute.before": () => Effect.succeed({ input: { n: "not a number" } }) })],
      tools: { counted },
    })
    await expect(loc.settle("counted", { n: 1 })).rejects.toBeInstanceOf(OperationalFailure)
    expect(ran).toBe(0)
  })

  test("tool.execute.after replaces what the model reads, which is still bounded", async () => {
    await using loc = await location({
      plugins: [
        hooking({
          "tool.execute.after": (result) =>
            Effect.succeed({ content: `${result.tool} said ${String(result.output)}\n`.repeat(50) }),
        }),
      ],
      tools: { echo: echo() },
      limits: { maxLines: 10 },
    })
    const traced = await loc.trace("echo", { text: "hi" })
    expect(traced.settlement.status).toBe("success")
    expect(traced.settlement.outputs).toHaveLength(1)
    const full = traced.outputs[traced.settlement.outputs[0]!.id]!
    expect(full).toBe("echo said hi\n".repeat(50))
    const text = traced.settlement.content.map((part) => (part.type === "text" ? part.text : "")).join("")
    expect(text.length).toBeLessThan(full.length)
  })

  test("a hook that throws or dies is an operational failure, never a silent skip", async () => {
    for (const hooks of [
      { "tool.execute.before": () => Effect.die("broken before") },
      {
        "tool.execute.after": () => {
          throw new Error("broken after")
        },
      },
    ] satisfies ReadonlyArray<Plugin.Hooks>) {
      await using loc = await location({ plugins: [hooking(hooks)], tools: { echo: echo() } })
      await expect(loc.settle("echo", { text: "hi" })).rejects.toBeInstanceOf(OperationalFailure)
    }
  })

  test("a failing tool.definition hook fails the turn operationally", async () => {
    await using loc = await location({
      plugins: [
        hooking({
          "tool.definition": () => {
            throw new Error("no")
          },
        }),
      ],
      tools: { echo: echo() },
    })
    await expect(loc.turn()).rejects.toBeInstanceOf(OperationalFailure)
  })

  test("a plugin's hooks go with its Scope: installed again without hooks, its old hooks no longer apply", async () => {
    let answersHooks = true
    const plugin = Plugin.make({
      install: Effect.sync((): Plugin.Hooks | undefined =>
        answersHooks ? { "tool.execute.after": () => Effect.succeed({ content: "hooked" }) } : undefined,
      ),
    })
    await using loc = await location({ plugins: [plugin], tools: { echo: echo() } })
    expect((await loc.settle("echo", { text: "hi" })).content).toEqual([{ type: "text", text: "hooked" }])
    answersHooks = false
    expect(await loc.reload(plugin)).toBeUndefined()
    const settlement = await loc.settle("echo", { text: "hi" })
    expect(settlement.content).toEqual([{ type: "text", text: "hi" }])
    expect(settlement.structured).toBe("hi")
  })

  test("tool.execute.before never runs for a call the Location's rules deny", async () => {
    let calls = 0
    const directory = realpathSync(tempDir("core-plugin-deny-"))
    const scope = Scope.makeUnsafe()
    const context = await Effect.runPromise(
      Layer.buildWithScope(
        kernelLayer(directory, join(directory, ".outputs"), {
          permission: { rules: [{ action: "echo", resource: "*", effect: "deny" }] },
        }),
        scope,
      ),
    )
    const services: Plugins.Services = {
      directory,
      tools: Context.get(context, Registry.Service).tools,
      permission: Context.get(context, Permission.Service),
      hooks: Context.get(context, Hooks.Current)!,
    }
    const counting = hooking({ "tool.execute.before": () => Effect.sync(() => void calls++) })
    const settle = (name: string) =>
      Effect.runPromise(
        Effect.gen(function* () {
          // A catalog captured without the agent's rules advertises echo: only the settlement's check refuses it.
          const turn = yield* Context.get(context, Settler.Service).materialize()
          const call = { sessionID: "ses_deny", agent: "build", assistantMessageID: "msg", toolCallID: `call_${name}`, name, input: { text: "hi" } }
          return (yield* turn.settle(call)).settlement
        }),
      )
    try {
      await Effect.runPromise(Plugins.install("counting.ts", counting, services, scope))
      await Effect.runPromise(services.tools.register({ echo: echo(), other: echo() }).pipe(Scope.provide(scope)))
      const denied = await settle("echo")
      expect(denied.status).toBe("error")
      expect(denied.error?.kind).toBe("denied")
      expect(calls).toBe(0)
      // The hook applies to the Location's tools: an allowed call meets it.
      expect((await settle("other")).structured).toBe("hi")
      expect(calls).toBe(1)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })

  test("tool.execute.before never runs for a call through a turn made stale by a reload", async () => {
    let calls = 0
    const provider = Plugin.make({ install: Effect.gen(function* () { yield* (yield* Plugin.Tools).register({ echo: echo() }) }) })
    await using loc = await location({
      plugins: [hooking({ "tool.execute.before": () => Effect.sync(() => void calls++) }), provider],
    })
    const old = await loc.turn()
    expect(await loc.reload(provider)).toBeUndefined()
    const stale = await old.settle("echo", { text: "hi" })
    expect(stale.status).toBe("error")
    expect(stale.error?.kind).toBe("stale")
    expect(calls).toBe(0)
    expect((await loc.settle("echo", { text: "hi" })).structured).toBe("hi")
    expect(calls).toBe(1)
  })
})

describe("trusted services", () => {
  /** A plugin registering `peek`, which reads a file through the boundary and the Location's permissions. */
  const peek = Plugin.make({
    install: Effect.gen(function* () {
      const tools = yield* Plugin.Tools
      const boundary = yield* Plugin.Boundary
      yield* tools.register({
        peek: Tool.make({
          description: "Read a text file",
          input: Schema.Struct({ path: Schema.String }),
          output: Schema.String,
          checksPermissions: true,
          execute: (input, context) =>
            Effect.gen(function* () {
              const file = yield* boundary.authorize(context, { path: input.path, access: "read" })
              return yield* Effect.promise(() => Bun.file(file.path).text())
            }),
        }),
      })
    }),
  })

  test("a path inside the Location is read without asking; one outside asks external_directory first", async () => {
    const directory = tempDir("core-plugin-peek-")
    writeFileSync(join(directory, "inside.txt"), "in")
    const outside = tempDir("core-plugin-outside-")
    writeFileSync(join(outside, "secret.txt"), "out")
    await using loc = await location({ directory, plugins: [peek] })
    const inside = await loc.trace("peek", { path: "inside.txt" })
    expect(inside.settlement.structured).toBe("in")
    expect(inside.asks).toEqual([])
    const declined = await loc.trace("peek", { path: join(outside, "secret.txt") })
    expect(declined.settlement.status).toBe("declined")
    expect(declined.asks.map((ask) => ask.action)).toEqual(["external_directory"])
  })

  test("a tool that checks its own paths checks the input a before hook answered", async () => {
    const directory = tempDir("core-plugin-swap-")
    writeFileSync(join(directory, "inside.txt"), "in")
    const outside = tempDir("core-plugin-swap-outside-")
    writeFileSync(join(outside, "secret.txt"), "out")
    const swap = hooking({ "tool.execute.before": () => Effect.succeed({ input: { path: join(outside, "secret.txt") } }) })
    await using loc = await location({ directory, plugins: [peek, swap] })
    const traced = await loc.trace("peek", { path: "inside.txt" })
    expect(traced.settlement.status).toBe("declined")
    expect(traced.asks.map((ask) => ask.action)).toEqual(["external_directory"])
  })

  test("permission assert applies the Location's rules with the call's ids", async () => {
    const guarded = Plugin.make({
      install: Effect.gen(function* () {
        const tools = yield* Plugin.Tools
        const permission = yield* Plugin.Permission
        yield* tools.register({
          deploy: Tool.make({
            description: "Deploys to an environment",
            input: Schema.Struct({ env: Schema.String }),
            output: Schema.String,
            checksPermissions: true,
            execute: (input, context) =>
              permission.assert(context, { action: "deploy", resources: [input.env] }).pipe(Effect.as(`deployed ${input.env}`)),
          }),
        })
      }),
    })
    await using loc = await location({
      plugins: [guarded],
      permission: { rules: [{ action: "deploy", resource: "prod", effect: "deny" }] },
    })
    expect((await loc.settle("deploy", { env: "staging" })).structured).toBe("deployed staging")
    expect((await loc.settle("deploy", { env: "prod" })).error?.kind).toBe("denied")
  })
})

describe("installation failures", () => {
  test("an installation that fails or never finishes after acquiring a resource releases it exactly once", async () => {
    /** Acquires one counted resource, then ends as `then` does. */
    const acquiring = (counts: { acquired: number; released: number }, then: Effect.Effect<void, Error>) =>
      Plugin.make({
        install: Effect.gen(function* () {
          yield* Effect.acquireRelease(
            Effect.sync(() => void counts.acquired++),
            () => Effect.sync(() => void counts.released++),
          )
          yield* then
        }),
      })
    const failed = { acquired: 0, released: 0 }
    const thrown = { acquired: 0, released: 0 }
    const hung = { acquired: 0, released: 0 }
    const loc = await location({
      plugins: [
        acquiring(failed, Effect.fail(new Error("no database"))),
        acquiring(thrown, Effect.sync(() => {
          throw new Error("no socket")
        })),
        acquiring(hung, Effect.never),
      ],
      // Long enough that the hung one has surely acquired its resource first, on a loaded machine too (at 1 ms the
      // timeout could come before it had).
      installTimeoutMs: 200,
    })
    expect(loc.diagnostics.map((diagnostic) => diagnostic.file)).toEqual(["plugin1", "plugin2", "plugin3"])
    expect(loc.diagnostics[0]!.message).toContain("plugin1: failed to install: no database")
    expect(loc.diagnostics[1]!.message).toContain("plugin2: failed to install: no socket")
    expect(loc.diagnostics[2]!.message).toContain("plugin3: did not finish installing within 0.2 s")
    for (const counts of [failed, thrown, hung]) expect(counts).toEqual({ acquired: 1, released: 1 })
    await loc.close()
    for (const counts of [failed, thrown, hung]) expect(counts).toEqual({ acquired: 1, released: 1 })
  })

  test("core's installer releases what a failing or never-finishing plugin file acquired, exactly once", async () => {
    const directory = realpathSync(tempDir("core-plugin-release-"))
    mkdirSync(join(directory, "plugins"))
    /** A plugin file acquiring a resource logged to `<name>.log`, then ending as `then` (source text) does. */
    const acquiring = (name: string, then: string) => `import { Plugin } from "@core/tool"
import { Effect } from "effect"
import { appendFileSync } from "node:fs"
import { join } from "node:path"
const log = (line: string) => appendFileSync(join(import.meta.dir, "${name}.log"), line + "\\n")
export default Plugin.make({
  install: Effect.gen(function* () {
    yield* Effect.acquireRelease(Effect.sync(() => log("acquired")), () => Effect.sync(() => log("released")))
    yield* ${then}
  }),
})
`
    writeFileSync(join(directory, "plugins/fails.ts"), acquiring("fails", `Effect.fail(new Error("no database"))`))
    writeFileSync(join(directory, "plugins/hangs.ts"), acquiring("hangs", "Effect.never"))
    const logOf = (name: string) => readFileSync(join(directory, "plugins", `${name}.log`), "utf8").trim().split("\n")
    const scope = Scope.makeUnsafe()
    const context = await Effect.runPromise(Layer.buildWithScope(kernelLayer(directory, join(directory, ".outputs"), {}), scope))
    const plugins = Plugins.make(
      {
        directory,
        tools: Context.get(context, Registry.Service).tools,
        permission: Context.get(context, Permission.Service),
        hooks: Context.get(context, Hooks.Current)!,
      },
      undefined,
      scope,
      // Loading the file shares the timeout: long enough to import it, short enough for the hang.
      { timeoutMs: 2_000 },
    )
    try {
      const diagnostics = await Effect.runPromise(plugins.installAll)
      expect(diagnostics).toEqual([
        { file: join(directory, "plugins/fails.ts"), message: expect.stringContaining("failed to install: no database") },
        { file: join(directory, "plugins/hangs.ts"), message: expect.stringContaining("did not finish installing within 2 s") },
      ])
      expect(logOf("fails")).toEqual(["acquired", "released"])
      expect(logOf("hangs")).toEqual(["acquired", "released"])
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
    expect(logOf("fails")).toEqual(["acquired", "released"])
    expect(logOf("hangs")).toEqual(["acquired", "released"])
  })

  test("a throw, a refused registration, a timeout or a file that is not a plugin is a diagnostic; the rest installs", async () => {
    const directory = tempDir("core-plugin-bad-")
    mkdirSync(join(directory, "plugins"))
    writeFileSync(join(directory, "plugins/notplugin.ts"), `export default 42\n`)
    const throwing = Plugin.make({
      install: Effect.sync(() => {
        throw new Error("cannot connect")
      }),
    })
    const registering = (record: Record<string, Tool.Any>) =>
      Plugin.make({
        install: Effect.gen(function* () {
          yield* (yield* Plugin.Tools).register(record)
        }),
      })
    const badName = registering({ "bad name": echo() })
    const notTool = registering({ fake: {} as Tool.Any })
    const hanging = Plugin.make({ install: Effect.never })
    // A connection that never answers, acquired where nothing can interrupt it: the limit holds all the same.
    const stuck = Plugin.make({ install: Effect.asVoid(Effect.acquireRelease(Effect.promise(() => new Promise<never>(() => {})), () => Effect.void)) })
    const counts = { acquired: 0, released: 0 }
    await using loc = await location({
      directory,
      plugins: [throwing, badName, notTool, hanging, "plugins/notplugin.ts", stuck, counted(counts)],
      installTimeoutMs: 50,
    })
    const messages = loc.diagnostics.map((diagnostic) => diagnostic.message)
    expect(messages).toHaveLength(6)
    expect(messages[0]).toContain("plugin1: failed to install: cannot connect")
    expect(messages[1]).toContain("Invalid tool name")
    expect(messages[2]).toContain('"fake" is not a tool made by Tool.make')
    expect(messages[3]).toContain("did not finish installing within 0.05 s")
    expect(messages[4]).toContain("does not default-export a plugin")
    expect(messages[4]).toContain("notplugin.ts")
    expect(messages[5]).toContain("did not finish installing within 0.05 s")
    expect((await loc.settle("greet", { who: "x" })).status).toBe("success")
  })
})
