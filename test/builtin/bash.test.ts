// The bash built-in settled in a real Location: results and how they read to the model, bad input as
// model-visible errors, permission per command (and nothing spawned when refused), the workdir boundary, and the
// edge cases of real processes (background jobs, timeouts, signals, huge output), each leaving nothing behind.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync } from "node:fs"
import { join } from "node:path"
import { Covered } from "../../src/shell/covered"
import { Native } from "../../src/shell/native"
import { Repositories } from "../../src/shell/repositories"
import { Supervised } from "../../src/shell/supervised"
import { harness, textOf } from "../support/builtin"
import { tempDir } from "../support/temp"
import { aliveIn, pidsIn } from "../shell/processes"

interface Structured {
  readonly exitCode: number | null
  readonly signal: string | null
  readonly timedOut: boolean
  readonly timeout?: { readonly kind: string; readonly ms: number }
  readonly stdout: string
  readonly stderr: string
  readonly output: string
  readonly capture: Record<"stdout" | "stderr" | "output", { bytes: number; kept: number; complete: boolean; gap?: { offset: number; length: number }; unread?: true }>
  readonly durationMs: number
  readonly killed?: ReadonlyArray<{ readonly pid: number; readonly name: string }>
}

const structured = (outcome: { settlement: { structured: unknown } }) => outcome.settlement.structured as Structured

const ASK_ALL = { action: "bash", resource: "*", effect: "ask" } as const

