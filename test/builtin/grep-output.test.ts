// grep's reading of rg's output checked against an independent reading of the same search: rg's JSON output
// (another printer of rg's, parsed with JSON.parse), grouped, dated, ordered newest first and cut to the limit
// here, on a real tree (a copy of this repository's sources) with files made to reach every branch of the
// parser: lines longer than the text kept of a line, far longer than a chunk of rg's output, CRLF lines, bytes
// that are not UTF-8 in names and lines, names holding ':' and a line break, a file with thousands of matches.

import { describe, expect, test } from "bun:test"
import { cpSync, readdirSync, statSync, utimesSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { Grep } from "../../src/builtin/grep"
import { Ripgrep } from "../../src/builtin/ripgrep"
import type { Settlement } from "../../src/contract/settlement"
import { harness, type Harness } from "../support/builtin"

const ROOT = join(import.meta.dir, "../..")
const KEEP_BYTES = (Grep.MAX_LINE_CHARS + 1) * 4

/**
 * Where a call of `limit` cuts its lines, as the description states: 2,000 characters, or 4 million divided by the
 * limit where that is less, never below 200.
 */
const cutFor = (limit: number): number => Math.min(2_000, Math.max(200, Math.floor(4_000_000 / limit)))

/** A line as grep shows it (its bytes without the LF), by the rules its description states, cut at `cut`. */
const shownLine = (bytes: Uint8Array, cut: number): string => {
  const length = bytes.length
  const whole = length <= KEEP_BYTES
  let view = whole ? bytes : bytes.subarray(0, KEEP_BYTES)
  if (whole && view[view.length - 1] === 0x0d) view = view.subarray(0, -1)
  let text: string
  let utf8 = true
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(view, { stream: !whole })
  } catch {
    text = new TextDecoder("utf-8", { ignoreBOM: true }).decode(view)
    utf8 = false
  }
  if (!whole || text.length > cut) {
    let at = Math.min(text.length, cut)
    const last = text.charCodeAt(at - 1)
    if (last >= 0xd800 && last <= 0xdbff) at--
    text = `${text.slice(0, at)} … [line cut at ${cut} characters; it is ${length} bytes long]`
  }
  return utf8 ? text : `${text} [not UTF-8: shown with U+FFFD]`
}

const bytesOf = (field: { text?: string; bytes?: string }): Uint8Array =>
  field.text !== undefined ? Buffer.from(field.text) : Buffer.from(field.bytes!, "base64")

/** What grep should answer for `pattern` over the whole Location with `limit`, from rg's JSON output. */
const expected = async (directory: string, pattern: string, limit: number): Promise<Grep.Output> => {
  const rg = await Effect.runPromise(Ripgrep.executable)
  const child = Bun.spawn([rg, ...Ripgrep.COMMON_FLAGS, "--json", "--crlf", `--regexp=${pattern}`, "--", "."], {
    cwd: directory,
    stdout: "pipe",
    stderr: "pipe",
  })
  const printed = await new Response(child.stdout).text()
  await child.exited
  const files = new Map<string, { path: string; utf8: boolean; modified: number; lines: Array<{ line: number; bytes: Uint8Array }> }>()
  for (const line of printed.split("\n")) {
    if (line === "") continue
    const message = JSON.parse(line) as { type: string; data: any }
    if (message.type !== "match") continue
    const relative = bytesOf(message.data.path)
    const absolute = Buffer.concat([Buffer.from(directory), relative.subarray(1)])
    const key = absolute.toString("base64")
    let file = files.get(key)
    if (file === undefined) {
      let path: string
      let utf8 = true
      try {
        path = new TextDecoder("utf-8", { fatal: true }).decode(absolute)
      } catch {
        path = new TextDecoder().decode(absolute)
        utf8 = false
      }
      file = { path, utf8, modified: statSync(utf8 ? path : absolute).mtimeMs, lines: [] }
      files.set(key, file)
    }
    const text = bytesOf(message.data.lines)
    file.lines.push({ line: message.data.line_number, bytes: text.subarray(0, text[text.length - 1] === 0x0a ? -1 : undefined) })
  }
  const ordered = [...files.values()].sort(
    (a, b) => b.modified - a.modified || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0),
  )
  const matches = ordered.reduce((sum, file) => sum + file.lines.length, 0)
  let remaining = limit
  const shown: Array<Grep.Output["shown"][number]> = []
  for (const file of ordered) {
    if (remaining === 0) break
    const lines = file.lines.slice(0, remaining).map((line) => ({ line: line.line, text: shownLine(line.bytes, cutFor(limit)) }))
    remaining -= lines.length
    shown.push({
      path: file.path.slice(directory.length + 1),
      matches: file.lines.length,
      lines,
      ...(file.utf8 ? {} : { notUtf8: true }),
    })
  }
  return { pattern, path: ".", matches, files: files.size, shown, notShown: matches - (limit - remaining) }
}

