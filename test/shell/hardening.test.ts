// The sandbox's kernel side, attacked through the compiled binary as a model would, with `core exec bash` under
// {"*":"allow"}: no device files, no capability a build has no use for, no abstract Unix socket made outside, no
// socket file outside the Location unless core.json grants it (pairs and pipes still work), no user's terminal,
// no host shared memory (a /dev/shm of its own instead), no password hash or private key under /etc. Where the kernel has no
// Landlock or core does not run as root, the tests that need them are skipped and say so in their names.

import { afterEach, describe, expect, test } from "bun:test"
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Capabilities } from "../../src/shell/capabilities"
import { Landlock } from "../../src/shell/landlock"
import { Namespace } from "../../src/shell/namespace"
import { Sockets } from "../../src/shell/sockets"
import { exec, sandbox, settlementOf, type Sandbox } from "../cli/fixture"
import { tempDir } from "../support/temp"

const LANDLOCK = Landlock.abi() > 0
const SCOPED = Landlock.abi() >= 6
const ROOT = process.getuid?.() === 0
const needs = LANDLOCK ? "" : " (SKIPPED: this kernel has no Landlock)"
const needsRoot = !LANDLOCK ? needs : ROOT ? "" : " (SKIPPED: core does not run as root here)"
const needsScope = SCOPED ? "" : " (SKIPPED: this kernel's Landlock has no scopes, ABI 6)"

/** A Location allowing every command, holding `files`, with `shell` settings. */
const location = (files: Record<string, string>, shell: Record<string, unknown> = {}): Sandbox =>
  sandbox({ "core.json": JSON.stringify({ permission: { "*": "allow" }, shell }), ...files })

/** Runs `bash w.sh` (the script holding the attack) and answers its stdout. */
const script = async (box: Sandbox): Promise<string> => {
  const result = await exec(box, "bash", { command: "bash w.sh" })
  const settlement = settlementOf(result)
  expect(settlement.status).toBe("success")
  return (settlement.structured as { stdout: string }).stdout
}

/** A client that connects to `address` ("@name" for an abstract one) and prints the reply or the error's name. */
const CLIENT = `import errno, socket, sys
address = sys.argv[1]
if address.startswith("@"): address = "\\0" + address[1:]
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(address)
    print("reply " + s.recv(16).decode().strip())
except OSError as e:
    print("refused " + errno.errorcode.get(e.errno, str(e.errno)))
`

/** A client that connects to the socket file `path`, and on failure says so as Go's programs (docker) do. */
const NAMING_CLIENT = `import socket, sys
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    print("reply " + s.recv(16).decode().strip())
except OSError as e:
    print(f"dial unix {sys.argv[1]}: {e.strerror}", file=sys.stderr)
    sys.exit(1)
`
/** A listener outside any sandbox, as ssh-agent or a desktop bus would be: answers "pong" to every connection. */
const LISTENER = `import socket, sys
address = sys.argv[1]
if address.startswith("@"): address = "\\0" + address[1:]
s = socket.socket(socket.AF_UNIX)
s.bind(address)
s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b"pong\\n")
    c.close()
`

const listeners: Array<Bun.Subprocess> = []
afterEach(() => {
  for (const listener of listeners.splice(0)) listener.kill("SIGKILL")
})

/** Starts a listener on `address` and resolves once it accepts connections. */
const listen = async (address: string): Promise<void> => {
  const child = Bun.spawn(["python3", "-c", LISTENER, address], { stdout: "pipe", stderr: "inherit" })
  listeners.push(child)
  const reader = child.stdout.getReader()
  const { value } = await reader.read()
  expect(new TextDecoder().decode(value)).toStartWith("ready")
}

