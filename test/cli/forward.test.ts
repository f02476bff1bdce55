// `core exec` forwarding to a running `core serve` of the same data directory (docs/serve.md, "core exec forwards"):
// for each outcome, exec prints the same stdout and stderr and exits with the same code whether the sidecar settles
// the call or exec settles it in process (CORE_EXEC_FORWARD=0); a replay answers the recorded settlement across
// the two; SIGINT cancels through the sidecar; and whatever the sidecar's record or socket cannot be trusted for
// (a stale socket, a planted file, another owner, another environment) leaves exec in process. Whether a call was
// forwarded is read off the sidecar's own log line for it.

import { afterAll, describe, expect, test } from "bun:test"
import { chmodSync, chownSync, cpSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { binary } from "../support/binary"
import { echoTool, waitTool } from "../support/tools"
import { core, onTerminal, runs, sandbox, start, type Sandbox } from "./fixture"
import { coreJson, recording } from "./permissions-fixture"
import type { Run } from "../support/binary"

const FAILING = `import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"

export default Tool.make({
  description: "Always fails",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.fail(new Tool.Failure({ message: "the thing is broken; fix it and call again" })),
})
`

const TOOLS = {
  "tools/echo.ts": echoTool({ record: "echo", progress: { message: "echoing" } }),
  "tools/fail.ts": FAILING,
  "tools/deploy.ts": recording("deploy"),
  "tools/wait.ts": waitTool({ record: "wait", progress: [{ message: "connecting" }, { message: "still waiting" }] }),
  "a.secret": "hidden\n",
  "a.txt": "hello\n",
  ...coreJson({ permission: { deploy: "ask", read: { "*.secret": "deny" } } }),
}

interface Serving {
  readonly stderr: () => string
  readonly pid: number
  readonly stop: (signal?: NodeJS.Signals) => Promise<void>
}

const serving: Array<Serving> = []
afterAll(async () => {
  for (const each of serving) await each.stop()
})

/** Starts `core serve` in the sandbox's environment; resolves once it printed its ready line. */
const serve = async (box: Sandbox, extra: ReadonlyArray<string> = []): Promise<Serving> => {
  const child = Bun.spawn([await binary(), "serve", "--location", box.location, ...extra], {
    env: { ...process.env, ...box.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  })
  let stderr = ""
  void (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of child.stderr) stderr += decoder.decode(chunk, { stream: true })
  })()
  const reader = child.stdout.getReader()
  const first = await reader.read()
  if (first.done) throw new Error(`core serve did not start:\n${stderr}`)
  const handle: Serving = {
    stderr: () => stderr,
    pid: child.pid,
    stop: async (signal = "SIGTERM") => {
      child.kill(signal)
      await child.exited
    },
  }
  serving.push(handle)
  return handle
}

const OFF = { CORE_EXEC_FORWARD: "0" }

/** `core exec NAME --input INPUT` in the sandbox's Location with `--session ses_T --call call_T`, and `env` on top. */
const exec = (box: Sandbox, tag: string, name: string, input: unknown, extra: ReadonlyArray<string> = [], env: Record<string, string> = {}) =>
  core({ ...box, env: { ...box.env, ...env } }, [
    "exec",
    name,
    "--input",
    JSON.stringify(input),
    "--location",
    box.location,
    "--session",
    `ses_${tag}`,
    "--call",
    `call_${tag}`,
    ...extra,
  ])

/** A run with its call's ids written as the one of `tag`, so runs with different ids compare whole. */
const neutral = (result: Run, tag: string) => ({
  code: result.code,
  stdout: result.stdout.replaceAll(`call_${tag}`, "call_X").replaceAll(`ses_${tag}`, "ses_X"),
  stderr: result.stderr.replaceAll(`call_${tag}`, "call_X").replaceAll(`ses_${tag}`, "ses_X"),
})

let counter = 0
/** Runs the same call forwarded and in process; answers both (ids neutralized) and whether each reached the sidecar. */
const both = async (box: Sandbox, sidecar: Serving, name: string, input: unknown, extra: ReadonlyArray<string> = []) => {
  const id = ++counter
  const forwarded = await exec(box, `f${id}`, name, input, extra)
  const inProcess = await exec(box, `p${id}`, name, input, extra, OFF)
  return {
    forwarded: neutral(forwarded, `f${id}`),
    inProcess: neutral(inProcess, `p${id}`),
    reached: { forwarded: sidecar.stderr().includes(`call=call_f${id} `), inProcess: sidecar.stderr().includes(`call=call_p${id} `) },
  }
}

