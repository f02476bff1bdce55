// One core's shell, as a model's calls would reach it (`bun test/shell/attacks-child.ts RECORDS CWD PIDS MODE
// COMMAND...`; PIDS "no" runs sandboxed commands without a PID namespace, as core run by a user who is not root
// does). MODE "sequence" runs the commands in turn, "sockets" too with Unix sockets granted (`shell.sockets`), "bare" in
// turn without a sandbox (as `shell.sandbox: "off"` runs them); MODE "crowd" runs its one command while another call runs
// (named core-victim, until the command writes a file `done` in the Location, 30 s at most) and a spare supervisor waits for the next (readied as a
// first call ends once the command has started), then one call more. Prints
// each run's outcome as one JSON line (crowd: the command's, the other call's, the last's). Started by the attack
// tests, as root or as another user: that it prints every line shows that core outlived each command.

import * as Effect from "effect/Effect"
import { Shell } from "../../src/shell/shell"

const [records, cwd, pids, mode, ...commands] = process.argv.slice(2)
const shell = Shell.make(mode === "sockets" ? { sockets: [cwd!] } : {}, { records: records!, pids: pids !== "no" })

const run = (command: string) =>
  Effect.runPromise(
    shell.run({ argv: ["bash", "-c", command], cwd: cwd!, ...(mode === "bare" ? {} : { sandbox: { location: cwd!, approved: [] } }) }).pipe(
      Effect.map((result) => ({
        stdout: result.stdout.text,
        stderr: result.stderr.text,
        exitCode: result.exitCode,
        signal: result.signal,
        survivors: result.survivors,
      })),
      Effect.catch((error) => Effect.succeed({ error: String(error) })),
    ),
  )

const print = (outcome: unknown) => console.log(JSON.stringify(outcome))

if (mode === "crowd") {
  // A call first that ends once the command has started (it writes `started`): with every call launched by then, the
  // spare readied as it ends waits for the next call. Ended by time instead, it could end while the others still
  // wait their turn to start (one at a time on 2 processors, seconds apart on a busy machine), and one of them took
  // the spare.
  const wait = (file: string) => `for i in $(seq 300); do [ -e ${file} ] && exit 0; sleep 0.1; done; exit 1`
  const first = run(wait("started"))
  const other = run(`exec -a core-victim bash -c '${wait("done")}'`)
  const attack = run(`: > started; ${commands[0]!}`)
  await first
  print(await attack)
  print(await other)
  print(await run("echo next"))
} else for (const command of commands) print(await run(command))