describe("devices and capabilities", () => {
  test.skipIf(!LANDLOCK || !ROOT)(`a root command cannot make a device file, only a fifo${needsRoot}`, async () => {
    const box = location({
      "w.sh": "mknod ./blk b 8 0 2>&1 || echo no-block; mknod ./chr c 1 3 2>&1 || echo no-char; mknod ./fifo p && echo fifo\n",
    })
    const stdout = await script(box)
    expect(stdout).toContain("no-block")
    expect(stdout).toContain("no-char")
    expect(stdout).toContain("fifo\n")
  })

  test.skipIf(!LANDLOCK || !ROOT)(`Landlock alone refuses a device file where it grants writing, to root with CAP_MKNOD${needsRoot}`, async () => {
    const directory = tempDir("core-devices-")
    const child = [
      `import { Landlock } from ${JSON.stringify(join(import.meta.dir, "../../src/shell/landlock"))}`,
      'const mknod = Bun.which("mknod")!',
      `const failed = Landlock.restrict({ read: Landlock.granted(Landlock.SYSTEM_READABLE, []), write: [${JSON.stringify(directory)}], devices: ["/dev"] })`,
      "if (failed !== undefined) throw new Error(failed)",
      `for (const args of [["blk", "b", "8", "0"], ["chr", "c", "1", "3"], ["fifo", "p"]]) {`,
      `  const made = Bun.spawnSync([mknod, ${JSON.stringify(directory)} + "/" + args[0], ...args.slice(1)], { stderr: "ignore" })`,
      "  console.log(args[0], made.exitCode === 0 ? 'made' : 'refused')",
      "}",
    ].join("\n")
    const script = join(tempDir("core-script-"), "restricted.ts")
    await Bun.write(script, child)
    const run = Bun.spawn([process.execPath, script], { stdout: "pipe", stderr: "inherit" })
    const [code, stdout] = await Promise.all([run.exited, new Response(run.stdout).text()])
    expect(code).toBe(0)
    expect(stdout).toBe("blk refused\nchr refused\nfifo made\n")
  })

  test.skipIf(!LANDLOCK || !ROOT)(`a root command keeps only the capabilities a build uses${needsRoot}`, async () => {
    const box = location({ "w.sh": "grep -E '^Cap(Bnd|Eff|Prm|Inh|Amb)' /proc/self/status\n" })
    const sets = Object.fromEntries(
      (await script(box))
        .trim()
        .split("\n")
        .map((line) => line.split(":\t") as [string, string]),
    )
    const kept = Capabilities.KEPT.reduce((mask, capability) => mask | (1n << BigInt(capability)), 0n)
    expect(BigInt(`0x${sets.CapBnd}`)).toBe(kept)
    expect(BigInt(`0x${sets.CapEff}`)).toBe(kept)
    expect(BigInt(`0x${sets.CapPrm}`)).toBe(kept)
    expect(BigInt(`0x${sets.CapInh}`)).toBe(0n)
    expect(BigInt(`0x${sets.CapAmb}`)).toBe(0n)
    // CAP_MKNOD, CAP_SYS_RAWIO, CAP_SYS_MODULE and CAP_DAC_READ_SEARCH by name.
    for (const capability of [27, 17, 16, 2]) expect((kept >> BigInt(capability)) & 1n).toBe(0n)
  })
})

describe("abstract Unix sockets", () => {
  test.skipIf(!LANDLOCK)(`a command cannot connect to an abstract socket made outside${needs}`, async () => {
    const name = `@core-test-${crypto.randomUUID()}`
    await listen(name)
    const stdout = await script(location({ "client.py": CLIENT, "w.sh": `python3 client.py ${name}\n` }))
    expect(stdout).toStartWith("refused ")
  })

  test.skipIf(!SCOPED)(`with Unix sockets granted, Landlock's scope still refuses an abstract one made outside${needsScope}`, async () => {
    const name = `@core-test-${crypto.randomUUID()}`
    await listen(name)
    const granted = join(tempDir("core-granted-"), "agent.sock")
    const stdout = await script(
      location({ "client.py": CLIENT, "w.sh": `python3 client.py ${name}\n` }, { sockets: [granted] }),
    )
    expect(stdout).toBe("refused EPERM\n")
  })
})

