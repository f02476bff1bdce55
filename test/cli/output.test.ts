// Bounding and managed outputs end to end (DESIGN §2 law 10, §5 `outputs`, §6 `core output`, §9 bounds): an
// oversized output comes back as a bounded preview plus a reference, and `core output` gives back every byte.

import { describe, expect, test } from "bun:test"
import { mkdirSync, readdirSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { binary } from "../support/binary"
import { core, exec, IMPORTS, RAN, runs, sandbox, settlementOf, type Sandbox } from "./fixture"

const MAX_LINES = 2_000
const MAX_BYTES = 51_200
const LINE_COUNT = 400_000
/** Multi-byte filler, so the byte bound is measured in UTF-8 and not in characters. */
const FILL = "αβγ-δ€😀 ".repeat(7)

/** A line (after its number) holding what a terminal acts on: OSC 52 (writes the clipboard), a screen clear, a
 * carriage return that overwrites what shows, a right-to-left override, a C1 control sequence; and CRLF. */
const HOSTILE = "\t\u001b]52;c;ZWNobyBwd25lZA==\u0007\u001b[2J\u001b[1;1Hsafe\rrm -rf ~ \u202egnp.exe\u009b31m é 😀\r\n"

const lineOf = (n: number) => `line ${n} ${FILL}`
const bigText = () => Array.from({ length: LINE_COUNT }, (_, index) => lineOf(index + 1)).join("\n")

const TOOLS = `${IMPORTS}${RAN}
const FILL = ${JSON.stringify(FILL)}
const HOSTILE = ${JSON.stringify(HOSTILE)}

export const lines = Tool.make({
  description: "Return many numbered lines",
  input: Schema.Struct({ count: Schema.Finite }),
  output: Schema.String,
  execute: (input) => Effect.sync(() => {
    ran("lines")
    return Array.from({ length: input.count }, (_, index) => \`line \${index + 1} \${FILL}\`).join("\\n")
  }),
})

export const block = Tool.make({
  description: "Return lines of a given width",
  input: Schema.Struct({ lines: Schema.Finite, width: Schema.Finite }),
  output: Schema.String,
  execute: (input) => Effect.succeed(Array.from({ length: input.lines }, () => "y".repeat(input.width)).join("\\n")),
})

export const table = Tool.make({
  description: "Return a large structured table",
  input: Schema.Struct({ rows: Schema.Finite }),
  output: Schema.Struct({ rows: Schema.Array(Schema.Struct({ id: Schema.Finite, name: Schema.String })) }),
  execute: (input) =>
    Effect.succeed({ rows: Array.from({ length: input.rows }, (_, id) => ({ id, name: "row " + id })) }),
})

export const hostile = Tool.make({
  description: "Return many lines holding what a terminal acts on",
  input: Schema.Struct({ count: Schema.Finite }),
  output: Schema.String,
  execute: (input) => Effect.succeed(Array.from({ length: input.count }, (_, index) => index + HOSTILE).join("") + "end\\r"),
})

export const summary = Tool.make({
  description: "Return a large structured table, told to the model in one line",
  input: Schema.Struct({ rows: Schema.Finite }),
  output: Schema.Struct({ rows: Schema.Array(Schema.Struct({ id: Schema.Finite, name: Schema.String })) }),
  execute: (input) =>
    Effect.succeed({ rows: Array.from({ length: input.rows }, (_, id) => ({ id, name: "row " + id })) }),
  toModelOutput: ({ input }) => input.rows + " rows",
})
`

/** Runs `core output ID [ARGS]` and returns its exit code and raw stdout bytes. */
const outputBytes = async (box: Sandbox, ...args: ReadonlyArray<string>) => {
  const child = Bun.spawn([await binary(), "output", ...args], {
    env: { ...process.env, ...box.env },
    stdout: "pipe",
    stderr: "pipe",
  })
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).arrayBuffer(),
    new Response(child.stderr).text(),
  ])
  return { code, stdout: new Uint8Array(stdout), stderr }
}

/** The files of output `id` in the sandbox's data directory (kept under folders of their Location and session). */
const filesOf = (box: Sandbox, id: string): ReadonlyArray<string> =>
  (readdirSync(join(box.data, "outputs"), { recursive: true }) as Array<string>)
    .filter((path) => path.split("/").at(-1)!.startsWith(id))
    .map((path) => join(box.data, "outputs", path))
    .sort()

const sha256 = (data: string | Uint8Array) => new Bun.CryptoHasher("sha256").update(data).digest("hex")

