// The bash built-in through the compiled `core` binary: the embedded tree-sitter WebAssembly loads, and SIGINT to
// `core exec bash` cancels the call (exit 130) and leaves no process of the command behind. Core's own executable
// replaced under a running core is never what starts its commands' supervisors.

import { describe, expect, test } from "bun:test"
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { ProcessGroup } from "../../src/shell/process-group"
import { binary } from "../support/binary"
import { tempDir } from "../support/temp"
import { webServer } from "../support/web-server"
import { core, exec, sandbox, type Settlement, settlementOf, start } from "../cli/fixture"
import { alive, DETACHING, hostPids, pidsIn, running as runs } from "./processes"

describe("core exec bash", () => {
  test("runs a command line, parsed with the grammar embedded in the binary", async () => {
    const box = sandbox()
    const result = await exec(box, "bash", { command: "echo hi && echo there >&2" })
    expect(result.code).toBe(0)
    const settlement = settlementOf(result)
    expect(settlement.status).toBe("success")
    expect(settlement.structured).toMatchObject({ stdout: "hi\n", stderr: "there\n", exitCode: 0 })
    // The two pipes joined in the order their chunks reached core (bash's description says so): either order.
    expect(["hi\nthere\n\nExit code 0", "there\nhi\n\nExit code 0"]).toContain((settlement.content[0] as { text: string }).text)
    expect(settlement.content).toHaveLength(1)
  })

  test("an unparsable line is declined without a terminal: it is asked, never allowed by a prefix", async () => {
    const box = sandbox({ "core.json": JSON.stringify({ permission: { bash: { "*": "ask", "echo *": "allow" } } }) })
    const result = await exec(box, "bash", { command: 'echo "unterminated' })
    expect(result.code).toBe(4)
    expect(settlementOf(result).status).toBe("declined")
  })

  test("code hidden in a variable is declined without a terminal, although core's defaults allow every command", async () => {
    const box = sandbox({ "v.txt": "x" })
    const result = await exec(box, "bash", { command: 'X="rm v.txt"; eval "$X"' })
    expect(result.code).toBe(4)
    expect(settlementOf(result).status).toBe("declined")
    expect(readFileSync(join(box.location, "v.txt"), "utf8")).toBe("x")
  })

  test("the command does not see the CORE_TOKEN core was started with", async () => {
    const plain = sandbox()
    const box = { ...plain, env: { ...plain.env, CORE_TOKEN: "secret-token" } }
    const result = await exec(box, "bash", { command: 'echo "[$CORE_TOKEN]"' })
    expect(settlementOf(result).content).toEqual([{ type: "text", text: "[]\n\nExit code 0" }])
  })

  test("code the command runs cannot change core's configuration: existing entries are read-only, new ones removed", async () => {
    const script = [
      `node -e 'try { require("fs").writeFileSync("core.json", "{}") } catch (e) { console.log(e.code) }'`,
      `bun -e 'try { require("fs").writeFileSync("plugins/x.ts", "") } catch (e) { console.log(e.code) }'`,
      "mkdir tools && echo 'export default 1' > tools/x.ts && echo created",
    ].join("\n")
    const box = sandbox({ "core.json": "{}\n", "plugins/kept.ts": "", "w.sh": script })
    const result = await exec(box, "bash", { command: "bash w.sh" })
    expect(result.code).toBe(0)
    const settlement = settlementOf(result)
    const structured = settlement.structured as { stdout: string; undone: ReadonlyArray<string> }
    expect(structured.stdout).toBe("EROFS\nEROFS\ncreated\n")
    expect(structured.undone).toEqual([join(realpathSync(box.location), "tools")])
    expect(settlement.content).toEqual([{ type: "text", text: expect.stringContaining("Undone:") }])
    expect(readFileSync(join(box.location, "core.json"), "utf8")).toBe("{}\n")
    expect(existsSync(join(box.location, "tools"))).toBe(false)
    expect(readdirSync(join(box.location, "plugins"))).toEqual(["kept.ts"])
  })

  test("SIGINT cancels the call, exits 130 and leaves no process behind", async () => {
    const box = sandbox()
    const command = "sleep 1000 & echo $! $$ > pids; echo ready; sleep 1000"
    const running = await start(box, ["exec", "bash", "--input", JSON.stringify({ command }), "--location", box.location])
    await running.stderrContains("progress: ready\n")
    // As the command's own PID namespace numbers them (what the cancel names), and as the host does.
    const [inBackground, inLeader] = pidsIn(readFileSync(join(box.location, "pids"), "utf8"))
    // Both have become sleep (not still copies of bash), so the cancel names them as such.
    for (let tries = 0; tries < 250 && hostPids([inLeader!], box.location)[0] === inLeader; tries++) await Bun.sleep(20)
    const [background, leader] = hostPids([inBackground!, inLeader!], box.location)
    expect(alive(background!)).toBe(true)
    expect(await runs(background!, "sleep")).toBe(true)
    expect(await runs(leader!, "sleep")).toBe(true)
    running.child.kill("SIGINT")
    const result = await running.finished()
    expect(result.code).toBe(130)
    const settlement = settlementOf(result)
    expect(settlement.status).toBe("cancelled")
    // It names what the cancel ended: both sleeps (bash ran the last command in its own place).
    expect(settlement.content).toEqual([
      { type: "text", text: expect.stringContaining("Ended 2 processes it had started: ") },
    ])
    const said = (settlement.content[0] as { text: string }).text
    expect(said).toContain(`sleep (${inBackground})`)
    expect(said).toContain(`sleep (${inLeader})`)
    expect(alive(background!)).toBe(false)
    expect(alive(leader!)).toBe(false)
    expect(ProcessGroup.members(leader!)).toEqual([])
  })
  test("kill -9 of core: every detached descendant dies, and the call then replays as interrupted without running", async () => {
    const box = sandbox()
    const ids = ["--session", "ses_kill9", "--call", "call_kill9"]
    const input = JSON.stringify({ command: `${DETACHING}\necho ready; sleep 1000` })
    // perl -e runs code core cannot read, so it is asked: --yes approves it once.
    const running = await start(box, ["exec", "bash", "--input", input, "--location", box.location, "--yes", ...ids])
    await running.stderrContains("progress: ready\n")
    const pids = hostPids(pidsIn(readFileSync(join(box.location, "pids"), "utf8")), box.location)
    expect(pids).toHaveLength(4)
    for (const pid of pids) expect(alive(pid)).toBe(true)
    running.child.kill("SIGKILL")
    await running.finished()
    // The supervisor sees core go (its parent-death signal) and ends them; the kernel's delivery takes a moment.
    for (let tries = 0; tries < 250 && pids.some(alive); tries++) await Bun.sleep(20)
    expect(pids.filter(alive)).toEqual([])
    const again = await exec(box, "bash", { command: "echo ran again > again.txt" }, ids)
    expect(again.code).toBe(1)
    expect(settlementOf(again).error?.kind).toBe("interrupted")
    expect(existsSync(join(box.location, "again.txt"))).toBe(false)
  })

  test("a second SIGINT does not wait for the graceful stop, and still leaves no process behind", async () => {
    const box = sandbox()
    // The group ignores SIGTERM, so the graceful stop would wait its full grace period before SIGKILL; the shell
    // itself notes the SIGTERM (in `termed`) and carries on waiting.
    const command = "trap '' TERM; sleep 1000 & echo $! $$ > pids; sleep 1000 & trap ': > termed' TERM; echo ready; while :; do wait; done"
    const running = await start(box, ["exec", "bash", "--input", JSON.stringify({ command }), "--location", box.location])
    await running.stderrContains("progress: ready\n")
    const [background, leader] = hostPids(pidsIn(readFileSync(join(box.location, "pids"), "utf8")), box.location)
    running.child.kill("SIGINT")
    // The graceful stop is under way once the group has had its SIGTERM.
    for (let tries = 0; tries < 250 && !existsSync(join(box.location, "termed")); tries++) await Bun.sleep(20)
    expect(existsSync(join(box.location, "termed"))).toBe(true)
    expect(alive(background!)).toBe(true)
    running.child.kill("SIGINT")
    const result = await running.finished()
    expect(result.code).toBe(130)
    // Forced: core did not wait to settle the call (it replays as interrupted), so nothing is printed.
    expect(result.stdout).toBe("")
    // SIGKILL was sent before core exited; its delivery is the kernel's, so wait for it to land.
    for (let tries = 0; tries < 100 && (alive(background!) || alive(leader!)); tries++) await Bun.sleep(20)
    expect(alive(background!)).toBe(false)
    expect(alive(leader!)).toBe(false)
  })

  test("core check says once when commands run without the OS sandbox, and refuses an unknown sandbox setting", async () => {
    const off = sandbox({ "core.json": JSON.stringify({ shell: { sandbox: "off" } }) })
    const checked = await core(off, ["check", "bash", "--input", JSON.stringify({ command: "ls" }), "--location", off.location])
    expect(checked.code).toBe(0)
    expect(checked.stderr.match(/shell sandbox is off/g)).toHaveLength(1)
    const wrong = sandbox({ "core.json": JSON.stringify({ shell: { sandbox: "sometimes" } }) })
    const refused = await core(wrong, ["check", "bash", "--input", JSON.stringify({ command: "ls" }), "--location", wrong.location])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain("shell.sandbox")
  })

  test("core serve says once, as it starts, when commands run without the OS sandbox", async () => {
    const off = sandbox({ "core.json": JSON.stringify({ shell: { sandbox: "off" } }) })
    const served = await start(off, ["serve", "--location", off.location, "--port", "0"])
    await served.stderrContains("curl")
    served.child.kill("SIGTERM")
    const { code, stdout, stderr } = await served.finished()
    expect(code).toBe(0)
    expect(stdout).toContain('"url"')
    expect(stderr.match(/shell sandbox is off/g)).toHaveLength(1)
  })
})