describe("socket files", () => {
  test.skipIf(!LANDLOCK)(`a socket file outside the Location (an ssh-agent's) refuses the command${needs}`, async () => {
    const agent = join(tempDir("ssh-"), "agent.1")
    await listen(agent)
    const stdout = await script(location({ "client.py": CLIENT, "w.sh": `python3 client.py ${agent}\n` }))
    expect(stdout).toBe("refused EACCES\n")
  })

  // A refusal of a socket file in a folder the command may read said nothing of the sandbox: docker's "dial unix
  // /var/run/docker.sock: connect: permission denied" reads as the user's own, and "connection refused" as a server
  // that is down. Named now as the sandbox's, with the key that grants it.
  test.skipIf(!LANDLOCK)(`a socket file the command may not connect to is named to the model as the sandbox's, a stopped server's is not${needs}`, async () => {
    const text = async (box: Sandbox) => {
      const settlement = settlementOf(await exec(box, "bash", { command: "bash w.sh" }))
      return settlement.content.map((part) => (part.type === "text" ? part.text : "")).join("")
    }
    /** The paths the last line names as the sandbox's (other refusals, a toolchain's on the machine, may come too). */
    const kept = (said: string): ReadonlyArray<string> =>
      /\n([^\n]*): kept out by core's sandbox; the user can grant (?:it|them) in core\.json \(shell\.allowRead or shell\.allowWrite; a socket to connect to, shell\.sockets\)\.$/
        .exec(said)?.[1]
        ?.split(", ") ?? []
    // No socket granted: the command can make none, even to a socket file in its own Location.
    const own = location({ "client.py": NAMING_CLIENT })
    const app = join(own.location, "app.sock")
    await listen(app)
    writeFileSync(join(own.location, "w.sh"), `python3 client.py ${app}\n`)
    const refused = await text(own)
    expect(refused).toContain(`dial unix ${app}: Permission denied\n\nExit code 1\n`)
    expect(kept(refused)).toContain(app)
    // One granted: another in a folder the command may read is covered, and answers "connection refused"; the
    // granted one's server is stopped, which answers the same and is nothing of the sandbox's.
    const readable = tempDir("core-readable-")
    const docker = join(readable, "docker.sock")
    await listen(docker)
    const agent = join(tempDir("ssh-"), "agent.1")
    await listen(agent)
    for (const listener of listeners.splice(1)) {
      listener.kill("SIGKILL")
      await listener.exited
    }
    const box = location(
      { "client.py": NAMING_CLIENT, "w.sh": `python3 client.py ${agent}; python3 client.py ${docker}\n` },
      { sockets: [agent], allowRead: [readable] },
    )
    const said = await text(box)
    expect(said).toContain(`dial unix ${agent}: Connection refused\n`)
    expect(said).toContain(`dial unix ${docker}: Connection refused\n`)
    expect(kept(said)).toContain(docker)
    expect(kept(said)).not.toContain(agent)
  })

  test.skipIf(!LANDLOCK)(`a socket granted in core.json, by variable, is connectable${needs}`, async () => {
    const agent = join(tempDir("ssh-"), "agent.1")
    await listen(agent)
    const box = location({ "client.py": CLIENT, "w.sh": `python3 client.py ${agent}\n` }, { sockets: ["$SSH_AUTH_SOCK"] })
    const stdout = await script({ ...box, env: { ...box.env, SSH_AUTH_SOCK: agent } })
    expect(stdout).toBe("reply pong\n")
  })

  test.skipIf(!LANDLOCK || !ROOT)(`with one socket granted, every other socket file outside stays refused${needsRoot}`, async () => {
    const agent = join(tempDir("ssh-"), "agent.1")
    const docker = join(tempDir("run-"), "docker.sock")
    await listen(agent)
    await listen(docker)
    const box = location(
      { "client.py": CLIENT, "w.sh": `python3 client.py ${agent}; python3 client.py ${docker}\n` },
      { sockets: [docker] },
    )
    expect(await script(box)).toBe("refused ECONNREFUSED\nreply pong\n")
  })

  test.skipIf(!LANDLOCK)(`with sockets granted, a command's own server and client in the Location work${needs}`, async () => {
    const server = LISTENER.replace("while True:", "for _ in range(1):")
    const box = location(
      {
        "server.py": server,
        "client.py": CLIENT,
        "w.sh": "python3 server.py ./own.sock > ready.txt &\nuntil [ -s ready.txt ]; do :; done\npython3 client.py ./own.sock\nwait\n",
      },
      { sockets: [join(tempDir("run-"), "docker.sock")] },
    )
    expect(await script(box)).toBe("reply pong\n")
  })

  test.skipIf(!LANDLOCK || process.arch !== "x64")(`io_uring, which could make a socket out of the filter's sight, is refused${needs}${
    process.arch === "x64" ? "" : " (SKIPPED: the script calls io_uring_setup by its x86_64 number)"
  }`, async () => {
    const box = location({
      "ring.py": [
        "import ctypes, errno",
        "libc = ctypes.CDLL(None, use_errno=True)",
        "params = ctypes.create_string_buffer(120)",
        "fd = libc.syscall(425, 1, params)",
        'print("ring" if fd >= 0 else errno.errorcode[ctypes.get_errno()])',
      ].join("\n"),
      "w.sh": "python3 ring.py\n",
    })
    expect(await script(box)).toBe("ENOSYS\n")
  })

  test.skipIf(!LANDLOCK)(`socket pairs, pipes and multiprocessing's pipes still work without any grant${needs}`, async () => {
    const box = location({
      "pair.py": [
        "import socket, multiprocessing",
        "a, b = socket.socketpair()",
        'a.sendall(b"pair")',
        "print(b.recv(4).decode())",
        "def child(end): end.send(sum(map(abs, [-1, -2, 3])))",
        "mine, theirs = multiprocessing.Pipe()",
        "process = multiprocessing.Process(target=child, args=(theirs,))",
        "process.start()",
        "print(mine.recv())",
        "process.join()",
      ].join("\n"),
      "w.sh": "python3 pair.py\necho piped | cat\n",
    })
    expect(await script(box)).toBe("pair\n6\npiped\n")
  })
})

