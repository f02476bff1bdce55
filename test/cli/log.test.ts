// `core log` (DESIGN §6, §15) on the default SQLite store, through the compiled binary: the calls `core exec`
// recorded, as a table and as JSON, filtered by session and time, in their own Location only; bad flags are usage
// errors.

import { describe, expect, test } from "bun:test"
import { realpathSync } from "node:fs"
import { core, exec, sandbox } from "./fixture"

interface Entry {
  readonly sessionID: string
  readonly toolCallID: string
  readonly tool: string
  readonly status: string
  readonly error?: { readonly kind: string }
  readonly agent: string | null
  readonly location: string
  readonly messageID: string | null
  readonly input: unknown
  readonly inputTruncated: boolean
  readonly inputBytes: number | null
  readonly startedAt: string | null
  readonly settledAt: string | null
  readonly durationMs: number | null
}

const list = async (box: ReturnType<typeof sandbox>, args: ReadonlyArray<string>): Promise<ReadonlyArray<Entry>> => {
  const result = await core(box, ["log", "--json", ...args])
  expect(result).toMatchObject({ code: 0, stderr: "" })
  return JSON.parse(result.stdout) as ReadonlyArray<Entry>
}

describe("core log", () => {
  const box = sandbox({ "a.txt": "hello\n" })
  const other = sandbox()
  const before = new Date().toISOString()
  const setup = (async () => {
    await exec(box, "read", { filePath: "a.txt" }, ["--session", "ses_a", "--call", "call_read", "--message", "msg_1"])
    await exec(box, "nope", { x: 1 }, ["--session", "ses_b", "--call", "call_unknown"])
    await exec(box, "write", { filePath: "big.txt", content: "x".repeat(20_000) }, ["--session", "ses_a", "--call", "call_big"])
    // The same data directory, another Location: its calls are its own.
    await core({ ...other, env: box.env }, ["exec", "list", "--input", "{}", "--location", other.location, "--session", "ses_a", "--call", "call_elsewhere"])
  })()

  test("--json lists every recorded call of the Location with its details, oldest first", async () => {
    await setup
    const entries = await list(box, ["--location", box.location])
    expect(entries.map((entry) => entry.toolCallID)).toEqual(["call_read", "call_unknown", "call_big"])
    const [read, unknown, big] = entries
    expect(read).toMatchObject({
      sessionID: "ses_a",
      tool: "read",
      status: "success",
      agent: "build",
      location: realpathSync(box.location),
      messageID: "msg_1",
      input: { filePath: "a.txt" },
      inputTruncated: false,
    })
    expect(Date.parse(read!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(before))
    expect(Date.parse(read!.settledAt!)).toBeGreaterThanOrEqual(Date.parse(read!.startedAt!))
    expect(read!.durationMs).toBe(Date.parse(read!.settledAt!) - Date.parse(read!.startedAt!))
    expect(unknown).toMatchObject({ tool: "nope", status: "error", error: { kind: "unknown" }, input: { x: 1 } })
    // A large input is kept cut, as a string, with its whole size.
    expect(big!.inputTruncated).toBe(true)
    expect(typeof big!.input).toBe("string")
    expect((big!.input as string).length).toBeLessThanOrEqual(8 * 1024)
    expect(big!.inputBytes).toBeGreaterThan(20_000)
    expect(JSON.stringify(entries)).not.toContain("call_elsewhere")
  })

  test("without --location it lists the current directory's Location", async () => {
    await setup
    const result = await core(box, ["log", "--json"], { cwd: other.location })
    expect((JSON.parse(result.stdout) as ReadonlyArray<Entry>).map((entry) => entry.toolCallID)).toEqual(["call_elsewhere"])
  })

  test("--session and --since filter; --limit keeps the newest", async () => {
    await setup
    const ids = async (args: ReadonlyArray<string>) =>
      (await list(box, ["--location", box.location, ...args])).map((entry) => entry.toolCallID)
    expect(await ids(["--session", "ses_a"])).toEqual(["call_read", "call_big"])
    expect(await ids(["--since", "1h"])).toEqual(["call_read", "call_unknown", "call_big"])
    expect(await ids(["--since", new Date(Date.now() + 60_000).toISOString()])).toEqual([])
    expect(await ids(["--since", "2000-01-01"])).toHaveLength(3)
    expect(await ids(["--limit", "1"])).toEqual(["call_big"])
  })

  test("the table shows time, tool, status, duration, call id and the start of the input, one line each", async () => {
    await setup
    const result = await core(box, ["log", "--location", box.location])
    expect(result).toMatchObject({ code: 0, stderr: "" })
    const lines = result.stdout.trimEnd().split("\n")
    expect(lines[0]).toMatch(/^TIME \(UTC\)\s+TOOL\s+STATUS\s+DURATION\s+CALL\s+INPUT$/)
    expect(lines).toHaveLength(4)
    expect(lines[1]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+read\s+success\s+\d+(ms|\.\ds)\s+call_read\s+\{"filePath":"a.txt"\}$/)
    expect(lines[2]).toContain("error:unknown")
    // Not a terminal: 120 columns; the 20 KB input is cut to fit.
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(120)
    expect(lines[3]).toEndWith("…")
  })

  test("a Location with no calls says so", async () => {
    const empty = sandbox()
    const result = await core(empty, ["log", "--location", empty.location])
    expect(result).toMatchObject({ code: 0, stdout: `No calls recorded in ${realpathSync(empty.location)}.\n` })
    expect(await list(empty, ["--location", empty.location])).toEqual([])
  })

  for (const [args, message] of [
    [["--since", "yesterday"], "--since must be an ISO time"],
    [["--since", "5"], "--since must be an ISO time"],
    [["--since", "10x"], "--since must be an ISO time"],
    [["--limit", "0"], "--limit must be a whole number"],
    [["--limit", "ten"], "--limit must be a whole number"],
    [["--session", ""], "--session cannot be empty"],
    [["--bogus"], "unknown flag --bogus"],
    [["extra"], 'unexpected argument "extra"'],
  ] as const) {
    test(`${args.join(" ")} is a usage error (exit 2)`, async () => {
      const result = await core(box, ["log", "--location", box.location, ...args])
      expect(result.code).toBe(2)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain(`core log: ${message}`)
    })
  }

  test("--help prints its usage, and core --help names the command", async () => {
    const help = await core(box, ["log", "--help"])
    expect(help).toMatchObject({ code: 0, stderr: "" })
    expect(help.stdout).toStartWith("Usage: core log [--session ID] [--location DIR] [--since T]")
    expect((await core(box, ["--help"])).stdout).toContain("core log [--session ID] [--location DIR] [--since T] [--json]")
  })

  test("a Location that does not exist is a usage error", async () => {
    const result = await core(box, ["log", "--location", "/nonexistent/place"])
    expect(result.code).toBe(2)
  })
})