describe("core exec with a core serve of the same data directory", () => {
  const box = sandbox(TOOLS)
  let sidecar: Serving
  const ready = async () => (sidecar ??= await serve(box))

  test("a success: the same settlement, stderr and exit code; the call settles in the sidecar", async () => {
    const { forwarded, inProcess, reached } = await both(box, await ready(), "echo", { text: "hi" })
    expect(reached).toEqual({ forwarded: true, inProcess: false })
    expect(forwarded).toEqual(inProcess)
    expect(forwarded.code).toBe(0)
    expect(JSON.parse(forwarded.stdout)).toMatchObject({ status: "success", structured: "hi", callID: "call_X" })
    // Progress goes to stderr as plain lines off a terminal, either way.
    expect(forwarded.stderr).toBe("progress: echoing\n")
  })

  test("a tool failure, a refusal and invalid input: the same, forwarded", async () => {
    const sidecar = await ready()
    for (const [name, input, code] of [
      ["fail", {}, 1],
      ["read", { filePath: "a.secret" }, 1],
      ["echo", { text: 5 }, 1],
    ] as const) {
      const { forwarded, inProcess, reached } = await both(box, sidecar, name, input)
      expect({ name, reached }).toEqual({ name, reached: { forwarded: true, inProcess: false } })
      expect(forwarded).toEqual(inProcess)
      expect(forwarded.code).toBe(code)
    }
  })

  test("an unknown tool, an unknown agent and input that is not JSON: the same words (settled in process)", async () => {
    const sidecar = await ready()
    for (const [name, input, extra] of [
      ["nope", { a: 1 }, []],
      ["echo", { text: "x" }, ["--agent", "nobody"]],
      ["echo", { text: "nul\u0000" }, []],
    ] as const) {
      const { forwarded, inProcess } = await both(box, sidecar, name, input, extra)
      expect(forwarded).toEqual(inProcess)
    }
    const broken = await core(box, ["exec", "echo", "--input", "{oops", "--location", box.location])
    const brokenOff = await core({ ...box, env: { ...box.env, ...OFF } }, ["exec", "echo", "--input", "{oops", "--location", box.location])
    expect(broken).toEqual(brokenOff)
    expect(broken.code).toBe(2)
  })

  test("--input - reads stdin once: forwarded, or in process after all (invalid JSON), the same as in process", async () => {
    const sidecar = await ready()
    const outcomes: Array<ReturnType<typeof neutral>> = []
    for (const [tag, stdin, env] of [
      ["stdinf", '{"text":"piped"}', {}],
      ["stdinp", '{"text":"piped"}', OFF],
      ["stdinbadf", "{oops", {}],
      ["stdinbadp", "{oops", OFF],
    ] as const) {
      const args = ["exec", "echo", "--input", "-", "--location", box.location, "--session", `ses_${tag}`, "--call", `call_${tag}`]
      outcomes.push(neutral(await core({ ...box, env: { ...box.env, ...env } }, args, { stdin }), tag))
    }
    expect(sidecar.stderr()).toContain("call=call_stdinf ")
    expect(outcomes[0]).toEqual(outcomes[1]!)
    expect(JSON.parse(outcomes[0]!.stdout).structured).toBe("piped")
    expect(outcomes[2]).toEqual(outcomes[3]!)
    expect(outcomes[2]!.code).toBe(2)
    expect(outcomes[2]!.stderr).toContain("--input is not valid JSON")
  })

  test("input that is not UTF-8, as an argument or on stdin: the same usage error as in process; nothing reaches the sidecar", async () => {
    const sidecar = await ready()
    const outcomes: Array<{ code: number; stdout: string; stderr: string }> = []
    for (const [tag, feed, env] of [
      ["utf8argf", `exec "$0" exec echo --input "$(printf '{"text":"x\\377"}')"`, {}],
      ["utf8argp", `exec "$0" exec echo --input "$(printf '{"text":"x\\377"}')"`, OFF],
      ["utf8inf", `printf '{"text":"x\\377"}' | "$0" exec echo --input -`, {}],
      ["utf8inp", `printf '{"text":"x\\377"}' | "$0" exec echo --input -`, OFF],
    ] as const) {
      const child = Bun.spawn(["sh", "-c", `${feed} --location "$1" --session ses_${tag} --call call_${tag}`, await binary(), box.location], {
        env: { ...process.env, ...box.env, ...env },
        stdout: "pipe",
        stderr: "pipe",
      })
      const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
      outcomes.push({ code, stdout, stderr })
      expect(sidecar.stderr()).not.toContain(`call=call_${tag} `)
    }
    expect(outcomes[0]).toEqual(outcomes[1]!)
    expect(outcomes[2]).toEqual(outcomes[3]!)
    expect(outcomes.map((run) => run.code)).toEqual([2, 2, 2, 2])
    expect(outcomes[0]!.stderr).toContain("--input is not valid UTF-8")
    expect(outcomes[2]!.stderr).toContain("--input - (stdin) is not valid UTF-8")
  })

  test("asks: --yes approves once, without a terminal an ask is declined, a protected change is refused; all as in process", async () => {
    const sidecar = await ready()
    const before = runs(box, "deploy")
    const approved = await both(box, sidecar, "deploy", { target: "prod" }, ["--yes"])
    expect(approved.reached).toEqual({ forwarded: true, inProcess: false })
    expect(approved.forwarded).toEqual(approved.inProcess)
    expect(approved.forwarded.stderr).toBe('core: approved once (--yes): deploy on "*"\n')
    expect(runs(box, "deploy")).toBe(before + 2)

    const declined = await both(box, sidecar, "deploy", { target: "prod" })
    expect(declined.reached).toEqual({ forwarded: true, inProcess: false })
    expect(declined.forwarded).toEqual(declined.inProcess)
    expect(declined.forwarded.code).toBe(4)
    expect(declined.forwarded.stdout).toContain("core exec has no terminal")
    expect(runs(box, "deploy")).toBe(before + 2)

    // core.json is core's own configuration: --yes does not approve it, and nobody is there to.
    for (const extra of [[], ["--yes"]]) {
      const refused = await both(box, sidecar, "write", { filePath: "core.json", content: "{}" }, extra)
      expect(refused.reached).toEqual({ forwarded: true, inProcess: false })
      expect(refused.forwarded).toEqual(refused.inProcess)
      expect(refused.forwarded.stdout).toContain("A person must make that change")
    }
  })

  test("on a terminal, the person is prompted as in process and the answer reaches the sidecar", async () => {
    const sidecar = await ready()
    const before = runs(box, "deploy")
    const outputs: Array<{ code: number; output: string }> = []
    for (const [tag, typed, env] of [
      ["ttyf1", "o\n", {}],
      ["ttyp1", "o\n", OFF],
      ["ttyf2", "r\nDeploy to staging first.\n", {}],
      ["ttyp2", "r\nDeploy to staging first.\n", OFF],
    ] as const) {
      const args = ["exec", "deploy", "--input", '{"target":"prod"}', "--location", box.location, "--session", `ses_${tag}`, "--call", `call_${tag}`]
      const command = [await binary(), ...args].map((part) => `'${part.replaceAll("'", "'\\''")}'`).join(" ")
      const child = Bun.spawn(["script", "-qec", command, "/dev/null"], {
        env: { ...process.env, ...box.env, ...env },
        stdin: new Blob([typed]),
        stdout: "pipe",
        stderr: "pipe",
      })
      const [code, output] = await Promise.all([child.exited, new Response(child.stdout).text()])
      outputs.push({ code, output: output.replaceAll(tag, "X") })
    }
    expect(sidecar.stderr()).toContain("call=call_ttyf1 ")
    expect(sidecar.stderr()).toContain("call=call_ttyf2 ")
    expect(outputs[0]).toEqual(outputs[1]!)
    expect(outputs[2]).toEqual(outputs[3]!)
    expect(outputs[0]!.output).toContain('core: allow deploy on "*"? [o]nce, [a]lways (saves "*"), [r]eject:')
    expect(outputs[0]!.code).toBe(0)
    expect(outputs[2]!.output).toContain("Deploy to staging first.")
    expect(outputs[2]!.code).toBe(1)
    expect(runs(box, "deploy")).toBe(before + 2)
  })

  test("a replay answers the recorded settlement across the two: forwarded then in process, and back", async () => {
    const sidecar = await ready()
    const first = await exec(box, "replay1", "echo", { text: "once" })
    expect(sidecar.stderr()).toContain("call=call_replay1 ")
    expect(first.stderr).not.toContain("replayed")
    // A replay says so on stderr, alike on both paths; stdout is the recorded settlement.
    const note = (tag: string) =>
      `core: replayed: call call_${tag} of session ses_${tag} was settled before; this is its recorded settlement and ` +
      "nothing ran (give a new --call to run the tool again)\n"
    const again = await exec(box, "replay1", "echo", { text: "once" }, [], OFF)
    expect(again).toEqual({ ...first, stderr: note("replay1") })
    const inProcess = await exec(box, "replay2", "echo", { text: "twice" }, [], OFF)
    expect(inProcess.stderr).not.toContain("replayed")
    const forwarded = await exec(box, "replay2", "echo", { text: "twice" })
    expect(forwarded).toEqual({ ...inProcess, stderr: note("replay2") })
    const echoes = runs(box, "echo")
    expect((await exec(box, "replay1", "echo", { text: "once" })).stderr).toBe(note("replay1"))
    expect(runs(box, "echo")).toBe(echoes)
  })

  test("SIGINT cancels the forwarded call through the sidecar: the cancelled settlement, exit 130, as in process", async () => {
    const sidecar = await ready()
    const results: Array<ReturnType<typeof neutral>> = []
    for (const [tag, env] of [["sigf", {}], ["sigp", OFF]] as const) {
      const running = await start({ ...box, env: { ...box.env, ...env } }, [
        "exec", "wait", "--input", "{}", "--location", box.location, "--session", `ses_${tag}`, "--call", `call_${tag}`,
      ])
      await running.stderrContains("progress: still waiting\n")
      running.child.kill("SIGINT")
      results.push(neutral(await running.finished(), tag))
    }
    expect(sidecar.stderr()).toMatch(/call=call_sigf .*status=cancelled/)
    expect(results[0]).toEqual(results[1]!)
    expect(results[0]!.code).toBe(130)
    expect(JSON.parse(results[0]!.stdout).status).toBe("cancelled")
  })

  // The terminal gone: exec in process dies of SIGHUP and takes the command's processes with it. Forwarded, the call
  // would have gone on in the sidecar (and an ask of it stayed open for anyone with the token to approve). Whether
  // the cancelled settlement reaches exec before the sidecar's answer to the cancel is a race (once in a few calls
  // it does), hence many calls: either way exec prints nothing and ends as the signal ends it.
  test("SIGHUP (its terminal gone) cancels the forwarded call in the sidecar, and exec ends as the signal ends it", async () => {
    const sidecar = await ready()
    for (let round = 0; round < 20; round++) {
      const ids = ["--session", "ses_hup", "--call", `call_hup${round}`]
      const running = await start(box, ["exec", "wait", "--input", "{}", "--location", box.location, ...ids])
      await running.stderrContains("progress: still waiting\n")
      running.child.kill("SIGHUP")
      const result = await running.finished()
      expect({ round, code: result.code, stdout: result.stdout }).toEqual({ round, code: 129, stdout: "" })
      // The cancel was taken before exec ended; the call settles as cancelled right after.
      const settled = new RegExp(`call=call_hup${round} .*status=cancelled`)
      const deadline = Date.now() + 10_000
      while (!settled.test(sidecar.stderr()) && Date.now() < deadline) await Bun.sleep(20)
      expect(sidecar.stderr()).toMatch(settled)
    }
  })

  // A second exec of a call already running joins it. In process it waits for the first's record and does nothing
  // else; forwarded it must not answer the first's ask (a person is being asked at that one's terminal), nor show
  // its progress, nor cancel it when stopped.
  test("a second exec of a running call answers none of its asks, and its SIGINT leaves the call to the first; as in process", async () => {
    const sidecar = await ready()
    const before = runs(box, "deploy")
    const args = ["exec", "deploy", "--input", '{"target":"prod"}', "--location", box.location, "--session", "ses_join", "--call", "call_join"]
    const first = await onTerminal(box, args)
    await first.until("[r]eject:")
    expect(sidecar.stderr()).toContain("call=call_join ")

    // Joined with --yes and no terminal: it approves nothing, declines nothing, shows nothing.
    const second = await start(box, [...args, "--yes"])
    // Stopped, it answers a cancelled settlement that is no record, and the first's call goes on.
    const third = await start(box, args)
    await Bun.sleep(1_000)
    third.child.kill("SIGINT")
    const stopped = await third.finished()
    expect(stopped.code).toBe(130)
    expect(JSON.parse(stopped.stdout)).toMatchObject({ callID: "call_join", status: "cancelled" })
    expect(stopped.stderr).toBe("")
    expect(runs(box, "deploy")).toBe(before)

    // The person at the first's terminal rejects: the first and the one still joined both answer the rejection.
    first.child.stdin.write("r\nNot today.\n")
    await first.child.stdin.end()
    expect(await first.finished()).toBe(1)
    expect(first.screen()).toContain("Not today.")
    const joined = await second.finished()
    expect(joined.code).toBe(1)
    expect(joined.stderr).toBe("")
    expect(JSON.parse(joined.stdout)).toMatchObject({ callID: "call_join", status: "error", error: { kind: "failure", message: "Not today." } })
    expect(runs(box, "deploy")).toBe(before)
  })

  test("CORE_EXEC_FORWARD=0 and another environment keep exec in process", async () => {
    const sidecar = await ready()
    await exec(box, "env1", "echo", { text: "a" }, [], { CORE_EXTRA_SETTING: "1" })
    await exec(box, "env2", "echo", { text: "a" }, [], OFF)
    expect(sidecar.stderr()).not.toContain("call=call_env1 ")
    expect(sidecar.stderr()).not.toContain("call=call_env2 ")
  })
})

