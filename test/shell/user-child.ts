// core's shell as a developer runs it, not as root (`bun test/shell/user-child.ts RECORDS CWD COMMAND`, started by
// the test as another user): runs COMMAND sandboxed to CWD and prints the run's outcome as one JSON line.

import * as Effect from "effect/Effect"
import { Shell } from "../../src/shell/shell"

const [records, cwd, command] = process.argv.slice(2)
const shell = Shell.make({}, { records: records! })
const result = await Effect.runPromise(
  shell.run({ argv: ["bash", "-c", command!], cwd: cwd!, sandbox: { location: cwd!, approved: [] } }),
)
console.log(
  JSON.stringify({
    uid: process.getuid?.(),
    stdout: result.stdout.text,
    stderr: result.stderr.text,
    exitCode: result.exitCode,
    signal: result.signal,
    survivors: result.survivors,
  }),
)
