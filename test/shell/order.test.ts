// What core hands a supervisor (the command's argv, environment, directory and stdin bytes, as JSON over the IPC
// channel) reaches the command as it was given: every character a variable or argument may hold (newlines, quotes,
// backslashes, NUL-free control characters, line and paragraph separators, characters outside the BMP), a large
// environment, and stdin bytes of every value. With and without the sandbox. Real supervisors, real processes.

import { describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { Effect } from "effect"
import { Landlock } from "../../src/shell/landlock"
import { Shell } from "../../src/shell/shell"
import { tempDir } from "../support/temp"

const shell = Shell.make({}, { records: tempDir("core-runs-") })

/** Every character a value may carry except NUL, which no environment or argument can hold. */
const AWKWARD = `line one\nline "two"\t'three' \\back\\slash $HOME \`tick\` \u2028sep\u2029para \u00e9\u4e2d\u{1f600} \u0001\u001f\u007f end`
const LARGE = "x".repeat(64 * 1024)
/** Every byte value, twice. */
const BYTES = Uint8Array.from({ length: 512 }, (_, index) => index % 256)

const sha = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex")

const variants = [
  ["supervised", undefined],
  ["supervised and sandboxed", "sandbox"],
] as const

describe("an order reaches its command intact", () => {
  for (const [name, kind] of variants) {
    test.skipIf(kind === "sandbox" && Landlock.abi() === 0)(`${name}: environment, argv and stdin bytes`, async () => {
      const cwd = tempDir("core-order-")
      const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", CORE_AWKWARD: AWKWARD, CORE_LARGE: LARGE, HOME: process.env.HOME ?? "/root" }
      // Each value printed NUL-terminated, then the digest of stdin: compared byte for byte below.
      const script = 'printf "%s\\0" "$CORE_AWKWARD" "$CORE_LARGE" "$1"; sha256sum | cut -d" " -f1'
      const result = await Effect.runPromise(
        shell.run({
          argv: ["bash", "-c", script, "bash", AWKWARD],
          cwd,
          env,
          stdin: BYTES,
          ...(kind === "sandbox" ? { sandbox: { location: cwd, approved: [] } } : {}),
        }),
      )
      expect(result.stderr.text).toBe("")
      expect(result.exitCode).toBe(0)
      const [fromEnv, large, fromArgv, digest] = result.stdout.text.split("\0")
      expect(fromEnv).toBe(AWKWARD)
      expect(large).toBe(LARGE)
      expect(fromArgv).toBe(AWKWARD)
      expect(digest!.trim()).toBe(sha(BYTES))
    })
  }
})
