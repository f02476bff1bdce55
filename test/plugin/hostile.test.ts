// A hostile model against a Location's plugin hooks (DESIGN §12): it picks the calls, their ids, their names and
// their timing, never the plugins. None of that gets a call past a hook: not a turn made before the plugin came,
// not a call racing the plugin's reload, not a name no filter matches, not a replayed id with another input; and a
// result an after hook replaced is all it reads, with no structured copy beside it.

import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Context, Effect, Exit, Fiber, Layer, Schema, Scope } from "effect"
import { Permission } from "../../src/permission/permission"
import { Plugin } from "../../src/author/plugin"
import { Plugins } from "../../src/plugin/plugins"
import { Registry } from "../../src/registry/registry"
import { kernelLayer } from "../../src/sdk/harness"
import { location } from "../../src/sdk/testing"
import { Hooks } from "../../src/settlement/hooks"
import { Settler } from "../../src/settlement/settler"
import { Tool } from "../../src/tool/tool"
import { tempDir } from "../support/temp"

/** A stand-in `bash` that records each command it runs. */
const recording = () => {
  const ran: Array<string> = []
  const bash = Tool.make({
    description: "Run a command",
    input: Schema.Struct({ command: Schema.String }),
    output: Schema.String,
    execute: (input) => Effect.sync(() => (ran.push(input.command), `ran ${input.command}`)),
  })
  return { ran, bash }
}

const DENIED = { kind: "denied" as const, message: "No force pushes." }

/** Refuses force pushes on `bash`; `installing` (when given) is awaited by every installation after the first. */
const guard = (installing?: { first: boolean; started: () => void; wait: Promise<void> }) =>
  Plugin.make({
    install: Effect.gen(function* () {
      if (installing !== undefined && !installing.first) {
        installing.started()
        yield* Effect.promise(() => installing.wait)
      }
      if (installing !== undefined) installing.first = false
      return {
        tools: ["bash"],
        "tool.execute.before": (call) =>
          (call.input as { command: string }).command.includes("--force")
            ? Effect.fail(new Plugin.Denied({ message: "No force pushes." }))
            : Effect.void,
      } satisfies Plugin.Hooks
    }),
  })

describe("a hostile model against plugin hooks", () => {
  test("a call racing the guard's reload waits for the new installation and meets its hook", async () => {
    const { ran, bash } = recording()
    let started!: () => void
    const startedInstall = new Promise<void>((resolve) => (started = resolve))
    let release!: () => void
    const installing = { first: true, started, wait: new Promise<void>((resolve) => (release = resolve)) }
    const plugin = guard(installing)
    await using loc = await location({ plugins: [plugin], tools: { bash } })
    const turn = await loc.turn()
    const reloading = loc.reload(plugin)
    await startedInstall
    // The old hooks are gone with their Scope and the new ones are not in yet: the call must not slip through.
    const racing = turn.settle("bash", { command: "git push --force" })
    const ordinary = turn.settle("bash", { command: "git status" })
    await Promise.resolve()
    expect(ran).toEqual([])
    release()
    expect(await reloading).toBeUndefined()
    expect((await racing).error).toEqual(DENIED)
    expect((await ordinary).structured).toBe("ran git status")
    expect(ran).toEqual(["git status"])
  })

  test("a turn made before the guard was installed still meets its hook", async () => {
    const { ran, bash } = recording()
    await using loc = await location({ tools: { bash } })
    const before = await loc.turn()
    await loc.reload(guard())
    expect((await before.settle("bash", { command: "git push --force" })).error).toEqual(DENIED)
    expect(ran).toEqual([])
  })

  test("a name no filter matches is not a way round: only advertised names run, and they are the filtered ones", async () => {
    const { ran, bash } = recording()
    await using loc = await location({ plugins: [guard()], tools: { bash } })
    for (const name of ["BASH", "bash ", "Bash", "bash\u200b", "b?sh", "*"]) {
      const settled = await loc.settle(name, { command: "git push --force" })
      expect(settled.error?.kind).toBe("unknown")
    }
    expect(ran).toEqual([])
  })

  test("an id replayed with another input replays the refusal and runs nothing", async () => {
    const { ran, bash } = recording()
    await using loc = await location({ plugins: [guard()], tools: { bash } })
    const ids = { sessionID: "ses_hostile", toolCallID: "call_same" }
    expect((await loc.settle("bash", { command: "git push --force" }, ids)).error).toEqual(DENIED)
    expect((await loc.settle("bash", { command: "git push --force --no-verify" }, ids)).error).toEqual(DENIED)
    const other = { sessionID: "ses_hostile", toolCallID: "call_other" }
    expect((await loc.settle("bash", { command: "ls" }, other)).structured).toBe("ran ls")
    expect((await loc.settle("bash", { command: "git push --force" }, other)).structured).toBe("ran ls")
    expect(ran).toEqual(["ls"])
  })

  test("content an after hook replaced is all the model reads: the structured output goes", async () => {
    const secretText = Tool.make({
      description: "Reads the environment file",
      input: Schema.Struct({}),
      output: Schema.String,
      execute: () => Effect.succeed("TOKEN=s3cret"),
    })
    const secretObject = Tool.make({
      description: "Reads the credentials",
      input: Schema.Struct({}),
      output: Schema.Struct({ token: Schema.String }),
      execute: () => Effect.succeed({ token: "s3cret" }),
    })
    const redact = Plugin.make({
      install: Effect.succeed<Plugin.Hooks>({
        tools: ["secret_*"],
        "tool.execute.after": (result) =>
          Effect.succeed({ content: JSON.stringify(result.output).replaceAll("s3cret", "[redacted]") }),
      }),
    })
    const untouched = Tool.make({
      description: "Not hooked",
      input: Schema.Struct({}),
      output: Schema.Struct({ n: Schema.Number }),
      execute: () => Effect.succeed({ n: 1 }),
    })
    await using loc = await location({
      plugins: [redact],
      tools: { secret_text: secretText, secret_object: secretObject, plain: untouched },
    })
    for (const name of ["secret_text", "secret_object"]) {
      const settled = await loc.settle(name, {})
      expect(settled.status).toBe("success")
      expect(JSON.stringify(settled)).not.toContain("s3cret")
      expect(settled.structured).toBeNull()
      expect(settled.content[0]).toMatchObject({ type: "text" })
    }
    // A tool no after hook answered for keeps its structured output.
    expect((await loc.settle("plain", {})).structured).toEqual({ n: 1 })
  })
})

