export * as ProgressLine from "./progress-line"

// Shows a running tool's progress updates on stderr: one live, rewritten line on a terminal; plain lines
// otherwise (so logs and pipes keep every update).

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

export const make = (stream: Stream): ProgressLine => {
  let live = false
  if (stream.isTTY !== true) {
    return {
      show: (update) => void stream.write(`progress: ${update.message.replaceAll("\n", " ")}\n`),
      clear: () => {},
    }
  }
  return {
    show: (update) => {
      const width = Math.max(20, (stream.columns ?? 80) - 1)
      const text = update.message.replaceAll(/\s+/g, " ").slice(0, width)
      stream.write(`\r\x1b[2K${text}`)
      live = true
    },
    clear: () => {
      if (live) stream.write("\r\x1b[2K")
      live = false
    },
  }
}
