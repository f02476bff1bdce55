// Interrupting `core exec` (DESIGN §2 law 8, §6 exit 130): SIGINT and SIGTERM cancel the running call, which
// settles as `cancelled` and is recorded so, and progress reaches stderr as plain lines off a terminal.

import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { binary } from "../support/binary"
import { waitTool } from "../support/tools"
import { exec, runs, sandbox, settlementOf, start } from "./fixture"

const WAIT = waitTool({
  record: "wait",
  progress: [{ message: "connecting" }, { message: "still\nwaiting", metadata: { step: 2 } }],
})

describe("an interrupted call", () => {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    test(`${signal} cancels it: exit 130, a cancelled settlement on stdout, and a replay that runs nothing`, async () => {
      const box = sandbox({ "tools/wait.ts": WAIT })
      const ids = ["--session", "ses_signal", "--call", `call_${signal}`]
      const running = await start(box, ["exec", "wait", "--input", "{}", "--location", box.location, ...ids])
      await running.stderrContains("progress: still waiting\n")
      running.child.kill(signal)
      const result = await running.finished()

      expect(result.code).toBe(130)
      expect(settlementOf(result)).toEqual({
        tool: "wait",
        callID: `call_${signal}`,
        status: "cancelled",
        content: [{ type: "text", text: expect.any(String) }],
        structured: null,
        outputs: [],
      })

      const replay = await exec(box, "wait", {}, ids)
      expect(replay.code).toBe(130)
      expect(settlementOf(replay).status).toBe("cancelled")
      expect(runs(box, "wait")).toBe(1)
    })
  }

  // A second core exec of the same ids waits for the first's call; stopped, it printed "cancelled … it may have done
  // part of its work" for a call it never ran, and that went on in the first.
  test("a core exec waiting for another process's call, stopped, says it only stopped waiting; the call goes on there", async () => {
    const box = sandbox({ "tools/wait.ts": WAIT })
    const ids = ["--session", "ses_waiter", "--call", "call_waited"]
    const owner = await start(box, ["exec", "wait", "--input", "{}", "--location", box.location, ...ids])
    try {
      await owner.stderrContains("progress: still waiting\n")
      const waiter = await start(box, ["exec", "wait", "--input", "{}", "--location", box.location, ...ids])
      await Bun.sleep(1_000)
      waiter.child.kill("SIGTERM")
      const stopped = await waiter.finished()
      expect(stopped.code).toBe(130)
      const said = settlementOf(stopped)
      expect(said.status).toBe("cancelled")
      expect(said.content).toEqual([{ type: "text", text: expect.stringContaining("Stopped waiting for the wait call, which another core process is running") }])
      // The owner still runs it, and what it records is what the ids answer.
      expect(owner.child.exitCode).toBeNull()
      owner.child.kill("SIGINT")
      expect((await owner.finished()).code).toBe(130)
    } finally {
      owner.child.kill("SIGKILL")
    }
    const replay = await exec(box, "wait", {}, ids)
    expect(settlementOf(replay).content).toEqual([{ type: "text", text: expect.stringContaining("may have done part of its work") }])
    expect(runs(box, "wait")).toBe(1)
  })

  test("its progress updates appear on stderr as plain lines when stderr is not a terminal", async () => {
    const box = sandbox({ "tools/wait.ts": WAIT })
    const running = await start(box, ["exec", "wait", "--input", "{}", "--location", box.location])
    await running.stderrContains("progress: still waiting\n")
    running.child.kill("SIGINT")
    const { stderr, stdout } = await running.finished()
    expect(stderr).toContain("progress: connecting\nprogress: still waiting\n")
    expect(stderr).not.toContain("\r")
    expect(stderr).not.toContain("\x1b")
    expect(stdout).not.toContain("progress")
  })
})

describe("a call interrupted while its change is being made", () => {
  // The edit goes in whole (a cancel cannot stop a file being replaced part-way): exec printed that settlement, a
  // success, but exited 130 as a cancel does, and a host going by the exit code thought nothing was done.
  test("ends with the change made: a success on stdout, exit 0, and the same on replay", async () => {
    const box = sandbox({ "big.txt": `${"z\n".repeat(2_000_000)}needle\n` })
    const ids = ["--session", "ses_signal", "--call", "call_edit"]
    const input = { filePath: "big.txt", oldString: "needle", newString: "thread" }
    const running = await start(box, ["exec", "edit", "--input", JSON.stringify(input), "--location", box.location, "--yes", ...ids])
    await running.stderrContains("progress: Writing big.txt")
    running.child.kill("SIGINT")
    const result = await running.finished()
    expect(settlementOf(result)).toMatchObject({ tool: "edit", status: "success" })
    expect(result.code).toBe(0)
    expect(readFileSync(join(box.location, "big.txt"), "utf8").endsWith("z\nthread\n")).toBe(true)
    expect(readdirSync(box.location)).toEqual(["big.txt"])
    const replay = await exec(box, "edit", input, [...ids, "--yes"])
    expect(replay.code).toBe(0)
    expect(settlementOf(replay).status).toBe("success")
  })
})

