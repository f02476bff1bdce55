import { describe, expect, test } from "bun:test"
import { Bound } from "../../src/output/bound"

const reference = { id: "out_abc12345_0123456789abcdef", path: "/data/outputs/out_abc12345_0123456789abcdef" }
const limits = { maxLines: 50, maxBytes: 2_048 }

const within = (text: string, bound: Bound.Limits) => {
  expect(Bound.byteLength(text)).toBeLessThanOrEqual(bound.maxBytes)
  expect(Bound.countLines(text)).toBeLessThanOrEqual(bound.maxLines)
}

describe("Bound", () => {
  test("counts lines the way a reader does", () => {
    expect(Bound.countLines("")).toBe(0)
    expect(Bound.countLines("a")).toBe(1)
    expect(Bound.countLines("a\n")).toBe(1)
    expect(Bound.countLines("a\nb")).toBe(2)
    expect(Bound.countLines("\n\n")).toBe(2)
  })

  test("an output within both limits is not oversized; one over either limit is", () => {
    expect(Bound.exceeds("x".repeat(2_048), limits)).toBe(false)
    expect(Bound.exceeds("x".repeat(2_049), limits)).toBe(true)
    expect(Bound.exceeds("a\n".repeat(50), limits)).toBe(false)
    expect(Bound.exceeds("a\n".repeat(51), limits)).toBe(true)
    // Bytes are UTF-8 bytes, not characters.
    expect(Bound.exceeds("é".repeat(1_025), limits)).toBe(true)
  })

  test("the preview opens with a summary line, keeps the head and the tail, and says how to read the rest", () => {
    const text = Array.from({ length: 1_000 }, (_, index) => `line ${index + 1}`).join("\n")
    const preview = Bound.preview(text, limits, reference)
    within(preview, limits)
    const [summary, ...rest] = preview.split("\n")
    expect(summary).toStartWith("[Output too large to show whole: 1000 lines")
    expect(summary).toContain(reference.path)
    expect(summary).not.toContain("core output")
    const range = /Shown: lines 1-(\d+) and lines (\d+)-1000; left out: lines (\d+)-(\d+) \((\d+) bytes\)/.exec(summary!)
    expect(range).not.toBeNull()
    const [, headLast, tailFirst, from, to, bytes] = range!.map(Number)
    expect(from).toBe(headLast! + 1)
    expect(to).toBe(tailFirst! - 1)
    // The read tool's offset and limit, on the kept text, give exactly the lines left out.
    expect(summary).toContain(`filePath "${reference.path}", offset ${from}, limit ${to! - from! + 1}`)
    const body = rest.join("\n")
    const [head, tail] = body.split(/\n\[…[^\]]*\]\n/)
    expect(head).toBe(text.split("\n").slice(0, headLast).join("\n"))
    expect(tail).toBe(text.split("\n").slice(tailFirst! - 1).join("\n"))
    expect(Bound.byteLength(head!) + Bound.byteLength(tail!) + bytes!).toBe(Bound.byteLength(text) - 1)
  })

  test("under the default bound the preview is about 8 KiB, three quarters of it from the tail", () => {
    const text = Array.from({ length: 100_000 }, (_, index) => `log line ${index + 1} ${"x".repeat(40)}`).join("\n")
    const bound = { maxLines: Bound.DEFAULT_MAX_LINES, maxBytes: Bound.DEFAULT_MAX_BYTES }
    const preview = Bound.preview(text, bound, reference)
    expect(Bound.byteLength(preview)).toBeLessThanOrEqual(Bound.DEFAULT_PREVIEW_BYTES)
    expect(Bound.byteLength(preview)).toBeGreaterThan(Bound.DEFAULT_PREVIEW_BYTES - 512)
    const [, ...rest] = preview.split("\n")
    const [head, tail] = rest.join("\n").split(/\n\[…[^\]]*\]\n/)
    expect(tail).toEndWith("log line 100000 " + "x".repeat(40))
    expect(Bound.byteLength(tail!)).toBeGreaterThan(2.5 * Bound.byteLength(head!))
  })

  test("previewBytes sets the preview's size, never above maxBytes", () => {
    const text = "line of text\n".repeat(50_000)
    const larger = { maxLines: 2_000, maxBytes: 51_200, previewBytes: 20_000 }
    const sized = Bound.preview(text, larger, reference)
    expect(Bound.byteLength(sized)).toBeLessThanOrEqual(20_000)
    expect(Bound.byteLength(sized)).toBeGreaterThan(19_000)
    const small = { maxLines: 2_000, maxBytes: 2_048 }
    const capped = Bound.preview(text, { ...small, previewBytes: 1_000_000 }, reference)
    within(capped, small)
    expect(Bound.byteLength(capped)).toBeGreaterThan(small.maxBytes - 100)
  })

  test("a line cut at the seam is named among the lines left out", () => {
    const text = `${"a".repeat(5_000)}\nlast`
    const preview = Bound.preview(text, limits, reference)
    within(preview, limits)
    expect(preview.split("\n")[0]).toContain("Shown: the start of line 1 and line 2; left out: the rest of line 1 (")
    expect(preview).toEndWith("\nlast")
  })

  // A cut line was named both shown and left out ("Shown: lines 1-2 and line 3; left out: line 3").
  test("a line cut is named by the part of it shown and the part left out", () => {
    const summary = (text: string) => Bound.preview(text, limits, reference).split("\n")[0]!
    expect(summary("x".repeat(5_000_000))).toContain(
      "1 line, 5000000 bytes. Shown: the start and end of line 1; left out: the middle of line 1 (",
    )
    expect(summary(`l1\nl2\n${"y".repeat(100_000)}`)).toContain("Shown: lines 1-2 and the end of line 3; left out: the start of line 3 (")
    expect(summary(`${"a".repeat(3_000)}\nmid\n${"b".repeat(3_000)}`)).toContain(
      "Shown: the start of line 1 and the end of line 3; left out: the rest of line 1, line 2 and the start of line 3 (",
    )
    // Whole lines are named as before, and the read hint names whole lines.
    const lines = summary(Array.from({ length: 400 }, (_, index) => `line ${index}`).join("\n"))
    expect(lines).toMatch(/Shown: lines 1-\d+ and lines \d+-400; left out: lines \d+-\d+ \(/)
    expect(summary(`l1\nl2\n${"y".repeat(100_000)}`)).toContain("offset 3, limit 1")
  })

  test("a single enormous line is cut within the byte limit", () => {
    const text = "x".repeat(5_000_000)
    const preview = Bound.preview(text, limits, reference)
    within(preview, limits)
    expect(preview.split("\n")[1]).toStartWith("xxxx")
    expect(preview).toEndWith("xxxx")
  })

  test("cuts never split a multi-byte character or a surrogate pair", () => {
    const text = "😀é".repeat(20_000)
    const preview = Bound.preview(text, limits, reference)
    within(preview, limits)
    expect(preview).not.toContain("\uFFFD")
    expect(Buffer.from(preview, "utf8").toString("utf8")).toBe(preview)
    for (let index = 0; index < preview.length; index++) {
      const code = preview.charCodeAt(index)
      if (code >= 0xd800 && code <= 0xdbff) expect(preview.charCodeAt(index + 1)).toBeGreaterThanOrEqual(0xdc00)
      if (code >= 0xdc00 && code <= 0xdfff) expect(preview.charCodeAt(index - 1)).toBeLessThanOrEqual(0xdbff)
    }
  })

  test("with the smallest limits and a very long output path, the marker shrinks and still names the output", () => {
    const longReference = { id: reference.id, path: `/${"deep/".repeat(140)}${reference.id}` }
    const smallest = { maxLines: Bound.MIN_MAX_LINES, maxBytes: Bound.MIN_MAX_BYTES }
    const preview = Bound.preview("line\n".repeat(10_000), smallest, longReference)
    within(preview, smallest)
    expect(preview).toContain(longReference.path)
    expect(preview.split("\n")[1]).toBe("line")
  })

  test("the preview never exceeds the bound, whatever the text and limits", () => {
    let seed = 7
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return seed / 2 ** 31
    }
    const pieces = ["a", "é", "😀", "\n", "\n\n", " ", "long line ".repeat(50), "\r\n"]
    for (let round = 0; round < 200; round++) {
      const bound = { maxLines: 8 + Math.floor(random() * 200), maxBytes: 1_024 + Math.floor(random() * 20_000) }
      let text = ""
      const size = Math.floor(random() * 60_000)
      while (text.length < size) text += pieces[Math.floor(random() * pieces.length)]
      if (!Bound.exceeds(text, bound)) continue
      within(Bound.preview(text, bound, reference), bound)
    }
  })
})