describe("bash results", () => {
  test("echo settles as success with the output and the exit code", async () => {
    const outcome = await harness().settle("bash", { command: "echo hi" })
    expect(outcome.settlement.status).toBe("success")
    expect(textOf(outcome.settlement)).toBe("hi\n\nExit code 0")
    expect(structured(outcome)).toMatchObject({
      exitCode: 0,
      signal: null,
      timedOut: false,
      stdout: "hi\n",
      stderr: "",
      output: "hi\n",
      capture: { stdout: { bytes: 3, kept: 3, complete: true } },
    })
  })

  // `git mv` and `bun install` failed with "Invalid cross-device link", which says nothing of what to do instead.
  test("a move refused with EXDEV says to copy and remove instead; a success that prints the words says nothing more", async () => {
    const failed = textOf((await harness().settle("bash", { command: "echo \"mv: cannot move 'a' to 'b/a': Invalid cross-device link\" >&2; exit 1" })).settlement)
    expect(failed).toEndWith("Exit code 1\nA move or link into another directory was refused (EXDEV): the system refuses one between two file systems or two mounts (in core's sandbox, the Location, the temporary folder and each granted folder is one). Copy, then remove the original instead (mv does so by itself; for git mv, mv then git add -A on both paths).")
    const fine = textOf((await harness().settle("bash", { command: "echo EXDEV" })).settlement)
    expect(fine).toBe("EXDEV\n\nExit code 0")
  })

  test("a non-zero exit is a normal result, with both streams interleaved", async () => {
    const outcome = await harness().settle("bash", { command: "echo out; sleep 0.05; echo err >&2; exit 3" })
    expect(outcome.settlement.status).toBe("success")
    expect(textOf(outcome.settlement)).toBe("out\nerr\n\nExit code 3")
    expect(structured(outcome)).toMatchObject({ exitCode: 3, stdout: "out\n", stderr: "err\n" })
  })

  test("a command that does not exist reads as exit 127, command not found", async () => {
    const outcome = await harness().settle("bash", { command: "no-such-command-anywhere --flag" })
    expect(outcome.settlement.status).toBe("success")
    expect(textOf(outcome.settlement)).toMatch(/command not found\n\nExit code 127 \(command not found\)$/)
  })

  test("a process killed by a signal says so", async () => {
    const outcome = await harness().settle("bash", { command: "kill -9 $$" })
    expect(textOf(outcome.settlement)).toBe("(no output)\n\nKilled by SIGKILL")
    expect(structured(outcome)).toMatchObject({ exitCode: null, signal: "SIGKILL" })
  })

  test("runs in the Location by default and in a workdir inside it", async () => {
    const box = harness({ files: { "sub/file.txt": "x" } })
    expect(structured(await box.settle("bash", { command: "pwd" })).stdout).toBe(`${box.directory}\n`)
    expect(structured(await box.settle("bash", { command: "pwd; ls", workdir: "sub" })).stdout).toBe(
      `${join(box.directory, "sub")}\nfile.txt\n`,
    )
  })

  test("a background job does not keep the call open and is killed with the group", async () => {
    const box = harness()
    const outcome = await box.settle("bash", { command: "sleep 1000 & echo $!" })
    const [pid] = pidsIn(structured(outcome).stdout)
    expect(outcome.settlement.status).toBe("success")
    expect(aliveIn(box.directory, pid!)).toBe(false)
  })

  test("a command that closes stdout early settles with its stderr", async () => {
    const outcome = await harness().settle("bash", { command: "exec 1>&-; sleep 0.2; echo x >&2" })
    expect(textOf(outcome.settlement)).toBe("x\n\nExit code 0")
  })

  test("a timeout stops the whole group and says so", async () => {
    const box = harness()
    const outcome = await box.settle("bash", { command: "sleep 1000 & echo $! $$; sleep 1000", timeoutMs: 300 })
    const [background, leader] = pidsIn(structured(outcome).stdout)
    expect(outcome.settlement.status).toBe("success")
    expect(textOf(outcome.settlement)).toContain(
      "\n\nTimed out after 300 ms (the wall-clock limit): the command and every process it started were killed. " +
        "Set `timeoutMs` for more time (default 120,000 ms, at most 600,000 ms) or split the work.\nKilled 2 processes still running: ",
    )
    expect(structured(outcome).killed?.map((killed) => killed.pid)).toEqual(expect.arrayContaining([background, leader]))
    expect(structured(outcome)).toMatchObject({ timedOut: true, timeout: { kind: "wall", ms: 300 }, signal: "SIGTERM" })
    // Numbered as the command numbered them (its own PID namespace, where it has one): none of them runs.
    expect(aliveIn(box.directory, background!)).toBe(false)
    expect(aliveIn(box.directory, leader!)).toBe(false)
  })

  test("a command that never prints stops after the configured inactivity timeout", async () => {
    const outcome = await harness({ shell: { inactivityTimeoutMs: 300 } }).settle("bash", { command: "sleep 1000" })
    expect(textOf(outcome.settlement)).toStartWith(
      "(no output)\n\nTimed out after 300 ms without output (the inactivity limit): the command and every process " +
        "it started were killed.",
    )
    expect(structured(outcome).timeout).toEqual({ kind: "inactivity", ms: 300 })
  })

  // One session's calls that never end (sleep) would hold a supervisor and ~14 of core's descriptors each until core
  // had none left for any session: past shell.maxRunning a session's commands wait their turn, other sessions' run.
  test("past shell.maxRunning a session's commands wait their turn, cancellable, while another session's run", async () => {
    const box = harness({ shell: { maxRunning: 2 } })
    const started = () => (existsSync(join(box.directory, "started")) ? readFileSync(join(box.directory, "started"), "utf8").split("\n").filter(Boolean).sort() : [])
    const until = async (ready: () => boolean) => {
      for (let waited = 0; !ready(); waited += 20) {
        if (waited > 20_000) throw new Error(`timed out; started: ${started().join(" ")}`)
        await Bun.sleep(20)
      }
    }
    const held = (name: string) => `echo ${name} >> started; while [ ! -e release-${name} ]; do sleep 0.02; done; echo ${name} done`
    const release = (name: string) => Bun.write(join(box.directory, `release-${name}`), "")
    const waitedFor: Array<string> = []
    const onProgress = (name: string) => (update: { readonly message: string }) => {
      if (update.message.startsWith("Waiting to start")) waitedFor.push(`${name}: ${update.message}`)
    }
    const a1 = box.settle("bash", { command: held("a1") }, { session: "ses_a", onProgress: onProgress("a1") })
    const a2 = box.settle("bash", { command: held("a2") }, { session: "ses_a", onProgress: onProgress("a2") })
    await until(() => started().length === 2)
    const a3 = box.settle("bash", { command: held("a3") }, { session: "ses_a", onProgress: onProgress("a3") })
    const cancelled = box.settle("bash", { command: held("a4") }, { session: "ses_a", interruptAt: "Waiting to start" })
    const b1 = box.settle("bash", { command: held("b1") }, { session: "ses_b" })
    await until(() => started().includes("b1"))
    // Cancelled while it waited, it ran in no part, and the model is told so.
    const stopped = (await cancelled).settlement
    expect(stopped.status).toBe("cancelled")
    expect(textOf(stopped)).toContain("before it ran (while it waited for permission or for its turn): nothing of it ran")
    await Bun.sleep(300)
    expect(started()).toEqual(["a1", "a2", "b1"])
    expect(waitedFor).toEqual([
      "a3: Waiting to start: 2 commands, searches and fetches of this session are running, the most it runs at once (shell.maxRunning).",
    ])
    await release("a1")
    await until(() => started().includes("a3"))
    for (const name of ["a2", "a3", "b1", "a4"]) await release(name)
    for (const [name, call] of [["a1", a1], ["a2", a2], ["a3", a3], ["b1", b1]] as const) {
      const outcome = await call
      expect([name, outcome.settlement.status, structured(outcome).stdout]).toEqual([name, "success", `${name} done\n`])
    }
    // The cancelled call never ran, and its turn went to no one twice: a2 and a3 ran as two of two.
    await Bun.sleep(200)
    expect(started()).toEqual(["a1", "a2", "a3", "b1"])
  })

  // A thousand greps of `/` in one session ran a thousand rg processes of hundreds of MB each: searches count with
  // commands against the same bound.
  test("grep, glob and list count with commands against shell.maxRunning", async () => {
    const box = harness({ shell: { maxRunning: 1 }, files: { "notes.txt": "needle\n" } })
    const held = box.settle("bash", { command: "touch started; while [ ! -e release ]; do sleep 0.02; done; echo done" }, { session: "ses_a" })
    for (let waited = 0; !existsSync(join(box.directory, "started")); waited += 20) {
      if (waited > 20_000) throw new Error("the command never started")
      await Bun.sleep(20)
    }
    const waits: Array<string> = []
    const searches = [
      box.settle("grep", { pattern: "needle" }, { session: "ses_a", onProgress: (update) => waits.push(`grep: ${update.message}`) }),
      box.settle("glob", { pattern: "*.txt" }, { session: "ses_a", onProgress: (update) => waits.push(`glob: ${update.message}`) }),
      box.settle("list", {}, { session: "ses_a", onProgress: (update) => waits.push(`list: ${update.message}`) }),
    ]
    // Another session's search does not wait for them.
    expect(textOf((await box.settle("grep", { pattern: "needle" }, { session: "ses_b" })).settlement)).toContain("notes.txt")
    await Bun.sleep(200)
    expect(waits.map((line) => line.split(":")[0]).sort()).toEqual(["glob", "grep", "list"])
    expect(waits.every((line) => line.includes("Waiting to start: 1 commands, searches and fetches of this session are running"))).toBe(true)
    await Bun.write(join(box.directory, "release"), "")
    expect((await held).settlement.status).toBe("success")
    const [grep, glob, list] = await Promise.all(searches)
    expect(textOf(grep!.settlement)).toContain("notes.txt")
    expect(textOf(glob!.settlement)).toContain("notes.txt")
    expect(textOf(list!.settlement)).toContain("notes.txt")
  })

  // bash asks before it runs anything: cancelled while a person has not answered, nothing of it ran, and the model
  // is told so rather than to check for what it may have done. Cancelled once running, it may have done part.
  test("cancelled while its permission ask waits, it settles as cancelled before it ran; once running, as maybe part done", async () => {
    const location = harness({ rules: [{ action: "bash", resource: "touch *", effect: "ask" }] })
    const waiting = await location.settle("bash", { command: "touch made.txt" }, { interruptOnAsk: true })
    expect(waiting.asks).toHaveLength(1)
    expect(waiting.settlement.status).toBe("cancelled")
    expect(textOf(waiting.settlement)).toContain("before it ran (while it waited for permission or for its turn): nothing of it ran")
    expect(existsSync(join(location.directory, "made.txt"))).toBe(false)
    const running = await location.settle("bash", { command: "echo started; sleep 5" }, { interruptAt: "started" })
    expect(running.settlement.status).toBe("cancelled")
    expect(textOf(running.settlement)).toContain("it may have done part of its work")
  })

  test("progress reaches the call while the command runs", async () => {
    const outcome = await harness().settle("bash", { command: "echo one; sleep 0.5; echo two" })
    expect(outcome.progress[0]).toMatchObject({ message: "one", metadata: { tail: "one\n", bytes: 4 } })
    expect(outcome.progress.at(-1)?.message).toBe("two")
  })

  // Past the commands this core runs at once, a command waits for one to end; nothing showed the call waiting.
  test("a command waiting for its turn among the commands core runs says so in its progress, then runs", async () => {
    const held: Array<() => void> = []
    for (let turn = Supervised.runTurn.now(); turn !== undefined; turn = Supervised.runTurn.now()) held.push(turn)
    expect(held).toHaveLength(Supervised.MAX_RUNNING)
    const settled = harness().settle("bash", { command: "echo ran" })
    await Bun.sleep(300)
    for (const release of held.splice(0)) release()
    const outcome = await settled
    expect(outcome.progress[0]?.message).toBe(
      `Waiting to start: ${Supervised.MAX_RUNNING.toLocaleString("en-US")} commands are running in this core, the most it runs at once ` +
        "(half its open-file limit); this one starts when one of them ends.",
    )
    expect(textOf(outcome.settlement)).toBe("ran\n\nExit code 0")
  })

  test("2 GiB of output keeps the head and tail and states exactly what was not kept", async () => {
    const h = harness()
    const outcome = await h.settle("bash", { command: "yes | head -c 2147483648" })
    expect(outcome.settlement.status).toBe("success")
    // Too large for the model: the settlement bounds it and keeps the text and the structured output in full,
    // in its one managed output.
    expect(outcome.settlement.outputs).toHaveLength(1)
    const { id } = outcome.settlement.outputs[0]!
    const text = outcome.outputs[id]!
    // Kept in the Location's own directory of outputs.
    const kept = readdirSync(join(h.data, "outputs"), { recursive: true }).map(String).find((name) => name.endsWith(`${id}.json`))!
    const result = (await Bun.file(join(h.data, "outputs", kept)).json()) as Structured
    expect(result.capture.stdout).toEqual({
      bytes: 2_147_483_648,
      kept: 1_048_576,
      complete: false,
      gap: { offset: 524_288, length: 2_146_435_072 },
    })
    expect(result.capture.output).toMatchObject({ bytes: 2_147_483_648, kept: 1_048_576, complete: false })
    const half = "y\n".repeat(262_144)
    expect(result.stdout).toBe(`${half}\n[… 2,146,435,072 bytes not kept …]\n${half}`)
    expect(text).toContain("\n\nExit code 0\nstdout: 2,147,483,648 bytes, the middle 2,146,435,072 bytes were not kept\n")
    expect(text).toContain("[… 2,146,435,072 bytes not kept …]")
  }, 120_000)

  test("binary data in the output reads to the model as one line saying so, with the text around it kept", async () => {
    // An executable's first bytes: NULs, control characters and bytes that are not UTF-8, some of them line feeds.
    const blob = new Uint8Array(4096)
    for (let index = 0; index < blob.length; index++) blob[index] = (index * 7919) % 251
    const box = harness({ files: { "blob.bin": blob } })
    const outcome = await box.settle("bash", { command: "echo start; cat blob.bin; echo; echo end" })
    expect(outcome.settlement.status).toBe("success")
    const text = textOf(outcome.settlement)
    expect(text).toMatch(/^start\n\[binary data, about [\d,]+ bytes, not shown: make text of it with a command \(file, xxd \| head, strings \| head\) or send it to a file\]\nend\n\nExit code 0$/)
    const about = Number(/about ([\d,]+) bytes/.exec(text)![1]!.replaceAll(",", ""))
    // Each byte that was not UTF-8 (read as U+FFFD, three bytes in UTF-8) counted as the one it was.
    expect(about).toBeGreaterThanOrEqual(0.95 * 4096)
    expect(about).toBeLessThanOrEqual(1.05 * 4096)
    // The structured output keeps every character, NULs too.
    expect(structured(outcome).stdout.startsWith("start\n\u0000")).toBe(true)
    expect(structured(outcome).stdout).toContain("\ufffd")
  })

  test("random bytes leave no fragment of themselves beside the line saying what they were", async () => {
    // Random bytes, as a compressed file holds: a line feed one byte in 256, lines of any length.
    let seed = 42
    const random = new Uint8Array(8192).map(() => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 0xff)
    const box = harness({ files: { "random.bin": random } })
    const text = textOf((await box.settle("bash", { command: "echo before; cat random.bin; echo; echo after" })).settlement)
    expect(text).toMatch(/^before\n\[binary data, about [\d,]+ bytes, not shown: [^\]]+\]\nafter\n\nExit code 0$/)
    const about = Number(/about ([\d,]+) bytes/.exec(text)![1]!.replaceAll(",", ""))
    expect(about).toBeGreaterThanOrEqual(0.95 * 8192)
    expect(about).toBeLessThanOrEqual(1.05 * 8192)
  })

  // One line holding a NUL, then lines starting with an escape (invisible in a terminal): the text after it was hidden.
  test("one line of binary data hides none of the text lines after it, coloured or in Latin-1", async () => {
    const out = Buffer.concat([
      Buffer.from("blob\u0000\u0001\u0002\u0003\n"),
      Buffer.from("\u001b[31mFAIL: 3 tests failed\u001b[0m\n\u001b[1mERROR: migration will DROP TABLE users\u001b[0m\n"),
      Buffer.from("Größe: café\n", "latin1"),
      Buffer.from("plain line\n"),
    ])
    const box = harness({ files: { "out.txt": out } })
    const text = textOf((await box.settle("bash", { command: "cat out.txt" })).settlement)
    expect(text).toBe(
      "[binary data, about 9 bytes, not shown: make text of it with a command (file, xxd | head, strings | head) or send it to a file]\n" +
        "\u001b[31mFAIL: 3 tests failed\u001b[0m\n\u001b[1mERROR: migration will DROP TABLE users\u001b[0m\n" +
        "Gr\ufffd\ufffde: caf\ufffd\nplain line\n\nExit code 0",
    )
  })

  test("text in Latin-1, colours, a bell or a progress bar stays text", async () => {
    const latin1 = Buffer.from("Größe über Äpfel und Käse\ncafé crème brûlée naïve\n", "latin1")
    const styled = "\u001b[31mred\u001b[0m\u0007 done\tok\r\n[##  ] 50%\r[####] 100%\n"
    const box = harness({ files: { "latin1.txt": latin1, "styled.txt": styled } })
    const outcome = await box.settle("bash", { command: "cat latin1.txt styled.txt" })
    expect(textOf(outcome.settlement)).toBe(
      "Gr\ufffd\ufffde \ufffdber \ufffdpfel und K\ufffdse\ncaf\ufffd cr\ufffdme br\ufffdl\ufffde na\ufffdve\n" +
        "\u001b[31mred\u001b[0m\u0007 done\tok\r\n[##  ] 50%\r[####] 100%\n\nExit code 0",
    )
  })
})

