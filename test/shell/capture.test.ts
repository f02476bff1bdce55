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

  test("keeps no reference to a chunk once push returns: emptying every chunk after its push changes nothing", () => {
    for (const size of [1, 100, 5000, 70_000]) {
      const capture = Capture.make(20_000)
      let expected = ""
      for (let index = 0; index < 40; index++) {
        const chunk = new Uint8Array(size).fill(48 + (index % 10))
        capture.push(chunk)
        chunk.fill(0)
        expected += String(index % 10).repeat(size)
      }
      const captured = capture.finish()
      expect(captured.seen).toBe(expected.length)
      expect(captured.head + captured.tail).toBe(expected.length <= 20_000 ? expected : expected.slice(0, 10_000) + expected.slice(-10_000))
    }
  })

  test("keeps the exact head and tail whatever the chunk sizes, while its tail grows, fills and wraps", () => {
    // A fixed pseudo-random sequence of chunk sizes, from 1 byte to past the whole limit.
    let state = 7
    const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31)
    for (const limit of [2, 999, 40_000, 300_001]) {
      const capture = Capture.make(limit)
      let stream = ""
      for (let index = 0; stream.length < limit * 4; index++) {
        const size = [1, 7, 4096, 65_536, limit + 3][next() % 5]! + (next() % 100)
        const text = String.fromCharCode(97 + (index % 26)).repeat(size)
        capture.push(bytes(text))
        stream += text
        // Partway, what is kept is what a reader of the stream so far would expect.
        const recent = Math.min(100, limit - Math.ceil(limit / 2))
        if (index % 5 === 0) expect(capture.recent(recent)).toBe(stream.slice(-recent))
      }
      const captured = capture.finish()
      const head = Math.ceil(limit / 2)
      expect(captured.head).toBe(stream.slice(0, head))
      expect(captured.tail).toBe(stream.slice(stream.length - (limit - head)))
      expect(captured.gap).toEqual({ offset: head, length: stream.length - limit })
    }
  })

  test("holds no more memory than its limit, however much it is given", () => {
    for (const size of [1, 4096, 180_224, 3_000_000]) {
      const capture = Capture.make(1_048_576)
      const chunk = new Uint8Array(size).fill(120)
      // Several times the limit (one-byte chunks: twice it, a chunk at a time being slow to push).
      const total = size === 1 ? 2 * 1_048_576 : 16 * 1_048_576
      for (let pushed = 0; pushed < total; pushed += size) capture.push(chunk)
      expect(capture.held()).toBeLessThanOrEqual(1_048_576)
      expect(capture.finish().kept).toBe(1_048_576)
    }
  })

  test("holds little for a short stream: its buffers grow with what it keeps", () => {
    const capture = Capture.make(1_048_576)
    capture.push(bytes("hello\n"))
    expect(capture.held()).toBeLessThanOrEqual(16_384)
    expect(capture.finish().text).toBe("hello\n")
  })
})
