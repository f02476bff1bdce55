// A stand-in for core in tests that kill core (`bun test/shell/supervisor-child.ts RECORDS CWD COMMAND`): runs
// COMMAND through the shell producer, recording runs under RECORDS, and prints each progress tail on stdout so
// the test can wait for the command to be ready before it kills this process.

import * as Effect from "effect/Effect"
import { Shell } from "../../src/shell/shell"

const [records, cwd, command] = process.argv.slice(2)
const shell = Shell.make({}, { records: records! })
await Effect.runPromise(
  shell.run({
    argv: [shell.shell, "-c", command!],
    cwd: cwd!,
    onProgress: (update) => Effect.sync(() => process.stdout.write(update.tail)),
  }),
)
