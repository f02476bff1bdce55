// No command can connect to core's own port: once core records a port it listens on, a sandboxed command's TCP
// connections to it are refused by the kernel (bash's /dev/tcp, curl, bun's fetch), while other ports still
// connect; with the sandbox off nothing is restricted. Real listeners on loopback, real
// processes; Landlock's network rules (ABI 4) are required, and the tests say so where they are skipped.

import { afterAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { Landlock } from "../../src/shell/landlock"
import { Shell } from "../../src/shell/shell"
import { Supervised } from "../../src/shell/supervised"
import { tempDir } from "../support/temp"

const NET = Landlock.abi() >= 4
const needs = NET ? "" : " (SKIPPED: this kernel's Landlock has no network rules)"
// Harmless layers to stack under core's (the signal scope only) need ABI 6.
const SCOPED = Landlock.abi() >= 6
const scoped = SCOPED ? "" : " (SKIPPED: this kernel's Landlock has no signal scope)"

const listener = () =>
  Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("answered") })
const own = listener()
const other = listener()
afterAll(() => {
  own.stop(true)
  other.stop(true)
})

const shell = Shell.make({}, { records: tempDir("core-runs-") })
const perl = Bun.which("perl")

const run = (command: string) => {
  const location = tempDir("core-loc-")
  return Effect.runPromise(
    shell.run({ argv: [shell.shell, "-c", command], cwd: location, env: { PATH: process.env.PATH }, sandbox: { location, approved: [] } }),
  )
}

const tcp = (port: number) => `(exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo ${port}-connected || echo ${port}-refused`

describe("core's own port", () => {
  test.skipIf(!NET)(`a command cannot connect to it, by bash, curl or bun; other ports connect${needs}`, async () => {
    // A supervisor already up when the port is recorded is not used: the next command's knows the port.
    await Effect.runPromise(shell.warm)
    Supervised.listening(own.port!)
    const lines = [tcp(own.port!), tcp(other.port!)]
    if (Bun.which("curl") !== null) {
      lines.push(`curl -s http://127.0.0.1:${own.port}/ || echo curl-refused`, `curl -s http://127.0.0.1:${other.port}/; echo`)
    }
    lines.push(
      `bun -e 'fetch("http://127.0.0.1:${own.port}/").then((r) => r.text()).then(console.log, (e) => console.log("fetch-refused"))'`,
    )
    const result = await run(lines.join("\n"))
    const expected = [`${own.port}-refused`, `${other.port}-connected`]
    if (Bun.which("curl") !== null) expected.push("curl-refused", "answered")
    expected.push("fetch-refused")
    expect(result.stdout.text.trim().split("\n")).toEqual(expected)
    // Back to back, the next command (on the spare started meanwhile) is kept from it too.
    expect((await run(tcp(own.port!))).stdout.text).toBe(`${own.port}-refused\n`)
  })

  // Landlock takes REFER as handled, and denied, by every layer: the layer keeping commands off core's port made every
  // rename and link into another directory fail with EXDEV (git mv, git branch -m, bun install), as a sidecar ran them.
  // Run by root (a PID namespace, no signal scope layer: see the sandbox's test of the same).
  test.skipIf(!NET || process.getuid?.() !== 0)(`run by root, a command kept off it still renames and links files into other directories${needs}`, async () => {
    Supervised.listening(own.port!)
    const result = await run(`mkdir a b c && echo x > a/f && bun -e 'require("fs").renameSync("a/f", "b/f")' && ln b/f c/g && cat b/f c/g && ${tcp(own.port!)}`)
    expect({ stdout: result.stdout.text, stderr: result.stderr.text }).toEqual({ stdout: `x\nx\n${own.port}-refused\n`, stderr: "" })
  })

  // Landlock's rules see TCP alone: a Multipath TCP socket falls back to TCP against core's listener, and connected
  // (a command approved its own ask through core serve with it). Such sockets, and SMC's, are refused outright.
  test.skipIf(!NET || perl === null)(`a command cannot reach it by Multipath TCP or SMC, which Landlock does not see${needs}`, async () => {
    Supervised.listening(own.port!)
    // socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP) then connect; socket(AF_SMC, SOCK_STREAM, 0).
    const mptcp = (port: number) =>
      `perl -MSocket -e 'socket(my $s, AF_INET, SOCK_STREAM, 262) or do { print "socket: $!\n"; exit }; ` +
      `print connect($s, pack_sockaddr_in(${port}, inet_aton("127.0.0.1"))) ? "connected\n" : "refused: $!\n"'`
    const smc = `perl -MSocket -e 'print socket(my $s, 43, SOCK_STREAM, 0) ? "made\n" : "socket: $!\n"'`
    // Outside the sandbox this kernel makes a Multipath TCP socket that reaches the port (else the test shows nothing).
    const bare = Bun.spawnSync(["bash", "-c", mptcp(own.port!)]).stdout.toString()
    expect(bare).toBe("connected\n")
    const result = await run(`${mptcp(own.port!)}; ${mptcp(other.port!)}; ${smc}; ${tcp(other.port!)}`)
    expect(result.stdout.text).toBe(
      "socket: Protocol not supported\nsocket: Protocol not supported\nsocket: Address family not supported by protocol\n" +
        `${other.port}-connected\n`,
    )
  })

  test.skipIf(!NET)(`with the sandbox off, a command may connect${needs}`, async () => {
    Supervised.listening(own.port!)
    const off = Shell.make({ sandbox: "off" }, { records: tempDir("core-runs-") })
    const location = tempDir("core-loc-")
    const result = await Effect.runPromise(
      off.run({ argv: [off.shell, "-c", tcp(own.port!)], cwd: location, sandbox: { location, approved: [] } }),
    )
    expect(result.stdout.text).toBe(`${own.port}-connected\n`)
  })

  // The kernel stacks at most 16 Landlock layers: a core started under other programs' layers (another sandbox, a
  // command that stacked fifteen and ran core) gets its own refused. The sandbox's layer, then the ports', each
  // refused in turn: a command whose layer on core's ports was refused does not start, never runs able to connect.
  test.skipIf(!SCOPED)(`under layers of other programs, a command core cannot keep off its port does not start${scoped}`, async () => {
    const outcomes = async (layers: number) => {
      const child = Bun.spawn(["bun", `${import.meta.dir}/layers-child.ts`, String(layers), String(own.port)], {
        stdout: "pipe",
        stderr: "pipe",
      })
      const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
      expect(await child.exited, err).toBe(0)
      return out.trim().split("\n").map((line) => JSON.parse(line))
    }
    // Room for the sandbox's layer and the ports' on top of fifteen: the sandboxed command's ports layer is refused.
    expect(await outcomes(15)).toEqual([
      { sandboxed: true, error: "Could not keep the command off core's ports: landlock_restrict_self failed (errno 7)" },
      { sandboxed: false, stdout: "refused\n" },
    ])
    // No room at all: neither starts.
    expect(await outcomes(16)).toEqual([
      { sandboxed: true, error: "Could not apply the sandbox: landlock_restrict_self failed (errno 7)" },
      { sandboxed: false, error: "Could not keep the command off core's ports: landlock_restrict_self failed (errno 7)" },
    ])
  }, 60_000)
})
