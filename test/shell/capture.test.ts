// The producer's capture (DESIGN §2 law 11): head and tail within the limit, every byte counted, and the bytes
// not kept reported exactly; never complete after a drop.

import { describe, expect, test } from "bun:test"
import { Capture } from "../../src/shell/capture"

const bytes = (text: string) => new TextEncoder().encode(text)

/** The stream `0123456789` repeated to `length` bytes. */
const digits = (length: number) => Array.from({ length }, (_, index) => String(index % 10)).join("")

const feed = (capture: Capture.Capture, text: string, chunk: number) => {
  for (let at = 0; at < text.length; at += chunk) capture.push(bytes(text.slice(at, at + chunk)))
}

describe("Capture", () => {
  test("keeps a stream within the limit whole and says it is complete", () => {
    const capture = Capture.make(100)
    feed(capture, digits(100), 7)
    const captured = capture.finish()
    expect(captured).toEqual({ text: digits(100), head: digits(100), tail: "", seen: 100, kept: 100, gap: undefined })
  })

  test("keeps the first and last halves of a longer stream and reports the gap exactly", () => {
    const stream = digits(25_000)
    for (const chunk of [1, 3, 100, 4096, 10_000, 25_000]) {
      const capture = Capture.make(1000)
      feed(capture, stream, chunk)
      const captured = capture.finish()
      expect(captured.seen).toBe(25_000)
      expect(captured.kept).toBe(1000)
      expect(captured.gap).toEqual({ offset: 500, length: 24_000 })
      expect(captured.head).toBe(stream.slice(0, 500))
      expect(captured.tail).toBe(stream.slice(-500))
      expect(captured.text).toBe(stream.slice(0, 500) + stream.slice(-500))
    }
  })

  test("an odd limit gives the head the extra byte", () => {
    const capture = Capture.make(5)
    feed(capture, "abcdefghij", 10)
    expect(capture.finish()).toMatchObject({ head: "abc", tail: "ij", kept: 5, gap: { offset: 3, length: 5 } })
  })

  test("one byte over the limit is a gap of one byte, not a complete capture", () => {
    const capture = Capture.make(10)
    feed(capture, digits(11), 4)
    const captured = capture.finish()
    expect(captured.gap).toEqual({ offset: 5, length: 1 })
    expect(captured.kept).toBe(10)
    expect(captured.seen - captured.kept).toBe(captured.gap!.length)
  })

  test("a character cut by the gap is dropped whole and counted in the gap", () => {
    // "é" is two bytes. Stream: a b é b c d é f g = 11 bytes; the head's 3 bytes end inside the first é and the
    // tail's 3 bytes start inside the last one.
    const capture = Capture.make(6)
    feed(capture, "abébcdéfg", 2)
    const captured = capture.finish()
    expect(captured.seen).toBe(11)
    expect(captured.head).toBe("ab")
    expect(captured.tail).toBe("fg")
    expect(captured.kept).toBe(4)
    expect(captured.gap).toEqual({ offset: 2, length: 7 })
    expect(captured.text).not.toContain("\uFFFD")
  })

  test("counts bytes it cannot keep at all when the limit leaves no tail", () => {
    const capture = Capture.make(1)
    feed(capture, "abc", 1)
    expect(capture.finish()).toMatchObject({ text: "a", seen: 3, kept: 1, gap: { offset: 1, length: 2 } })
  })

  test("recent answers the latest bytes, across the head while nothing was dropped", () => {
    const capture = Capture.make(1000)
    feed(capture, digits(600), 50)
    expect(capture.recent(120)).toBe(digits(600).slice(-120))
    feed(capture, "x".repeat(10_000), 7)
    expect(capture.recent(30)).toBe("x".repeat(30))
    expect(capture.seen()).toBe(10_600)
  })

  test("tells each pushed chunk's release once it keeps no reference to it, never one it still keeps", () => {
    for (const size of [1, 100, 5000, 70_000]) {
      const released: Array<Uint8Array> = []
      const capture = Capture.make(20_000, (chunk) => released.push(chunk))
      const chunks = Array.from({ length: 40 }, (_, index) => new Uint8Array(size).fill(48 + (index % 10)))
      for (const chunk of chunks) capture.push(chunk)
      const buffers = released.map((chunk) => chunk.buffer)
      // Never told twice, never told of a buffer it did not get.
      expect(new Set(buffers).size).toBe(buffers.length)
      for (const buffer of buffers) expect(chunks.some((chunk) => chunk.buffer === buffer)).toBe(true)
      // What it was not told of, it may still keep: emptying those would change what it reports.
      for (const chunk of chunks) if (buffers.includes(chunk.buffer)) chunk.fill(0)
      const expected = chunks.map((chunk, index) => String(index % 10).repeat(size)).join("")
      const captured = capture.finish()
      expect(captured.seen).toBe(expected.length)
      expect(captured.head + captured.tail).toBe(expected.length <= 20_000 ? expected : expected.slice(0, 10_000) + expected.slice(-10_000))
      // Every chunk but the few the tail holds was let go.
      expect(buffers.length).toBeGreaterThanOrEqual(chunks.length - Math.ceil(10_000 / size) - 1)
    }
  })
})
