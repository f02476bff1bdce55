export * as Bound from "./bound"

// Pure bounding of model-facing text: measuring against a line and byte limit, and building the head + marker +
// tail preview that replaces an oversized text. The preview never exceeds the limits. Nothing here touches disk:
// keeping the full text is ../output/managed's job, and choosing what to bound is ./output's.

export interface Limits {
  readonly maxLines: number
  readonly maxBytes: number
}

export const DEFAULT_MAX_LINES = 2_000
export const DEFAULT_MAX_BYTES = 51_200
/** Below these a preview cannot hold its own marker plus some context. */
export const MIN_MAX_LINES = 8
export const MIN_MAX_BYTES = 1_024

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

/** Where the full text went and how to read it; rendered into the marker. */
export interface Reference {
  readonly id: string
  readonly path: string
}

/** The marker in three sizes: the full one, one without the path, and a last resort for very small limits. */
const markers = [
  (lines: number, bytes: number, total: number, reference: Reference) =>
    `\n\n[… ${lines} lines (${bytes} of ${total} bytes) omitted here. ` +
    `The full output is kept as ${reference.id} at ${reference.path}: read a range of it with the read tool ` +
    `(offset/limit), search it with grep, or print it with \`core output ${reference.id}\`. ` +
    `Do not re-run the call to see it.]\n\n`,
  (lines: number, bytes: number, total: number, reference: Reference) =>
    `\n\n[… ${lines} lines (${bytes} of ${total} bytes) omitted here. ` +
    `The full output is kept as ${reference.id}: print it with \`core output ${reference.id}\`.]\n\n`,
  (_lines: number, bytes: number, _total: number, reference: Reference) =>
    `\n[… ${bytes} bytes omitted: core output ${reference.id}]\n`,
] as const

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

/** End index of a head of at most `lines` lines and `bytes` bytes; a line too long to fit whole is cut. */
const headEnd = (text: string, lines: number, bytes: number): number => {
  let end = 0
  let used = 0
  for (let taken = 0; taken < lines && end < text.length; taken++) {
    const lineBreak = text.indexOf("\n", end)
    const next = lineBreak === -1 ? text.length : lineBreak + 1
    const size = byteLength(text.slice(end, next))
    if (used + size > bytes) return end + prefixWithin(text.slice(end, next), bytes - used)
    used += size
    end = next
  }
  return end
}

/** Start index of a tail of at most `lines` lines and `bytes` bytes, never before `floor`. */
const tailStart = (text: string, lines: number, bytes: number, floor: number): number => {
  let start = text.length
  let used = 0
  for (let taken = 0; taken < lines && start > floor; taken++) {
    const lineBreak = start >= 2 ? text.lastIndexOf("\n", start - 2) : -1
    const previous = Math.max(lineBreak + 1, floor)
    const line = text.slice(previous, start)
    const size = byteLength(line)
    if (used + size > bytes) return previous + suffixWithin(line, bytes - used)
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
 * A preview of an oversized `text`: as much of its head and tail as fits, around a marker that states what was
 * omitted and how to read the rest. Guaranteed within `limits` (both lines and bytes).
 */
export const preview = (text: string, limits: Limits, reference: Reference): string => {
  const totalBytes = byteLength(text)
  const totalLines = countLines(text)
  // The largest marker that leaves room for context: sized with the largest numbers it can show.
  const marker: Marker =
    markers.find((candidate) => byteLength(candidate(totalLines, totalBytes, totalBytes, reference)) * 2 <= limits.maxBytes) ??
    markers[markers.length - 1]!
  const widest = marker(totalLines, totalBytes, totalBytes, reference)
  let budgetBytes = limits.maxBytes - byteLength(widest)
  let budgetLines = limits.maxLines - countLines(widest)
  for (;;) {
    const head = Math.max(0, headEnd(text, Math.ceil(budgetLines / 2), Math.floor(budgetBytes / 2)))
    const tail = tailStart(text, Math.floor(budgetLines / 2), budgetBytes - byteLength(text.slice(0, head)), head)
    const omittedBytes = totalBytes - byteLength(text.slice(0, head)) - byteLength(text.slice(tail))
    const result =
      text.slice(0, head) + marker(countBreaks(text, head, tail), omittedBytes, totalBytes, reference) + text.slice(tail)
    if (byteLength(result) <= limits.maxBytes && countLines(result) <= limits.maxLines) return result
    // Joining head and tail can merge or split a line at the seams; shrink and try again.
    budgetBytes -= 16
    budgetLines -= 1
    if (budgetBytes <= 0 || budgetLines <= 0) return marker(totalLines, totalBytes, totalBytes, reference).trim()
  }
}
