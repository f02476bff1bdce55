// The documented order of a Location's plugins (DESIGN §12) after a reload: a plugin ranked earlier that is
// installed again does not win over the plugins ranked after it, neither for a name they both register nor in the
// order their hooks run; the Location's tools keep winning over all of them. Through `@core/tool/testing` and
// through the installer core's hosts use (Plugins.make, real plugin files).

import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Context, Effect, Exit, Layer, Scope } from "effect"
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
import { echo } from "../support/tools"

/** A plugin registering `echo` (answering `<tag>:text`) and tagging every description and output with `tag`. */
const tagged = (tag: string, extra: Record<string, Tool.Any> = {}) =>
  Plugin.make({
    install: Effect.gen(function* () {
      yield* (yield* Plugin.Tools).register({ echo: echo(`${tag}:`), ...extra })
      return {
        "tool.definition": (definition) => ({ description: `${definition.description} [${tag}]` }),
        "tool.execute.after": (result) => Effect.succeed({ content: `${result.content.map((part) => (part.type === "text" ? part.text : "")).join("")} <${tag}>` }),
      } satisfies Plugin.Hooks
    }),
  })

describe("order after a reload, in @core/tool/testing", () => {
  test("reloading the earlier of two plugins registering one name leaves the later one winning, hooks in order", async () => {
    const first = tagged("a", { only: echo("a-only:") })
    const second = tagged("b")
    await using loc = await location({ plugins: [first, second] })
    const expected = { description: "Echo text back [a] [b]", text: "b:x <a> <b>" }
    const observe = async () => {
      const turn = await loc.turn()
      const settled = await turn.settle("echo", { text: "x" })
      const definition = turn.definitions.find((candidate) => candidate.name === "echo")!
      return { description: definition.description, text: (settled.content[0] as { text: string }).text }
    }
    expect(await observe()).toEqual(expected)
    expect(await loc.reload(first)).toBeUndefined()
    expect(await observe()).toEqual(expected)
    // Again: the raised registrations do not pile up, and the earlier plugin's own names are its fresh ones.
    expect(await loc.reload(first)).toBeUndefined()
    expect(await observe()).toEqual(expected)
    expect((await loc.settle("only", { text: "y" })).content).toEqual([{ type: "text", text: "a-only:y <a> <b>" }])
    // Reloading the later one changes nothing either.
    expect(await loc.reload(second)).toBeUndefined()
    expect(await observe()).toEqual(expected)
  })

  test("the Location's tools keep winning over a reloaded plugin", async () => {
    const first = tagged("a")
    await using loc = await location({ plugins: [first], tools: { echo: echo("tool:") } })
    await loc.reload(first)
    const settled = await loc.settle("echo", { text: "x" })
    expect(settled.content).toEqual([{ type: "text", text: "tool:x <a>" }])
  })

  test("a later plugin's names that the reloaded one does not register stay valid in turns made before", async () => {
    const first = tagged("a")
    const second = tagged("b", { mine: echo("b-only:") })
    await using loc = await location({ plugins: [first, second] })
    const before = await loc.turn()
    await loc.reload(first)
    expect((await before.settle("mine", { text: "x" })).status).toBe("success")
    // `echo` changed hands twice (the reinstalled plugin's, then the later one's again): stale, never the wrong tool.
    expect((await before.settle("echo", { text: "x" })).error?.kind).toBe("stale")
  })
})

/** A plugin file registering `echo` answering `<tag>:text`, with a definition hook tagging the description. */
const pluginFile = (tag: string) => `import { Plugin, Tool } from "@core/tool"
import { Effect, Schema } from "effect"
export default Plugin.make({
  install: Effect.gen(function* () {
    yield* (yield* Plugin.Tools).register({
      echo: Tool.make({
        description: "Echo",
        input: Schema.Struct({ text: Schema.String }),
        output: Schema.String,
        execute: (input) => Effect.succeed("${tag}:" + input.text),
      }),
    })
    return { "tool.definition": (definition) => ({ description: definition.description + " [${tag}]" }) }
  }),
})
`

describe("order after a reload, in core's installer", () => {
  test("a reinstalled plugin file ranks by its name again, under the files after it", async () => {
    const directory = realpathSync(tempDir("core-plugin-order-"))
    mkdirSync(join(directory, "plugins"))
    for (const tag of ["a", "b", "c"]) writeFileSync(join(directory, `plugins/${tag}.ts`), pluginFile(tag))
    const scope = Scope.makeUnsafe()
    const context = await Effect.runPromise(
      Layer.buildWithScope(kernelLayer(directory, join(directory, ".outputs"), {}), scope),
    )
    const services: Plugins.Services = {
      directory,
      tools: Context.get(context, Registry.Service).tools,
      permission: Context.get(context, Permission.Service),
      hooks: Context.get(context, Hooks.Current)!,
    }
    let version = 0
    const plugins = Plugins.make(services, undefined, scope, { bump: () => `order.${++version}` })
    const observe = () =>
      Effect.runPromise(
        Effect.gen(function* () {
          const turn = yield* Context.get(context, Settler.Service).materialize()
          const { settlement } = yield* turn.settle({
            sessionID: "ses_order",
            agent: "build",
            assistantMessageID: "msg",
            toolCallID: `call_${++version}`,
            name: "echo",
            input: { text: "x" },
          })
          return { description: turn.definitions[0]!.description, structured: settlement.structured }
        }),
      )
    try {
      expect(await Effect.runPromise(plugins.installAll)).toEqual([])
      const expected = { description: "Echo [a] [b] [c]", structured: "c:x" }
      expect(await observe()).toEqual(expected)
      for (const tag of ["a", "b", "a", "c"]) {
        const reloaded = await Effect.runPromise(plugins.reload(join(directory, `plugins/${tag}.ts`)))
        expect(reloaded.diagnostic).toBeUndefined()
        expect(await observe()).toEqual(expected)
      }
      // A new file ranked in the middle goes under the one after it.
      writeFileSync(join(directory, "plugins/ab.ts"), pluginFile("ab"))
      await Effect.runPromise(plugins.reload(join(directory, "plugins/ab.ts")))
      expect(await observe()).toEqual({ description: "Echo [a] [ab] [b] [c]", structured: "c:x" })
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })
})