describe("bash input errors", () => {
  const failure = async (input: unknown, options: Parameters<typeof harness>[0] = {}) => {
    const outcome = await harness(options).settle("bash", input)
    expect(outcome.settlement.status).toBe("error")
    expect(outcome.settlement.error?.kind).toBe("failure")
    return outcome.settlement.error!.message
  }

  test("an empty command", async () => {
    expect(await failure({ command: "  \n" })).toContain("The command is empty")
  })

  test("a timeout that is not positive or above the maximum is invalid input, refused before anything runs", async () => {
    const invalid = async (input: unknown, options: Parameters<typeof harness>[0] = {}) => {
      const outcome = await harness(options).settle("bash", input)
      expect(outcome.settlement.status).toBe("error")
      expect(outcome.settlement.error?.kind).toBe("invalid_input")
      return outcome.settlement.error!.message
    }
    expect(await invalid({ command: "true", timeoutMs: 0 })).toContain("between 1 and 600000")
    expect(await invalid({ command: "true", timeoutMs: -5 })).toContain("between 1 and 600000")
    expect(await invalid({ command: "true", timeoutMs: 600_001 })).toContain("between 1 and 600000")
    expect(await invalid({ command: "true", timeoutMs: 2000 }, { shell: { maxTimeoutMs: 1000 } })).toContain(
      "between 1 and 1000",
    )
  })

  test("a workdir that is a file, or does not exist", async () => {
    expect(await failure({ command: "true", workdir: "a.txt" }, { files: { "a.txt": "x" } })).toContain(
      "The workdir a.txt is not a directory",
    )
    expect(await failure({ command: "true", workdir: "missing" })).toContain("The workdir missing does not exist")
  })
})