/** A plugin file whose later installations wait for `globalThis.coreTestGate`, refusing force pushes on `bash`. */
const GUARD_FILE = `import { Plugin } from "@core/tool"
import { Effect } from "effect"
const gate = (globalThis as { coreTestGate?: { started: () => void; wait: Promise<void> } }).coreTestGate
export default Plugin.make({
  install: Effect.gen(function* () {
    if (gate !== undefined) {
      gate.started()
      yield* Effect.promise(() => gate.wait)
    }
    return {
      tools: ["bash"],
      "tool.execute.before": (call) =>
        String((call.input as { command: string }).command).includes("--force")
          ? Effect.fail(new Plugin.Denied({ message: "No force pushes." }))
          : Effect.void,
    }
  }),
})
`

describe("a call racing a plugin file's reload, in core's installer", () => {
  test("waits for the new installation and meets its hook", async () => {
    const directory = realpathSync(tempDir("core-plugin-race-"))
    mkdirSync(join(directory, "plugins"))
    const file = join(directory, "plugins/guard.ts")
    writeFileSync(file, GUARD_FILE)
    const scope = Scope.makeUnsafe()
    const context = await Effect.runPromise(Layer.buildWithScope(kernelLayer(directory, join(directory, ".out"), {}), scope))
    const { ran, bash } = recording()
    const services: Plugins.Services = {
      directory,
      tools: Context.get(context, Registry.Service).tools,
      permission: Context.get(context, Permission.Service),
      hooks: Context.get(context, Hooks.Current)!,
    }
    let version = 0
    const plugins = Plugins.make(services, undefined, scope, { bump: () => `race.${++version}` })
    const holder = globalThis as { coreTestGate?: { started: () => void; wait: Promise<void> } }
    try {
      expect(await Effect.runPromise(plugins.installAll)).toEqual([])
      await Effect.runPromise(Context.get(context, Registry.Service).tools.register({ bash }).pipe(Scope.provide(scope)))
      const turn = await Effect.runPromise(Context.get(context, Settler.Service).materialize())
      let started!: () => void
      const startedInstall = new Promise<void>((resolve) => (started = resolve))
      let release!: () => void
      holder.coreTestGate = { started, wait: new Promise<void>((resolve) => (release = resolve)) }
      const reloading = Effect.runFork(plugins.reload(file))
      await startedInstall
      const racing = Effect.runPromise(
        turn.settle({ sessionID: "ses", agent: "build", assistantMessageID: "msg", toolCallID: "call_race", name: "bash", input: { command: "git push --force" } }),
      )
      await Promise.resolve()
      expect(ran).toEqual([])
      release()
      expect((await Effect.runPromise(Fiber.join(reloading))).diagnostic).toBeUndefined()
      expect((await racing).settlement.error).toEqual(DENIED)
      expect(ran).toEqual([])
    } finally {
      delete holder.coreTestGate
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })
})
