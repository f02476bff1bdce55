// The compiled core's early dispatch to the per-call supervisor: imported first by the CLI entry, so that
// `core __supervise PID [isolate] [deny=PORT,...]` runs the supervisor (./supervisor) before any other module of core is
// initialised, and never returns to them; from source, run directly (`bun launch.ts __supervise PID [isolate]`).
// Anything else passes straight through.

if (process.argv[2] === "__supervise") {
  const supervisor = await import("./supervisor")
  await supervisor.main(Number(process.argv[3]), supervisor.flags(process.argv.slice(4)))
}

export {}
