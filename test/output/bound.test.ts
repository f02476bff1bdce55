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

  test("the preview keeps the head and the tail and says what was omitted and how to read it", () => {
    const text = Array.from({ length: 1_000 }, (_, index) => `line ${index + 1}`).join("\n")
    const preview = Bound.preview(text, limits, reference)
    within(preview, limits)
    expect(preview).toStartWith("line 1\nline 2\n")
    expect(preview).toEndWith("line 999\nline 1000")
    expect(preview).toContain(reference.id)
    expect(preview).toContain(reference.path)
    expect(preview).toContain(`core output ${reference.id}`)
    const omitted = /\[… (\d+) lines \((\d+) of (\d+) bytes\) omitted/.exec(preview)
    expect(omitted).not.toBeNull()
    expect(Number(omitted![3])).toBe(Bound.byteLength(text))
    // What is shown plus what is said to be omitted is the whole text.
    const [head, tail] = preview.split(/\n\n\[…[^\]]*\]\n\n/)
    expect(Bound.byteLength(head!) + Bound.byteLength(tail!) + Number(omitted![2])).toBe(Bound.byteLength(text))
    expect(text.startsWith(head!)).toBe(true)
    expect(text.endsWith(tail!)).toBe(true)
  })

  test("a single enormous line is cut within the byte limit", () => {
    const text = "x".repeat(5_000_000)
    const preview = Bound.preview(text, limits, reference)
    within(preview, limits)
    expect(preview).toStartWith("xxxx")
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
    expect(preview).toContain(`core output ${reference.id}`)
    expect(preview).toStartWith("line\n")
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
