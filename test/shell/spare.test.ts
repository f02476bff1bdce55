// The spare supervisor readied for a sandbox makes ahead, while it waits, the mounts every sandbox has (the
// command's own terminals and /dev/shm, the system's secrets covered) and the rules of the grants it expects (the
// last sandboxed order's). What changed between then and the order must not get past it: a secret that appeared
// since, or one the system replaced (a rename takes the cover made ahead away with the old file), is covered when
// the order comes; an order granting other paths than expected gets its own rules, nothing of the expected ones. Real processes, real mounts; the
// secret is a user's registry logins under /run/user/<uid>/containers, which the test makes and removes (skipped,
// and says so, where it already exists, or without Landlock or root). And a spare whose starter was killed while it
// waited still runs the next order, in a starter started for it.

import { afterEach, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { Landlock } from "../../src/shell/landlock"
import { Namespace } from "../../src/shell/namespace"
import { Shell } from "../../src/shell/shell"
import { Starter } from "../../src/shell/starter"
import { tempDir } from "../support/temp"
import { alive } from "./processes"

const ROOT = process.getuid?.() === 0
/** A write outside the grants, run by root: refused by the read-only mount every other place is (before Landlock). */
const REFUSED_WRITE = "Read-only file system"
const RUNTIME = `/run/user/${process.getuid?.() ?? 0}`
const SECRETS = join(RUNTIME, "containers")
const PRESENT = existsSync(SECRETS)
const MADE_RUNTIME = !existsSync(RUNTIME)
const skipped = Landlock.abi() === 0 || !ROOT || PRESENT
const why =
  Landlock.abi() === 0
    ? " (SKIPPED: this kernel has no Landlock)"
    : !ROOT
      ? " (SKIPPED: core does not run as root here)"
      : PRESENT
        ? ` (SKIPPED: ${SECRETS} exists here and is not the test's to change)`
        : ""

const made: Array<string> = []
/** The processes under `pid` whose command line names `role` (a starter's launch argument). */
const under = (pid: number, role: string): Array<number> => {
  let children: Array<number> = []
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, "latin1").trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
  return children.flatMap((child) => {
    let argv: Array<string> = []
    try {
      argv = readFileSync(`/proc/${child}/cmdline`, "latin1").split("\0")
    } catch {
      // gone meanwhile
    }
    return [...(argv.includes(role) ? [child] : []), ...under(child, role)]
  })
}

/** A Location outside the system temp directory (removed after the test). */
const outside = () => {
  const directory = mkdtempSync(join("/var/tmp", "core-spare-"))
  made.push(directory)
  return directory
}

afterEach(() => {
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true })
  if (skipped) return
  rmSync(SECRETS, { recursive: true, force: true })
  rmSync(`${SECRETS}.old`, { recursive: true, force: true })
  if (MADE_RUNTIME) rmSync(RUNTIME, { recursive: true, force: true })
})

const plant = (token: string) => {
  mkdirSync(SECRETS, { recursive: true })
  writeFileSync(join(SECRETS, "auth.json"), `{"auths":{"registry":{"auth":"${token}"}}}`)
}

/** Runs `cat` of the logins sandboxed, once a spare readied for a sandbox is up: what it printed. */
const read = async (shell: Shell.Interface, location: string) => {
  const result = await Effect.runPromise(
    shell.run({
      argv: ["sh", "-c", `cat ${join(SECRETS, "auth.json")} 2>&1; ls -A ${SECRETS} 2>&1`],
      cwd: location,
      sandbox: { location, approved: [] },
    }),
  )
  return result.output.text
}

