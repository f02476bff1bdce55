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

  test("rewrites one live line on a terminal, cut to its width, and clears it at the end", () => {
    const out = stream(true)
    const line = ProgressLine.make(out)
    line.show({ message: "a".repeat(100) })
    line.show({ message: "b" })
    line.clear()
    line.clear()
    expect(out.written).toEqual([`\r\x1b[2K${"a".repeat(29)}`, "\r\x1b[2Kb", "\r\x1b[2K"])
  })
})