describe("an oversized text output", () => {
  test("is bounded to a head-and-tail preview with a marker, kept in full, and printed back byte for byte by core output", async () => {
    const box = sandbox({ "tools/big.ts": TOOLS })
    const expected = Buffer.from(bigText(), "utf8")
    expect(expected.length).toBeGreaterThan(35_000_000)

    const result = await exec(box, "big_lines", { count: LINE_COUNT })
    expect(result.code).toBe(0)
    const settlement = settlementOf(result)
    expect(settlement.status).toBe("success")
    expect(runs(box, "lines")).toBe(1)

    // One reference, to the complete output.
    expect(settlement.outputs).toHaveLength(1)
    const { id, bytes } = settlement.outputs[0]!
    expect(bytes).toBe(expected.length)

    // One text part within both bounds, in UTF-8 bytes.
    expect(settlement.content).toHaveLength(1)
    const part = settlement.content[0]!
    if (part.type !== "text") throw new Error(`expected a text part, got ${part.type}`)
    const preview = part.text
    expect(Buffer.byteLength(preview, "utf8")).toBeLessThanOrEqual(MAX_BYTES)
    expect(preview.split("\n").length).toBeLessThanOrEqual(MAX_LINES)
    // About 8 KiB of it by default (output.previewBytes), whatever the bound.
    expect(Buffer.byteLength(preview, "utf8")).toBeGreaterThan(6 * 1024)
    expect(Buffer.byteLength(preview, "utf8")).toBeLessThanOrEqual(8 * 1024)

    // A summary line first, then the text's own first and last lines.
    const [summary, ...body] = preview.split("\n")
    const shown = body.join("\n")
    expect(shown.startsWith(`${lineOf(1)}\n${lineOf(2)}\n`)).toBe(true)
    expect(shown.endsWith(`\n${lineOf(LINE_COUNT - 1)}\n${lineOf(LINE_COUNT)}`)).toBe(true)

    // The summary says what was left out, where the rest is, and how the model reads it with the read tool.
    const marker = /: (\d+) lines, (\d+) bytes\. Shown: lines 1-(\d+) and lines (\d+)-\d+; left out: lines (\d+)-(\d+) \((\d+) bytes\)/.exec(summary!)
    expect(marker).not.toBeNull()
    const [, totalLines, totalBytes, headLast, tailFirst, from, to, omittedBytes] = marker!.map(Number)
    expect(totalBytes).toBe(expected.length)
    expect(totalLines).toBe(LINE_COUNT)
    expect(from).toBe(headLast! + 1)
    expect(to).toBe(tailFirst! - 1)
    // Kept in the Location's own directory of outputs.
    const path = join(
      box.data,
      "outputs",
      readdirSync(join(box.data, "outputs"), { recursive: true }).map(String).find((name) => name.endsWith(`/${id}`))!,
    )
    expect(summary).toContain(`read tool (filePath "${path}", offset ${from}, limit 2000)`)
    expect(preview).not.toContain("core output")

    // What the preview shows plus what it says it left out is exactly the whole text.
    const text = expected.toString("utf8")
    const head = shown.slice(0, shown.indexOf("\n[…") + 1)
    const tail = shown.slice(shown.indexOf("…]\n", head.length) + 3)
    expect(text.startsWith(head)).toBe(true)
    expect(text.endsWith(tail)).toBe(true)
    expect(omittedBytes).toBe(expected.length - Buffer.byteLength(head) - Buffer.byteLength(tail))
    const lines = text.split("\n")
    expect(head).toBe(`${lines.slice(0, headLast).join("\n")}\n`)
    expect(tail).toBe(lines.slice(tailFirst! - 1).join("\n"))

    // The structured string is that text: too large to return, so null, never a preview; kept whole as its JSON
    // too (DESIGN §5), which core output --structured prints.
    expect(settlement.structured).toBeNull()
    expect(settlement.outputs[0]!.bytes).toBe(expected.length)

    const printed = await outputBytes(box, id)
    expect(printed.code).toBe(0)
    expect(printed.stdout.length).toBe(expected.length)
    expect(sha256(printed.stdout)).toBe(sha256(expected))
    const structured = await outputBytes(box, id, "--structured")
    expect(structured.code).toBe(0)
    expect(JSON.parse(new TextDecoder().decode(structured.stdout))).toBe(text)

    // A reader that stops early closes the pipe: core output ends quietly, not as a failure.
    const early = Bun.spawn(["bash", "-o", "pipefail", "-c", `"$0" output "$1" | head -c 20 > /dev/null`, await binary(), id], {
      env: { ...process.env, ...box.env },
      stdout: "pipe",
      stderr: "pipe",
    })
    const earlyStderr = await new Response(early.stderr).text()
    expect(await early.exited).toBe(0)
    expect(earlyStderr).toBe("")
  })

  test("an oversized structured-only output reaches the model as its JSON, kept once; core output prints it whole", async () => {
    const box = sandbox({ "tools/big.ts": TOOLS })
    const result = await exec(box, "big_table", { rows: 20_000 })
    expect(result.code).toBe(0)
    const settlement = settlementOf(result)
    expect(settlement.outputs).toHaveLength(1)
    expect(settlement.structured).toBeNull()
    const part = settlement.content[0]!
    if (part.type !== "text") throw new Error(`expected a text part, got ${part.type}`)
    expect(Buffer.byteLength(part.text, "utf8")).toBeLessThanOrEqual(MAX_BYTES)
    expect(part.text.split("\n").length).toBeLessThanOrEqual(MAX_LINES)
    expect(part.text.split("\n")[1]).toBe("{")

    const { id, bytes } = settlement.outputs[0]!
    for (const args of [[id], [id, "--structured"]]) {
      const printed = await outputBytes(box, ...args)
      expect(printed.code).toBe(0)
      // The text and the structured value are one file: the bytes are counted and stored once.
      expect(printed.stdout.length).toBe(bytes)
      const whole = JSON.parse(new TextDecoder().decode(printed.stdout)) as { rows: Array<{ id: number; name: string }> }
      expect(whole.rows).toHaveLength(20_000)
      expect(whole.rows[19_999]).toEqual({ id: 19_999, name: "row 19999" })
    }
  })

  test("a structured value dropped beside a text that fits is printed by core output --structured", async () => {
    const box = sandbox({ "tools/big.ts": TOOLS })
    const settlement = settlementOf(await exec(box, "big_summary", { rows: 20_000 }))
    expect(settlement.content).toEqual([{ type: "text", text: "20000 rows" }])
    expect(settlement.structured).toBeNull()
    const printed = await outputBytes(box, settlement.outputs[0]!.id, "--structured")
    expect(printed.code).toBe(0)
    const whole = JSON.parse(new TextDecoder().decode(printed.stdout)) as { rows: Array<unknown> }
    expect(whole.rows).toHaveLength(20_000)
    const small = settlementOf(await exec(box, "big_summary", { rows: 2 }))
    expect(small.structured).toEqual({ rows: [{ id: 0, name: "row 0" }, { id: 1, name: "row 1" }] })
    expect(small.outputs).toEqual([])
  })
})