describe("socket grants", () => {
  test("expand variables and ~ from core's environment; unset variables and relative paths grant nothing", () => {
    const own = tempDir("core-loc-")
    const env = { SSH_AUTH_SOCK: "/run/agent.sock", EMPTY: "" }
    expect(Sockets.reachable(undefined, [own], env)).toBeUndefined()
    expect(Sockets.reachable(["$UNSET", "${EMPTY}/x", "relative.sock"], [own], env)).toBeUndefined()
    const reachable = Sockets.reachable(["$SSH_AUTH_SOCK", "${SSH_AUTH_SOCK}.2", "~/docker.sock"], [own], env)
    expect(reachable?.slice(0, 2)).toEqual(["/run/agent.sock", "/run/agent.sock.2"])
    expect(reachable?.[2]).toEndWith("/docker.sock")
    expect(reachable).toHaveLength(4)
  })

  test("a sockets entry that is not a non-empty string is refused with its key", async () => {
    const box = sandbox({ "core.json": JSON.stringify({ permission: { "*": "allow" }, shell: { sockets: [""] } }) })
    const result = await exec(box, "bash", { command: "true" })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain("shell.sockets[0]")
  })
})

describe("shared memory", () => {
  test.skipIf(!LANDLOCK || !ROOT)(`a command has a /dev/shm of its own: Python's multiprocessing works, the host's shared memory stays out${needsRoot}`, async () => {
    // Another program's shared memory on the host, which the command must neither see nor change.
    const host = join("/dev/shm", `core-host-${crypto.randomUUID()}`)
    writeFileSync(host, "host secret\n")
    try {
      const box = location({
        "w.sh": [
          'python3 -c "import multiprocessing as m; print(m.Pool(2).map(abs, [-1, -2]))"',
          "ls /dev/shm | grep -c core-host- || true",
          "echo planted > /dev/shm/core-planted && cat /dev/shm/core-planted",
          `cat ${host} 2>&1 | grep -c 'host secret' || true`,
          `rm -f ${host}`,
          "mknod /dev/shm/null c 1 3 2>/dev/null || echo no-device",
        ].join("\n"),
      })
      expect((await script(box)).split("\n")).toEqual(["[1, 2]", "0", "planted", "0", "no-device", ""])
      expect(readFileSync(host, "utf8")).toBe("host secret\n")
      expect(existsSync("/dev/shm/core-planted")).toBe(false)
    } finally {
      rmSync(host, { force: true })
    }
  })
})

describe("terminals", () => {
  test.skipIf(!LANDLOCK || !ROOT)(`a command cannot read or write the user's terminals, yet opens terminals of its own${needsRoot}`, async () => {
    // The user's terminal, held open outside any sandbox, with a line typed into it waiting to be read.
    const holder = Bun.spawn(
      ["python3", "-c", "import os, pty, time\nm, s = pty.openpty()\nos.write(m, b'typed secret\\n')\nprint(os.ttyname(s), flush=True)\ntime.sleep(60)"],
      { stdout: "pipe", stderr: "inherit" },
    )
    listeners.push(holder)
    const { value } = await holder.stdout.getReader().read()
    const terminal = new TextDecoder().decode(value).trim()
    expect(terminal).toStartWith("/dev/pts/")
    const box = location({
      "w.sh": [
        `timeout 2 head -n 1 ${terminal} 2>/dev/null || echo no-read`,
        `echo injected 2>/dev/null > ${terminal} || echo no-write`,
        "ls /dev/pts",
        `python3 -c "import os, pty; m, s = pty.openpty(); print(os.ttyname(s))"`,
      ].join("\n"),
    })
    expect((await script(box)).split("\n")).toEqual(["no-read", "no-write", "ptmx", "/dev/pts/0", ""])
  })
})

describe("the system's secrets", () => {
  test.skipIf(!LANDLOCK || !ROOT || !existsSync("/etc/shadow"))(`a root command cannot read password hashes or private keys under /etc, while the rest of /etc reads${needsRoot}`, async () => {
    const box = location({
      "w.sh": [
        "grep -c '^root:' /etc/shadow || true",
        "cp /etc/shadow loot && wc -c < loot",
        "ls -A /etc/ssl/private 2>/dev/null | wc -l",
        "cat /etc/ssh/ssh_host_*_key 2>/dev/null | grep -c PRIVATE || true",
        "grep -c '^root:' /etc/passwd",
        // Nothing to unmount them with, even for root.
        "umount /etc/shadow 2>/dev/null || echo no-umount",
      ].join("\n"),
    })
    expect((await script(box)).split("\n")).toEqual(["0", "0", "0", "0", "1", "no-umount", ""])
    expect(Namespace.systemDenied()).toContain("/etc/shadow")
  })
})
