export * as ReadPage from "./read-page"

// One page of a text file, read by `read` (./read): lines scanned from a stream through one bounded buffer (long
// lines cut, invalid UTF-8 found), and what the first bytes say of a file that is not text (an image, a binary).

/** Characters of one line shown before it is cut. */
export const MAX_LINE_CHARS = 2_000
/** Enough bytes of a line for MAX_LINE_CHARS characters and one more. */
const LINE_KEEP_BYTES = (MAX_LINE_CHARS + 1) * 4
/** The first block, sniffed for binary content. */
export const SNIFF_BYTES = 8 * 1024
const MAX_CONTROL_RATIO = 0.3

// Pages of text

/** Bytes a text costs in a page: its UTF-8 size plus what JSON escaping adds in the structured output. */
export const pageBytes = (text: string): number => {
  let extra = 0
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (code === 0x22 || code === 0x5c) extra += 1
    else if (code < 0x20) extra += code === 8 || code === 9 || code === 10 || code === 12 || code === 13 ? 1 : 5
  }
  return Buffer.byteLength(text) + extra
}

/** The first `count` code points of `text`, or undefined when it has no more than that. */
const cutAt = (text: string, count: number): string | undefined => {
  if (text.length <= count) return undefined
  let seen = 0
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (code >= 0xd800 && code <= 0xdbff) index++
    if (++seen === count) return index + 1 < text.length ? text.slice(0, index + 1) : undefined
  }
  return undefined
}

const cutNote = (bytes: number) => ` … [line cut at ${MAX_LINE_CHARS} characters; it is ${bytes} bytes long]`

type Invalid = { readonly invalidLine: number }

const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/**
 * Splits streamed bytes into lines, skipping to `offset` by counting line breaks only, then collecting one page
 * of decoded lines within the line and byte budgets. Holds at most one line's first LINE_KEEP_BYTES bytes.
 */
export const scanner = (offset: number, maxLines: number, budget: number) => {
  const page: Array<string> = []
  let pageCost = 0
  let line = 1
  let lineBytes = 0
  let kept: Array<Uint8Array> = []
  let keptBytes = 0
  let phase: "skip" | "collect" | "after" | "count" = offset === 1 ? "collect" : "skip"
  let more = false
  let breaks = 0
  let lastByte = -1

  const finishLine = (): Invalid | undefined => {
    const bytes = kept.length === 1 ? kept[0]! : Buffer.concat(kept)
    kept = []
    keptBytes = 0
    let text: string
    let cut = false
    try {
      if (lineBytes > bytes.length) {
        text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes, { stream: true })
        cut = true
      } else {
        const end = bytes.length > 0 && bytes[bytes.length - 1] === 13 ? bytes.length - 1 : bytes.length
        text = strict.decode(bytes.subarray(0, end))
      }
    } catch {
      return { invalidLine: line }
    }
    const shortened = cutAt(text, MAX_LINE_CHARS)
    if (shortened !== undefined) {
      text = shortened
      cut = true
    }
    if (cut) text += cutNote(lineBytes)
    const cost = pageBytes(text) + String(line).length + 3
    if (page.length > 0 && pageCost + cost > budget) {
      more = true
      phase = "count"
      return undefined
    }
    page.push(text)
    pageCost += cost
    if (page.length >= maxLines) phase = "after"
    return undefined
  }

  const feed = (chunk: Uint8Array): Invalid | undefined => {
    if (chunk.length === 0) return undefined
    lastByte = chunk[chunk.length - 1]!
    let position = 0
    while (position < chunk.length) {
      if (phase === "after") {
        more = true
        phase = "count"
      }
      const newline = chunk.indexOf(10, position)
      if (phase === "count" || phase === "skip") {
        if (newline === -1) {
          lineBytes += chunk.length - position
          break
        }
        breaks++
        line++
        lineBytes = 0
        position = newline + 1
        if (phase === "skip" && line === offset) phase = "collect"
        continue
      }
      const end = newline === -1 ? chunk.length : newline
      if (keptBytes < LINE_KEEP_BYTES && end > position) {
        const piece = chunk.subarray(position, Math.min(end, position + LINE_KEEP_BYTES - keptBytes))
        kept.push(piece.slice())
        keptBytes += piece.length
      }
      lineBytes += end - position
      if (newline === -1) break
      const invalid = finishLine()
      if (invalid !== undefined) return invalid
      breaks++
      line++
      lineBytes = 0
      position = newline + 1
    }
    return undefined
  }

  /** At the end of the file: the last line, if it has no line break. */
  const end = (): Invalid | undefined => (phase === "collect" && lineBytes > 0 ? finishLine() : undefined)

  return {
    feed,
    end,
    page,
    get phase() {
      return phase
    },
    get more() {
      return more
    },
    /** Lines in the file, once it was read to the end. */
    get total() {
      return breaks + (lastByte !== -1 && lastByte !== 10 ? 1 : 0)
    },
  }
}

// Content sniffing

export const IMAGE_SIGNATURES: ReadonlyArray<{ readonly mime: string; readonly matches: (head: Uint8Array) => boolean }> = [
  { mime: "image/png", matches: (head) => startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { mime: "image/jpeg", matches: (head) => startsWith(head, [0xff, 0xd8, 0xff]) },
  { mime: "image/gif", matches: (head) => ascii(head, 0, "GIF87a") || ascii(head, 0, "GIF89a") },
  { mime: "image/webp", matches: (head) => ascii(head, 0, "RIFF") && ascii(head, 8, "WEBP") },
  // Converted to PNG on the way out: no provider takes BMP.
  { mime: "image/bmp", matches: (head) => ascii(head, 0, "BM") && head.length >= 26 },
]

const startsWith = (head: Uint8Array, bytes: ReadonlyArray<number>) =>
  head.length >= bytes.length && bytes.every((byte, index) => head[index] === byte)

const ascii = (head: Uint8Array, at: number, text: string) =>
  head.length >= at + text.length && [...text].every((character, index) => head[at + index] === character.charCodeAt(0))

/** Why the first block looks binary, or undefined when it looks like text. */
export const binaryReason = (head: Uint8Array): string | undefined => {
  const sample = head.subarray(0, SNIFF_BYTES)
  if (sample.includes(0)) return "it contains NUL bytes"
  let control = 0
  for (const byte of sample) {
    if ((byte < 0x20 && byte !== 9 && byte !== 10 && byte !== 12 && byte !== 13 && byte !== 27 && byte !== 8) || byte === 0x7f) {
      control++
    }
  }
  return sample.length > 0 && control / sample.length > MAX_CONTROL_RATIO
    ? `${Math.round((control / sample.length) * 100)}% of its first ${sample.length} bytes are control characters`
    : undefined
}