describe("the bounds", () => {
  const cases = [
    { name: `${MAX_LINES} lines fit`, lines: MAX_LINES, width: 1, bounded: false },
    { name: `${MAX_LINES + 1} lines are bounded`, lines: MAX_LINES + 1, width: 1, bounded: true },
    { name: `${MAX_BYTES} bytes fit`, lines: 1, width: MAX_BYTES, bounded: false },
    { name: `${MAX_BYTES + 1} bytes are bounded`, lines: 1, width: MAX_BYTES + 1, bounded: true },
  ]
  for (const { name, lines, width, bounded } of cases) {
    test(name, async () => {
      const box = sandbox({ "tools/big.ts": TOOLS })
      const settlement = settlementOf(await exec(box, "big_block", { lines, width }))
      const full = Array.from({ length: lines }, () => "y".repeat(width)).join("\n")
      expect(settlement.status).toBe("success")
      if (bounded) {
        expect(settlement.outputs).toHaveLength(1)
        expect(settlement.outputs[0]!.bytes).toBe(Buffer.byteLength(full))
        expect(settlement.content).not.toEqual([{ type: "text", text: full }])
      } else {
        expect(settlement.outputs).toEqual([])
        expect(settlement.content).toEqual([{ type: "text", text: full }])
        expect(settlement.structured).toBe(full)
      }
    })
  }
})