describe("bash permission per command", () => {
  test("each command of a line is checked: an allowed one does not carry the others", async () => {
    const box = harness({ rules: [ASK_ALL, { action: "bash", resource: "git status", effect: "allow" }] })
    const outcome = await box.settle("bash", { command: "git status && touch made" })
    expect(outcome.asks).toEqual([{ action: "bash", resources: ["touch made"], save: ["touch *"] }])
    expect(outcome.settlement.status).toBe("declined")
    expect(existsSync(join(box.directory, "made"))).toBe(false)
  })

  test("one ask covers every command not yet allowed, saving each one's prefix", async () => {
    const box = harness({ rules: [ASK_ALL] })
    const outcome = await box.settle("bash", { command: "mkdir -p out && npm run build > out/log; echo $(touch made)" }, {
      reply: { reply: "once" },
    })
    expect(outcome.asks).toEqual([
      {
        action: "bash",
        // The redirection is the last command's of its list, as bash reads it, and shown with it.
        resources: ["mkdir -p out", "npm run build > out/log", "echo $(touch made)", "touch made"],
        save: ["mkdir *", "npm run build *", "echo *", "touch *"],
      },
    ])
    expect(outcome.settlement.status).toBe("success")
    expect(existsSync(join(box.directory, "made"))).toBe(true)
  })

  test("a rule denying one command denies the line, and nothing runs", async () => {
    const box = harness({ rules: [{ action: "bash", resource: "rm *", effect: "deny" }] })
    box.write({ keep: "x" })
    const outcome = await box.settle("bash", { command: "touch made; sudo rm keep" })
    expect(outcome.settlement.status).toBe("error")
    expect(outcome.settlement.error?.kind).toBe("denied")
    expect(outcome.settlement.error?.message).toContain('"rm keep"')
    expect(existsSync(join(box.directory, "made"))).toBe(false)
    expect(existsSync(join(box.directory, "keep"))).toBe(true)
  })

  test("an unparsable line is asked as a whole, even where every command is allowed, and saves nothing", async () => {
    const box = harness()
    const outcome = await box.settle("bash", { command: 'echo "unterminated; touch made' })
    expect(outcome.asks).toEqual([{ action: "bash", resources: ['<unparsed> echo "unterminated; touch made'], save: [] }])
    expect(outcome.settlement.status).toBe("declined")
    expect(existsSync(join(box.directory, "made"))).toBe(false)
  })

  test("an expansion in a command name is asked as that command, even where every command is allowed", async () => {
    const box = harness({ files: { "v.txt": "x" } })
    const outcome = await box.settle("bash", { command: "$(echo rm) v.txt" })
    expect(outcome.asks).toEqual([{ action: "bash", resources: ["$(echo rm) v.txt"], save: [] }])
    expect(existsSync(join(box.directory, "v.txt"))).toBe(true)
  })

  test("commands allowed by rules run without asking", async () => {
    const box = harness({ rules: [ASK_ALL, { action: "bash", resource: "echo *", effect: "allow" }] })
    const outcome = await box.settle("bash", { command: "echo a && echo b" })
    expect(outcome.asks).toEqual([])
    expect(textOf(outcome.settlement)).toBe("a\nb\n\nExit code 0")
  })

  test("a workdir outside the Location asks external_directory first, and nothing runs when it is declined", async () => {
    const outside = realpathSync(tempDir("core-bash-outside-"))
    const box = harness()
    const outcome = await box.settle("bash", { command: "touch made", workdir: outside })
    expect(outcome.asks).toEqual([{ action: "external_directory", resources: [`${outside}/*`], save: [`${outside}/*`] }])
    expect(outcome.settlement.status).toBe("declined")
    expect(existsSync(join(outside, "made"))).toBe(false)
  })

  test("a workdir outside the Location runs there once approved", async () => {
    const outside = realpathSync(tempDir("core-bash-outside-"))
    const outcome = await harness().settle("bash", { command: "pwd", workdir: outside }, { reply: { reply: "once" } })
    expect(structured(outcome).stdout).toBe(`${outside}\n`)
  })

  test("a file command naming a path outside the Location asks for that directory", async () => {
    const outside = realpathSync(tempDir("core-bash-outside-"))
    mkdirSync(join(outside, "deep"))
    const box = harness()
    const outcome = await box.settle("bash", { command: `touch made && rm -rf ${outside}/deep` })
    expect(outcome.asks).toEqual([{ action: "external_directory", resources: [`${outside}/deep/*`], save: [`${outside}/deep/*`] }])
    expect(existsSync(join(box.directory, "made"))).toBe(false)
    expect(existsSync(join(outside, "deep"))).toBe(true)
  })

  test("every outside directory of a call is asked about at once", async () => {
    const first = realpathSync(tempDir("core-bash-outside-"))
    const second = realpathSync(tempDir("core-bash-outside-"))
    const outcome = await harness().settle("bash", { command: `cat ${second}/notes.txt`, workdir: first })
    expect(outcome.asks).toEqual([
      { action: "external_directory", resources: [`${first}/*`, `${second}/*`], save: [`${first}/*`, `${second}/*`] },
    ])
  })

  test("a redirection to a file outside the Location asks for its directory", async () => {
    const outside = realpathSync(tempDir("core-bash-outside-"))
    const outcome = await harness().settle("bash", { command: `echo hi > ${outside}/out.txt` })
    expect(outcome.asks).toEqual([{ action: "external_directory", resources: [`${outside}/*`], save: [`${outside}/*`] }])
    expect(existsSync(join(outside, "out.txt"))).toBe(false)
  })

  test("paths inside the Location and devices ask nothing", async () => {
    const outcome = await harness().settle("bash", { command: "mkdir -p a/b && touch a/b/c 2>/dev/null && ls a/b" })
    expect(outcome.asks).toEqual([])
    expect(structured(outcome).stdout).toBe("c\n")
  })
})