describe("the default data directory", () => {
  test("a serve and an exec that set no CORE_DATA_DIR meet in $HOME/.local/share/core: the call is forwarded", async () => {
    const made = sandbox(TOOLS)
    const { CORE_DATA_DIR: _data, ...env } = made.env
    const box: Sandbox = { ...made, env }
    const sidecar = await serve(box)
    const { forwarded, inProcess, reached } = await both(box, sidecar, "echo", { text: "home" })
    expect(reached).toEqual({ forwarded: true, inProcess: false })
    expect(forwarded).toEqual(inProcess)
  })
})

/** A Location `project` with an echo tool inside `root`'s. */
const nestedIn = (root: Sandbox): string => {
  const nested = join(root.location, "project")
  mkdirSync(join(nested, "tools"), { recursive: true })
  writeFileSync(join(nested, "tools", "echo.ts"), echoTool())
  return nested
}

describe("a Location under the serve's --allow-root", () => {
  test("is forwarded with X-Core-Location, and prints as in process", async () => {
    const root = sandbox({})
    const nested = nestedIn(root)
    const box: Sandbox = { ...root, location: nested }
    const sidecar = await serve(root, ["--allow-root", root.location])
    const { forwarded, inProcess, reached } = await both(box, sidecar, "echo", { text: "nested" })
    expect(reached).toEqual({ forwarded: true, inProcess: false })
    expect(forwarded).toEqual(inProcess)
  })
})

