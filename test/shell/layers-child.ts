// A stand-in for a core started under other programs' Landlock layers (`bun test/shell/layers-child.ts N PORT`):
// stacks N layers of its own that restrict nothing a command needs (the signal scope only), records PORT as core's
// own, then runs a command that tries to connect to it, with the sandbox and without, and prints each outcome as a
// JSON line ({ sandboxed, error } or { sandboxed, stdout }).

import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { Landlock } from "../../src/shell/landlock"
import { Shell } from "../../src/shell/shell"
import { Supervised } from "../../src/shell/supervised"
import { tempDir } from "../support/temp"

const [layers, port] = process.argv.slice(2).map(Number)
for (let layer = 0; layer < layers!; layer++) {
  const failed = Landlock.scopeSignals()
  if (failed !== undefined) throw new Error(`layer ${layer + 1}: ${failed}`)
}
Supervised.listening(port!)
const shell = Shell.make({}, { records: tempDir("core-runs-") })
const command = `(exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo connected || echo refused`
for (const sandboxed of [true, false]) {
  const location = tempDir("core-loc-")
  const outcome = await Effect.runPromiseExit(
      shell.run({
        argv: [shell.shell, "-c", command],
        cwd: location,
        env: { PATH: process.env.PATH },
        ...(sandboxed ? { sandbox: { location, approved: [] } } : {}),
      }),
  )
  console.log(
    JSON.stringify(
      Exit.isSuccess(outcome)
        ? { sandboxed, stdout: outcome.value.stdout.text }
        : { sandboxed, error: String((Cause.squash(outcome.cause) as { message?: string }).message) },
    ),
  )
}
process.exit(0)
