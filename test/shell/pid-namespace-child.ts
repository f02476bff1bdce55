// Spawns processes as core spawns its supervisors in PID namespaces of their own (Native.spawnInPidNamespace), many
// times over from a fresh process, allocating a little between spawns (CHURN objects), so that the engine's first
// collections and compilations, and the threads it starts for them on demand, fall among the spawns. Then a spawn
// that fails (no such program). Prints, as one JSON line, how many processes started in a namespace of their own as
// its first process, whether the failed spawn threw, and that a thread and a full collection can still be had. An
// abort of the runtime (a thread it could not start) ends it before that line. 300 spawns: fewer than Bun.spawn alone
// needs to abort in such a loop (see Native.spawnInPidNamespace), more than core's own work there needed.

import { readlinkSync } from "node:fs"
import { Native } from "../../src/shell/native"

const count = Number(process.argv[2] ?? 300)
const CHURN = Number(process.argv[3] ?? 50)
const own = readlinkSync("/proc/self/ns/pid")
const options = {
  cwd: "/",
  env: { PATH: "/usr/bin:/bin" },
  stdio: ["ignore", "pipe", "pipe"] as ["ignore", "pipe", "pipe"],
  detached: true,
  serialization: "json" as const,
  ipc: () => {},
}
let kept: Array<unknown> = []
let first = 0
let namespaced = 0
for (let index = 0; index < count; index++) {
  for (let made = 0; made < CHURN + ((index * 7_919) % CHURN); made++) kept.push({ made, text: `x${made}` })
  if (kept.length > 300_000) kept = []
  // The shell prints its pid and its PID namespace as it sees them: 1 and a namespace of its own when it is first.
  const { value, namespace } = Native.spawnInPidNamespace(["/bin/sh", "-c", "echo $$ $(readlink /proc/self/ns/pid)"], options)
  const [pid, seen] = (await new Response(value.stdout).text()).trim().split(" ")
  await value.exited
  if (namespace && seen !== own) namespaced++
  if (pid === "1") first++
}
let failed = false
try {
  Native.spawnInPidNamespace(["/nonexistent/program"], options)
} catch {
  failed = true
}
// This thread can start threads again: a worker, and a full collection with the collector's helpers.
const worker = new Worker(URL.createObjectURL(new Blob(["postMessage('up')"], { type: "application/javascript" })))
const up = await new Promise<string>((resolve) => (worker.onmessage = (event) => resolve(event.data)))
worker.terminate()
Bun.gc(true)
console.log(JSON.stringify({ count, namespaced, first, failed, worker: up }))