describe("a Location named through a symbolic link", () => {
  // A command of a Location holding a served one can rename it away and leave a link to a folder of the model's in
  // its place (where no mount namespace holds it): forwarded as the real path, the serve loaded that folder.
  test("is settled in process (which resolves the name again once no command of it runs), and prints the same", async () => {
    const root = sandbox({})
    const nested = nestedIn(root)
    symlinkSync(nested, join(root.location, "linked"))
    const sidecar = await serve(root, ["--allow-root", root.location])
    const direct = await both({ ...root, location: nested }, sidecar, "echo", { text: "named" })
    expect(direct.reached).toEqual({ forwarded: true, inProcess: false })
    const linked = await both({ ...root, location: join(root.location, "linked") }, sidecar, "echo", { text: "named" })
    expect(linked.reached).toEqual({ forwarded: false, inProcess: false })
    expect(linked.forwarded).toEqual(linked.inProcess)
    expect(linked.forwarded).toEqual(direct.inProcess)
  })
})

describe("a Location that reported a load problem", () => {
  test("is settled in process, which prints the warning", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool(), "tools/broken.ts": "export default 42\n" })
    const sidecar = await serve(box)
    const { forwarded, inProcess, reached } = await both(box, sidecar, "echo", { text: "w" })
    expect(reached.forwarded).toBe(false)
    expect(forwarded).toEqual(inProcess)
    expect(forwarded.stderr).toContain("broken.ts")
  })
})

