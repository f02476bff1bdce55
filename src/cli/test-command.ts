export * as TestCommand from "./test-command"

// `core test [ARGS...]`: `bun test` in a tool workspace, run by the Bun inside this executable (a Bun-compiled
// program acts as the bun CLI when BUN_BE_BUN=1), so authors need no Bun of their own. It passes ARGS through
// untouched and exits with the test run's own code; it never reads or changes the workspace itself.

import { existsSync, readFileSync } from "node:fs"
import { Terminal } from "../contract/terminal"
import { dirname, join, resolve } from "node:path"
import * as Effect from "effect/Effect"
import packageJson from "../../package.json" with { type: "json" }
import { Command } from "./command"

export const HELP = `Usage: core test [ARGS...]

Run the tests of a tool workspace (one prepared by \`core init\`) with the Bun inside core:
\`bun test ARGS...\` in the current directory, with no Bun installed. ARGS go to bun test
as they are (a file or name filter, --watch, --timeout MS, -t PATTERN, ...); \`core test --
--help\` shows bun test's own options. Tests that start \`process.execPath\` get this Bun too.

A warning on stderr says when no .core/ kit is found here or above (run \`core init\`), or
when it is from another core (run \`core init --update\`).

Exit codes: bun test's own (0 when every test passed); 130 when interrupted.
`

/**
 * @core/tool/testing checks the kit against the core that runs the tools (`$CORE_BIN`, else `core` on the PATH):
 * in the compiled executable that is this very file. Run from source, process.execPath is Bun itself.
 */
const COMPILED = import.meta.path.startsWith("/$bunfs/")

/** The nearest `.core/VERSION` at or above `directory`, with what it says. */
const kitAbove = (directory: string): { readonly path: string; readonly version: string } | undefined => {
  for (let current = directory; ; current = dirname(current)) {
    const path = join(current, ".core/VERSION")
    if (existsSync(path)) return { path: dirname(path), version: readFileSync(path, "utf8").trim() }
    if (dirname(current) === current) return undefined
  }
}

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    if (args[0] === "--help" || args[0] === "-h") {
      Command.stdout(HELP)
      return Command.EXIT.ok
    }
    // `core test -- --help` hands `--help` to bun test.
    const passed = args[0] === "--" ? args.slice(1) : args
    const kit = kitAbove(resolve("."))
    if (kit === undefined) {
      Command.stderr(
        "core test: warning: no .core/ here or above, so tests cannot import @core/tool; run `core init` first.\n",
      )
    } else if (kit.version !== packageJson.version) {
      Command.stderr(
        `core test: warning: ${Terminal.inline(kit.path)} is from core ${Terminal.inline(kit.version)}, this is core ${packageJson.version}; ` +
          "run `core init --update` there.\n",
      )
    }
    return yield* Effect.callback<number>((resume) => {
      const child = Bun.spawn([process.execPath, "test", ...passed], {
        stdio: ["inherit", "inherit", "inherit"],
        // Without Bun's transpiler cache, as core itself runs (./transpiler-cache): a command that may write the
        // cache folder would otherwise choose the code of a large tool file this run loads.
        env: { ...process.env, BUN_BE_BUN: "1", BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0", ...(COMPILED ? { CORE_BIN: process.execPath } : {}) },
      })
      // The test run answers a signal itself (a terminal sends it to both); one sent to core alone is passed on.
      const forward = (signal: NodeJS.Signals) => () => child.kill(signal)
      const onInt = forward("SIGINT")
      const onTerm = forward("SIGTERM")
      process.on("SIGINT", onInt)
      process.on("SIGTERM", onTerm)
      child.exited.then((code) => {
        process.off("SIGINT", onInt)
        process.off("SIGTERM", onTerm)
        resume(Effect.succeed(child.signalCode === null ? code : Command.EXIT.cancelled))
      })
      return Effect.sync(() => child.kill("SIGTERM"))
    })
  })