// End to end, with the compiled binary and a Location's core.json: one process per call (as core exec is), so each
// counts the session's kept outputs afresh from the disk.
test("past output.maxSessionBytes a session's calls answer their preview alone, saying why; another session's are kept", async () => {
  const box = sandbox({ "tools/big.ts": TOOLS, "core.json": JSON.stringify({ output: { maxSessionBytes: 1_048_576 } }) })
  const call = async (session: string, call: string) =>
    settlementOf(await exec(box, "big_block", { lines: 4_000, width: 100 }, ["--session", session, "--call", call]))
  const [first, second, third] = [await call("s1", "c1"), await call("s1", "c2"), await call("s1", "c3")]
  expect([first.status, second.status, third.status]).toEqual(["success", "success", "success"])
  expect([first.outputs.length, second.outputs.length, third.outputs]).toEqual([1, 1, []])
  const preview = (third.content[0] as { text: string }).text
  expect(preview).toMatch(
    /^\[Output too large to show whole: 4000 lines, 403999 bytes\. Shown: lines 1-\d+ and lines \d+-4000; left out: lines \d+-\d+ \(\d+ bytes\), which was not kept: this session's kept outputs already hold 789\.1 KiB of the 1\.0 MiB one session may keep \(output\.maxSessionBytes\)\./,
  )
  expect(Buffer.byteLength(preview)).toBeLessThanOrEqual(MAX_BYTES)
  // Nothing of the third was kept anywhere; the other session keeps its own.
  expect((readdirSync(join(box.data, "outputs"), { recursive: true }) as Array<string>).filter((path) => /out_\w+$/.test(path))).toHaveLength(2)
  expect((await call("s2", "c1")).outputs).toHaveLength(1)
})

describe("core output", () => {
  test("an unknown id exits 1 with a message naming it", async () => {
    const box = sandbox()
    const result = await core(box, ["output", "out_zzzzzzzzz_0000000000000000"])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain("out_zzzzzzzzz_0000000000000000")
  })

  test("a malformed id exits 1 with a message, and never reads outside the outputs directory", async () => {
    const box = sandbox()
    writeFileSync(join(box.data, "core.db.secret"), "not an output")
    for (const id of ["garbage", "../core.db.secret", "out_../../etc/passwd"]) {
      const result = await core(box, ["output", id])
      expect(result.code).toBe(1)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain(id)
    }
  })

  // The operator's retention (`output.retentionDays` in $CORE_HOME/core.json) is the one the sidecar and exec sweep
  // by: core output neither calls an output it keeps expired (and removes it), nor serves one past it.
  /** An output made in `box`, its files made ten days old, printed whole by core output and kept: its id. */
  const keptTenDays = async (box: Sandbox) => {
    const id = settlementOf(await exec(box, "big_block", { lines: 10, width: 10_000 })).outputs[0]!.id as string
    const files = filesOf(box, id)
    expect(files.length).toBeGreaterThan(0)
    const tenDaysAgo = new Date(Date.now() - 10 * 86_400_000)
    for (const path of files) utimesSync(path, tenDaysAgo, tenDaysAgo)
    const kept = await outputBytes(box, id)
    expect({ code: kept.code, stderr: kept.stderr }).toEqual({ code: 0, stderr: "" })
    expect(kept.stdout.length).toBe(10 * 10_000 + 9)
    expect(filesOf(box, id)).toEqual(files)
    return id
  }

  test("reads by the operator's retention: an output older than the default but within it is printed and kept", async () => {
    const box = sandbox({ "tools/big.ts": TOOLS }, { "core.json": JSON.stringify({ output: { retentionDays: 30 } }) })
    const id = await keptTenDays(box)

    // A shorter retention than the default: past it, the output has expired (and goes), as the sweep would have it.
    writeFileSync(join(box.home, "core.json"), JSON.stringify({ output: { retentionDays: 5 } }))
    const expired = await outputBytes(box, id)
    expect(expired.code).toBe(1)
    expect(expired.stderr).toContain("has expired")
  })

  // A Location's own retention (its core.json) is recorded in the store, so core output finds its outputs by it,
  // from wherever it runs.
  test("reads by a Location's own retention: its output older than the operator's retention is printed and kept", async () => {
    const box = sandbox({ "tools/big.ts": TOOLS, "core.json": JSON.stringify({ output: { retentionDays: 30 } }) }, {
      "core.json": JSON.stringify({ output: { retentionDays: 5 } }),
    })
    await keptTenDays(box)
  })

  test("an operator's core.json that does not load is a usage error, and no output is touched", async () => {
    const box = sandbox({ "tools/big.ts": TOOLS })
    const id = settlementOf(await exec(box, "big_block", { lines: 10, width: 10_000 })).outputs[0]!.id as string
    writeFileSync(join(box.home, "core.json"), '{"output": {"retentionDays": "soon"}}')
    const result = await outputBytes(box, id)
    expect(result.code).toBe(2)
    expect(result.stderr).toContain("retentionDays")
    expect(result.stderr).toContain("core check")
    expect(filesOf(box, id).length).toBeGreaterThan(0)
  })

  // A model's text printed on a person's terminal must not act on it: clear the screen, overwrite a line (\r) so
  // that what shows is not what is there, write the clipboard (OSC 52), reorder what is shown. Piped, the bytes as
  // kept; on a terminal, each such character escaped (\uXXXX) but tab, line feed and CRLF; `--raw` as kept there too.
  test("on a terminal, what a terminal acts on is shown escaped; piped or with --raw, the bytes as kept", async () => {
    const box = sandbox({ "tools/big.ts": TOOLS })
    const COUNT = 3_000
    const settlement = settlementOf(await exec(box, "big_hostile", { count: COUNT }))
    expect(settlement.outputs).toHaveLength(1)
    const id = settlement.outputs[0]!.id as string
    const kept = Array.from({ length: COUNT }, (_, index) => `${index}${HOSTILE}`).join("") + "end\r"

    const piped = await outputBytes(box, id)
    expect(piped.code).toBe(0)
    expect(Buffer.from(piped.stdout).toString("utf8")).toBe(kept)

    /** `core output ID ARGS` on a terminal (script's), its output as the terminal got it, `\n` as `\r\n` (onlcr). */
    const onTerminal = async (...args: ReadonlyArray<string>) => {
      const command = [await binary(), "output", id, ...args].map((part) => `'${part}'`).join(" ")
      const child = Bun.spawn(["script", "-qec", command, "/dev/null"], {
        env: { ...process.env, ...box.env },
        stdin: new Blob([]),
        stdout: "pipe",
        stderr: "pipe",
      })
      const [code, output] = await Promise.all([child.exited, new Response(child.stdout).text()])
      return { code, output }
    }
    const shown = await onTerminal()
    expect(shown.code).toBe(0)
    const line = (index: number) =>
      `${index}\t\\u001b]52;c;ZWNobyBwd25lZA==\\u0007\\u001b[2J\\u001b[1;1Hsafe\\u000drm -rf ~ \\u202egnp.exe\\u009b31m é 😀\r\r\n`
    expect(shown.output).toBe(Array.from({ length: COUNT }, (_, index) => line(index)).join("") + "end\\u000d")
    for (const acted of ["\u001b", "\u0007", "\u009b", "\u202e"]) expect(shown.output).not.toContain(acted)

    const raw = await onTerminal("--raw")
    expect(raw.code).toBe(0)
    expect(raw.output).toBe(kept.replaceAll("\n", "\r\n"))
  })

  test("a missing id is a usage error", async () => {
    const result = await core(sandbox(), ["output"])
    expect(result.code).toBe(2)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain("ID is required")
  })
})

describe("retention failure", () => {
  test("when the full output cannot be kept, exec exits 3 naming the path and the OS error, and reports no success", async () => {
    const box = sandbox({ "tools/big.ts": TOOLS })
    // Tests run as root, where permissions do not block writes: a file where the directory belongs does.
    writeFileSync(join(box.data, "outputs"), "")
    const result = await exec(box, "big_lines", { count: 5_000 })
    expect(result.code).toBe(3)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain(join(box.data, "outputs"))
    // The outputs directory is a file: the Location's directory below it cannot be made.
    expect(result.stderr).toMatch(/EEXIST|ENOTDIR/)
  })

  test("an output small enough to need no retention still succeeds with the same data directory", async () => {
    const box = sandbox({ "tools/big.ts": TOOLS })
    writeFileSync(join(box.data, "outputs"), "")
    const result = await exec(box, "big_lines", { count: 3 })
    expect(result.code).toBe(0)
    expect(settlementOf(result).outputs).toEqual([])
  })

  test("a data directory that does not exist yet is created when an output must be kept", async () => {
    const box = sandbox({ "tools/big.ts": TOOLS })
    const nested = join(box.data, "deeper", "still")
    mkdirSync(join(box.data, "deeper"))
    const result = await core({ ...box, env: { ...box.env, CORE_DATA_DIR: nested } }, [
      "exec",
      "big_lines",
      "--input",
      '{"count":5000}',
      "--location",
      box.location,
    ])
    expect(result.code).toBe(0)
    const settlement = settlementOf(result)
    expect(settlement.outputs).toHaveLength(1)
    const printed = await core({ ...box, env: { ...box.env, CORE_DATA_DIR: nested } }, ["output", settlement.outputs[0]!.id])
    expect(printed.code).toBe(0)
    expect(printed.stdout.endsWith(lineOf(5_000))).toBe(true)
  })
})
