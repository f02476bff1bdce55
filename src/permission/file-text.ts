export * as FileText from "./file-text"

// Reading a file core's checks follow while a command may be changing it: the command can leave a FIFO where a file
// was (opening it would wait for a writer), a sparse file of any size (reading it whole would hold core's thread and
// its memory), or a link to a file of /proc or /sys that blocks when read. Each is opened and read without waiting,
// and only up to a bound.

import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs"

/** What `read` answers for a file past its bound, unread. */
export const LARGE = Symbol("FileText.LARGE")

/**
 * The text of the regular file at `path` (through links) if it is at most `max` bytes (a file of /proc, which says
 * size 0, read to its end); LARGE past it; undefined for anything else, or where it cannot be read now.
 */
export const read = (path: string, max: number): string | undefined | typeof LARGE => {
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    const stats = fstatSync(fd)
    if (!stats.isFile()) return undefined
    if (stats.size > max) return LARGE
    // The size the file has now is what is read (as readFileSync reads it: what it grows by meanwhile is left,
    // and changes its stamp), a short read asked again.
    if (stats.size > 0) return filled(fd, Buffer.allocUnsafe(stats.size)).toString("utf8")
    // A file of /proc says size 0 and holds more: read until nothing comes, the buffer grown as it fills.
    let buffer = Buffer.allocUnsafe(Math.min(max + 1, 4_096))
    let length = 0
    for (;;) {
      if (length === buffer.length) {
        if (length > max) return LARGE
        const grown = Buffer.allocUnsafe(Math.min(max + 1, buffer.length * 2))
        buffer.copy(grown, 0, 0, length)
        buffer = grown
      }
      const count = readSync(fd, buffer, length, buffer.length - length, null)
      if (count === 0) return buffer.toString("utf8", 0, length)
      length += count
    }
  } catch {
    return undefined
  } finally {
    closeSync(fd)
  }
}

/** `buffer` filled from `fd`, or as much of it as the file holds (the part read). */
const filled = (fd: number, buffer: Buffer): Buffer => {
  let length = 0
  while (length < buffer.length) {
    const count = readSync(fd, buffer, length, buffer.length - length, null)
    if (count === 0) return buffer.subarray(0, length)
    length += count
  }
  return buffer
}
