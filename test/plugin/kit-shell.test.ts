// `Plugin.Shell` in `@core/tool/testing`: the kit runs no processes (core's shell producer is in the binary only,
// which test/build/kit.test.ts checks the kit leaves out), so a run fails as a model-visible Tool.Failure saying so
// and how to go on; a stand-in given as `location({ shell })` is what the plugin gets instead.

import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { Plugin } from "../../src/author/plugin"
import { location, SHELL_UNAVAILABLE } from "../../src/sdk/testing"
import { Tool } from "../../src/tool/tool"

/** A plugin with a `git_status` tool running `git status --short` through the shell capability. */
const git = Plugin.make({
  install: Effect.gen(function* () {
    const shell = yield* Plugin.Shell
    yield* (yield* Plugin.Tools).register({
      git_status: Tool.make({
        description: "Short git status of the project",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () =>
          shell.run({ argv: ["git", "status", "--short"] }).pipe(
            Effect.flatMap((ran) =>
              ran.exitCode === 0 ? Effect.succeed(ran.stdout.text) : Effect.fail(new Tool.Failure({ message: ran.stderr.text })),
            ),
          ),
      }),
    })
  }),
})

describe("Plugin.Shell in @core/tool/testing", () => {
  test("without a stand-in, a run fails as a Tool.Failure that says the kit runs no processes and what to do", async () => {
    await using loc = await location({ plugins: [git] })
    const settled = await loc.settle("git_status", {})
    expect(settled.status).toBe("error")
    expect(settled.error).toEqual({ kind: "failure", message: SHELL_UNAVAILABLE })
    expect(SHELL_UNAVAILABLE).toContain("runs no processes in @core/tool/testing")
    expect(SHELL_UNAVAILABLE).toContain("location({ shell })")
  })

  test("a stand-in shell given to location is the one the plugin runs with", async () => {
    const runs: Array<Plugin.Run> = []
    const shell: (typeof Plugin.Shell)["Service"] = {
      run: (request) =>
        Effect.sync(() => {
          runs.push(request)
          const captured = (text: string): Plugin.Captured => ({ text, bytes: text.length, complete: true })
          return { exitCode: 0, signal: null, timedOut: false, stdout: captured(" M a.ts\n"), stderr: captured("") }
        }),
    }
    await using loc = await location({ plugins: [git], shell })
    expect((await loc.settle("git_status", {})).structured).toBe(" M a.ts\n")
    expect(runs).toEqual([{ argv: ["git", "status", "--short"] }])
  })
})
