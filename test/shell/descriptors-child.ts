// Runs `echo hi` through core's shell, supervised and sandboxed, and prints how the run ended as one JSON line:
// started by the test, having first taken every descriptor it may hold but $SPARE (`bun test/shell/descriptors-child.ts
// RECORDS CWD`).

import { closeSync, openSync } from "node:fs"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Cause from "effect/Cause"
import { Shell } from "../../src/shell/shell"

const [records, cwd] = process.argv.slice(2)
const shell = Shell.make({}, { records: records! })
// Every descriptor the process may hold, taken (its limit set low by the test), but the few preparing the run needs.
const held: Array<number> = []
try {
  for (;;) held.push(openSync("/dev/null", "r"))
} catch {
  for (const fd of held.splice(0, Number(process.env.SPARE ?? 0))) closeSync(fd)
}
const exit = await Effect.runPromiseExit(shell.run({ argv: ["bash", "-c", "echo hi"], cwd: cwd!, sandbox: { location: cwd!, approved: [] } }))
const failure = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : undefined
console.log(
  JSON.stringify(
    Exit.isSuccess(exit)
      ? { ran: exit.value.stdout.text }
      : failure !== undefined && failure._tag === "Some"
        ? { failed: (failure.value as Shell.SpawnError).code, message: (failure.value as Shell.SpawnError).message }
        : { defect: String(Cause.pretty(exit.cause)).slice(0, 300) },
  ),
)
process.exit(0)
