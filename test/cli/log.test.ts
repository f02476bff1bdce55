// `core log` (DESIGN §6, §15) on the default SQLite store, through the compiled binary: the calls `core exec`
// recorded, as a table and as JSON, filtered by session and time, in their own Location only; bad flags are usage
// errors.

import { describe, expect, test } from "bun:test"
import { existsSync, realpathSync } from "node:fs"
import { join } from "node:path"
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

  test("the table shows time, tool, agent, status, duration, call id and the start of the input, one line each", async () => {
    await setup
    const result = await core(box, ["log", "--location", box.location])
    expect(result).toMatchObject({ code: 0, stderr: "" })
    const lines = result.stdout.trimEnd().split("\n")
    expect(lines[0]).toMatch(/^TIME \(UTC\)\s+TOOL\s+AGENT\s+STATUS\s+DURATION\s+CALL\s+INPUT$/)
    expect(lines).toHaveLength(4)
    expect(lines[1]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+read\s+build\s+success\s+\d+(ms|\.\ds)\s+call_read\s+\{"filePath":"a.txt"\}$/)
    expect(lines[2]).toContain("error:unknown")
    // Not a terminal: 120 columns; the 20 KB input is cut to fit.
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(120)
    expect(lines[3]).toEndWith("…")
  })

  // A call id or a tool name comes from a client (a host, an MCP client, a model's tool call): in the table it must
  // not break its row, forge another or drive the terminal (a clear screen, a window title, reordered text).
  test("a call id, tool name or input holding a line break or terminal controls shows escaped, on its own row", async () => {
    const hostile = sandbox()
    const id = "c\nTIME (UTC)           TOOL  STATUS   FAKE\u001b[2J\u001b]0;pwn\u0007\u009b31m\u202e"
    await exec(hostile, "list", {}, ["--session", "ses_h", "--call", id])
    await exec(hostile, "bad\u001b[31mtool\nX", {}, ["--session", "ses_h", "--call", "call_tool"])
    // An input's bidirectional controls would reorder its cell (and the row after it) as a terminal shows it.
    await exec(hostile, "read", { filePath: "\u202etxt.exe\u2066X\u200eY\u061cZ\u2069" }, ["--session", "ses_h", "--call", "call_bidi"])
    const result = await core(hostile, ["log", "--location", hostile.location])
    expect(result).toMatchObject({ code: 0, stderr: "" })
    const lines = result.stdout.trimEnd().split("\n")
    expect(lines).toHaveLength(4)
    expect(lines.filter((line) => line.startsWith("TIME (UTC)"))).toHaveLength(1)
    expect(result.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/)
    // Its input cell, cut to the width left beside the long call id above, starts with the first one escaped.
    expect(lines[3]).toMatch(/call_bidi +\{"filePath":"\\u/)
    // Quoted, and cut to the widest a cell is shown (the escapes make it longer).
    expect(lines[1]).toContain(String.raw`"c\nTIME (UTC)           TOOL  STATUS   FAKE\u001b[2J\u001b]0;pwn\u0007` + "…")
    expect(lines[2]).toContain(String.raw`"bad\u001b[31mtool\nX"`)
  })

  // A tool name is a model's text: one call named with 100,000 characters was kept whole and widened every row of
  // the table to it (a 5 MB name made 101 rows 505 MB). A name longer than any tool's is kept bounded, and no cell
  // is shown wider than 72 columns; an input's line separator is escaped, not shown as a space.
  test("a long tool name or call id widens no row; an input's line and paragraph separators show escaped", async () => {
    const long = sandbox()
    await exec(long, "n".repeat(100_000), {}, ["--session", "ses_l", "--call", "call_long_name"])
    await exec(long, "list", {}, ["--session", "ses_l", "--call", "i".repeat(4_000)])
    for (let index = 0; index < 3; index++) await exec(long, "list", {}, ["--session", "ses_l", "--call", `call_${index}`])
    const result = await core(long, ["log", "--location", long.location])
    expect(result).toMatchObject({ code: 0, stderr: "" })
    const lines = result.stdout.trimEnd().split("\n")
    expect(lines).toHaveLength(6)
    expect(lines[1]).toMatch(/ "n{70}… /)
    expect(lines[2]).toMatch(/ i{71}… /)
    for (const line of lines) expect(Bun.stringWidth(line)).toBeLessThanOrEqual(300)
    const [named] = await list(long, ["--location", long.location, "--session", "ses_l"])
    expect(named!.tool).toMatch(/^n{192}…\(100000 characters, sha256 [0-9a-f]{64}\)$/)
    const separated = sandbox()
    await exec(separated, "list", { path: "rm\u2028-rf\u2029x" }, ["--session", "ses_l", "--call", "call_sep"])
    const shown = await core(separated, ["log", "--location", separated.location])
    expect(shown.stdout).toContain(String.raw`{"path":"rm\u2028-rf\u2029x"}`)
  })

  // A tool name with spaces would show a row's cells of its own (a success where the call was unknown), and one with
  // a space at its end would look like the tool it is not.
  test("a tool name or call id holding spaces is quoted, so it cannot show cells of its own", async () => {
    const spaced = sandbox()
    const forged = "read             build  success        3ms       c9"
    await exec(spaced, forged, {}, ["--session", "ses_s", "--call", "call forged"])
    await exec(spaced, "read ", {}, ["--session", "ses_s", "--call", "call_trailing"])
    // Blanks Unicode does not call spaces (U+2800), and a joiner or a variation selector that leaves `read` as it looks.
    await exec(spaced, "read\u2800\u2800\u2800build", {}, ["--session", "ses_s", "--call", "x\u2800\u2800success"])
    await exec(spaced, "read\uFE0F", {}, ["--session", "ses_s", "--call", "call_vs"])
    await exec(spaced, "read\u200D", {}, ["--session", "ses_s", "--call", "call_zwj"])
    const result = await core(spaced, ["log", "--location", spaced.location])
    expect(result).toMatchObject({ code: 0, stderr: "" })
    const lines = result.stdout.trimEnd().split("\n")
    expect(lines).toHaveLength(6)
    // The braille blank shows as nothing a reader can tell from a space: escaped.
    expect(lines[3]).toContain(String.raw`"read\u2800\u2800\u2800build"`)
    expect(lines[3]).toContain(String.raw`"x\u2800\u2800success"`)
    expect(lines[4]).toContain('"read\uFE0F"')
    expect(lines[5]).toMatch(/"read(\u200D|\\u200d)"/)
    expect(lines[1]).toContain(`${JSON.stringify(forged)}  build  error:unknown`)
    expect(lines[1]).toContain(`"call forged"`)
    expect(lines[2]).toContain(`"read "`)
    expect(lines[2]).toContain("error:unknown")
  })

  // A terminal gives a CJK character or an emoji two columns: the table is laid out by columns, so every row's cells
  // start where the header's do, and an input is cut to the columns left, never inside a character.
  test("names, ids and inputs in CJK or with emoji keep the columns aligned and the rows within the width", async () => {
    const wide = sandbox()
    await exec(wide, "読み込み", {}, ["--session", "ses_w", "--call", "call_👩‍💻_1"])
    await exec(wide, "list", { note: "日本語の入力".repeat(40) }, ["--session", "ses_w", "--call", "call_2"])
    const result = await core(wide, ["log", "--location", wide.location])
    expect(result).toMatchObject({ code: 0, stderr: "" })
    const lines = result.stdout.trimEnd().split("\n")
    expect(lines).toHaveLength(3)
    const columns = (text: string) => Bun.stringWidth(text)
    const statusAt = columns(lines[0]!.slice(0, lines[0]!.indexOf("STATUS")))
    expect(lines[1]).toContain("error:unknown")
    expect(lines[2]).toContain("error:invalid_input")
    for (const line of lines.slice(1)) expect(columns(line.slice(0, line.indexOf("error:")))).toBe(statusAt)
    const inputAt = columns(lines[0]!.slice(0, lines[0]!.indexOf("INPUT")))
    expect(columns(lines[2]!.slice(0, lines[2]!.indexOf('{"note"')))).toBe(inputAt)
    for (const line of lines) expect(columns(line)).toBeLessThanOrEqual(120)
    expect(lines[2]).toEndWith("…")
    expect(lines[2]).not.toMatch(/[\ud800-\udfff](?![\udc00-\udfff])/)
    expect(columns(lines[2]!)).toBeGreaterThanOrEqual(118)
  })

  // The table's times are UTC: one copied from it and given back without an offset means the same instant, whatever
  // the zone the user's terminal is in; a day the month does not have is refused, not rolled over into the next.
  test("--since without an offset is UTC, as the table shows times; an impossible date is a usage error", async () => {
    await setup
    const started = (await list(box, ["--location", box.location]))[0]!.startedAt!
    const second = started.slice(0, 19).replace("T", " ")
    for (const TZ of ["UTC", "America/Los_Angeles", "Asia/Kolkata"]) {
      const result = await core({ ...box, env: { ...box.env, TZ } }, ["log", "--json", "--location", box.location, "--since", second])
      expect({ TZ, code: result.code }).toEqual({ TZ, code: 0 })
      // The first call started in that second, at or after its start: it and those after it are listed.
      expect((JSON.parse(result.stdout) as ReadonlyArray<Entry>).length).toBeGreaterThanOrEqual(2)
    }
    const later = new Date(Date.parse(started) + 3_600_000).toISOString().slice(0, 19)
    expect(await list({ ...box, env: { ...box.env, TZ: "America/Los_Angeles" } }, ["--location", box.location, "--since", later])).toEqual([])
    const impossible = await core(box, ["log", "--location", box.location, "--since", "2026-02-31"])
    expect(impossible.code).toBe(2)
    expect(impossible.stderr).toContain("--since must be an ISO time")
  })

  test("a Location with no calls says so", async () => {
    const empty = sandbox()
    const result = await core(empty, ["log", "--location", empty.location])
    expect(result).toMatchObject({ code: 0, stdout: `No calls recorded in ${realpathSync(empty.location)}.\n` })
    expect(await list(empty, ["--location", empty.location])).toEqual([])
  })

  test("a data directory with nothing recorded yet is listed as empty, and nothing is made in it", async () => {
    const empty = sandbox()
    const missing = join(empty.data, "never-used")
    const result = await core({ ...empty, env: { ...empty.env, CORE_DATA_DIR: missing } }, ["log", "--location", empty.location, "--json"])
    expect(result).toMatchObject({ code: 0, stdout: "[]\n" })
    expect(existsSync(missing)).toBe(false)
  })

  test("a session or a Location holding what a terminal acts on is shown inert when nothing was recorded", async () => {
    const result = await core(box, ["log", "--location", box.location, "--session", "s\u001b[2Jx\ncore: fake"])
    expect(result.code).toBe(0)
    expect(result.stdout).not.toContain("\u001b")
    expect(result.stdout.trimEnd().split("\n")).toHaveLength(1)
    // Any session id the calls route takes can be listed, spaces and all.
    expect((await core(box, ["log", "--location", box.location, "--session", " "])).code).toBe(0)
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
    expect((await core(box, ["--help"])).stdout).toContain("core log [--session ID] [--location DIR] [--since T] [--limit N] [--json]")
  })

  test("a Location that does not exist is a usage error", async () => {
    const result = await core(box, ["log", "--location", "/nonexistent/place"])
    expect(result.code).toBe(2)
  })
})