// Core's executable may lie in a Location (a project that builds or vendors core). Helpers were started by its path:
// a command that renamed another file onto it had that file run, outside the sandbox, as the supervisor of the
// next command (a marker written where no command may write proved it). Run by a user who is not root, core starts
// each supervisor through unshare, which /proc refuses core's own links: it hands the executable over instead.
const NOBODY = 65534
const setpriv = Bun.which("setpriv")
const asNobody = process.getuid?.() === 0 && setpriv !== null && Bun.which("unshare") !== null

describe("core's own executable in its Location", () => {
  const replaced = async (user: boolean) => {
    const web = webServer()
    const box = sandbox({ "core.json": JSON.stringify({ permission: { "*": "allow", webfetch: { "http://127.0.0.1:*": "allow" } } }) })
    const own = join(box.location, "bin", "core")
    mkdirSync(join(box.location, "bin"))
    copyFileSync(await binary(), own)
    chmodSync(own, 0o755)
    const outside = tempDir("core-escape-")
    const marker = join(outside, "ran-outside-the-sandbox")
    if (user) for (const directory of [box.location, box.data, box.home, box.user.home, outside]) chownTree(directory, NOBODY)
    const serve = Bun.spawn(
      [...(user ? [setpriv!, `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"] : []), own, "serve", "--location", box.location, "--port", "0"],
      { env: { ...process.env, ...box.env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
    )
    const log = new Response(serve.stderr).text()
    try {
      const ready = await serve.stdout.getReader().read()
      if (ready.value === undefined) throw new Error(`core serve did not start:\n${await log}`)
      const { url, token } = JSON.parse(new TextDecoder().decode(ready.value)) as { url: string; token: string }
      const post = async (path: string, body: unknown) =>
        (await fetch(`${url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        }).then((response) => response.json())) as Record<string, unknown>
      const { turnID } = (await post("/v1/turns", {})) as { turnID: string }
      const call = (id: string, name: string, input: unknown) =>
        post(`/v1/turns/${turnID}/calls`, { sessionID: "s", assistantMessageID: "m", toolCallID: id, name, input })
      const first = await call("first", "bash", { command: "id -u" })
      expect((first.structured as { stdout: string }).stdout).toBe(`${user ? NOBODY : 0}\n`)
      const replacing = await call("replace", "bash", {
        command: `printf '#!/bin/sh\\necho ran > ${marker}\\n' > p.sh && chmod +x p.sh && mv p.sh bin/core && head -c 9 bin/core`,
      })
      expect(replacing.status).toBe("success")
      expect((replacing.structured as { stdout: string }).stdout).toBe("#!/bin/sh")
      // Time for the spare supervisor readied after that call to start: from the file now at the path, if any.
      await Bun.sleep(1_500)
      for (const id of ["after-1", "after-2"]) {
        const after = await call(id, "bash", { command: "echo still here" })
        expect(after.status).toBe("success")
        expect((after.structured as { stdout: string }).stdout).toBe("still here\n")
      }
      // The HTML converter, started for the first time now, is core's own too.
      const fetched = await call("fetch", "webfetch", { url: web.url("/article") })
      expect(fetched.status).toBe("success")
      expect(JSON.stringify(fetched.content)).toContain("# Getting started")
      expect(existsSync(marker)).toBe(false)
    } finally {
      serve.kill("SIGTERM")
      await serve.exited
      web.stop()
    }
    expect(await log).not.toContain("operational failure")
  }

  test("renamed over by a command under a running core serve, it is not what runs next: commands stay supervised and sandboxed", async () => {
    await replaced(false)
  }, 60_000)

  test.skipIf(!asNobody)(
    `the same, core run by a user who is not root (supervisors started through unshare)${asNobody ? "" : " (SKIPPED: needs root, setpriv and unshare)"}`,
    async () => {
      await replaced(true)
    },
    60_000,
  )
})

// `npm run` puts the project's node_modules/.bin first on PATH. Core found `unshare` (which it runs outside the
// sandbox to start each supervisor for a user who is not root) on PATH: one the model wrote there ran, unsandboxed.
describe("programs core runs outside the sandbox", () => {
  test.skipIf(!asNobody)(
    `are the system's, not ones of the same name in a PATH folder in the Location${asNobody ? "" : " (SKIPPED: needs root, setpriv and unshare)"}`,
    async () => {
      const box = sandbox({ "core.json": JSON.stringify({ permission: { "*": "allow" } }) })
      const bin = join(box.location, "node_modules", ".bin")
      const marker = join(tempDir("core-escape-"), "ran-outside-the-sandbox")
      mkdirSync(bin, { recursive: true })
      for (const name of ["unshare", "true"]) {
        writeFileSync(join(bin, name), `#!/bin/sh\necho ${name} >> ${marker}\nexec /usr/bin/${name} "$@"\n`)
        chmodSync(join(bin, name), 0o755)
      }
      const own = join(tempDir("core-bin-"), "core")
      copyFileSync(await binary(), own)
      for (const directory of [box.location, box.data, box.home, box.user.home, dirname(own), dirname(marker)]) chownTree(directory, NOBODY)
      const run = Bun.spawnSync(
        [setpriv!, `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", own, "exec", "bash", "--yes", "--location", box.location, "--input", JSON.stringify({ command: "id -u" })],
        { cwd: box.location, env: { ...process.env, ...box.env, PATH: `${bin}:${box.env.PATH ?? process.env.PATH}` } },
      )
      const settlement = JSON.parse(run.stdout.toString()) as Settlement
      expect(settlement.status).toBe("success")
      expect((settlement.structured as { stdout: string }).stdout).toBe(`${NOBODY}\n`)
      expect(existsSync(marker)).toBe(false)
    },
    60_000,
  )
})

/** Gives `root` and everything under it to `uid`. */
const chownTree = (root: string, uid: number) => {
  chownSync(root, uid, uid)
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) chownSync(join(entry.parentPath, entry.name), uid, uid)
}