describe("bash: what cannot be known from the text", () => {
  const DENY_RM = { action: "bash", resource: "rm *", effect: "deny" } as const

  for (const command of ["coproc rm v.txt; wait", "trap 'rm v.txt' EXIT", 'eval "rm v.txt"', 'bash -c "rm v.txt"', "find . -name v.txt -exec rm {} \\;"]) {
    test(`${command}: a rule denying the command it runs denies the line`, async () => {
      const box = harness({ rules: [DENY_RM], files: { "v.txt": "x" } })
      const outcome = await box.settle("bash", { command })
      expect(outcome.settlement.error?.kind).toBe("denied")
      expect(outcome.asks).toEqual([])
      expect(existsSync(join(box.directory, "v.txt"))).toBe(true)
    })
  }

  for (const command of ['X="rm v.txt"; eval "$X"', "echo rm v.txt | bash", "python3 -c 'import os; os.remove(\"v.txt\")'"]) {
    test(`${command}: code hidden from the text is asked, although every command is allowed`, async () => {
      const box = harness({ rules: [DENY_RM], files: { "v.txt": "x" } })
      const outcome = await box.settle("bash", { command })
      expect(outcome.asks).toHaveLength(1)
      expect(outcome.asks[0]).toMatchObject({ action: "bash", save: [] })
      expect(outcome.settlement.status).toBe("declined")
      expect(existsSync(join(box.directory, "v.txt"))).toBe(true)
    })
  }

  // logsave was read as a program running nothing but itself: `logsave LOG rm x` ran past `rm *: deny`.
  for (const command of ["logsave /dev/null rm -f v.txt", "logsave -- /dev/null bash -c 'rm -f v.txt'", "choom -n 0 -- rm -f v.txt"]) {
    test(`${command}: a wrapper core knows runs a denied command, and the line is denied`, async () => {
      const box = harness({ rules: [{ action: "bash", resource: "*", effect: "allow" }, DENY_RM], files: { "v.txt": "x" } })
      const outcome = await box.settle("bash", { command })
      expect(outcome.settlement.error?.kind).toBe("denied")
      expect(JSON.stringify(outcome.settlement.content)).toContain("rm *")
      expect(outcome.asks).toEqual([])
      expect(existsSync(join(box.directory, "v.txt"))).toBe(true)
    })
  }

  test("an opaque command runs once approved, and always saves nothing for it", async () => {
    const box = harness({ files: { "v.txt": "x" } })
    const outcome = await box.settle("bash", { command: 'X="rm v.txt"; eval "$X"' }, { reply: { reply: "always" } })
    expect(outcome.asks).toEqual([{ action: "bash", resources: ['eval "$X"'], save: [] }])
    expect(outcome.settlement.status).toBe("success")
    expect(existsSync(join(box.directory, "v.txt"))).toBe(false)
  })

  test("commands decided by rules are asked first, then what is opaque on its own", async () => {
    const box = harness({ rules: [ASK_ALL] })
    const outcome = await box.settle("bash", { command: 'ls; eval "$X"' }, { reply: { reply: "once" } })
    expect(outcome.asks).toEqual([
      { action: "bash", resources: ["ls"], save: ["ls *"] },
      { action: "bash", resources: ['eval "$X"'], save: [] },
    ])
    expect(outcome.settlement.status).toBe("success")
  })

  test("a denied opaque command refuses the line before anything is asked", async () => {
    const box = harness({ rules: [ASK_ALL, { action: "bash", resource: "eval *", effect: "deny" }] })
    const outcome = await box.settle("bash", { command: 'touch made; eval "$X"' })
    expect(outcome.settlement.error?.kind).toBe("denied")
    expect(outcome.asks).toEqual([])
    expect(existsSync(join(box.directory, "made"))).toBe(false)
  })

  test("a path held in an expansion is asked as its command, outside the Location or not", async () => {
    const outside = realpathSync(tempDir("core-bash-outside-"))
    const box = harness()
    for (const command of [`D=${outside}; echo hi > $D/out.txt`, `D=${outside}; touch "$D/made"`, "cat ~root/.bashrc"]) {
      const outcome = await box.settle("bash", { command })
      // `D=/outside` is itself a path outside, asked first; past it, the command holding `$D` is asked, saving nothing.
      expect(outcome.asks).toHaveLength(1)
      const [ask] = outcome.asks
      if (ask!.action === "bash") expect(ask!.save).toEqual([])
      else expect(ask).toEqual({ action: "external_directory", resources: [`${outside}/*`], save: [`${outside}/*`] })
      expect(outcome.settlement.status).toBe("declined")
    }
    expect(existsSync(join(outside, "out.txt"))).toBe(false)
    expect(existsSync(join(outside, "made"))).toBe(false)
  })
})