describe("a sidecar exec cannot trust", () => {
  /** The serve's socket directory in the sandbox's data directory. */
  const socketDirectory = (box: Sandbox) => {
    const name = readdirSync(box.data).find((entry) => entry.startsWith("serve-"))
    if (name === undefined) throw new Error("no socket directory")
    return join(box.data, name)
  }

  test("killed with SIGKILL (a stale socket and record): exec runs in process at once", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool() })
    const sidecar = await serve(box)
    await sidecar.stop("SIGKILL")
    const result = await exec(box, "stale", "echo", { text: "s" })
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout).structured).toBe("s")
    expect(result.stderr).toBe("")
  })

  test("stopped (SIGSTOP): health times out and exec runs in process", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool() })
    const sidecar = await serve(box)
    process.kill(sidecar.pid, "SIGSTOP")
    try {
      const result = await exec(box, "stopped", "echo", { text: "s" })
      expect(result.code).toBe(0)
      expect(JSON.parse(result.stdout).structured).toBe("s")
    } finally {
      process.kill(sidecar.pid, "SIGCONT")
    }
    expect(sidecar.stderr()).not.toContain("call=call_stopped ")
  })

  test("a socket of another owner, a record others can read, a planted record beside a plain file: in process", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool() })
    const sidecar = await serve(box)
    const directory = socketDirectory(box)
    const socket = join(directory, "http.sock")
    const record = join(directory, "serve.json")

    chownSync(socket, 4242, 4242)
    await exec(box, "owner", "echo", { text: "o" })
    chownSync(socket, process.getuid!(), process.getgid!())

    chmodSync(record, 0o644)
    await exec(box, "mode", "echo", { text: "m" })
    chmodSync(record, 0o600)

    chmodSync(directory, 0o755)
    await exec(box, "folder", "echo", { text: "d" })
    chmodSync(directory, 0o700)

    // A record copied beside a plain file named as the socket, in a directory named for a live process (this one).
    const planted = join(box.data, `serve-${process.pid}-planted`)
    mkdirSync(planted, { mode: 0o700 })
    cpSync(record, join(planted, "serve.json"))
    writeFileSync(join(planted, "http.sock"), "")
    rmSync(record)
    await exec(box, "planted", "echo", { text: "p" })

    for (const tag of ["owner", "mode", "folder", "planted"]) expect(sidecar.stderr()).not.toContain(`call=call_${tag} `)
    // With the record back, the same sidecar is trusted again (so the checks above are what kept exec in process).
    cpSync(join(planted, "serve.json"), record)
    chmodSync(record, 0o600)
    await exec(box, "trusted", "echo", { text: "t" })
    expect(sidecar.stderr()).toContain("call=call_trusted ")
  })

  test("a record or directory that is a symbolic link is not followed: in process", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool() })
    const sidecar = await serve(box)
    const directory = socketDirectory(box)
    const record = join(directory, "serve.json")
    const copy = join(box.data, "elsewhere.json")
    cpSync(record, copy)
    rmSync(record)
    symlinkSync(copy, record)
    await exec(box, "linked-record", "echo", { text: "l" })
    rmSync(record)
    cpSync(copy, record)
    chmodSync(record, 0o600)
    // The whole directory under another name, linked where a serve's would be.
    const linked = join(box.data, `serve-${sidecar.pid}-linked`)
    renameSync(directory, `${directory}-moved`)
    symlinkSync(`${directory}-moved`, linked)
    await exec(box, "linked-folder", "echo", { text: "l" })
    expect(sidecar.stderr()).not.toContain("call=call_linked-record ")
    expect(sidecar.stderr()).not.toContain("call=call_linked-folder ")
  })

  test("a umask other than the serve's, or ids too long for a path, keep exec in process (which refuses the ids)", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool() })
    const sidecar = await serve(box)
    // Files the call's commands create take the umask of the process that runs them: the serve's, forwarded.
    const masked = Bun.spawn(
      ["sh", "-c", 'umask 077 && exec "$0" "$@"', await binary(), "exec", "echo", "--input", '{"text":"u"}', "--location", box.location, "--call", "call_umask"],
      { env: { ...process.env, ...box.env }, stdout: "pipe", stderr: "pipe" },
    )
    expect(await masked.exited).toBe(0)
    // A session id that does not fit the cancel route's path: no route could name its call, so no call takes it.
    const long = await core(box, ["exec", "echo", "--input", '{"text":"l"}', "--location", box.location, "--session", "s".repeat(5000), "--call", "call_long"])
    const longOff = await core({ ...box, env: { ...box.env, ...OFF } }, ["exec", "echo", "--input", '{"text":"l"}', "--location", box.location, "--session", "s".repeat(5000), "--call", "call_long"])
    expect(long).toEqual(longOff)
    expect(long.code).toBe(2)
    expect(long.stderr).toContain("--session is longer than 4096 characters escaped for a URL path")
    expect(sidecar.stderr()).not.toContain("call=call_umask ")
    expect(sidecar.stderr()).not.toContain("call=call_long ")
    // The same with the serve's umask and a short id: forwarded (so the two above are what kept exec in process).
    await exec(box, "plain", "echo", { text: "p" })
    expect(sidecar.stderr()).toContain("call=call_plain ")
  })

  test("a data directory pointed elsewhere after exec's checks (by whoever may write a folder above it): nothing reaches the other place", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool() })
    const above = join(box.data, "above")
    const data = join(above, "data")
    mkdirSync(data, { recursive: true, mode: 0o700 })
    const moved = { ...box, data, env: { ...box.env, CORE_DATA_DIR: data } }
    const sidecar = await serve(moved)
    const name = readdirSync(data).find((entry) => entry.startsWith("serve-"))!
    const url = JSON.parse(readFileSync(join(data, name, "serve.json"), "utf8")).url as string
    // Another directory of the same name, with a server of its own on a socket of the same name, answering as a
    // serve would and noting every request it gets.
    const other = join(above, "other")
    mkdirSync(join(other, name), { recursive: true, mode: 0o700 })
    cpSync(join(data, name, "serve.json"), join(other, name, "serve.json"))
    const heard: Array<string> = []
    const impostor = Bun.serve({
      unix: join(other, name, "http.sock"),
      fetch: async (request) => {
        heard.push(`${request.method} ${new URL(request.url).pathname} ${await request.text()}`)
        if (request.url.endsWith("/v1/health")) return Response.json({ ok: true, version: "impostor" })
        if (request.url.endsWith("/v1/host-tools")) return Response.json([])
        if (request.url.endsWith("/v1/turns")) return Response.json({ turnID: "t", definitions: [{ name: "echo" }] })
        return new Response("event: settlement\ndata: {\"tool\":\"echo\",\"status\":\"success\",\"structured\":\"impostor\"}\n\n", {
          headers: { "content-type": "text/event-stream" },
        })
      },
    })
    try {
      // exec checks the serve's record, then waits for its input on stdin; meanwhile the data directory's path is
      // pointed at the other directory.
      const child = Bun.spawn([await binary(), "exec", "echo", "--input", "-", "--location", box.location, "--call", "call_swapped"], {
        env: { ...process.env, ...moved.env },
        stdin: "pipe",
        stdout: "pipe",
        stderr: "pipe",
      })
      const held = () => {
        try {
          return readdirSync(`/proc/${child.pid}/fd`).some((fd) => {
            try {
              return readlinkSync(`/proc/${child.pid}/fd/${fd}`) === join(data, name)
            } catch {
              return false
            }
          })
        } catch {
          return false
        }
      }
      const deadline = Date.now() + 20_000
      while (!held() && Date.now() < deadline) await Bun.sleep(10)
      expect(held()).toBe(true)
      renameSync(data, `${data}.moved`)
      symlinkSync(other, data)
      child.stdin.write('{"text":"secret input"}')
      await child.stdin.end()
      const [stdout, code] = await Promise.all([new Response(child.stdout).text(), child.exited])
      expect(code).toBe(0)
      expect(JSON.parse(stdout)).toMatchObject({ status: "success", structured: "secret input" })
      expect(sidecar.stderr()).toContain("call=call_swapped ")
      // The serve's own connections (each one the guard passes on) reach its server, not the other socket.
      const health = await fetch(`${url}/v1/health`)
      expect(await health.json()).toMatchObject({ ok: true })
      expect(heard).toEqual([])
    } finally {
      impostor.stop(true)
      rmSync(data, { force: true })
      renameSync(`${data}.moved`, data)
    }
  })

  test("a model's tools cannot read the record's token, nor plant one, through exec", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool() })
    await serve(box)
    const record = join(socketDirectory(box), "serve.json")
    const token = JSON.parse(readFileSync(record, "utf8")).token as string
    for (const [name, input] of [
      ["read", { filePath: record }],
      ["grep", { pattern: ".", path: socketDirectory(box) }],
      ["bash", { command: `cat ${record}` }],
      ["write", { filePath: join(box.data, `serve-${process.pid}-model`, "serve.json"), content: "{}" }],
    ] as const) {
      const result = await exec(box, `model-${name}`, name, input)
      expect({ name, leaked: result.stdout.includes(token) || result.stderr.includes(token) }).toEqual({ name, leaked: false })
      expect({ name, status: JSON.parse(result.stdout).status }).not.toEqual({ name, status: "success" })
    }
    expect(readdirSync(box.data).some((entry) => entry.endsWith("-model"))).toBe(false)
  })

  // A data directory too deep for a socket's path (a fleet host's, a CI workspace's) put the socket and the record,
  // with its token, in the temporary directory, which commands share: a plain allowed bash call printed the token.
  test("a data directory too deep for a socket's path keeps the record in it, out of every command's and tool's reach", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool() })
    const deep = join(box.data, "a-data-directory-deep-in-a-workspace", "of-a-fleet-host-0001", "core")
    mkdirSync(deep, { recursive: true })
    const temporary = join(box.location, "..", `${box.location.split("/").pop()}-tmp`)
    mkdirSync(temporary)
    const deepBox = { ...box, data: deep, env: { ...box.env, CORE_DATA_DIR: deep, TMPDIR: temporary } }
    expect(join(deep, "serve-").length + 40).toBeGreaterThan(108)
    const sidecar = await serve(deepBox)
    expect(readdirSync(temporary).filter((entry) => entry.startsWith("serve-"))).toEqual([])
    const record = join(socketDirectory(deepBox), "serve.json")
    const token = JSON.parse(readFileSync(record, "utf8")).token as string
    // Still found, and trusted: exec forwards to it.
    expect(JSON.parse((await exec(deepBox, "deep", "echo", { text: "d" })).stdout).structured).toBe("d")
    expect(sidecar.stderr()).toContain("call=call_deep ")
    // Named, the record is refused as the rest of the data directory is, by a command and by read.
    const named = await exec(deepBox, "named", "bash", { command: `cat ${record}` }, ["--yes"])
    const read = await exec(deepBox, "read", "read", { filePath: record }, ["--yes"])
    for (const result of [named, read]) {
      expect(JSON.parse(result.stdout).status).toBe("error")
      expect(result.stdout.includes(token) || result.stderr.includes(token)).toBe(false)
    }
  })

})

