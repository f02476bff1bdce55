// The spare supervisor readied for a sandbox makes ahead, while it waits, the mounts every sandbox has (the
// command's own terminals and /dev/shm, the system's secrets covered) and the rules of the grants it expects (the
// last sandboxed order's). What changed between then and the order must not get past it: a secret that appeared
// since, or one the system replaced (a rename takes the cover made ahead away with the old file), is covered when
// the order comes; an order granting other paths than expected gets its own rules, nothing of the expected ones. Real processes, real mounts; the
// secret is a user's registry logins under /run/user/<uid>/containers, which the test makes and removes (skipped,
// and says so, where it already exists, or without Landlock or root).

import { afterEach, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { Landlock } from "../../src/shell/landlock"
import { Namespace } from "../../src/shell/namespace"
import { Shell } from "../../src/shell/shell"
import { tempDir } from "../support/temp"

const ROOT = process.getuid?.() === 0
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
    expect(refused.stderr.text).toContain("Permission denied")
    expect(existsSync(join(first, "c"))).toBe(false)
    // Its own Location it writes; and the first again, now expected, as before.
    await Effect.runPromise(shell.warm)
    expect((await touch(second, join(second, "d"))).stdout.text).toBe("wrote\n")
    await Effect.runPromise(shell.warm)
    expect((await touch(first, join(second, "e"))).stderr.text).toContain("Permission denied")
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
})
