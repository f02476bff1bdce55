// The ripgrep edge: extracting an embedded rg once (atomically) and reusing it, killing rg when its fiber is
// interrupted, and, end to end through the compiled binary, grep, glob and read working with the rg the binary
// carries: extracted into the sandbox's data directory on first use and reused after.

import { describe, expect, test } from "bun:test"
import { mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { open } from "node:fs/promises"
import { join } from "node:path"
import { Effect, Fiber } from "effect"
import { Ripgrep } from "../../src/builtin/ripgrep"
import { SearchProcess } from "../../src/builtin/search-process"
import { ProcessGroup } from "../../src/shell/process-group"
import { Landlock } from "../../src/shell/landlock"
import { exec, sandbox, settlementOf } from "../cli/fixture"
import { alive } from "../shell/processes"
import { tempDir } from "../support/temp"

describe("Ripgrep.extract", () => {
  test("writes an executable copy named after the embedded file, then reuses it", async () => {
    const source = join(tempDir(), "rg-abc123.")
    writeFileSync(source, "#!/bin/sh\necho embedded\n")
    const directory = join(tempDir(), "data", "bin")
    const first = await Ripgrep.extract(source, directory)
    expect(first).toBe(join(directory, "rg-abc123"))
    // The user's alone, like the data directory that holds it.
    expect(statSync(first).mode & 0o777).toBe(0o700)
    expect(statSync(directory).mode & 0o777).toBe(0o700)
    expect(statSync(join(directory, "..")).mode & 0o777).toBe(0o700)
    expect(Bun.spawnSync([first]).stdout.toString()).toBe("embedded\n")
    const before = statSync(first)
    const second = await Ripgrep.extract(source, directory)
    expect(second).toBe(first)
    expect(statSync(second).ino).toBe(before.ino)
    expect(statSync(second).mtimeMs).toBe(before.mtimeMs)
    expect(readdirSync(directory)).toEqual(["rg-abc123"])
  })

  test("replaces a copy of the wrong size (a partial one from elsewhere) and leaves no temporary file", async () => {
    const source = join(tempDir(), "rg-def456.")
    writeFileSync(source, "#!/bin/sh\necho whole\n")
    const directory = tempDir()
    writeFileSync(join(directory, "rg-def456"), "#!/bin/sh\n", { mode: 0o755 })
    const path = await Ripgrep.extract(source, directory)
    expect(Bun.spawnSync([path]).stdout.toString()).toBe("whole\n")
    expect(readdirSync(directory)).toEqual(["rg-def456"])
  })
})

describe("Ripgrep.extract, by several cores at once (a host's parallel first calls)", () => {
  // Each core's confinement grants running the very file it extracted: one replaced under it was refused (EACCES).
  test("the first copy linked into place is the one every core runs: none is replaced under another", async () => {
    const source = join(tempDir(), "rg-fed789.")
    writeFileSync(source, `#!/bin/sh\necho ${"x".repeat(200_000)}\n`)
    const directory = tempDir()
    const seen = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const path = await Ripgrep.extract(source, directory)
        return statSync(path).ino
      }),
    )
    expect(new Set(seen).size).toBe(1)
    expect(seen[0]).toBe(statSync(join(directory, "rg-fed789")).ino)
    expect(readdirSync(directory)).toEqual(["rg-fed789"])
  })
})