describe("a spare readied for a sandbox", () => {
  test.skipIf(Landlock.abi() === 0 || !existsSync("/var/tmp"))("an order in another Location than expected can write none of the expected one", async () => {
    const shell = Shell.make({}, { records: tempDir("core-runs-") })
    // Outside the system temp directory, which every sandboxed command may write.
    const first = outside()
    const second = outside()
    const touch = async (location: string, target: string) =>
      Effect.runPromise(
        shell.run({ argv: ["sh", "-c", `touch ${target} && echo wrote`], cwd: location, sandbox: { location, approved: [] } }),
      )
    // Two runs in the first Location: the spare now up expects its grants.
    await touch(first, join(first, "a"))
    expect((await touch(first, join(first, "b"))).stdout.text).toBe("wrote\n")
    await Effect.runPromise(shell.warm)
    const refused = await touch(second, join(first, "c"))
    expect(refused.stdout.text).toBe("")
    expect(refused.stderr.text).toMatch(REFUSED_WRITE)
    expect(existsSync(join(first, "c"))).toBe(false)
    // Its own Location it writes; and the first again, now expected, as before.
    await Effect.runPromise(shell.warm)
    expect((await touch(second, join(second, "d"))).stdout.text).toBe("wrote\n")
    await Effect.runPromise(shell.warm)
    expect((await touch(first, join(second, "e"))).stderr.text).toMatch(REFUSED_WRITE)
    expect(existsSync(join(second, "e"))).toBe(false)
  })

  test.skipIf(skipped)(`covers a system secret that appeared while it waited${why}`, async () => {
    const shell = Shell.make({}, { records: tempDir("core-runs-") })
    const location = tempDir("core-spare-")
    // One run first, so that the next order finds a spare readied ahead (commands repeat).
    await read(shell, location)
    await Effect.runPromise(shell.warm)
    const token = `token-${crypto.randomUUID()}`
    plant(token)
    expect(Namespace.systemDenied()).toContain(SECRETS)
    const printed = await read(shell, location)
    expect(printed).not.toContain(token)
    expect(printed).toBe(`cat: ${join(SECRETS, "auth.json")}: No such file or directory\n`)
  })

  test.skipIf(skipped)(`covers a system secret the system replaced by renaming while it waited${why}`, async () => {
    const shell = Shell.make({}, { records: tempDir("core-runs-") })
    const location = tempDir("core-spare-")
    plant("old")
    await read(shell, location)
    // The spare covers the logins as they are now.
    await Effect.runPromise(shell.warm)
    // Replaced as a system replaces a file: the new one renamed into place, the old one moved away with its cover.
    const token = `token-${crypto.randomUUID()}`
    renameSync(SECRETS, `${SECRETS}.old`)
    plant(token)
    const printed = await read(shell, location)
    expect(printed).not.toContain(token)
    expect(printed).toBe(`cat: ${join(SECRETS, "auth.json")}: No such file or directory\n`)
  })

  // A spare's starter killed while it waits (by the OOM killer, a stray kill): the order must not wait for it (core
  // gives up on a supervisor that says nothing for 30 s, and the call failed as a defect). It goes to a starter
  // started for it, sandboxed as ever.
  for (const when of ["while it waited", "as the order came"] as const) {
    test.skipIf(Landlock.abi() === 0 || !existsSync("/var/tmp"))(`whose starter was killed ${when} runs the order in a starter started for it`, async () => {
      const records = tempDir("core-runs-")
      const shell = Shell.make({}, { records })
      const location = outside()
      const elsewhere = outside()
      const run = () =>
        Effect.runPromise(
          shell.run({
            argv: ["sh", "-c", `echo ran; touch ${join(location, "mine")} ${join(elsewhere, "theirs")}`],
            cwd: location,
            sandbox: { location, approved: [] },
          }),
        )
      // One run first, so that the next order finds a spare readied ahead (commands repeat).
      await run()
      await Effect.runPromise(shell.warm)
      // This shell's spare, by the record it keeps of it (other tests' shells have spares of their own).
      const supervisors = readdirSync(records)
        .map((name) => (JSON.parse(readFileSync(join(records, name), "utf8")) as { supervisor: { pid: number } }).supervisor.pid)
        .filter(alive)
      expect(supervisors.length).toBe(1)
      const supervisor = supervisors[0]!
      const starters = under(supervisor, Starter.LAUNCH)
      expect(starters.length).toBe(1)
      if (when === "as the order came") {
        // The supervisor stopped, its starter killed, the order sent: it wakes to both at once.
        process.kill(supervisor, "SIGSTOP")
        process.kill(starters[0]!, "SIGKILL")
        const running = run()
        await Bun.sleep(100)
        process.kill(supervisor, "SIGCONT")
        const result = await running
        expect(result.stdout.text).toBe("ran\n")
        expect(result.stderr.text).toMatch(REFUSED_WRITE)
      } else {
        process.kill(starters[0]!, "SIGKILL")
        for (let tries = 0; tries < 100 && alive(starters[0]!); tries++) await Bun.sleep(10)
        const result = await run()
        expect(result.stdout.text).toBe("ran\n")
        expect(result.stderr.text).toMatch(REFUSED_WRITE)
      }
      expect(existsSync(join(location, "mine"))).toBe(true)
      expect(existsSync(join(elsewhere, "theirs"))).toBe(false)
    })
  }
})
