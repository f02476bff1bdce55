// One authorization path for plugins: a plugin's `Plugin.Boundary.authorize` and `Plugin.Permission.assert` meet
// the same order as the built-ins (a deny anywhere refuses before anything is asked), through the compiled binary
// and through the author kit's Location.

import { beforeAll, describe, expect, test } from "bun:test"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import { Plugin } from "../../src/author/plugin"
import { location } from "../../src/sdk/testing"
import { Tool } from "../../src/tool/tool"
import { exec, sandbox, settlementOf } from "../cli/fixture"
import { binary } from "../support/binary"
import { tempDir } from "../support/temp"

/** A plugin registering `scribble`, which writes a file where Plugin.Boundary allows it. */
const SCRIBBLE = `import { Plugin, Tool } from "@core/tool"
import { Effect, Schema } from "effect"
export default Plugin.make({
  install: Effect.gen(function* () {
    const tools = yield* Plugin.Tools
    const boundary = yield* Plugin.Boundary
    yield* tools.register({
      scribble: Tool.make({
        description: "Write a text file",
        input: Schema.Struct({ path: Schema.String, text: Schema.String }),
        output: Schema.String,
        checksPermissions: true,
        execute: (input, context) =>
          Effect.gen(function* () {
            const file = yield* boundary.authorize(context, { path: input.path, access: "write" })
            yield* Effect.promise(() => Bun.write(file.path, input.text))
            return file.path
          }),
      }),
    })
  }),
})
`

beforeAll(async () => {
  await binary()
}, 300_000)

describe("a plugin's path check meets one order", () => {
  test("a path outside the Location whose action is denied is refused as denied, with nothing asked first", async () => {
    const outside = tempDir("core-plugin-outside-")
    const box = sandbox({
      "plugins/scribble.ts": SCRIBBLE,
      "core.json": JSON.stringify({ permission: { edit: { "*.env": "deny" } } }),
    })
    // external_directory is asked by default; without a terminal an ask would be declined (exit 4).
    const result = await exec(box, "scribble", { path: join(outside, "app.env"), text: "TOKEN=x" })
    const settlement = settlementOf(result)
    expect(settlement.status).toBe("error")
    expect(settlement.error?.kind).toBe("denied")
    expect(result.code).toBe(1)
    expect(result.stderr).not.toContain("declined")
    expect(existsSync(join(outside, "app.env"))).toBe(false)
  })

  test("Plugin.Permission.assert and Plugin.Boundary.authorize ask nobody when a rule denies", async () => {
    const outside = tempDir("core-plugin-outside-")
    const plugin = Plugin.make({
      install: Effect.gen(function* () {
        const tools = yield* Plugin.Tools
        const boundary = yield* Plugin.Boundary
        const permission = yield* Plugin.Permission
        yield* tools.register({
          deploy: Tool.make({
            description: "Deploy",
            input: Schema.Struct({ target: Schema.String, log: Schema.String }),
            output: Schema.String,
            checksPermissions: true,
            execute: (input, context) =>
              Effect.gen(function* () {
                yield* boundary.authorize(context, { path: input.log, access: "write" })
                yield* permission.assert(context, { action: "deploy", resources: [input.target] })
                return "deployed"
              }),
          }),
        })
      }),
    })
    await using loc = await location({
      directory: tempDir("core-plugin-loc-"),
      plugins: [plugin],
      // Core's defaults ask external_directory; the log's edit is denied.
      permission: { rules: [{ action: "edit", resource: "*.log", effect: "deny" }] },
    })
    const traced = await loc.trace("deploy", { target: "prod", log: join(outside, "deploy.log") })
    expect(traced.settlement.status).toBe("error")
    expect(traced.settlement.error?.kind).toBe("denied")
    expect(traced.asks).toEqual([])
  })
})