describe("Ripgrep.run", () => {
  test("records splits stdout on the separator, across chunks", async () => {
    const directory = tempDir()
    const names = Array.from({ length: 2_000 }, (_, index) => `file-${index}-${"x".repeat(100)}.txt`)
    for (const name of names) writeFileSync(join(directory, name), "")
    const seen: Array<string> = []
    const outcome = await Effect.runPromise(
      Ripgrep.run({
        args: [...Ripgrep.COMMON_FLAGS, "--files", "--null", "--", directory],
        cwd: directory,
        ...Ripgrep.records(0, (record) => seen.push(Buffer.from(record).toString())),
      }),
    )
    expect(outcome).toEqual({ code: 0, problems: [] })
    expect(seen.sort()).toEqual(names.map((name) => join(directory, name)).sort())
  })

  test("interrupting the fiber kills rg", async () => {
    const directory = tempDir()
    const fifo = join(directory, "pipe")
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0)
    const written = await Effect.runPromise(
      Effect.gen(function* () {
        // rg blocks reading the FIFO (an explicit path, so it is searched).
        const fiber = yield* Effect.forkChild(
          Ripgrep.run({ args: ["--no-config", "-e", "needle", "--", fifo], cwd: directory, onData: () => {} }),
        )
        // Opening the write end completes once rg has opened the read end.
        const writer = yield* Effect.promise(() => open(fifo, "w"))
        yield* Fiber.interrupt(fiber)
        // With rg gone nobody reads: the write fails with EPIPE (a live rg would take it all).
        const result = yield* Effect.promise(() =>
          writer.write(Buffer.alloc(1 << 20, 0x61)).then(
            () => "written",
            (error: NodeJS.ErrnoException) => error.code,
          ),
        )
        yield* Effect.promise(() => writer.close())
        return result
      }),
    )
    expect(written).toBe("EPIPE")
  })

  /** The rg this process started on `path`, from /proc. */
  const rgOn = (path: string): number => {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0")
        if (argv.includes(path) && ProcessGroup.stat(Number(entry))?.ppid === process.pid) return Number(entry)
      } catch {
        // ended while we looked
      }
    }
    throw new Error(`no rg on ${path}`)
  }

  test("a cancelled search kills rg, checked in /proc", async () => {
    const directory = tempDir()
    const fifo = join(directory, "pipe")
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0)
    const pid = await Effect.runPromise(
      Effect.gen(function* () {
        const fiber = yield* Effect.forkChild(
          Ripgrep.run({ args: ["--no-config", "-e", "needle", "--", fifo], cwd: directory, onData: () => {} }),
        )
        const writer = yield* Effect.promise(() => open(fifo, "w"))
        const pid = rgOn(fifo)
        expect(alive(pid)).toBe(true)
        yield* Fiber.interrupt(fiber)
        yield* Effect.promise(() => writer.close())
        return pid
      }),
    )
    expect(alive(pid)).toBe(false)
  })

  test("a search over its time limit kills rg and says it was stopped", async () => {
    const directory = tempDir()
    const fifo = join(directory, "pipe")
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0)
    const writer = open(fifo, "w")
    const outcome = await Effect.runPromise(
      Ripgrep.run({ args: ["--no-config", "-e", "needle", "--", fifo], cwd: directory, onData: () => {}, timeoutMs: 300 }),
    )
    await (await writer).close()
    expect(outcome.code).toBe(2)
    expect(outcome.problems).toEqual(["the search took longer than 300 ms and was stopped"])
  })

  test("reports a glob it cannot parse for select, and problems without the rg: prefix", async () => {
    const directory = tempDir()
    const outcome = await Effect.runPromise(
      Ripgrep.run({ args: ["--files", "--", directory], select: "src/{a", cwd: directory, onData: () => {} }),
    )
    expect(outcome.selectError).toBe("error parsing glob 'src/{a': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")
    const named = await Effect.runPromise(
      Ripgrep.run({ args: ["--files", "--", directory], select: "*.{a", cwd: directory, onData: () => {} }),
    )
    expect(named.selectError).toBe("error parsing glob '*.{a': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")
    expect(outcome.problems).toEqual([])
    const missing = await Effect.runPromise(
      Ripgrep.run({ args: ["--files", "--", join(directory, "gone")], cwd: directory, onData: () => {} }),
    )
    expect(missing.code).toBe(2)
    expect(missing.problems).toEqual([
      `${join(directory, "gone")}: IO error for operation on ${join(directory, "gone")}: No such file or directory (os error 2)`,
    ])
    expect(Ripgrep.onlyPathProblems(missing.problems)).toBe(true)
  })
})

/** Lists the files under `cwd` (following symlinks with `follow`), confined to `root` when it is given. */
const files = (cwd: string, options: { readonly root?: string; readonly follow?: boolean; readonly select?: string } = {}) => {
  const seen: Array<string> = []
  return Effect.runPromise(
    Ripgrep.run({
      args: [...Ripgrep.COMMON_FLAGS, ...(options.follow ? ["--follow"] : []), "--files", "--null", "--", "."],
      cwd,
      ...(options.root === undefined ? {} : { root: options.root }),
      ...(options.select === undefined ? {} : { select: options.select }),
      ...Ripgrep.records(0, (record) => seen.push(Buffer.from(record).toString())),
    }),
  ).then((outcome) => ({ outcome, seen: seen.sort() }))
}

