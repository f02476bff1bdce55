import { readdirSync } from "node:fs"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { Shell } from "../src/shell/shell"
const real = process.execPath
const shell = Shell.make({}, { records: "/tmp/rt/recs" })
;(process as any).execPath = "/nonexistent/bun"
const before = readdirSync("/proc/self/fd").length
const exit = await Effect.runPromiseExit(shell.run({ argv: ["true"], cwd: "/tmp" }))
console.log(Exit.isFailure(exit) ? JSON.stringify(exit.cause).slice(0, 400) : "success")
console.log("fds before", before, "after", readdirSync("/proc/self/fd").length)
;(process as any).execPath = real
const ok = await Effect.runPromiseExit(shell.run({ argv: ["true"], cwd: "/tmp" }))
console.log("after restore", Exit.isSuccess(ok))
