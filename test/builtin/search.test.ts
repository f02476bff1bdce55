// The glob and grep built-ins settled in a real Location: what ripgrep finds and leaves out (.gitignore, hidden
// files, .git), newest-first ordering, the limits and their counts, include filters, long lines, names and lines
// that are not UTF-8 or hold ":", rg's errors (bad patterns, partial results), and the permission checks.

import { describe, expect, test } from "bun:test"
import { mkdirSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Glob } from "../../src/builtin/glob"
import { Grep } from "../../src/builtin/grep"
import { harness, textOf } from "../support/builtin"
import { tempDir } from "../support/temp"

/** Sets a file's modification time to `seconds` after the epoch. */
const age = (path: string, seconds: number) => utimesSync(path, seconds, seconds)

/**
 * A directory so deeply nested that its absolute path is longer than PATH_MAX: rg cannot enter it and reports
 * "File name too long" (even to root, unlike an unreadable directory), then goes on with the rest.
 */
const tooDeep = (parent: string) => {
  const name = "d".repeat(250)
  const script = `cd "$0" && for i in $(seq 1 18); do mkdir ${name} && cd ${name}; done && echo needle > f.txt`
  expect(Bun.spawnSync(["bash", "-c", script, parent]).exitCode).toBe(0)
}

/** A file name with a byte that is not UTF-8, created through the shell (Node paths are UTF-8 strings). */
const badName = (directory: string, content: string) => {
  expect(Bun.spawnSync(["bash", "-c", `printf '%s\\n' "$1" > "$0/bad$(printf '\\377')name.txt"`, directory, content]).exitCode).toBe(0)
}

