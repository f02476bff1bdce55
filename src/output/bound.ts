export * as Bound from "./bound"

// Pure bounding of model-facing text: measuring against a line and byte limit, and building the marker + head +
// tail preview that replaces an oversized text. The limits say when a text is bounded; the preview is smaller
// (about 8 KiB, three quarters of it from the tail, where a log's causes usually are) and never exceeds them. Nothing here touches disk:
// keeping the full text is ../output/managed's job, and choosing what to bound is ./output's.

export interface Limits {
  readonly maxLines: number
  readonly maxBytes: number
  /** The size a preview aims at (UTF-8 bytes, marker included), at most maxBytes. */
  readonly previewBytes?: number
}

export const DEFAULT_MAX_LINES = 2_000
export const DEFAULT_MAX_BYTES = 51_200
/** Below these a preview cannot hold its own marker plus some context. */
export const MIN_MAX_LINES = 8
export const MIN_MAX_BYTES = 1_024
export const DEFAULT_PREVIEW_BYTES = 8_192
/** The share of a preview's room given to the head; the rest goes to the tail. */
const HEAD_SHARE = 0.25

export const byteLength = (text: string): number => Buffer.byteLength(text, "utf8")

/** Number of lines: line breaks, plus one for a last line without a trailing break. */
export const countLines = (text: string, stopAfter = Infinity): number => {
  let lines = 0
  let index = text.indexOf("\n")
  while (index !== -1) {
    if (++lines > stopAfter) return lines
    index = text.indexOf("\n", index + 1)
  }
  return text.length > 0 && !text.endsWith("\n") ? lines + 1 : lines
}

export const exceeds = (text: string, limits: Limits): boolean =>
  byteLength(text) > limits.maxBytes || countLines(text, limits.maxLines) > limits.maxLines

/** Where the full text went: rendered into the marker so the model can read the rest with the read tool. */
export interface Reference {
  readonly id: string
  /** The kept text's file: its line numbers are the original text's. */
  readonly path: string
  /** Whether the text itself is what a producer captured after losing bytes (so "whole" would overclaim). */
  readonly lossy?: boolean
  /** Whether the text is kept on this host only: the object store other hosts read from could not take it. */
  readonly unshared?: boolean
  /** Why the text was not kept at all (ManagedOutputs.NotKept): the preview is all there is. */
  readonly notKept?: string
}

/** What a preview left out, in the kept text's own line numbers (1-based, inclusive). */
interface Omitted {
  readonly totalLines: number
  readonly totalBytes: number
  /** The lines shown at the head: 1..headLast (the last one may be cut). */
  readonly headLast: number
  /** The lines shown at the tail: tailFirst..totalLines (the first one may be cut). */
  readonly tailFirst: number
  /** The first and last line not shown in full. */
  readonly from: number
  readonly to: number
  /** Whether the head ends inside line `headLast`, and the tail starts inside line `tailFirst` (a line too long). */
  readonly headCut: boolean
  readonly tailCut: boolean
  readonly bytes: number
}

/** The full marker's summary of a text that was not kept: what was left out, why, and how to see it instead. */
const notKeptSummary = (omitted: Omitted, why: string) =>
  `[Output too large to show whole: ${linesCount(omitted.totalLines)}, ${omitted.totalBytes} bytes. Shown: ` +
  `${shown(omitted)}; left out: ${leftOut(omitted)} (${omitted.bytes} bytes), which was not kept: ` +
  `${why}. To see more of it, make a call that returns less (filter a command's output with grep, head or tail; read ` +
  `a range).]\n`

const linesCount = (lines: number) => (lines === 1 ? "1 line" : `${lines} lines`)

const lineRange = (from: number, to: number) => (from === to ? `line ${from}` : `lines ${from}-${to}`)

/** A read of the omitted range: read takes at most MAX_READ_LINES lines a page. */
const MAX_READ_LINES = 2_000

/**
 * The markers in three sizes, each a summary line (first) and a short line where the text was cut: the full one
 * saying how to read the rest with the read tool, one with the path only, and a last resort for tiny limits.
 */
