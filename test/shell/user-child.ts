// core's shell as a developer runs it, not as root (`bun test/shell/user-child.ts RECORDS CWD COMMAND [FROZEN]`,
// started by the test as another user, or in a memory cgroup of its own): runs COMMAND sandboxed to CWD (with FROZEN, a file name in CWD, denied to
// edit) and prints the run's outcome as one JSON line.

import * as Effect from "effect/Effect"
import { Shell } from "../../src/shell/shell"

const [records, cwd, command, frozen] = process.argv.slice(2)
const editDenied = frozen === undefined ? undefined : (real: string) => real === `${cwd}/${frozen}`
const shell = Shell.make({}, { records: records! })
const result = await Effect.runPromise(
  shell.run({
    argv: ["bash", "-c", command!],
    cwd: cwd!,
    sandbox: { location: cwd!, approved: [], ...(editDenied === undefined ? {} : { editDenied }) },
  }),
)
console.log(
  JSON.stringify({
    uid: process.getuid?.(),
    stdout: result.stdout.text,
    stderr: result.stderr.text,
    exitCode: result.exitCode,
    signal: result.signal,
    outOfMemory: result.outOfMemory ?? false,
    survivors: result.survivors,
    refused: result.refused ?? [],
  }),
)
