// The compiled core's early dispatch to the per-call supervisor and to the starter of a sandboxed command: imported
// first by the CLI entry, so that `core __supervise PID [isolate] [deny=PORT,...]` runs the supervisor
// (./supervisor), and `core __start PID [isolate] [sandbox] [cold]` the starter (./starter), before any other module
// of core is initialised, and never returns to them; from source, run directly (`bun launch.ts __supervise PID`).
// Anything else passes straight through.

if (process.argv[2] === "__supervise") {
  const supervisor = await import("./supervisor")
  await supervisor.main(Number(process.argv[3]), supervisor.flags(process.argv.slice(4)))
} else if (process.argv[2] === "__start") {
  const starter = await import("./starter")
  await starter.main(Number(process.argv[3]), starter.flags(process.argv.slice(4)))
}

export {}
