export * as ProgressLine from "./progress-line"

// Shows a running tool's progress updates on stderr: one live, rewritten line on a terminal; plain lines
// otherwise (so logs and pipes keep every update, each cut to MAX_LINE_CHARS). A tool's progress text is the model's or a command's (a file
// name, the last line a command printed): every character a terminal acts on is escaped, so it cannot drive the
// terminal (clear it, conceal what follows, set its title or clipboard) or fake an ask.

import { Terminal } from "../contract/terminal"
import type { Tool } from "../tool/tool"

export interface ProgressLine {
  readonly show: (update: Tool.Progress) => void
  readonly clear: () => void
}

interface Stream {
  readonly isTTY?: boolean
  readonly columns?: number
  write(text: string): unknown
}

/**
 * The most characters of an update a plain line shows: a message may be anything a tool or an MCP server sent (a
 * megabyte, twenty thousand times over), and stderr is a log someone reads.
 */
export const MAX_LINE_CHARS = 1_000

export const make = (stream: Stream): ProgressLine => {
  let live = false
  if (stream.isTTY !== true) {
    return {
      show: (update) => {
        const message = update.message.length > MAX_LINE_CHARS ? `${update.message.slice(0, MAX_LINE_CHARS)}…` : update.message
        stream.write(`progress: ${Terminal.inline(message)}\n`)
      },
      clear: () => {},
    }
  }
  return {
    show: (update) => {
      const width = Math.max(20, (stream.columns ?? 80) - 1)
      const text = Terminal.inline(update.message.replaceAll(/\s+/g, " ")).slice(0, width)
      stream.write(`\r\x1b[2K${text}`)
      live = true
    },
    clear: () => {
      if (live) stream.write("\r\x1b[2K")
      live = false
    },
  }
}
