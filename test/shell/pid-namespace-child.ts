// Spawns processes as core spawns its supervisors in PID namespaces of their own (Native.spawnInPidNamespace), many
// times over from a fresh process, and prints one JSON line of what it saw; an abort of the runtime (a thread it could
// not start while the namespace was switched) ends it before that line. MODE "bare": COUNT spawns of a program that
// exits at once, nothing else allocated between them, so that the collections Bun.spawn's own allocations start end
// at a later spawn. MODE "churn": COUNT spawns with CHURN objects allocated between them, each shell printing its pid
// and PID namespace as it sees them (1 and one of its own); then a spawn that fails (no such program), a thread and a
// full collection.

import { readlinkSync } from "node:fs"
import { Native } from "../../src/shell/native"

const [mode, countText, churnText] = process.argv.slice(2)
const count = Number(countText)
const CHURN = Number(churnText ?? 0)
const base = { cwd: "/", env: { PATH: "/usr/bin:/bin" }, detached: true, serialization: "json" as const, ipc: () => {} }

if (mode === "bare") {
  const options = { ...base, stdio: ["ignore", "ignore", "ignore"] as ["ignore", "ignore", "ignore"] }
  const argv = ["/bin/true"]
  let namespaced = 0
  for (let index = 0; index < count; index++) {
    const { value, namespace } = Native.spawnInPidNamespace(argv, options)
    await value.exited
    if (namespace) namespaced++
  }
  console.log(JSON.stringify({ count, namespaced }))
} else {
  const own = readlinkSync("/proc/self/ns/pid")
  const options = { ...base, stdio: ["ignore", "pipe", "pipe"] as ["ignore", "pipe", "pipe"] }
  let kept: Array<unknown> = []
  let first = 0
  let namespaced = 0
  for (let index = 0; index < count; index++) {
    for (let made = 0; made < CHURN + ((index * 7_919) % CHURN); made++) kept.push({ made, text: `x${made}` })
    if (kept.length > 300_000) kept = []
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
}
