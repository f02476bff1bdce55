// Run by search-threads.test.ts bundled into one file, in a fresh process whose runtime has started no thread of
// its shared I/O pool (a process that loads its modules from files starts that pool as it loads them): confined
// searches of ROOT as core runs them (SearchProcess.start with ROOT as the root), one given input on stdin and one
// printing much, then which threads of this process carry no_new_privs (as a confined search thread does, and every
// thread it starts), and whether core's asynchronous file writes to OUTSIDE succeed after them. Prints, as JSON,
// those threads' names, whether the pool had started before the searches, what the searches printed and which
// writes failed.

import { readdirSync, readFileSync } from "node:fs"
import { writeFile } from "node:fs/promises"
import { join } from "node:path"
import { SearchProcess } from "../../src/builtin/search-process"

const [root, rg, outside] = process.argv.slice(2) as [string, string, string]

const threads = (marked: boolean) => {
  const names: Array<string> = []
  for (const task of readdirSync("/proc/self/task")) {
    const status = readFileSync(`/proc/self/task/${task}/status`, "utf8")
    if (!marked || /^NoNewPrivs:\s*1$/m.test(status)) names.push(/^Name:\s*(.*)$/m.exec(status)?.[1] ?? "?")
  }
  return names.sort()
}

const poolBefore = threads(false).some((name) => name.startsWith("Bun Pool"))
const search = async (argv: ReadonlyArray<string>, stdin?: string) => {
  let printed = 0
  const running = await SearchProcess.start({
    argv,
    cwd: root,
    root,
    files: [argv[0]!],
    ...(stdin === undefined ? {} : { stdin }),
    onData: (chunk) => (printed += chunk.length),
    timeoutMs: 30_000,
  })
  const ended = await running.ended
  return { ended: ended.kind === "ended" ? ended.exitCode : ended.kind, printed }
}
const searches = [
  await search([rg, "--no-config", "--count", "--file=-", "--", "."], "needle\n".repeat(20_000)),
  await search([rg, "--no-config", "--line-number", "--regexp=needle", "--", "."]),
]
// core's own asynchronous file work after them (keeping a managed output is such work), outside the root.
const writes = await Promise.allSettled(
  Array.from({ length: 8 }, (_, index) => writeFile(join(outside, `kept-${index}`), "x".repeat(1 << 20))),
)
const failed = writes.flatMap((write) => (write.status === "rejected" ? [String(write.reason)] : []))
console.log(JSON.stringify({ poolBefore, searches, marked: threads(true), failed }))
process.exit(0)