/** The live rg whose arguments end with `path`, from /proc. */
const searching = (path: string): number => {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter((arg) => arg !== "")
      if (argv.at(-1) === path && ProcessGroup.stat(Number(entry))?.name === "rg") return Number(entry)
    } catch {
      // ended while we looked
    }
  }
  throw new Error(`no rg on ${path}`)
}

describe("SearchProcess.start's time limit", () => {
  test("a search that rg finished on its own while core was busy past the limit is not reported as stopped", async () => {
    const root = realpathSync(tempDir())
    writeFileSync(join(root, "a.txt"), "needle\n")
    const rg = await Effect.runPromise(Ripgrep.executable)
    const running = await SearchProcess.start({
      argv: [rg, "--no-config", "-e", "needle", "--", "."],
      cwd: root,
      // Core busy with rg's one chunk well past the limit: rg has exited meanwhile, with everything printed.
      onData: () => {
        const until = performance.now() + 1_000
        while (performance.now() < until) {}
      },
      timeoutMs: 300,
    })
    const ended = await running.ended
    expect(ended).toEqual({ kind: "ended", exitCode: 0, signal: null, stderr: "" })
  })
})

const landlock = Landlock.abi() > 0
if (!landlock) console.warn("ripgrep.test: this kernel has no Landlock; the confined searches are skipped")

