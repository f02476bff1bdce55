// Core as another user, for the guard's tests (`bun test/shell/guard-child.ts ROOT COMMAND`): runs COMMAND through
// the shell producer with a sandbox policy on ROOT/loc (records under ROOT/runs) and prints the result's stdout,
// stderr and what was undone as one JSON line.

import * as Effect from "effect/Effect"
import { join } from "node:path"
import { Shell } from "../../src/shell/shell"

const [root, command] = process.argv.slice(2)
const shell = Shell.make({}, { records: join(root!, "runs") })
const location = join(root!, "loc")
const result = await Effect.runPromise(
  shell.run({
    argv: [shell.shell, "-c", command!],
    cwd: location,
    env: { PATH: process.env.PATH, HOME: root },
    sandbox: { location, approved: [] },
  }),
)
process.stdout.write(`${JSON.stringify({ stdout: result.stdout.text, stderr: result.stderr.text, undone: result.undone })}\n`)