describe("bash: redirections", () => {
  test("a redirection is part of the command asked about; always saves the command's prefix", async () => {
    const box = harness({ rules: [ASK_ALL] })
    const outcome = await box.settle("bash", { command: "echo hi > notes.txt" })
    expect(outcome.asks).toEqual([{ action: "bash", resources: ["echo hi > notes.txt"], save: ["echo *"] }])
    expect(existsSync(join(box.directory, "notes.txt"))).toBe(false)
  })

  test("the plan agent cannot write a file through a redirection", async () => {
    const box = harness({ files: { "src/main.ts": "original" } })
    for (const command of ["echo hi > src/main.ts", "echo hi >> src/main.ts", "ls &> src/main.ts", "bash -c 'echo hi > src/main.ts'"]) {
      const outcome = await box.settle("bash", { command }, { agent: "plan" })
      expect(outcome.settlement.error?.kind).toBe("denied")
      expect(outcome.settlement.error?.message).toContain('edit on "src/main.ts"')
    }
    expect(readFileSync(join(box.directory, "src/main.ts"), "utf8")).toBe("original")
  })

  test("a redirection to a path held in an expansion is an edit the plan agent cannot make", async () => {
    const outcome = await harness().settle("bash", { command: 'echo hi > "$OUT"' }, { agent: "plan" })
    expect(outcome.settlement.error?.kind).toBe("denied")
    expect(outcome.settlement.error?.message).toContain('edit on "\\"$OUT\\""')
  })

  test("reading through a redirection, or writing to /dev/null, is no edit", async () => {
    const box = harness({ files: { "in.txt": "content\n" } })
    const outcome = await box.settle("bash", { command: "cat < in.txt 2>/dev/null" }, { agent: "plan" })
    expect(outcome.settlement.status).toBe("success")
    expect(structured(outcome).stdout).toBe("content\n")
  })

  test("a file a redirection writes is asked about as an edit when edits are asked", async () => {
    const box = harness({ rules: [{ action: "edit", resource: "*", effect: "ask" }] })
    const outcome = await box.settle("bash", { command: "echo hi > notes.txt" })
    expect(outcome.asks).toEqual([{ action: "edit", resources: ["notes.txt"], save: ["notes.txt"] }])
    expect(existsSync(join(box.directory, "notes.txt"))).toBe(false)
  })
})

describe("bash: a repository the command makes", () => {
  // What git would run of it is taken out when the command ends (src/shell/guard.ts): the model is told what, why,
  // that its work stays, and what a person must do; not that it changed core's configuration.
  test("keeps its work; the model reads what was taken out of it, and that a person adds its remote", async () => {
    const box = harness()
    const outcome = await box.settle("bash", {
      command: "git init -q && git remote add origin https://example.com/acme/shop.git && echo hi > a.txt && git add a.txt",
    })
    expect(outcome.settlement.status).toBe("success")
    const text = textOf(outcome.settlement)
    expect(text).toContain(`Undone: ${join(box.directory, ".git/hooks")}, ${join(box.directory, ".git/config")}.`)
    expect(text).toContain("git runs these for the user outside the sandbox")
    expect(text).toContain("git remote add origin URL")
    expect(text).not.toContain("core's own configuration")
    expect(text).not.toContain("in place of the repository")
    expect(existsSync(join(box.directory, ".git/index"))).toBe(true)
    expect(existsSync(join(box.directory, ".git/config"))).toBe(false)
  })
})

