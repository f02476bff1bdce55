import { describe, expect, test } from "bun:test"
import { ProgressLine } from "../../src/cli/progress-line"

const stream = (isTTY: boolean) => {
  const written: Array<string> = []
  return { written, isTTY, columns: 30, write: (text: string) => written.push(text) }
}

describe("ProgressLine", () => {
  test("writes one plain line per update when not on a terminal", () => {
    const out = stream(false)
    const line = ProgressLine.make(out)
    line.show({ message: "compiling\nstep 1" })
    line.show({ message: "done" })
    line.clear()
    expect(out.written).toEqual(["progress: compiling step 1\n", "progress: done\n"])
  })

  test("a plain line shows at most MAX_LINE_CHARS of an update, marking the cut", () => {
    const out = stream(false)
    const line = ProgressLine.make(out)
    line.show({ message: "m".repeat(1_000_000) })
    line.show({ message: "n".repeat(ProgressLine.MAX_LINE_CHARS) })
    expect(out.written).toEqual([`progress: ${"m".repeat(ProgressLine.MAX_LINE_CHARS)}…\n`, `progress: ${"n".repeat(ProgressLine.MAX_LINE_CHARS)}\n`])
  })

  test("rewrites one live line on a terminal, cut to its width, and clears it at the end", () => {
    const out = stream(true)
    const line = ProgressLine.make(out)
    line.show({ message: "a".repeat(100) })
    line.show({ message: "b" })
    line.clear()
    line.clear()
    expect(out.written).toEqual([`\r\x1b[2K${"a".repeat(29)}`, "\r\x1b[2Kb", "\r\x1b[2K"])
  })
  test("a progress text (a command's last line, a file's name) cannot drive the terminal, on one or not", () => {
    // Clear the screen, set the title, write the clipboard, conceal what follows, a C1 CSI, a bidi override.
    const hostile = "x\u001b[2J\u001b]0;PWNED\u0007\u001b]52;c;cHduZWQ=\u0007\u001b[8m\u009b1;1H\u202eok"
    for (const isTTY of [true, false]) {
      const out = stream(isTTY)
      const line = ProgressLine.make({ ...out, columns: 400 })
      line.show({ message: hostile })
      line.clear()
      // What core writes itself on a terminal (return, erase the line) is all that may drive it.
      const written = out.written.join("").replaceAll("\r\u001b[2K", "")
      expect(written).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/)
      expect(written).toContain("x\\u001b[2J\\u001b]0;PWNED\\u0007")
      expect(written).toContain("\\u009b1;1H\\u202eok")
    }
  })
})