describe("glob", () => {
  test("finds files by pattern, relative to the Location, newest first", async () => {
    const h = harness({ files: { "src/old.ts": "", "src/new.ts": "", "src/mid.ts": "", "src/readme.md": "", "top.ts": "" } })
    age(join(h.directory, "src/old.ts"), 1_000)
    age(join(h.directory, "src/mid.ts"), 2_000)
    age(join(h.directory, "src/new.ts"), 3_000)
    age(join(h.directory, "top.ts"), 500)
    const { settlement } = await h.settle("glob", { pattern: "**/*.ts" })
    expect(settlement.status).toBe("success")
    expect(settlement.structured).toEqual({
      pattern: "**/*.ts",
      path: ".",
      files: ["src/new.ts", "src/mid.ts", "src/old.ts", "top.ts"],
      total: 4,
    })
    expect(textOf(settlement)).toBe("src/new.ts\nsrc/mid.ts\nsrc/old.ts\ntop.ts")
  })

  test("matches patterns with / against paths relative to the searched directory", async () => {
    const h = harness({ files: { "pkg/src/a.ts": "", "pkg/test/a.ts": "", "src/b.ts": "" } })
    const { settlement } = await h.settle("glob", { pattern: "src/*.ts", path: "pkg" })
    expect(settlement.structured).toMatchObject({ path: "pkg", files: ["pkg/src/a.ts"], total: 1 })
  })

  test("lists the 100 newest matching files by default, with the total and how to narrow", async () => {
    const files = Object.fromEntries(Array.from({ length: 150 }, (_, index) => [`many/f${index}.txt`, ""]))
    const h = harness({ files })
    for (let index = 0; index < 150; index++) age(join(h.directory, `many/f${index}.txt`), 10_000 + index)
    const expected = Array.from({ length: 100 }, (_, index) => `many/f${149 - index}.txt`)
    const { settlement } = await h.settle("glob", { pattern: "*.txt" })
    expect(settlement.structured).toEqual({ pattern: "*.txt", path: ".", files: expected, total: 150 })
    expect(textOf(settlement)).toBe(
      `${expected.join("\n")}\n\n(Showing the 100 newest of 150 matching files. Narrow the pattern or path, or raise limit.)`,
    )
  })

  test("limit lists more or fewer; every file when it covers them all", async () => {
    const files = Object.fromEntries(Array.from({ length: 150 }, (_, index) => [`many/f${index}.txt`, ""]))
    const h = harness({ files })
    for (let index = 0; index < 150; index++) age(join(h.directory, `many/f${index}.txt`), 10_000 + index)
    const all = Array.from({ length: 150 }, (_, index) => `many/f${149 - index}.txt`)
    const few = await h.settle("glob", { pattern: "*.txt", limit: 2 })
    expect(few.settlement.structured).toMatchObject({ files: all.slice(0, 2), total: 150 })
    const every = await h.settle("glob", { pattern: "*.txt", limit: 500 })
    expect(textOf(every.settlement)).toBe(all.join("\n"))
    const zero = await h.settle("glob", { pattern: "*.txt", limit: 0 })
    expect(zero.settlement.error?.kind).toBe("invalid_input")
  })

  test("a list too long for the model is bounded by the settlement and kept whole as a managed output", async () => {
    const files = Object.fromEntries(Array.from({ length: 150 }, (_, index) => [`many/f${index}.txt`, ""]))
    const h = harness({ files })
    for (let index = 0; index < 150; index++) age(join(h.directory, `many/f${index}.txt`), 10_000 + index)
    const expected = Array.from({ length: 150 }, (_, index) => `many/f${149 - index}.txt`)
    const { settlement, outputs } = await h.settle("glob", { pattern: "*.txt", limit: 150 }, { limits: { maxLines: 40 } })
    expect(settlement.status).toBe("success")
    // After the preview's summary line.
    const text = textOf(settlement).split("\n").slice(1).join("\n")
    expect(text).toStartWith("many/f149.txt\nmany/f148.txt\n")
    expect(text).toEndWith("many/f1.txt\nmany/f0.txt")
    expect(text).not.toContain("many/f75.txt\n")
    expect(settlement.outputs.length).toBeGreaterThan(0)
    expect(Object.values(outputs)).toContain(expected.join("\n"))
  })

  test("a pattern starting with ./ is anchored at the searched directory", async () => {
    const h = harness({ files: { "src/a.ts": "", "src/deep/b.ts": "", "pkg/src/c.ts": "", "top.ts": "", "pkg/top.ts": "" } })
    const sorted = async (input: Record<string, string>) =>
      [...((await h.settle("glob", input)).settlement.structured as Glob.Output).files].sort()
    expect(await sorted({ pattern: "./src/*.ts" })).toEqual(["src/a.ts"])
    expect(await sorted({ pattern: "./src/**/*.ts" })).toEqual(["src/a.ts", "src/deep/b.ts"])
    expect(await sorted({ pattern: "./top.ts" })).toEqual(["top.ts"])
    expect(await sorted({ pattern: "./*.ts", path: "pkg" })).toEqual(["pkg/top.ts"])
    // The same as without ./ when the pattern has a / anyway.
    expect(await sorted({ pattern: "src/*.ts" })).toEqual(["src/a.ts"])
  })

  test("honours .gitignore, includes hidden files and never enters .git", async () => {
    const h = harness({
      files: {
        ".gitignore": "ignored/\n*.log\n*.generated.ts\n",
        "ignored/a.ts": "",
        "debug.log": "",
        "api.generated.ts": "",
        ".hidden/b.ts": "",
        ".git/c.ts": "",
        "kept.ts": "",
        "kept.log.ts": "",
      },
    })
    const everything = await h.settle("glob", { pattern: "**/*" })
    expect([...(everything.settlement.structured as Glob.Output).files].sort()).toEqual([
      ".gitignore",
      ".hidden/b.ts",
      "kept.log.ts",
      "kept.ts",
    ])
    // A pattern that matches an ignored file does not bring it back (rg's own --glob would), whether it is a
    // name pattern or a path pattern.
    const named = await h.settle("glob", { pattern: "*.ts" })
    expect([...(named.settlement.structured as Glob.Output).files].sort()).toEqual([".hidden/b.ts", "kept.log.ts", "kept.ts"])
    const anchored = await h.settle("glob", { pattern: "/*.ts" })
    expect([...(anchored.settlement.structured as Glob.Output).files].sort()).toEqual(["kept.log.ts", "kept.ts"])
  })

  test("honours .gitignore in a Location that is not a git repository", async () => {
    const h = harness({ files: { ".gitignore": "secret.ts\n", "secret.ts": "", "open.ts": "" } })
    const { settlement } = await h.settle("glob", { pattern: "*.ts" })
    expect(settlement.structured).toMatchObject({ files: ["open.ts"], total: 1 })
  })

  test("finding nothing is a normal result", async () => {
    const h = harness({ files: { "a.ts": "" } })
    const { settlement } = await h.settle("glob", { pattern: "*.rs" })
    expect(settlement.status).toBe("success")
    expect(settlement.structured).toEqual({ pattern: "*.rs", path: ".", files: [], total: 0 })
    expect(textOf(settlement)).toBe("No files found matching *.rs in the Location (.).")
  })

  test("an invalid glob fails with ripgrep's reason", async () => {
    const h = harness({ files: { "a.ts": "" } })
    const { settlement } = await h.settle("glob", { pattern: "src/{a,b" })
    expect(settlement.error).toEqual({
      kind: "failure",
      message:
        "Invalid glob \"src/{a,b\": error parsing glob 'src/{a,b': unclosed alternate group; missing '}' " +
        "(maybe escape '{' with '[{]'?).\n" +
        "Glob syntax: * (any characters but /), ** (any directories), ? (one character), [abc], {a,b}.",
    })
  })

  test("a path that is a file, or missing, is a clear failure", async () => {
    const h = harness({ files: { "a.ts": "" } })
    const file = await h.settle("glob", { pattern: "*", path: "a.ts" })
    expect(file.settlement.error?.message).toBe("a.ts is a file, not a directory. glob searches a directory: give its parent, or read the file.")
    const missing = await h.settle("glob", { pattern: "*", path: "nope" })
    expect(missing.settlement.error?.message).toBe("Directory not found: nope. Give an existing directory, or leave path out to search the project.")
  })

  test("lists a name that is not UTF-8 with U+FFFD and says so", async () => {
    const h = harness()
    badName(h.directory, "x")
    const { settlement } = await h.settle("glob", { pattern: "*.txt" })
    expect(settlement.structured).toMatchObject({ files: ["bad\uFFFDname.txt"], notUtf8: ["bad\uFFFDname.txt"], total: 1 })
    expect(textOf(settlement)).toContain("(Not UTF-8, shown with U+FFFD: 1 of these names.)")
  })

  test("returns what it found when rg could not enter a directory, and names the problem", async () => {
    const h = harness({ files: { "found.txt": "" } })
    tooDeep(h.directory)
    const { settlement } = await h.settle("glob", { pattern: "*.txt" })
    expect(settlement.status).toBe("success")
    const output = settlement.structured as Glob.Output
    expect(output.files).toEqual(["found.txt"])
    expect(output.problems).toHaveLength(1)
    expect(output.problems?.[0]).toEndWith("Filename too long (os error 36)")
    expect(textOf(settlement)).toContain("ripgrep reported problems, so the results may be incomplete:")
  })

  test("a denied directory is not searched", async () => {
    const h = harness({ files: { "secret/a.ts": "" }, rules: [{ action: "glob", resource: "secret", effect: "deny" }] })
    const { settlement } = await h.settle("glob", { pattern: "*.ts", path: "secret" })
    expect(settlement.error?.kind).toBe("denied")
    const allowed = await h.settle("glob", { pattern: "*.ts" })
    expect(allowed.settlement.structured).toMatchObject({ files: ["secret/a.ts"] })
  })

  test("a directory outside the Location asks external_directory first", async () => {
    const outside = tempDir()
    writeFileSync(join(outside, "x.ts"), "")
    const h = harness()
    const { settlement, asks } = await h.settle("glob", { pattern: "*.ts", path: outside })
    expect(settlement.status).toBe("declined")
    expect(asks).toEqual([{ action: "external_directory", resources: [`${outside}/*`], save: [`${outside}/*`] }])
    const approved = await h.settle("glob", { pattern: "*.ts", path: outside }, { reply: { reply: "once" } })
    expect(approved.settlement.structured).toMatchObject({ path: outside, files: [join(outside, "x.ts")] })
  })
})