const markers = [
  (omitted: Omitted, reference: Reference) => ({
    summary: reference.notKept !== undefined ? notKeptSummary(omitted, reference.notKept) :
      `[Output too large to show whole: ${linesCount(omitted.totalLines)}, ${omitted.totalBytes} bytes. Shown: ` +
      `${shown(omitted)}; left out: ${leftOut(omitted)} (${omitted.bytes} bytes). ` +
      (reference.lossy === true
        ? `The text as captured (the capture had already lost bytes; the text says where) is kept in `
        : `The whole text is kept in `) +
      (reference.unshared === true ? `this host's files only (the shared object store could not take it), at ` : ``) +
      `${reference.path}: read the rest with the read tool (filePath "${reference.path}", offset ` +
      `${omitted.from}, limit ${Math.min(MAX_READ_LINES, omitted.to - omitted.from + 1)}), or search it with grep. ` +
      `Do not run the call again to see it.]\n`,
    // The summary already says where the rest is: the cut only marks the place.
    cut: `[… ${leftOut(omitted)} left out …]\n`,
  }),
  (omitted: Omitted, reference: Reference) => ({
    summary:
      `[Output too large: ${linesCount(omitted.totalLines)}, ${omitted.totalBytes} bytes; ` +
      `${leftOut(omitted)} left out, ` +
      (reference.notKept !== undefined
        ? `not kept (no room for outputs)]\n`
        : `kept${reference.lossy === true ? " as captured" : ""}` +
          `${reference.unshared === true ? " on this host only" : ""} in ${reference.path}]\n`),
    cut: `[… ${leftOut(omitted)} left out …]\n`,
  }),
  (omitted: Omitted, reference: Reference) => ({
    summary: `[${omitted.bytes} bytes left out; ${reference.notKept !== undefined ? "not kept" : `kept in ${reference.path}`}]\n`,
    cut: "[…]\n",
  }),
] as const

/** Parts of a sentence, joined as "a", "a and b", "a, b and c". */
const listed = (parts: ReadonlyArray<string>): string =>
  parts.length <= 1 ? (parts[0] ?? "") : `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}`

/** What the preview shows, a line it cut named as the part of it shown ("the start of line 3"). */
const shown = (omitted: Omitted): string => {
  const { headLast, tailFirst, totalLines, headCut, tailCut } = omitted
  const parts: Array<string> = []
  const hasTail = tailFirst <= totalLines
  const oneLineCut = headCut && tailCut && headLast === tailFirst
  if (headLast > 0) {
    const whole = headCut ? headLast - 1 : headLast
    if (whole > 0) parts.push(lineRange(1, whole))
    if (headCut && !oneLineCut) parts.push(`the start of line ${headLast}`)
  }
  if (oneLineCut) parts.push(`the start and end of line ${headLast}`)
  if (hasTail) {
    if (tailCut && !oneLineCut) parts.push(`the end of line ${tailFirst}`)
    const first = tailCut ? tailFirst + 1 : tailFirst
    if (first <= totalLines) parts.push(lineRange(first, totalLines))
  }
  return listed(parts) || "nothing"
}

/** What the preview leaves out, a line it cut named as the part of it left out ("the rest of line 3"). */
const leftOut = (omitted: Omitted): string => {
  const { from, to, headLast, tailFirst, headCut, tailCut } = omitted
  const restOfHead = headCut && from === headLast
  const startOfTail = tailCut && to === tailFirst
  if (from === to && restOfHead && startOfTail) return `the middle of line ${from}`
  const parts: Array<string> = []
  if (restOfHead) parts.push(`the rest of line ${from}`)
  const first = restOfHead ? from + 1 : from
  const last = startOfTail ? to - 1 : to
  if (first <= last) parts.push(lineRange(first, last))
  if (startOfTail) parts.push(`the start of line ${to}`)
  return listed(parts)
}

type Marker = (typeof markers)[number]

/** The largest prefix of `text` (in UTF-16 units) whose UTF-8 size is at most `bytes`, not splitting a pair. */
const prefixWithin = (text: string, bytes: number): number => {
  if (byteLength(text) <= bytes) return text.length
  let low = 0
  let high = Math.min(text.length, bytes)
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (byteLength(text.slice(0, middle)) <= bytes) low = middle
    else high = middle - 1
  }
  if (low > 0 && isHighSurrogate(text.charCodeAt(low - 1))) low--
  return low
}