describe.skipIf(!landlock)("Ripgrep.run confined to its root", () => {
  test("rg reads nothing outside the root, even through a symlink it is told to follow", async () => {
    const base = realpathSync(tempDir())
    const root = join(base, "project")
    mkdirSync(join(base, "outside"))
    mkdirSync(root)
    writeFileSync(join(base, "outside", "secret.txt"), "x")
    writeFileSync(join(root, "mine.txt"), "x")
    symlinkSync(join(base, "outside"), join(root, "link"))
    // Unconfined, the symlink leads rg outside: what the confinement has to stop.
    expect((await files(root, { follow: true })).seen).toEqual(["./link/secret.txt", "./mine.txt"])
    const { outcome, seen } = await files(root, { root, follow: true })
    expect(seen).toEqual(["./mine.txt"])
    expect(outcome.code).toBe(2)
    expect(Ripgrep.onlyPathProblems(outcome.problems)).toBe(true)
    expect(outcome.problems.join("\n")).toContain("link")
  })

  test("the ignore files of the directories above the root still apply, and a path select still works", async () => {
    const base = realpathSync(tempDir())
    const root = join(base, "sub")
    mkdirSync(join(root, "deep"), { recursive: true })
    writeFileSync(join(base, ".gitignore"), "*.log\n")
    writeFileSync(join(root, "kept.txt"), "x")
    writeFileSync(join(root, "left.log"), "x")
    writeFileSync(join(root, "deep", "a.txt"), "x")
    expect((await files(root, { root })).seen).toEqual(["./deep/a.txt", "./kept.txt"])
    expect((await files(root, { root, select: "deep/*.txt" })).seen).toEqual(["./deep/a.txt"])
  })

  test("hands on exactly what rg prints, in order, however it is batched", async () => {
    const root = realpathSync(tempDir())
    // Hundreds of files with a few matches each (a small write of rg's each), one far longer than a batch.
    for (let index = 0; index < 600; index++) writeFileSync(join(root, `f${index}.txt`), `needle ${index}\n`.repeat(40))
    writeFileSync(join(root, "long.txt"), `needle ${"x".repeat(700_000)}\n`)
    // --sort makes rg's order the same from run to run.
    const args = [...Ripgrep.COMMON_FLAGS, "--sort=path", "--line-number", "--null", "--regexp=needle", "--", "."]
    const bare = Bun.spawn([await Effect.runPromise(Ripgrep.executable), ...args], { cwd: root, stdout: "pipe" })
    const expected = Buffer.from(await new Response(bare.stdout).arrayBuffer())
    const chunks: Array<Buffer> = []
    const outcome = await Effect.runPromise(
      Ripgrep.run({ args, cwd: root, root, onData: (chunk) => chunks.push(Buffer.from(chunk)) }),
    )
    expect(outcome.code).toBe(0)
    expect(Buffer.concat(chunks).equals(expected)).toBe(true)
    expect(expected.length).toBeGreaterThan(1_000_000)
  })

  test("a root that is not the directory rg would run in is refused as replaced, and nothing is listed", async () => {
    const held = realpathSync(tempDir())
    const other = realpathSync(tempDir())
    writeFileSync(join(held, "a.txt"), "x")
    const { outcome, seen } = await files(held, { root: other })
    expect(seen).toEqual([])
    expect(outcome.code).toBe(2)
    expect(outcome.problems).toEqual([`${other} was removed or replaced while it was being searched: search it again`])
  })

  test("a root that is gone is refused as replaced, not as an operational failure", async () => {
    const gone = join(realpathSync(tempDir()), "gone")
    const { outcome, seen } = await files(gone, { root: gone })
    expect(seen).toEqual([])
    expect(outcome).toEqual({ code: 2, problems: [`${gone} was removed or replaced while it was being searched: search it again`] })
  })

  test("a confined search over its time limit is stopped", async () => {
    const root = realpathSync(tempDir())
    expect(Bun.spawnSync(["mkfifo", join(root, "pipe")]).exitCode).toBe(0)
    const writer = open(join(root, "pipe"), "w")
    const outcome = await Effect.runPromise(
      Ripgrep.run({ args: ["--no-config", "-e", "needle", "--", "./pipe"], cwd: root, root, onData: () => {}, timeoutMs: 300 }),
    )
    await (await writer).close()
    expect(outcome).toEqual({ code: 2, problems: ["the search took longer than 300 ms and was stopped"] })
  })

  test("a cancelled confined search ends: rg is gone, checked in /proc", async () => {
    const root = realpathSync(tempDir())
    const fifo = join(root, "pipe")
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0)
    const rg = await Effect.runPromise(
      Effect.gen(function* () {
        const fiber = yield* Effect.forkChild(
          Ripgrep.run({ args: ["--no-config", "-e", "needle", "--", `./pipe`], cwd: root, root, onData: () => {} }),
        )
        const writer = yield* Effect.promise(() => open(fifo, "w"))
        const rg = searching("./pipe")
        // Spawned by a thread of core itself: no process stands between them.
        expect(ProcessGroup.stat(rg)?.ppid).toBe(process.pid)
        yield* Fiber.interrupt(fiber)
        yield* Effect.promise(() => writer.close())
        return rg
      }),
    )
    expect(alive(rg)).toBe(false)
  })

  test("a confined search stopped as soon as it is started (before its thread has started rg) ends, rg killed", async () => {
    const root = realpathSync(tempDir())
    const fifo = join(root, "pipe")
    // rg waits on the pipe (no writer) until it is killed.
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0)
    const running = await SearchProcess.start({
      argv: [await Effect.runPromise(Ripgrep.executable), "--no-config", "-e", "needle", "--", "./pipe"],
      cwd: root,
      root,
      files: [await Effect.runPromise(Ripgrep.executable)],
      onData: () => {},
      timeoutMs: 60_000,
    })
    running.stop()
    const ended = await running.ended
    expect(ended).toMatchObject({ kind: "ended", signal: "SIGKILL" })
  })

  /** A directory whose search for "needle" prints some 12 MB: far more than the few batches let wait for core. */
  const plentiful = () => {
    const root = realpathSync(tempDir())
    for (let index = 0; index < 40; index++) writeFileSync(join(root, `f${index}.txt`), "needle here\n".repeat(20_000))
    return root
  }
  const waitMs = (ms: number) => {
    const until = performance.now() + ms
    while (performance.now() < until) {}
  }

  test("rg waits for core: while core takes its output in slowly, rg is still running with most of it unprinted", async () => {
    const root = plentiful()
    const rg = await Effect.runPromise(Ripgrep.executable)
    const alives: Array<boolean> = []
    let pid = 0
    let chunks = 0
    let printed = 0
    const running = await SearchProcess.start({
      argv: [rg, "--no-config", "--line-number", "--regexp=needle", "--", "."],
      cwd: root,
      root,
      files: [rg],
      onData: (chunk) => {
        printed += chunk.length
        if (chunks++ < 6) {
          pid ||= searching(".")
          alives.push(alive(pid))
          // core busy with each batch (a glob's stat of every path it names).
          waitMs(50)
        }
      },
      timeoutMs: 60_000,
    })
    const ended = await running.ended
    expect(ended).toMatchObject({ kind: "ended", exitCode: 0, signal: null })
    expect(printed).toBe(Bun.spawnSync([rg, "--no-config", "--line-number", "--regexp=needle", "--", "."], { cwd: root }).stdout.length)
    // Left to print as fast as it could, rg was done (in about 0.1 s) long before core had taken in six batches.
    expect(alives).toEqual([true, true, true, true, true, true])
  })

  test("a search whose output core takes in slowly still ends at its time limit, rg killed", async () => {
    const root = plentiful()
    const rg = await Effect.runPromise(Ripgrep.executable)
    const started = performance.now()
    const running = await SearchProcess.start({
      argv: [rg, "--no-config", "--line-number", "--regexp=needle", "--", "."],
      cwd: root,
      root,
      files: [rg],
      onData: () => waitMs(20),
      timeoutMs: 500,
    })
    const ended = await running.ended
    const took = performance.now() - started
    expect(ended).toMatchObject({ kind: "ended", signal: "SIGKILL", timedOutMs: 500 })
    // Every batch queued at once took 12 MB / 256 KiB × 20 ms, about a second, past the limit; far more on a busy machine.
    expect(took).toBeLessThan(900)
  })

  test("a search in a directory where another is still running runs beside it, not after it", async () => {
    const root = realpathSync(tempDir())
    const fifo = join(root, "pipe")
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0)
    writeFileSync(join(root, "a.txt"), "needle\n")
    const { beside, first } = await Effect.runPromise(
      Effect.gen(function* () {
        // The first search waits on the pipe (its thread busy with it) until the writer closes.
        const fiber = yield* Effect.forkChild(
          Ripgrep.run({ args: ["--no-config", "-e", "needle", "--", "./pipe"], cwd: root, root, onData: () => {} }),
        )
        const writer = yield* Effect.promise(() => open(fifo, "w"))
        searching("./pipe")
        const beside = yield* Effect.promise(() => files(root, { root }))
        // Still waiting on the pipe when the second one was answered.
        expect(alive(searching("./pipe"))).toBe(true)
        yield* Effect.promise(() => writer.close())
        return { beside, first: yield* Fiber.join(fiber) }
      }),
    )
    expect(beside.seen).toEqual(["./a.txt"])
    expect(first.code).toBe(1)
  })

  test("rg killed from outside mid-search is reported, and the next search in that directory runs", async () => {
    const root = realpathSync(tempDir())
    const fifo = join(root, "pipe")
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0)
    writeFileSync(join(root, "a.txt"), "needle\n")
    const outcome = await Effect.runPromise(
      Effect.gen(function* () {
        const fiber = yield* Effect.forkChild(
          Ripgrep.run({ args: ["--no-config", "-e", "needle", "--", "./pipe"], cwd: root, root, onData: () => {} }),
        )
        const writer = yield* Effect.promise(() => open(fifo, "w"))
        process.kill(searching("./pipe"), "SIGKILL")
        const outcome = yield* Fiber.join(fiber)
        yield* Effect.promise(() => writer.close())
        return outcome
      }),
    )
    expect(outcome).toEqual({ code: 2, problems: ["rg was ended by SIGKILL before it finished: search again"] })
    expect((await files(root, { root })).seen).toEqual(["./a.txt"])
  })

  test("a directory replaced at the same path gets a new confinement: the old one's files stay out of reach", async () => {
    const base = realpathSync(tempDir())
    const root = join(base, "project")
    mkdirSync(root)
    writeFileSync(join(root, "old.txt"), "x")
    expect((await files(root, { root })).seen).toEqual(["./old.txt"])
    // Swapped behind the kept confinement's back: the old directory moved aside, a new one in its place that
    // links to it.
    renameSync(root, join(base, "aside"))
    mkdirSync(root)
    writeFileSync(join(root, "new.txt"), "x")
    symlinkSync(join(base, "aside"), join(root, "link"))
    const { outcome, seen } = await files(root, { root, follow: true })
    expect(seen).toEqual(["./new.txt"])
    expect(Ripgrep.onlyPathProblems(outcome.problems)).toBe(true)
    expect(outcome.problems.join("\n")).toContain("link")
  })

  test("a subdirectory searched after its parent is confined to itself, not to the parent's kept confinement", async () => {
    const root = realpathSync(tempDir())
    mkdirSync(join(root, "sub"))
    mkdirSync(join(root, "other"))
    writeFileSync(join(root, "other", "secret.txt"), "x")
    writeFileSync(join(root, "sub", "mine.txt"), "x")
    symlinkSync(join(root, "other"), join(root, "sub", "link"))
    // The parent's search may follow the link: it stays beneath the parent.
    expect((await files(root, { root, follow: true })).seen).toEqual(["./other/secret.txt", "./sub/link/secret.txt", "./sub/mine.txt"])
    const sub = join(root, "sub")
    const { outcome, seen } = await files(sub, { root: sub, follow: true })
    expect(seen).toEqual(["./mine.txt"])
    expect(outcome.problems.join("\n")).toContain("link")
  })

  test("an ignore file that appears above the root after a search applies to the next one", async () => {
    const base = realpathSync(tempDir())
    const root = join(base, "sub")
    mkdirSync(root)
    writeFileSync(join(root, "kept.txt"), "x")
    writeFileSync(join(root, "left.log"), "x")
    expect((await files(root, { root })).seen).toEqual(["./kept.txt", "./left.log"])
    writeFileSync(join(base, ".ignore"), "*.log\n")
    expect((await files(root, { root })).seen).toEqual(["./kept.txt"])
    // Replaced (a new file at the same path, as an editor saves): read again too.
    rmSync(join(base, ".ignore"))
    writeFileSync(join(base, ".ignore"), "kept.txt\n")
    expect((await files(root, { root })).seen).toEqual(["./left.log"])
  })

  test("confining searches never confines core: it still reads, spawns and writes outside every root", async () => {
    const root = realpathSync(tempDir())
    writeFileSync(join(root, "a.txt"), "x")
    const outside = join(realpathSync(tempDir()), "outside.txt")
    writeFileSync(outside, "outside")
    // Several searches at once, each from its directory's thread.
    const roots = Array.from({ length: 3 }, () => realpathSync(tempDir()))
    for (const other of roots) writeFileSync(join(other, "b.txt"), "x")
    await Promise.all([root, ...roots].map((path) => files(path, { root: path })))
    expect(readFileSync(outside, "utf8")).toBe("outside")
    // Through Bun's thread pool too, many at once, so that it starts more threads than it had.
    const reads = await Promise.all(Array.from({ length: 32 }, () => Bun.file(outside).text()))
    expect(new Set(reads)).toEqual(new Set(["outside"]))
    await Bun.write(`${outside}.copy`, "written")
    expect(readFileSync(`${outside}.copy`, "utf8")).toBe("written")
    expect(Bun.spawnSync(["cat", outside]).stdout.toString()).toBe("outside")
  })

  test("a root reached through a symlink is refused as replaced", async () => {
    const base = realpathSync(tempDir())
    mkdirSync(join(base, "real"))
    symlinkSync(join(base, "real"), join(base, "alias"))
    const { outcome } = await files(join(base, "real"), { root: join(base, "alias") })
    expect(outcome.code).toBe(2)
    expect(outcome.problems[0]).toContain("was removed or replaced")
  })
})

