export * as Capture from "./capture"

// The producer's in-memory capture of one byte stream (DESIGN §2 law 11): it keeps a bounded head and tail,
// counts every byte it is given, and reports exactly which bytes it did not keep. This is producer memory
// management, not model-output bounding: it must stay cheap at gigabytes per second and must never present a lossy
// capture as complete. What it keeps it copies into buffers of its own (the head, and the tail as a ring), never
// holding a pushed chunk: read at gigabytes per second, a chunk object still held when the garbage collector runs
// outlives that collection, and such chunks pile up, megabytes per gigabyte read, until a full collection.

/** The size a capture's buffers start at; each doubles as it fills, up to its part of the limit. */
const INITIAL_BYTES = 16_384
const EMPTY: Uint8Array = new Uint8Array(0)

/** The bytes a capture did not keep: `length` bytes starting at byte `offset` of the stream. */
export interface Gap {
  readonly offset: number
  readonly length: number
}

/** What a capture kept of a stream, decoded as UTF-8 (invalid sequences become U+FFFD). */
export interface Captured {
  /** `head` then `tail`: everything kept, in order. */
  readonly text: string
  /** The kept bytes before the gap (all of them when nothing was dropped). */
  readonly head: string
  /** The kept bytes after the gap ("" when nothing was dropped). */
  readonly tail: string
  /** Every byte the stream carried. */
  readonly seen: number
  /** The bytes kept; `seen - kept` were dropped. */
  readonly kept: number
  /** Where the dropped bytes were; undefined only when every byte was kept. */
  readonly gap: Gap | undefined
}

export interface Capture {
  /** Takes the next chunk of the stream, copying what it keeps: the chunk is the caller's again once it returns. */
  readonly push: (chunk: Uint8Array) => void
  /** The bytes seen so far. */
  readonly seen: () => number
  /** Up to the last `bytes` bytes kept so far, decoded (for live progress). */
  readonly recent: (bytes: number) => string
  /** What was kept and what was not. */
  readonly finish: () => Captured
  /** The bytes of memory its buffers take: never more than its limit. */
  readonly held: () => number
}

const concat = (parts: ReadonlyArray<Uint8Array>, total: number): Uint8Array => {
  if (parts.length === 1) return parts[0]!
  const joined = new Uint8Array(total)
  let at = 0
  for (const part of parts) {
    joined.set(part, at)
    at += part.byteLength
  }
  return joined
}

/** How many bytes at the end of `bytes` start a UTF-8 sequence that does not finish there. */
const unfinishedEnd = (bytes: Uint8Array): number => {
  for (let back = 1; back <= Math.min(4, bytes.byteLength); back++) {
    const byte = bytes[bytes.byteLength - back]!
    if ((byte & 0xc0) === 0x80) continue
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return needed > back ? back : 0
  }
  return 0
}

/** How many continuation bytes open `bytes` (the rest of a sequence whose start was dropped). */
const orphanedStart = (bytes: Uint8Array): number => {
  let count = 0
  while (count < Math.min(3, bytes.byteLength) && (bytes[count]! & 0xc0) === 0x80) count++
  return count
}

/** A buffer `bytes` long at least (doubling `current`, at most `max`), holding the first `used` bytes of `current`. */
const grown = (current: Uint8Array, used: number, bytes: number, max: number): Uint8Array => {
  const next = new Uint8Array(Math.min(max, Math.max(bytes, current.byteLength * 2, INITIAL_BYTES)))
  next.set(current.subarray(0, used))
  return next
}

/**
 * A capture keeping at most `limit` bytes: the first half of the limit as the head, the rest as the tail. When
 * bytes are dropped, a UTF-8 sequence cut by the gap is dropped whole (and counted in the gap), so the kept text
 * never starts or ends with a broken character. It copies what it keeps: a chunk is the caller's again (to reuse or
 * free) as soon as `push` returns, and the capture's own memory never exceeds the limit.
 */
export const make = (limit: number): Capture => {
  const headLimit = Math.ceil(limit / 2)
  const tailLimit = limit - headLimit
  let head = EMPTY
  let headBytes = 0
  // The tail: the latest `filled` bytes, ending at `end` in `ring`. Until the ring has grown to `tailLimit` they are
  // its first `filled` bytes (`end === filled`); from then on it wraps, the oldest bytes overwritten first.
  let ring = EMPTY
  let end = 0
  let filled = 0
  let seen = 0

  const keep = (chunk: Uint8Array) => {
    const length = chunk.byteLength
    if (length >= tailLimit) {
      if (ring.byteLength < tailLimit) ring = new Uint8Array(tailLimit)
      ring.set(chunk.subarray(length - tailLimit))
      end = 0
      filled = tailLimit
      return
    }
    if (filled + length > ring.byteLength && ring.byteLength < tailLimit) {
      ring = grown(ring, filled, filled + length, tailLimit)
      end = filled
    }
    const capacity = ring.byteLength
    const first = Math.min(length, capacity - end)
    ring.set(first === length ? chunk : chunk.subarray(0, first), end)
    if (first < length) ring.set(chunk.subarray(first), 0)
    end = (end + length) % capacity
    filled = Math.min(capacity, filled + length)
  }

  const push = (chunk: Uint8Array) => {
    seen += chunk.byteLength
    let rest = chunk
    if (headBytes < headLimit) {
      const take = Math.min(rest.byteLength, headLimit - headBytes)
      if (headBytes + take > head.byteLength) head = grown(head, headBytes, headBytes + take, headLimit)
      head.set(take === rest.byteLength ? rest : rest.subarray(0, take), headBytes)
      headBytes += take
      rest = rest.subarray(take)
    }
    if (rest.byteLength > 0 && tailLimit > 0) keep(rest)
  }

  /** The latest `bytes` bytes of the tail, oldest first. */
  const latest = (bytes: number): Array<Uint8Array> => {
    const count = Math.min(bytes, filled)
    if (count === 0) return []
    const start = end - count
    return start >= 0 ? [ring.subarray(start, end)] : [ring.subarray(ring.byteLength + start), ring.subarray(0, end)]
  }

  const recent = (bytes: number): string => {
    const parts = latest(bytes)
    let total = Math.min(bytes, filled)
    // The head joins on only while nothing between it and the tail has been dropped.
    if (seen === headBytes + filled && total < bytes) {
      const part = head.subarray(Math.max(0, headBytes - (bytes - total)), headBytes)
      parts.unshift(part)
      total += part.byteLength
    }
    const joined = concat(parts, total)
    return new TextDecoder().decode(joined.subarray(orphanedStart(joined)))
  }

  const finish = (): Captured => {
    let headKept = head.subarray(0, headBytes)
    let tailKept = concat(latest(filled), filled)
    const decoder = new TextDecoder()
    if (headKept.byteLength + tailKept.byteLength === seen) {
      const headText = decoder.decode(headKept, { stream: true })
      const tailText = decoder.decode(tailKept)
      return { text: headText + tailText, head: headText + tailText, tail: "", seen, kept: seen, gap: undefined }
    }
    headKept = headKept.subarray(0, headKept.byteLength - unfinishedEnd(headKept))
    tailKept = tailKept.subarray(orphanedStart(tailKept))
    const kept = headKept.byteLength + tailKept.byteLength
    const headText = decoder.decode(headKept)
    const tailText = decoder.decode(tailKept)
    return {
      text: headText + tailText,
      head: headText,
      tail: tailText,
      seen,
      kept,
      gap: { offset: headKept.byteLength, length: seen - kept },
    }
  }

  return { push, seen: () => seen, recent, finish, held: () => head.byteLength + ring.byteLength }
}