describe("bash: a repository that was there before the command", () => {
  // Git printed "could not write config file .git/config: Device or resource busy", or a warning and then success
  // (`git branch -u`): nothing said why, nor that the change did not happen.
  test("git writing its config is told the config is kept, why, and that the user makes the change", async () => {
    const box = harness({ files: { "a.txt": "a" } })
    const git = (args: ReadonlyArray<string>) => Bun.spawnSync(["git", "-c", "user.name=a", "-c", "user.email=a@b", ...args], { cwd: box.directory })
    git(["init", "-q"])
    git(["commit", "-q", "--allow-empty", "-m", "init"])
    const config = readFileSync(join(box.directory, ".git/config"), "utf8")
    const outcome = await box.settle("bash", { command: "git remote add upstream https://example.com/x.git" })
    expect(textOf(outcome.settlement)).toContain(
      "Core keeps git's config files read-only to commands (a key in them can run code when the user next runs git, outside the sandbox)",
    )
    expect(readFileSync(join(box.directory, ".git/config"), "utf8")).toBe(config)
    // A command git's config has nothing to do with says nothing of it.
    expect(textOf((await box.settle("bash", { command: "git status --short" })).settlement)).not.toContain("Core keeps git's config")
  })

  // A bare repository a command made (`git init --bare remote.git`, to push to) loses its sample hooks: that was
  // told as a change of core's own configuration, for the person to make.
  test("the hooks of a bare repository a command made are told as git's, not as core's configuration", async () => {
    const box = harness({ files: { "a.txt": "a" } })
    const text = textOf((await box.settle("bash", { command: "git init -q --bare remote.git && echo made" })).settlement)
    expect(text).toContain(`Undone: ${join(box.directory, "remote.git", "hooks")}. git runs these for the user outside the sandbox`)
    expect(text).not.toContain("core's own configuration")
  })

  // git renames and deletes a branch, then fails to rewrite its config (exit 128 for a rename): the model was told
  // the change did not happen, and would make it again.
  test("a branch renamed or deleted is told it was, though its section of the config could not follow", async () => {
    const box = harness({ files: { "a.txt": "a" } })
    const git = (args: ReadonlyArray<string>) => Bun.spawnSync(["git", "-c", "user.name=a", "-c", "user.email=a@b", ...args], { cwd: box.directory })
    git(["init", "-q", "-b", "main"])
    git(["commit", "-q", "--allow-empty", "-m", "init"])
    git(["branch", "old"])
    git(["branch", "gone"])
    for (const command of ["git branch -m old new", "git branch -D gone"]) {
      const text = textOf((await box.settle("bash", { command })).settlement)
      expect(text).toContain("the branch itself was renamed, copied or deleted as git said")
      expect(text).not.toContain("did not happen")
    }
    expect(git(["branch", "--format=%(refname:short)"]).stdout.toString().split("\n").filter(Boolean).sort()).toEqual(["main", "new"])
  })
})

describe("bash: more folders than core searches for repositories", () => {
  // Past the search's bound core cannot say which repositories a command made (or may write): the model reads that,
  // and is refused the next command, with what a person must do.
  test("the model reads that core could not look, and the next command is refused", async () => {
    const restore = Repositories.boundedAt({ folders: 50, entries: 10_000 })
    try {
      const box = harness()
      const outcome = await box.settle("bash", {
        command: `mkdir -p ${Array.from({ length: 60 }, (_, index) => `flood/d${index}`).join(" ")} && echo made`,
      })
      expect(outcome.settlement.status).toBe("success")
      expect(textOf(outcome.settlement)).toContain(`ran left more than 50 folders or 10,000 entries (node_modules not counted`)
      expect(textOf(outcome.settlement)).toContain(`in ${realpathSync(box.directory)}, so core could not search them`)
      const refused = await box.settle("bash", { command: "echo again" })
      expect(refused.settlement.status).toBe("error")
      expect(textOf(refused.settlement)).toContain(`core will not load ${realpathSync(box.directory)} or run commands in it`)
    } finally {
      restore()
    }
  })
})

describe("bash: more entries than core looks through for what the read rules deny", () => {
  // The files the read rules deny are covered in the command's mount namespace (root or a user namespace needed):
  // past the walk's bound the rest would not be, so the command does not start.
  const covering = Native.capable(Native.CAP_SYS_ADMIN) ? test : test.skip
  covering("the command does not start, and the model reads why", async () => {
    const restore = Covered.boundedAt(20)
    try {
      const files = Object.fromEntries(Array.from({ length: 30 }, (_, index) => [`d${index}/f.txt`, ""]))
      const box = harness({ rules: [{ action: "read", resource: "*.env", effect: "deny" }], files: { ...files, "zz/app.env": "TOKEN=1\n" } })
      const outcome = await box.settle("bash", { command: "echo ran > ran.txt" })
      expect(outcome.settlement.status).toBe("error")
      expect(textOf(outcome.settlement)).toContain(`core did not run the command: the read rules deny files in ${box.directory}`)
      expect(textOf(outcome.settlement)).toContain("more than 20 entries there")
      expect(existsSync(join(box.directory, "ran.txt"))).toBe(false)
    } finally {
      restore()
    }
  })
})

