// Hostile inputs run in a child process: a synchronous regular expression or loop that backtracks cannot be stopped
// by a test timeout, and a runtime it breaks (the shell grammar's) stays broken for the process.

import { expect } from "bun:test"

/** Runs `script` (a module, as `bun -e` takes it) in a child killed after `killMs`; the JSON it printed. */
export const inChild = async (script: string, killMs = 20_000): Promise<unknown> => {
  const child = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" })
  const killer = setTimeout(() => child.kill("SIGKILL"), killMs)
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  clearTimeout(killer)
  expect({ code, err }).toEqual({ code: 0, err: "" })
  return JSON.parse(out)
}
