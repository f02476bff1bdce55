// `bun run bench`: runs every benchmark, each in its own process so one's heap and JIT state never colour
// another's figures, prints each report as it completes, then a summary of every target as met or not met.
// Figures only: the exit code says whether the benchmarks ran, never whether a target was met.

import { cpus, loadavg } from "node:os"
import { join } from "node:path"
import { render, renderTargets, type Report } from "./measure"

const BENCHMARKS = ["settle.ts", "cold-start.ts", "registry.ts", "bounding.ts", "permission.ts", "shell.ts", "sandbox-spawn.ts", "search.ts", "search-confined.ts", "read.ts", "boundary.ts", "serve.ts", "serve-sse.ts", "serve-locations.ts", "serve-bash.ts", "mcp.ts", "mcp-inprocess.ts", "mcp-client.ts", "store.ts", "checkpoints.ts", "store-pg.ts", "outputs-s3.ts", "provider.ts", "client.ts", "plugins.ts", "closure.ts", "webfetch.ts", "image.ts", "trace.ts", "guard.ts"] as const

const runOne = async (file: string): Promise<Report | string> => {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, file), "--json"], {
    cwd: join(import.meta.dir, ".."),
    stdout: "pipe",
    stderr: "inherit",
  })
  const [code, stdout] = await Promise.all([child.exited, new Response(child.stdout).text()])
  if (code !== 0) return `${file} failed (exit ${code})`
  return JSON.parse(stdout) as Report
}

const started = performance.now()
const cpu = cpus()
console.log(
  `core benchmarks — bun ${Bun.version}, ${cpu.length} × ${cpu[0]?.model.trim() ?? "unknown CPU"}, ` +
    `load average ${loadavg().map((value) => value.toFixed(2)).join(" ")}, ${new Date().toISOString()}\n`,
)

const reports: Array<Report> = []
const failures: Array<string> = []
for (const file of BENCHMARKS) {
  const outcome = await runOne(file)
  if (typeof outcome === "string") {
    failures.push(outcome)
    console.error(outcome)
    continue
  }
  reports.push(outcome)
  console.log(`${render(outcome)}\n`)
}

console.log("== summary: targets ==")
for (const report of reports) console.log(renderTargets(report.targets, `${report.name.split(":")[0]}: `).join("\n"))
const targets = reports.flatMap((report) => report.targets)
console.log(
  `\n${targets.filter((target) => target.met).length} of ${targets.length} targets met; ` +
    `${((performance.now() - started) / 1000).toFixed(0)} s in all`,
)
for (const failure of failures) console.log(`did not run: ${failure}`)
if (failures.length > 0) process.exitCode = 1