describe("bash environment", () => {
  test("the command sees core's current environment without CORE_TOKEN, and non-interactive defaults", async () => {
    const saved = { token: process.env.CORE_TOKEN, marker: process.env.CORE_BASH_TEST_MARKER }
    process.env.CORE_TOKEN = "secret-token"
    process.env.CORE_BASH_TEST_MARKER = "seen"
    try {
      const outcome = await harness().settle("bash", {
        command: 'echo "[$CORE_TOKEN][$CORE_BASH_TEST_MARKER][$PAGER][$GIT_PAGER][$GIT_TERMINAL_PROMPT][$TERM]"; env | grep -c CORE_TOKEN',
      })
      expect(structured(outcome).stdout).toBe("[][seen][cat][cat][0][dumb]\n0\n")
    } finally {
      if (saved.token === undefined) delete process.env.CORE_TOKEN
      else process.env.CORE_TOKEN = saved.token
      if (saved.marker === undefined) delete process.env.CORE_BASH_TEST_MARKER
      else process.env.CORE_BASH_TEST_MARKER = saved.marker
    }
  })

  // With the user's EDITOR (vim) and TERM=dumb, `git commit` without -m waited for a person until the call timed out.
  test("no editor opens: git commit without -m fails at once, git saying how to give the message", async () => {
    const box = harness({ files: { "a.txt": "a" } })
    const outcome = await box.settle("bash", {
      command: 'echo "[$GIT_EDITOR][$EDITOR][$VISUAL]"; git init -q && git add a.txt && GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b git commit',
      timeoutMs: 20_000,
    })
    expect(outcome.settlement.error).toBeUndefined()
    const result = structured(outcome)
    expect(result.timedOut).toBe(false)
    expect(result.stdout).toBe("[false][false][false]\n")
    expect(result.stderr).toContain("Please supply the message using either -m or -F option")
    expect(result.exitCode).not.toBe(0)
  })

  // The credentials of what core uses itself are core's: the store of record (approvals, settlements), the object
  // store (every host's outputs), the trace exporter's headers (an API key). Where core does not use them, the same
  // names are the user's own and pass, as a developer's `aws` or `psql` expects.
  test("the command sees none of the credentials of core's store, object storage or trace exporter; the user's own pass", async () => {
    const secret = {
      CORE_STORE_URL: "postgres://core:pg-secret@db.internal:5432/core",
      PGPASSWORD: "pg-password",
      CORE_OUTPUTS_URL: "s3://outputs/core",
      AWS_ACCESS_KEY_ID: "AKIA-core",
      AWS_SECRET_ACCESS_KEY: "aws-secret",
      AWS_SESSION_TOKEN: "aws-session",
      S3_ACCESS_KEY_ID: "s3-key",
      S3_SECRET_ACCESS_KEY: "s3-secret",
      S3_SESSION_TOKEN: "s3-session",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1",
      OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=otel-secret",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-api-key=otel-traces-secret",
    }
    const names = Object.keys(secret)
    const saved = Object.fromEntries(names.map((name) => [name, process.env[name]]))
    const restore = () => {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
    }
    const command = `${names.map((name) => `echo "${name}=[$${name}]"`).join("; ")}; env | grep -c -e secret -e AKIA`
    try {
      Object.assign(process.env, secret)
      const used = structured(await harness().settle("bash", { command })).stdout
      expect(used).toBe(`${names.map((name) => `${name}=[${name === "OTEL_EXPORTER_OTLP_ENDPOINT" ? secret[name] : ""}]`).join("\n")}\n0\n`)
      // Without a store URL, outputs URL or endpoint, the user's own credentials of those names are theirs to use.
      for (const name of ["CORE_STORE_URL", "CORE_OUTPUTS_URL", "OTEL_EXPORTER_OTLP_ENDPOINT"]) delete process.env[name]
      const own = structured(await harness().settle("bash", { command: 'echo "[$PGPASSWORD][$AWS_SECRET_ACCESS_KEY][$OTEL_EXPORTER_OTLP_HEADERS]"' })).stdout
      expect(own).toBe("[pg-password][aws-secret][x-api-key=otel-secret]\n")
    } finally {
      restore()
    }
  })

  test("a trace endpoint holding a login is kept from the command, as the exporter's headers are", async () => {
    const saved = { endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT, traces: process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT }
    try {
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = "https://team:otel-login-secret@collector.example:4318"
      process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = "http://127.0.0.1:1/v1/traces"
      const used = structured(
        await harness().settle("bash", { command: 'echo "[$OTEL_EXPORTER_OTLP_ENDPOINT][$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT]"' }),
      ).stdout
      expect(used).toBe("[][http://127.0.0.1:1/v1/traces]\n")
    } finally {
      for (const [name, value] of [["OTEL_EXPORTER_OTLP_ENDPOINT", saved.endpoint], ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", saved.traces]] as const) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
    }
  })

  test("CDPATH does not move cd away from where its path was checked", async () => {
    const outside = realpathSync(tempDir("core-bash-outside-"))
    mkdirSync(join(outside, "sub"))
    const box = harness({ files: { "sub/here.txt": "x" } })
    const saved = process.env.CDPATH
    process.env.CDPATH = outside
    try {
      const outcome = await box.settle("bash", { command: "cd sub && pwd" })
      expect(structured(outcome).stdout).toBe(`${join(box.directory, "sub")}\n`)
    } finally {
      if (saved === undefined) delete process.env.CDPATH
      else process.env.CDPATH = saved
    }
  })
})

describe("bash: the system refusing to start the command", () => {
  test("a command line too long for the system is a model-visible failure saying what to do", async () => {
    const outcome = await harness().settle("bash", { command: `echo ${"x".repeat(200_000)}` })
    expect(outcome.settlement.error?.kind).toBe("failure")
    expect(outcome.settlement.error?.message).toBe(
      "The command is 200005 bytes: bash is given it as one argument, which the system holds to 131071 bytes, so it " +
        "cannot run. Write it to a script file and run that file instead.",
    )
  })

  test("a NUL byte in the command is a model-visible failure", async () => {
    const outcome = await harness().settle("bash", { command: "echo a\u0000b" })
    expect(outcome.settlement.error?.kind).toBe("failure")
    expect(outcome.settlement.error?.message).toContain("NUL byte")
  })
})

describe("bash: processes that left the command's group", () => {
  test("are killed with the call, named in the result, and the output they held is read to its end", async () => {
    // The writer reports its pid once it is in its own session, out of the group's reach, and keeps writing.
    const session = (pid: string) => `$(cut -d' ' -f6 /proc/${pid}/stat)`
    // And once it is `sh`: setsid leaves the group before it execs the shell, so for a moment it is still `setsid`.
    const command =
      `setsid sh -c 'while :; do echo tick; sleep 0.05; done' & pid=$!; ` +
      `while [ "${session("$pid")}" = "${session("$$")}" ] || [ "$(cat /proc/$pid/comm)" != sh ]; do :; done; echo "writer $pid"`
    // Reading /proc/$pid is a path outside known only when it runs: asked, and approved here.
    const box = harness()
    const outcome = await box.settle("bash", { command }, { reply: { reply: "once" } })
    const [pid] = pidsIn(structured(outcome).stdout.split("\n").find((line) => line.startsWith("writer"))!)
    expect(outcome.settlement.status).toBe("success")
    // Numbered as the command numbered it (its own PID namespace, where it has one).
    expect(aliveIn(box.directory, pid!)).toBe(false)
    expect(structured(outcome).killed).toEqual(expect.arrayContaining([{ pid: pid!, name: "sh" }]))
    expect(structured(outcome).capture.stdout).toMatchObject({ complete: true })
    expect(textOf(outcome.settlement)).toContain(`\nKilled `)
    expect(textOf(outcome.settlement)).toContain(`sh (${pid})`)
  })
})

describe("bash: processes that end after their parent", () => {
  // Orphans that ended were left zombies, each holding a pid of the machine, until the command ended.
  test("are reaped while the command runs", async () => {
    const command = `for i in $(seq 1 50); do (sleep 0.1 &); done; sleep 1; grep -l '^State:.*Z' /proc/[0-9]*/status | wc -l`
    const outcome = await harness().settle("bash", { command }, { reply: { reply: "once" } })
    expect(structured(outcome).stdout).toBe("0\n")
  })
})