/** The structured output of a grep, read from its managed output when the settlement bounded it. */
const outputOf = async (h: Harness, settlement: Settlement.Info): Promise<Grep.Output> => {
  expect(settlement.status).toBe("success")
  if (settlement.structured !== null) return settlement.structured as Grep.Output
  const kept = readdirSync(join(h.data, "outputs"), { recursive: true })
    .map(String)
    .find((name) => name.endsWith(`${settlement.outputs[0]!.id}.json`))!
  return (await Bun.file(join(h.data, "outputs", kept)).json()) as Grep.Output
}

/** A line of `size` bytes holding `needle` at its start and middle, padded with a 3-byte character. */
const longLine = (size: number, end = "\n") => {
  const filler = "€".repeat(Math.ceil(size / 3))
  return Buffer.concat([Buffer.from("needle "), Buffer.from(filler).subarray(0, size), Buffer.from(` needle${end}`)])
}

describe("grep reads rg's output as rg's JSON output reads", () => {
  const h = harness()
  cpSync(join(ROOT, "src"), join(h.directory, "src"), { recursive: true })
  cpSync(join(ROOT, "test", "builtin"), join(h.directory, "test"), { recursive: true })
  h.write({
    // Just under, at and over the text kept of a line; a multi-byte character across the cut.
    "long/under.txt": longLine(KEEP_BYTES - 20),
    "long/over.txt": longLine(KEEP_BYTES + 1),
    "long/over-crlf.txt": longLine(KEEP_BYTES + 5, "\r\n"),
    // Far longer than any chunk of rg's output, twice, and with bytes that are not UTF-8 past the text kept.
    "long/minified.js": Buffer.concat([longLine(600_000), longLine(300_000), Buffer.from([0xff, 0xfe]), Buffer.from(" needle\n")]),
    "long/bad-late.txt": Buffer.concat([longLine(KEEP_BYTES + 100, ""), Buffer.from([0xff]), Buffer.from("\n")]),
    "crlf.txt": "needle one\r\nno\r\nneedle two\r\n",
    "latin1.txt": Uint8Array.from([...Buffer.from("caf"), 0xe9, ...Buffer.from(" needle\n")]),
    "a:b.txt": "key: needle: value\n",
    "new\nline.txt": "12: needle\n",
    "many.txt": Array.from({ length: 6_000 }, (_, index) => `${index % 3 === 0 ? "needle" : "other"} ${index}\n`).join(""),
    "empty-match.txt": "needle\n\nneedle\n",
  })
  expect(
    Bun.spawnSync(["bash", "-c", `printf 'needle\\n' > "$0/bad$(printf '\\377')name.txt"`, h.directory]).exitCode,
  ).toBe(0)
  // Distinct times for some files, equal times for others (ordered by path then).
  let second = 1_700_000_000
  for (const name of ["many.txt", "crlf.txt", "long/minified.js", "a:b.txt"]) {
    second += 10
    utimesSync(join(h.directory, name), second, second)
  }
  for (const name of ["long/under.txt", "long/over.txt", "long/over-crlf.txt", "long/bad-late.txt"]) {
    utimesSync(join(h.directory, name), 1_600_000_000, 1_600_000_000)
  }

  const cases: ReadonlyArray<readonly [string, number]> = [
    ["needle", 1],
    ["needle", 7],
    ["needle", 100],
    ["needle", 5_000],
    // Lines cut shorter, to keep the whole result within 4 million characters.
    ["needle", 20_000],
    ["export const", 100],
    ["export const", 3_000],
    ["Effect\\.gen", 10],
    ["^\\s*//", 250],
    ["(?i)TAGGEDERROR", 40],
    ["$", 20],
  ]
  for (const [pattern, limit] of cases) {
    test(`${pattern}, limit ${limit}`, async () => {
      const want = await expected(h.directory, pattern, limit)
      expect(want.matches).toBeGreaterThan(0)
      const { settlement } = await h.settle("grep", { pattern, limit })
      expect(await outputOf(h, settlement)).toEqual(want)
    })
  }

  test("the long lines are cut as the rules say, whatever the chunks they came in", async () => {
    const { settlement } = await h.settle("grep", { pattern: "needle", path: "long", limit: 100 })
    const output = await outputOf(h, settlement)
    const lines = Object.fromEntries(output.shown.map((file) => [file.path, file.lines.map((line) => line.text)]))
    expect(lines["long/minified.js"]).toHaveLength(3)
    expect(lines["long/minified.js"]![0]).toEndWith(`… [line cut at 2000 characters; it is ${Buffer.byteLength(longLine(600_000)) - 1} bytes long]`)
    expect(lines["long/minified.js"]![2]).toBe("\uFFFD\uFFFD needle [not UTF-8: shown with U+FFFD]")
    // Bytes that are not UTF-8 past the text kept of a line are not looked at.
    expect(lines["long/bad-late.txt"]![0]).toEndWith(`[line cut at 2000 characters; it is ${KEEP_BYTES + 100 + 15} bytes long]`)
    expect(lines["long/under.txt"]![0]!.startsWith("needle €€")).toBe(true)
  })
})
