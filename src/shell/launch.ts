// The compiled core's early dispatch to the per-call supervisor: imported first by the CLI entry, so that
// `core __supervise PID` runs the supervisor (./supervisor) before any other module of core is initialised, and
// never returns to them. Anything else passes straight through.

if (process.argv[2] === "__supervise") {
  const { Supervisor } = await import("./supervisor")
  await Supervisor.main(Number(process.argv[3]))
}

export {}