describe("the compiled binary", () => {
  test("extracts its embedded rg into the data directory once, and grep, glob and read work with it", async () => {
    const box = sandbox({ "src/a.ts": "export const needle = 1\n", "src/b.md": "no match here\n" })
    const grep = await exec(box, "grep", { pattern: "needle" })
    expect(grep.stderr).toBe("")
    expect(grep.code).toBe(0)
    expect(settlementOf(grep).structured).toMatchObject({ matches: 1, shown: [{ path: "src/a.ts", lines: [{ line: 1 }] }] })

    const extracted = readdirSync(join(box.data, "bin"))
    expect(extracted).toHaveLength(1)
    expect(extracted[0]).toMatch(/^rg-[a-z0-9]+$/)
    const rg = join(box.data, "bin", extracted[0]!)
    expect(statSync(rg).mode & 0o111).not.toBe(0)
    const before = statSync(rg)

    const glob = await exec(box, "glob", { pattern: "*.md" })
    expect(settlementOf(glob).structured).toMatchObject({ files: ["src/b.md"], total: 1 })
    const read = await exec(box, "read", { filePath: "src/a.ts" })
    expect(settlementOf(read).content).toEqual([{ type: "text", text: "1: export const needle = 1\n\n(End of file: 1 line.)" }])

    // Reused, not written again.
    expect(readdirSync(join(box.data, "bin"))).toEqual(extracted)
    expect(statSync(rg).ino).toBe(before.ino)
    expect(statSync(rg).mtimeMs).toBe(before.mtimeMs)
  })
})