/** The smallest start index such that `text.slice(start)` is at most `bytes` in UTF-8, not splitting a pair. */
const suffixWithin = (text: string, bytes: number): number => {
  if (byteLength(text) <= bytes) return 0
  let low = Math.max(0, text.length - bytes)
  let high = text.length
  while (low < high) {
    const middle = Math.floor((low + high) / 2)
    if (byteLength(text.slice(middle)) <= bytes) high = middle
    else low = middle + 1
  }
  if (low < text.length && isLowSurrogate(text.charCodeAt(low))) low++
  return low
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff

/**
 * End index of a head of at most `lines` whole lines and `bytes` bytes; only a first line too long to fit whole
 * is cut (so the lines left out are whole lines a reader can ask for by number).
 */
const headEnd = (text: string, lines: number, bytes: number): number => {
  let end = 0
  let used = 0
  for (let taken = 0; taken < lines && end < text.length; taken++) {
    const lineBreak = text.indexOf("\n", end)
    const next = lineBreak === -1 ? text.length : lineBreak + 1
    const size = byteLength(text.slice(end, next))
    if (used + size > bytes) return taken > 0 ? end : end + prefixWithin(text.slice(end, next), bytes - used)
    used += size
    end = next
  }
  return end
}

/** Start index of a tail of at most `lines` whole lines and `bytes` bytes (as headEnd), never before `floor`. */
const tailStart = (text: string, lines: number, bytes: number, floor: number): number => {
  let start = text.length
  let used = 0
  for (let taken = 0; taken < lines && start > floor; taken++) {
    const lineBreak = start >= 2 ? text.lastIndexOf("\n", start - 2) : -1
    const previous = Math.max(lineBreak + 1, floor)
    const line = text.slice(previous, start)
    const size = byteLength(line)
    if (used + size > bytes) return taken > 0 ? start : previous + suffixWithin(line, bytes - used)
    used += size
    start = previous
  }
  return start
}

const countBreaks = (text: string, from: number, to: number): number => {
  let count = 0
  let index = text.indexOf("\n", from)
  while (index !== -1 && index < to) {
    count++
    index = text.indexOf("\n", index + 1)
  }
  return count
}

/**
 * What a head ending at `head` and a tail starting at `tail` leave out of `text`, which has `totalBreaks` line
 * breaks. Only the head and the tail are scanned: both are small, the text may be huge.
 */
const omittedOf = (
  text: string,
  head: number,
  tail: number,
  totals: { readonly lines: number; readonly bytes: number; readonly breaks: number },
): Omitted => {
  const { lines: totalLines, bytes: totalBytes } = totals
  const headCut = head > 0 && text.charCodeAt(head - 1) !== 10
  const tailCut = tail < text.length && tail > 0 && text.charCodeAt(tail - 1) !== 10
  const headLast = head === 0 ? 0 : countBreaks(text, 0, head - 1) + 1
  const tailFirst = tail >= text.length ? totalLines + 1 : totals.breaks - countBreaks(text, tail, text.length) + 1
  return {
    totalLines,
    totalBytes,
    headLast,
    tailFirst,
    from: headCut ? headLast : headLast + 1,
    to: Math.min(totalLines, tailCut ? tailFirst : tailFirst - 1),
    headCut,
    tailCut,
    bytes: totalBytes - byteLength(text.slice(0, head)) - byteLength(text.slice(tail)),
  }
}

/**
 * A preview of an oversized `text`: a summary line saying what was left out and how to read it, then as much of
 * its head (a quarter) and tail (the rest) as fits in `previewBytes` around a short line where it was cut.
 * Guaranteed within `limits` (lines and bytes).
 */
export const preview = (text: string, limits: Limits, reference: Reference): string => {
  const totalBytes = byteLength(text)
  const totalBreaks = countBreaks(text, 0, text.length)
  const totalLines = text.length > 0 && !text.endsWith("\n") ? totalBreaks + 1 : totalBreaks
  const totals = { lines: totalLines, bytes: totalBytes, breaks: totalBreaks }
  // The largest marker that leaves room for context: sized with the largest numbers it can show.
  const widestOmitted: Omitted = {
    totalLines,
    totalBytes,
    headLast: totalLines,
    tailFirst: totalLines,
    from: totalLines,
    to: totalLines,
    headCut: true,
    tailCut: true,
    bytes: totalBytes,
  }
  const sizeOf = (marker: Marker) => {
    const { summary, cut } = marker(widestOmitted, reference)
    // One more byte for the line break before the cut when the head ends inside a line.
    return { bytes: byteLength(summary) + byteLength(cut) + 1, lines: countLines(summary) + countLines(cut) }
  }
  const room = Math.max(MIN_MAX_BYTES, Math.min(limits.maxBytes, limits.previewBytes ?? DEFAULT_PREVIEW_BYTES))
  const marker: Marker =
    markers.find((candidate) => sizeOf(candidate).bytes * 2 <= room) ?? markers[markers.length - 1]!
  const widest = sizeOf(marker)
  let budgetBytes = room - widest.bytes
  let budgetLines = limits.maxLines - widest.lines
  for (;;) {
    const headLines = Math.max(1, Math.ceil(budgetLines * HEAD_SHARE))
    const head = Math.max(0, headEnd(text, headLines, Math.floor(budgetBytes * HEAD_SHARE)))
    const tail = tailStart(text, budgetLines - headLines, budgetBytes - byteLength(text.slice(0, head)), head)
    const { summary, cut } = marker(omittedOf(text, head, tail, totals), reference)
    const seam = head > 0 && text.charCodeAt(head - 1) !== 10 ? "\n" : ""
    const result = summary + text.slice(0, head) + seam + cut + text.slice(tail)
    if (byteLength(result) <= room && countLines(result) <= limits.maxLines) return result
    // Joining head and tail can merge or split a line at the seams; shrink and try again.
    budgetBytes -= 16
    budgetLines -= 1
    if (budgetBytes <= 0 || budgetLines <= 0) {
      return marker(omittedOf(text, 0, text.length, totals), reference).summary.trim()
    }
  }
}
