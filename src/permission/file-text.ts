export * as FileText from "./file-text"

// Reading a file core's checks follow while a command may be changing it: the command can leave a FIFO where a file
// was (opening it would wait for a writer), a sparse file of any size (reading it whole would hold core's thread and
// its memory), or a link to a file of /proc or /sys that blocks when read. Each is opened and read without waiting,
// and only up to a bound.

import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs"

/** What `read` answers for a file past its bound, unread. */
export const LARGE = Symbol("FileText.LARGE")

/**
 * The text of the regular file at `path` (through links), read to its end (a file of /proc says size 0 and holds
 * more) if that is at most `max` bytes; LARGE past it; undefined for anything else, or where it cannot be read now.
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
    let buffer = Buffer.allocUnsafe(Math.min(max + 1, Math.max(stats.size + 1, 4_096)))
    let length = 0
    for (;;) {
      if (length === buffer.length) {
        if (length > max) return LARGE
        const grown = Buffer.allocUnsafe(Math.min(max + 1, buffer.length * 2))
        buffer.copy(grown, 0, 0, length)
        buffer = grown
      }
      const wanted = buffer.length - length
      const count = readSync(fd, buffer, length, wanted, null)
      length += count
      // A regular file's short read is its end; one of /proc may give less at a time, so it is read until nothing.
      if (count === 0 || (stats.size > 0 && count < wanted)) return buffer.toString("utf8", 0, length)
    }
  } catch {
    return undefined
  } finally {
    closeSync(fd)
  }
}
