// The Python client (clients/python, standard library only) against the compiled binary: its own unittest suite,
// run by python3 (on this machine and in CI, the same image, it is Python 3.11; the suite needs no package), and a
// check that every file parses as Python 3.9, the oldest version the client supports. On a machine with no python3
// these tests are not defined (a note on stderr says so); CI refuses to run without python3 (.ci/run).

import { describe, expect, test } from "bun:test"
import { readdirSync } from "node:fs"
import { join } from "node:path"
import { binary } from "../support/binary"

const ROOT = join(import.meta.dir, "../..")
const PYTHON = join(ROOT, "clients/python")

const python = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const child = Bun.spawn(["python3", ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" })
  return Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()]).then(
    ([code, stdout, stderr]) => ({ code, stdout, stderr }),
  )
}

const present = Bun.which("python3") !== null
if (!present) console.warn("python.test: no python3 on the PATH, so the Python client's tests are not run here")

describe.if(present)("the Python client", () => {
  test("parses as Python 3.9 and imports with the standard library alone", async () => {
    const files = ["core_client", "tests"].flatMap((folder) =>
      readdirSync(join(PYTHON, folder))
        .filter((name) => name.endsWith(".py"))
        .map((name) => join(PYTHON, folder, name)),
    )
    const script = [
      "import ast, sys",
      "for path in sys.argv[1:]:",
      "    ast.parse(open(path).read(), path, feature_version=(3, 9))",
      `sys.path.insert(0, ${JSON.stringify(PYTHON)})`,
      "import core_client",
      "print(len(core_client.__all__))",
    ].join("\n")
    const result = await python(["-I", "-c", script, ...files])
    expect(result).toMatchObject({ code: 0, stderr: "" })
    expect(Number(result.stdout)).toBeGreaterThan(10)
  })

  test("runs its suite against the binary: the host's loop, replay, check, cancel, outputs, events, sessions, the SSE line bound", async () => {
    const result = await python(["-m", "unittest", "discover", "-s", join(PYTHON, "tests"), "-v"], {
      CORE_BINARY: await binary(),
    })
    if (result.code !== 0) throw new Error(`the Python suite failed (exit ${result.code}):\n${result.stderr}`)
    expect(result.stderr).toContain("OK")
    // The client's suite against the binary, and the event-stream reader's bound (test_sse.py).
    expect(Number(/Ran (\d+) tests/.exec(result.stderr)?.[1])).toBeGreaterThanOrEqual(10)
    expect(result.stderr).toMatch(/test_a_call_whose_stream_sends_an_endless_line_fails_once_as_a_core_error .* ... ok/)
  })
})
