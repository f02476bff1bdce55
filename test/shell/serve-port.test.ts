// Under `core serve` (the compiled binary), a command cannot connect to core's own port: bash's /dev/tcp, curl
// and bun's fetch from a bash call are refused by the kernel, while another local port still answers. The script
// is a file, so the line itself names nothing outside the Location. Needs Landlock's network rules (ABI 4).
// core builds the rules once and hands them to each supervisor as a descriptor: whoever held it could add a rule
// granting core's port to every command started after, so no command has it, nor reaches its supervisor's.

import { readdirSync, readFileSync, readlinkSync } from "node:fs"
import { SidecarPorts } from "../../src/permission/sidecar-ports"
import { afterAll, describe, expect, test } from "bun:test"
import { Landlock } from "../../src/shell/landlock"
import { sandbox, serve } from "../server/support"
import { binary } from "../support/binary"

const NET = Landlock.abi() >= 4
const needs = NET ? "" : " (SKIPPED: this kernel's Landlock has no network rules)"

const other = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("other") })
afterAll(() => other.stop(true))

/** The processes whose parent is `parent`, from /proc. */
const childrenOf = (parent: number): ReadonlyArray<number> =>
  readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/status`, "utf8").match(/^PPid:\s+(\d+)$/m)?.[1] === String(parent)
      } catch {
        return false
      }
    })

const commandOf = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8")
  } catch {
    return ""
  }
}

/** What each open descriptor of `pid` is, by its number. */
const descriptorsOf = (pid: number): Record<number, string> =>
  Object.fromEntries(
    readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      try {
        return [[Number(fd), readlinkSync(`/proc/${pid}/fd/${fd}`)] as const]
      } catch {
        return []
      }
    }),
  )

const SCRIPT = `for port in "$@"; do
  (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && echo "tcp $port connected" || echo "tcp $port refused"
  if command -v curl >/dev/null; then curl -s -o /dev/null "http://127.0.0.1:$port/v1/health" && echo "curl $port connected" || echo "curl $port refused"; fi
  bun -e "fetch('http://127.0.0.1:$port/v1/health').then(() => console.log('fetch $port connected'), () => console.log('fetch $port refused'))"
done
`

describe("core serve and its own port", () => {
  test.skipIf(!NET)(`a command cannot connect to core's port; another port answers${needs}`, async () => {
    const box = sandbox({ "net.sh": SCRIPT })
    const served = await serve(box)
    const port = Number(new URL(served.url).port)
    const turn = await served.turn()
    const settled = await served.settle(turn.turnID, { name: "bash", input: { command: `bash net.sh ${port} ${other.port}` } })
    expect(settled.body.status).toBe("success")
    const lines: Array<string> = settled.body.structured.stdout.trim().split("\n")
    const curl = Bun.which("curl") !== null
    const expected = (at: number, outcome: string) => [
      `tcp ${at} ${outcome}`,
      ...(curl ? [`curl ${at} ${outcome}`] : []),
      `fetch ${at} ${outcome}`,
    ]
    expect(lines).toEqual([...expected(port, "refused"), ...expected(other.port!, "connected")])
    served.child.kill("SIGTERM")
    await served.exited()
  }, 30_000)

  test.skipIf(!NET)(`a command of one sidecar, or of core exec, cannot connect to another sidecar of the user's${needs}`, async () => {
    // Two sidecars sharing nothing (each its own Location and data directory), as two hosts on one machine run them.
    const first = sandbox({ "net.sh": SCRIPT })
    const second = sandbox({})
    const one = await serve(first)
    const two = await serve(second)
    const port = (served: { url: string }) => Number(new URL(served.url).port)
    expect(readdirSync(SidecarPorts.folder()!)).toEqual(expect.arrayContaining([`${two.child.pid}-${port(two)}`]))
    const turn = await one.turn()
    const settled = await one.settle(turn.turnID, { name: "bash", input: { command: `bash net.sh ${port(two)} ${other.port}` } })
    expect(settled.body.status).toBe("success")
    const lines: Array<string> = settled.body.structured.stdout.trim().split("\n")
    const about = (at: number) => lines.filter((line) => line.split(" ")[1] === String(at)).map((line) => line.split(" ")[2])
    expect(about(port(two)).length).toBeGreaterThanOrEqual(2)
    expect(new Set(about(port(two)))).toEqual(new Set(["refused"]))
    expect(new Set(about(other.port!))).toEqual(new Set(["connected"]))
    // core exec settling in process (its own data directory, no sidecar of it running) keeps its command off too.
    const exec = Bun.spawn([await binary(), "exec", "bash", "--input", JSON.stringify({ command: `bash net.sh ${port(two)}` }), "--location", first.location], {
      env: { ...process.env, ...first.env, CORE_DATA_DIR: `${first.location}-exec-data` },
      stdout: "pipe",
      stderr: "pipe",
    })
    const printed = JSON.parse(await new Response(exec.stdout).text())
    expect(printed.status).toBe("success")
    expect(printed.structured.stdout).toContain(`tcp ${port(two)} refused`)
    expect(printed.structured.stdout).not.toContain("connected")
    // A sidecar that stopped takes its port out.
    const pid = two.child.pid
    two.child.kill("SIGTERM")
    await two.exited()
    expect(readdirSync(SidecarPorts.folder()!).filter((name) => name.startsWith(`${pid}-`))).toEqual([])
    one.child.kill("SIGTERM")
    await one.exited()
  }, 60_000)

  test.skipIf(!NET)(`no command holds the rules' descriptor or reaches its supervisor's, cold or from a spare${needs}`, async () => {
    const box = sandbox({ "fds.sh": `for fd in /proc/$$/fd/*; do readlink "$fd"; done
for fd in /proc/1/fd/*; do
  readlink "$fd" >/dev/null 2>&1 && echo "supervisor's $fd read"
  (exec 9<"$fd") 2>/dev/null && echo "supervisor's $fd opened"
done
echo "supervisor's looked at"
(exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && echo "tcp connected" || echo "tcp refused"
` })
    const served = await serve(box)
    const port = Number(new URL(served.url).port)
    const turn = await served.turn()
    // The first two start supervisors for the call at hand; from the third on, the spare readied after the one before.
    for (let call = 0; call < 4; call++) {
      const settled = await served.settle(turn.turnID, { name: "bash", input: { command: `bash fds.sh ${port}` } })
      expect(settled.body.status).toBe("success")
      const stdout: string = settled.body.structured.stdout
      expect(stdout).not.toContain("landlock")
      // The supervisor is the first process of the command's PID namespace: its descriptors are named, never reached.
      expect(stdout).toContain("supervisor's looked at")
      expect(stdout).not.toContain("supervisor's /proc")
      expect(stdout).toContain("tcp refused")
      // Leaves the spare time to be ready: the next call takes it rather than starting its own.
      await Bun.sleep(1_000)
    }
    // The spare waiting now was handed the rules core built (its descriptor 3) rather than building its own.
    const supervisors = childrenOf(served.child.pid).filter((pid) => commandOf(pid).includes("__supervise"))
    expect(supervisors.length).toBeGreaterThan(0)
    for (const supervisor of supervisors) expect(descriptorsOf(supervisor)[3]).toBe("anon_inode:[landlock-ruleset]")
    served.child.kill("SIGTERM")
    await served.exited()
  }, 30_000)
})