describe("grep", () => {
  test("is case-sensitive, and (?i) ignores case", async () => {
    const h = harness({ files: { "a.txt": "Needle\n" } })
    expect((await h.settle("grep", { pattern: "needle" })).settlement.structured).toMatchObject({ matches: 0 })
    expect((await h.settle("grep", { pattern: "(?i)needle" })).settlement.structured).toMatchObject({ matches: 1 })
  })

  test("groups matching lines by file with line numbers, newest file first", async () => {
    const h = harness({ files: { "old.ts": "needle one\nhay\nneedle two\n", "new.ts": "hay\nneedle three\n", "none.ts": "hay\n" } })
    age(join(h.directory, "old.ts"), 1_000)
    age(join(h.directory, "new.ts"), 2_000)
    const { settlement } = await h.settle("grep", { pattern: "needle" })
    expect(settlement.structured).toEqual({
      pattern: "needle",
      path: ".",
      matches: 3,
      files: 2,
      shown: [
        { path: "new.ts", matches: 1, lines: [{ line: 2, text: "needle three" }] },
        { path: "old.ts", matches: 2, lines: [{ line: 1, text: "needle one" }, { line: 3, text: "needle two" }] },
      ],
      notShown: 0,
    })
    expect(textOf(settlement)).toBe(
      "3 matching lines in 2 files, newest files first:\n\nnew.ts:\n  2: needle three\n\nold.ts:\n  1: needle one\n  3: needle two",
    )
  })

  test("shows limit matching lines, newest files first, and counts the rest exactly", async () => {
    const files: Record<string, string> = {}
    for (let index = 0; index < 30; index++) files[`f${String(index).padStart(2, "0")}.txt`] = "match\n".repeat(5)
    const h = harness({ files })
    for (let index = 0; index < 30; index++) age(join(h.directory, `f${String(index).padStart(2, "0")}.txt`), 1_000 + index)
    const { settlement } = await h.settle("grep", { pattern: "match", limit: 12 })
    const output = settlement.structured as Grep.Output
    expect(output).toMatchObject({ matches: 150, files: 30, notShown: 138 })
    expect(output.shown.map((file) => [file.path, file.lines.length, file.matches])).toEqual([
      ["f29.txt", 5, 5],
      ["f28.txt", 5, 5],
      ["f27.txt", 2, 5],
    ])
    const text = textOf(settlement)
    expect(text).toStartWith("150 matching lines in 30 files; showing 12, newest files first:")
    expect(text).toContain("f27.txt:\n  1: match\n  2: match\n  (3 more in this file not shown)")
    expect(text).toEndWith("(138 matching lines not shown, 27 more files not listed. Narrow the pattern, path or include, or raise limit.)")
  })

  test("shows 100 matching lines by default", async () => {
    const h = harness({ files: { "big.txt": "hit\n".repeat(150) } })
    const { settlement } = await h.settle("grep", { pattern: "hit" })
    const output = settlement.structured as Grep.Output
    expect(output.shown[0]?.lines).toHaveLength(Grep.DEFAULT_LIMIT)
    expect(output).toMatchObject({ matches: 150, notShown: 50 })
  })

  test("include filters files by name glob, braces included", async () => {
    const h = harness({ files: { "a.ts": "x\n", "b.tsx": "x\n", "c.js": "x\n", "deep/d.ts": "x\n" } })
    const ts = await h.settle("grep", { pattern: "x", include: "*.ts" })
    expect((ts.settlement.structured as Grep.Output).shown.map((file) => file.path).sort()).toEqual(["a.ts", "deep/d.ts"])
    const paths = await h.settle("grep", { pattern: "x", include: "deep/*.ts" })
    expect((paths.settlement.structured as Grep.Output).shown.map((file) => file.path)).toEqual(["deep/d.ts"])
    const both = await h.settle("grep", { pattern: "x", include: "*.{ts,tsx}" })
    expect((both.settlement.structured as Grep.Output).shown.map((file) => file.path).sort()).toEqual(["a.ts", "b.tsx", "deep/d.ts"])
    expect(both.settlement.structured).toMatchObject({ include: "*.{ts,tsx}" })
  })

  test("matches $ at the end of CRLF lines and shows lines without their \\r", async () => {
    const h = harness({ files: { "win.txt": "x\r\nax\r\nneedle here\r\nxy\r\nlast x" } })
    const ends = await h.settle("grep", { pattern: "x$" })
    expect(ends.settlement.structured).toMatchObject({
      matches: 3,
      shown: [{ path: "win.txt", lines: [{ line: 1, text: "x" }, { line: 2, text: "ax" }, { line: 5, text: "last x" }] }],
    })
    expect(textOf(ends.settlement)).toBe("3 matching lines in 1 file, newest files first:\n\nwin.txt:\n  1: x\n  2: ax\n  5: last x")
    const inside = await h.settle("grep", { pattern: "needle" })
    expect((inside.settlement.structured as Grep.Output).shown[0]?.lines).toEqual([{ line: 3, text: "needle here" }])
    const whole = await h.settle("grep", { pattern: "^needle here$", path: "win.txt" })
    expect((whole.settlement.structured as Grep.Output).shown[0]?.lines).toEqual([{ line: 3, text: "needle here" }])
  })

  test("a class, a dot or an anchor keeps its CRLF meaning: no \\r matched, ^ and $ at a \\r too", async () => {
    const h = harness({ files: { "win.txt": "x\r\nbar\rfoo\n" } })
    const lines = async (pattern: string) =>
      ((await h.settle("grep", { pattern })).settlement.structured as Grep.Output).shown.flatMap((file) => file.lines.map((line) => line.line))
    // Each of these matches the \r (or the place after a lone \r) unless rg treats CRLF as a line end.
    for (const pattern of ["x\\s", "x.", "x[^a]", "x\\W", "x\\P{L}", "x[[:space:]]"]) expect({ pattern, lines: await lines(pattern) }).toEqual({ pattern, lines: [] })
    expect(await lines("^foo")).toEqual([2])
    expect(await lines("x")).toEqual([1])
  })

  test("a pattern that matches a line ending is refused with a reason", async () => {
    const h = harness({ files: { "win.txt": "x\r\n" } })
    for (const [pattern, character] of [["x\\r", "\\r"], ["a\\nb", "\\n"]] as const) {
      const { settlement } = await h.settle("grep", { pattern })
      expect(settlement.error?.kind).toBe("failure")
      expect(settlement.error?.message).toStartWith(
        `Invalid regular expression ${JSON.stringify(pattern)}: it matches a line-ending character (${character}), ` +
          "but grep matches one line at a time and lines end at \\n or \\r\\n, so no line holds one. Use $ to anchor",
      )
    }
  })

  test("include applies to a single file given as path", async () => {
    const h = harness({ files: { "src/x.ts": "needle\n", "docs/y.md": "needle\n" } })
    const other = await h.settle("grep", { pattern: "needle", path: "src/x.ts", include: "*.md" })
    expect(other.settlement.status).toBe("success")
    expect(other.settlement.structured).toEqual({
      pattern: "needle",
      path: "src/x.ts",
      include: "*.md",
      matches: 0,
      files: 0,
      shown: [],
      notShown: 0,
    })
    expect(textOf(other.settlement)).toBe("No matches for needle in src/x.ts (searching only files matching *.md).")
    const same = await h.settle("grep", { pattern: "needle", path: "src/x.ts", include: "*.{ts,tsx}" })
    expect(same.settlement.structured).toMatchObject({ matches: 1, shown: [{ path: "src/x.ts" }] })
    // A glob with / is matched against the path relative to the Location.
    const byPath = await h.settle("grep", { pattern: "needle", path: "src/x.ts", include: "src/*.ts" })
    expect(byPath.settlement.structured).toMatchObject({ matches: 1 })
    const elsewhere = await h.settle("grep", { pattern: "needle", path: "src/x.ts", include: "docs/*" })
    expect(elsewhere.settlement.structured).toMatchObject({ matches: 0 })
    const invalid = await h.settle("grep", { pattern: "needle", path: "src/x.ts", include: "*.{md" })
    expect(invalid.settlement.error?.message).toStartWith("Invalid include glob \"*.{md\": error parsing glob")
  })

  test("include accepts a leading ./", async () => {
    const h = harness({ files: { "src/x.ts": "needle\n", "lib/src/y.ts": "needle\n" } })
    const { settlement } = await h.settle("grep", { pattern: "needle", include: "./src/*.ts" })
    expect((settlement.structured as Grep.Output).shown.map((file) => file.path)).toEqual(["src/x.ts"])
  })

  test("cuts a matching line after 2,000 characters with a note", async () => {
    const h = harness({ files: { "min.js": `${"a".repeat(3_000)}needle${"b".repeat(1_000)}\n` } })
    const { settlement } = await h.settle("grep", { pattern: "needle" })
    const line = (settlement.structured as Grep.Output).shown[0]?.lines[0]
    expect(line?.text).toBe(`${"a".repeat(2_000)} … [line cut at 2000 characters; it is 4006 bytes long]`)
  })

  test("keeps only the start of a very long line, whatever its size", async () => {
    const h = harness({ files: { "bundle.js": `${"é".repeat(300_000)}needle${"z".repeat(500_000)}\n` } })
    const { settlement } = await h.settle("grep", { pattern: "needle" })
    const line = (settlement.structured as Grep.Output).shown[0]?.lines[0]
    expect(line).toEqual({ line: 1, text: `${"é".repeat(2_000)} … [line cut at 2000 characters; it is 1100006 bytes long]` })
  })

  test("honours .gitignore, includes hidden files and never searches .git", async () => {
    const h = harness({
      files: {
        ".gitignore": "build-output/\n",
        "build-output/x.txt": "needle\n",
        ".env.example": "needle\n",
        ".git/HEAD": "needle\n",
        "src/a.txt": "needle\n",
      },
    })
    const { settlement } = await h.settle("grep", { pattern: "needle" })
    expect((settlement.structured as Grep.Output).shown.map((file) => file.path).sort()).toEqual([".env.example", "src/a.txt"])
  })

  test("honours .gitignore in a Location that is not a git repository", async () => {
    const h = harness({ files: { ".gitignore": "generated/\n", "generated/a.txt": "needle\n", "b.txt": "needle\n" } })
    const { settlement } = await h.settle("grep", { pattern: "needle" })
    expect((settlement.structured as Grep.Output).shown.map((file) => file.path)).toEqual(["b.txt"])
  })

  test("keeps paths and lines holding ':' or a line break intact", async () => {
    const h = harness({ files: { "a:b.txt": "key: value: needle\n", "new\nline.txt": "12: needle\n" } })
    age(join(h.directory, "a:b.txt"), 2_000)
    age(join(h.directory, "new\nline.txt"), 1_000)
    const { settlement } = await h.settle("grep", { pattern: "needle" })
    expect((settlement.structured as Grep.Output).shown).toEqual([
      { path: "a:b.txt", matches: 1, lines: [{ line: 1, text: "key: value: needle" }] },
      { path: "new\nline.txt", matches: 1, lines: [{ line: 1, text: "12: needle" }] },
    ])
  })

  test("a limit past 20,000 is invalid input, for grep and glob alike: what is shown is held whole", async () => {
    const h = harness({ files: { "a.txt": "needle\n" } })
    for (const tool of ["grep", "glob"] as const) {
      const { settlement } = await h.settle(tool, { pattern: tool === "grep" ? "needle" : "*.txt", limit: 100_000_000 })
      expect([tool, settlement.status, settlement.error?.kind]).toEqual([tool, "error", "invalid_input"])
      expect(settlement.error?.message).toContain("at most 20000")
    }
  })

  test("a pattern or glob longer than rg can be given is invalid input, not an operational failure", async () => {
    const h = harness({ files: { "a.txt": "needle\n" } })
    const long = "n".repeat(300_000)
    const calls = [
      ["grep", { pattern: long }],
      ["grep", { pattern: "needle", include: long }],
      ["glob", { pattern: long }],
      ["list", { ignore: Array.from({ length: 3_000 }, (_, index) => `${"x".repeat(1_000)}${index}`) }],
      ["list", { ignore: ["y".repeat(2_000)] }],
    ] as const
    for (const [tool, input] of calls) {
      const { settlement } = await h.settle(tool, input)
      expect([tool, settlement.status, settlement.error?.kind]).toEqual([tool, "error", "invalid_input"])
      expect(settlement.error?.message).toMatch(/at most (16384 characters|100 globs|1024 characters)/)
      // The refusal quotes only the start of the value given: it fits the model's answer, kept nowhere else.
      expect(settlement.error!.message.length).toBeLessThan(1_500)
      expect(settlement.outputs).toEqual([])
    }
  })

  test("counts every match exactly when rg's output spans many chunks", async () => {
    const h = harness({ files: { "a.txt": `${"needle".padEnd(100, ".")}\n`.repeat(19_990), "b.txt": "needle\n".repeat(3) } })
    age(join(h.directory, "a.txt"), 2_000)
    age(join(h.directory, "b.txt"), 1_000)
    const { settlement } = await h.settle("grep", { pattern: "needle", limit: 19_991 })
    // Far over the settlement's bound: the complete structured output is kept in its one managed output.
    expect(settlement.outputs).toHaveLength(1)
    expect(settlement.structured).toBeNull()
    // Kept in the Location's own directory of outputs.
    const kept = readdirSync(join(h.data, "outputs"), { recursive: true })
      .map(String)
      .find((name) => name.endsWith(`${settlement.outputs[0]!.id}.json`))!
    const output = (await Bun.file(join(h.data, "outputs", kept)).json()) as Grep.Output
    expect(output).toMatchObject({ matches: 19_993, files: 2, notShown: 2 })
    expect(output.shown[0]?.lines.map((line) => line.line)).toEqual(Array.from({ length: 19_990 }, (_, index) => index + 1))
    expect(output.shown[0]?.lines.every((line) => line.text === "needle".padEnd(100, "."))).toBe(true)
    expect(output.shown[1]).toEqual({ path: "b.txt", matches: 3, lines: [{ line: 1, text: "needle" }] })
  })

  test("shows lines and names that are not UTF-8 with U+FFFD, and says so", async () => {
    const h = harness({ files: { "latin1.txt": Uint8Array.from([...Buffer.from("caf"), 0xe9, ...Buffer.from(" needle\n")]) } })
    badName(h.directory, "needle")
    const { settlement } = await h.settle("grep", { pattern: "needle" })
    const output = settlement.structured as Grep.Output
    const byPath = Object.fromEntries(output.shown.map((file) => [file.path, file]))
    expect(byPath["latin1.txt"]?.lines).toEqual([{ line: 1, text: "caf\uFFFD needle [not UTF-8: shown with U+FFFD]" }])
    expect(byPath["bad\uFFFDname.txt"]).toMatchObject({ notUtf8: true, lines: [{ line: 1, text: "needle" }] })
    expect(textOf(settlement)).toContain("bad\uFFFDname.txt: (name not UTF-8: shown with U+FFFD)")
  })

  test("no match is a normal result", async () => {
    const h = harness({ files: { "a.txt": "hay\n" } })
    const { settlement } = await h.settle("grep", { pattern: "needle" })
    expect(settlement.status).toBe("success")
    expect(settlement.structured).toMatchObject({ matches: 0, files: 0, shown: [], notShown: 0 })
    expect(textOf(settlement)).toBe("No matches for needle in the Location (.).")
  })

  test("a name holding a line feed is shown quoted by list, glob and grep, never as a line that reads as another entry", async () => {
    const h = harness({ files: { "nl\nname.txt": "needle\n", "a.txt": "needle\n" } })
    const quoted = JSON.stringify("nl\nname.txt")
    for (const [tool, input] of [["list", {}], ["glob", { pattern: "*.txt" }], ["grep", { pattern: "needle" }]] as const) {
      const text = textOf((await h.settle(tool, input)).settlement)
      expect([tool, text.includes(quoted)]).toEqual([tool, true])
      expect([tool, text.split("\n").some((line) => /^\s*name\.txt:?$/.test(line))]).toEqual([tool, false])
    }
  })

  // /proc/kmsg looks like a regular file; rg's read of it waited for the next kernel message, until the call was cancelled.
  test("the kernel's files (/proc, /sys) are not searched: refused at once, saying to read the file instead", async () => {
    const h = harness({ rules: [{ action: "external_directory", resource: "*", effect: "allow" }] })
    for (const path of ["/proc/kmsg", "/proc", "/proc/version", "/sys/kernel", "/sys"]) {
      const started = performance.now()
      const { settlement } = await h.settle("grep", { pattern: "x", path })
      expect([path, settlement.status, settlement.error?.message]).toEqual([
        path,
        "error",
        `${path} is in ${path.startsWith("/proc") ? "/proc" : "/sys"}, the kernel's own files, which grep does not search: some never end ` +
          "(a read waits for the next kernel message) or take what another program should get. Read the file you need with read.",
      ])
      expect(performance.now() - started).toBeLessThan(5_000)
    }
  })

  test("an invalid regular expression fails with ripgrep's reason", async () => {
    const h = harness({ files: { "a.txt": "x\n" } })
    const { settlement } = await h.settle("grep", { pattern: "x[z-a]" })
    expect(settlement.error?.kind).toBe("failure")
    expect(settlement.error?.message).toBe(
      'Invalid regular expression "x[z-a]": invalid character class range, the start must be <= the end\n' +
        "    x[z-a]\n      ^^^\n" +
        "grep uses Rust regex syntax: escape ( ) [ ] { } . * + ? | \\ ^ $ with a backslash to match them literally.",
    )
    const unclosed = await h.settle("grep", { pattern: "foo(bar" })
    expect(unclosed.settlement.error?.message).toStartWith('Invalid regular expression "foo(bar": unclosed group\ngrep uses')
  })

  test("an invalid include glob fails with ripgrep's reason", async () => {
    const h = harness({ files: { "a.txt": "x\n" } })
    const { settlement } = await h.settle("grep", { pattern: "x", include: "*.{ts" })
    expect(settlement.error?.message).toStartWith(
      "Invalid include glob \"*.{ts\": error parsing glob '*.{ts': unclosed alternate group; missing '}'",
    )
  })

  test("returns the matches it found when rg could not enter a directory, and names the problem", async () => {
    const h = harness({ files: { "a.txt": "needle\n" } })
    tooDeep(h.directory)
    const { settlement } = await h.settle("grep", { pattern: "needle" })
    expect(settlement.status).toBe("success")
    const output = settlement.structured as Grep.Output
    expect(output.shown.map((file) => file.path)).toEqual(["a.txt"])
    expect(output.problems?.[0]).toEndWith("Filename too long (os error 36)")
  })

  test("searches one file when path is a file, and says when it is binary", async () => {
    const h = harness({ files: { "one.txt": "x\nneedle\n", "two.txt": "needle\n", "blob.bin": "needle\u0000\n" } })
    const { settlement } = await h.settle("grep", { pattern: "needle", path: "one.txt" })
    expect(settlement.structured).toMatchObject({ path: "one.txt", files: 1, shown: [{ path: "one.txt", lines: [{ line: 2, text: "needle" }] }] })
    const binary = await h.settle("grep", { pattern: "needle", path: "blob.bin" })
    expect(binary.settlement.structured).toMatchObject({
      matches: 0,
      problems: ['blob.bin: binary file matches (found "\\0" byte around offset 6)'],
    })
  })

  test("a missing path or a FIFO is a clear failure, and the FIFO is never opened", async () => {
    const h = harness()
    const missing = await h.settle("grep", { pattern: "x", path: "gone" })
    expect(missing.settlement.error?.message).toBe(
      "Path not found: gone. Give an existing directory or file, or leave path out to search the project.",
    )
    expect(Bun.spawnSync(["mkfifo", join(h.directory, "pipe")]).exitCode).toBe(0)
    const fifo = await h.settle("grep", { pattern: "x", path: "pipe" })
    expect(fifo.settlement.error?.message).toBe(
      "pipe is not a directory or regular file (a FIFO, socket or device); grep searches directories and files.",
    )
  })

  test("a denied path is not searched; a symlink leading out asks external_directory", async () => {
    const outside = tempDir()
    writeFileSync(join(outside, "x.txt"), "needle\n")
    const h = harness({ files: { "private/a.txt": "needle\n" }, rules: [{ action: "grep", resource: "private", effect: "deny" }] })
    const denied = await h.settle("grep", { pattern: "needle", path: "private" })
    expect(denied.settlement.error?.kind).toBe("denied")
    mkdirSync(join(h.directory, "links"))
    symlinkSync(outside, join(h.directory, "links", "out"))
    const { settlement, asks } = await h.settle("grep", { pattern: "needle", path: "links/out" })
    expect(settlement.status).toBe("declined")
    expect(asks).toEqual([{ action: "external_directory", resources: [`${outside}/*`], save: [`${outside}/*`] }])
  })
})
