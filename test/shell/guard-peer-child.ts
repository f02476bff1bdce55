// Another core process, for the guard's tests (`bun test/shell/guard-peer-child.ts LOCATION GRANTED GUARDS COMMAND`):
// (`plain` after them: without mount namespaces) runs COMMAND through its own shell producer with a sandbox policy on LOCATION, GRANTED granted for writing, its
// guard noting what it found in GUARDS (as every core sharing a data directory does), and prints the result's stdout
// and what was undone as one JSON line.

import * as Effect from "effect/Effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Shell } from "../../src/shell/shell"

const [location, granted, guards, command, plain] = process.argv.slice(2)
const scratch = mkdtempSync(join(tmpdir(), "core-peer-"))
// Removed as this process exits, when nothing of its own writes there any more.
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }))
const shell = Shell.make(
  { allowWrite: [granted!] },
  { records: join(scratch, "runs"), keeping: join(scratch, "undone"), guards: guards!, ...(plain === "plain" ? { namespaces: false } : {}) },
)
const result = await Effect.runPromise(
  shell.run({
    argv: [shell.shell, "-c", command!],
    cwd: location!,
    env: { PATH: process.env.PATH, HOME: location },
    sandbox: { location: location!, approved: [] },
  }),
)
process.stdout.write(`${JSON.stringify({ stdout: result.stdout.text, undone: result.undone })}\n`)