describe("a sidecar that stops mid-call", () => {
  test("stopping gracefully mid-call: the call is cancelled, and exec prints its cancelled settlement and exits 130", async () => {
    const box = sandbox({ "tools/wait.ts": waitTool({ record: "wait", progress: { message: "waiting" } }) })
    const sidecar = await serve(box)
    const running = await start(box, [
      "exec", "wait", "--input", "{}", "--location", box.location, "--session", "ses_stop", "--call", "call_stop",
    ])
    await running.stderrContains("progress: waiting\n")
    await sidecar.stop("SIGTERM")
    const result = await running.finished()
    expect(result.code).toBe(130)
    expect(JSON.parse(result.stdout)).toMatchObject({ callID: "call_stop", status: "cancelled" })
    expect(runs(box, "wait")).toBe(1)
  })

  // Before the call's first event too: the sidecar answers the request's head at once, so exec knows the call was
  // taken (it used to wait for the first event, and took a sidecar gone meanwhile for one that refused the call).
  // The ids it names are a host's, maybe a model's: a clear-screen and a clipboard write in one stay inert text.
  test("dying mid-call before the call said anything: exec says so and exits 3, naming the call inert", async () => {
    const box = sandbox({ "tools/wait.ts": waitTool({ record: "wait" }) })
    box.env.CORE_LEASE_MS = "500"
    const sidecar = await serve(box)
    const hostile = "call_\u001b[2J\u001b]52;c;ZWNobyBwd25lZA==\u0007"
    const running = await start(box, [
      "exec", "wait", "--input", "{}", "--location", box.location, "--session", "ses_mute", "--call", hostile,
    ])
    while (runs(box, "wait") === 0) await Bun.sleep(20)
    await Bun.sleep(100)
    await sidecar.stop("SIGKILL")
    const result = await running.finished()
    expect(result.code).toBe(3)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain("stopped before answering; it may have run")
    expect(result.stderr).toContain(`--session ses_mute --call ${JSON.stringify(hostile)}`)
    expect(result.stderr).not.toContain("\u001b")
    expect(result.stderr).not.toContain("\u0007")
    expect(runs(box, "wait")).toBe(1)
  })

  // Stopped (SIGSTOP) mid-call, the sidecar cannot take the cancel: exec said nothing and waited, and only a second
  // signal ended it, silently. It now says so once the cancel has gone unanswered for a while.
  test("stopped mid-call: a SIGINT it cannot answer ends exec after a while, saying the call may still run", async () => {
    const box = sandbox({ "tools/wait.ts": waitTool({ record: "wait", progress: { message: "waiting" } }) })
    const sidecar = await serve(box)
    const running = await start(box, [
      "exec", "wait", "--input", "{}", "--location", box.location, "--session", "ses_frozen", "--call", "call_frozen",
    ])
    await running.stderrContains("progress: waiting\n")
    process.kill(sidecar.pid, "SIGSTOP")
    try {
      const asked = Date.now()
      running.child.kill("SIGINT")
      const result = await running.finished()
      expect(result.code).toBe(3)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain("did not answer its cancel within 10 s; the call may still run there")
      expect(result.stderr).toContain("--session ses_frozen --call call_frozen")
      expect(Date.now() - asked).toBeLessThan(20_000)
    } finally {
      process.kill(sidecar.pid, "SIGCONT")
    }
  }, 30_000)

  test("dying mid-call: exec says so and exits 3; the call does not run again", async () => {
    const box = sandbox({ "tools/wait.ts": waitTool({ record: "wait", progress: { message: "waiting" } }) })
    // A short lease, so the call the sidecar held is known to be abandoned soon after it died.
    box.env.CORE_LEASE_MS = "500"
    const sidecar = await serve(box)
    const running = await start(box, [
      "exec", "wait", "--input", "{}", "--location", box.location, "--session", "ses_died", "--call", "call_died",
    ])
    await running.stderrContains("progress: waiting\n")
    await sidecar.stop("SIGKILL")
    const result = await running.finished()
    expect(result.code).toBe(3)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain("stopped before answering; it may have run")
    expect(result.stderr).toContain("--session ses_died --call call_died")
    expect(runs(box, "wait")).toBe(1)

    // Called again (in process now), it does not run a second time: the store's record of it answers.
    const again = await exec(box, "died", "wait", {})
    expect(again.code).toBe(1)
    expect(JSON.parse(again.stdout)).toMatchObject({ callID: "call_died", status: "error", error: { kind: "interrupted" } })
    expect(runs(box, "wait")).toBe(1)
  })
})