describe("a terminal that hangs up (SIGHUP)", () => {
  // exec in process died of the signal at once: a change being written left its temp file, of the file's size, in
  // the user's tree, and the call was left started (replayed as interrupted). Now it ends as a forwarded exec does.
  test("cancels the call, which is recorded so; exec prints nothing and ends as the signal ends a process", async () => {
    const box = sandbox({ "tools/wait.ts": WAIT })
    const ids = ["--session", "ses_hup", "--call", "call_hup"]
    const running = await start(box, ["exec", "wait", "--input", "{}", "--location", box.location, ...ids])
    await running.stderrContains("progress: still waiting\n")
    running.child.kill("SIGHUP")
    const result = await running.finished()
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 129, stdout: "" })
    const replay = await exec(box, "wait", {}, ids)
    expect(settlementOf(replay).status).toBe("cancelled")
    expect(runs(box, "wait")).toBe(1)
  })

  test("lets a change being made finish whole, and leaves no temp file", async () => {
    const box = sandbox({ "big.txt": `${"z\n".repeat(2_000_000)}needle\n` })
    const ids = ["--session", "ses_hup", "--call", "call_hup_edit"]
    const input = { filePath: "big.txt", oldString: "needle", newString: "thread" }
    const running = await start(box, ["exec", "edit", "--input", JSON.stringify(input), "--location", box.location, "--yes", ...ids])
    await running.stderrContains("progress: Writing big.txt")
    running.child.kill("SIGHUP")
    const result = await running.finished()
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 129, stdout: "" })
    expect(readFileSync(join(box.location, "big.txt"), "utf8").endsWith("z\nthread\n")).toBe(true)
    expect(readdirSync(box.location)).toEqual(["big.txt"])
    expect(settlementOf(await exec(box, "edit", input, [...ids, "--yes"])).status).toBe("success")
  })
})

describe("a terminal that hangs up while a change takes long", () => {
  // exec hung up ended itself by force 5 s later, whatever it was doing: in the middle of a commit that took longer
  // (large files), a patch was left half applied, its temp files in the tree, and the call unrecorded. strace holds
  // the rename that commits the edit for 7 s, as a slow disk would.
  test("lets the change finish, however long past 5 s, and exits 129 once it has", async () => {
    const box = sandbox({ "x.txt": "a\n" })
    const traced = Bun.spawn(
      [
        "strace", "-f", "-o", "/dev/null", "-e", "trace=rename", "-e", "inject=rename:delay_enter=7000000",
        await binary(), "exec", "edit", "--input", JSON.stringify({ filePath: "x.txt", oldString: "a", newString: "b" }),
        "--location", box.location, "--yes", "--session", "ses_slow", "--call", "call_slow",
      ],
      { env: { ...process.env, ...box.env, CORE_EXEC_FORWARD: "0" }, stdout: "pipe", stderr: "pipe" },
    )
    const reader = traced.stderr.getReader()
    let stderr = ""
    while (!stderr.includes("progress: Writing x.txt")) {
      const chunk = await reader.read()
      if (chunk.done) throw new Error(`stderr ended: ${stderr}`)
      stderr += new TextDecoder().decode(chunk.value)
    }
    // The core strace runs, held (soon) at its rename.
    const core = Number(readFileSync(`/proc/${traced.pid}/task/${traced.pid}/children`, "utf8").trim().split(" ")[0])
    expect(core).toBeGreaterThan(0)
    const hungUp = performance.now()
    process.kill(core, "SIGHUP")
    const code = await traced.exited
    expect(performance.now() - hungUp).toBeGreaterThan(5_500)
    expect(code).toBe(129)
    expect(readFileSync(join(box.location, "x.txt"), "utf8")).toBe("b\n")
    expect(readdirSync(box.location)).toEqual(["x.txt"])
    expect(settlementOf(await exec(box, "edit", { filePath: "x.txt", oldString: "a", newString: "b" }, ["--session", "ses_slow", "--call", "call_slow", "--yes"])).status).toBe("success")
  }, 60_000)
})

describe("a core killed mid-command", () => {
  test("leaves the call's temp directory, which the next core's first command removes", async () => {
    // The data directory lies under the system temp directory, so each command gets a TMPDIR of its own there.
    const box = sandbox({ "core.json": JSON.stringify({ permission: { bash: "allow" } }) })
    const noted = join(box.location, "tmpdir.txt")
    const running = await start(box, [
      "exec", "bash", "--input", JSON.stringify({ command: `echo "$TMPDIR" > tmpdir.txt; sleep 60` }), "--location", box.location,
    ])
    while (!existsSync(noted) || !readFileSync(noted, "utf8").endsWith("\n")) await Bun.sleep(20)
    const left = readFileSync(noted, "utf8").trim()
    expect(left.startsWith(join(tmpdir(), `core-call-${running.child.pid}-`))).toBe(true)
    running.child.kill("SIGKILL")
    await running.child.exited
    // Killed, core removed nothing.
    expect(existsSync(left)).toBe(true)

    const next = await exec(box, "bash", { command: 'echo "$TMPDIR"' })
    expect(settlementOf(next).status).toBe("success")
    const own = settlementOf(next).structured as { readonly stdout: string }
    expect(own.stdout.trim().startsWith(join(tmpdir(), "core-call-"))).toBe(true)
    expect(existsSync(left)).toBe(false)
    // Its own, removed with its call.
    expect(existsSync(own.stdout.trim())).toBe(false)
  })
})
