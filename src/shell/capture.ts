export * as Capture from "./capture"

// The producer's in-memory capture of one byte stream (DESIGN §2 law 11): it keeps a bounded head and tail,
// counts every byte it is given, and reports exactly which bytes it did not keep. This is producer memory
// management, not model-output bounding: it must stay cheap at gigabytes per second (chunks are kept by
// reference, never concatenated while streaming) and must never present a lossy capture as complete.

/** Chunks smaller than this are copied into a shared buffer, so a stream of tiny writes keeps few objects. */
const SMALL_CHUNK_BYTES = 4096
const COALESCE_BYTES = 65536
const EMPTY = new Uint8Array(0)

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
  /** Takes the next chunk of the stream. The chunk may be kept by reference: the caller must not reuse it. */
  readonly push: (chunk: Uint8Array) => void
  /** The bytes seen so far. */
  readonly seen: () => number
  /** Up to the last `bytes` bytes kept so far, decoded (for live progress). */
  readonly recent: (bytes: number) => string
  /** What was kept and what was not. */
  readonly finish: () => Captured
}

const concat = (chunks: ReadonlyArray<Uint8Array>, total: number): Uint8Array => {
  if (chunks.length === 1 && chunks[0]!.byteLength === total) return chunks[0]!
  const joined = new Uint8Array(total)
  let at = 0
  for (const chunk of chunks) {
    joined.set(chunk, at)
    at += chunk.byteLength
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

/**
 * A capture keeping at most `limit` bytes: the first half of the limit as the head, the rest as the tail. When
 * bytes are dropped, a UTF-8 sequence cut by the gap is dropped whole (and counted in the gap), so the kept text
 * never starts or ends with a broken character. `release` is told (with the chunk, or the part of it kept), once
 * for every chunk pushed, when the capture keeps no reference to its buffer any more: at once for a chunk it
 * copied or dropped, a tail chunk once later ones pushed it out; chunks still in the tail at `finish` are not told.
 */
export const make = (limit: number, release: (chunk: Uint8Array) => void = () => {}): Capture => {
  const headLimit = Math.ceil(limit / 2)
  const tailLimit = limit - headLimit
  const head: Array<Uint8Array> = []
  let headBytes = 0
  // The tail is a queue of chunks from `start`; it may hold up to one chunk more than `tailLimit`.
  let tail: Array<Uint8Array> = []
  let start = 0
  let tailBytes = 0
  let seen = 0
  // Small chunks are gathered here before joining the tail.
  let small: Uint8Array | undefined
  let smallBytes = 0
  /** The buffers small chunks were gathered in: the capture's own, nobody's to release. */
  const own = new WeakSet<ArrayBufferLike>()

  const enqueue = (chunk: Uint8Array) => {
    tail.push(chunk)
    tailBytes += chunk.byteLength
    while (start < tail.length - 1 && tailBytes - tail[start]!.byteLength >= tailLimit) {
      const dropped = tail[start]!
      tailBytes -= dropped.byteLength
      // Released now, not at the next compaction: a dropped chunk must not stay reachable.
      tail[start] = EMPTY
      start++
      if (!own.has(dropped.buffer)) release(dropped)
    }
    if (start > 1024 && start * 2 > tail.length) {
      tail = tail.slice(start)
      start = 0
    }
  }

  const flushSmall = () => {
    if (small === undefined || smallBytes === 0) return
    enqueue(small.subarray(0, smallBytes))
    small = undefined
    smallBytes = 0
  }

  const push = (input: Uint8Array) => {
    let chunk = input
    seen += chunk.byteLength
    if (headBytes < headLimit) {
      const take = Math.min(chunk.byteLength, headLimit - headBytes)
      // Copied: a reference would keep the caller's whole buffer alive for the life of the capture.
      head.push(chunk.slice(0, take))
      headBytes += take
      chunk = chunk.subarray(take)
    }
    if (chunk.byteLength === 0 || tailLimit === 0) return release(input)
    if (chunk.byteLength >= SMALL_CHUNK_BYTES) {
      flushSmall()
      // Kept by reference: released once a later chunk pushes it out of the tail.
      enqueue(chunk)
      return
    }
    if (small !== undefined && smallBytes + chunk.byteLength > small.byteLength) flushSmall()
    if (small === undefined) {
      small = new Uint8Array(COALESCE_BYTES)
      own.add(small.buffer)
    }
    small.set(chunk, smallBytes)
    smallBytes += chunk.byteLength
    release(input)
  }

  const recent = (bytes: number): string => {
    const parts: Array<Uint8Array> = []
    let total = 0
    if (smallBytes > 0) {
      const part = small!.subarray(Math.max(0, smallBytes - bytes), smallBytes)
      parts.unshift(part)
      total += part.byteLength
    }
    for (let index = tail.length - 1; index >= start && total < bytes; index--) {
      const chunk = tail[index]!
      const part = chunk.subarray(Math.max(0, chunk.byteLength - (bytes - total)))
      parts.unshift(part)
      total += part.byteLength
    }
    // The head joins on only while nothing between it and the tail has been dropped.
    const contiguous = seen === headBytes + tailBytes + smallBytes
    for (let index = head.length - 1; contiguous && index >= 0 && total < bytes; index--) {
      const chunk = head[index]!
      const part = chunk.subarray(Math.max(0, chunk.byteLength - (bytes - total)))
      parts.unshift(part)
      total += part.byteLength
    }
    const joined = concat(parts, total)
    return new TextDecoder().decode(joined.subarray(orphanedStart(joined)))
  }

  const finish = (): Captured => {
    flushSmall()
    let headKept = concat(head, headBytes)
    let tailKept = concat(tail.slice(start), tailBytes)
    if (tailKept.byteLength > tailLimit) tailKept = tailKept.subarray(tailKept.byteLength - tailLimit)
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

  return { push, seen: () => seen, recent, finish }
}
